//! ATA replies: IDENTIFY DEVICE, SMART data and status (see storcert::fuzz::ata).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::ata(data));
