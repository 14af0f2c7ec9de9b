//! The policy language against an inventory recorded in the qemu lab
//! (tests/fixtures/qemu-lab/inventory.json): matching, precedence, every
//! rule kind, the findings' words, and the exit status of `check`.

mod common;

use std::path::PathBuf;

use storcert::inventory::Inventory;
use storcert::policy::check::{check, Finding};
use storcert::policy::{Policy, Severity};

fn inventory() -> Inventory {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/inventory.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn findings(policy: &str) -> Vec<Finding> {
    check(&Policy::parse(policy, "test.toml").unwrap(), &inventory()).findings
}

fn one(policy: &str) -> Finding {
    let f = findings(policy);
    assert_eq!(f.len(), 1, "{f:#?}");
    f.into_iter().next().unwrap()
}

#[test]
fn write_cache_rule_names_device_source_and_fix() {
    let f = one("[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = \"on\"\n");
    assert_eq!(f.severity, Severity::Fail);
    assert_eq!(f.device, "sda (STORCERT LAB SATA LABSATA0001)");
    assert_eq!(f.check, "write cache");
    assert_eq!(f.expected, "on");
    assert_eq!(f.actual, "off (ATA IDENTIFY (words 82/85))");
    assert_eq!(f.fix.as_deref(), Some("hdparm -W1 /dev/sda"));
    assert_eq!(f.rule, "drive[0] (transport=sata)");
    assert!(
        findings("[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = \"off\"\n").is_empty()
    );
}

#[test]
fn the_last_matching_rule_wins() {
    let policy = "[[drive]]\nwrite_cache = \"off\"\n\n[[drive]]\nmatch = { model = \"QEMU*\" }\nwrite_cache = \"any\"\n\n\
                  [[drive]]\nmatch = { serial = \"LABMEGA0002\" }\nwrite_cache = \"off\"\nseverity = \"warn\"\n";
    // Every drive off, then the QEMU models (NVMe, the MegaRAID disks, the
    // USB stick) "any", then LABMEGA0002 back to off as a warning: only it
    // and the virtio disk (no model) are left, each by its own rule.
    let mut got: Vec<(String, Severity, String)> = findings(policy)
        .into_iter()
        .map(|f| (f.device, f.severity, f.rule))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (
                "sdc (QEMU HARDDISK LABMEGA0002)".to_string(),
                Severity::Warn,
                "drive[2] (serial=LABMEGA0002)".to_string()
            ),
            (
                "vda (? LABVIRTIO0001)".to_string(),
                Severity::Fail,
                "drive[0] (all)".to_string()
            ),
        ]
    );
}

