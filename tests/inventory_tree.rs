//! The inventory against a recorded sysfs tree (tests/fixtures/qemu-lab):
//! topology, transports, controllers, partitions, mounts and roles, and how
//! a broken tree is reported (a device that vanishes, a truncated
//! attribute, a device that cannot be opened, an unknown --device).

mod common;

use std::path::{Path, PathBuf};

use common::copy_tree;

use storcert::inventory::{scan, Disk, Inventory, Roots, ScanOptions, Transport};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab")
}

fn roots(base: &Path) -> Roots {
    Roots::under(base)
}

fn opts(no_probe: bool, devices: &[&str]) -> ScanOptions {
    ScanOptions {
        all: false,
        devices: devices.iter().map(|s| s.to_string()).collect(),
        no_probe,
    }
}

fn disk<'a>(inv: &'a Inventory, name: &str) -> &'a Disk {
    inv.disks
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn topology_from_the_recorded_tree() {
    let inv = scan(&roots(&fixture()), &opts(true, &[]));
    assert!(inv.errors.is_empty(), "{:?}", inv.errors);
    let names: Vec<&str> = inv.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["nvme0n1", "sda", "sdb", "sdc", "vda"]);
    let transports: Vec<Transport> = inv.disks.iter().map(|d| d.transport).collect();
    assert_eq!(
        transports,
        vec![
            Transport::Nvme,
            Transport::Sata,
            Transport::Raid,
            Transport::Raid,
            Transport::Virtio
        ]
    );
    assert_eq!(inv.host.kernel.as_deref(), Some("6.1.0-57-amd64"));
    assert!(inv.host.udev_database);

    let nvme = disk(&inv, "nvme0n1");
    assert_eq!(nvme.capacity_bytes, 2048 * 1024 * 1024);
    assert_eq!(nvme.major_minor, "259:0");
    assert_eq!(nvme.model.as_deref(), Some("QEMU NVMe Ctrl"));
    assert_eq!(nvme.serial.as_deref(), Some("LABNVME0001"));
    assert_eq!(
        nvme.firmware_source.as_deref(),
        Some("sysfs device/firmware_rev")
    );

    // Without probing, the SATA firmware comes from sysfs, which says it
    // is truncated; the write cache from the kernel's view.
    let sata = disk(&inv, "sda");
    assert_eq!(sata.firmware.as_deref(), Some("FW01"));
    assert!(sata
        .firmware_source
        .as_deref()
        .unwrap()
        .contains("truncates"));
    assert_eq!(sata.scsi_address.as_deref(), Some("0:0:0:0"));
    let wc = sata.write_cache.as_ref().unwrap();
    assert!(wc.from_sysfs);
    assert_eq!(wc.enabled, Some(false));
    assert_eq!(
        sata.by_id,
        vec!["/dev/disk/by-id/ata-STORCERT_LAB_SATA_LABSATA0001"]
    );

    let vd1 = disk(&inv, "sdc");
    assert_eq!(vd1.scsi_address.as_deref(), Some("6:2:1:0"));
    assert_eq!(vd1.capacity_bytes, 1536 * 1024 * 1024);

    // vda: one ext4 partition mounted on /mnt, labelled STORCERT in udev:
    // the boot medium, not the running system (root is the initramfs).
    let vda = disk(&inv, "vda");
    assert_eq!(vda.partitions.len(), 1);
    let p = &vda.partitions[0];
    assert_eq!(p.name, "vda1");
    assert_eq!(p.number, Some(1));
    assert_eq!(p.size_bytes, 100 * 1024 * 1024);
    assert_eq!(p.mountpoints, vec!["/mnt"]);
    assert_eq!(p.fs_type.as_deref(), Some("ext4"));
    assert_eq!(vda.fs_type.as_deref(), Some("dos"));
    assert!(vda.boot_medium);
    assert!(!vda.system_disk);
    assert!(vda
        .role_reasons
        .iter()
        .any(|r| r.contains("label STORCERT")));
    assert_eq!(vda.by_id, vec!["/dev/disk/by-id/virtio-LABVIRTIO0001"]);

    // Controllers and what sits behind each.
    let ctrl = |addr: &str| {
        inv.controllers
            .iter()
            .find(|c| c.pci_address == addr)
            .unwrap()
    };
    assert_eq!(ctrl("0000:00:01.0").disks, vec!["nvme0n1"]);
    assert_eq!(ctrl("0000:00:01.0").firmware.as_deref(), Some("7.2.22"));
    assert_eq!(ctrl("0000:00:02.0").disks, vec!["sda"]);
    assert_eq!(ctrl("0000:00:02.0").driver.as_deref(), Some("ahci"));
    let mega = ctrl("0000:00:03.0");
    assert_eq!(mega.disks, vec!["sdb", "sdc"]);
    assert_eq!(mega.scsi_hosts, vec![6]);
    assert_eq!(mega.class_name, "RAID bus controller");
    assert_eq!(mega.driver_version.as_deref(), Some("07.719.03.00-rc1"));
    assert_eq!(ctrl("0000:00:04.0").disks, vec!["vda"]);
    assert!(inv.disks.iter().all(|d| d.errors.is_empty()));
}

