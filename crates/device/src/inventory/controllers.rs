//! PCI storage controllers (class 01xx) and network controllers (02xx):
//! identity, driver, firmware, which SCSI hosts and disks belong to each,
//! and, for a device no driver is bound to, the module that would drive
//! it and whether this system carries it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::model::Controller;
use super::sysfs::{list_dir, opt_attr};
use super::{capture, Roots};
use storcert_util::text::printable;

/// A controller found on the PCI bus, with its resolved sysfs path.
pub struct FoundController {
    pub controller: Controller,
    pub device_path: PathBuf,
}

pub fn class_name(class: u32) -> &'static str {
    match (class >> 8) & 0xffff {
        0x0200 => "Ethernet controller",
        0x0207 => "InfiniBand controller",
        c if c >> 8 == 0x02 => "Network controller",
        0x0100 => "SCSI storage controller",
        0x0101 => "IDE interface",
        0x0102 => "Floppy disk controller",
        0x0104 => "RAID bus controller",
        0x0105 => "ATA controller",
        0x0106 => "SATA controller",
        0x0107 => "Serial Attached SCSI controller",
        0x0108 => "Non-Volatile memory controller",
        0x0109 => "Universal Flash Storage controller",
        _ => "Mass storage controller",
    }
}

/// Names of common storage controllers, for images that carry no pci.ids.
fn builtin_name(vendor: u16, device: u16) -> (Option<&'static str>, Option<&'static str>) {
    let vendor_name = match vendor {
        0x1000 => Some("Broadcom / LSI"),
        0x1028 => Some("Dell"),
        0x103c => Some("Hewlett-Packard Company"),
        0x1af4 => Some("Red Hat, Inc."),
        0x1b36 => Some("Red Hat, Inc."),
        0x8086 => Some("Intel Corporation"),
        0x144d => Some("Samsung Electronics Co Ltd"),
        0x9005 => Some("Adaptec"),
        0x1022 => Some("Advanced Micro Devices, Inc. [AMD]"),
        0x15b7 => Some("Sandisk Corp"),
        0x1c5c => Some("SK hynix"),
        0x1344 => Some("Micron Technology Inc"),
        _ => None,
    };
    let device_name = match (vendor, device) {
        (0x1000, 0x0079) => Some("MegaRAID SAS 2108 [Liberator]"),
        (0x1000, 0x005b) => Some("MegaRAID SAS 2208 [Thunderbolt]"),
        (0x1000, 0x005d) => Some("MegaRAID SAS-3 3108 [Invader]"),
        (0x1000, 0x005f) => Some("MegaRAID SAS-3 3008 [Fury]"),
        (0x1000, 0x0014) => Some("MegaRAID Tri-Mode SAS3516"),
        (0x1000, 0x0016) => Some("MegaRAID Tri-Mode SAS3508"),
        (0x1000, 0x10e2) => Some("MegaRAID 12GSAS/PCIe Secure SAS39xx"),
        (0x1000, 0x0060) => Some("MegaRAID SAS 1078"),
        (0x1000, 0x0072) => Some("SAS2008 PCI-Express Fusion-MPT SAS-2 [Falcon]"),
        (0x1000, 0x0087) => Some("SAS2308 PCI-Express Fusion-MPT SAS-2"),
        (0x1000, 0x0097) => Some("SAS3008 PCI-Express Fusion-MPT SAS-3"),
        (0x1000, 0x00af) => Some("SAS3408 Fusion-MPT Tri-Mode I/O Controller Chip (IOC)"),
        (0x1af4, 0x1001) | (0x1af4, 0x1042) => Some("Virtio block device"),
        (0x1af4, 0x1004) | (0x1af4, 0x1048) => Some("Virtio SCSI"),
        (0x1b36, 0x0010) => Some("QEMU NVM Express Controller"),
        (0x8086, 0x2922) => Some("82801IR/IO/IH (ICH9R/DO/DH) 6 port SATA Controller [AHCI mode]"),
        (0x8086, 0x2829) => Some("82801HM/HEM (ICH8M/ICH8M-E) SATA Controller [AHCI mode]"),
        (0x103c, 0x323a) => Some("Smart Array G6 controllers"),
        (0x9005, 0x028f) => Some("Smart Storage PQI 12G SAS/PCIe 3"),
        _ => None,
    };
    (vendor_name, device_name)
}

