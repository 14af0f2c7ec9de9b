//! ACT logs, as act analyze and the bundle summary read them (see storcert::fuzz::act_log).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::act_log(data));
