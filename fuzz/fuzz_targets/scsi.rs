//! SCSI replies: INQUIRY, VPD, MODE SENSE caching page, LOG SENSE (see storcert::fuzz::scsi).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::scsi(data));