/// The image's hardware table (image/hardware.tsv): every device family
/// the image is built to drive, named, for systems without pci.ids.
const HARDWARE_TABLE: &str = include_str!("../../../../image/hardware.tsv");

/// A device's name from the hardware table: the row of its subsystem if
/// there is one, else its ID's row that names no subsystem.
fn hardware_table_name(vendor: u16, device: u16, subsystem: (u16, u16)) -> Option<String> {
    let id = format!("{vendor:04x}:{device:04x}");
    let sub = format!("{:04x}:{:04x}", subsystem.0, subsystem.1);
    let rows: Vec<Vec<&str>> = HARDWARE_TABLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f.len() == 6 && f[0] == id)
        .collect();
    rows.iter()
        .find(|f| f[1] == sub)
        .or_else(|| rows.iter().find(|f| f[1] == "-"))
        .map(|f| f[4].to_string())
}

/// The vendor and device names of pci.ids, read once per scan (a lookup
/// per controller would scan the whole file each time).
#[derive(Debug, Default)]
struct PciIds {
    vendors: HashMap<u16, String>,
    devices: HashMap<(u16, u16), String>,
}

impl PciIds {
    fn parse(text: &str) -> PciIds {
        let mut ids = PciIds::default();
        let mut vendor: Option<u16> = None;
        for line in text.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            // The device classes follow the vendors: nothing after is ours.
            if line.starts_with("C ") {
                break;
            }
            let id_name = |l: &str| -> Option<(u16, String)> {
                let id = u16::from_str_radix(l.get(..4)?, 16).ok()?;
                (l.as_bytes().get(4) == Some(&b' ')).then(|| (id, l[4..].trim().to_string()))
            };
            if let Some(l) = line.strip_prefix('\t') {
                if l.starts_with('\t') {
                    continue;
                }
                if let (Some(v), Some((d, name))) = (vendor, id_name(l)) {
                    ids.devices.entry((v, d)).or_insert(name);
                }
            } else {
                vendor = id_name(line).map(|(v, name)| {
                    ids.vendors.entry(v).or_insert(name);
                    v
                });
            }
        }
        ids
    }

    fn name(&self, vendor: u16, device: u16) -> (Option<String>, Option<String>) {
        (
            self.vendors.get(&vendor).cloned(),
            self.devices.get(&(vendor, device)).cloned(),
        )
    }
}

fn hex_attr(roots: &Roots, dir: &Path, name: &str) -> Option<u32> {
    let text = opt_attr(roots, &dir.join(name))?;
    u32::from_str_radix(text.trim_start_matches("0x"), 16).ok()
}

/// Storage controllers (PCI class 01xx).
pub fn find(roots: &Roots) -> Vec<FoundController> {
    find_class(roots, 0x01)
}

/// Network controllers (PCI class 02xx).
pub fn find_network(roots: &Roots) -> Vec<Controller> {
    find_class(roots, 0x02)
        .into_iter()
        .map(|f| f.controller)
        .collect()
}

