//! The stage journal: which stages of a run are done, written durably
//! (temporary + fsync + rename) before and after every stage, so a run
//! killed or powered off continues from the last finished stage and never
//! repeats a destructive stage that already finished.

use std::path::Path;

pub use crate::results::run::{Journal, StageRecord};
use crate::results::Artefact;
use crate::util::fs::write_durably;

pub const FILE: &str = "journal.json";

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Journal {
    pub fn new(dir: &Path, profile_name: &str, digest: &str, source: &str) -> Journal {
        Journal {
            schema_version: crate::results::run::JOURNAL_SCHEMA,
            profile_name: profile_name.into(),
            profile_digest: digest.into(),
            profile_source: source.into(),
            started_at: now(),
            finished_at: None,
            starts: 1,
            stages: Vec::new(),
            path: dir.join(FILE),
        }
    }

    pub fn load(dir: &Path) -> Result<Option<Journal>, String> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let mut j: Journal = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                j.path = path;
                Ok(Some(j))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    pub fn save(&self) -> Result<(), String> {
        write_durably(&self.path, Artefact::from(self.clone()).to_json())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    pub fn get(&self, id: &str) -> Option<&StageRecord> {
        self.stages.iter().find(|s| s.id == id)
    }

    pub fn is_done(&self, id: &str) -> bool {
        self.get(id).is_some_and(|s| s.state == "done")
    }

    /// Marks a stage started (again); when an earlier attempt was
    /// interrupted, returns the seconds it had done (as last journalled).
    pub fn start(&mut self, id: &str, destructive: bool) -> Result<Option<u64>, String> {
        let mut interrupted = false;
        let rec = match self.stages.iter_mut().find(|s| s.id == id) {
            Some(r) => {
                if r.state == "running" {
                    r.interrupted_seconds += r.seconds_done;
                    interrupted = true;
                }
                r
            }
            None => {
                self.stages.push(StageRecord {
                    id: id.into(),
                    state: String::new(),
                    destructive,
                    attempts: 0,
                    started_at: String::new(),
                    finished_at: None,
                    interrupted_seconds: 0,
                    seconds_done: 0,
                    note: String::new(),
                });
                self.stages.last_mut().expect("just pushed")
            }
        };
        rec.state = "running".into();
        rec.attempts += 1;
        rec.started_at = now();
        rec.seconds_done = 0;
        let earlier = interrupted.then_some(rec.interrupted_seconds);
        self.save()?;
        Ok(earlier)
    }

    pub fn progress(&mut self, id: &str, seconds: u64) -> Result<(), String> {
        if let Some(r) = self.stages.iter_mut().find(|s| s.id == id) {
            r.seconds_done = seconds;
        }
        self.save()
    }

    pub fn finish(&mut self, id: &str, ok: bool, note: &str) -> Result<(), String> {
        if let Some(r) = self.stages.iter_mut().find(|s| s.id == id) {
            r.state = if ok { "done" } else { "failed" }.into();
            r.finished_at = Some(now());
            r.note = note.into();
        }
        self.save()
    }
}
