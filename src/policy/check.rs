//! Checking an inventory against a policy: every setting a matching rule
//! sets becomes one check; what does not hold becomes a finding naming the
//! rule, the device, what was expected, what the device says, and how a
//! person would fix it where that is known.

use std::cmp::Ordering;

use super::*;
use crate::inventory::{Controller, Disk, Inventory, MdArray, VirtualDrive};
pub use crate::results::policy::{Action, Finding, Report};
use crate::util::glob;
use crate::util::size::parse_size;

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
fn can_set(family: &str) -> bool {
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
            let fix = match r.family.as_str() {
                "megaraid" => "storcli /cX/vN set pdcache=".to_string(),
                f => format!("set the drive cache with the {f} vendor's tool: "),
            };
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
        let is_pd = pd_fix.is_some();
        // Behind a controller, "unknown" is often all the pass-through
        // can carry (an NVMe drive's admin log, a refused MODE SENSE):
        // said, but not a failure of the machine.
        let mut finding = |mut f: Finding| {
            if is_pd && f.actual.starts_with("unknown") {
                f.severity = f.severity.min(Severity::Info);
            }
            finding(f)
        };
        let rules = &policy.drives;
        let m = |r: &DriveRule| drive_matches(&r.matches, d, inv);
        if let Some((want, rule, severity)) =
            effective(rules, "drive", m, |r| r.write_cache.as_ref())
        {
            if *want != OnOff::Any {
                checks += 1;
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
        if let Some((v, rule, severity)) = effective(rules, "drive", m, |r| r.firmware.as_ref()) {
            checks += 1;
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
        let geometry = |r: &DriveRule| !is_pd && m(r);
        if let Some((r, rule, severity)) =
            effective(rules, "drive", geometry, |r| r.capacity.as_ref())
        {
            checks += 1;
            let min = r.min.as_deref().and_then(|v| parse_size(v).ok());
            let max = r.max.as_deref().and_then(|v| parse_size(v).ok());
            if min.is_some_and(|m| d.capacity_bytes < m)
                || max.is_some_and(|m| d.capacity_bytes > m)
            {
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
                checks += 1;
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
        if let Some((g, rule, severity)) = effective(rules, "drive", m, |r| r.health.as_ref()) {
            let h = d.health.as_ref();
            let nvme = h.and_then(|h| h.nvme.as_ref());
            let ata = h.and_then(|h| h.ata.as_ref());
            let mut gate = |name: &str, bad: Option<bool>, expected: String, actual: String| {
                checks += 1;
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

    for c in &inv.controllers {
        let label = format!(
            "{} ({})",
            c.pci_address,
            c.device_name
                .as_deref()
                .or(c.driver.as_deref())
                .unwrap_or("?")
        );
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
                checks += 1;
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
        // What a battery rule can say of this controller: nothing where it
        // has no cache to protect (no RAID family, an HBA, a controller
        // with neither cache nor battery); "unknown" where its family
        // could not read it, or cannot read batteries (MPI3).
        let claimed = crate::inventory::raid::FAMILIES.iter().any(|f| f.claims(c));
        let battery_says: Option<Result<Option<&crate::inventory::Battery>, String>> = match &c.raid
        {
            None if claimed => Some(Err(format!(
                "unknown (the controller could not be read{})",
                c.errors
                    .first()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ))),
            None => None,
            Some(r) if r.family == "mpt3sas" => None,
            Some(r) if r.family == "mpi3mr" => Some(Ok(None)),
            Some(r) if r.cache_mb == 0 && r.battery.as_ref().is_none_or(|b| !b.present) => None,
            Some(r) => Some(Ok(r.battery.as_ref())),
        };
        if let (Some((want, rule, severity)), Some(says)) = (
            effective(rules, "controller", m, |r| r.battery.as_ref()),
            battery_says,
        ) {
            if *want != BatteryWant::Any {
                checks += 1;
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
        let Some(mr) = &c.raid else { continue };
        for vd in &mr.virtual_drives {
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
                checks += 1;
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
                        fix: if mr.family == "megaraid" {
                            (!storcli.is_empty())
                                .then(|| format!("storcli /cX/v{} set {storcli}={value}", vd.id))
                        } else {
                            Some(format!(
                                "set it with the controller's own tool: the {} interface storcert reads has no public way to change it",
                                mr.family
                            ))
                        },
                        action: (!storcli.is_empty()
                            && storcli != "pdcache"
                            && can_set(&mr.family))
                        .then(|| Action::VirtualDrive {
                            family: mr.family.clone(),
                            pci: c.pci_address.clone(),
                            host: mr.scsi_host,
                            target: vd.id,
                            dev_path: vd.block_device.as_ref().map(|b| format!("/dev/{b}")),
                            write: (storcli == "wrcache").then(|| want.clone()),
                            read: (storcli == "rdcache").then(|| want.clone()),
                            io: (storcli == "iopolicy").then(|| want.clone()),
                        }),
                    });
                }
            }
            // Built in, whatever the rules: a virtual drive configured
            // write-back that runs write-through is a controller that fell
            // back (the cache is unprotected), and every figure measured
            // on it is write-through's.
            if let Some(r) = reading {
                checks += 1;
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
                        actual: format!(
                            "WT ({source}): the controller fell back to write-through; {why}"
                        ),
                        fix: (mr.family == "megaraid").then(|| {
                            "check the battery or CacheVault: storcli /cX/bbu show, /cX/cv show"
                                .to_string()
                        }),
                        action: None,
                    });
                }
            }
        }
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
        schema_version: crate::results::policy::SCHEMA_VERSION,
        checks,
        findings,
        pass,
    }
}

/// The findings as people read them.
pub fn render(r: &Report) -> String {
    let mut t = crate::output::table::Table::new(&[
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
    s.push_str(&format!(
        "{}: {} checks, {fails} failed, {warns} warnings\n",
        if r.pass { "PASS" } else { "FAIL" },
        r.checks
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
