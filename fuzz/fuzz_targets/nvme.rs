//! NVMe admin replies: Identify Controller/Namespace, SMART log, OCP log.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::passthrough::nvme;

fuzz_target!(|data: &[u8]| {
    let _ = nvme::decode_identify_controller(data);
    let _ = nvme::decode_identify_namespace(data);
    let _ = nvme::decode_smart_log(data);
    let _ = nvme::decode_ocp_smart(data);
});
