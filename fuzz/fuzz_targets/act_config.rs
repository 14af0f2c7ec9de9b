//! ACT storage and index config files (see storcert::fuzz::act_config).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::act_config(data));
