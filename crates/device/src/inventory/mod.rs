//! Device and controller inventory: every block device with its identity,
//! capacity, geometry, write cache, health and role (system disk, boot
//! medium), and every PCI storage controller with what sits behind it.
//!
//! Identity and settings come from the devices themselves (SG_IO, ATA
//! PASS-THROUGH, NVMe admin, MegaRAID MFI) through `passthrough`; sysfs and
//! the udev database supply the topology and the fallbacks. Probing only
//! reads: no command issued here changes a device.

pub mod capture;
pub mod controllers;
pub use storcert_results::inventory as model;
pub mod probe;
pub mod raid;
pub mod reach;
pub mod sysfs;
pub mod udev;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::passthrough::tape::Device;
pub use model::*;
use sysfs::{opt_attr, parse_attr, read_attr};

/// Where the inventory reads the system from, and how: tests point the
/// paths at recorded trees; `source` reads the host, keeps what it
/// answered (`--capture`) or replays a capture instead.
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
    pub dev: PathBuf,
    pub udev_data: PathBuf,
    pub source: capture::Source,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: "/sys".into(),
            proc: "/proc".into(),
            dev: "/dev".into(),
            udev_data: "/run/udev/data".into(),
            source: capture::Source::Host,
        }
    }
}

impl Roots {
    /// A recorded tree: `base`/sys, /proc, /dev and /udev.
    pub fn under(base: &Path) -> Roots {
        Roots {
            sys: base.join("sys"),
            proc: base.join("proc"),
            dev: base.join("dev"),
            udev_data: base.join("udev"),
            source: capture::Source::Host,
        }
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanOptions {
    /// Include loop, ram, zram, md and dm devices.
    pub all: bool,
    /// Only these devices (paths, /dev/disk/by-id links, or kernel names).
    pub devices: Vec<String>,
    /// Skip passthrough probing (sysfs and udev only).
    pub no_probe: bool,
}

/// Runs the whole inventory. Never fails as a whole: what cannot be read
/// is recorded on the device it concerns, or in `errors`.
pub fn scan(roots: &Roots, opts: &ScanOptions) -> Inventory {
    let mut errors = Vec::new();
    let mut found = controllers::find(roots);
    let entries = match sysfs::block_devices(roots) {
        Ok(e) => e,
        Err(e) => {
            errors.push(format!("{}: {e}", roots.sys.join("block").display()));
            Vec::new()
        }
    };

    let wanted = resolve_wanted(roots, &opts.devices, &entries, &mut errors);
    let context = RoleContext::read(roots);
    let mut disks = Vec::new();
    for entry in &entries {
        // A hidden disk is one path of a drive listed under its head
        // (NVMe native multipath's nvme0c1n1): no node, not a drive.
        if opt_attr(roots, &entry.sys_path.join("hidden")).as_deref() == Some("1") {
            continue;
        }
        if let Some(w) = &wanted {
            if !w.contains(&entry.name) {
                continue;
            }
        }
        let transport = detect_transport(roots, entry);
        if transport.is_virtual() && !opts.all && wanted.is_none() {
            continue;
        }
        let mut disk = read_disk(roots, entry, transport, &found, &context);
        if !opts.no_probe {
            probe_disk(roots, &mut disk);
        }
        fill_sysfs_fallbacks(roots, entry, &mut disk);
        disk.paths = nvme_paths(roots, &entries, entry);
        // A head's transport is its paths': any not over PCIe is a fabric.
        if disk.transport == Transport::Nvme && disk.paths.iter().any(|p| !p.contains(", pcie")) {
            disk.transport = Transport::NvmeOf;
        }
        disks.push(disk);
    }
    merge_scsi_paths(&mut disks);
    mark_boot_medium(&mut disks, &context);

    // Controllers: attach their disks, and read each RAID/HBA family's
    // through its own interface.
    for fc in &mut found {
        let c = &mut fc.controller;
        c.disks = disks
            .iter()
            .filter(|d| d.controller.as_deref() == Some(c.pci_address.as_str()))
            .map(|d| d.name.clone())
            .collect();
    }
    let mut controllers: Vec<&mut Controller> =
        found.iter_mut().map(|f| &mut f.controller).collect();
    raid::read_all(roots, &mut controllers, &mut disks, opts.no_probe);

    let kernel = roots
        .read_to_string(&roots.proc.join("sys/kernel/osrelease"))
        .ok()
        .map(|s| s.trim().to_string());
    let hostname = roots
        .read_to_string(&roots.proc.join("sys/kernel/hostname"))
        .ok()
        .map(|s| s.trim().to_string());
    Inventory {
        schema_version: SCHEMA_VERSION,
        storcert_version: env!("CARGO_PKG_VERSION").to_string(),
        generated_at: generated_at(roots),
        host: HostInfo {
            hostname,
            kernel,
            udev_database: udev::database_present(roots),
            boot_medium_hint: context.boot_hint.clone(),
        },
        controllers: found.into_iter().map(|f| f.controller).collect(),
        network_controllers: controllers::find_network(roots),
        disks,
        md_arrays: raid::md::read_arrays(roots),
        errors,
    }
}

/// Turns `--device` arguments into kernel names; unknown ones are errors.
fn resolve_wanted(
    roots: &Roots,
    requested: &[String],
    entries: &[sysfs::BlockEntry],
    errors: &mut Vec<String>,
) -> Option<BTreeSet<String>> {
    if requested.is_empty() {
        return None;
    }
    let mut set = BTreeSet::new();
    for req in requested {
        let name = if req.contains('/') {
            roots
                .canonicalize(Path::new(req))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        } else {
            Some(req.clone())
        };
        match name {
            Some(n) if entries.iter().any(|e| e.name == n) => {
                set.insert(n);
            }
            Some(n) if roots.exists(&roots.sys.join("class/block").join(&n).join("partition")) => {
                errors.push(format!(
                    "--device {req}: {n} is a partition; inventory lists whole disks (its disk lists it)"
                ));
            }
            _ => errors.push(format!("--device {req}: no such block device")),
        }
    }
    Some(set)
}

fn detect_transport(roots: &Roots, entry: &sysfs::BlockEntry) -> Transport {
    let name = entry.name.as_str();
    let path = entry.device_path.to_string_lossy();
    if name.starts_with("loop") {
        return Transport::Loop;
    }
    if name.starts_with("zram") {
        return Transport::Zram;
    }
    if name.starts_with("ram") {
        return Transport::Ram;
    }
    if name.starts_with("md") {
        return Transport::Md;
    }
    if name.starts_with("dm-") {
        return Transport::Dm;
    }
    if name.starts_with("nbd") {
        return Transport::Nbd;
    }
    if name.starts_with("rbd") {
        return Transport::Rbd;
    }
    if name.starts_with("nvme") {
        return match nvme_transport(roots, entry).as_deref() {
            None | Some("pcie") => Transport::Nvme,
            Some(_) => Transport::NvmeOf,
        };
    }
    if name.starts_with("mmcblk") {
        return Transport::Mmc;
    }
    if path.contains("/usb") {
        return Transport::Usb;
    }
    if path.contains("/virtio") && !path.contains("/host") {
        return Transport::Virtio;
    }
    if let Some(host) = scsi_host_of(&entry.device_path) {
        let proc_name = opt_attr(
            roots,
            &roots
                .sys
                .join(format!("class/scsi_host/host{host}/proc_name")),
        )
        .unwrap_or_default();
        if path.contains("/ata") {
            return Transport::Sata;
        }
        if path.contains("/rport-") {
            return Transport::Fc;
        }
        if path
            .split('/')
            .any(|c| c.starts_with("session") && c[7..].parse::<u32>().is_ok())
        {
            return Transport::Iscsi;
        }
        match raid::volume_mark(&proc_name) {
            Some(raid::VolumeMark::FromChannel(first)) => {
                return match scsi_address_of(roots, entry)
                    .and_then(|a| a.split(':').nth(1)?.parse::<u32>().ok())
                {
                    Some(ch) if ch >= first => Transport::Raid,
                    _ => Transport::Sas,
                };
            }
            Some(raid::VolumeMark::RaidLevel)
                if opt_attr(roots, &entry.sys_path.join("device/raid_level"))
                    .is_some_and(|l| l != "N/A") =>
            {
                return Transport::Raid;
            }
            _ => {}
        }
        if path.contains("/end_device-") || path.contains("/port-") {
            return Transport::Sas;
        }
        return Transport::Scsi;
    }
    Transport::Unknown
}

/// An NVMe multipath head's hidden paths, each with its controller and
/// how it is reached. Linux 6.15 on links them from the head's
/// `multipath/`; before, they are found by name: head nvme{S}n{N}, paths
/// nvme{S}c{C}n{N}.
fn nvme_paths(
    roots: &Roots,
    entries: &[sysfs::BlockEntry],
    head: &sysfs::BlockEntry,
) -> Vec<String> {
    let Some((subsys, ns)) = head
        .name
        .strip_prefix("nvme")
        .and_then(|rest| rest.split_once('n'))
        .filter(|(s, n)| !s.contains('c') && !n.contains('p'))
    else {
        return Vec::new();
    };
    let mut names = sysfs::list_dir(roots, &head.sys_path.join("multipath"));
    if names.is_empty() {
        names = entries
            .iter()
            .map(|e| e.name.clone())
            .filter(|n| {
                n.strip_prefix(&format!("nvme{subsys}c"))
                    .and_then(|rest| rest.split_once('n'))
                    .is_some_and(|(c, n)| {
                        n == ns && !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())
                    })
            })
            .collect();
    }
    names
        .into_iter()
        .map(|name| {
            let dev = roots.sys.join("block").join(&name).join("device");
            let ctrl = roots
                .canonicalize(&dev)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "?".into());
            let transport = opt_attr(roots, &dev.join("transport")).unwrap_or_else(|| "?".into());
            let address = opt_attr(roots, &dev.join("address")).unwrap_or_default();
            storcert_util::text::printable(
                format!("{name} via {ctrl}, {transport} {address}").trim_end(),
                200,
            )
        })
        .collect()
}

