//! The collector's request handling, through its real router (see storcert::fuzz::collect_request).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::collect_request(data));
