//! The kernel command line's storcert.* keys (see storcert::fuzz::cmdline).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::cmdline(data));