#[test]
fn root_on_a_partition_marks_the_system_disk() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    let mountinfo = tmp.path().join("proc/self/mountinfo");
    let text = std::fs::read_to_string(&mountinfo).unwrap();
    std::fs::write(&mountinfo, text.replace(" / /mnt ", " / / ")).unwrap();
    let inv = scan(&roots(tmp.path()), &opts(true, &[]));
    let vda = disk(&inv, "vda");
    assert!(vda.system_disk);
    assert!(vda.role_reasons.iter().any(|r| r == "vda1 is mounted on /"));
    assert!(!disk(&inv, "sda").system_disk);
}

#[test]
fn a_vanished_device_and_a_truncated_attribute_are_reported_on_their_entries() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    let sys = tmp.path().join("sys");
    let sdb = std::fs::canonicalize(sys.join("block/sdb")).unwrap();
    std::fs::remove_file(sdb.join("dev")).unwrap();
    let sdc = std::fs::canonicalize(sys.join("block/sdc")).unwrap();
    std::fs::write(sdc.join("size"), "31457").unwrap();
    std::fs::write(sdc.join("queue/logical_block_size"), "5").unwrap();
    std::fs::write(sdc.join("queue/physical_block_size"), "40\u{0}garbage").unwrap();

    let inv = scan(&roots(tmp.path()), &opts(false, &[]));
    let sdb = disk(&inv, "sdb");
    assert!(
        sdb.errors.iter().any(|e| e.contains("may have gone away")),
        "{:?}",
        sdb.errors
    );
    let sdc = disk(&inv, "sdc");
    assert_eq!(
        sdc.capacity_bytes,
        31457 * 512,
        "a short but valid number is taken as is"
    );
    assert_eq!(sdc.logical_sector_size, Some(5));
    assert_eq!(sdc.physical_sector_size, None);
    assert!(
        sdc.errors
            .iter()
            .any(|e| e.contains("physical_block_size: cannot parse")),
        "{:?}",
        sdc.errors
    );
    // Probing the fixture's devices fails to open them: recorded per disk,
    // and the scan still lists every disk.
    assert_eq!(inv.disks.len(), 5);
    assert!(disk(&inv, "nvme0n1")
        .errors
        .iter()
        .any(|e| e.starts_with("open ")));
}

#[test]
fn named_devices_and_unknown_ones() {
    let inv = scan(
        &roots(&fixture()),
        &opts(true, &["sdc", "nosuchdisk", "vda1"]),
    );
    let names: Vec<&str> = inv.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["sdc"]);
    assert_eq!(
        inv.errors,
        vec![
            "--device nosuchdisk: no such block device".to_string(),
            "--device vda1: vda1 is a partition; inventory lists whole disks (its disk lists it)"
                .to_string()
        ]
    );
}

