//! `storcert run`'s own records: what it tests, its stage journal and its
//! notes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One drive (or the scratch file) under test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    /// What the tests run on: the drive, or after provisioning the
    /// partition storcert made on it.
    pub path: String,
    /// The drive itself (health snapshots, verdicts), whatever `path` became.
    pub disk: String,
    /// Short, file-name-safe ("nvme0n1", "scratch").
    pub label: String,
    pub serial: Option<String>,
    pub model: Option<String>,
    /// Bytes of a scratch file (ACT's file-size-mbytes).
    pub file_size: u64,
    /// What makes it alike other drives (`Disk::likeness`): drives alike
    /// may be searched side by side. None for a scratch file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub likeness: Option<String>,
}

/// Where a stage stands in the journal.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StageState {
    Running,
    Done,
    Failed,
    /// A word this version does not know (a journal from a later one):
    /// neither done nor failed, so the stage runs again.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageRecord {
    pub id: String,
    /// A "running" stage found on start was interrupted and runs again.
    pub state: StageState,
    pub destructive: bool,
    pub attempts: u32,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Seconds of a timed stage done by earlier, interrupted attempts.
    pub interrupted_seconds: u64,
    /// Seconds done by the current attempt (updated while it runs).
    pub seconds_done: u64,
    pub note: String,
    /// The result files the stage writes, relative to the run's folder:
    /// the judge says a stage's failure once when one of them says it.
    /// Empty in journals written before stages named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// The drives (`Target::disk`, as targets.json lists them) a stage of
    /// one drive runs on: its failure is that drive's. Empty for a stage
    /// of the run as a whole; `None` in journals written before stages
    /// named them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Journal {
    pub schema_version: u32,
    pub profile_name: String,
    /// SHA-256 of the profile as resolved: a resume needs the same one.
    pub profile_digest: String,
    pub profile_source: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// How many times this run was started (1 + resumes).
    pub starts: u32,
    pub stages: Vec<StageRecord>,
    #[serde(skip)]
    pub path: PathBuf,
}

pub const TARGETS_SCHEMA: u32 = 1;
pub const NOTES_SCHEMA: u32 = 1;

/// What a run tests (`targets.json`): the other disks of the machine are
/// not part of its verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Targets {
    pub schema_version: u32,
    pub targets: Vec<Target>,
}

/// A run's notes (`run-notes.json`): what it said along the way, for the
/// report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunNotes {
    /// 0 in the notes of runs before files were tagged.
    #[serde(default)]
    pub schema_version: u32,
    pub profile: String,
    pub source: String,
    /// The delivery/lot tag (profile `tag`, `storcert.tag=`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    pub starts: u32,
    pub notes: Vec<String>,
    pub stages: Vec<StageRecord>,
}
pub const JOURNAL_SCHEMA: u32 = 1;
