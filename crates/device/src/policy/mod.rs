//! The policy language: what a server's drives, virtual drives and
//! controllers must look like (write cache, firmware, RAID cache policy,
//! geometry, health, counts), read from TOML, and the check of an
//! inventory against it. See docs/policy.example.toml.
//!
//! Rules apply in file order; for each setting the last matching rule that
//! sets it wins, so general rules go first and exceptions after them.

pub mod check;
pub mod fix;
use storcert_util::glob;

use std::path::Path;

use serde::{Deserialize, Serialize};
pub use storcert_results::policy::Severity;

/// A policy error, one line: "p.toml:3:15: …" where a place is known,
/// "p.toml: …" for the file or the policy as a whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", match self.line {
    0 => format!("{}: {}", self.origin, self.message),
    line => format!("{}:{line}:{}: {}", self.origin, self.column, self.message),
})]
pub struct PolicyError {
    pub origin: String,
    /// 0: no place in the file.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default, rename = "drive")]
    pub drives: Vec<DriveRule>,
    #[serde(default, rename = "virtual_drive")]
    pub virtual_drives: Vec<VirtualDriveRule>,
    #[serde(default, rename = "controller")]
    pub controllers: Vec<ControllerRule>,
    #[serde(default, rename = "md_array")]
    pub md_arrays: Vec<MdArrayRule>,
    #[serde(default, rename = "expect")]
    pub expects: Vec<Expect>,
}

/// Which devices a rule is about: every given key must match (globs with
/// `*` and `?`, case-insensitive).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Match {
    pub name: Option<String>,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub transport: Option<String>,
    /// PCI address or driver name of the controller.
    pub controller: Option<String>,
    pub raid_level: Option<String>,
    pub driver: Option<String>,
    pub product: Option<String>,
    /// The RAID/HBA family that read the controller ("megaraid", "cciss",
    /// "mpi3mr", "mpt3sas").
    pub family: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    On,
    Off,
    Any,
}

/// Firmware or driver version constraints.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Version {
    /// Exactly one of these.
    pub allow: Option<Vec<String>>,
    /// None of these.
    pub deny: Option<Vec<String>>,
    /// At least this (compared in natural order: digits as numbers).
    pub min: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub min: Option<String>,
    pub max: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HealthGates {
    /// SMART / overall status must be "passed".
    pub passed: Option<bool>,
    pub max_media_errors: Option<u64>,
    pub max_percentage_used: Option<u8>,
    pub max_reallocated_sectors: Option<u64>,
    pub max_pending_sectors: Option<u64>,
    /// No NVMe critical warning bit may be set.
    pub no_critical_warning: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriveRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub severity: Option<Severity>,
    pub write_cache: Option<OnOff>,
    pub firmware: Option<Version>,
    /// Capacity in bytes or with a unit (480G, 3.84T; powers of 1024).
    pub capacity: Option<Range>,
    pub logical_sector_size: Option<u32>,
    pub physical_sector_size: Option<u32>,
    /// NVMe: the formatted LBA format index, and metadata bytes per block.
    pub lba_format: Option<u8>,
    pub metadata_bytes: Option<u16>,
    pub health: Option<HealthGates>,
    /// The safety gate may destroy matched drives (matched by serial or
    /// WWN only).
    pub destroy: Option<bool>,
    /// Spare area the drive has from the factory, in percent, for
    /// `provision`'s total.
    pub factory_spare_pct: Option<f64>,
    /// Rated endurance, for `health --diff`'s arithmetic.
    pub rated_dwpd: Option<f64>,
    pub warranty_years: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VirtualDriveRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub severity: Option<Severity>,
    pub raid_level: Option<String>,
    /// WT, WB or AWB.
    pub write: Option<String>,
    /// NORA, RA or ADRA.
    pub read: Option<String>,
    /// Direct or Cached.
    pub io: Option<String>,
    /// Default, Enabled or Disabled.
    pub disk_cache: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ControllerRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub severity: Option<Severity>,
    pub firmware: Option<Version>,
    pub driver_version: Option<Version>,
    /// The cache's battery or flash module: "healthy" (fitted, and the
    /// controller calls it good), "present" (fitted), or "any".
    pub battery: Option<BatteryWant>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BatteryWant {
    Healthy,
    Present,
    Any,
}

/// A Linux md (or Intel VROC) array: matched by `name` and `raid_level`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MdArrayRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub severity: Option<Severity>,
    pub raid_level: Option<String>,
    /// md's array_state must be one of these (clean, active, ...).
    pub state: Option<Vec<String>>,
    /// A write-intent bitmap (internal or file) is required (true) or
    /// must be absent (false).
    pub bitmap: Option<bool>,
    /// The write-hole protection: none, resync, bitmap, journal or ppl.
    pub consistency_policy: Option<String>,
    /// At most this many members missing.
    pub max_degraded: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    Drives,
    VirtualDrives,
    Controllers,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub what: Counted,
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub count: Option<usize>,
    pub min: Option<usize>,
    pub max: Option<usize>,
    pub severity: Option<Severity>,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, column)
}

