//! The run's results as the typed values its stages made, by path in the
//! results folder: what the run's summary, report and bundle summary are
//! made of. Nothing the run wrote is read back to make them; only a
//! resumed run reads its folder, once, as it opens, because the values of
//! its earlier starts are on disk alone.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::act::timeline::{Second, Thinned};
pub(super) use crate::bundle::contents::FileRead;
use crate::bundle::contents::{list_folder, read_files, read_folder, Contents, Holding};
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
        self.put(rel, FileRead::Config(crate::util::sha256_hex(text)));
    }

    /// A file the run removed (a stale analysis of an earlier attempt).
    pub(super) fn forget(&mut self, rel: &str) {
        self.reads.remove(rel);
    }

    /// The files at `rels` as they are on disk, read as a reader of the
    /// folder reads them: what a stage that failed midway left (a log cut
    /// short is judged, and fails, as it would be in the bundle). One that
    /// is not there is forgotten.
    pub(super) fn read_back(&mut self, dir: &Path, rels: &[String]) {
        for rel in rels {
            self.reads.remove(rel);
            if !dir.join(rel).exists() {
                continue;
            }
            let read = read_files(dir, std::slice::from_ref(rel), Holding::UNBOUNDED)
                .map_err(|e| e.to_string())
                .and_then(|mut r| r.remove(rel).ok_or_else(|| format!("{rel}: not read")));
            self.put(
                rel,
                read.unwrap_or_else(|why| FileRead::NotRead(format!("not read back: {why}"))),
            );
        }
    }

    /// Every file under the folder `under` ("act/search-sda/") as it is on
    /// disk, listed as the folder check lists it: what a stage that failed
    /// midway left there.
    pub(super) fn read_back_under(&mut self, dir: &Path, under: &str) {
        self.reads.retain(|rel, _| !rel.starts_with(under));
        let mut rels = list_folder(dir).unwrap_or_default();
        rels.retain(|rel| rel.starts_with(under));
        self.read_back(dir, &rels);
    }

    /// A finished ACT log at `log` (a path in the folder) as its run
    /// judged it, with the analysis saved beside it. Where the log could
    /// not be read back or its analysis saved, both are read as they are
    /// on disk.
    pub(super) fn judged_log(
        &mut self,
        dir: &Path,
        log: &str,
        judged: &std::result::Result<crate::results::act::LogAnalysis, crate::act::Unjudged>,
    ) {
        let analysis = crate::act::analyze::analysis_path(Path::new(log))
            .to_string_lossy()
            .into_owned();
        match judged {
            Ok(a) => {
                self.put(log, FileRead::judged(Ok(a.clone())));
                self.artefact(&analysis, a.clone().into());
            }
            Err(crate::act::Unjudged::Log { why, .. }) => {
                self.put(log, FileRead::judged(Err(why.clone())));
                self.forget(&analysis);
            }
            Err(crate::act::Unjudged::Io(_)) => self.read_back(dir, &[log.to_string(), analysis]),
        }
    }

    /// The files on disk the run holds no value of, and the values it holds
    /// of files no longer on disk: none, unless a file reached the folder
    /// by another way than the run's.
    pub(super) fn unlike_folder(&self, dir: &Path) -> Result<Vec<String>> {
        let listed = list_folder(dir).with_context(|| format!("{}", dir.display()))?;
        let on_disk: std::collections::BTreeSet<&String> = listed.iter().collect();
        let held: std::collections::BTreeSet<&String> = self.reads.keys().collect();
        Ok(on_disk
            .symmetric_difference(&held)
            .map(|p| p.to_string())
            .collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    const FAILING: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/act/verdicts/fail-5.01pct-over-1ms.log"
    );

    /// What a stage left on disk when it failed midway replaces what the
    /// run held at that path, judged as the bundle's reader judges it.
    #[test]
    fn a_file_read_back_is_judged_as_the_folder_reads_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("act")).unwrap();
        std::fs::copy(FAILING, t.path().join("act/d-1x.log")).unwrap();
        let mut made = Made::default();
        made.put("act/d-1x.log", FileRead::Other);
        made.put("act/d-1x.json", FileRead::Other);
        made.read_back(
            t.path(),
            &["act/d-1x.log".to_string(), "act/d-1x.json".to_string()],
        );
        assert!(made.unlike_folder(t.path()).unwrap().is_empty());
        let held = made.take_contents();
        let read = crate::report::contents_of_results(t.path()).unwrap();
        let verdicts = |c: &Contents| {
            c.analyses()
                .map(|(log, a)| (log, a.analysis.verdict.pass))
                .collect::<Vec<_>>()
        };
        assert_eq!(verdicts(&held), [("act/d-1x.log".to_string(), false)]);
        assert_eq!(verdicts(&held), verdicts(&read));
    }

    /// A file that reached the folder another way, or a value whose file
    /// is gone, is named.
    #[test]
    fn what_differs_from_the_folder_is_named() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("stray.log"), "x").unwrap();
        std::fs::write(t.path().join("report.html"), "x").unwrap();
        let mut made = Made::default();
        made.put("gone.json", FileRead::Other);
        assert_eq!(
            made.unlike_folder(t.path()).unwrap(),
            ["gone.json", "stray.log"]
        );
    }
}
