//! A running machine's heartbeat: what `storcert run` sends the collector
//! every progress interval and at every stage change, for the live board.
//! Best-effort and small; the signed bundle stays the record.

use serde::{Deserialize, Serialize};

use super::summary::Machine;
use super::Verdict;

pub const SCHEMA_VERSION: u32 = 1;

/// The largest heartbeat a collector reads, bytes.
pub const MAX_BYTES: usize = 64 << 10;
/// The most progress entries and errors one carries, and their lengths.
pub const MAX_ENTRIES: usize = 64;
pub const MAX_ERRORS: usize = 16;
pub const MAX_TEXT: usize = 300;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    /// Its bundle is made (`bundle` names it).
    Finished,
    /// It stopped before a bundle (could not run, or interrupted).
    Stopped,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Stopped => "stopped",
        }
    }
}

/// One drive's stage in progress ("act storage 3x nvme0n1": 1800 of 3600 s).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Progress {
    pub key: String,
    pub done: u64,
    pub total: u64,
    /// "s" for a timed stage, "B" for bytes.
    pub unit: String,
    /// The live % of reads over 1 ms, for an ACT stage.
    pub pct_over_1ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Heartbeat {
    pub schema_version: u32,
    /// The run: its bundle's name without ".tar.zst", the same on every
    /// start of a resumed run.
    pub run_id: String,
    /// Counts up over the run's heartbeats (across resumes too: it starts
    /// from the time): a collector keeps the highest and refuses older
    /// ones, so a replayed heartbeat cannot roll the board back.
    pub seq: u64,
    /// The machine's clock (which may be wrong: the board shows the
    /// collector's time of receipt).
    pub sent_at: String,
    pub machine: Machine,
    pub profile: String,
    pub tag: Option<String>,
    pub state: RunState,
    /// The stage running now.
    pub stage: Option<String>,
    pub stages_done: u32,
    pub stages_failed: Vec<String>,
    pub progress: Vec<Progress>,
    /// The worst live % > 1 ms of the ACT stages running now.
    pub live_pct_over_1ms: Option<f64>,
    /// `fail` once a stage failed, else `pass` so far (`untested` before
    /// any test ran); the bundle's verdict when finished.
    pub verdict: Verdict,
    pub errors: Vec<String>,
    /// Seconds left by the profile's timed stages, from now.
    pub eta_s: Option<u64>,
    /// Seconds between heartbeats.
    pub interval_s: u64,
    /// The bundle's name, once made.
    pub bundle: Option<String>,
}

/// A run id is a bundle name's stem: letters, digits, `.`, `_`, `-`, `+`.
pub fn valid_run_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 190
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
}