#[test]
fn firmware_capacity_geometry_and_health_rules() {
    let f =
        one("[[drive]]\nmatch = { transport = \"sata\" }\nfirmware = { allow = [\"SATAFW02\"] }\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str()),
        ("firmware", "one of SATAFW02")
    );
    assert_eq!(f.actual, "SATAFW01 (ATA IDENTIFY (words 23-26))");
    assert!(findings("[[drive]]\nmatch = { transport = \"sata\" }\nfirmware = { min = \"SATAFW01\", deny = [\"SATAFW00\"] }\n").is_empty());
    let f = one("[[drive]]\nmatch = { transport = \"nvme\" }\nfirmware = { min = \"7.10\" }\n");
    assert_eq!(f.expected, "at least 7.10");
    let f = one("[[drive]]\nmatch = { name = \"vda\" }\ncapacity = { min = \"1G\" }\n");
    assert_eq!(
        (f.check.as_str(), f.actual.as_str()),
        ("capacity", "536870912 bytes")
    );
    assert!(findings(
        "[[drive]]\nmatch = { transport = \"nvme\" }\nlba_format = 0\nmetadata_bytes = 0\n"
    )
    .is_empty());
    let f = one("[[drive]]\nmatch = { transport = \"nvme\" }\nlba_format = 1\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str(), f.actual.as_str()),
        ("NVMe LBA format", "1", "0")
    );
    assert_eq!(
        f.fix.as_deref(),
        Some("nvme format /dev/nvme0n1 --lbaf=N (destroys data)")
    );
    let f = one("[[drive]]\nmatch = { name = \"sda\" }\nphysical_sector_size = 4096\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str(), f.actual.as_str()),
        ("physical sector size", "4096", "512")
    );
    // qemu's NVMe reports no warning and no media errors: the gates pass;
    // the virtio disk reports no health at all: "unknown" fails.
    assert!(findings("[[drive]]\nmatch = { transport = \"nvme\" }\nhealth = { passed = true, max_media_errors = 0, no_critical_warning = true, max_percentage_used = 90 }\n").is_empty());
    // The SATA disk reports reallocated sectors (0) but no pending count;
    // a limit on NVMe-only counters leaves an ATA drive "unknown".
    assert!(findings(
        "[[drive]]\nmatch = { transport = \"sata\" }\nhealth = { max_reallocated_sectors = 0 }\n"
    )
    .is_empty());
    let f =
        one("[[drive]]\nmatch = { transport = \"sata\" }\nhealth = { max_pending_sectors = 5 }\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str(), f.actual.as_str()),
        (
            "health: pending sectors",
            "at most 5",
            "unknown (not reported)"
        )
    );
    let f =
        one("[[drive]]\nmatch = { transport = \"sata\" }\nhealth = { max_percentage_used = 80 }\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str()),
        ("health: percentage used", "at most 80%")
    );
    let f = one("[[drive]]\nmatch = { transport = \"virtio\" }\nhealth = { passed = true }\n");
    assert_eq!(
        (f.check.as_str(), f.actual.as_str()),
        ("health: overall", "unknown (not reported)")
    );
    // Unknown is not bad: the advice is to find out, never to replace.
    let fix = f.fix.as_deref().unwrap();
    assert!(
        !fix.contains("replace") && fix.contains("does not report"),
        "{fix}"
    );
    assert_eq!(f.disk.as_deref(), Some("/dev/vda"));
}

#[test]
fn virtual_drive_and_controller_rules() {
    // LD_GET_INFO says WT NORA Direct: "WT NORA Direct" holds.
    assert!(findings("[[virtual_drive]]\nmatch = { controller = \"megaraid_sas\" }\nwrite = \"WT\"\nread = \"NORA\"\nio = \"Direct\"\nraid_level = \"RAID0\"\n").is_empty());
    let f = findings("[[virtual_drive]]\nwrite = \"WB\"\n");
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].check, "write policy");
    assert_eq!(
        f[0].actual,
        "WT (MFI LD_GET_INFO; MFI CFG_READ says WT ADRA Direct)"
    );
    assert_eq!(f[0].fix.as_deref(), Some("storcli /cX/v0 set wrcache=wb"));
    let f = one("[[virtual_drive]]\nmatch = { name = \"sdb\" }\ndisk_cache = \"Disabled\"\n");
    assert_eq!(
        (f.expected.as_str(), f.actual.as_str()),
        ("Disabled", "Default")
    );
    assert_eq!(f.fix.as_deref(), Some("storcli /cX/v0 set pdcache=off"));
    let f = one("[[controller]]\nmatch = { driver = \"megaraid_sas\" }\nfirmware = { allow = [\"2.6-QEMU\"] }\n");
    assert_eq!(
        (f.check.as_str(), f.actual.as_str()),
        ("controller firmware", "2.5+-QEMU")
    );
    assert!(findings("[[controller]]\nmatch = { product = \"LSI MegaRAID*\" }\ndriver_version = { min = \"07.700\" }\n").is_empty());
}

