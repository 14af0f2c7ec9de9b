//! Policy TOML, checked against the lab's recorded inventory (see storcert::fuzz::policy).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::policy(data));
