//! Smart Array / SmartRAID BMIC and REPORT LUNS replies (see storcert::fuzz::cciss).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::cciss(data));