#[test]
fn expected_counts() {
    assert!(findings(
        "[[expect]]\nwhat = \"drives\"\nmatch = { model = \"QEMU HARDDISK\" }\ncount = 3\n"
    )
    .is_empty());
    let f = one("[[expect]]\nwhat = \"drives\"\nmatch = { transport = \"raid\" }\nmin = 8\n");
    assert_eq!(
        (f.check.as_str(), f.expected.as_str(), f.actual.as_str()),
        ("number of drives", "at least 8", "2")
    );
    let f = one("[[expect]]\nwhat = \"controllers\"\nmatch = { driver = \"mpt3sas\" }\ncount = 1\nseverity = \"warn\"\n");
    assert_eq!((f.severity, f.actual.as_str()), (Severity::Warn, "0"));
    assert!(findings("[[expect]]\nwhat = \"virtual_drives\"\nmax = 2\n").is_empty());
}

#[test]
fn check_command_exit_status_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let inv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/inventory.json");
    let policy = tmp.path().join("p.toml");
    std::fs::write(
        &policy,
        "[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = \"off\"\n",
    )
    .unwrap();
    let out = common::storcert(&[
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--inventory",
        inv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "PASS: 4 checks, 0 failed, 0 warnings\n"
    );
    std::fs::write(
        &policy,
        "[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = \"on\"\n",
    )
    .unwrap();
    let out = common::storcert(&[
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--inventory",
        inv.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass"], false);
    assert_eq!(v["findings"][0]["fix"], "hdparm -W1 /dev/sda");
    // A malformed policy: one line with file, line and column.
    std::fs::write(
        &policy,
        "[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = on\n",
    )
    .unwrap();
    let out = common::storcert(&[
        "check",
        "--policy",
        policy.to_str().unwrap(),
        "--inventory",
        inv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("storcert check: {}:3:15: ", policy.display())),
        "{err}"
    );
}

/// `check` names a storage controller that has no driver (its drives are
/// out of sight), as `run` does, even with an empty policy: it said
/// nothing. The inventory is the one storcert's image took on a machine
/// whose SCSI controller's module the image lacked.
#[test]
fn check_names_a_controller_that_hides_drives_whatever_the_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let inv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures/pxe-hidden/inventory.json");
    let policy = tmp.path().join("empty.toml");
    std::fs::write(&policy, "").unwrap();
    let check = |more: &[&str]| {
        let mut args = vec![
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--inventory",
            inv.to_str().unwrap(),
        ];
        args.extend(more);
        common::storcert(&args)
    };
    let out = check(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("warn      1000:0012 at 0000:00:03.0  storage controller driver"),
        "{text}"
    );
    assert!(
        text.contains("the drives behind 1000:0012 at 0000:00:03.0 cannot be seen"),
        "{text}"
    );
    assert!(
        text.contains("fix: add sym53c8xx to kernel-config/modules.list"),
        "{text}"
    );
    assert!(
        text.ends_with("PASS: 1 check, 0 failed, 1 warning\n"),
        "{text}"
    );
    let out = check(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(
        (f["check"].as_str(), f["machine"].as_bool()),
        (Some("storage controller driver"), Some(true)),
        "{v}"
    );
}

#[test]
fn drive_ratings_for_the_endurance_arithmetic() {
    let p = Policy::parse(
        "[[drive]]\nrated_dwpd = 1.0\nwarranty_years = 3\n\n[[drive]]\nmatch = { model = \"SAMSUNG*\" }\nrated_dwpd = 10.0\n",
        "r.toml",
    )
    .unwrap();
    let r = p.rating(Some("SAMSUNG MZ7WD"), Some("X")).unwrap();
    assert_eq!((r.dwpd, r.warranty_years), (10.0, 3.0));
    let r = p.rating(Some("OTHER"), None).unwrap();
    assert_eq!((r.dwpd, r.warranty_years), (1.0, 3.0));
    assert!(Policy::parse("[[drive]]\nrated_dwpd = 1.0\n", "r")
        .unwrap()
        .rating(None, None)
        .is_none());
}

#[test]
fn fixes_the_safety_gate_refuses_touch_nothing() {
    let policy = "[[drive]]\nmatch = { transport = \"sata\" }\nwrite_cache = \"on\"\n\n\
                  [[virtual_drive]]\nwrite = \"WB\"\n";
    let report = check(&Policy::parse(policy, "f.toml").unwrap(), &inventory());
    let plan = storcert::policy::fix::plan(&report.findings);
    assert_eq!(
        plan,
        vec![
            "sda (STORCERT LAB SATA LABSATA0001): write cache on",
            "0000:00:03.0 vd0 (sdb): virtual drive 0 cache policy WB",
            "0000:00:03.0 vd1 (sdc): virtual drive 1 cache policy WB",
        ]
    );
    let asked = std::cell::RefCell::new(Vec::new());
    let fixes = storcert::policy::fix::apply(&report.findings, |dev| {
        asked.borrow_mut().push(dev.to_string());
        Err(storcert::safety::Refusal {
            path: dev.to_string(),
            reasons: format!("{dev} is mounted on /data"),
        })
    });
    assert_eq!(*asked.borrow(), vec!["/dev/sda", "/dev/sdb", "/dev/sdc"]);
    assert_eq!(fixes.len(), 3);
    assert_eq!(
        fixes[0].outcome,
        "refused by the safety gate: /dev/sda is mounted on /data"
    );
    assert!(fixes
        .iter()
        .all(|f| f.outcome.starts_with("refused by the safety gate")));
}

/// The lab's MegaRAID controller, as its family read it.
fn lab_raid(inv: &mut Inventory) -> &mut storcert::inventory::RaidController {
    inv.controllers
        .iter_mut()
        .find_map(|c| c.raid.as_mut())
        .unwrap()
}

/// A battery fitted, its health not reported.
fn fitted_battery() -> storcert::inventory::Battery {
    storcert::inventory::Battery {
        present: true,
        state: None,
        healthy: None,
    }
}

#[test]
fn a_virtual_drive_that_fell_back_to_write_through_is_a_finding() {
    // The lab's virtual drives are write-through as configured: nothing.
    assert!(findings("[[drive]]\nmatch = { transport = \"nvme\" }\n").is_empty());
    // Configured write-back, running write-through (a failed battery).
    let mut inv = inventory();
    let raid = lab_raid(&mut inv);
    raid.battery = Some(fitted_battery());
    let vd = &mut raid.virtual_drives[0];
    vd.cache_policy[0].default = "WB RA Direct".into();
    let policy = Policy::parse("", "test.toml").unwrap();
    let f = check(&policy, &inv).findings;
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warn);
    assert_eq!(f[0].check, "effective write policy");
    assert_eq!(f[0].expected, "WB, as configured");
    assert!(
        f[0].actual.starts_with("WT (MFI LD_GET_INFO)"),
        "{}",
        f[0].actual
    );
    assert!(
        f[0].actual.contains("failed, charging or learning"),
        "{}",
        f[0].actual
    );
    assert_eq!(f[0].rule, "raid cache (built in)");
    assert_eq!(f[0].disk.as_deref(), Some("/dev/sdb"));
}

fn check_inv(policy: &str, inv: &Inventory) -> Vec<Finding> {
    check(&Policy::parse(policy, "test.toml").unwrap(), inv).findings
}

#[test]
fn battery_rules_by_family() {
    let mut inv = inventory();
    let battery = |inv: &mut Inventory, b: Option<storcert::inventory::Battery>| {
        lab_raid(inv).battery = b;
    };
    let healthy = "[[controller]]\nmatch = { family = \"megaraid\" }\nbattery = \"healthy\"\n";
    use storcert::inventory::Battery;
    // The lab's controller has none fitted.
    battery(
        &mut inv,
        Some(Battery {
            present: false,
            state: None,
            healthy: None,
        }),
    );
    let f = check_inv(healthy, &inv);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].check, "cache battery");
    assert_eq!(f[0].expected, "fitted and healthy");
    assert_eq!(f[0].actual, "none fitted");
    assert_eq!(f[0].rule, "controller[0] (family=megaraid)");
    // Another family's rule does not reach it.
    assert!(check_inv(&healthy.replace("megaraid", "cciss"), &inv).is_empty());
    battery(
        &mut inv,
        Some(Battery {
            present: true,
            state: Some("BBU: learn cycle active".into()),
            healthy: Some(false),
        }),
    );
    let f = check_inv(healthy, &inv);
    assert_eq!(f[0].actual, "not healthy (BBU: learn cycle active)");
    assert!(check_inv(&healthy.replace("healthy", "present"), &inv).is_empty());
    battery(
        &mut inv,
        Some(Battery {
            present: true,
            state: None,
            healthy: None,
        }),
    );
    assert_eq!(
        check_inv(healthy, &inv)[0].actual,
        "fitted, health unknown (no state given)"
    );
    battery(&mut inv, None);
    let f = check_inv(healthy, &inv);
    assert_eq!(
        f[0].actual,
        "unknown (the controller's family does not report it)"
    );
    assert_eq!(f[0].severity, Severity::Info, "said, not failed");
    battery(
        &mut inv,
        Some(Battery {
            present: true,
            state: Some("BBU: normal".into()),
            healthy: Some(true),
        }),
    );
    assert!(check_inv(healthy, &inv).is_empty());
    assert!(check_inv(&healthy.replace("healthy", "any"), &inv).is_empty());
    // Unscoped, it judges only controllers with a RAID family: not the
    // lab's AHCI, NVMe or virtio controllers.
    let unscoped = "[[controller]]\nbattery = \"healthy\"\n";
    let checks = |p: &str, inv: &Inventory| check(&Policy::parse(p, "p").unwrap(), inv).checks;
    assert_eq!(checks(unscoped, &inv), checks("", &inv) + 1);
    // No cache and no battery (a MegaRAID iMR): nothing to protect.
    let mut imr = inv.clone();
    let r = lab_raid(&mut imr);
    r.cache_mb = 0;
    r.battery = Some(Battery {
        present: false,
        state: None,
        healthy: None,
    });
    assert_eq!(checks(unscoped, &imr), checks("", &imr));
    // A RAID controller its family could not read: unknown, and the
    // rule's severity, not silence.
    let mut unread = inv.clone();
    let c = unread
        .controllers
        .iter_mut()
        .find(|c| c.raid.is_some())
        .unwrap();
    c.raid = None;
    c.errors = vec!["megaraid: open /dev/megaraid_sas_ioctl_node: Permission denied".into()];
    let f = check_inv(unscoped, &unread);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Fail);
    assert_eq!(
        f[0].actual,
        "unknown (the controller could not be read: megaraid: open /dev/megaraid_sas_ioctl_node: Permission denied)"
    );
}

