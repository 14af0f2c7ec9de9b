//! The stage journal: which stages of a run are done, written durably
//! (temporary + fsync + rename) before and after every stage, so a run
//! killed or powered off continues from the last finished stage and never
//! repeats a destructive stage that already finished.

use std::path::{Path, PathBuf};

pub use crate::results::run::{Journal, StageRecord, StageState};
use crate::results::Artefact;
use crate::util::fs::write_durably;

pub const FILE: &str = "journal.json";

/// Why the journal could not be read or written, naming its file. The
/// cause is printed in the message, not chained as a `source`, so a `{:#}`
/// chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{}: {err}", path.display())]
    Parse {
        path: PathBuf,
        err: serde_json::Error,
    },
}

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// What the run does with its journal: the record is an artefact of the
/// results layer; keeping it on disk is the run's.
pub trait JournalFile: Sized {
    fn new(dir: &Path, profile_name: &str, digest: &str, source: &str) -> Self;
    fn load(dir: &Path) -> Result<Option<Self>, JournalError>;
    fn save(&self) -> Result<(), JournalError>;
    fn get(&self, id: &str) -> Option<&StageRecord>;
    fn is_done(&self, id: &str) -> bool;
    /// Marks a stage started (again) on `devices` (none: the run as a
    /// whole); when an earlier attempt was interrupted, returns the
    /// seconds it had done (as last journalled).
    fn start(
        &mut self,
        id: &str,
        destructive: bool,
        devices: &[String],
    ) -> Result<Option<u64>, JournalError>;
    fn progress(&mut self, id: &str, seconds: u64) -> Result<(), JournalError>;
    fn finish(&mut self, id: &str, ok: bool, note: &str) -> Result<(), JournalError>;
    /// Names the result files a running stage writes (kept, not saved
    /// until the stage's next record).
    fn produces(&mut self, id: &str, outputs: &[String]);
}

impl JournalFile for Journal {
    fn new(dir: &Path, profile_name: &str, digest: &str, source: &str) -> Journal {
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

    fn load(dir: &Path) -> Result<Option<Journal>, JournalError> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Journal>(&bytes) {
                Ok(mut j) => {
                    j.path = path;
                    Ok(Some(j))
                }
                Err(err) => Err(JournalError::Parse { path, err }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(JournalError::Io { path, err }),
        }
    }

    fn save(&self) -> Result<(), JournalError> {
        write_durably(&self.path, Artefact::from(self.clone()).to_json()).map_err(|err| {
            JournalError::Io {
                path: self.path.clone(),
                err,
            }
        })
    }

    fn get(&self, id: &str) -> Option<&StageRecord> {
        self.stages.iter().find(|s| s.id == id)
    }

    fn is_done(&self, id: &str) -> bool {
        self.get(id).is_some_and(|s| s.state == StageState::Done)
    }

    fn start(
        &mut self,
        id: &str,
        destructive: bool,
        devices: &[String],
    ) -> Result<Option<u64>, JournalError> {
        let mut interrupted = false;
        let rec = match self.stages.iter_mut().find(|s| s.id == id) {
            Some(r) => {
                if r.state == StageState::Running {
                    r.interrupted_seconds += r.seconds_done;
                    interrupted = true;
                }
                r
            }
            None => {
                self.stages.push(StageRecord {
                    id: id.into(),
                    state: StageState::Running,
                    destructive,
                    attempts: 0,
                    started_at: String::new(),
                    finished_at: None,
                    interrupted_seconds: 0,
                    seconds_done: 0,
                    note: String::new(),
                    outputs: Vec::new(),
                    devices: None,
                });
                self.stages.last_mut().expect("just pushed")
            }
        };
        rec.state = StageState::Running;
        rec.attempts += 1;
        rec.started_at = now();
        rec.seconds_done = 0;
        rec.outputs.clear();
        rec.devices = Some(devices.to_vec());
        let earlier = interrupted.then_some(rec.interrupted_seconds);
        self.save()?;
        Ok(earlier)
    }

    fn progress(&mut self, id: &str, seconds: u64) -> Result<(), JournalError> {
        if let Some(r) = self.stages.iter_mut().find(|s| s.id == id) {
            r.seconds_done = seconds;
        }
        self.save()
    }

    fn finish(&mut self, id: &str, ok: bool, note: &str) -> Result<(), JournalError> {
        if let Some(r) = self.stages.iter_mut().find(|s| s.id == id) {
            r.state = if ok {
                StageState::Done
            } else {
                StageState::Failed
            };
            r.finished_at = Some(now());
            r.note = note.into();
        }
        self.save()
    }

    fn produces(&mut self, id: &str, outputs: &[String]) {
        if let Some(r) = self.stages.iter_mut().find(|s| s.id == id) {
            for o in outputs {
                if !r.outputs.contains(o) {
                    r.outputs.push(o.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_journal_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, "{ torn").unwrap();
        let e = Journal::load(dir.path()).unwrap_err();
        assert!(matches!(e, JournalError::Parse { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("{}: ", path.display())),
            "{e}"
        );

        let mut j = Journal::new(&dir.path().join("gone"), "p", "d", "s");
        let e = j.start("stage", false, &[]).unwrap_err();
        assert!(matches!(e, JournalError::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("gone/journal.json: "), "{e}");
    }

    #[test]
    fn a_saved_journal_loads_again() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Journal::load(dir.path()).unwrap().is_none());
        let mut j = Journal::new(dir.path(), "p", "d", "s");
        j.start("stage", true, &[]).unwrap();
        j.finish("stage", true, "ok").unwrap();
        let again = Journal::load(dir.path()).unwrap().unwrap();
        assert_eq!(again, j);
        assert!(again.is_done("stage"));
    }
}
