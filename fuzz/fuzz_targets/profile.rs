//! storcert run profiles (see storcert::fuzz::profile).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::profile(data));
