//! RAID and HBA controllers read through their own management interfaces:
//! one family per file behind one trait, in one registry, each filling the
//! one vendor-neutral model (`RaidController`: product, firmware, cache
//! and battery, virtual drives with configured and effective cache
//! policy, physical drives). Policy, `check --fix`, the inventory table
//! and the report see only that model.
//!
//! Adding a family is a file here implementing `Family`, its line in
//! `FAMILIES`, and its fixtures.

pub mod cciss;
pub mod md;
pub mod megaraid;
pub mod mpi3mr;
pub mod mpt3sas;

use std::path::PathBuf;

use super::model::{
    Controller, Disk, FamilyKey, PhysicalDrive, Transport, VirtualDrive, WriteCacheReading,
};
use super::sysfs::{list_dir, opt_attr};
use super::Roots;
use crate::passthrough::{PassthroughError, ScsiPath};

/// A change of a virtual drive's cache policy; None leaves that part as
/// it is. The words are storcli's (WT/WB/AWB, RA/NORA, Direct/Cached).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheChange {
    pub write: Option<String>,
    pub read: Option<String>,
    pub io: Option<String>,
}

/// Why a family could not set a policy.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    #[error("{0}")]
    Open(String),
    #[error(transparent)]
    Command(#[from] PassthroughError),
    #[error("{family} controllers cannot set a cache policy through their interface")]
    Unsupported { family: &'static str },
}

/// One controller family.
pub trait Family: Sync {
    /// Its name: its key in the model and in policy actions ("megaraid").
    fn name(&self) -> &'static str;
    /// Its key in the model.
    fn key(&self) -> FamilyKey {
        FamilyKey::new(self.name())
    }
    /// The kernel drivers whose controllers it reads.
    fn drivers(&self) -> &'static [&'static str];
    /// Whether it reads this controller (by its driver).
    fn claims(&self, c: &Controller) -> bool {
        c.driver
            .as_deref()
            .is_some_and(|d| self.drivers().contains(&d))
    }
    /// Reads every controller it claims into `c.raid` (or `c.errors`),
    /// opening what they share once, and names each virtual drive's block
    /// device among `disks`. Without `probe` (`inventory --no-probe`) it
    /// sends nothing: what sysfs says, or nothing at all.
    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], disks: &[Disk], probe: bool);
    /// How its drivers' SCSI hosts tell a RAID volume from a drive
    /// passed through (`None`: they do not).
    fn volume_mark(&self) -> Option<VolumeMark> {
        None
    }
    /// What it can say of a cache's battery, for the policy's battery
    /// rule.
    fn battery(&self) -> BatteryReach {
        BatteryReach::Reads
    }
    /// The command that sets a virtual drive's `setting` (a storcli
    /// property name, "" where none) to `value`, for a finding's fix. By
    /// default: that the interface storcert reads cannot change it.
    fn virtual_drive_fix(&self, _vd: u32, _setting: &str, _value: &str) -> Option<String> {
        Some(no_public_tool(self.name()))
    }
    /// What to check when a virtual drive fell back to write-through.
    fn write_through_fix(&self) -> Option<String> {
        None
    }
    /// The start of the command that sets the cache of a drive behind it
    /// (the wanted "on" or "off" follows).
    fn drive_cache_fix(&self) -> String {
        drive_cache_by_vendor_tool(self.name())
    }
    /// How it sets a cache policy, for the plan a fix prints.
    fn cache_policy_method(&self) -> &'static str {
        "none"
    }
    /// Sets a virtual drive's cache policy and reads it back: what the
    /// controller now reports ("verified" or why not).
    fn set_cache_policy(
        &self,
        _scsi_host: u32,
        _virtual_drive: u32,
        _change: &CacheChange,
    ) -> Result<String, SetError> {
        Err(SetError::Unsupported {
            family: self.name(),
        })
    }
}

/// How a driver's SCSI host tells a RAID volume from a drive it passes
/// through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeMark {
    /// Channels from this one on carry the volumes; those below, the
    /// drives passed through (megaraid_sas: 0-1 JBOD, 2-3 logical).
    FromChannel(u32),
    /// sysfs `device/raid_level` is a level, not "N/A" (which the
    /// driver gives the drives it passes through, in HBA or mixed mode).
    RaidLevel,
}

/// Drivers no family here reads whose volumes sysfs marks by
/// `raid_level` too: Adaptec's aacraid and the old megaraid driver.
const RAID_LEVEL_DRIVERS: &[&str] = &["aacraid", "megaraid"];

