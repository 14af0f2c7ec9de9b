//! Health snapshots of the drives, and the diff of two with endurance
//! arithmetic.

use serde::{Deserialize, Serialize};

use super::inventory::Health;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema_version: u32,
    /// Seconds since the Unix epoch.
    pub taken_at: u64,
    /// Where in a run it was taken; `None` for one taken alone
    /// (`storcert health`). Files of older storcerts lack it; their
    /// reader gives it from the name the run gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moment: Option<Moment>,
    pub drives: Vec<DriveHealth>,
}

/// Where in a run a health snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Moment {
    /// Before the first test that writes.
    Before,
    /// After the last.
    After,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriveHealth {
    pub name: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub capacity_bytes: u64,
    pub health: Option<Health>,
    /// Bytes the host wrote over the drive's life, where it counts them
    /// (NVMe data units written; ATA attribute 241 in sectors).
    pub host_bytes_written: Option<u128>,
    pub host_bytes_written_source: Option<String>,
    /// Bytes written to the media (NVMe OCP extended SMART log), where
    /// the drive reports it.
    #[serde(default)]
    pub media_bytes_written: Option<u128>,
    /// Where a drive behind a RAID controller sits ("0000:03:00.0 pd 4"):
    /// such a drive is matched only with drives behind a controller.
    #[serde(default)]
    pub behind: Option<String>,
    /// The controller's error counters for a drive behind it.
    #[serde(default)]
    pub controller_counters: Option<ControllerCounters>,
    /// A drive behind a controller: its state there ("Online").
    #[serde(default)]
    pub state: Option<String>,
}

/// What a RAID controller counts for one of its drives (MegaRAID's
/// PD_GET_INFO).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ControllerCounters {
    pub media_errors: u32,
    pub other_errors: u32,
    pub predictive_failures: u32,
}

/// A drive's rating, from the policy.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Rating {
    pub dwpd: f64,
    pub warranty_years: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Endurance {
    pub host_bytes_written: u128,
    pub seconds: u64,
    /// At the rate of the run, 24 hours a day.
    pub bytes_per_day: f64,
    pub drive_writes_per_day: f64,
    pub rated_dwpd: Option<f64>,
    pub warranty_years: Option<f64>,
    /// Years the rated writes (DWPD × capacity × 365 × warranty) last at
    /// this rate.
    pub years_at_this_rate: Option<f64>,
    pub within_rating: Option<bool>,
    /// Media bytes over host bytes written in between, where the drive
    /// reports its media writes.
    pub write_amplification: Option<f64>,
    pub summary: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub what: String,
    pub before: String,
    pub after: String,
    /// A change that means the drive degraded during the run.
    pub degraded: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriveDiff {
    pub drive: String,
    pub changes: Vec<Change>,
    pub degraded: bool,
    pub endurance: Option<Endurance>,
    pub temperature_c: Option<(i32, i32)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diff {
    pub schema_version: u32,
    pub seconds: u64,
    pub drives: Vec<DriveDiff>,
    /// Drives in one snapshot only.
    pub unmatched: Vec<String>,
    pub degraded: bool,
}

pub const SCHEMA_VERSION: u32 = 1;

impl Diff {
    /// Failed by every drive that degraded between the two snapshots.
    pub fn judgement(&self) -> super::verdict::Judgement {
        let worse: Vec<&DriveDiff> = self.drives.iter().filter(|d| d.degraded).collect();
        let what: Vec<String> = worse
            .iter()
            .flat_map(|d| {
                d.changes
                    .iter()
                    .filter(|c| c.degraded)
                    .map(|c| format!("{} {}: {} -> {}", d.drive, c.what, c.before, c.after))
            })
            .collect();
        // A drive that degraded fails the diff whatever its own flag says;
        // a drive in one snapshot only (it went away) fails it too.
        let gone: Vec<String> = self
            .unmatched
            .iter()
            .filter(|u| u.contains("only before"))
            .map(|u| device_of(u))
            .collect();
        let degraded = self.degraded || !worse.is_empty() || !gone.is_empty();
        if !degraded && self.drives.is_empty() && self.unmatched.is_empty() {
            return super::verdict::Judgement {
                verdict: super::Verdict::Untested,
                detail: "not measured: no drive's health was tracked".into(),
                devices: Vec::new(),
                per_device: Vec::new(),
            };
        }
        super::verdict::Judgement {
            per_device: worse
                .iter()
                .map(|d| {
                    let mine: Vec<String> = d
                        .changes
                        .iter()
                        .filter(|c| c.degraded)
                        .map(|c| format!("{}: {} -> {}", c.what, c.before, c.after))
                        .collect();
                    (device_of(&d.drive), mine.join("; "))
                })
                .chain(
                    gone.iter()
                        .map(|g| (g.clone(), "went away during the run".to_string())),
                )
                .collect(),
            verdict: super::Verdict::of(!degraded),
            detail: match (what.is_empty(), degraded) {
                (false, _) => what.join("; "),
                (true, false) => "no drive degraded".into(),
                (true, true) => format!(
                    "a drive went away or degraded (in one snapshot only: {})",
                    self.unmatched.join(", ")
                ),
            },
            devices: worse
                .iter()
                .map(|d| device_of(&d.drive))
                .chain(gone.iter().cloned())
                .collect(),
        }
    }
}

/// The drive a diff's label names: "sda (MODEL SERIAL)" → "sda", so its
/// findings land on the drive's own row.
fn device_of(label: &str) -> String {
    label.split(" (").next().unwrap_or(label).to_string()
}
