//! MegaRAID MFI replies: controller, LD, PD, config (see storcert::fuzz::mfi).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::mfi(data));
