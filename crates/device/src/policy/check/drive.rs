//! The `[[drive]]` rules: each drive, a kernel disk or a physical drive
//! behind a controller, one function per kind of setting.

use super::*;

/// One drive against the `[[drive]]` rules. Behind a controller,
/// "unknown" is often all the pass-through can carry (an NVMe drive's
/// admin log, a refused MODE SENSE): said, but not a failure of the
/// machine.
pub(super) fn check_drive(
    c: &DriveUnderCheck,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let is_pd = c.is_pd();
    let mut finding = |mut f: Finding| {
        if is_pd && f.actual.starts_with("unknown") {
            f.severity = f.severity.min(Severity::Info);
        }
        finding(f)
    };
    check_drive_write_cache(c, checks, &mut finding);
    check_drive_firmware(c, checks, &mut finding);
    check_drive_geometry(c, checks, &mut finding);
    check_drive_format(c, checks, &mut finding);
    check_drive_health(c, checks, &mut finding);
}

/// One drive as its checks see it: a kernel disk, or a physical drive
/// behind a controller (`pd_fix` then the controller's command that sets
/// its cache, less the wanted value).
pub(super) struct DriveUnderCheck<'a> {
    pub(super) inv: &'a Inventory,
    pub(super) rules: &'a [DriveRule],
    pub(super) d: &'a Disk,
    pub(super) label: String,
    pub(super) disk_ref: Option<String>,
    pub(super) pd_fix: Option<String>,
}

impl DriveUnderCheck<'_> {
    fn is_pd(&self) -> bool {
        self.pd_fix.is_some()
    }

    fn matches(&self, r: &DriveRule) -> bool {
        drive_matches(&r.matches, self.d, self.inv)
    }

    /// Geometry rules judge the kernel's disks: a physical drive behind a
    /// controller is sized and formatted by its virtual drive.
    fn matches_geometry(&self, r: &DriveRule) -> bool {
        !self.is_pd() && self.matches(r)
    }
}

/// The drive's write cache against the rules' `write_cache`.
fn check_drive_write_cache(
    c: &DriveUnderCheck,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let DriveUnderCheck {
        d,
        label,
        disk_ref,
        pd_fix,
        ..
    } = c;
    let inv = c.inv;
    let rules = c.rules;
    let is_pd = c.is_pd();
    let m = |r: &DriveRule| c.matches(r);
    if let Some((want, rule, severity)) = effective(rules, "drive", m, |r| r.write_cache.as_ref()) {
        if *want != OnOff::Any {
            *checks += 1;
            let wc = d.write_cache.as_ref();
            let actual = wc.and_then(|w| w.enabled);
            let want_on = *want == OnOff::On;
            if actual != Some(want_on) {
                finding(Finding {
                    machine: false,
                    disk: disk_ref.clone(),
                    severity,
                    rule,
                    device: label.clone(),
                    check: "write cache".into(),
                    expected: if want_on { "on" } else { "off" }.into(),
                    actual: match (actual, wc) {
                        (Some(a), Some(w)) => {
                            format!("{} ({})", if a { "on" } else { "off" }, w.source)
                        }
                        _ => "unknown (no source answered)".into(),
                    },
                    fix: match &pd_fix {
                        Some(f) => Some(format!("{f}{}", if want_on { "on" } else { "off" })),
                        None => write_cache_fix(d, want_on),
                    },
                    action: if is_pd {
                        None
                    } else {
                        write_cache_action(inv, d, want_on)
                    },
                });
            }
        }
    }
}

/// The drive's firmware against the rules' allowed versions.
fn check_drive_firmware(
    c: &DriveUnderCheck,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let DriveUnderCheck {
        d, label, disk_ref, ..
    } = c;
    let rules = c.rules;
    let m = |r: &DriveRule| c.matches(r);
    if let Some((v, rule, severity)) = effective(rules, "drive", m, |r| r.firmware.as_ref()) {
        *checks += 1;
        let fw = d.firmware.as_deref().unwrap_or("");
        if let Err(expected) = version_ok(v, fw) {
            finding(Finding {
                machine: false,
                disk: disk_ref.clone(),
                severity,
                rule,
                device: label.clone(),
                check: "firmware".into(),
                expected: expected.to_string(),
                actual: match &d.firmware_source {
                    Some(src) => format!("{fw} ({src})"),
                    None => "unknown".into(),
                },
                fix: Some("update the drive's firmware with the vendor's tool".into()),
                action: None,
            });
        }
    }
}

/// Capacity, for a kernel disk only: a physical drive behind a controller
/// is sized by its virtual drive.
fn check_drive_geometry(
    c: &DriveUnderCheck,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let DriveUnderCheck {
        d, label, disk_ref, ..
    } = c;
    let rules = c.rules;
    let geometry = |r: &DriveRule| c.matches_geometry(r);
    if let Some((r, rule, severity)) = effective(rules, "drive", geometry, |r| r.capacity.as_ref())
    {
        *checks += 1;
        let min = r.min.as_deref().and_then(|v| parse_size(v).ok());
        let max = r.max.as_deref().and_then(|v| parse_size(v).ok());
        if min.is_some_and(|m| d.capacity_bytes < m) || max.is_some_and(|m| d.capacity_bytes > m) {
            finding(Finding {
                machine: false,
                disk: disk_ref.clone(),
                severity,
                rule,
                device: label.clone(),
                check: "capacity".into(),
                expected: format!(
                    "{} to {}",
                    r.min.as_deref().unwrap_or("0"),
                    r.max.as_deref().unwrap_or("any")
                ),
                actual: format!("{} bytes", d.capacity_bytes),
                fix: None,
                action: None,
            });
        }
    }
}