impl Policy {
    /// A drive's rating: the last matching rule that sets each part.
    /// A setting of the last rule that matches a drive known only by
    /// model and serial (as snapshots and single devices are) and sets it.
    fn last_set<T>(
        &self,
        model: Option<&str>,
        serial: Option<&str>,
        get: impl Fn(&DriveRule) -> Option<T>,
    ) -> Option<T> {
        let f = |p: &Option<String>, v: Option<&str>| {
            p.as_ref()
                .is_none_or(|p| v.is_some_and(|v| glob::matches(p, v)))
        };
        self.drives
            .iter()
            .rev()
            .filter(|r| f(&r.matches.model, model) && f(&r.matches.serial, serial))
            .find_map(get)
    }

    /// A drive's rating, for `health --diff`.
    pub fn rating(
        &self,
        model: Option<&str>,
        serial: Option<&str>,
    ) -> Option<crate::health::Rating> {
        Some(crate::health::Rating {
            dwpd: self.last_set(model, serial, |r| r.rated_dwpd)?,
            warranty_years: self.last_set(model, serial, |r| r.warranty_years)?,
        })
    }

    /// A drive's factory spare (percent), for `provision`.
    pub fn factory_spare(&self, model: Option<&str>, serial: Option<&str>) -> Option<f64> {
        self.last_set(model, serial, |r| r.factory_spare_pct)
    }

    pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            PolicyError {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().replace('\n', " "),
            }
        })?;
        policy.validate(origin)?;
        Ok(policy)
    }

    pub fn from_file(path: &Path) -> Result<Policy, PolicyError> {
        let origin = path.display().to_string();
        let text = storcert_util::input::read_text(path).map_err(|e| PolicyError {
            origin: origin.clone(),
            line: 0,
            column: 0,
            message: e.to_string(),
        })?;
        Self::parse(&text, &origin)
    }

    /// Checks what TOML types cannot: words, sizes, and that a rule that
    /// allows destruction names drives by serial or WWN only.
    fn validate(&self, origin: &str) -> Result<(), PolicyError> {
        let bad = |what: String| PolicyError {
            origin: origin.to_string(),
            line: 0,
            column: 0,
            message: what,
        };
        let one_of = |v: &Option<String>, allowed: &[&str], key: &str, i: usize| match v {
            Some(x) if !allowed.iter().any(|a| a.eq_ignore_ascii_case(x)) => Err(bad(format!(
                "virtual_drive[{i}].{key}: {x:?} is not one of {}",
                allowed.join(", ")
            ))),
            _ => Ok(()),
        };
        for (i, r) in self.virtual_drives.iter().enumerate() {
            one_of(&r.write, &["WT", "WB", "AWB"], "write", i)?;
            one_of(&r.read, &["NORA", "RA", "ADRA"], "read", i)?;
            one_of(&r.io, &["Direct", "Cached"], "io", i)?;
            one_of(
                &r.disk_cache,
                &["Default", "Enabled", "Disabled"],
                "disk_cache",
                i,
            )?;
        }
        for (i, r) in self.drives.iter().enumerate() {
            if let Some(c) = &r.capacity {
                for v in [&c.min, &c.max].into_iter().flatten() {
                    storcert_util::size::parse_size(v)
                        .map_err(|e| bad(format!("drive[{i}].capacity: {e}")))?;
                }
            }
            if r.destroy == Some(true) {
                let m = &r.matches;
                let by_identity = m.serial.is_some() || m.wwn.is_some();
                let only_identity = m.name.is_none()
                    && m.model.is_none()
                    && m.vendor.is_none()
                    && m.transport.is_none()
                    && m.controller.is_none();
                let exact = [&m.serial, &m.wwn]
                    .into_iter()
                    .flatten()
                    .all(|s| !s.contains(['*', '?']));
                if !(by_identity && only_identity && exact) {
                    return Err(bad(format!(
                        "drive[{i}]: destroy = true needs a match by exact serial or wwn alone"
                    )));
                }
            }
        }
        for (i, r) in self.md_arrays.iter().enumerate() {
            let cp = &r.consistency_policy;
            if let Some(x) = cp {
                let allowed = ["none", "resync", "bitmap", "journal", "ppl"];
                if !allowed.contains(&x.as_str()) {
                    return Err(bad(format!(
                        "md_array[{i}].consistency_policy: {x:?} is not one of {}",
                        allowed.join(", ")
                    )));
                }
            }
        }
        for (i, e) in self.expects.iter().enumerate() {
            if e.count.is_none() && e.min.is_none() && e.max.is_none() {
                return Err(bad(format!("expect[{i}]: give count, min or max")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_line_and_column() {
        let text = "[[drive]]\nmatch = { model = \"X*\" }\nwrte_cache = \"on\"\n";
        let e = Policy::parse(text, "p.toml").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        assert!(
            e.message.contains("unknown field `wrte_cache`"),
            "{}",
            e.message
        );
        assert!(e.to_string().starts_with("p.toml:3:1: unknown field"));
        let e = Policy::parse("[[drive]]\nwrite_cache = \"maybe\"\n", "p.toml").unwrap_err();
        assert_eq!((e.line, e.column), (2, 15));
        assert!(
            e.message.contains("unknown variant `maybe`"),
            "{}",
            e.message
        );
        let e = Policy::parse("[[drive]\n", "p.toml").unwrap_err();
        assert_eq!(e.line, 1);
        let e = Policy::parse("[[drive]]\nmatch = { colour = \"red\" }\n", "p.toml").unwrap_err();
        assert!(
            e.message.contains("unknown field `colour`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn validation_of_words_sizes_and_destroy() {
        let e = Policy::parse("[[virtual_drive]]\nwrite = \"WX\"\n", "p").unwrap_err();
        assert_eq!(
            e.message,
            "virtual_drive[0].write: \"WX\" is not one of WT, WB, AWB"
        );
        let e = Policy::parse("[[drive]]\ncapacity = { min = \"big\" }\n", "p").unwrap_err();
        assert!(e.message.starts_with("drive[0].capacity:"));
        let e = Policy::parse(
            "[[drive]]\nmatch = { model = \"X*\" }\ndestroy = true\n",
            "p",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "drive[0]: destroy = true needs a match by exact serial or wwn alone"
        );
        assert!(Policy::parse(
            "[[drive]]\nmatch = { serial = \"S2HS*\" }\ndestroy = true\n",
            "p"
        )
        .is_err());
        assert!(Policy::parse(
            "[[drive]]\nmatch = { serial = \"S2HSNX0H400123\" }\ndestroy = true\n",
            "p"
        )
        .is_ok());
        let e = Policy::parse("[[expect]]\nwhat = \"drives\"\n", "p").unwrap_err();
        assert_eq!(e.message, "expect[0]: give count, min or max");
    }

    #[test]
    fn the_documented_example_parses() {
        let text = include_str!("../../../../docs/policy.example.toml");
        let p = Policy::parse(text, "policy.example.toml").unwrap();
        assert!(!p.drives.is_empty() && !p.virtual_drives.is_empty() && !p.expects.is_empty());
    }
}
