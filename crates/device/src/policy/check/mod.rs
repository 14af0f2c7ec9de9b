//! Checking an inventory against a policy: every setting a matching rule
//! sets becomes one check; what does not hold becomes a finding naming the
//! rule, the device, what was expected, what the device says, and how a
//! person would fix it where that is known.

use std::cmp::Ordering;

use super::*;
use crate::inventory::{
    Controller, Disk, FamilyKey, Inventory, MdArray, RaidController, VirtualDrive,
};
pub use storcert_results::policy::{Action, Finding, Report};
use storcert_util::glob;
use storcert_util::size::parse_size;

mod controller;
mod drive;

use controller::check_controller;
use drive::{check_drive, DriveUnderCheck};

/// Natural order: digit runs compare as numbers ("GXM1103Q" > "GXM1003Q",
/// "1.10" > "1.9").
pub fn version_cmp(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let d = c.is_ascii_digit();
            match out.last_mut() {
                Some((kind, text)) if *kind == d => text.push(c),
                _ => out.push((d, c.to_string())),
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let ord = match (x.0, y.0) {
            (true, true) => {
                let (p, q) = (x.1.trim_start_matches('0'), y.1.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            _ => x.1.cmp(&y.1),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len())
}

/// A version the rule does not accept; printed as what the rule expects,
/// for a finding's `expected`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum VersionMismatch {
    #[error("one of {}", .0.join(", "))]
    NotAllowed(Vec<String>),
    #[error("none of {}", .0.join(", "))]
    Denied(Vec<String>),
    #[error("at least {0}")]
    BelowMin(String),
}

fn version_ok(v: &Version, actual: &str) -> Result<(), VersionMismatch> {
    if let Some(allow) = &v.allow {
        if !allow.iter().any(|a| a == actual) {
            return Err(VersionMismatch::NotAllowed(allow.clone()));
        }
    }
    if let Some(deny) = &v.deny {
        if deny.iter().any(|d| d == actual) {
            return Err(VersionMismatch::Denied(deny.clone()));
        }
    }
    if let Some(min) = &v.min {
        if version_cmp(actual, min) == Ordering::Less {
            return Err(VersionMismatch::BelowMin(min.clone()));
        }
    }
    Ok(())
}

fn describe(m: &Match) -> String {
    let mut parts = Vec::new();
    let mut add = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            parts.push(format!("{k}={v}"));
        }
    };
    add("name", &m.name);
    add("model", &m.model);
    add("vendor", &m.vendor);
    add("serial", &m.serial);
    add("wwn", &m.wwn);
    add("transport", &m.transport);
    add("controller", &m.controller);
    add("raid_level", &m.raid_level);
    add("driver", &m.driver);
    add("product", &m.product);
    add("family", &m.family);
    if parts.is_empty() {
        "all".into()
    } else {
        parts.join(", ")
    }
}

fn field(pattern: &Option<String>, values: &[Option<&str>]) -> bool {
    match pattern {
        None => true,
        Some(p) => values.iter().flatten().any(|v| glob::matches(p, v)),
    }
}

fn controller_of<'a>(inv: &'a Inventory, pci: Option<&str>) -> Option<&'a Controller> {
    inv.controllers
        .iter()
        .find(|c| Some(c.pci_address.as_str()) == pci)
}

pub fn drive_matches(m: &Match, d: &Disk, inv: &Inventory) -> bool {
    let ctrl = controller_of(inv, d.controller.as_deref());
    m.raid_level.is_none()
        && m.driver.is_none()
        && m.product.is_none()
        && field(&m.name, &[Some(d.name.as_str()), Some(d.dev_path.as_str())])
        && field(&m.model, &[d.model.as_deref()])
        && field(&m.vendor, &[d.vendor.as_deref()])
        && field(&m.serial, &[d.serial.as_deref()])
        && field(
            &m.wwn,
            &[d.wwn.as_deref(), d.eui64.as_deref(), d.nguid.as_deref()],
        )
        && field(&m.transport, &[Some(d.transport.as_str())])
        && field(
            &m.controller,
            &[
                d.controller.as_deref(),
                ctrl.and_then(|c| c.driver.as_deref()),
            ],
        )
        && field(&m.family, &[ctrl.and_then(family_of)])
}

fn family_of(c: &Controller) -> Option<&str> {
    c.raid.as_ref().map(|r| r.family.as_str())
}

/// Whether storcert can set a cache policy through this family's
/// interface (else a finding carries no action, and `check --fix`
/// leaves it to the vendor's tool).
fn can_set(family: &FamilyKey) -> bool {
    crate::inventory::raid::family(family).is_some_and(|f| f.cache_policy_method() != "none")
}