/// How `driver`'s SCSI hosts mark a RAID volume, by its family's word.
pub fn volume_mark(driver: &str) -> Option<VolumeMark> {
    if RAID_LEVEL_DRIVERS.contains(&driver) {
        return Some(VolumeMark::RaidLevel);
    }
    FAMILIES
        .iter()
        .find(|f| f.drivers().contains(&driver))
        .and_then(|f| f.volume_mark())
}

/// What a family can say of a controller's cache battery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatteryReach {
    /// It reads the battery (or CacheVault) where the controller has one.
    Reads,
    /// Its controllers are HBAs: no cache to protect, nothing to judge.
    NoCache,
    /// It cannot read batteries (MPI3's interface has no such page): a
    /// battery rule is told "unknown".
    Unreadable,
}

fn no_public_tool(family: &str) -> String {
    format!(
        "set it with the controller's own tool: the {family} interface storcert reads has no public way to change it"
    )
}

fn drive_cache_by_vendor_tool(family: &str) -> String {
    format!("set the drive cache with the {family} vendor's tool: ")
}

/// `virtual_drive_fix` of the family named `family` (one this build does
/// not know, as a replayed inventory may name, gets the default wording).
pub fn virtual_drive_fix(
    family: &FamilyKey,
    vd: u32,
    setting: &str,
    value: &str,
) -> Option<String> {
    match self::family(family) {
        Some(f) => f.virtual_drive_fix(vd, setting, value),
        None => Some(no_public_tool(family.as_str())),
    }
}

/// `write_through_fix` of the family named `family`.
pub fn write_through_fix(family: &FamilyKey) -> Option<String> {
    self::family(family).and_then(|f| f.write_through_fix())
}

/// `drive_cache_fix` of the family named `family`.
pub fn drive_cache_fix(family: &FamilyKey) -> String {
    match self::family(family) {
        Some(f) => f.drive_cache_fix(),
        None => drive_cache_by_vendor_tool(family.as_str()),
    }
}

/// `battery` of the family named `family`.
pub fn battery_reach(family: &FamilyKey) -> BatteryReach {
    self::family(family).map_or(BatteryReach::Reads, |f| f.battery())
}

/// Every family storcert reads.
pub static FAMILIES: &[&dyn Family] = &[
    &megaraid::MegaRaid,
    &mpt3sas::Mpt3sas,
    &cciss::Cciss,
    &mpi3mr::Mpi3mr,
];

/// The family of this key.
pub fn family(key: &FamilyKey) -> Option<&'static dyn Family> {
    FAMILIES.iter().copied().find(|f| f.name() == key.as_str())
}

/// Reads every controller a family claims, then records each virtual
/// drive's cache policy on its block device beside what the device itself
/// answered.
pub fn read_all(
    roots: &Roots,
    controllers: &mut [&mut Controller],
    disks: &mut [Disk],
    no_probe: bool,
) {
    for family in FAMILIES {
        let mut claimed: Vec<&mut Controller> = controllers
            .iter_mut()
            .filter(|c| family.claims(c))
            .map(|c| &mut **c)
            .collect();
        if !claimed.is_empty() {
            family.read(roots, &mut claimed, disks, !no_probe);
        }
    }
    for c in controllers.iter() {
        for vd in c.raid.iter().flat_map(|r| &r.virtual_drives) {
            let disk = vd
                .block_device
                .as_ref()
                .and_then(|b| disks.iter_mut().find(|d| &d.name == b));
            if let Some(disk) = disk {
                add_controller_cache_readings(disk, vd);
            }
        }
    }
}

