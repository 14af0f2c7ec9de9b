//! Inventory captures replayed: capture.json, a NUL, the files' bytes (see storcert::fuzz::capture).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::capture(data));