#[test]
fn json_schema_round_trips() {
    let inv = scan(&roots(&fixture()), &opts(true, &[]));
    let text = serde_json::to_string(&inv).unwrap();
    let back: Inventory = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema_version"], storcert::inventory::SCHEMA_VERSION);
    assert_eq!(value["disks"][0]["transport"], "nvme");
}

#[test]
fn a_device_mapper_volume_on_a_partition_holds_the_system_disk() {
    // Stack dm-0 on sdc and mount it on /: sdc holds the running system
    // through its holder.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    let sys = tmp.path().join("sys");
    let dm = sys.join("devices/virtual/block/dm-0");
    std::fs::create_dir_all(dm.join("slaves")).unwrap();
    std::fs::write(dm.join("dev"), "253:0\n").unwrap();
    std::fs::write(dm.join("size"), "2048\n").unwrap();
    std::os::unix::fs::symlink(
        "../../../../pci0000:00/0000:00:03.0/host6/target6:2:1/6:2:1:0/block/sdc",
        dm.join("slaves/sdc"),
    )
    .unwrap();
    let sdc = std::fs::canonicalize(sys.join("block/sdc")).unwrap();
    std::fs::create_dir_all(sdc.join("holders")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../../../../virtual/block/dm-0",
        sdc.join("holders/dm-0"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/block/dm-0",
        sys.join("class/block/dm-0"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../../devices/virtual/block/dm-0", sys.join("block/dm-0")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/block/dm-0",
        sys.join("dev/block/253:0"),
    )
    .unwrap();
    let mountinfo = tmp.path().join("proc/self/mountinfo");
    let mut text = std::fs::read_to_string(&mountinfo).unwrap();
    text.push_str("40 1 253:0 / / rw,relatime - ext4 /dev/mapper/root rw\n");
    std::fs::write(&mountinfo, text).unwrap();

    let inv = scan(&roots(tmp.path()), &opts(true, &[]));
    let sdc = disk(&inv, "sdc");
    assert_eq!(sdc.holders, vec!["dm-0"]);
    assert!(sdc.system_disk);
    assert_eq!(sdc.role_reasons, vec!["dm-0 is mounted on /"]);
    assert!(!disk(&inv, "sdb").system_disk);
    // dm devices are listed only with --all.
    assert!(inv.disks.iter().all(|d| d.name != "dm-0"));
    let all = scan(
        &roots(tmp.path()),
        &ScanOptions {
            all: true,
            no_probe: true,
            ..Default::default()
        },
    );
    assert_eq!(disk(&all, "dm-0").transport, Transport::Dm);
}

/// A copy of the lab's tree in `dir` whose MegaRAID controller
/// (0000:00:03.0) has no driver bound: the tree, and the device's folder.
fn lab_with_its_raid_controller_unbound(dir: &Path) -> (PathBuf, PathBuf) {
    let base = dir.join("lab");
    copy_tree(&fixture(), &base);
    let dev = base.join("sys/bus/pci/devices/0000:00:03.0");
    std::fs::remove_file(dev.join("driver")).unwrap();
    (base, dev)
}

/// The lab's MegaRAID controller in an inventory of its tree.
fn raid_controller(inv: &Inventory) -> &storcert::inventory::Controller {
    inv.controllers
        .iter()
        .find(|c| c.pci_address == "0000:00:03.0")
        .expect("the lab's controller at 0000:00:03.0")
}

/// A controller no driver is bound to: listed, with the module its
/// modalias needs and whether this system carries it (the installed
/// modules.alias, else the kernel's whole list the image keeps), and a
/// hardware-reach finding that says its drives cannot be seen.
#[test]
fn an_undriven_controller_names_its_module_and_is_a_finding() {
    use storcert::results::policy::Severity;
    let t = tempfile::tempdir().unwrap();
    let (base, dev) = lab_with_its_raid_controller_unbound(t.path());
    let modalias = "pci:v00001000d00000079sv00001000sd00009261bc01sc04i00";
    std::fs::write(dev.join("modalias"), format!("{modalias}\n")).unwrap();
    let installed = base.join("lib/modules/6.1.0-57-amd64/modules.alias");
    let kernel = base.join("usr/lib/storcert/kernel-modules.alias");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::create_dir_all(kernel.parent().unwrap()).unwrap();
    let megaraid = "alias pci:v00001000d00000079sv*sd*bc*sc*i* megaraid_sas\n";
    let nvme = "alias pci:v*d*sv*sd*bc01sc08i02* nvme\n";
    let module = |inv: &Inventory| {
        let c = raid_controller(inv);
        assert_eq!(c.driver, None);
        c.module.clone()
    };
    // No module anywhere.
    let inv = scan(&roots(&base), &opts(true, &[]));
    assert_eq!(module(&inv), None);
    let f = storcert::inventory::reach::findings(&inv, Some(""), Severity::Fail);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].actual.contains("the drives behind 1000:0079")
            && f[0]
                .actual
                .contains("cannot be seen; no module of this kernel drives it"),
        "{}",
        f[0].actual
    );
    assert_eq!(f[0].severity, Severity::Fail);
    // The kernel has it, the image does not.
    std::fs::write(&installed, nvme).unwrap();
    std::fs::write(&kernel, format!("{nvme}{megaraid}")).unwrap();
    let inv = scan(&roots(&base), &opts(true, &[]));
    let m = module(&inv).unwrap();
    assert_eq!((m.name.as_str(), m.in_image), ("megaraid_sas", false));
    let f = storcert::inventory::reach::findings(&inv, Some(""), Severity::Warn);
    assert!(
        f[0].actual
            .ends_with("the kernel's module megaraid_sas is not in this image"),
        "{}",
        f[0].actual
    );
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(f[0].fix.as_deref().unwrap().contains("image/hardware.tsv"));
    // The image has it: it did not bind.
    std::fs::write(&installed, format!("{nvme}{megaraid}")).unwrap();
    let m = module(&scan(&roots(&base), &opts(true, &[]))).unwrap();
    assert_eq!((m.name.as_str(), m.in_image), ("megaraid_sas", true));
    // A firmware load the kernel log says failed is one too.
    let log = "bnx2x 0000:3b:00.0: Direct firmware load for bnx2x/bnx2x-e2-7.13.21.0.fw failed with error -2\n";
    let f = storcert::inventory::reach::findings(&inv, Some(log), Severity::Warn);
    assert!(f.iter().any(|f| f.check == "firmware"
        && f.actual.contains("bnx2x-e2")
        && f.severity == Severity::Warn));
    // Unread, it is said so.
    let f = storcert::inventory::reach::findings(&inv, None, Severity::Fail);
    assert!(f
        .iter()
        .any(|f| f.check == "firmware" && f.actual.starts_with("not checked")));
    // The recorded name stays where the device has one.
    assert!(
        f[0].device
            .starts_with("1000:0079 (MegaRAID SAS 2108 [Liberator])"),
        "{}",
        f[0].device
    );
}

