//! The byte-level decoders against the replies qemu's emulated devices
//! gave in the lab, as the lab machine's capture keeps them
//! (tests/fixtures/captures/qemu-lab), so parsing is covered without a
//! guest. The expected values are what the lab gave qemu (scripts/lab) and
//! what qemu's sources fill in.

use std::path::PathBuf;

use storcert::inventory::capture;
use storcert::passthrough::tape::{Command, Exchange, Reply};
use storcert::passthrough::{ata, mfi, nvme, scsi};

/// Every pass-through exchange of the lab machine's capture.
fn exchanges() -> Vec<Exchange> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures/qemu-lab/capture.tar.zst");
    capture::read_file(&path)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
        .capture
        .exchanges()
}

/// The data a reply carried, as the transport gives it to a decoder (a
/// SCSI reply cut by its residue).
fn data(reply: &Reply) -> Option<Vec<u8>> {
    match reply {
        Reply::Scsi { data_in, resid, .. } => {
            let got = data_in.len().saturating_sub((*resid).max(0) as usize);
            Some(data_in[..got].to_vec())
        }
        Reply::Nvme { data_in, .. } | Reply::Mfi { data_in, .. } => Some(data_in.clone()),
        _ => None,
    }
}

/// The `nth` reply (from 0, in the order the inventory sent them) to the
/// command called `op` on `device`.
fn reply(device: &str, op: &str, nth: usize) -> Vec<u8> {
    let x = exchanges()
        .into_iter()
        .filter(|x| x.device == device && x.op == op)
        .nth(nth)
        .unwrap_or_else(|| panic!("no reply {nth} to {op} on {device} in the capture"));
    data(&x.reply).unwrap_or_else(|| panic!("{op} on {device}: {:?}", x.reply))
}

/// The reply to the MFI DCMD called `op` whose mailbox begins `mbox`.
fn dcmd_reply(op: &str, mbox: &[u8]) -> Vec<u8> {
    let x = exchanges()
        .into_iter()
        .find(|x| {
            x.op == op
                && matches!(&x.command, Command::MfiDcmd { mbox: m, .. } if m.starts_with(mbox))
        })
        .unwrap_or_else(|| panic!("no {op} for {mbox:02x?} in the capture"));
    data(&x.reply).unwrap()
}

/// The node of the lab disk with this serial, as the capture's machine
/// named it (names follow the order drivers loaded in).
fn node(serial: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures/qemu-lab/inventory.json");
    let inv: storcert::inventory::Inventory =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    inv.disks
        .iter()
        .find(|d| d.serial.as_deref() == Some(serial))
        .unwrap_or_else(|| panic!("no lab disk with serial {serial}"))
        .dev_path
        .clone()
}

const MFI: &str = "/dev/megaraid_sas_ioctl_node";

#[test]
fn sata_identify_and_smart() {
    let id = ata::decode_identify(&reply(&node("LABSATA0001"), "ATA IDENTIFY", 0)).unwrap();
    assert_eq!(id.model, "STORCERT LAB SATA");
    assert_eq!(id.serial, "LABSATA0001");
    assert_eq!(id.firmware, "SATAFW01");
    assert_eq!(id.sectors * 512, 1024 * 1024 * 1024);
    assert!(id.write_cache_supported);
    assert!(
        !id.write_cache_enabled,
        "qemu was started with write-cache=off"
    );
    assert!(id.smart_supported && id.smart_enabled);
    let attrs =
        ata::decode_smart_data(&reply(&node("LABSATA0001"), "ATA SMART READ DATA", 0)).unwrap();
    assert!(!attrs.is_empty());
    // Truncating any recorded reply is an error, never a panic.
    for cut in [0, 1, 100, 511] {
        assert!(
            ata::decode_identify(&reply(&node("LABSATA0001"), "ATA IDENTIFY", 0)[..cut]).is_err()
        );
    }
}

