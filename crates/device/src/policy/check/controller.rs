//! The `[[controller]]` and `[[virtual_drive]]` rules: a controller's own
//! settings, its cache's battery, and each of its virtual drives.

use super::*;
use crate::inventory::raid::{self, BatteryReach};

/// One controller, its battery and its virtual drives.
pub(super) fn check_controller(
    policy: &Policy,
    c: &Controller,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    check_controller_settings(policy, c, checks, finding);
    check_controller_battery(policy, c, checks, finding);
    let Some(mr) = &c.raid else { return };
    for vd in &mr.virtual_drives {
        check_virtual_drive(policy, c, mr, vd, checks, finding);
    }
}

/// How findings name a controller: its PCI address and what it is.
fn controller_label(c: &Controller) -> String {
    format!(
        "{} ({})",
        c.pci_address,
        c.device_name
            .as_deref()
            .or(c.driver.as_deref())
            .unwrap_or("?")
    )
}

/// The controller's own settings against the `[[controller]]` rules.
fn check_controller_settings(
    policy: &Policy,
    c: &Controller,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let label = controller_label(c);
    let rules = &policy.controllers;
    let m = |r: &ControllerRule| controller_matches(&r.matches, c);
    for (key, want, actual) in [
        (
            "controller firmware",
            effective(rules, "controller", m, |r| r.firmware.as_ref()),
            c.firmware.as_deref(),
        ),
        (
            "driver version",
            effective(rules, "controller", m, |r| r.driver_version.as_ref()),
            c.driver_version.as_deref(),
        ),
    ] {
        if let Some((v, rule, severity)) = want {
            *checks += 1;
            if let Err(expected) = version_ok(v, actual.unwrap_or("")) {
                finding(Finding {
                    machine: false,
                    disk: None,
                    severity,
                    rule,
                    device: label.clone(),
                    check: key.into(),
                    expected: expected.to_string(),
                    actual: actual.unwrap_or("unknown").into(),
                    fix: Some(if key == "driver version" {
                        "boot a kernel with the wanted driver".into()
                    } else {
                        "update the controller firmware with the vendor's tool".into()
                    }),
                    action: None,
                });
            }
        }
    }
}

/// The cache's battery (or supercapacitor) against the rules.
fn check_controller_battery(
    policy: &Policy,
    c: &Controller,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let label = controller_label(c);
    let rules = &policy.controllers;
    let m = |r: &ControllerRule| controller_matches(&r.matches, c);
    // What a battery rule can say of this controller: nothing where it
    // has no cache to protect (no RAID family, an HBA, a controller
    // with neither cache nor battery); "unknown" where its family
    // could not read it, or cannot read batteries (MPI3).
    let claimed = raid::FAMILIES.iter().any(|f| f.claims(c));
    let battery_says: Option<Result<Option<&crate::inventory::Battery>, String>> = match &c.raid {
        None if claimed => Some(Err(format!(
            "unknown (the controller could not be read{})",
            c.errors
                .first()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))),
        None => None,
        Some(r) => match raid::battery_reach(&r.family) {
            BatteryReach::NoCache => None,
            BatteryReach::Unreadable => Some(Ok(None)),
            BatteryReach::Reads
                if r.cache_mb == 0 && r.battery.as_ref().is_none_or(|b| !b.present) =>
            {
                None
            }
            BatteryReach::Reads => Some(Ok(r.battery.as_ref())),
        },
    };
    if let (Some((want, rule, severity)), Some(says)) = (
        effective(rules, "controller", m, |r| r.battery.as_ref()),
        battery_says,
    ) {
        if *want != BatteryWant::Any {
            *checks += 1;
            let battery = says.as_ref().ok().copied().flatten();
            let ok = match battery {
                None => None,
                Some(b) if *want == BatteryWant::Present => Some(b.present),
                Some(b) => b
                    .healthy
                    .map(|h| b.present && h)
                    .or(Some(false).filter(|_| !b.present)),
            };
            if ok != Some(true) {
                // A family that cannot read batteries says so, and
                // does not fail the machine for it.
                let severity = if matches!(says, Ok(None)) {
                    severity.min(Severity::Info)
                } else {
                    severity
                };
                let actual = match (&says, battery) {
                    (Err(why), _) => why.clone(),
                    (Ok(_), None) => {
                        "unknown (the controller's family does not report it)".to_string()
                    }
                    (Ok(_), Some(b)) if !b.present => "none fitted".to_string(),
                    (Ok(_), Some(b)) => format!(
                        "{} ({})",
                        match b.healthy {
                            Some(true) => "healthy",
                            Some(false) => "not healthy",
                            None => "fitted, health unknown",
                        },
                        b.state.as_deref().unwrap_or("no state given")
                    ),
                };
                finding(Finding {
                    machine: false,
                    disk: None,
                    severity,
                    rule,
                    device: label.clone(),
                    check: "cache battery".into(),
                    expected: match want {
                        BatteryWant::Healthy => "fitted and healthy",
                        _ => "fitted",
                    }
                    .into(),
                    actual,
                    fix: Some(
                        "fit or replace the battery / CacheVault module, or let its learn cycle finish"
                            .into(),
                    ),
                    action: None,
                });
            }
        }
    }
}