/// A Fusion-MPT HBA (the lab's controller, bound to mpt3sas here): its
/// board, firmware, BIOS and NVDATA from the SCSI host attributes the
/// driver publishes, in the neutral model, with nothing sent to it (read
/// even with --no-probe).
#[test]
fn an_mpt3sas_hba_is_read_from_its_host_attributes() {
    let t = tempfile::tempdir().unwrap();
    let (base, dev) = lab_with_its_raid_controller_unbound(t.path());
    std::os::unix::fs::symlink("../../../bus/pci/drivers/mpt3sas", dev.join("driver")).unwrap();
    let host = base.join("sys/class/scsi_host/host6");
    for (file, value) in [
        ("version_fw", "16.00.12.00"),
        ("version_bios", "09.47.00.00"),
        ("version_nvdata_persistent", "0e.01.00.07"),
        ("version_mpi", "205.00"),
        ("board_name", "HBA355i Front"),
        ("host_sas_address", "0x500605b00abcdef0"),
        ("ioc_reset_count", "0"),
    ] {
        std::fs::write(host.join(file), format!("{value}\n")).unwrap();
    }
    let inv = scan(&roots(&base), &opts(true, &[]));
    let c = raid_controller(&inv);
    assert_eq!(c.driver.as_deref(), Some("mpt3sas"));
    let r = c.raid.as_ref().expect("read by the mpt3sas family");
    assert_eq!(r.family, "mpt3sas");
    assert_eq!(r.product, "HBA355i Front");
    assert_eq!(r.firmware, "16.00.12.00");
    assert_eq!(r.scsi_host, 6);
    let parts: Vec<(&str, &str)> = r
        .firmware_components
        .iter()
        .map(|f| (f.name.as_str(), f.version.as_str()))
        .collect();
    assert_eq!(
        parts,
        [
            ("BIOS", "09.47.00.00"),
            ("NVDATA", "0e.01.00.07"),
            ("MPI", "205.00")
        ]
    );
    assert_eq!(r.notes, ["host SAS address 0x500605b00abcdef0"]);
    assert!(r.battery.is_none() && r.virtual_drives.is_empty());
    assert_eq!(c.firmware.as_deref(), Some("16.00.12.00"));
    // Without its attributes (another driver's host), it says so.
    std::fs::remove_file(host.join("version_fw")).unwrap();
    let inv = scan(&roots(&base), &opts(true, &[]));
    let c = raid_controller(&inv);
    assert!(c.raid.is_none());
    assert!(
        c.errors.iter().any(|e| e.contains("no version_fw")),
        "{:?}",
        c.errors
    );
}

