//! MegaRAID controllers read through MFI DCMDs: the controller, its virtual
//! drives with RAID level and cache policy, and its physical drives.

use super::model::*;
use crate::passthrough::mfi::{self, LdConfig, MfiNode};
use crate::passthrough::{scsi, PassthroughError};

fn reading(source: &str, cfg: &LdConfig) -> CachePolicyReading {
    CachePolicyReading {
        source: source.into(),
        current_raw: cfg.current_cache_policy.0,
        default_raw: cfg.default_cache_policy.0,
        current: cfg.current_cache_policy.summary(),
        default: cfg.default_cache_policy.summary(),
        write: cfg.current_cache_policy.write().into(),
        read: cfg.current_cache_policy.read().into(),
        io: cfg.current_cache_policy.io().into(),
    }
}

/// Reads one controller (SCSI host `host`) completely; failures of single
/// DCMDs are recorded and the rest still read.
pub fn read_controller(node: &MfiNode, host: u32) -> Result<MegaRaid, PassthroughError> {
    let raw = node.dcmd_read(
        host as u16,
        mfi::DCMD_CTRL_GET_INFO,
        &[],
        mfi::CTRL_INFO_LEN,
    )?;
    let info = mfi::decode_ctrl_info(&raw)?;
    let mut out = MegaRaid {
        ioctl_node: node.path().to_string(),
        scsi_host: host,
        product_name: info.product_name,
        serial_number: info.serial_number,
        package_version: info.package_version,
        firmware_components: info
            .components
            .into_iter()
            .map(|c| FirmwareComponent {
                name: c.name,
                version: c.version,
                build_date: c.build_date,
                build_time: c.build_time,
            })
            .collect(),
        memory_size_mb: info.memory_size_mb as u32,
        bbu_present: info.bbu_present,
        virtual_drives: Vec::new(),
        physical_drives: Vec::new(),
        notes: Vec::new(),
        errors: Vec::new(),
    };

    // Virtual drives: the list, then each one's details, then the
    // configuration as a second source for the cache policy.
    let list = node
        .dcmd_read(host as u16, mfi::DCMD_LD_GET_LIST, &[], mfi::LD_LIST_LEN)
        .and_then(|raw| mfi::decode_ld_list(&raw));
    let config = node
        .dcmd_read(host as u16, mfi::DCMD_CFG_READ, &[], mfi::CFG_READ_LEN)
        .and_then(|raw| mfi::decode_config(&raw));
    let config = match config {
        Ok(c) => {
            if let Some(note) = &c.note {
                out.notes.push(note.clone());
            }
            Some(c)
        }
        Err(e) => {
            out.errors.push(e.to_string());
            None
        }
    };
    match list {
        Ok(list) => {
            for entry in list {
                let info = node
                    .dcmd_read(
                        host as u16,
                        mfi::DCMD_LD_GET_INFO,
                        &[entry.target_id],
                        mfi::LD_INFO_LEN,
                    )
                    .and_then(|raw| mfi::decode_ld_info(&raw));
                let from_cfg = config.as_ref().and_then(|c| {
                    c.logical_drives
                        .iter()
                        .find(|l| l.target_id == entry.target_id)
                        .cloned()
                });
                let mut readings = Vec::new();
                let base = match &info {
                    Ok(i) => {
                        readings.push(reading("MFI LD_GET_INFO", &i.config));
                        Some(i.config.clone())
                    }
                    Err(e) => {
                        out.errors
                            .push(format!("virtual drive {}: {e}", entry.target_id));
                        None
                    }
                };
                if let Some(cfg) = &from_cfg {
                    readings.push(reading("MFI CFG_READ", cfg));
                }
                let consistent = readings
                    .windows(2)
                    .all(|w| w[0].current_raw == w[1].current_raw);
                let Some(cfg) = base.or(from_cfg) else {
                    continue;
                };
                out.virtual_drives.push(VirtualDrive {
                    target_id: entry.target_id,
                    name: cfg.name.clone(),
                    raid_level: cfg.raid_level(),
                    state: mfi::ld_state_name(entry.state).into(),
                    size_bytes: entry.size_blocks.saturating_mul(512),
                    strip_size_bytes: cfg.strip_size_bytes(),
                    drives: cfg.num_drives,
                    span_depth: cfg.span_depth,
                    access: cfg.access_name().into(),
                    disk_cache_policy: mfi::disk_cache_policy_name(cfg.disk_cache_policy).into(),
                    cache_policy: readings,
                    cache_policy_consistent: consistent,
                    block_device: None,
                });
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
    out.virtual_drives.sort_by_key(|vd| vd.target_id);

    match node
        .dcmd_read(host as u16, mfi::DCMD_PD_GET_LIST, &[], mfi::PD_LIST_LEN)
        .and_then(|raw| mfi::decode_pd_list(&raw))
    {
        Ok(mut list) => {
            list.sort_by_key(|e| e.device_id);
            for entry in list {
                out.physical_drives.push(read_pd(node, host, &entry));
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
    Ok(out)
}

fn read_pd(node: &MfiNode, host: u32, entry: &mfi::PdListEntry) -> PhysicalDrive {
    let mut pd = PhysicalDrive {
        device_id: entry.device_id,
        enclosure_device_id: entry.enclosure_device_id,
        slot: entry.slot,
        state: None,
        interface: None,
        vendor: None,
        model: None,
        firmware: None,
        wwn: None,
        sas_address: (entry.sas_address != 0).then(|| format!("0x{:016x}", entry.sas_address)),
        raw_size_bytes: None,
        coerced_size_bytes: None,
        media_errors: None,
        other_errors: None,
        predictive_failures: None,
        errors: Vec::new(),
    };
    let info = node
        .dcmd_read(
            host as u16,
            mfi::DCMD_PD_GET_INFO,
            &entry.device_id.to_le_bytes(),
            mfi::PD_INFO_LEN,
        )
        .and_then(|raw| mfi::decode_pd_info(&raw));
    let info = match info {
        Ok(i) => i,
        Err(e) => {
            pd.errors.push(e.to_string());
            return pd;
        }
    };
    // A controller that answers for another drive than the one asked for
    // must not have that drive's identity attached here.
    if info.device_id != entry.device_id {
        pd.errors.push(format!(
            "MFI PD_GET_INFO for device 0x{:04x} answered for device 0x{:04x}; its details are not used",
            entry.device_id, info.device_id
        ));
        return pd;
    }
    pd.state = Some(mfi::pd_state_name(info.fw_state).into());
    pd.interface = Some(info.interface.into());
    match scsi::decode_inquiry(&info.inquiry) {
        // Peripheral qualifier 3, type 0x1f: "no device here". The
        // controller did not read the drive's INQUIRY data (qemu's
        // emulation answers so).
        Ok(_) if info.inquiry[0] == 0x7f => pd.errors.push(
            "MFI PD_GET_INFO carries no INQUIRY data (peripheral qualifier 3); vendor, model and firmware unknown"
                .into(),
        ),
        Ok(inq) => {
            pd.vendor = Some(inq.vendor).filter(|v| !v.is_empty());
            pd.model = Some(inq.product);
            pd.firmware = Some(inq.revision);
        }
        Err(e) => pd.errors.push(e.to_string()),
    }
    if info.vpd83.get(1) == Some(&0x83) {
        if let Ok(ids) = scsi::decode_vpd_device_ids(&info.vpd83) {
            pd.wwn = ids.naa;
        }
    }
    pd.raw_size_bytes = Some(info.raw_size_blocks.saturating_mul(512));
    pd.coerced_size_bytes = Some(info.coerced_size_blocks.saturating_mul(512));
    pd.media_errors = Some(info.media_errors);
    pd.other_errors = Some(info.other_errors);
    pd.predictive_failures = Some(info.predictive_failures);
    pd
}