#[test]
fn sata_scsi_view_through_libata() {
    let inq = scsi::decode_inquiry(&reply(&node("LABSATA0001"), "INQUIRY", 0)).unwrap();
    assert_eq!(inq.vendor, "ATA");
    // libata's INQUIRY carries only 4 characters of the 8-character
    // firmware revision (here the last four): IDENTIFY has the whole one.
    assert_eq!(inq.revision, "FW01");
    assert_eq!(
        scsi::decode_vpd_serial(&reply(&node("LABSATA0001"), "INQUIRY VPD 0x80", 0)).unwrap(),
        "LABSATA0001"
    );
    let ids =
        scsi::decode_vpd_device_ids(&reply(&node("LABSATA0001"), "INQUIRY VPD 0x83", 0)).unwrap();
    assert_eq!(ids.naa, None, "qemu's IDE disk has no WWN");
    let page = scsi::decode_caching_page(&reply(
        &node("LABSATA0001"),
        "MODE SENSE(10) caching page",
        0,
    ))
    .unwrap();
    assert!(!page.write_cache_enabled);
    let changeable = scsi::decode_caching_page(&reply(
        &node("LABSATA0001"),
        "MODE SENSE(10) caching page",
        1,
    ))
    .unwrap();
    assert!(changeable.write_cache_enabled, "libata lets WCE be changed");
}

#[test]
fn megaraid_logical_drive_scsi_view() {
    let inq = scsi::decode_inquiry(&reply(&node("LABMEGA0001"), "INQUIRY", 0)).unwrap();
    assert_eq!(
        (inq.vendor.as_str(), inq.product.as_str()),
        ("QEMU", "QEMU HARDDISK")
    );
    assert_eq!(
        scsi::decode_vpd_serial(&reply(&node("LABMEGA0002"), "INQUIRY VPD 0x80", 0)).unwrap(),
        "LABMEGA0002"
    );
    let page = scsi::decode_caching_page(&reply(
        &node("LABMEGA0001"),
        "MODE SENSE(10) caching page",
        0,
    ))
    .unwrap();
    assert!(page.write_cache_enabled, "scsi-hd defaults to WCE=1");
}

#[test]
fn nvme_identify_and_smart_log() {
    let id = nvme::decode_identify_controller(&reply(
        &node("LABNVME0001"),
        "NVMe Identify Controller",
        0,
    ))
    .unwrap();
    assert_eq!(id.model, "QEMU NVMe Ctrl");
    assert_eq!(id.serial, "LABNVME0001");
    assert_eq!(id.firmware, "7.2.22");
    assert_eq!(id.vwc_raw, 0x07);
    assert!(id.volatile_write_cache_present);
    let ns =
        nvme::decode_identify_namespace(&reply(&node("LABNVME0001"), "NVMe Identify Namespace", 0))
            .unwrap();
    assert_eq!(ns.size_blocks * ns.lba_size as u64, 2048 * 1024 * 1024);
    assert_eq!((ns.lba_format_index, ns.metadata_size), (0, 0));
    let log = nvme::decode_smart_log(&reply(&node("LABNVME0001"), "NVMe SMART log", 0)).unwrap();
    assert_eq!(log.critical_warning, 0);
    // qemu reports 0% spare with a 0% threshold (a naive "spare < 10%"
    // rule would fire on it).
    assert_eq!(
        (log.available_spare_pct, log.available_spare_threshold_pct),
        (0, 0)
    );
    assert_eq!(log.media_errors, 0);
}

