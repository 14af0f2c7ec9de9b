//! The bundle reader and verifier: archive, manifest, minisign, DSSE (see storcert::fuzz::bundle).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::bundle(data));
