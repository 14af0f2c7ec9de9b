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
    /// A MegaRAID virtual drive's cache policy (None: leave as it is).
    VirtualDrive {
        pci: String,
        host: u32,
        target: u8,
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
        super::verdict::Judgement {
            // The findings decide, whatever the report's own flag says.
            verdict: super::Verdict::of(self.pass && fails.is_empty()),
            detail: if fails.is_empty() {
                format!("{} checks passed", self.checks)
            } else {
                fails
                    .iter()
                    .map(|f| {
                        format!(
                            "{} {}: expected {}, found {}",
                            f.device, f.check, f.expected, f.actual
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            devices: fails.iter().map(|f| f.device.clone()).collect(),
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
