//! The MegaRAID family (`megaraid_sas`: PERC 9–11, MegaRAID 92xx–95xx),
//! read as storcli reads it, through MFI DCMDs on the driver's management
//! node: the controller, its virtual drives with RAID level and cache
//! policy, and its physical drives; a virtual drive's cache policy is set
//! with LD_SET_PROP and read back.

use super::{CacheChange, Family, SetError};
use crate::inventory::model::*;
use crate::inventory::Roots;
use crate::passthrough::mfi::{self, LdConfig, MfiNode};
use crate::passthrough::{scsi, PassthroughError};

pub struct MegaRaid;

impl Family for MegaRaid {
    fn virtual_drive_fix(&self, vd: u32, setting: &str, value: &str) -> Option<String> {
        (!setting.is_empty()).then(|| format!("storcli /cX/v{vd} set {setting}={value}"))
    }

    fn write_through_fix(&self) -> Option<String> {
        Some("check the battery or CacheVault: storcli /cX/bbu show, /cX/cv show".into())
    }

    fn drive_cache_fix(&self) -> String {
        "storcli /cX/vN set pdcache=".into()
    }

    fn name(&self) -> &'static str {
        "megaraid"
    }

    fn drivers(&self) -> &'static [&'static str] {
        &["megaraid_sas"]
    }
    fn volume_mark(&self) -> Option<super::VolumeMark> {
        Some(super::VolumeMark::FromChannel(2))
    }

    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], disks: &[Disk], probe: bool) {
        // Everything this family reads is a command to the controller.
        if !probe {
            return;
        }
        // One management node serves every controller of the driver.
        let node = match MfiNode::open(roots.source.tape()) {
            Ok(n) => n,
            Err(e) => {
                for c in claimed {
                    c.errors.push(open_error(&e));
                }
                return;
            }
        };
        for c in claimed {
            for &host in &c.scsi_hosts {
                match read_controller(&node, host) {
                    Ok(mut mr) => {
                        link_block_devices(&mut mr, host, disks);
                        if c.firmware.is_none() {
                            c.firmware = Some(mr.firmware.clone());
                            c.firmware_source = Some("MFI CTRL_GET_INFO (package version)".into());
                        }
                        c.raid = Some(mr);
                    }
                    Err(e) => c.errors.push(format!("SCSI host {host}: {e}")),
                }
            }
        }
    }

    fn cache_policy_method(&self) -> &'static str {
        "MFI LD_SET_PROP"
    }

    fn set_cache_policy(
        &self,
        scsi_host: u32,
        virtual_drive: u32,
        change: &CacheChange,
    ) -> Result<String, SetError> {
        let node = MfiNode::open(None).map_err(|e| SetError::Open(open_error(&e)))?;
        let h = scsi_host as u16;
        let target = u8::try_from(virtual_drive).map_err(|_| {
            PassthroughError::malformed(
                "MFI LD_SET_PROP",
                format!("virtual drive {virtual_drive} is past MFI's 255"),
            )
        })?;
        let info = node.dcmd_read(h, mfi::DCMD_LD_GET_INFO, &[target], mfi::LD_INFO_LEN)?;
        let props = mfi::props_with_policy(
            &info,
            change.write.as_deref(),
            change.read.as_deref(),
            change.io.as_deref(),
        )?;
        let wanted = mfi::CachePolicy(props[20]);
        node.dcmd_write(h, mfi::DCMD_LD_SET_PROP, &props[..4], &props)?;
        let after = node.dcmd_read(h, mfi::DCMD_LD_GET_INFO, &[target], mfi::LD_INFO_LEN)?;
        let now = mfi::decode_ld_info(&after)?.config.current_cache_policy;
        Ok(if now == wanted {
            "verified".into()
        } else {
            format!(
                "not applied: the controller accepted LD_SET_PROP but LD_GET_INFO still reads {} (wanted {})",
                now.summary(),
                wanted.summary()
            )
        })
    }
}

fn open_error(e: &std::io::Error) -> String {
    format!(
        "cannot open the megaraid_sas management node {}: {e}",
        mfi::IOCTL_NODE
    )
}

/// The driver exposes virtual drive T on channel 2 + T/128, target T%128
/// (MEGASAS_MAX_PD_CHANNELS = 2).
fn link_block_devices(mr: &mut RaidController, host: u32, disks: &[Disk]) {
    for vd in &mut mr.virtual_drives {
        let prefix = format!("{host}:{}:{}:", 2 + vd.id / 128, vd.id % 128);
        vd.block_device = disks
            .iter()
            .find(|d| {
                d.scsi_address
                    .as_deref()
                    .is_some_and(|a| a.starts_with(&prefix))
            })
            .map(|d| d.name.clone());
    }
}

