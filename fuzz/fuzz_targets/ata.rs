//! ATA replies: IDENTIFY DEVICE, SMART READ DATA, SMART RETURN STATUS.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::passthrough::ata;

fuzz_target!(|data: &[u8]| {
    let _ = ata::decode_identify(data);
    let _ = ata::decode_smart_data(data);
    if data.len() >= 2 {
        let _ = ata::decode_smart_status(data[0], data[1]);
    }
});
