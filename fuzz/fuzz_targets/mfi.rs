//! MegaRAID MFI DCMD replies: controller info, LD list/info, config, PD
//! list/info.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::passthrough::mfi;

fuzz_target!(|data: &[u8]| {
    let _ = mfi::decode_ctrl_info(data);
    let _ = mfi::decode_ld_list(data);
    let _ = mfi::decode_ld_info(data);
    let _ = mfi::decode_config(data);
    let _ = mfi::decode_pd_list(data);
    let _ = mfi::decode_pd_info(data);
});