fn find_class(roots: &Roots, base_class: u32) -> Vec<FoundController> {
    let bus = roots.sys.join("bus/pci/devices");
    let pci_ids = [
        "/usr/share/misc/pci.ids",
        "/usr/share/hwdata/pci.ids",
        "/usr/share/pci.ids",
    ]
    .iter()
    .find_map(|p| roots.read(Path::new(p)).ok())
    // pci.ids is 1.4 MB; a larger one is not read.
    .filter(|t| t.len() < 8 << 20)
    .map(|t| PciIds::parse(&String::from_utf8_lossy(&t)));
    let mut modules = ModuleLookup::default();
    let mut out = Vec::new();
    for addr in list_dir(roots, &bus) {
        let dir = bus.join(&addr);
        let Some(class) = hex_attr(roots, &dir, "class") else {
            continue;
        };
        // A virtual function (SR-IOV) is its physical function's: one
        // with no driver is the usual state, not a device left undriven.
        if class >> 16 != base_class || roots.exists(&dir.join("physfn")) {
            continue;
        }
        // Each costs a replay tens of questions, and a walk of every SCSI
        // host: read no more than a real machine has.
        if out.len() == capture::MAX_CONTROLLERS {
            if let Some(capture) = roots.replaying() {
                let kind = if base_class == 0x01 {
                    "storage"
                } else {
                    "network"
                };
                capture.cut(format!(
                    "capture: {} holds more than {} {kind} controllers; only the first {} were read",
                    printable(&bus.display().to_string(), 200),
                    capture::MAX_CONTROLLERS,
                    capture::MAX_CONTROLLERS
                ));
                break;
            }
        }
        let vendor = hex_attr(roots, &dir, "vendor").unwrap_or(0) as u16;
        let device = hex_attr(roots, &dir, "device").unwrap_or(0) as u16;
        let (mut vendor_name, mut device_name) = pci_ids
            .as_ref()
            .map(|ids| ids.name(vendor, device))
            .unwrap_or((None, None));
        let (bv, bd) = builtin_name(vendor, device);
        vendor_name = vendor_name.or(bv.map(String::from));
        let subsystem = (
            hex_attr(roots, &dir, "subsystem_vendor").unwrap_or(0) as u16,
            hex_attr(roots, &dir, "subsystem_device").unwrap_or(0) as u16,
        );
        device_name = device_name
            .or(bd.map(String::from))
            .or_else(|| hardware_table_name(vendor, device, subsystem));
        let driver = roots
            .read_link(&dir.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let driver_version = driver.as_ref().and_then(|d| {
            opt_attr(
                roots,
                &roots
                    .sys
                    .join("module")
                    .join(d.replace('-', "_"))
                    .join("version"),
            )
        });
        let device_path = roots.canonicalize(&dir).unwrap_or(dir.clone());
        let mut controller = Controller {
            pci_address: addr.clone(),
            class_code: format!("0x{class:06x}"),
            class_name: class_name(class).into(),
            vendor_id: format!("0x{vendor:04x}"),
            device_id: format!("0x{device:04x}"),
            subsystem_vendor_id: hex_attr(roots, &dir, "subsystem_vendor")
                .map(|v| format!("0x{v:04x}")),
            subsystem_device_id: hex_attr(roots, &dir, "subsystem_device")
                .map(|v| format!("0x{v:04x}")),
            vendor_name,
            device_name,
            driver,
            driver_version,
            firmware: None,
            firmware_source: None,
            scsi_hosts: Vec::new(),
            disks: Vec::new(),
            raid: None,
            module: None,
            errors: Vec::new(),
        };
        if controller.driver.is_none() {
            let modalias = opt_attr(roots, &dir.join("modalias"));
            controller.module = modalias.and_then(|m| modules.module_for(roots, &m));
        }
        controller.scsi_hosts = scsi_hosts_under(roots, &device_path);
        read_firmware(roots, &mut controller, &device_path);
        out.push(FoundController {
            controller,
            device_path,
        });
    }
    out
}

/// Where this system's module aliases are, beside the sysfs it reads
/// (`/sys` → `/lib/modules/RELEASE/modules.alias`); the image also
/// carries its kernel's whole list, for the modules it leaves out.
const KERNEL_ALIASES: &str = "usr/lib/storcert/kernel-modules.alias";

/// The module lists of one scan, each read once, and the modules found,
/// by modalias.
#[derive(Default)]
struct ModuleLookup {
    lists: HashMap<PathBuf, Option<String>>,
    found: HashMap<String, Option<storcert_results::inventory::ModuleFor>>,
}

/// The most undriven devices one scan looks a module up for: a server
/// has a handful; a capture listing thousands costs no more than this.
const MAX_MODULE_LOOKUPS: usize = 64;

impl ModuleLookup {
    /// The module whose alias matches `modalias`: one this system carries,
    /// else one its kernel has (the image's build keeps the kernel's list).
    fn module_for(
        &mut self,
        roots: &Roots,
        modalias: &str,
    ) -> Option<storcert_results::inventory::ModuleFor> {
        if let Some(m) = self.found.get(modalias) {
            return m.clone();
        }
        // A modalias is some 60 characters; past the bound (a capture is
        // anyone's) it is not looked up.
        if modalias.len() > MAX_MODALIAS || self.found.len() >= MAX_MODULE_LOOKUPS {
            return None;
        }
        let m = self.look_up(roots, modalias);
        self.found.insert(modalias.to_string(), m.clone());
        m
    }

    fn look_up(
        &mut self,
        roots: &Roots,
        modalias: &str,
    ) -> Option<storcert_results::inventory::ModuleFor> {
        let root = roots.sys.parent().unwrap_or(Path::new("/"));
        let release = opt_attr(roots, &roots.proc.join("sys/kernel/osrelease"))?;
        let installed = root
            .join("lib/modules")
            .join(&release)
            .join("modules.alias");
        // A driver built into the kernel (a single-file kernel) is in the
        // image too.
        let builtin = installed.with_file_name("modules.builtin.alias");
        for (path, in_image) in [
            (installed, true),
            (builtin, true),
            (root.join(KERNEL_ALIASES), false),
        ] {
            let list = self.lists.entry(path.clone()).or_insert_with(|| {
                // A module list is one or two MB.
                let text = roots.read(&path).ok().filter(|t| t.len() < 8 << 20)?;
                Some(String::from_utf8_lossy(&text).into_owned())
            });
            if let Some(name) = list.as_deref().and_then(|l| alias_match(l, modalias)) {
                return Some(storcert_results::inventory::ModuleFor { name, in_image });
            }
        }
        None
    }
}

/// The longest modalias, or alias pattern, matched.
const MAX_MODALIAS: usize = 120;

/// The module of the first `alias PATTERN MODULE` line whose pattern
/// matches `modalias` (modules.alias's globs: `*`, `?`; case does not
/// matter, both sides write hex in capitals). Each line costs its own
/// length (`glob::matches_short`), so a list costs its size.
pub fn alias_match(aliases: &str, modalias: &str) -> Option<String> {
    aliases.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()? == "alias").then_some(())?;
        let (pattern, module) = (f.next()?, f.next()?);
        storcert_util::glob::matches_short(pattern, modalias)
            .unwrap_or(false)
            .then(|| module.to_string())
    })
}

