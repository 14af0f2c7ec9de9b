//! The run's results as the typed values its stages made, by path in the
//! results folder: what the run's summary, report and bundle summary are
//! made of. Nothing the run wrote is read back to make them; only a
//! resumed run reads its folder, once, as it opens, because the values of
//! its earlier starts are on disk alone.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::act::timeline::{Second, Thinned};
use crate::bundle::contents::{read_folder, Contents, FileRead, Holding};
use crate::results::Artefact;

#[derive(Default)]
pub(super) struct Made {
    reads: BTreeMap<String, FileRead>,
}

impl Made {
    /// What `dir` holds already, read as `storcert report DIR` reads it.
    /// A tagged result is held as the value it is, for the stages that
    /// build on it (the health diff on the snapshot before); anything
    /// else is left for the reader to name as it would.
    pub(super) fn of_folder(dir: &Path) -> Result<Made> {
        let mut reads = read_folder(dir, Holding::UNBOUNDED).with_context(|| {
            format!("reading the results of earlier starts in {}", dir.display())
        })?;
        for read in reads.values_mut() {
            if let FileRead::Json(data) = read {
                if let Ok(a) = Artefact::from_json(data) {
                    *read = FileRead::Artefact(Box::new(a));
                }
            }
        }
        Ok(Made { reads })
    }

    /// The result at `rel`, when the run holds it as a value.
    pub(super) fn artefact_at(&self, rel: &str) -> Option<&Artefact> {
        match self.reads.get(rel)? {
            FileRead::Artefact(a) => Some(a),
            _ => None,
        }
    }

    /// The file at `rel`, as the run holds it.
    pub(super) fn put(&mut self, rel: &str, read: FileRead) {
        self.reads.insert(rel.to_string(), read);
    }

    pub(super) fn artefact(&mut self, rel: &str, a: Artefact) {
        self.put(rel, FileRead::Artefact(Box::new(a)));
    }

    /// A per-second timeline, in the points a reader of its file keeps.
    pub(super) fn timeline(&mut self, rel: &str, seconds: &[Second]) {
        let mut thinned = Thinned::default();
        for s in seconds {
            thinned.push(s.clone());
        }
        self.put(rel, FileRead::Timeline(thinned));
    }

    /// A configuration input (the profile, the policy): its digest.
    pub(super) fn configuration(&mut self, rel: &str, text: &[u8]) {
        self.put(rel, FileRead::Config(super::sha_hex(text)));
    }

    /// A file the run removed (a stale analysis of an earlier attempt).
    pub(super) fn forget(&mut self, rel: &str) {
        self.reads.remove(rel);
    }

    /// The results as the summary and report take them. Taken once, at
    /// the end: what is held moves, it is not copied.
    pub(super) fn take_contents(&mut self) -> Contents {
        Contents::from_reads(
            std::mem::take(&mut self.reads),
            crate::bundle::RESULTS_PREFIX,
        )
    }
}