/// Policy asks a controller's family what it can read and how its
/// settings are changed, never its name: the lab's MegaRAID controller
/// read as each family in turn gets that family's answers.
#[test]
fn a_family_is_asked_for_its_battery_and_its_fixes() {
    let as_family = |family: &str| {
        let mut inv = inventory();
        let raid = lab_raid(&mut inv);
        raid.family = storcert::inventory::FamilyKey::new(family);
        raid.battery = Some(fitted_battery());
        raid.virtual_drives[0].cache_policy[0].default = "WB RA Direct".into();
        inv
    };
    let fell_back = |inv: &Inventory| {
        check_inv("", inv)
            .into_iter()
            .find(|f| f.check == "effective write policy")
            .unwrap()
    };
    let write = |inv: &Inventory| check_inv("[[virtual_drive]]\nwrite = \"WB\"\n", inv);
    // MegaRAID: storcli's commands.
    let mega = as_family("megaraid");
    assert_eq!(
        fell_back(&mega).fix.as_deref(),
        Some("check the battery or CacheVault: storcli /cX/bbu show, /cX/cv show")
    );
    assert_eq!(
        write(&mega)[0].fix.as_deref(),
        Some("storcli /cX/v0 set wrcache=wb")
    );
    // Smart Array (and a family this build does not know): no public tool.
    for family in ["cciss", "some-future-family"] {
        let inv = as_family(family);
        assert_eq!(fell_back(&inv).fix, None, "{family}");
        let fix = write(&inv)[0].fix.clone().unwrap();
        assert!(
            fix.contains(&format!(
                "the {family} interface storcert reads has no public way"
            )),
            "{fix}"
        );
    }
    // Batteries: an HBA family has none to judge; MPI3 cannot read one.
    let battery = "[[controller]]\nbattery = \"healthy\"\n";
    let judged = |inv: &Inventory| {
        check_inv(battery, inv)
            .into_iter()
            .filter(|f| f.check == "cache battery")
            .map(|f| f.actual)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        judged(&as_family("megaraid")),
        ["fitted, health unknown (no state given)"]
    );
    assert!(judged(&as_family("mpt3sas")).is_empty());
    assert_eq!(
        judged(&as_family("mpi3mr")),
        ["unknown (the controller's family does not report it)"]
    );
}

