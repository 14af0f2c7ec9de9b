//! Verdicts as a type: the words in the JSON stay those of the bundle
//! format ("pass", "fail", …), but code compares enums, never strings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// A drive no test named.
    #[default]
    Untested,
    /// A bundle or run with no test result to judge.
    Incomplete,
    /// A run stopped by a signal; run again to continue.
    Interrupted,
    /// A run that could not start (bad setup, nothing to test).
    #[serde(rename = "could not run")]
    CouldNotRun,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Untested => "untested",
            Verdict::Incomplete => "incomplete",
            Verdict::Interrupted => "interrupted",
            Verdict::CouldNotRun => "could not run",
        }
    }

    pub fn of(pass: bool) -> Verdict {
        if pass {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one artefact says about the drives it names: its verdict, why in
/// one line, and the devices it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub detail: String,
    pub devices: Vec<String>,
    /// Each device's own part of `detail`, where the artefact can tell
    /// (a drive's row then shows only its own findings).
    pub per_device: Vec<(String, String)>,
}