/// One virtual drive's cache and I/O policies against the
/// `[[virtual_drive]]` rules (a PERC's "WT NORA Direct").
fn check_virtual_drive(
    policy: &Policy,
    c: &Controller,
    mr: &RaidController,
    vd: &VirtualDrive,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let rules = &policy.virtual_drives;
    let m = |r: &VirtualDriveRule| vd_matches(&r.matches, c, vd);
    let vlabel = format!(
        "{} vd{} ({})",
        c.pci_address,
        vd.id,
        vd.block_device.as_deref().unwrap_or("no disk")
    );
    let reading = vd.cache_policy.first();
    let note = if vd.cache_policy_consistent {
        String::new()
    } else {
        let others: Vec<String> = vd
            .cache_policy
            .iter()
            .skip(1)
            .map(|r| format!("{} says {}", r.source, r.current))
            .collect();
        format!("; {}", others.join("; "))
    };
    let source = reading.map(|r| r.source.clone()).unwrap_or_default();
    let checks_vd: [VdCheck; 5] = [
        (
            "RAID level",
            effective(rules, "virtual_drive", m, |r| r.raid_level.as_ref()),
            Some(vd.raid_level.clone()),
            "",
        ),
        (
            "write policy",
            effective(rules, "virtual_drive", m, |r| r.write.as_ref()),
            reading.map(|r| r.write.clone()),
            "wrcache",
        ),
        (
            "read policy",
            effective(rules, "virtual_drive", m, |r| r.read.as_ref()),
            reading.map(|r| r.read.clone()),
            "rdcache",
        ),
        (
            "I/O policy",
            effective(rules, "virtual_drive", m, |r| r.io.as_ref()),
            reading.map(|r| r.io.clone()),
            "iopolicy",
        ),
        (
            "disk cache",
            effective(rules, "virtual_drive", m, |r| r.disk_cache.as_ref()),
            Some(vd.disk_cache_policy.clone()),
            "pdcache",
        ),
    ];
    for (key, want, actual, storcli) in checks_vd {
        let Some((want, rule, severity)) = want else {
            continue;
        };
        // A family whose interface has no such setting (Smart
        // Array's volumes: no read-ahead or I/O policy of their
        // own) is not judged on it.
        if matches!(actual.as_deref(), Some("n/a" | "not reported")) {
            continue;
        }
        *checks += 1;
        if !actual
            .as_deref()
            .is_some_and(|a| a.eq_ignore_ascii_case(want))
        {
            let value = match (storcli, want.to_ascii_lowercase().as_str()) {
                ("pdcache", "enabled") => "on".to_string(),
                ("pdcache", "disabled") => "off".to_string(),
                (_, w) => w.to_string(),
            };
            finding(Finding {
                machine: false,
                disk: vd.block_device.as_ref().map(|b| format!("/dev/{b}")),
                severity,
                rule,
                device: vlabel.clone(),
                check: key.into(),
                expected: want.clone(),
                actual: match actual {
                    Some(a) if key == "RAID level" || key == "disk cache" => a,
                    Some(a) => format!("{a} ({source}{note})"),
                    None => "unknown".into(),
                },
                fix: raid::virtual_drive_fix(&mr.family, vd.id, storcli, &value),
                action: (!storcli.is_empty() && storcli != "pdcache" && can_set(&mr.family)).then(
                    || Action::VirtualDrive {
                        family: mr.family.clone(),
                        pci: c.pci_address.clone(),
                        host: mr.scsi_host,
                        target: vd.id,
                        dev_path: vd.block_device.as_ref().map(|b| format!("/dev/{b}")),
                        write: (storcli == "wrcache").then(|| want.clone()),
                        read: (storcli == "rdcache").then(|| want.clone()),
                        io: (storcli == "iopolicy").then(|| want.clone()),
                    },
                ),
            });
        }
    }
    // Built in, whatever the rules: a virtual drive configured
    // write-back that runs write-through is a controller that fell
    // back (the cache is unprotected), and every figure measured
    // on it is write-through's.
    if let Some(r) = reading {
        *checks += 1;
        let configured = r.default.split_whitespace().next().unwrap_or("");
        if matches!(configured, "WB" | "AWB") && r.write == "WT" {
            let why = match &mr.battery {
                Some(b) if !b.present => "no battery or CacheVault is fitted",
                Some(_) => "its battery or CacheVault is failed, charging or learning",
                None => "a battery or CacheVault missing, failed or charging",
            };
            finding(Finding {
                machine: false,
                disk: vd.block_device.as_ref().map(|b| format!("/dev/{b}")),
                severity: Severity::Warn,
                rule: RAID_CACHE_RULE.into(),
                device: vlabel.clone(),
                check: "effective write policy".into(),
                expected: format!("{configured}, as configured"),
                actual: format!("WT ({source}): the controller fell back to write-through; {why}"),
                fix: raid::write_through_fix(&mr.family),
                action: None,
            });
        }
    }
}
