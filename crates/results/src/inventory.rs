//! The inventory's result types: what `storcert inventory --json` prints
//! and what later stages read. Documented in docs/inventory-schema.md;
//! a change that renames or removes a field bumps `SCHEMA_VERSION`.

use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Inventory {
    pub schema_version: u32,
    pub storcert_version: String,
    /// RFC 3339, UTC.
    pub generated_at: String,
    pub host: HostInfo,
    pub controllers: Vec<Controller>,
    /// Network controllers (PCI class 02xx): the link PXE, the profile
    /// fetch and the upload depend on.
    #[serde(default)]
    pub network_controllers: Vec<Controller>,
    pub disks: Vec<Disk>,
    /// Linux software RAID arrays (md), Intel VROC/IMSM ones among them.
    #[serde(default)]
    pub md_arrays: Vec<MdArray>,
    /// Problems of the scan as a whole (not of one device).
    pub errors: Vec<String>,
}

impl Inventory {
    /// Whether a physical drive read through its controller is also a
    /// disk the kernel sees itself (a JBOD or HBA-mode drive): same serial
    /// or WWN as a disk that is not a RAID logical drive (qemu's logical
    /// drives carry their member's serial). Such a drive is judged and
    /// snapshotted once, as the disk.
    pub fn kernel_sees(&self, pd: &PhysicalDrive) -> bool {
        let same = |a: &Option<String>, b: &Option<String>| {
            a.as_deref()
                .is_some_and(|a| !a.is_empty() && b.as_deref() == Some(a))
        };
        self.disks.iter().any(|d| {
            d.transport != Transport::Raid && (same(&pd.serial, &d.serial) || same(&pd.wwn, &d.wwn))
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    /// Whether a udev database was found; without it, by-id links and
    /// filesystem labels are not known.
    pub udev_database: bool,
    /// Why storcert treats some disk as the boot medium, if it found one.
    pub boot_medium_hint: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Controller {
    /// PCI address, "0000:00:03.0".
    pub pci_address: String,
    /// PCI class code, "0x010400".
    pub class_code: String,
    pub class_name: String,
    pub vendor_id: String,
    pub device_id: String,
    pub subsystem_vendor_id: Option<String>,
    pub subsystem_device_id: Option<String>,
    pub vendor_name: Option<String>,
    pub device_name: Option<String>,
    pub driver: Option<String>,
    pub driver_version: Option<String>,
    pub firmware: Option<String>,
    /// Where `firmware` was read.
    pub firmware_source: Option<String>,
    pub scsi_hosts: Vec<u32>,
    /// Kernel names of the disks behind this controller.
    pub disks: Vec<String>,
    /// What the controller's RAID/HBA family read from the controller
    /// itself (version 1 called it `megaraid`).
    #[serde(default, alias = "megaraid")]
    pub raid: Option<RaidController>,
    /// With no driver bound: the module of this kernel whose alias
    /// matches the device, if any, and whether this system carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleFor>,
    pub errors: Vec<String>,
}

/// The kernel module for a device no driver is bound to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModuleFor {
    pub name: String,
    /// In this system's module tree (it failed to bind, or was not
    /// loaded); `false`: the kernel has it, the image does not.
    pub in_image: bool,
}

/// A RAID or HBA controller as its family reads it through the
/// controller's own management interface: one description for every
/// family (`inventory::raid`). Version 1's MegaRAID-only names are read
/// as aliases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RaidController {
    /// The family that read it ("megaraid").
    #[serde(default = "megaraid_family")]
    pub family: FamilyKey,
    /// The node its commands went through.
    #[serde(alias = "ioctl_node")]
    pub node: String,
    pub scsi_host: u32,
    #[serde(alias = "product_name")]
    pub product: String,
    pub serial_number: String,
    /// The firmware package as the controller names it.
    #[serde(alias = "package_version")]
    pub firmware: String,
    pub firmware_components: Vec<FirmwareComponent>,
    /// The controller's cache, MiB (0: none).
    #[serde(alias = "memory_size_mb")]
    pub cache_mb: u32,
    /// The battery or flash module (CacheVault) that keeps the cache
    /// across a power loss; None where the family cannot say.
    #[serde(default)]
    pub battery: Option<Battery>,
    pub virtual_drives: Vec<VirtualDrive>,
    pub physical_drives: Vec<PhysicalDrive>,
    pub notes: Vec<String>,
    pub errors: Vec<String>,
}

impl RaidController {
    /// A controller as its family first knows it: no cache, battery,
    /// drives, notes or errors yet.
    pub fn new(
        family: FamilyKey,
        node: String,
        scsi_host: u32,
        product: String,
        firmware: String,
    ) -> Self {
        RaidController {
            family,
            node,
            scsi_host,
            product,
            serial_number: String::new(),
            firmware,
            firmware_components: Vec::new(),
            cache_mb: 0,
            battery: None,
            virtual_drives: Vec::new(),
            physical_drives: Vec::new(),
            notes: Vec::new(),
            errors: Vec::new(),
        }
    }
}

fn megaraid_family() -> FamilyKey {
    FamilyKey::new("megaraid")
}

/// A RAID/HBA family's key in the device layer's registry of families
/// (`inventory::raid::FAMILIES`): what policy and its fixes ask the family
/// by, never matched as free text. A key this build's registry lacks (a
/// replayed inventory of a newer storcert) is kept as read, and asked
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FamilyKey(String);

impl FamilyKey {
    pub fn new(key: &str) -> FamilyKey {
        FamilyKey(key.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for FamilyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for FamilyKey {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Battery {
    pub present: bool,
    /// The state as the controller words it, where it says.
    #[serde(default)]
    pub state: Option<String>,
    /// Whether the controller calls it good (charged, not failed, not in
    /// a learn cycle that leaves the cache unprotected); None where it
    /// does not say.
    #[serde(default)]
    pub healthy: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FirmwareComponent {
    pub name: String,
    pub version: String,
    pub build_date: String,
    pub build_time: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VirtualDrive {
    /// The family's number for it (MegaRAID: the target id).
    #[serde(alias = "target_id")]
    pub id: u32,
    pub name: String,
    pub raid_level: String,
    pub state: String,
    pub size_bytes: u64,
    pub strip_size_bytes: Option<u64>,
    pub drives: u8,
    pub span_depth: u8,
    pub access: String,
    /// "Default", "Enabled" or "Disabled": the member disks' own cache.
    pub disk_cache_policy: String,
    /// The cache policy as each source reports it (MegaRAID: LD_GET_INFO,
    /// then CFG_READ): `current` is the effective policy, `default` the
    /// configured one. Sources should agree; where they do not, all are
    /// shown.
    pub cache_policy: Vec<CachePolicyReading>,
    pub cache_policy_consistent: bool,
    /// Kernel name of the block device the driver made for this drive.
    pub block_device: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachePolicyReading {
    pub source: String,
    /// The current policy byte (MR_LD_CACHE_* bits).
    pub current_raw: u8,
    pub default_raw: u8,
    /// "WT NORA Direct", as storcli and perccli print it.
    pub current: String,
    pub default: String,
    pub write: String,
    pub read: String,
    pub io: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhysicalDrive {
    /// The family's number for it (MegaRAID: the device id).
    #[serde(alias = "device_id")]
    pub id: u32,
    #[serde(alias = "enclosure_device_id")]
    pub enclosure: u32,
    pub slot: u32,
    pub state: Option<String>,
    pub interface: Option<String>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub firmware: Option<String>,
    pub wwn: Option<String>,
    pub sas_address: Option<String>,
    pub raw_size_bytes: Option<u64>,
    pub coerced_size_bytes: Option<u64>,
    pub media_errors: Option<u32>,
    pub other_errors: Option<u32>,
    pub predictive_failures: Option<u32>,
    /// Read from the drive itself through the controller (MegaRAID:
    /// MFI pass-through, as `smartctl -d megaraid,N`).
    #[serde(default)]
    pub serial: Option<String>,
    /// The drive's own volatile write cache, as the drive reports it.
    #[serde(default)]
    pub write_cache: Option<WriteCache>,
    #[serde(default)]
    pub health: Option<Health>,
    /// Every command sent to the drive through the controller, with its
    /// outcome (as a disk's).
    #[serde(default)]
    pub probes: Vec<Probe>,
    pub errors: Vec<String>,
}

/// A Linux md array as its driver describes it in sysfs
/// (`/sys/block/mdN/md`): what policy checks of software RAID and of
/// Intel VROC (IMSM metadata, run by md) read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdArray {
    /// Kernel name, "md127".
    pub name: String,
    /// "raid1", "raid5", ...; "container" for an IMSM/DDF container.
    pub level: String,
    /// "1.2", "0.90", "external:imsm" (a VROC container),
    /// "external:/md127/0" (a volume inside one), "none".
    pub metadata: String,
    /// Intel VROC / RST: IMSM metadata, itself or through its container.
    pub vroc: bool,
    /// The container a volume lives in, for external metadata.
    pub container: Option<String>,
    /// clean, active, active-idle, readonly, read-auto, inactive, broken...
    pub state: String,
    pub raid_disks: Option<u32>,
    /// Members missing from the array (md's `degraded`).
    pub degraded: Option<u32>,
    /// idle, resync, recover, check, repair, reshape, frozen.
    pub sync_action: Option<String>,
    /// The write-intent bitmap: "none", "+8" (internal, at this sector
    /// offset) or "file".
    pub bitmap: Option<String>,
    /// How the array closes the RAID write hole: none, resync, bitmap,
    /// journal, ppl.
    pub consistency_policy: Option<String>,
    pub size_bytes: u64,
    pub chunk_bytes: Option<u64>,
    pub members: Vec<MdMember>,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdMember {
    /// Kernel name of the member device, "sdb" or "nvme0n1p2".
    pub device: String,
    /// Its role number in the array; None for a spare.
    pub slot: Option<u32>,
    /// md's flags: in_sync, faulty, spare, write_mostly, journal,
    /// replacement, blocked, ...
    pub state: Vec<String>,
    /// Read errors corrected on it.
    pub errors: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Nvme,
    Sata,
    Sas,
    Scsi,
    /// A logical drive of a RAID controller.
    Raid,
    Virtio,
    Usb,
    Mmc,
    Loop,
    Ram,
    Zram,
    Md,
    Dm,
    /// A SCSI disk behind a Fibre Channel HBA (a SAN's LUN).
    Fc,
    /// A SCSI disk of an iSCSI session.
    Iscsi,
    /// An NVMe namespace over a fabric (TCP, RDMA, FC, loop).
    #[serde(rename = "nvme-of")]
    NvmeOf,
    /// A network block device.
    Nbd,
    /// A Ceph RADOS block device.
    Rbd,
    Unknown,
}

impl Transport {
    /// Virtual devices that `inventory` shows only with `--all`.
    pub fn is_virtual(self) -> bool {
        matches!(
            self,
            Transport::Loop | Transport::Ram | Transport::Zram | Transport::Md | Transport::Dm
        )
    }

    /// Disks of this machine's own: what `select = "all"` and the burn-in
    /// take, and what the safety gate writes without a name. A remote
    /// disk (a SAN's, a network's) or a USB stick is another's data, and
    /// a transport storcert cannot tell is refused the same way.
    pub fn is_local(self) -> bool {
        !matches!(
            self,
            Transport::Fc
                | Transport::Iscsi
                | Transport::NvmeOf
                | Transport::Nbd
                | Transport::Rbd
                | Transport::Usb
                | Transport::Unknown
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Nvme => "nvme",
            Transport::Sata => "sata",
            Transport::Sas => "sas",
            Transport::Scsi => "scsi",
            Transport::Raid => "raid",
            Transport::Virtio => "virtio",
            Transport::Usb => "usb",
            Transport::Mmc => "mmc",
            Transport::Loop => "loop",
            Transport::Ram => "ram",
            Transport::Zram => "zram",
            Transport::Md => "md",
            Transport::Dm => "dm",
            Transport::Fc => "fc",
            Transport::Iscsi => "iscsi",
            Transport::NvmeOf => "nvme-of",
            Transport::Nbd => "nbd",
            Transport::Rbd => "rbd",
            Transport::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Disk {
    /// Kernel name, "sda".
    pub name: String,
    pub dev_path: String,
    /// "8:0".
    pub major_minor: String,
    pub by_id: Vec<String>,
    pub transport: Transport,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub eui64: Option<String>,
    pub nguid: Option<String>,
    pub firmware: Option<String>,
    pub firmware_source: Option<String>,
    pub capacity_bytes: u64,
    pub logical_sector_size: Option<u32>,
    pub physical_sector_size: Option<u32>,
    /// NVMe: the namespace's formatted LBA format (index) and metadata
    /// bytes per block.
    pub lba_format: Option<u8>,
    pub metadata_bytes: Option<u16>,
    pub rotational: Option<bool>,
    /// The device's own queue depth (SCSI device queue_depth); for other
    /// devices the block layer's nr_requests.
    pub queue_depth: Option<u32>,
    pub read_only: bool,
    pub removable: bool,
    /// PCI address of the controller the disk sits behind.
    pub controller: Option<String>,
    /// "host:channel:target:lun" for SCSI disks.
    pub scsi_address: Option<String>,
    pub partitions: Vec<Partition>,
    /// Other ways to the same drive, which are not listed as disks of
    /// their own: an NVMe multipath head's hidden per-controller paths
    /// ("nvme0c1n1 via nvme1, pcie 0000:00:05.0"), a SCSI drive's second
    /// path with the same WWN ("sdc").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Kernel names of devices stacked on this disk (md, dm).
    pub holders: Vec<String>,
    /// Mount points of the disk itself (not of its partitions).
    pub mountpoints: Vec<String>,
    /// Filesystem or signature type on the whole disk, as udev saw it.
    pub fs_type: Option<String>,
    /// The disk holds the running system (/, /usr, /boot, swap, or a
    /// device stacked on it that does).
    pub system_disk: bool,
    /// The disk holds the medium the system booted from.
    pub boot_medium: bool,
    pub role_reasons: Vec<String>,
    pub write_cache: Option<WriteCache>,
    pub health: Option<Health>,
    /// Each passthrough path tried and what came of it.
    pub probes: Vec<Probe>,
    pub errors: Vec<String>,
}

impl Disk {
    /// What makes drives alike for a search side by side: the model, the
    /// firmware (another firmware may behave otherwise) and the capacity.
    /// None where the model or firmware is unknown (a loop, a virtio disk,
    /// a drive a controller hides): such a drive cannot be known to be
    /// alike another, and is searched alone.
    pub fn likeness(&self) -> Option<String> {
        Some(format!(
            "{} firmware {}, {} bytes",
            self.model.as_deref()?,
            self.firmware.as_deref()?,
            self.capacity_bytes
        ))
    }

    /// A disk of which nothing is known yet but its name, node and
    /// transport: what probing fills in.
    pub fn unprobed(name: &str, dev_path: &str, transport: Transport) -> Disk {
        Disk {
            name: name.into(),
            dev_path: dev_path.into(),
            major_minor: String::new(),
            by_id: Vec::new(),
            transport,
            vendor: None,
            model: None,
            serial: None,
            wwn: None,
            eui64: None,
            nguid: None,
            firmware: None,
            firmware_source: None,
            capacity_bytes: 0,
            logical_sector_size: None,
            physical_sector_size: None,
            lba_format: None,
            metadata_bytes: None,
            rotational: None,
            queue_depth: None,
            read_only: false,
            removable: false,
            controller: None,
            scsi_address: None,
            paths: Vec::new(),
            partitions: Vec::new(),
            holders: Vec::new(),
            mountpoints: Vec::new(),
            fs_type: None,
            system_disk: false,
            boot_medium: false,
            role_reasons: Vec::new(),
            write_cache: None,
            health: None,
            probes: Vec::new(),
            errors: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Partition {
    pub name: String,
    pub number: Option<u32>,
    pub start_sector: Option<u64>,
    pub size_bytes: u64,
    pub mountpoints: Vec<String>,
    pub holders: Vec<String>,
    pub fs_type: Option<String>,
    pub label: Option<String>,
    pub part_uuid: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteCache {
    pub supported: Option<bool>,
    pub enabled: Option<bool>,
    /// Where `supported`/`enabled` come from (the first reading).
    pub source: String,
    /// True when no device command answered and the kernel's view (sysfs)
    /// was used instead.
    pub from_sysfs: bool,
    pub readings: Vec<WriteCacheReading>,
    /// Readings from different sources disagree.
    pub disagreement: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WriteCacheReading {
    pub source: String,
    pub supported: Option<bool>,
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    pub probe: String,
    /// "ok", "unsupported" (this path does not exist for the device) or
    /// "failed".
    pub outcome: String,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Health {
    /// "passed", "failed" or "unknown".
    pub overall: String,
    pub source: String,
    pub temperature_c: Option<i32>,
    pub power_on_hours: Option<u64>,
    pub nvme: Option<NvmeHealth>,
    pub ata: Option<AtaHealth>,
    pub scsi: Option<ScsiHealth>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NvmeHealth {
    pub critical_warning: u8,
    pub critical_warnings: Vec<String>,
    pub available_spare_pct: u8,
    pub available_spare_threshold_pct: u8,
    pub percentage_used: u8,
    /// Data units of 512,000 bytes, as the drive counts them.
    pub data_units_read: u128,
    pub data_units_written: u128,
    pub bytes_written: u128,
    /// Bytes written to the media, from the OCP extended SMART log (0xC0)
    /// where the drive has one: with `bytes_written`, the write
    /// amplification.
    pub media_bytes_written: Option<u128>,
    pub power_cycles: u128,
    pub unsafe_shutdowns: u128,
    pub media_errors: u128,
    pub error_log_entries: u128,
    pub volatile_write_cache_present: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AtaHealth {
    pub smart_supported: bool,
    pub smart_enabled: bool,
    /// SMART RETURN STATUS: "passed" or "threshold exceeded".
    pub smart_status: Option<String>,
    pub reallocated_sectors: Option<u64>,
    pub pending_sectors: Option<u64>,
    pub offline_uncorrectable: Option<u64>,
    pub crc_errors: Option<u64>,
    pub attributes: Vec<AtaAttribute>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AtaAttribute {
    pub id: u8,
    pub current: u8,
    pub worst: u8,
    pub raw: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScsiHealth {
    /// Most recent informational exception (asc/ascq 0/0 when none).
    pub ie_asc: Option<u8>,
    pub ie_ascq: Option<u8>,
    pub reference_temperature_c: Option<u8>,
}
