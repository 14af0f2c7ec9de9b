//! SCSI replies: INQUIRY, VPD 0x80/0x83, MODE SENSE caching page (and the
//! MODE SELECT built from it), LOG SENSE temperature and IE pages.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::passthrough::scsi;

fuzz_target!(|data: &[u8]| {
    let _ = scsi::decode_inquiry(data);
    let _ = scsi::decode_vpd_serial(data);
    let _ = scsi::decode_vpd_device_ids(data);
    let _ = scsi::decode_caching_page(data);
    let _ = scsi::caching_select_params(data, true);
    let _ = scsi::decode_temperature_log(data);
    let _ = scsi::decode_ie_log(data);
});