#[test]
fn drive_rules_judge_the_physical_drives_behind_a_controller() {
    let mut inv = inventory();
    // As the lab reads pd 0 through MFI pass-through today.
    let pd = &mut lab_raid(&mut inv).physical_drives[0];
    pd.model = Some("SM863".into());
    pd.serial = Some("S2ZZ0001".into());
    pd.interface = Some("SATA".into());
    pd.firmware = Some("GXM1003Q".into());
    pd.write_cache = Some(storcert::inventory::WriteCache {
        supported: Some(true),
        enabled: Some(true),
        source: "ATA IDENTIFY (words 82/85)".into(),
        from_sysfs: false,
        readings: Vec::new(),
        disagreement: false,
    });
    let f = check_inv(
        "[[drive]]\nmatch = { model = \"SM863\" }\nwrite_cache = \"off\"\nfirmware = { min = \"GXM1103Q\" }\nlogical_sector_size = 4096\n",
        &inv,
    );
    let checks: Vec<&str> = f.iter().map(|f| f.check.as_str()).collect();
    // Geometry is the virtual drive's: not judged on a drive behind.
    assert_eq!(checks, ["write cache", "firmware"], "{f:#?}");
    assert!(
        f[0].device
            .starts_with("0000:00:03.0 pd 0 (enclosure 65535 slot 0, SM863 S2ZZ0001)"),
        "{}",
        f[0].device
    );
    assert_eq!(f[0].actual, "on (ATA IDENTIFY (words 82/85))");
    assert_eq!(f[0].fix.as_deref(), Some("storcli /cX/vN set pdcache=off"));
    assert_eq!(
        f[0].action, None,
        "nothing to do to a drive behind a controller directly"
    );
    assert_eq!(f[0].disk, None);
    assert_eq!(f[1].actual, "GXM1003Q (megaraid pass-through)");
    // What the pass-through could not carry is said, not failed: the
    // drive behind gave no health, so the gate is Info, not Fail.
    let f = check_inv(
        "[[drive]]\nmatch = { model = \"SM863\" }\nhealth = { passed = true }\n",
        &inv,
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].actual, "unknown (not reported)");
    assert_eq!(f[0].severity, Severity::Info);
    // A drive the kernel sees itself too (JBOD) is judged once, as the disk.
    let mut jbod = inv.clone();
    let sata_serial = jbod
        .disks
        .iter()
        .find(|d| d.name == "sda")
        .unwrap()
        .serial
        .clone();
    lab_raid(&mut jbod).physical_drives[0].serial = sata_serial;
    assert!(check_inv(
        "[[drive]]\nmatch = { model = \"SM863\" }\nwrite_cache = \"off\"\n",
        &jbod
    )
    .is_empty());
    // Matched by transport and family too; a drive of no identity is not judged.
    assert_eq!(
        check_inv("[[drive]]\nmatch = { transport = \"sata\", family = \"megaraid\" }\nwrite_cache = \"off\"\n", &inv).len(),
        1
    );
}