/// Adds to the tree at `sys` a dual-port NVMe drive as Linux 6.1's native
/// multipath shows it: a head nvme1n1 under its subsystem, and two hidden
/// per-controller paths nvme1c1n1 (controller nvme1) and nvme1c2n1
/// (nvme2), with no `dev` of their own; `transport` is each controller's.
fn add_dual_port_nvme(sys: &Path, transport: &str) {
    use std::os::unix::fs::symlink;
    let w = |p: PathBuf, text: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let subsys = sys.join("devices/virtual/nvme-subsystem/nvme-subsys1");
    for (attr, v) in [
        ("model", "DUALPORT U.3"),
        ("serial", "DP0001"),
        ("firmware_rev", "1.0"),
    ] {
        w(subsys.join(attr), &format!("{v}\n"));
    }
    let head = subsys.join("nvme1n1");
    w(head.join("dev"), "259:5\n");
    w(head.join("size"), "2097152\n");
    w(head.join("queue/logical_block_size"), "512\n");
    symlink("..", head.join("device")).unwrap();
    symlink(
        "../devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1",
        sys.join("block/nvme1n1"),
    )
    .unwrap();
    for (ctrl, pci) in [(1, "0000:00:05.0"), (2, "0000:00:06.0")] {
        let c = sys.join(format!("devices/pci0000:00/{pci}/nvme/nvme{ctrl}"));
        w(c.join("transport"), &format!("{transport}\n"));
        w(c.join("address"), &format!("{pci}\n"));
        let path = c.join(format!("nvme1c{ctrl}n1"));
        w(path.join("hidden"), "1\n");
        w(path.join("size"), "2097152\n");
        symlink("..", path.join("device")).unwrap();
        symlink(
            format!("../devices/pci0000:00/{pci}/nvme/nvme{ctrl}/nvme1c{ctrl}n1"),
            sys.join(format!("block/nvme1c{ctrl}n1")),
        )
        .unwrap();
    }
}

