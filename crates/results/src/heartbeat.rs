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
#[serde(deny_unknown_fields)]
pub struct Progress {
    pub key: String,
    pub done: u64,
    pub total: u64,
    /// "s" for a timed stage, "B" for bytes.
    pub unit: String,
    /// The live % of reads over 1 ms, for an ACT stage.
    pub pct_over_1ms: Option<f64>,
}

/// A newer schema may add fields (a collector refuses a schema newer than
/// it reads before it parses one); within a schema, a field this build
/// does not know is a forged heartbeat's padding, refused.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
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

/// The longest a machine's identity string may be, in characters: DMI
/// strings and host names are far shorter (a Linux host name is at most
/// 64 bytes); a longer one is not a machine's.
pub const MAX_IDENTITY: usize = 128;
/// The longest profile, stage, progress key or bundle name.
pub const MAX_NAME: usize = 200;
/// The longest tag (`storcert.tag=` allows 64).
pub const MAX_TAG: usize = 64;
/// The longest progress unit ("s", "B") and time stamp.
pub const MAX_UNIT: usize = 8;
pub const MAX_TIME: usize = 64;
/// The largest count a progress entry may hold (2^53: exact as a float).
pub const MAX_COUNT: u64 = 1 << 53;
/// The longest ETA and interval a heartbeat may claim (ten years, a day).
pub const MAX_ETA_S: u64 = 10 * 365 * 86_400;
pub const MAX_INTERVAL_S: u64 = 86_400;
/// More stages than any profile holds.
pub const MAX_STAGES: u32 = 1_000_000;

impl Heartbeat {
    /// Every string field with its name and its limit, in characters.
    fn fields_mut(&mut self) -> Vec<(String, &mut String, usize)> {
        let mut v: Vec<(String, &mut String, usize)> = Vec::new();
        let m = &mut self.machine;
        for (name, field) in [
            ("machine.vendor", &mut m.vendor),
            ("machine.product", &mut m.product),
            ("machine.serial", &mut m.serial),
            ("machine.uuid", &mut m.uuid),
            ("machine.hostname", &mut m.hostname),
        ] {
            if let Some(s) = field {
                v.push((name.into(), s, MAX_IDENTITY));
            }
        }
        v.push(("sent_at".into(), &mut self.sent_at, MAX_TIME));
        v.push(("profile".into(), &mut self.profile, MAX_NAME));
        if let Some(t) = &mut self.tag {
            v.push(("tag".into(), t, MAX_TAG));
        }
        if let Some(s) = &mut self.stage {
            v.push(("stage".into(), s, MAX_NAME));
        }
        if let Some(b) = &mut self.bundle {
            v.push(("bundle".into(), b, MAX_NAME));
        }
        for (n, s) in self.stages_failed.iter_mut().enumerate() {
            v.push((format!("stages_failed[{n}]"), s, MAX_NAME));
        }
        for (n, p) in self.progress.iter_mut().enumerate() {
            v.push((format!("progress[{n}].key"), &mut p.key, MAX_NAME));
            v.push((format!("progress[{n}].unit"), &mut p.unit, MAX_UNIT));
        }
        for (n, e) in self.errors.iter_mut().enumerate() {
            v.push((format!("errors[{n}]"), e, MAX_TEXT));
        }
        v
    }

    /// Cuts every string to its limit (what a run does before it signs:
    /// a machine with an odd DMI string still shows on the board) and
    /// clamps every number to its domain.
    pub fn fit(&mut self) {
        for (_, s, max) in self.fields_mut() {
            if let Some((at, _)) = s.char_indices().nth(max) {
                s.truncate(at);
            }
        }
        self.progress.truncate(MAX_ENTRIES);
        self.stages_failed.truncate(MAX_ENTRIES);
        self.errors.truncate(MAX_ERRORS);
        self.clamp();
    }

    /// The first string over its limit, named, with its length: a
    /// collector refuses such a heartbeat (a run cuts its own, so only a
    /// forged one is over).
    pub fn oversized(&mut self) -> Option<String> {
        self.fields_mut().into_iter().find_map(|(name, s, max)| {
            let n = s.chars().count();
            (n > max).then(|| format!("{name} is {n} characters; at most {max}"))
        })
    }

    /// Numbers brought into their domain: percentages 0–100, progress
    /// done ≤ total ≤ 2^53, an ETA of ten years at most, an interval of
    /// 1 s to a day. What the board shows is then never a 300-digit number
    /// or a progress over 100%.
    pub fn clamp(&mut self) {
        let pct = |x: &mut Option<f64>| {
            *x = x.filter(|v| v.is_finite()).map(|v| v.clamp(0.0, 100.0));
        };
        pct(&mut self.live_pct_over_1ms);
        for p in &mut self.progress {
            pct(&mut p.pct_over_1ms);
            p.total = p.total.min(MAX_COUNT);
            p.done = p.done.min(p.total);
        }
        self.eta_s = self.eta_s.map(|e| e.min(MAX_ETA_S));
        self.interval_s = self.interval_s.clamp(1, MAX_INTERVAL_S);
        self.stages_done = self.stages_done.min(MAX_STAGES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb() -> Heartbeat {
        Heartbeat {
            schema_version: 1,
            run_id: "r".into(),
            seq: 1,
            sent_at: "2026-12-01T00:00:00Z".into(),
            machine: Machine {
                hostname: Some("h".repeat(60_000)),
                ..Machine::default()
            },
            profile: "p".into(),
            tag: Some("t".repeat(65)),
            state: RunState::Running,
            stage: Some("s".into()),
            stages_done: u32::MAX,
            stages_failed: vec![],
            progress: vec![Progress {
                key: "k".into(),
                done: u64::MAX,
                total: 10_000_000_000_000_000_000,
                unit: "s".into(),
                pct_over_1ms: Some(1e308),
            }],
            live_pct_over_1ms: Some(1e308),
            verdict: Verdict::Pass,
            errors: vec!["é".repeat(MAX_TEXT + 1)],
            eta_s: Some(u64::MAX),
            interval_s: 0,
            bundle: None,
        }
    }

    #[test]
    fn an_oversized_field_is_named_and_a_fitted_heartbeat_is_within_every_bound() {
        let mut h = hb();
        let why = h.oversized().unwrap();
        assert_eq!(why, "machine.hostname is 60000 characters; at most 128");
        h.machine.hostname = Some("h".into());
        assert!(h.oversized().unwrap().starts_with("tag is 65"));
        let mut h = hb();
        h.fit();
        assert_eq!(h.oversized(), None);
        assert_eq!(h.machine.hostname.as_ref().unwrap().len(), MAX_IDENTITY);
        // Cut on a character boundary.
        assert_eq!(h.errors[0].chars().count(), MAX_TEXT);
        assert_eq!(h.live_pct_over_1ms, Some(100.0));
        assert_eq!(h.progress[0].pct_over_1ms, Some(100.0));
        assert_eq!(h.progress[0].total, MAX_COUNT);
        assert_eq!(h.progress[0].done, MAX_COUNT);
        assert_eq!(h.eta_s, Some(MAX_ETA_S));
        assert_eq!(h.interval_s, 1);
        assert_eq!(h.stages_done, MAX_STAGES);
        let mut neg = hb();
        neg.live_pct_over_1ms = Some(-3.0);
        neg.clamp();
        assert_eq!(neg.live_pct_over_1ms, Some(0.0));
    }
}
