//! The byte-level decoders against replies recorded from qemu's emulated
//! devices (tests/fixtures/qemu-lab/raw), so parsing is covered without a
//! guest. The expected values are what the lab gave qemu (scripts/lab) and
//! what qemu's sources fill in.

use std::path::PathBuf;

use storcert::passthrough::{ata, mfi, nvme, scsi};

fn raw(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qemu-lab/raw")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn sata_identify_and_smart() {
    let id = ata::decode_identify(&raw("sata.ata-identify--sat-ata-pass-through-16-.bin")).unwrap();
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
    let attrs = ata::decode_smart_data(&raw("sata.ata-smart-read-data.bin")).unwrap();
    assert!(!attrs.is_empty());
    // Truncating any recorded reply is an error, never a panic.
    for cut in [0, 1, 100, 511] {
        assert!(ata::decode_identify(
            &raw("sata.ata-identify--sat-ata-pass-through-16-.bin")[..cut]
        )
        .is_err());
    }
}

#[test]
fn sata_scsi_view_through_libata() {
    let inq = scsi::decode_inquiry(&raw("sata.scsi-inquiry.bin")).unwrap();
    assert_eq!(inq.vendor, "ATA");
    // libata's INQUIRY carries only 4 characters of the 8-character
    // firmware revision (here the last four): IDENTIFY has the whole one.
    assert_eq!(inq.revision, "FW01");
    assert_eq!(
        scsi::decode_vpd_serial(&raw("sata.scsi-inquiry-vpd-0x80.bin")).unwrap(),
        "LABSATA0001"
    );
    let ids = scsi::decode_vpd_device_ids(&raw("sata.scsi-inquiry-vpd-0x83.bin")).unwrap();
    assert_eq!(ids.naa, None, "qemu's IDE disk has no WWN");
    let page =
        scsi::decode_caching_page(&raw("sata.scsi-mode-sense-10--caching-page.bin")).unwrap();
    assert!(!page.write_cache_enabled);
    let changeable = scsi::decode_caching_page(&raw(
        "sata.scsi-mode-sense-10--caching-page--changeable-.bin",
    ))
    .unwrap();
    assert!(changeable.write_cache_enabled, "libata lets WCE be changed");
}

#[test]
fn megaraid_logical_drive_scsi_view() {
    let inq = scsi::decode_inquiry(&raw("mega-vd0.scsi-inquiry.bin")).unwrap();
    assert_eq!(
        (inq.vendor.as_str(), inq.product.as_str()),
        ("QEMU", "QEMU HARDDISK")
    );
    assert_eq!(
        scsi::decode_vpd_serial(&raw("mega-vd1.scsi-inquiry-vpd-0x80.bin")).unwrap(),
        "LABMEGA0002"
    );
    let page =
        scsi::decode_caching_page(&raw("mega-vd0.scsi-mode-sense-10--caching-page.bin")).unwrap();
    assert!(page.write_cache_enabled, "scsi-hd defaults to WCE=1");
}

#[test]
fn nvme_identify_and_smart_log() {
    let id = nvme::decode_identify_controller(&raw("nvme.nvme-identify-controller.bin")).unwrap();
    assert_eq!(id.model, "QEMU NVMe Ctrl");
    assert_eq!(id.serial, "LABNVME0001");
    assert_eq!(id.firmware, "7.2.22");
    assert_eq!(id.vwc_raw, 0x07);
    assert!(id.volatile_write_cache_present);
    let ns = nvme::decode_identify_namespace(&raw("nvme.nvme-identify-namespace.bin")).unwrap();
    assert_eq!(ns.size_blocks * ns.lba_size as u64, 2048 * 1024 * 1024);
    assert_eq!((ns.lba_format_index, ns.metadata_size), (0, 0));
    let log = nvme::decode_smart_log(&raw("nvme.nvme-smart-log.bin")).unwrap();
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
    let ctrl = mfi::decode_ctrl_info(&raw("mfi.ctrl-info.bin")).unwrap();
    assert_eq!(ctrl.product_name, "LSI MegaRAID SAS 9260-8i");
    assert_eq!(ctrl.package_version, "2.5+-QEMU");
    assert_eq!(ctrl.serial_number, "QEMU123456");
    assert_eq!(
        (ctrl.pci_vendor, ctrl.pci_device, ctrl.pci_subdevice),
        (0x1000, 0x0079, 0x9261)
    );
    assert_eq!(ctrl.components[0].version, "1.80-QEMU");
    assert_eq!(ctrl.lds_present, 2);

    let lds = mfi::decode_ld_list(&raw("mfi.ld-list.bin")).unwrap();
    let mut targets: Vec<u8> = lds.iter().map(|l| l.target_id).collect();
    targets.sort();
    assert_eq!(targets, vec![0, 1]);
    assert!(lds.iter().all(|l| mfi::ld_state_name(l.state) == "Optimal"));

    for target in [0, 1] {
        let info = mfi::decode_ld_info(&raw(&format!("mfi.ld-info-{target}.bin"))).unwrap();
        assert_eq!(info.config.target_id, target);
        assert_eq!(info.config.raid_level(), "RAID0");
        assert_eq!(info.config.current_cache_policy.summary(), "WT NORA Direct");
        assert_eq!(info.config.strip_size_bytes(), Some(4096));
    }

    let cfg = mfi::decode_config(&raw("mfi.cfg-read.bin")).unwrap();
    assert!(cfg.note.is_some(), "qemu's header gives section totals");
    assert_eq!(cfg.logical_drives.len(), 2);
    for ld in &cfg.logical_drives {
        assert_eq!(ld.current_cache_policy.0, 0x0c);
        assert_eq!(ld.current_cache_policy.summary(), "WT ADRA Direct");
        assert_eq!(ld.span_depth, 1);
    }

    let pds = mfi::decode_pd_list(&raw("mfi.pd-list.bin")).unwrap();
    let mut ids: Vec<u16> = pds.iter().map(|p| p.device_id).collect();
    ids.sort();
    assert_eq!(ids, vec![0x0000, 0x0100]);
    let pd0 = mfi::decode_pd_info(&raw("mfi.pd-info-0000.bin")).unwrap();
    assert_eq!(pd0.device_id, 0);
    assert_eq!(pd0.inquiry[0], 0x7f, "qemu leaves the PD inquiry unfilled");
    assert_eq!(pd0.raw_size_blocks * 512, 1024 * 1024 * 1024);
    // qemu reads only the low byte of the device id from the mailbox, so
    // asking for 0x0100 returns device 0x0000.
    let pd1 = mfi::decode_pd_info(&raw("mfi.pd-info-0100.bin")).unwrap();
    assert_eq!(pd1.device_id, 0x0000);
}

#[test]
fn every_recorded_reply_survives_truncation() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/raw");
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
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