/// A SCSI drive reached by two paths (a dual-ported SAS drive on two
/// HBA ports, an FC LUN on two fabrics) is two sdX with one WWN: one drive,
/// listed once, with the other nodes as its paths.
fn merge_scsi_paths(disks: &mut Vec<Disk>) {
    let mut i = 0;
    while i < disks.len() {
        let multi_path = matches!(
            disks[i].transport,
            Transport::Sas | Transport::Scsi | Transport::Fc | Transport::Iscsi
        );
        let Some(wwn) = disks[i].wwn.clone().filter(|_| multi_path) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < disks.len() {
            if disks[j].wwn.as_deref() == Some(wwn.as_str())
                && disks[j].transport == disks[i].transport
            {
                let other = disks.remove(j);
                disks[i].paths.push(other.name);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
}

/// An NVMe namespace's controller transport (`pcie`, `tcp`, `rdma`, `fc`,
/// `loop`): its controller's, or for a multipath head its first path's.
fn nvme_transport(roots: &Roots, entry: &sysfs::BlockEntry) -> Option<String> {
    let own = opt_attr(roots, &entry.sys_path.join("device/transport"));
    own.or_else(|| {
        let paths = sysfs::list_dir(roots, &entry.sys_path.join("multipath"));
        let first = paths.first()?;
        opt_attr(
            roots,
            &roots.sys.join("block").join(first).join("device/transport"),
        )
    })
}

/// The SCSI host number from a device path (".../host3/target3:0:0/...").
fn scsi_host_of(path: &Path) -> Option<u32> {
    path.iter().rev().find_map(|c| {
        c.to_str()?
            .strip_prefix("host")
            .and_then(|n| n.parse().ok())
    })
}

fn scsi_address_of(roots: &Roots, entry: &sysfs::BlockEntry) -> Option<String> {
    let link = roots.canonicalize(&entry.sys_path.join("device")).ok()?;
    let last = link.file_name()?.to_string_lossy().into_owned();
    (last.split(':').count() == 4).then_some(last)
}

/// Mounts, swaps and the EFI loader's boot partition: what decides whether
/// a disk holds the running system or the boot medium.
struct RoleContext {
    /// disk name → reasons it holds the running system.
    system: BTreeMap<String, Vec<String>>,
    /// disk name → reasons it is the boot medium (from mounts).
    boot: BTreeMap<String, Vec<String>>,
    mounts: BTreeMap<String, Vec<String>>,
    loader_part_uuid: Option<String>,
    boot_hint: Option<String>,
    /// /dev/disk/by-id links by the kernel name they point at, read
    /// once, when a disk has none in the udev database.
    by_id: std::cell::OnceCell<BTreeMap<String, Vec<String>>>,
}

const SYSTEM_MOUNTS: [&str; 4] = ["/", "/usr", "/var", "/boot"];
const BOOT_MOUNTS: [&str; 3] = ["/boot", "/boot/efi", "/efi"];

impl RoleContext {
    fn read(roots: &Roots) -> RoleContext {
        let mounts = sysfs::mounts_by_devnum(roots);
        let mut system: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut boot: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // The disks under each device, walked once per device (a stack of
        // thousands mounted thousands of times costs one walk).
        let mut under: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut disks_under = |name: &str| {
            under
                .entry(name.to_string())
                .or_insert_with(|| sysfs::underlying_disks(roots, name))
                .clone()
        };
        for (devnum, points) in &mounts {
            let Some(name) = sysfs::name_of_devnum(roots, devnum) else {
                continue;
            };
            // Only the mount points that make a role, each once.
            let roles: BTreeSet<&str> = points
                .iter()
                .map(String::as_str)
                .filter(|p| SYSTEM_MOUNTS.contains(p) || BOOT_MOUNTS.contains(p))
                .collect();
            if roles.is_empty() {
                continue;
            }
            for disk in disks_under(&name) {
                for p in &roles {
                    let reason = format!("{name} is mounted on {p}");
                    if SYSTEM_MOUNTS.contains(p) {
                        push_reason(system.entry(disk.clone()).or_default(), &reason);
                    }
                    if BOOT_MOUNTS.contains(p) {
                        push_reason(boot.entry(disk.clone()).or_default(), &reason);
                    }
                }
            }
        }
        for devnum in sysfs::swap_devnums(roots) {
            if let Some(name) = sysfs::name_of_devnum(roots, &devnum) {
                for disk in disks_under(&name) {
                    push_reason(
                        system.entry(disk).or_default(),
                        &format!("{name} is in use as swap"),
                    );
                }
            }
        }
        let loader_part_uuid = read_loader_part_uuid(roots);
        let boot_hint = loader_part_uuid
            .as_ref()
            .map(|u| format!("EFI LoaderDevicePartUUID {u}"));
        RoleContext {
            system,
            boot,
            mounts,
            loader_part_uuid,
            boot_hint,
            by_id: std::cell::OnceCell::new(),
        }
    }
}

/// Adds a reason a disk has its role, once, and no more than a few: the
/// first ones say it (a capture can mount one device a million times).
fn push_reason(reasons: &mut Vec<String>, reason: &str) {
    const MAX_REASONS: usize = 16;
    if reasons.len() < MAX_REASONS && !reasons.iter().any(|r| r == reason) {
        reasons.push(reason.to_string());
    }
}

/// systemd-boot and other loaders (and systemd-stub, so the image's
/// single-file kernel) record the partition they were loaded from in this
/// EFI variable (4 bytes of attributes, then UTF-16LE).
pub fn read_loader_part_uuid(roots: &Roots) -> Option<String> {
    let raw =
        roots
            .read(&roots.sys.join(
                "firmware/efi/efivars/LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
            ))
            .ok()?;
    let units: Vec<u16> = raw
        .get(4..)?
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    let s = String::from_utf16(&units).ok()?;
    (!s.is_empty()).then(|| s.to_ascii_lowercase())
}

/// Builds a disk's entry from sysfs and udev; every unreadable attribute is
/// recorded on the entry.
fn read_disk(
    roots: &Roots,
    entry: &sysfs::BlockEntry,
    transport: Transport,
    controllers: &[controllers::FoundController],
    ctx: &RoleContext,
) -> Disk {
    let sys = &entry.sys_path;
    let mut errors = Vec::new();
    let devnum = match read_attr(roots, &sys.join("dev")) {
        Ok(d) => d,
        Err(e) => {
            errors.push(format!(
                "{}: {e} (the device may have gone away during the scan)",
                sys.join("dev").display()
            ));
            String::new()
        }
    };
    let capacity_bytes = match parse_attr::<u64>(roots, &sys.join("size")) {
        Ok(sectors) => sectors.saturating_mul(512),
        Err(e) => {
            errors.push(e.to_string());
            0
        }
    };
    let mut num = |file: &str| -> Option<u32> {
        match parse_attr::<u32>(roots, &sys.join(file)) {
            Ok(v) => Some(v),
            Err(e) => {
                if roots.exists(&sys.join(file)) {
                    errors.push(e.to_string());
                }
                None
            }
        }
    };
    let logical_sector_size = num("queue/logical_block_size");
    let physical_sector_size = num("queue/physical_block_size");
    let rotational = num("queue/rotational").map(|v| v != 0);
    let queue_depth = num("device/queue_depth").or_else(|| num("queue/nr_requests"));
    let read_only = num("ro").map(|v| v != 0).unwrap_or(false);
    let removable = num("removable").map(|v| v != 0).unwrap_or(false);

    let record = (!devnum.is_empty())
        .then(|| udev::record(roots, &devnum))
        .flatten();
    let mut by_id = record.as_ref().map(|r| r.by_id()).unwrap_or_default();
    if by_id.is_empty() {
        by_id = ctx
            .by_id
            .get_or_init(|| udev::by_id_links(roots))
            .get(&entry.name)
            .cloned()
            .unwrap_or_default();
    }

    let controller = controllers
        .iter()
        .filter(|c| entry.device_path.starts_with(&c.device_path))
        .max_by_key(|c| c.device_path.as_os_str().len())
        .map(|c| c.controller.pci_address.clone());

    let partitions = sysfs::partition_names(roots, sys)
        .into_iter()
        .map(|p| read_partition(roots, sys, &p, ctx))
        .collect();

    let mountpoints = ctx.mounts.get(&devnum).cloned().unwrap_or_default();
    let holders = sysfs::list_dir(roots, &sys.join("holders"));
    let role_reasons = ctx.system.get(&entry.name).cloned().unwrap_or_default();
    let dev_path = roots.dev.join(&entry.name).display().to_string();
    Disk {
        major_minor: devnum,
        by_id,
        capacity_bytes,
        logical_sector_size,
        physical_sector_size,
        rotational,
        queue_depth,
        read_only,
        removable,
        controller,
        scsi_address: scsi_address_of(roots, entry),
        partitions,
        holders,
        mountpoints,
        fs_type: record
            .as_ref()
            .and_then(|r| r.get("ID_FS_TYPE").or(r.get("ID_PART_TABLE_TYPE"))),
        system_disk: !role_reasons.is_empty(),
        role_reasons,
        errors,
        ..Disk::unprobed(&entry.name, &dev_path, transport)
    }
}

fn read_partition(roots: &Roots, disk_sys: &Path, name: &str, ctx: &RoleContext) -> Partition {
    let dir = disk_sys.join(name);
    let devnum = read_attr(roots, &dir.join("dev")).unwrap_or_default();
    let record = udev::record(roots, &devnum);
    let get = |k: &str| record.as_ref().and_then(|r| r.get(k));
    Partition {
        name: name.to_string(),
        number: parse_attr(roots, &dir.join("partition")).ok(),
        start_sector: parse_attr(roots, &dir.join("start")).ok(),
        size_bytes: parse_attr::<u64>(roots, &dir.join("size"))
            .map(|s| s.saturating_mul(512))
            .unwrap_or(0),
        mountpoints: ctx.mounts.get(&devnum).cloned().unwrap_or_default(),
        holders: sysfs::list_dir(roots, &dir.join("holders")),
        fs_type: get("ID_FS_TYPE"),
        label: get("ID_FS_LABEL"),
        part_uuid: get("ID_PART_ENTRY_UUID").map(|u| u.to_ascii_lowercase()),
    }
}

fn probe_disk(roots: &Roots, disk: &mut Disk) {
    if !disk.errors.is_empty() && disk.major_minor.is_empty() {
        return;
    }
    let dev = match Device::open_for_probe(&disk.dev_path, roots.source.tape()) {
        Ok(f) => f,
        Err(e) => {
            disk.errors.push(format!("open {}: {e}", disk.dev_path));
            return;
        }
    };
    match disk.transport {
        Transport::Nvme => probe::probe_nvme(disk, &dev),
        Transport::Loop | Transport::Ram | Transport::Zram | Transport::Md | Transport::Dm => {}
        // virtio-blk and MMC have no SCSI path; trying documents that.
        _ => probe::probe_scsi(disk, &dev),
    }
}

/// Where the device did not answer, sysfs and udev fill in, and say so.
fn fill_sysfs_fallbacks(roots: &Roots, entry: &sysfs::BlockEntry, disk: &mut Disk) {
    let sys = &entry.sys_path;
    let dev = sys.join("device");
    let udev = udev::record(roots, &disk.major_minor);
    let uget = |k: &str| udev.as_ref().and_then(|r| r.get(k));
    if disk.model.is_none() {
        disk.model = opt_attr(roots, &dev.join("model")).or_else(|| uget("ID_MODEL"));
    }
    if disk.vendor.is_none() && disk.transport != Transport::Nvme {
        disk.vendor = opt_attr(roots, &dev.join("vendor"));
    }
    if disk.serial.is_none() {
        disk.serial = opt_attr(roots, &sys.join("serial"))
            .or_else(|| opt_attr(roots, &dev.join("serial")))
            .or_else(|| uget("ID_SERIAL_SHORT"));
    }
    if disk.wwn.is_none() && disk.transport != Transport::Nvme {
        disk.wwn = opt_attr(roots, &dev.join("wwid"))
            .filter(|w| w.starts_with("naa."))
            .map(|w| format!("0x{}", &w[4..]))
            .or_else(|| uget("ID_WWN"));
    }
    if disk.firmware.is_none() {
        for (file, label) in [
            ("firmware_rev", "sysfs device/firmware_rev"),
            (
                "rev",
                "sysfs device/rev (libata truncates it to 4 characters)",
            ),
        ] {
            if let Some(v) = opt_attr(roots, &dev.join(file)) {
                disk.firmware = Some(v);
                disk.firmware_source = Some(label.into());
                break;
            }
        }
    }
    if disk.write_cache.is_none() {
        let scsi_disk = sysfs::list_dir(roots, &dev.join("scsi_disk"))
            .into_iter()
            .next()
            .map(|d| dev.join("scsi_disk").join(d).join("cache_type"));
        let candidates = scsi_disk
            .into_iter()
            .chain(std::iter::once(sys.join("queue/write_cache")));
        for file in candidates {
            if let Some(v) = opt_attr(roots, &file) {
                let enabled = v.starts_with("write back");
                let source = format!(
                    "sysfs {} (the kernel's view; the device did not answer)",
                    file.strip_prefix(&roots.sys).unwrap_or(&file).display()
                );
                disk.write_cache = Some(WriteCache {
                    supported: enabled.then_some(true),
                    enabled: Some(enabled),
                    source: source.clone(),
                    from_sysfs: true,
                    readings: vec![WriteCacheReading {
                        source,
                        supported: enabled.then_some(true),
                        enabled: Some(enabled),
                    }],
                    disagreement: false,
                });
                break;
            }
        }
    } else if let Some(v) = opt_attr(roots, &sys.join("queue/write_cache")) {
        // The kernel's flush behaviour follows its own view of the cache;
        // record it beside the device's so a mismatch is visible.
        let enabled = v.starts_with("write back");
        if let Some(wc) = disk.write_cache.as_mut() {
            wc.readings.push(WriteCacheReading {
                source: "sysfs queue/write_cache (kernel view)".into(),
                supported: None,
                enabled: Some(enabled),
            });
            if wc.enabled.is_some() && wc.enabled != Some(enabled) {
                wc.disagreement = true;
            }
        }
    }
}

/// The time the inventory is stamped with; a capture keeps it, a replay
/// gives the captured one.
fn generated_at(roots: &Roots) -> String {
    let now = || humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    match &roots.source {
        capture::Source::Host => now(),
        capture::Source::Capturing(c) | capture::Source::Replaying(c) => c.stamp(now),
    }
}

fn mark_boot_medium(disks: &mut [Disk], ctx: &RoleContext) {
    for disk in disks.iter_mut() {
        let mut reasons = ctx.boot.get(&disk.name).cloned().unwrap_or_default();
        for p in &disk.partitions {
            if let (Some(want), Some(have)) = (&ctx.loader_part_uuid, &p.part_uuid) {
                if want == have {
                    reasons.push(format!(
                        "{} is the partition the EFI loader booted from",
                        p.name
                    ));
                }
            }
            if p.label.as_deref() == Some("STORCERT") {
                reasons.push(format!(
                    "{} is the storcert results partition (label STORCERT)",
                    p.name
                ));
            }
        }
        if !reasons.is_empty() {
            disk.boot_medium = true;
            disk.role_reasons.extend(reasons);
        }
    }
}

#[cfg(test)]
mod role_tests {
    use super::*;

    #[test]
    fn a_device_mounted_many_times_over_many_disks_gives_each_disk_one_reason() {
        // dm-0 over eight disks, mounted on / a thousand times and on
        // /mnt once (a capture can say anything).
        let tmp = tempfile::tempdir().unwrap();
        let roots = Roots::under(tmp.path());
        std::fs::create_dir_all(roots.proc.join("self")).unwrap();
        let mut mountinfo = String::new();
        for n in 0..1000 {
            mountinfo.push_str(&format!("{n} 1 253:0 / / rw - ext4 /dev/dm-0 rw\n"));
        }
        mountinfo.push_str("2000 1 253:0 / /mnt rw - ext4 /dev/dm-0 rw\n");
        std::fs::write(roots.proc.join("self/mountinfo"), mountinfo).unwrap();
        std::fs::create_dir_all(roots.sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtual/block/dm-0",
            roots.sys.join("dev/block/253:0"),
        )
        .unwrap();
        let slaves = roots.sys.join("class/block/dm-0/slaves");
        std::fs::create_dir_all(&slaves).unwrap();
        for d in 0..8 {
            std::fs::write(slaves.join(format!("sd{}", (b'a' + d) as char)), b"").unwrap();
        }
        let ctx = RoleContext::read(&roots);
        assert_eq!(ctx.system.len(), 8, "{:?}", ctx.system);
        for reasons in ctx.system.values() {
            assert_eq!(reasons, &["dm-0 is mounted on /"]);
        }
        // And however many different reasons, a disk keeps the first few.
        let mut reasons = Vec::new();
        for n in 0..100 {
            push_reason(&mut reasons, &format!("reason {n}"));
        }
        assert_eq!(reasons.len(), 16);
    }
}