/// The built-in check of a RAID controller's cache, in every policy.
pub const RAID_CACHE_RULE: &str = "raid cache (built in)";

fn vd_matches(m: &Match, c: &Controller, vd: &VirtualDrive) -> bool {
    let product = c.raid.as_ref().map(|mr| mr.product.as_str());
    m.model.is_none()
        && m.vendor.is_none()
        && m.serial.is_none()
        && m.wwn.is_none()
        && m.transport.is_none()
        && m.driver.is_none()
        && field(
            &m.name,
            &[Some(vd.name.as_str()), vd.block_device.as_deref()],
        )
        && field(
            &m.controller,
            &[Some(c.pci_address.as_str()), c.driver.as_deref()],
        )
        && field(&m.raid_level, &[Some(vd.raid_level.as_str())])
        && field(&m.product, &[product])
        && field(&m.family, &[family_of(c)])
}

fn controller_matches(m: &Match, c: &Controller) -> bool {
    let product = c.raid.as_ref().map(|mr| mr.product.as_str());
    m.model.is_none()
        && m.serial.is_none()
        && m.wwn.is_none()
        && m.transport.is_none()
        && m.raid_level.is_none()
        && m.name.is_none()
        && field(&m.controller, &[Some(c.pci_address.as_str())])
        && field(&m.driver, &[c.driver.as_deref()])
        && field(&m.vendor, &[c.vendor_name.as_deref()])
        && field(&m.product, &[c.device_name.as_deref(), product])
        && field(&m.family, &[family_of(c)])
}

fn md_matches(m: &Match, a: &MdArray) -> bool {
    m.model.is_none()
        && m.vendor.is_none()
        && m.serial.is_none()
        && m.wwn.is_none()
        && m.transport.is_none()
        && m.controller.is_none()
        && m.driver.is_none()
        && m.product.is_none()
        && m.family.is_none()
        && a.level != "container"
        && field(&m.name, &[Some(a.name.as_str())])
        && field(&m.raid_level, &[Some(a.level.as_str())])
}

/// One virtual drive check: name, the winning rule's value, what the
/// controller says, and storcli's property for the fix.
type VdCheck<'a> = (
    &'a str,
    Option<(&'a String, String, Severity)>,
    Option<String>,
    &'a str,
);

/// What every kind of rule has.
trait Rule {
    fn matcher(&self) -> &Match;
    fn severity(&self) -> Option<Severity>;
}

macro_rules! rule {
    ($t:ty) => {
        impl Rule for $t {
            fn matcher(&self) -> &Match {
                &self.matches
            }
            fn severity(&self) -> Option<Severity> {
                self.severity
            }
        }
    };
}
rule!(DriveRule);
rule!(VirtualDriveRule);
rule!(ControllerRule);
rule!(MdArrayRule);