fn battery(s: &mfi::BbuStatus) -> Battery {
    let kind = match s.battery_type {
        0 => "none".to_string(),
        1 => "iBBU".into(),
        2 => "BBU".into(),
        t => format!("type {t}"),
    };
    Battery {
        present: s.present(),
        state: Some(format!(
            "{kind}: {}; {} mV, {} C",
            s.state(),
            s.voltage_mv,
            s.temperature_c
        )),
        healthy: Some(s.healthy()),
    }
}

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
pub fn read_controller(node: &MfiNode, host: u32) -> Result<RaidController, PassthroughError> {
    let raw = node.dcmd_read(
        host as u16,
        mfi::DCMD_CTRL_GET_INFO,
        &[],
        mfi::CTRL_INFO_LEN,
    )?;
    let info = mfi::decode_ctrl_info(&raw)?;
    let mut out = RaidController {
        serial_number: info.serial_number,
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
        cache_mb: info.memory_size_mb as u32,
        // CTRL_GET_INFO says whether a BBU is fitted; its state is
        // BBU_GET_STATUS's, read below where one is.
        battery: Some(Battery {
            present: info.bbu_present,
            state: None,
            healthy: None,
        }),
        ..RaidController::new(
            MegaRaid.key(),
            node.path().to_string(),
            host,
            info.product_name,
            info.package_version,
        )
    };

    if info.bbu_present {
        let status = node
            .dcmd_read(
                host as u16,
                mfi::DCMD_BBU_GET_STATUS,
                &[],
                mfi::BBU_STATUS_LEN,
            )
            .and_then(|raw| mfi::decode_bbu_status(&raw));
        match status {
            Ok(s) => out.battery = Some(battery(&s)),
            Err(e) => out.errors.push(format!("battery status: {e}")),
        }
    }

    read_virtual_drives(node, host, &mut out);
    read_physical_drives(node, host, &mut out);
    Ok(out)
}

/// Virtual drives: the list, then each one's details, then the
/// configuration as a second source for the cache policy.
fn read_virtual_drives(node: &MfiNode, host: u32, out: &mut RaidController) {
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
                if let Some(vd) = read_virtual_drive(node, host, &entry, config.as_ref(), out) {
                    out.virtual_drives.push(vd);
                }
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
    out.virtual_drives.sort_by_key(|vd| vd.id);
}

/// One virtual drive, its cache policy as LD_GET_INFO and the
/// configuration each read it; none when neither could.
fn read_virtual_drive(
    node: &MfiNode,
    host: u32,
    entry: &mfi::LdListEntry,
    config: Option<&mfi::ConfigData>,
    out: &mut RaidController,
) -> Option<VirtualDrive> {
    let info = node
        .dcmd_read(
            host as u16,
            mfi::DCMD_LD_GET_INFO,
            &[entry.target_id],
            mfi::LD_INFO_LEN,
        )
        .and_then(|raw| mfi::decode_ld_info(&raw));
    let from_cfg = config.and_then(|c| {
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
    let cfg = base.or(from_cfg)?;
    Some(VirtualDrive {
        id: entry.target_id.into(),
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
    })
}

fn read_physical_drives(node: &MfiNode, host: u32, out: &mut RaidController) {
    match node
        .dcmd_read(host as u16, mfi::DCMD_PD_GET_LIST, &[], mfi::PD_LIST_LEN)
        .and_then(|raw| mfi::decode_pd_list(&raw))
    {
        Ok(mut list) => {
            list.sort_by_key(|e| e.device_id);
            // Enclosures and backplanes are in the list too (SCSI type
            // 0x0d): not drives, so not read or judged as drives. Disks are
            // type 0, host-managed SMR disks 0x14.
            let is_disk = |e: &&mfi::PdListEntry| matches!(e.scsi_dev_type, 0x00 | 0x14);
            let others = list.iter().filter(|e| !is_disk(e)).count();
            if others > 0 {
                out.notes.push(format!(
                    "{others} device(s) of the list are not disks (enclosures, backplanes) and are not read as drives"
                ));
            }
            for entry in list.iter().filter(is_disk) {
                out.physical_drives.push(read_pd(node, host, entry));
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
}

fn read_pd(node: &MfiNode, host: u32, entry: &mfi::PdListEntry) -> PhysicalDrive {
    let mut pd = super::physical_drive(
        entry.device_id.into(),
        entry.enclosure_device_id.into(),
        entry.slot.into(),
    );
    pd.sas_address = (entry.sas_address != 0).then(|| format!("0x{:016x}", entry.sas_address));
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
        // Said below if the drive does not answer INQUIRY itself either.
        Ok(_) if info.inquiry[0] == 0x7f => {}
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
    read_through(node, host, &mut pd);
    if pd.model.is_none() && info.inquiry[0] == 0x7f {
        pd.errors.push(
            "MFI PD_GET_INFO carries no INQUIRY data (peripheral qualifier 3), and the drive gave none through the controller; vendor, model and firmware unknown"
                .into(),
        );
    }
    pd
}

/// The drive asked itself, through the firmware (MFI_CMD_PD_SCSI_IO): the
/// same INQUIRY, VPD, ATA IDENTIFY and SMART, or LOG SENSE, a disk the
/// kernel sees is asked, decoded by the same code.
fn read_through(node: &MfiNode, host: u32, pd: &mut PhysicalDrive) {
    let Ok(target) = u8::try_from(pd.id) else {
        pd.probes.push(Probe {
            probe: "MFI pass-through".into(),
            outcome: "unsupported".into(),
            detail: Some(format!(
                "device id 0x{:04x} does not fit the pass-through frame's 8-bit target",
                pd.id
            )),
        });
        return;
    };
    let Ok(host) = u16::try_from(host) else {
        return;
    };
    let path = mfi::PdPath { node, host, target };
    super::ask_the_drive(pd, &path, &format!("megaraid host {host} pd {}", pd.id));
}