/// Format settings (sector sizes, LBA format): changing any means
/// reformatting.
fn check_drive_format(c: &DriveUnderCheck, checks: &mut usize, finding: &mut impl FnMut(Finding)) {
    let geometry = |r: &DriveRule| c.matches_geometry(r);
    let DriveUnderCheck {
        d, label, disk_ref, ..
    } = c;
    let rules = c.rules;
    // Format settings: changing any of them means reformatting.
    let sector_fix = if d.transport == crate::inventory::Transport::Nvme {
        "nvme format with the wanted LBA format (destroys data)".to_string()
    } else {
        "sg_format --size (destroys data), where the drive supports it".to_string()
    };
    let lbaf_fix = format!("nvme format {} --lbaf=N (destroys data)", d.dev_path);
    for (key, want, actual, fix) in [
        (
            "logical sector size",
            effective(rules, "drive", geometry, |r| r.logical_sector_size.as_ref())
                .map(|(v, r, s)| (*v, r, s)),
            d.logical_sector_size,
            &sector_fix,
        ),
        (
            "physical sector size",
            effective(rules, "drive", geometry, |r| {
                r.physical_sector_size.as_ref()
            })
            .map(|(v, r, s)| (*v, r, s)),
            d.physical_sector_size,
            &sector_fix,
        ),
        (
            "NVMe LBA format",
            effective(rules, "drive", geometry, |r| r.lba_format.as_ref())
                .map(|(v, r, s)| (*v as u32, r, s)),
            d.lba_format.map(u32::from),
            &lbaf_fix,
        ),
        (
            "metadata bytes per block",
            effective(rules, "drive", geometry, |r| r.metadata_bytes.as_ref())
                .map(|(v, r, s)| (*v as u32, r, s)),
            d.metadata_bytes.map(u32::from),
            &lbaf_fix,
        ),
    ] {
        if let Some((want, rule, severity)) = want {
            *checks += 1;
            if actual != Some(want) {
                finding(Finding {
                    machine: false,
                    disk: disk_ref.clone(),
                    severity,
                    rule,
                    device: label.clone(),
                    check: key.into(),
                    expected: want.to_string(),
                    actual: actual
                        .map(|a| a.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                    fix: Some(fix.clone()),
                    action: None,
                });
            }
        }
    }
}

/// Health: the overall verdict, wear, media errors and warnings.
fn check_drive_health(c: &DriveUnderCheck, checks: &mut usize, finding: &mut impl FnMut(Finding)) {
    let DriveUnderCheck {
        d, label, disk_ref, ..
    } = c;
    let rules = c.rules;
    let m = |r: &DriveRule| c.matches(r);
    if let Some((g, rule, severity)) = effective(rules, "drive", m, |r| r.health.as_ref()) {
        let h = d.health.as_ref();
        let nvme = h.and_then(|h| h.nvme.as_ref());
        let ata = h.and_then(|h| h.ata.as_ref());
        let mut gate = |name: &str, bad: Option<bool>, expected: String, actual: String| {
            *checks += 1;
            if bad != Some(false) {
                finding(Finding {
                    machine: false,
                    disk: disk_ref.clone(),
                    severity,
                    rule: rule.clone(),
                    device: label.clone(),
                    check: format!("health: {name}"),
                    expected,
                    actual: if bad.is_none() {
                        "unknown (not reported)".into()
                    } else {
                        actual
                    },
                    // Unknown is not bad: the drive (or its controller)
                    // did not say, which needs another look, not a
                    // new drive.
                    fix: Some(if bad.is_none() {
                        "find out why the drive does not report it (pass-through behind a controller, a firmware without the log), or exempt the model in the policy".into()
                    } else {
                        "replace the drive".into()
                    }),
                    action: None,
                });
            }
        };
        if g.passed == Some(true) {
            let overall = h.map(|h| h.overall.as_str()).unwrap_or("unknown");
            gate(
                "overall",
                (overall != "unknown").then_some(overall != "passed"),
                "passed".into(),
                overall.into(),
            );
        }
        // Counters with an upper limit: one shape, so one loop.
        let counters = [
            (
                "media errors",
                g.max_media_errors,
                nvme.map(|n| u64::try_from(n.media_errors).unwrap_or(u64::MAX)),
                "",
            ),
            (
                "percentage used",
                g.max_percentage_used.map(u64::from),
                nvme.map(|n| u64::from(n.percentage_used)),
                "%",
            ),
            (
                "reallocated sectors",
                g.max_reallocated_sectors,
                ata.and_then(|a| a.reallocated_sectors),
                "",
            ),
            (
                "pending sectors",
                g.max_pending_sectors,
                ata.and_then(|a| a.pending_sectors),
                "",
            ),
        ];
        for (name, max, value, unit) in counters {
            if let Some(max) = max {
                gate(
                    name,
                    value.map(|v| v > max),
                    format!("at most {max}{unit}"),
                    format!("{}{unit}", value.unwrap_or(0)),
                );
            }
        }
        if g.no_critical_warning == Some(true) {
            let v = nvme.map(|n| n.critical_warning);
            gate(
                "critical warning",
                v.map(|v| v != 0),
                "none".into(),
                nvme.map(|n| n.critical_warnings.join(", "))
                    .unwrap_or_default(),
            );
        }
    }
}
