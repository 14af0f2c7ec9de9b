//! A policy check's report: every finding with what was expected and found.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    #[default]
    Fail,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    /// The rule that set the expectation: "drive[2]" (and its match).
    pub rule: String,
    pub device: String,
    /// The block device the finding is about ("/dev/sda"); none for a
    /// controller or the server.
    #[serde(default)]
    pub disk: Option<String>,
    /// Not about a drive under test (another disk, a controller, the
    /// server): reported apart, and a warning unless the run's profile
    /// says machine findings fail it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub machine: bool,
    pub check: String,
    pub expected: String,
    pub actual: String,
    pub fix: Option<String>,
    /// What `check --fix` can do about it, where it can.
    #[serde(skip)]
    pub action: Option<Action>,
}

/// A setting storcert itself can change without touching data.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The drive's volatile write cache.
    WriteCache {
        disk: String,
        dev_path: String,
        nvme: bool,
        on: bool,
    },
    /// A RAID virtual drive's cache policy (None: leave as it is), set by
    /// its controller's family.
    VirtualDrive {
        family: crate::inventory::FamilyKey,
        pci: String,
        host: u32,
        target: u32,
        /// The virtual drive's block device, for the safety gate.
        dev_path: Option<String>,
        write: Option<String>,
        read: Option<String>,
        io: Option<String>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub checks: usize,
    pub findings: Vec<Finding>,
    pub pass: bool,
}

pub const SCHEMA_VERSION: u32 = 1;

impl Report {
    /// Failed by every finding of severity `fail`; the devices are theirs.
    pub fn judgement(&self) -> super::verdict::Judgement {
        let fails: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Fail)
            .collect();
        let line = |f: &&Finding| {
            format!(
                "{} {}: expected {}, found {}",
                f.device, f.check, f.expected, f.actual
            )
        };
        let machine = self.findings.iter().filter(|f| f.machine).count();
        let mut devices: Vec<String> = Vec::new();
        let mut per_device: Vec<(String, String)> = Vec::new();
        for f in &fails {
            // A drive's row names the drive, not its label.
            let dev = f.disk.clone().unwrap_or_else(|| f.device.clone());
            match per_device.iter_mut().find(|(d, _)| *d == dev) {
                Some((_, why)) => {
                    why.push_str("; ");
                    why.push_str(&line(f));
                }
                None => {
                    devices.push(dev.clone());
                    per_device.push((dev, line(f)));
                }
            }
        }
        super::verdict::Judgement {
            // The findings decide, whatever the report's own flag says.
            verdict: super::Verdict::of(self.pass && fails.is_empty()),
            detail: if fails.is_empty() {
                let mut s = format!(
                    "{} passed",
                    storcert_util::text::counted(self.checks, "check")
                );
                if machine > 0 {
                    s.push_str(&format!(
                        "; {machine} finding(s) about the machine, not the drives under test (warnings)"
                    ));
                }
                s
            } else {
                fails.iter().map(line).collect::<Vec<_>>().join("; ")
            },
            devices,
            per_device,
        }
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