/// The drive asked itself through its controller (`path`): the same
/// INQUIRY, VPD, ATA IDENTIFY and SMART, or LOG SENSE, a disk the kernel
/// sees is asked, decoded by the same code. What the drive says of itself
/// is preferred over the controller's copy of its identity.
pub fn ask_the_drive(pd: &mut PhysicalDrive, path: &dyn ScsiPath, label: &str) {
    let transport = match pd.interface.as_deref() {
        Some("SATA") => Transport::Sata,
        _ => Transport::Sas,
    };
    let mut drive = Disk::unprobed(label, label, transport);
    crate::inventory::probe::probe_scsi(&mut drive, path);
    // An NVMe drive behind a tri-mode controller answers SCSI through
    // the controller's translation (SNTL: vendor "NVMe"); its own admin
    // commands (SMART / Health log) do not pass a SCSI pass-through.
    if drive.vendor.as_deref() == Some("NVMe") || pd.interface.as_deref() == Some("NVMe") {
        pd.interface = Some("NVMe".into());
        drive.probes.push(crate::inventory::model::Probe {
            probe: "NVMe admin (SMART / Health log) through the controller".into(),
            outcome: "unsupported".into(),
            detail: Some(
                "the pass-through carries SCSI commands; the drive answers through the controller's SCSI-to-NVMe translation"
                    .into(),
            ),
        });
    }
    // A size where the controller gave none (MPI3 and integrated-RAID
    // members): what the health snapshot's arithmetic needs.
    if pd.raw_size_bytes.is_none() && drive.model.is_some() {
        let size = crate::passthrough::scsi::read_capacity16(path)
            .and_then(|b| crate::passthrough::scsi::decode_capacity16(&b));
        let (outcome, detail) = match size {
            Ok(n) => {
                pd.raw_size_bytes = Some(n);
                ("ok", None)
            }
            Err(e) if e.is_unsupported() => ("unsupported", Some(e.to_string())),
            Err(e) => ("failed", Some(e.to_string())),
        };
        drive.probes.push(crate::inventory::model::Probe {
            probe: "SCSI READ CAPACITY(16)".into(),
            outcome: outcome.into(),
            detail,
        });
    }
    // A SATA drive answers INQUIRY as "ATA" through a SAT layer; a drive
    // with a SAS address that does not is a SAS drive.
    if pd.interface.is_none() {
        if drive.vendor.as_deref() == Some("ATA") {
            pd.interface = Some("SATA".into());
        } else if pd.sas_address.is_some() && drive.vendor.is_some() {
            pd.interface = Some("SAS".into());
        }
    }
    pd.vendor = drive.vendor.or(pd.vendor.take());
    pd.model = drive.model.or(pd.model.take());
    pd.firmware = drive.firmware.or(pd.firmware.take());
    pd.wwn = drive.wwn.or(pd.wwn.take());
    pd.serial = drive.serial.or(pd.serial.take());
    pd.write_cache = drive.write_cache;
    pd.health = drive.health.or(pd.health.take());
    pd.probes.extend(drive.probes);
}

/// A physical drive of which only the controller's numbers are known yet.
pub fn physical_drive(id: u32, enclosure: u32, slot: u32) -> PhysicalDrive {
    PhysicalDrive {
        id,
        enclosure,
        slot,
        state: None,
        interface: None,
        vendor: None,
        model: None,
        firmware: None,
        wwn: None,
        sas_address: None,
        raw_size_bytes: None,
        coerced_size_bytes: None,
        media_errors: None,
        other_errors: None,
        predictive_failures: None,
        serial: None,
        write_cache: None,
        health: None,
        probes: Vec::new(),
        errors: Vec::new(),
    }
}

/// A controller's SCSI host and the folder of its attributes, where the
/// driver publishes its firmware (`version_fw`): the start of the
/// families that read their driver's host attributes. None, with the
/// reason on the controller, where it has no host or no such attribute.
pub fn host_with_firmware(
    roots: &Roots,
    c: &mut Controller,
    family: &str,
) -> Option<(u32, PathBuf, String)> {
    let Some(&host) = c.scsi_hosts.first() else {
        c.errors
            .push(format!("{family}: the controller has no SCSI host to read"));
        return None;
    };
    let dir = roots.sys.join(format!("class/scsi_host/host{host}"));
    let Some(firmware) = opt_attr(roots, &dir.join("version_fw")) else {
        c.errors.push(format!(
            "{family}: SCSI host {host} has no version_fw (not this driver's host?)"
        ));
        return None;
    };
    Some((host, dir, firmware))
}

/// One SCSI device of a host, as sysfs lists it.
#[derive(Debug, Clone)]
pub struct HostDevice {
    /// "6:1:0:0".
    pub address: String,
    pub dir: PathBuf,
    /// The SCSI peripheral device type (0 disk, 0x0c RAID controller).
    pub device_type: Option<u8>,
    /// Its SCSI generic node's name, "sg3".
    pub sg: Option<String>,
    /// Its block device's name, "sdb".
    pub block: Option<String>,
}

impl HostDevice {
    pub fn attr(&self, roots: &Roots, name: &str) -> Option<String> {
        opt_attr(roots, &self.dir.join(name))
    }
}

