//! HPE Smart Array (`hpsa`) and Microchip SmartRAID / SmartHBA
//! (`smartpqi`): the controller, its cache and battery, its logical
//! volumes and the physical drives behind it, read through
//! CCISS_PASSTHRU (`passthrough::cciss`) on a SCSI node of its host,
//! and each drive asked itself through the same pass-through, as
//! `smartctl -d cciss,N` does.
//!
//! What the public definitions do not carry is said, not guessed: a
//! logical volume's state and its own caching switch (only the
//! controller-wide cache configuration is public), and changing any cache
//! setting (no public write of it), so `check --fix` has nothing to send.

use super::{ask_the_drive, host_devices, physical_drive, Family, HostDevice};
use crate::inventory::model::*;
use crate::inventory::Roots;
use crate::passthrough::cciss::{self, CcissNode, CcissPath, PhysicalLun};
use crate::passthrough::{hex, PassthroughError};

pub struct Cciss;

const SOURCE: &str = "BMIC SENSE CACHE CONFIGURATION (controller-wide)";

impl Family for Cciss {
    fn name(&self) -> &'static str {
        "cciss"
    }

    fn drivers(&self) -> &'static [&'static str] {
        &["hpsa", "smartpqi"]
    }
    fn volume_mark(&self) -> Option<super::VolumeMark> {
        Some(super::VolumeMark::RaidLevel)
    }

    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], disks: &[Disk], probe: bool) {
        // Everything this family reads is a command to the controller.
        if !probe {
            return;
        }
        for c in claimed {
            let Some(&host) = c.scsi_hosts.first() else {
                c.errors
                    .push("cciss: the controller has no SCSI host to send commands through".into());
                continue;
            };
            let devices = host_devices(roots, host);
            let Some(node_name) = node_of(&devices) else {
                c.errors.push(format!(
                    "cciss: SCSI host {host} has no sg or block node to send CCISS_PASSTHRU through"
                ));
                continue;
            };
            let path = roots.dev.join(&node_name).display().to_string();
            let node = match CcissNode::open(&path, roots.source.tape()) {
                Ok(n) => n,
                Err(e) => {
                    c.errors.push(format!("cciss: {path}: {e}"));
                    continue;
                }
            };
            match read_controller(roots, &node, host, &devices, disks) {
                Ok(r) => {
                    if c.firmware.is_none() {
                        c.firmware = Some(r.firmware.clone());
                        c.firmware_source = Some("BMIC IDENTIFY CONTROLLER".into());
                    }
                    c.raid = Some(r);
                }
                Err(e) => c.errors.push(format!("cciss: {path}: {e}")),
            }
        }
    }
}

/// The controller's own node (peripheral type 0x0c, RAID) if it has one,
/// else any SCSI generic node of the host, else any disk's: both drivers
/// take the ioctl on every device of their host.
fn node_of(devices: &[HostDevice]) -> Option<String> {
    devices
        .iter()
        .find(|d| d.device_type == Some(0x0c) && d.sg.is_some())
        .and_then(|d| d.sg.clone())
        .or_else(|| devices.iter().find_map(|d| d.sg.clone()))
        .or_else(|| devices.iter().find_map(|d| d.block.clone()))
}

