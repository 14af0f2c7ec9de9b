//! NVMe replies: Identify, SMART log, OCP log (see storcert::fuzz::nvme).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| storcert::fuzz::nvme(data));