/// Every SCSI device of host `host` (bounded), in address order.
pub fn host_devices(roots: &Roots, host: u32) -> Vec<HostDevice> {
    let Ok(class) = roots.canonicalize(&roots.sys.join(format!("class/scsi_host/host{host}")))
    else {
        return Vec::new();
    };
    // .../hostN/scsi_host/hostN: the host's own directory is two up.
    let Some(host_dir) = class.parent().and_then(|p| p.parent()) else {
        return Vec::new();
    };
    let prefix = format!("{host}:");
    let mut out = Vec::new();
    for target in list_dir(roots, host_dir)
        .into_iter()
        .filter(|t| t.starts_with("target"))
        .take(4096)
    {
        let tdir = host_dir.join(&target);
        for address in list_dir(roots, &tdir)
            .into_iter()
            .filter(|a| a.starts_with(&prefix))
            .take(256)
        {
            let dir = tdir.join(&address);
            let first = |sub: &str| list_dir(roots, &dir.join(sub)).into_iter().next();
            out.push(HostDevice {
                device_type: opt_attr(roots, &dir.join("type")).and_then(|t| t.parse().ok()),
                sg: first("scsi_generic"),
                block: first("block"),
                address,
                dir,
            });
        }
    }
    out
}

/// A virtual drive's write cache is the controller's write policy: record
/// it beside what the logical drive itself answers to MODE SENSE, so that a
/// controller whose sources disagree is seen.
fn add_controller_cache_readings(disk: &mut Disk, vd: &VirtualDrive) {
    for r in &vd.cache_policy {
        crate::inventory::probe::push_reading(
            disk,
            WriteCacheReading {
                source: format!("{} write policy {} (controller cache)", r.source, r.write),
                supported: Some(true),
                enabled: Some(r.write != "WT"),
            },
        );
    }
}

/// What the families' fixture tests share: the qemu lab's sysfs tree
/// with its controller bound to another driver, replies played through
/// a capture's tape, and the bytes drives answer.
#[cfg(test)]
pub(crate) mod bench {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use crate::inventory::capture::{Capture, Source};
    use crate::inventory::Roots;
    use crate::passthrough::tape::Exchange;