#[test]
fn md_arrays_checked_by_rule_and_built_in() {
    use storcert::inventory::{MdArray, MdMember};
    let mut inv = inventory();
    let member = |d: &str, state: &str| MdMember {
        device: d.into(),
        slot: Some(0),
        state: vec![state.into()],
        errors: Some(0),
    };
    inv.md_arrays = vec![MdArray {
        name: "md126".into(),
        level: "raid1".into(),
        metadata: "external:/md127/0".into(),
        vroc: true,
        container: Some("md127".into()),
        state: "active".into(),
        raid_disks: Some(2),
        degraded: Some(0),
        sync_action: Some("idle".into()),
        bitmap: Some("none".into()),
        consistency_policy: Some("resync".into()),
        size_bytes: 1 << 30,
        chunk_bytes: None,
        members: vec![member("nvme0n1", "in_sync"), member("nvme1n1", "in_sync")],
        errors: Vec::new(),
    }];
    assert!(check_inv("", &inv).is_empty());
    let rules = "[[md_array]]\nmatch = { raid_level = \"raid1\" }\nbitmap = true\nconsistency_policy = \"ppl\"\nstate = [\"clean\", \"active\"]\nmax_degraded = 0\n";
    let f = check_inv(rules, &inv);
    let got: Vec<(&str, &str, &str)> = f
        .iter()
        .map(|f| (f.check.as_str(), f.expected.as_str(), f.actual.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("write-intent bitmap", "present", "none"),
            ("consistency policy", "ppl", "resync")
        ]
    );
    assert_eq!(f[0].device, "md126 (raid1, VROC/IMSM)");
    assert_eq!(f[0].disk.as_deref(), Some("/dev/md126"));
    assert_eq!(f[0].rule, "md_array[0] (raid_level=raid1)");
    // A failed member: the built-in warning, and the rule's count.
    let a = &mut inv.md_arrays[0];
    a.degraded = Some(1);
    a.members[1].state = vec!["faulty".into()];
    let f = check_inv(rules, &inv);
    let health = f.iter().find(|f| f.check == "array health").unwrap();
    assert_eq!(health.severity, Severity::Warn);
    assert_eq!(health.rule, "md array (built in)");
    assert_eq!(health.actual, "1 member(s) missing; faulty: nvme1n1");
    let missing = f.iter().find(|f| f.check == "missing members").unwrap();
    assert_eq!(
        (missing.expected.as_str(), missing.actual.as_str()),
        ("at most 0", "1")
    );
    assert_eq!(missing.severity, Severity::Fail);
    // A VROC container is no array to judge; raid0 has nothing to miss.
    let mut container = inv.md_arrays[0].clone();
    container.name = "md127".into();
    container.level = "container".into();
    container.state = "inactive".into();
    container.degraded = None;
    let mut stripe = inv.md_arrays[0].clone();
    stripe.name = "md0".into();
    stripe.level = "raid0".into();
    stripe.degraded = None;
    stripe
        .members
        .iter_mut()
        .for_each(|m| m.state = vec!["in_sync".into()]);
    inv.md_arrays = vec![container, stripe];
    let f = check_inv(
        "[[md_array]]\nstate = [\"clean\", \"active\"]\nmax_degraded = 0\n",
        &inv,
    );
    assert!(f.is_empty(), "{f:#?}");
    // A name match of another array, and a bad word, are no findings and an error.
    assert!(
        check_inv(
            "[[md_array]]\nmatch = { name = \"md0\" }\nbitmap = true\n",
            &inv
        )
        .len()
            == 1
    );
    let e = Policy::parse("[[md_array]]\nconsistency_policy = \"raid\"\n", "p").unwrap_err();
    assert_eq!(
        e.message,
        "md_array[0].consistency_policy: \"raid\" is not one of none, resync, bitmap, journal, ppl"
    );
}