/// The last matching rule that sets a setting wins.
fn effective<'r, R: Rule, T: 'r>(
    rules: &'r [R],
    kind: &str,
    is_match: impl Fn(&R) -> bool,
    get: impl Fn(&'r R) -> Option<&'r T>,
) -> Option<(&'r T, String, Severity)> {
    rules
        .iter()
        .enumerate()
        .filter(|(_, r)| is_match(r))
        .filter_map(|(i, r)| {
            get(r).map(|v| {
                (
                    v,
                    format!("{kind}[{i}] ({})", describe(r.matcher())),
                    r.severity().unwrap_or_default(),
                )
            })
        })
        .last()
}

fn disk_label(d: &Disk) -> String {
    format!(
        "{} ({} {})",
        d.name,
        d.model.as_deref().unwrap_or("?"),
        d.serial.as_deref().unwrap_or("?")
    )
}

/// Each physical drive behind a RAID controller that was read through
/// it, as a disk the drive rules can judge: its label, and the start of
/// the controller's command that sets its cache (to which "on"/"off" is
/// added).
fn drives_behind_controllers(inv: &Inventory) -> Vec<(Disk, String, String)> {
    use crate::inventory::Transport;
    let mut out = Vec::new();
    for c in &inv.controllers {
        let Some(r) = &c.raid else { continue };
        for pd in &r.physical_drives {
            if (pd.serial.is_none() && pd.model.is_none()) || inv.kernel_sees(pd) {
                continue;
            }
            let transport = match pd.interface.as_deref().map(str::to_ascii_uppercase) {
                Some(i) if i.contains("NVME") => Transport::Nvme,
                Some(i) if i.contains("SATA") => Transport::Sata,
                Some(i) if i.contains("SAS") => Transport::Sas,
                _ => Transport::Unknown,
            };
            let mut d = Disk::unprobed("", "", transport);
            d.vendor = pd.vendor.clone();
            d.model = pd.model.clone();
            d.serial = pd.serial.clone();
            d.wwn = pd.wwn.clone();
            d.firmware = pd.firmware.clone();
            d.firmware_source = pd
                .firmware
                .as_ref()
                .map(|_| format!("{} pass-through", r.family));
            d.controller = Some(c.pci_address.clone());
            d.write_cache = pd.write_cache.clone();
            d.health = pd.health.clone();
            let label = format!(
                "{} pd {} (enclosure {} slot {}, {} {})",
                c.pci_address,
                pd.id,
                pd.enclosure,
                pd.slot,
                pd.model.as_deref().unwrap_or("?"),
                pd.serial.as_deref().unwrap_or("?")
            );
            let fix = crate::inventory::raid::drive_cache_fix(&r.family);
            out.push((d, label, fix));
        }
    }
    out
}

fn write_cache_action(inv: &Inventory, d: &Disk, on: bool) -> Option<Action> {
    use crate::inventory::Transport::*;
    match d.transport {
        Nvme | Sata | Sas | Scsi | Usb => Some(Action::WriteCache {
            disk: d.name.clone(),
            dev_path: d.dev_path.clone(),
            nvme: d.transport == Nvme,
            on,
        }),
        // A logical drive's cache is its controller's write policy.
        Raid => inv.controllers.iter().find_map(|c| {
            let mr = c.raid.as_ref().filter(|r| can_set(&r.family))?;
            let vd = mr
                .virtual_drives
                .iter()
                .find(|v| v.block_device.as_deref() == Some(d.name.as_str()))?;
            Some(Action::VirtualDrive {
                family: mr.family.clone(),
                pci: c.pci_address.clone(),
                host: mr.scsi_host,
                target: vd.id,
                dev_path: Some(d.dev_path.clone()),
                write: Some(if on { "WB" } else { "WT" }.into()),
                read: None,
                io: None,
            })
        }),
        _ => None,
    }
}

fn write_cache_fix(d: &Disk, on: bool) -> Option<String> {
    use crate::inventory::Transport::*;
    let dev = &d.dev_path;
    match d.transport {
        Sata => Some(format!("hdparm -W{} {dev}", u8::from(on))),
        Nvme => {
            let ctrl = dev
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .trim_end_matches('n');
            Some(format!("nvme set-feature {ctrl} -f 6 -v {}", u8::from(on)))
        }
        Sas | Scsi | Usb => Some(format!(
            "sdparm --{} WCE --save {dev}",
            if on { "set" } else { "clear" }
        )),
        Raid => Some(format!(
            "storcli /cX/vN set wrcache={} (the virtual drive of {dev})",
            if on { "wb" } else { "wt" }
        )),
        _ => None,
    }
}

/// The built-in check of md arrays, in every policy.
pub const MD_ARRAY_RULE: &str = "md array (built in)";

/// One md array against the `[[md_array]]` rules, and against the
/// built-in rule that a degraded or broken array is worth a warning.
fn check_md_array(
    policy: &Policy,
    a: &MdArray,
    checks: &mut usize,
    finding: &mut impl FnMut(Finding),
) {
    let label = format!(
        "{} ({}{})",
        a.name,
        a.level,
        if a.vroc { ", VROC/IMSM" } else { "" }
    );
    let disk = Some(format!("/dev/{}", a.name));
    let rules = &policy.md_arrays;
    let m = |r: &MdArrayRule| md_matches(&r.matches, a);
    let mut add = |rule: String,
                   severity: Severity,
                   check: &str,
                   expected: String,
                   actual: String,
                   fix: &str| {
        finding(Finding {
            machine: false,
            disk: disk.clone(),
            severity,
            rule,
            device: label.clone(),
            check: check.into(),
            expected,
            actual,
            fix: Some(fix.into()),
            action: None,
        })
    };
    if a.level != "container" {
        *checks += 1;
        if let Some(why) = crate::inventory::raid::md::trouble(a) {
            add(
                MD_ARRAY_RULE.into(),
                Severity::Warn,
                "array health",
                "every member in sync".into(),
                why,
                "replace or re-add the member (mdadm --manage), then let it resync",
            );
        }
    }
    if let Some((want, rule, severity)) = effective(rules, "md_array", m, |r| r.raid_level.as_ref())
    {
        *checks += 1;
        if !a.level.eq_ignore_ascii_case(want) {
            add(
                rule,
                severity,
                "RAID level",
                want.clone(),
                a.level.clone(),
                "rebuild the array at the wanted level (destroys data)",
            );
        }
    }
    if let Some((want, rule, severity)) = effective(rules, "md_array", m, |r| r.state.as_ref()) {
        *checks += 1;
        if !want.iter().any(|w| w.eq_ignore_ascii_case(&a.state)) {
            add(
                rule,
                severity,
                "array state",
                format!("one of {}", want.join(", ")),
                a.state.clone(),
                "assemble or start the array (mdadm --assemble / --run)",
            );
        }
    }
    if let Some((want, rule, severity)) = effective(rules, "md_array", m, |r| r.bitmap.as_ref()) {
        *checks += 1;
        let has = a.bitmap.as_deref().map(|b| b != "none");
        if has != Some(*want) {
            add(
                rule,
                severity,
                "write-intent bitmap",
                if *want { "present" } else { "none" }.into(),
                match a.bitmap.as_deref() {
                    None => "unknown (md did not say)".into(),
                    Some("none") => "none".into(),
                    Some(b) => format!("present ({b})"),
                },
                if *want {
                    "mdadm --grow --bitmap=internal"
                } else {
                    "mdadm --grow --bitmap=none"
                },
            );
        }
    }
    if let Some((want, rule, severity)) =
        effective(rules, "md_array", m, |r| r.consistency_policy.as_ref())
    {
        *checks += 1;
        if a.consistency_policy.as_deref() != Some(want.as_str()) {
            add(
                rule,
                severity,
                "consistency policy",
                want.clone(),
                a.consistency_policy
                    .clone()
                    .unwrap_or_else(|| "unknown".into()),
                "mdadm --grow --consistency-policy=<policy> (journal needs a journal device)",
            );
        }
    }
    if let Some((max, rule, severity)) =
        effective(rules, "md_array", m, |r| r.max_degraded.as_ref())
    {
        *checks += 1;
        // raid0 and linear have no redundancy, and md no `degraded` file.
        let degraded = a
            .degraded
            .or(matches!(a.level.as_str(), "raid0" | "linear").then_some(0));
        if degraded.is_none_or(|d| d > *max) {
            add(
                rule,
                severity,
                "missing members",
                format!("at most {max}"),
                degraded.map_or("unknown".into(), |d| d.to_string()),
                "replace the missing members (mdadm --manage --add)",
            );
        }
    }
}

pub fn check(policy: &Policy, inv: &Inventory) -> Report {
    let mut findings = Vec::new();
    let mut checks = 0usize;
    let mut finding = |f: Finding| findings.push(f);

    // The kernel's disks, then the physical drives behind RAID
    // controllers, which the same drive rules judge where they can be
    // read: write cache, firmware and health (not geometry, which is the
    // virtual drive's).
    let behind = drives_behind_controllers(inv);
    let drives = inv
        .disks
        .iter()
        .map(|d| (d, disk_label(d), Some(d.dev_path.clone()), None))
        .chain(
            behind
                .iter()
                .map(|(d, label, fix)| (d, label.clone(), None, Some(fix.clone()))),
        );
    for (d, label, disk_ref, pd_fix) in drives {
        let drive = DriveUnderCheck {
            inv,
            rules: &policy.drives,
            d,
            label,
            disk_ref,
            pd_fix,
        };
        check_drive(&drive, &mut checks, &mut finding);
    }

    for c in &inv.controllers {
        check_controller(policy, c, &mut checks, &mut finding);
    }

    for a in &inv.md_arrays {
        check_md_array(policy, a, &mut checks, &mut finding);
    }

    for (i, e) in policy.expects.iter().enumerate() {
        checks += 1;
        let n = match e.what {
            Counted::Drives => inv
                .disks
                .iter()
                .filter(|d| drive_matches(&e.matches, d, inv))
                .count(),
            Counted::Controllers => inv
                .controllers
                .iter()
                .filter(|c| controller_matches(&e.matches, c))
                .count(),
            Counted::VirtualDrives => inv
                .controllers
                .iter()
                .flat_map(|c| {
                    c.raid
                        .iter()
                        .flat_map(move |mr| mr.virtual_drives.iter().map(move |vd| (c, vd)))
                })
                .filter(|(c, vd)| vd_matches(&e.matches, c, vd))
                .count(),
        };
        let ok = e.count.is_none_or(|c| n == c)
            && e.min.is_none_or(|m| n >= m)
            && e.max.is_none_or(|m| n <= m);
        if !ok {
            let expected = match (e.count, e.min, e.max) {
                (Some(c), _, _) => format!("exactly {c}"),
                (None, Some(a), Some(b)) => format!("{a} to {b}"),
                (None, Some(a), None) => format!("at least {a}"),
                (None, None, Some(b)) => format!("at most {b}"),
                _ => String::new(),
            };
            let what = match e.what {
                Counted::Drives => "drives",
                Counted::Controllers => "controllers",
                Counted::VirtualDrives => "virtual drives",
            };
            finding(Finding {
                machine: false,
                disk: None,
                severity: e.severity.unwrap_or_default(),
                rule: format!("expect[{i}] ({})", describe(&e.matches)),
                device: "(the server)".into(),
                check: format!("number of {what}"),
                expected,
                actual: n.to_string(),
                fix: None,
                action: None,
            });
        }
    }
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let pass = !findings.iter().any(|f| f.severity == Severity::Fail);
    Report {
        schema_version: storcert_results::policy::SCHEMA_VERSION,
        checks,
        findings,
        pass,
    }
}

/// A report of the built-in hardware-reach findings alone (`run` and
/// `check` without a policy of their own to add them to).
pub fn machine_findings_alone(reach: &[Finding]) -> Report {
    let mut report = Report {
        schema_version: storcert_results::policy::SCHEMA_VERSION,
        checks: 0,
        findings: Vec::new(),
        pass: true,
    };
    add_machine_findings(&mut report, reach);
    report
}

/// The built-in hardware-reach findings (what this system cannot drive:
/// `inventory::reach`) added to a policy's report as one more check,
/// after the policy's own; their severity is the caller's, whatever the
/// policy says of machine findings.
pub fn add_machine_findings(report: &mut Report, reach: &[Finding]) {
    report.checks += 1;
    report.findings.extend(reach.iter().cloned());
    report
        .findings
        .sort_by_key(|f| (f.machine, std::cmp::Reverse(f.severity)));
    report.pass = !report.findings.iter().any(|f| f.severity == Severity::Fail);
}

/// The findings as people read them.
pub fn render(r: &Report) -> String {
    let mut t = storcert_util::table::Table::new(&[
        "SEVERITY", "DEVICE", "CHECK", "EXPECTED", "ACTUAL", "RULE",
    ]);
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Fail => "FAIL",
            Severity::Warn => "warn",
            Severity::Info => "info",
        };
        t.row(vec![
            sev.into(),
            f.device.clone(),
            f.check.clone(),
            f.expected.clone(),
            f.actual.clone(),
            f.rule.clone(),
        ]);
        if let Some(fix) = &f.fix {
            t.line(format!("      fix: {fix}"));
        }
    }
    let fails = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Fail)
        .count();
    let warns = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Warn)
        .count();
    let mut s = if r.findings.is_empty() {
        String::new()
    } else {
        t.render()
    };
    let counted = storcert_util::text::counted;
    s.push_str(&format!(
        "{}: {}, {fails} failed, {}\n",
        if r.pass { "PASS" } else { "FAIL" },
        counted(r.checks, "check"),
        counted(warns, "warning")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_version_order() {
        assert_eq!(version_cmp("GXM1103Q", "GXM1003Q"), Ordering::Greater);
        assert_eq!(version_cmp("1.10", "1.9"), Ordering::Greater);
        assert_eq!(
            version_cmp("07.719.03.00-rc1", "07.719.03.00"),
            Ordering::Greater
        );
        assert_eq!(version_cmp("2.5", "2.5"), Ordering::Equal);
        assert_eq!(version_cmp("A10", "B1"), Ordering::Less);
        assert!(version_ok(
            &Version {
                min: Some("GXM1003Q".into()),
                ..Default::default()
            },
            "GXM1003Q"
        )
        .is_ok());
        let expected = |v: Version, actual: &str| version_ok(&v, actual).unwrap_err().to_string();
        assert_eq!(
            expected(
                Version {
                    allow: Some(vec!["A".into(), "B".into()]),
                    ..Default::default()
                },
                "C"
            ),
            "one of A, B"
        );
        assert_eq!(
            expected(
                Version {
                    deny: Some(vec!["BAD1".into()]),
                    ..Default::default()
                },
                "BAD1"
            ),
            "none of BAD1"
        );
        assert_eq!(
            expected(
                Version {
                    min: Some("GXM1003Q".into()),
                    ..Default::default()
                },
                "GXM1002Q"
            ),
            "at least GXM1003Q"
        );
    }
}