    /// Writes an attribute (and its folders), as sysfs ends it: a newline.
    pub fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    }

    /// The lab's tree at `base`, its controller (0000:00:03.0, SCSI host
    /// 6) bound to `driver`; the controller's PCI folder.
    pub fn lab_bound_to(base: &Path, driver: &str) -> PathBuf {
        let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/qemu-lab");
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(&lab)
            .arg(base)
            .status()
            .unwrap();
        assert!(copied.success());
        let pci = base.join("sys/devices/pci0000:00/0000:00:03.0");
        std::fs::remove_file(pci.join("driver")).unwrap();
        let link = format!("../../../bus/pci/drivers/{driver}");
        std::os::unix::fs::symlink(link, pci.join("driver")).unwrap();
        pci
    }

    /// Roots over `base` whose files are the tree's and whose commands
    /// are answered from `exchanges`.
    pub fn roots_answering(base: &Path, exchanges: Vec<Exchange>) -> (Roots, Arc<Capture>) {
        let c = Capture::answering(exchanges);
        let roots = Roots {
            source: Source::Capturing(c.clone()),
            ..Roots::under(base)
        };
        (roots, c)
    }

    /// The open of `node`, answered.
    pub fn opened(node: &str) -> Exchange {
        Exchange {
            device: node.into(),
            op: "open".into(),
            command: crate::passthrough::tape::Command::Open,
            reply: crate::passthrough::tape::Reply::Opened,
        }
    }

    /// Standard INQUIRY data of a disk.
    pub fn inquiry(vendor: &str, product: &str, rev: &str) -> Vec<u8> {
        let mut b = vec![0u8; 96];
        b[4] = 91;
        b[8..16].copy_from_slice(format!("{vendor:<8}").as_bytes());
        b[16..32].copy_from_slice(format!("{product:<16}").as_bytes());
        b[32..36].copy_from_slice(format!("{rev:<4}").as_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drive that answers INQUIRY only, as an NVMe drive behind a
    /// tri-mode controller's SCSI translation does ("NVMe" vendor).
    struct Translated;

    impl ScsiPath for Translated {
        fn scsi(
            &self,
            op: &'static str,
            cdb: &[u8],
            data: crate::passthrough::sg::Data<'_>,
            _timeout_ms: u32,
        ) -> Result<crate::passthrough::sg::ScsiReply, PassthroughError> {
            let crate::passthrough::sg::Data::FromDevice(buf) = data else {
                unreachable!()
            };
            if cdb[..2] != [0x12, 0] {
                return Err(PassthroughError::Rejected {
                    op,
                    detail: "sense key ILLEGAL REQUEST".into(),
                });
            }
            buf[4] = 91;
            buf[8..16].copy_from_slice(b"NVMe    ");
            buf[16..32].copy_from_slice(b"Dell Ent NVMe   ");
            buf[32..36].copy_from_slice(b"1.0 ");
            Ok(crate::passthrough::sg::ScsiReply {
                status: 0,
                host_status: 0,
                driver_status: 0,
                sense: Vec::new(),
                resid: 0,
            })
        }
    }

    #[test]
    fn an_nvme_drive_behind_a_tri_mode_controller_is_named_and_its_limits_said() {
        let mut pd = physical_drive(7, 0, 3);
        ask_the_drive(&mut pd, &Translated, "tri-mode pd 7");
        assert_eq!(pd.interface.as_deref(), Some("NVMe"));
        assert_eq!(pd.model.as_deref(), Some("Dell Ent NVMe"));
        let p = pd
            .probes
            .iter()
            .find(|p| p.probe.starts_with("NVMe admin"))
            .expect("said");
        assert_eq!(p.outcome, "unsupported");
        // A SAS drive gets no such line.
        let mut sas = physical_drive(8, 0, 4);
        sas.interface = Some("SAS".into());
        struct Sas;
        impl ScsiPath for Sas {
            fn scsi(
                &self,
                op: &'static str,
                _cdb: &[u8],
                _data: crate::passthrough::sg::Data<'_>,
                _timeout_ms: u32,
            ) -> Result<crate::passthrough::sg::ScsiReply, PassthroughError> {
                Err(PassthroughError::Rejected {
                    op,
                    detail: "sense key ILLEGAL REQUEST".into(),
                })
            }
        }
        ask_the_drive(&mut sas, &Sas, "sas pd 8");
        assert!(!sas.probes.iter().any(|p| p.probe.starts_with("NVMe admin")));
    }

    #[test]
    fn each_family_once_by_name() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
        let key = |k: &str| family(&FamilyKey::new(k));
        assert!(key("megaraid").is_some() && key("mpt3sas").is_some());
        assert!(key("cciss").is_some());
        assert!(key("3ware").is_none());
    }

    /// How a disk's driver marks a RAID volume comes from its family (or
    /// the few drivers storcert reads no more of).
    #[test]
    fn a_driver_s_volume_mark_is_its_family_s() {
        assert_eq!(
            volume_mark("megaraid_sas"),
            Some(VolumeMark::FromChannel(2))
        );
        for d in ["hpsa", "smartpqi", "mpi3mr", "aacraid", "megaraid"] {
            assert_eq!(volume_mark(d), Some(VolumeMark::RaidLevel), "{d}");
        }
        assert_eq!(volume_mark("mpt3sas"), None);
        assert_eq!(volume_mark("virtio_scsi"), None);
    }

    #[test]
    fn a_version_1_inventory_reads_into_the_neutral_model() {
        // The qemu lab's inventory as storcert 0.1 wrote it (`megaraid`).
        let inv: crate::inventory::Inventory = serde_json::from_str(include_str!(
            "../../../../../tests/fixtures/qemu-lab/inventory.json"
        ))
        .unwrap();
        assert_eq!(inv.schema_version, 1);
        let c = inv
            .controllers
            .iter()
            .find(|c| c.driver.as_deref() == Some("megaraid_sas"))
            .unwrap();
        let r = c.raid.as_ref().expect("megaraid read as raid");
        assert_eq!(r.family, "megaraid");
        assert_eq!(r.product, "LSI MegaRAID SAS 9260-8i");
        assert_eq!(r.firmware, "2.5+-QEMU");
        assert_eq!(r.cache_mb, 512);
        assert_eq!(r.battery, None);
        let ids: Vec<u32> = r.virtual_drives.iter().map(|v| v.id).collect();
        assert_eq!(ids, [0, 1]);
        let pds: Vec<(u32, u32)> = r
            .physical_drives
            .iter()
            .map(|p| (p.id, p.enclosure))
            .collect();
        assert_eq!(pds, [(0, 65535), (256, 65535)]);
    }
}