/// SCSI hosts whose sysfs path lies under the controller's.
fn scsi_hosts_under(roots: &Roots, device_path: &Path) -> Vec<u32> {
    let class = roots.sys.join("class/scsi_host");
    let mut hosts: Vec<u32> = list_dir(roots, &class)
        .into_iter()
        .filter(|h| {
            roots
                .canonicalize(&class.join(h))
                .map(|p| p.starts_with(device_path))
                .unwrap_or(false)
        })
        .filter_map(|h| h.strip_prefix("host").and_then(|n| n.parse().ok()))
        .collect();
    hosts.sort();
    hosts
}

/// Firmware as the driver exposes it: the SCSI host attributes of HBA
/// drivers (mpt3sas version_fw, hpsa firmware_revision, ...) or the NVMe
/// controller's firmware_rev. MegaRAID's comes from MFI instead.
fn read_firmware(roots: &Roots, c: &mut Controller, device_path: &Path) {
    const HOST_ATTRS: [&str; 4] = [
        "version_fw",
        "firmware_revision",
        "firmware_version",
        "fw_version",
    ];
    for host in &c.scsi_hosts {
        let dir = roots.sys.join(format!("class/scsi_host/host{host}"));
        for attr in HOST_ATTRS {
            if let Some(v) = opt_attr(roots, &dir.join(attr)) {
                c.firmware = Some(v);
                c.firmware_source = Some(format!("sysfs scsi_host/host{host}/{attr}"));
                return;
            }
        }
    }
    let nvme_dir = device_path.join("nvme");
    for ctrl in list_dir(roots, &nvme_dir) {
        if let Some(v) = opt_attr(roots, &nvme_dir.join(&ctrl).join("firmware_rev")) {
            c.firmware = Some(v);
            c.firmware_source = Some(format!("sysfs nvme/{ctrl}/firmware_rev"));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lookups_are_bounded_per_scan() {
        let tmp = tempfile::tempdir().unwrap();
        let roots = Roots::under(tmp.path());
        std::fs::create_dir_all(roots.proc.join("sys/kernel")).unwrap();
        std::fs::write(roots.proc.join("sys/kernel/osrelease"), "6.1.0\n").unwrap();
        let list = tmp.path().join("lib/modules/6.1.0");
        std::fs::create_dir_all(&list).unwrap();
        std::fs::write(list.join("modules.alias"), "alias pci:v* anything\n").unwrap();
        let mut lookup = ModuleLookup::default();
        let found = (0..200)
            .filter(|n| {
                lookup
                    .module_for(&roots, &format!("pci:v{n:08X}"))
                    .is_some()
            })
            .count();
        assert_eq!(found, MAX_MODULE_LOOKUPS);
        // The same modalias again is answered from the scan's memory.
        assert!(lookup.module_for(&roots, "pci:v00000000").is_some());
        assert!(lookup
            .module_for(&roots, &"x".repeat(MAX_MODALIAS + 1))
            .is_none());
    }

    #[test]
    fn an_alias_pattern_past_the_bound_is_not_matched() {
        // Would match anything; past the bound it is not tried.
        let long = format!(
            "alias pci:v{} big\nalias pci:v00001000d* megaraid_sas\n",
            "*".repeat(300)
        );
        assert_eq!(
            alias_match(
                &long,
                "pci:v00001000d00000079sv00001000sd00009261bc01sc04i00"
            )
            .as_deref(),
            Some("megaraid_sas")
        );
    }

    #[test]
    fn looks_up_pci_ids() {
        let text = "# comment\n1000  Broadcom / LSI\n\t0079  MegaRAID SAS 2108 [Liberator]\n\t\t1028 1f15  PERC H710P\n\
                    1001  Kolter\n\t0079  Not this one\nC 00  Unclassified device\n";
        let ids = PciIds::parse(text);
        let (v, d) = ids.name(0x1000, 0x0079);
        assert_eq!(v.as_deref(), Some("Broadcom / LSI"));
        assert_eq!(d.as_deref(), Some("MegaRAID SAS 2108 [Liberator]"));
        let (v, d) = ids.name(0x1000, 0x1234);
        assert_eq!(v.as_deref(), Some("Broadcom / LSI"));
        assert_eq!(d, None);
        assert_eq!(ids.name(0xabcd, 1), (None, None));
        assert_eq!(ids.name(0x1001, 0x0079).1.as_deref(), Some("Not this one"));
    }

    #[test]
    fn a_device_s_module_is_found_by_its_alias() {
        let aliases = "# comment\nalias pci:v00001000d000000A5sv*sd*bc*sc*i* mpi3mr\n\
                       alias pci:v*d*sv*sd*bc01sc08i02* nvme\nalias pci:v00008086d*sv*sd*bc*sc*i* x\n";
        let dev = "pci:v00001000d000000A5sv00001028sd00002200bc01sc04i00";
        assert_eq!(alias_match(aliases, dev).as_deref(), Some("mpi3mr"));
        let nvme = "pci:v0000144Dd0000A824sv0000144Dsd0000A801bc01sc08i02";
        assert_eq!(alias_match(aliases, nvme).as_deref(), Some("nvme"));
        assert_eq!(
            alias_match(aliases, "pci:v00001234d00005678sv0sd0bc01sc00i00"),
            None
        );
    }

    #[test]
    fn names_classes() {
        assert_eq!(class_name(0x010400), "RAID bus controller");
        assert_eq!(class_name(0x010802), "Non-Volatile memory controller");
        assert_eq!(class_name(0x010601), "SATA controller");
        assert_eq!(class_name(0x020000), "Ethernet controller");
        assert_eq!(class_name(0x028000), "Network controller");
        // Names from the image's hardware table: by subsystem where the
        // row gives one.
        assert_eq!(
            hardware_table_name(0x1000, 0x00a5, (0x1028, 0x2200)).as_deref(),
            Some("PERC H965i/H960, MegaRAID 96xx (SAS4116)")
        );
        assert_eq!(
            hardware_table_name(0x9005, 0x028f, (0x103c, 0x1100)).as_deref(),
            Some("Smart Array (Gen11)")
        );
        assert_eq!(hardware_table_name(0x9005, 0x028f, (0x1234, 0x1)), None);
    }
}