/// A dual-port drive is one disk, its hidden paths named under it, never
/// disks of their own (found in review: each became a disk, one could not
/// be opened, and every drive of the run was marked untested).
#[test]
fn a_dual_port_nvme_drive_is_one_disk_with_its_paths() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    add_dual_port_nvme(&tmp.path().join("sys"), "pcie");
    let inv = scan(&roots(tmp.path()), &opts(true, &[]));
    let names: Vec<&str> = inv.disks.iter().map(|d| d.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("nvme1c")), "{names:?}");
    let d = disk(&inv, "nvme1n1");
    assert_eq!(d.transport, Transport::Nvme);
    assert_eq!(
        d.paths,
        vec![
            "nvme1c1n1 via nvme1, pcie 0000:00:05.0",
            "nvme1c2n1 via nvme2, pcie 0000:00:06.0"
        ]
    );
    assert!(inv.errors.is_empty(), "{:?}", inv.errors);

    // Over a fabric, the same drive is a remote one.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    add_dual_port_nvme(&tmp.path().join("sys"), "tcp");
    let inv = scan(&roots(tmp.path()), &opts(true, &[]));
    let d = disk(&inv, "nvme1n1");
    assert_eq!(d.transport, Transport::NvmeOf);
    assert!(!d.transport.is_local());
}

/// Adds a SCSI disk `name` at `devpath` (under /sys/devices) with `wwid`.
fn add_scsi_disk(sys: &Path, name: &str, devpath: &str, devnum: &str, wwid: &str) {
    use std::os::unix::fs::symlink;
    let dev = sys.join("devices").join(devpath);
    let block = dev.join("block").join(name);
    std::fs::create_dir_all(&block).unwrap();
    std::fs::write(dev.join("wwid"), format!("{wwid}\n")).unwrap();
    std::fs::write(dev.join("model"), "DUAL SAS\n").unwrap();
    std::fs::write(dev.join("vendor"), "STORCERT\n").unwrap();
    std::fs::write(block.join("dev"), format!("{devnum}\n")).unwrap();
    std::fs::write(block.join("size"), "2097152\n").unwrap();
    symlink("../..", block.join("device")).unwrap();
    symlink(
        format!("../devices/{devpath}/block/{name}"),
        sys.join("block").join(name),
    )
    .unwrap();
}

/// A dual-ported SAS drive seen through two HBA ports is two sdX with one
/// WWN: listed once, its second node a path. FC and iSCSI disks are told
/// by their sysfs paths, and neither is local.
#[test]
fn a_sas_drive_on_two_ports_is_one_drive_and_san_disks_are_remote() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    let sys = tmp.path().join("sys");
    let wwid = "naa.5000c500a1b2c3d4";
    add_scsi_disk(
        &sys,
        "sdd",
        "pci0000:00/0000:00:07.0/host7/port-7:0/end_device-7:0/target7:0:0/7:0:0:0",
        "8:48",
        wwid,
    );
    add_scsi_disk(
        &sys,
        "sde",
        "pci0000:00/0000:00:07.0/host7/port-7:1/end_device-7:1/target7:0:1/7:0:1:0",
        "8:64",
        wwid,
    );
    add_scsi_disk(
        &sys,
        "sdf",
        "pci0000:00/0000:00:08.0/host8/rport-8:0-0/target8:0:0/8:0:0:0",
        "8:80",
        "naa.600a098000aabbcc",
    );
    add_scsi_disk(
        &sys,
        "sdg",
        "platform/host9/session1/target9:0:0/9:0:0:0",
        "8:96",
        "naa.6001405aabbccdd0",
    );
    let inv = scan(&roots(tmp.path()), &opts(true, &[]));
    let names: Vec<&str> = inv.disks.iter().map(|d| d.name.as_str()).collect();
    assert!(
        !names.contains(&"sde"),
        "{names:?} {:?}",
        inv.disks
            .iter()
            .map(|d| (&d.name, d.transport, &d.wwn))
            .collect::<Vec<_>>()
    );
    let sdd = disk(&inv, "sdd");
    assert_eq!(sdd.transport, Transport::Sas);
    assert_eq!(sdd.paths, vec!["sde"]);
    assert!(sdd.transport.is_local());
    let fc = disk(&inv, "sdf");
    assert_eq!(fc.transport, Transport::Fc);
    assert!(!fc.transport.is_local());
    let iscsi = disk(&inv, "sdg");
    assert_eq!(iscsi.transport, Transport::Iscsi);
    assert!(!iscsi.transport.is_local());
}