fn read_controller(
    roots: &Roots,
    node: &CcissNode,
    host: u32,
    devices: &[HostDevice],
    disks: &[Disk],
) -> Result<RaidController, PassthroughError> {
    let id = cciss::decode_identify_controller(&node.bmic(
        "BMIC IDENTIFY CONTROLLER",
        cciss::BMIC_IDENTIFY_CONTROLLER,
        0,
        cciss::IDENTIFY_CONTROLLER_LEN,
    )?)?;
    let product = [id.vendor.as_str(), id.product.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = RaidController::new(
        Cciss.key(),
        node.path().to_string(),
        host,
        product,
        id.firmware.clone(),
    );
    if !id.rom_firmware.is_empty() {
        out.firmware_components.push(FirmwareComponent {
            name: "ROM".into(),
            version: id.rom_firmware.clone(),
            build_date: String::new(),
            build_time: String::new(),
        });
    }
    match node
        .bmic(
            "BMIC SENSE SUBSYSTEM INFORMATION",
            cciss::BMIC_SENSE_SUBSYSTEM_INFORMATION,
            0,
            cciss::SUBSYSTEM_INFO_LEN,
        )
        .and_then(|b| cciss::decode_subsystem_serial(&b))
    {
        Ok(s) => out.serial_number = s,
        Err(e) => out.errors.push(e.to_string()),
    }
    let cache = node
        .bmic(
            "BMIC SENSE CACHE CONFIGURATION",
            cciss::BMIC_SENSE_CACHE_CONFIGURATION,
            0,
            cciss::CACHE_CONFIG_LEN,
        )
        .and_then(|b| cciss::decode_cache_config(&b));
    let cache = match cache {
        Ok(cc) => {
            out.cache_mb = u32::from(cc.read_cache_mb) + u32::from(cc.write_cache_mb);
            out.battery = Some(Battery {
                present: cc.backup_fitted(),
                state: Some(cc.state()),
                healthy: Some(cc.backup_healthy()),
            });
            Some(cc)
        }
        Err(e) => {
            out.errors.push(e.to_string());
            None
        }
    };
    match node.logical_luns() {
        Ok(luns) => {
            for (lun, volume) in luns {
                out.virtual_drives.push(virtual_drive(
                    roots,
                    lun,
                    volume,
                    cache.as_ref(),
                    devices,
                    disks,
                ));
            }
            if !out.virtual_drives.is_empty() {
                out.notes.push(
                    "a logical volume's state and its own caching switch are not in the public BMIC definitions; the cache policy shown is the controller's"
                        .into(),
                );
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
    match node.physical_luns() {
        Ok(luns) => {
            for lun in luns.iter().filter(|l| l.is_drive()) {
                out.physical_drives.push(read_physical(node, lun));
            }
        }
        Err(e) => out.errors.push(e.to_string()),
    }
    Ok(out)
}

/// A logical volume: its address names its SCSI device (the driver's
/// `lunid` attribute), whose block device and RAID level the kernel has.
fn virtual_drive(
    roots: &Roots,
    lun: [u8; 8],
    volume: u32,
    cache: Option<&cciss::CacheConfig>,
    devices: &[HostDevice],
    disks: &[Disk],
) -> VirtualDrive {
    let lunid = format!("0x{}", hex(&lun));
    let dev = devices
        .iter()
        .find(|d| d.attr(roots, "lunid").as_deref() == Some(lunid.as_str()));
    let block = dev.and_then(|d| d.block.clone());
    let disk = block
        .as_ref()
        .and_then(|b| disks.iter().find(|d| &d.name == b));
    let words = |wb: bool| if wb { "WB" } else { "WT" };
    VirtualDrive {
        id: volume,
        name: String::new(),
        raid_level: dev
            .and_then(|d| d.attr(roots, "raid_level"))
            .map(|l| raid_level_words(&l))
            .unwrap_or_else(|| "unknown".into()),
        state: "not reported".into(),
        size_bytes: disk.map_or(0, |d| d.capacity_bytes),
        strip_size_bytes: None,
        drives: 0,
        span_depth: 0,
        access: String::new(),
        disk_cache_policy: "not reported".into(),
        cache_policy: cache
            .map(|cc| {
                let current = words(cc.running_write_back());
                let default = words(cc.configured_write_back());
                vec![CachePolicyReading {
                    source: SOURCE.into(),
                    current_raw: cc.percent_write,
                    default_raw: cc.default_percent_write,
                    current: current.into(),
                    default: default.into(),
                    write: current.into(),
                    read: "n/a".into(),
                    io: "n/a".into(),
                }]
            })
            .unwrap_or_default(),
        cache_policy_consistent: true,
        block_device: block,
    }
}

/// hpsa prints "RAID 1(+0)", "RAID 5", "RAID 6"; smartpqi "RAID-1(1+0)",
/// "RAID-5", "RAID-ADG"; the model (and policy) writes levels as MegaRAID
/// does, "RAID10", "RAID5". A level with no such word (5+1, a triple
/// mirror) keeps the driver's, compacted.
fn raid_level_words(sysfs: &str) -> String {
    let compact: String = sysfs
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    let Some(level) = compact.strip_prefix("RAID") else {
        return compact;
    };
    let level = match level {
        "1(+0)" | "1(1+0)" => "10",
        "ADG" => "6",
        other => other,
    };
    format!("RAID{level}")
}

fn read_physical(node: &CcissNode, lun: &PhysicalLun) -> PhysicalDrive {
    let index = lun.bmic_index();
    let mut pd = physical_drive(u32::from(index.unwrap_or(0xffff)), 0, 0);
    pd.interface = Some(lun.interface().into());
    pd.wwn = cciss::wwid_hex(lun.wwid);
    match index {
        Some(i) => match node
            .bmic(
                "BMIC IDENTIFY PHYSICAL DEVICE",
                cciss::BMIC_IDENTIFY_PHYSICAL_DEVICE,
                i,
                cciss::IDENTIFY_PHYSICAL_LEN,
            )
            .and_then(|b| cciss::decode_identify_physical(&b))
        {
            Ok(p) => {
                pd.enclosure = u32::from(p.box_on_bus);
                pd.slot = u32::from(p.bay);
                pd.vendor = Some(p.vendor).filter(|v| !v.is_empty());
                pd.model = Some(p.model).filter(|m| !m.is_empty());
                pd.serial = Some(p.serial).filter(|s| !s.is_empty());
                pd.firmware = Some(p.firmware).filter(|f| !f.is_empty());
                pd.raw_size_bytes = Some(p.blocks.saturating_mul(u64::from(p.block_size)));
                if !p.connector.is_empty() {
                    pd.state = Some(format!(
                        "port {} box {} bay {}",
                        p.connector, p.box_on_bus, p.bay
                    ));
                }
                if p.temperature_c.is_some() || p.percent_endurance_used.is_some() {
                    pd.health = Some(Health {
                        overall: "unknown".into(),
                        source: "BMIC IDENTIFY PHYSICAL DEVICE".into(),
                        temperature_c: p.temperature_c.map(i32::from),
                        power_on_hours: p.power_on_hours.map(u64::from),
                        ..Health::default()
                    });
                }
            }
            Err(e) => pd.errors.push(e.to_string()),
        },
        None => pd.errors.push(format!(
            "LUN {} carries no BMIC drive number",
            hex(&lun.lun)
        )),
    }
    let path = CcissPath {
        node,
        lun: lun.passthrough_lun(),
    };
    ask_the_drive(&mut pd, &path, &format!("cciss lun {}", hex(&lun.lun)));
    pd
}

#[cfg(test)]
mod tests {
    //! A Smart Array made of the qemu lab's sysfs tree (its controller
    //! bound to hpsa instead) and replies built byte by byte from the
    //! public definitions, played through the capture's tape: the same
    //! path a machine's ioctls take.
    use crate::inventory::capture;
    use crate::inventory::raid::bench::{inquiry, lab_bound_to, opened, roots_answering, write};
    use crate::inventory::{scan, ScanOptions};
    use crate::passthrough::ata::fixtures::identify_page;
    use crate::passthrough::cciss::*;
    use crate::passthrough::tape::{Command, Exchange, Reply};
    use std::path::Path;

    fn ok(data: Vec<u8>, len: usize) -> Reply {
        let mut data_in = data;
        data_in.resize(len, 0);
        Reply::Cciss {
            command_status: 0,
            scsi_status: 0,
            sense: Vec::new(),
            residual: 0,
            data_in,
        }
    }

    struct Bench {
        node: String,
        exchanges: Vec<Exchange>,
    }

    impl Bench {
        fn answer(&mut self, lun: [u8; 8], cdb: &[u8], len: usize, reply: Reply) {
            self.exchanges.push(Exchange {
                device: self.node.clone(),
                op: "fixture".into(),
                command: Command::Cciss {
                    lun: lun.to_vec(),
                    cdb: cdb.to_vec(),
                    direction: if len > 0 { 2 } else { 0 },
                    data_in_len: len,
                },
                reply,
            });
        }

        fn bmic(&mut self, command: u8, index: u16, len: usize, data: Vec<u8>) {
            self.answer(
                CONTROLLER,
                &bmic_cdb(command, index, len as u16),
                len,
                ok(data, len),
            );
        }
    }

    /// The lab's tree with its controller bound to hpsa: the logical
    /// volumes sdb and sdc carry hpsa's lunid and raid_level, and the
    /// controller itself is a RAID-type SCSI device with an sg node.
    fn smart_array_tree(base: &Path) {
        let pci = lab_bound_to(base, "hpsa");
        let host = pci.join("host6");
        write(
            &host.join("target6:2:0/6:2:0:0/lunid"),
            "0x0000004000000000",
        );
        write(&host.join("target6:2:0/6:2:0:0/raid_level"), "RAID 1(+0)");
        write(
            &host.join("target6:2:1/6:2:1:0/lunid"),
            "0x0100004000000000",
        );
        write(&host.join("target6:2:1/6:2:1:0/raid_level"), "RAID 5");
        write(&host.join("target6:3:0/6:3:0:0/type"), "12");
        std::fs::create_dir_all(host.join("target6:3:0/6:3:0:0/scsi_generic/sg5")).unwrap();
    }

    fn smart_array(base: &Path) -> Bench {
        let mut b = Bench {
            node: base.join("dev/sg5").display().to_string(),
            exchanges: Vec::new(),
        };
        b.exchanges.push(opened(&b.node));
        // Identify controller: two volumes, the long firmware version.
        let mut id = vec![0u8; IDENTIFY_CONTROLLER_LEN];
        id[0] = 2;
        id[5..9].copy_from_slice(b"3.53");
        id[9..13].copy_from_slice(b"3.53");
        id[200..203].copy_from_slice(b"HPE");
        id[208..223].copy_from_slice(b"P408i-a SR Gen1");
        id[286..290].copy_from_slice(&0x2000_0000u32.to_le_bytes());
        id[325..334].copy_from_slice(b"3.53-0002");
        b.bmic(BMIC_IDENTIFY_CONTROLLER, 0, IDENTIFY_CONTROLLER_LEN, id);
        let mut sub = vec![0u8; SUBSYSTEM_INFO_LEN];
        sub[44..58].copy_from_slice(b"PEYHB0ARH9Z0AA");
        b.bmic(BMIC_SENSE_SUBSYSTEM_INFORMATION, 0, SUBSYSTEM_INFO_LEN, sub);
        // Configured 10/90, write cache off because the capacitor is low.
        let mut cc = vec![0u8; CACHE_CONFIG_LEN];
        cc[4..6].copy_from_slice(&400u16.to_le_bytes());
        cc[6..8].copy_from_slice(&3600u16.to_le_bytes());
        cc[32..36].copy_from_slice(&(1u32 | 1 << 1 | 1 << 16).to_le_bytes());
        cc[36..38].copy_from_slice(&12u16.to_le_bytes());
        cc[224] = 10;
        cc[225] = 90;
        cc[226] = 10;
        cc[227] = 90;
        b.bmic(BMIC_SENSE_CACHE_CONFIGURATION, 0, CACHE_CONFIG_LEN, cc);
        // Two logical volumes.
        let len = 8 + 8 * MAX_LUNS;
        let mut log = report_header(16, 0).to_vec();
        log.extend_from_slice(&[0, 0, 0, 0x40, 0, 0, 0, 0, 1, 0, 0, 0x40, 0, 0, 0, 0]);
        b.answer(
            CONTROLLER,
            &report_cdb(false, len as u32),
            len,
            ok(log, len),
        );
        // A SATA drive (index 0), a SAS drive (index 1), an enclosure.
        let len = 8 + 24 * MAX_LUNS;
        let mut phys = report_header(72, 2).to_vec();
        for (lun, wwid, kind) in [
            ([0, 0, 0, 0, 0, 0, 0, 1], 0x5002_538c_4000_0001u64, 1u8),
            ([0, 0, 0, 0, 0, 0, 1, 1], 0x5000_c500_a1b2_c3d4, 2),
            ([0, 0, 0, 0, 0, 0, 2, 1], 0, 6),
        ] {
            let mut e = [0u8; 24];
            e[..8].copy_from_slice(&lun);
            e[8..16].copy_from_slice(&wwid.to_be_bytes());
            e[16] = kind;
            phys.extend_from_slice(&e);
        }
        b.answer(
            CONTROLLER,
            &report_cdb(true, len as u32),
            len,
            ok(phys, len),
        );
        for (index, model, serial, fw, bay, kind) in [
            (
                0u16,
                "ATA     MZ7LM480HCHP",
                "S2TSNX0J000001",
                "GXT5404Q",
                1u8,
                1u8,
            ),
            (1, "HP      EG001200JWJNL", "WFK1ABCD", "HPD4", 2, 2),
        ] {
            let mut p = vec![0u8; IDENTIFY_PHYSICAL_LEN];
            p[2..4].copy_from_slice(&512u16.to_le_bytes());
            p[122..130].copy_from_slice(&937_703_088u64.to_le_bytes());
            p[12..12 + model.len()].copy_from_slice(model.as_bytes());
            p[52..52 + serial.len()].copy_from_slice(serial.as_bytes());
            p[92..92 + fw.len()].copy_from_slice(fw.as_bytes());
            p[112..114].copy_from_slice(b"1I");
            p[114] = 1;
            p[115] = bay;
            p[120] = kind;
            p[1792] = 30;
            b.bmic(
                BMIC_IDENTIFY_PHYSICAL_DEVICE,
                index,
                IDENTIFY_PHYSICAL_LEN,
                p,
            );
        }
        // The SATA drive answers through the controller's SAT layer: an
        // ATA INQUIRY, then ATA IDENTIFY in ATA PASS-THROUGH(16).
        let sata = [0, 0, 0, 0, 0, 0, 0, 1];
        b.answer(
            sata,
            &[0x12, 0, 0, 0, 96, 0],
            96,
            ok(inquiry("ATA", "MZ7LM480HCHP-0E0", "404Q"), 96),
        );
        let identify = [0x85, 8, 0x0e, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xec, 0];
        let page = identify_page(
            "SAMSUNG MZ7LM480HCHP-0E003",
            "S2TSNX0J000001",
            "GXT5404Q",
            true,
        );
        b.answer(sata, &identify, 512, ok(page, 512));
        // The SAS drive: INQUIRY, its serial page, caching page (WCE 0),
        // informational exceptions (no fault, 33 C).
        let sas = [0, 0, 0, 0, 0, 0, 1, 1];
        b.answer(
            sas,
            &[0x12, 0, 0, 0, 96, 0],
            96,
            ok(inquiry("HP", "EG001200JWJNL", "HPD4"), 96),
        );
        let mut vpd80 = vec![0, 0x80, 0, 8];
        vpd80.extend_from_slice(b"WFK1ABCD");
        b.answer(sas, &[0x12, 1, 0x80, 1, 0, 0], 256, ok(vpd80, 256));
        let mut caching = vec![0, 26, 0, 0, 0, 0, 0, 0, 0x08, 0x12, 0x00];
        caching.resize(28, 0);
        b.answer(
            sas,
            &[0x5a, 0x08, 0x08, 0, 0, 0, 0, 0x00, 0xfc, 0],
            0xfc,
            ok(caching, 0xfc),
        );
        let ie = vec![0x2f, 0, 0, 8, 0, 0, 0x03, 4, 0, 0, 33, 0];
        b.answer(
            sas,
            &[0x4d, 0, 0x6f, 0, 0, 0, 0, 0x01, 0x00, 0],
            256,
            ok(ie, 256),
        );
        b
    }

    #[test]
    fn a_smart_array_through_cciss_passthru() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        smart_array_tree(&base);
        let bench = smart_array(&base);
        let (roots, capture) = roots_answering(&base, bench.exchanges);
        let opts = ScanOptions::default();
        let inv = scan(&roots, &opts);
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        let r = c.raid.as_ref().expect("read by the cciss family");
        assert_eq!(r.family, "cciss");
        assert_eq!(r.node, bench.node);
        assert_eq!(r.product, "HPE P408i-a SR Gen1");
        assert_eq!(r.serial_number, "PEYHB0ARH9Z0AA");
        assert_eq!(r.firmware, "3.53-0002");
        assert_eq!(c.firmware.as_deref(), Some("3.53-0002"));
        assert_eq!(r.cache_mb, 4000);
        let battery = r.battery.as_ref().unwrap();
        assert!(battery.present);
        assert_eq!(battery.healthy, Some(false));
        assert!(
            battery
                .state
                .as_deref()
                .unwrap()
                .contains("capacitor charge is low"),
            "{battery:?}"
        );
        // Volumes, named by their lunid, with the controller's policy.
        let vds: Vec<(u32, &str, Option<&str>)> = r
            .virtual_drives
            .iter()
            .map(|v| (v.id, v.raid_level.as_str(), v.block_device.as_deref()))
            .collect();
        assert_eq!(vds, [(0, "RAID10", Some("sdb")), (1, "RAID5", Some("sdc"))]);
        let p = &r.virtual_drives[0].cache_policy[0];
        assert_eq!((p.write.as_str(), p.default.as_str()), ("WT", "WB"));
        // The drives: identity from BMIC, then from the drive itself.
        assert_eq!(r.physical_drives.len(), 2, "the enclosure is no drive");
        let sata = &r.physical_drives[0];
        assert_eq!((sata.id, sata.enclosure, sata.slot), (0, 1, 1));
        assert_eq!(sata.interface.as_deref(), Some("SATA"));
        assert_eq!(sata.model.as_deref(), Some("SAMSUNG MZ7LM480HCHP-0E003"));
        assert_eq!(sata.serial.as_deref(), Some("S2TSNX0J000001"));
        assert_eq!(
            sata.write_cache.as_ref().and_then(|w| w.enabled),
            Some(true)
        );
        // The drive's own WWN (IDENTIFY words 108-111) over the report's.
        assert_eq!(sata.wwn.as_deref(), Some("0x5002538e40102345"));
        assert_eq!(sata.raw_size_bytes, Some(937_703_088 * 512));
        let sas = &r.physical_drives[1];
        assert_eq!((sas.id, sas.slot), (1, 2));
        assert_eq!(sas.model.as_deref(), Some("EG001200JWJNL"));
        assert_eq!(sas.serial.as_deref(), Some("WFK1ABCD"));
        assert_eq!(
            sas.write_cache.as_ref().and_then(|w| w.enabled),
            Some(false)
        );
        let h = sas.health.as_ref().unwrap();
        assert_eq!((h.overall.as_str(), h.temperature_c), ("passed", Some(33)));
        // What the fixture does not answer is a probe that failed, named.
        assert!(sas
            .probes
            .iter()
            .any(|p| p.probe == "SCSI INQUIRY VPD 0x83" && p.outcome == "failed"));
        // The policy sees the fall-back and the battery through the model.
        let policy = crate::policy::Policy::parse(
            "[[controller]]\nmatch = { family = \"cciss\" }\nbattery = \"healthy\"\n",
            "p",
        )
        .unwrap();
        let f = crate::policy::check::check(&policy, &inv).findings;
        let checks: Vec<&str> = f.iter().map(|f| f.check.as_str()).collect();
        assert!(checks.contains(&"cache battery"), "{f:#?}");
        assert_eq!(
            checks
                .iter()
                .filter(|c| **c == "effective write policy")
                .count(),
            2,
            "{f:#?}"
        );
        // A rule the interface cannot carry out: a finding, no action.
        let policy = crate::policy::Policy::parse(
            "[[virtual_drive]]\nwrite = \"WB\"\n[[drive]]\nmatch = { name = \"sdb\" }\nwrite_cache = \"off\"\n",
            "p",
        )
        .unwrap();
        let f = crate::policy::check::check(&policy, &inv).findings;
        let vd = f.iter().find(|f| f.check == "write policy").unwrap();
        assert_eq!(vd.action, None);
        assert!(
            vd.fix
                .as_deref()
                .unwrap()
                .contains("no public way to change it"),
            "{vd:?}"
        );
        let wc = f
            .iter()
            .find(|f| f.check == "write cache")
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert_eq!(wc.action, None, "{wc:?}");
        // The capture of this bench replays to the same inventory.
        let archive = capture.to_archive(&roots, &opts).unwrap();
        let replay = capture::read_archive(&archive).unwrap();
        let again = capture::replay(&replay);
        assert_eq!(
            serde_json::to_value(&again.controllers).unwrap(),
            serde_json::to_value(&inv.controllers).unwrap()
        );
    }

    #[test]
    fn a_drive_in_hba_mode_is_a_disk_not_a_logical_drive() {
        // hpsa and smartpqi give physical drives a raid_level of "N/A".
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        smart_array_tree(&base);
        let pci = base.join("sys/devices/pci0000:00/0000:00:03.0");
        write(&pci.join("host6/target6:2:1/6:2:1:0/raid_level"), "N/A");
        write(&pci.join("host6/scsi_host/host6/proc_name"), "hpsa");
        let inv = scan(
            &crate::inventory::Roots::under(&base),
            &ScanOptions {
                no_probe: true,
                ..Default::default()
            },
        );
        let transport = |n: &str| inv.disks.iter().find(|d| d.name == n).unwrap().transport;
        assert_eq!(transport("sdb"), crate::inventory::Transport::Raid);
        assert_ne!(transport("sdc"), crate::inventory::Transport::Raid);
    }

    #[test]
    fn level_names_of_both_drivers_read_as_megaraid_writes_them() {
        for (driver, ours) in [
            ("RAID 0", "RAID0"),
            ("RAID 1(+0)", "RAID10"),
            ("RAID-1(1+0)", "RAID10"),
            ("RAID 5", "RAID5"),
            ("RAID-5", "RAID5"),
            ("RAID 6", "RAID6"),
            ("RAID-ADG", "RAID6"),
            ("RAID 5+1", "RAID5+1"),
            ("RAID-1(Triple)", "RAID1(Triple)"),
            ("RAID 1(+0)ADM", "RAID1(+0)ADM"),
        ] {
            assert_eq!(super::raid_level_words(driver), ours, "{driver}");
        }
    }

    #[test]
    fn a_node_that_refuses_the_ioctl_is_said_once() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        smart_array_tree(&base);
        let node = base.join("dev/sg5").display().to_string();
        let exchanges = vec![
            opened(&node),
            Exchange {
                device: node.clone(),
                op: "BMIC IDENTIFY CONTROLLER".into(),
                command: Command::Cciss {
                    lun: CONTROLLER.to_vec(),
                    cdb: bmic_cdb(BMIC_IDENTIFY_CONTROLLER, 0, 512).to_vec(),
                    direction: 2,
                    data_in_len: 512,
                },
                reply: Reply::Failed(crate::passthrough::tape::Failure {
                    errno: Some(libc::ENOTTY),
                    message: "Inappropriate ioctl for device (os error 25)".into(),
                }),
            },
        ];
        let (roots, _) = roots_answering(&base, exchanges);
        let inv = scan(&roots, &ScanOptions::default());
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        assert!(c.raid.is_none());
        assert_eq!(
            c.errors,
            [format!(
                "cciss: {node}: BMIC IDENTIFY CONTROLLER: Inappropriate ioctl for device (os error 25)"
            )]
        );
    }
}
