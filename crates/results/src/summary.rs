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

/// One test's verdict: pass, fail, or untested (a test that measured
/// nothing, as a health stage that found no drive to track: neither a
/// pass nor a failure).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(from = "TestVerdictJson", into = "TestVerdictJson")]
pub struct TestVerdict {
    /// "act-storage 10x (results/act-10x.log)", "stream (results/stream.json)", ...
    pub name: String,
    /// `Pass`, `Fail` or `Untested`.
    pub verdict: super::Verdict,
    pub detail: String,
    pub devices: Vec<String>,
}

/// A test's verdict as summary.json writes it, as every bundle signed so
/// far has it: `pass`, and `measured` where it is false.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestVerdictJson {
    name: String,
    pass: bool,
    detail: String,
    devices: Vec<String>,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    measured: bool,
}

impl From<TestVerdictJson> for TestVerdict {
    fn from(t: TestVerdictJson) -> TestVerdict {
        use super::Verdict;
        TestVerdict {
            name: t.name,
            verdict: match (t.pass, t.measured) {
                (true, _) => Verdict::Pass,
                (false, true) => Verdict::Fail,
                (false, false) => Verdict::Untested,
            },
            detail: t.detail,
            devices: t.devices,
        }
    }
}

impl From<TestVerdict> for TestVerdictJson {
    fn from(t: TestVerdict) -> TestVerdictJson {
        use super::Verdict;
        TestVerdictJson {
            name: t.name,
            pass: t.verdict == Verdict::Pass,
            detail: t.detail,
            devices: t.devices,
            measured: t.verdict != Verdict::Untested,
        }
    }
}

impl TestVerdict {
    /// Whether it measured something (passed or failed).
    pub fn measured(&self) -> bool {
        self.verdict != super::Verdict::Untested
    }
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

impl Summary {
    /// The most a summary's typed values may take by `typed_estimate`: a
    /// 2,400-drive machine's summary makes some 12 MiB; the worst shape
    /// at this bound (a list of one-letter reasons) some 22 MB.
    pub const MAX_TYPED: u64 = 32 << 20;

    /// A summary from a bundle's bytes, its typed values bounded before
    /// they are made (a 16 MiB list of one-letter reasons took `bundle
    /// verify` to 277 MiB).
    pub fn from_json(data: &[u8]) -> Result<Summary, serde_json::Error> {
        bounded_json(data, Self::MAX_TYPED, "summary")
    }
}

/// `data` read as a `T` if `typed_estimate` says its values take at most
/// `max` bytes; else an error naming `what` and the bound.
pub fn bounded_json<T: serde::de::DeserializeOwned>(
    data: &[u8],
    max: u64,
    what: &str,
) -> Result<T, serde_json::Error> {
    let n = super::typed_estimate(data)?;
    if n > max {
        return Err(<serde_json::Error as serde::de::Error>::custom(format!(
            "the {what} makes more values than a reader holds ({} MiB)",
            max >> 20
        )));
    }
    serde_json::from_slice(data)
}
