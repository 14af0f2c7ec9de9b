//! A bundle's verdict summary (`summary.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub vendor: Option<String>,
    pub product: Option<String>,
    pub serial: Option<String>,
    pub uuid: Option<String>,
    pub hostname: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriveVerdict {
    pub device: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub firmware: Option<String>,
    /// `pass`, `fail` or `untested`.
    pub verdict: super::Verdict,
    pub reasons: Vec<String>,
    /// The highest ACT load (Nx) this drive passed in this bundle.
    pub act_load_passed: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TestVerdict {
    /// "act-storage 10x (results/act-10x.log)", "stream (results/stream.json)", ...
    pub name: String,
    pub pass: bool,
    pub detail: String,
    pub devices: Vec<String>,
    /// False for a test that measured nothing (a health stage that found
    /// no drive to track): neither a pass nor a failure.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub measured: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub schema_version: u32,
    /// `pass`, `fail` or `incomplete` (no test result to judge).
    pub verdict: super::Verdict,
    pub reasons: Vec<String>,
    pub machine: Machine,
    pub drives: Vec<DriveVerdict>,
    pub tests: Vec<TestVerdict>,
    /// Highest ACT load passed per device set ("/dev/nvme0n1": 12.0).
    pub loads_reached: BTreeMap<String, f64>,
    /// Inputs that set the expectations (policy, configs): path → SHA-256.
    pub configuration: BTreeMap<String, String>,
}