#[test]
fn mfi_controller_and_drives() {
    let ctrl = mfi::decode_ctrl_info(&reply(MFI, "MFI CTRL_GET_INFO", 0)).unwrap();
    assert_eq!(ctrl.product_name, "LSI MegaRAID SAS 9260-8i");
    assert_eq!(ctrl.package_version, "2.5+-QEMU");
    assert_eq!(ctrl.serial_number, "QEMU123456");
    assert_eq!(
        (ctrl.pci_vendor, ctrl.pci_device, ctrl.pci_subdevice),
        (0x1000, 0x0079, 0x9261)
    );
    assert_eq!(ctrl.components[0].version, "1.80-QEMU");
    assert_eq!(ctrl.lds_present, 2);

    let lds = mfi::decode_ld_list(&reply(MFI, "MFI LD_GET_LIST", 0)).unwrap();
    let mut targets: Vec<u8> = lds.iter().map(|l| l.target_id).collect();
    targets.sort();
    assert_eq!(targets, vec![0, 1]);
    assert!(lds.iter().all(|l| mfi::ld_state_name(l.state) == "Optimal"));

    for target in [0, 1] {
        let info = mfi::decode_ld_info(&dcmd_reply("MFI LD_GET_INFO", &[target])).unwrap();
        assert_eq!(info.config.target_id, target);
        assert_eq!(info.config.raid_level(), "RAID0");
        assert_eq!(info.config.current_cache_policy.summary(), "WT NORA Direct");
        assert_eq!(info.config.strip_size_bytes(), Some(4096));
    }

    let cfg = mfi::decode_config(&reply(MFI, "MFI CFG_READ", 0)).unwrap();
    assert!(cfg.note.is_some(), "qemu's header gives section totals");
    assert_eq!(cfg.logical_drives.len(), 2);
    for ld in &cfg.logical_drives {
        assert_eq!(ld.current_cache_policy.0, 0x0c);
        assert_eq!(ld.current_cache_policy.summary(), "WT ADRA Direct");
        assert_eq!(ld.span_depth, 1);
    }

    let pds = mfi::decode_pd_list(&reply(MFI, "MFI PD_GET_LIST", 0)).unwrap();
    let mut ids: Vec<u16> = pds.iter().map(|p| p.device_id).collect();
    ids.sort();
    assert_eq!(ids, vec![0x0000, 0x0100]);
    let pd0 = mfi::decode_pd_info(&dcmd_reply("MFI PD_GET_INFO", &[0x00, 0x00])).unwrap();
    assert_eq!(pd0.device_id, 0);
    assert_eq!(pd0.inquiry[0], 0x7f, "qemu leaves the PD inquiry unfilled");
    assert_eq!(pd0.raw_size_blocks * 512, 1024 * 1024 * 1024);
    // qemu reads only the low byte of the device id from the mailbox, so
    // asking for 0x0100 returns device 0x0000.
    let pd1 = mfi::decode_pd_info(&dcmd_reply("MFI PD_GET_INFO", &[0x00, 0x01])).unwrap();
    assert_eq!(pd1.device_id, 0x0000);
}

#[test]
fn every_recorded_reply_survives_truncation() {
    let replies: Vec<Vec<u8>> = exchanges().iter().filter_map(|x| data(&x.reply)).collect();
    assert!(replies.len() > 30, "{} replies", replies.len());
    for bytes in replies {
        // Every cut in the first 64 bytes, then cuts spread over the rest.
        let step = bytes.len() / 97 + 1;
        for cut in (0..64.min(bytes.len())).chain((64..bytes.len()).step_by(step)) {
            let b = &bytes[..cut];
            let _ = scsi::decode_inquiry(b);
            let _ = scsi::decode_vpd_serial(b);
            let _ = scsi::decode_vpd_device_ids(b);
            let _ = scsi::decode_caching_page(b);
            let _ = ata::decode_identify(b);
            let _ = ata::decode_smart_data(b);
            let _ = nvme::decode_identify_controller(b);
            let _ = nvme::decode_identify_namespace(b);
            let _ = nvme::decode_smart_log(b);
            let _ = mfi::decode_ctrl_info(b);
            let _ = mfi::decode_ld_list(b);
            let _ = mfi::decode_ld_info(b);
            let _ = mfi::decode_config(b);
            let _ = mfi::decode_pd_list(b);
            let _ = mfi::decode_pd_info(b);
        }
    }
}
