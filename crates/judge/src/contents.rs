//! The typed contents of a results folder or a bundle: every results file
//! read as the artefact its `"artefact"` tag names, which the summary and
//! the report fold over. Nothing here works out what a file is from its
//! JSON keys.
//!
//! Files written before artefacts were tagged (bundles of storcert 0.1
//! before the results model) carry no tag. Those are known by the names
//! `storcert run` gave them (`stream.json`, `act/search-*.json`, …), and
//! an ACT log with no saved analysis beside it is analysed here, once,
//! with the same function a run uses right after the log is written.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use crate::act::analyze::{self, AnalyzeError, LogReader};
use crate::act::timeline::{Second, Thinned, POINTS};
use storcert_results::act::{LogAnalysis, Prep, PrepResult};
use storcert_results::health::Moment;
use storcert_results::run::{Target, Targets};
use storcert_results::{Artefact, ReadError};

/// A log as it was judged in passing, by its path: the judge's analysis or
/// why there is none.
type JudgedLog = (String, Result<Box<LogAnalysis>, AnalyzeError>);

/// One results file that was read as an artefact.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its path in the results folder.
    pub path: String,
    pub artefact: Artefact,
}

#[derive(Debug, Default)]
pub struct Contents {
    /// What the paths below sit under in a bundle ("results/", or none).
    pub prefix: String,
    pub items: Vec<Item>,
    /// Per-second timelines of ACT runs, thinned to a bounded number of
    /// points, by the path of their analysis.
    pub timelines: BTreeMap<String, Thinned>,
    /// Configuration inputs (`*.toml`, `*.conf`): path (with the prefix)
    /// → SHA-256.
    pub configuration: BTreeMap<String, String>,
    /// Results files that could not be read, and why: never judged as
    /// passing by being left out. The first `NAMED_UNREADABLE` of them.
    pub unreadable: Vec<(String, String)>,
    /// How many more could not be read: counted, not named.
    pub more_unreadable: usize,
}

/// The unreadable files named one by one: each is a failing test of the
/// summary and a row of the page, and a hostile bundle may hold 100,000.
pub const NAMED_UNREADABLE: usize = 1000;

/// "results/act/x.log" → ("results/act/", "x.log").
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    }
}

/// What the contents need of one results file, taken as the file passes
/// (a bundle's files are read as a stream, never held whole: a 24-hour log
/// of many drives is large, and a bundle may be hostile):
pub enum FileRead {
    /// Configuration (`*.toml`, `*.conf`): its SHA-256.
    Config(String),
    /// An ACT log (a line "ACT version" anywhere, as act_latency.py looks
    /// that far too, so blank lines in front cannot hide a log from
    /// judgement), judged as it passed; the timeline is named later.
    /// (An analysis is large and boxed; a log that could not be judged,
    /// which a hostile bundle may hold 100,000 of, takes its error alone.)
    Log(Result<Box<LogAnalysis>, AnalyzeError>),
    /// A JSON file, whole.
    Json(Vec<u8>),
    /// A per-second timeline (`*.jsonl`), read whole into a bounded
    /// number of points.
    Timeline(Thinned),
    /// A file not read, and why (beyond what a reader of bundles holds).
    NotRead(String),
    /// An artefact as the run that wrote it holds it: never read back.
    Artefact(Box<Artefact>),
    /// Anything else.
    Other,
}

/// How much of a bundle's results a reader holds in memory at most: the
/// JSON artefacts (parsed, they are most of what a report holds) and the
/// timelines' points. A log is judged in passing whatever its length, and
/// a timeline is read whole whatever its length, into at most
/// `act::timeline::POINTS` points (a point is a second, or neighbouring
/// seconds merged), so neither memory nor the plots grow with a run's
/// length.
#[derive(Debug, Clone, Copy)]
pub struct Holding {
    pub json_bytes: u64,
    /// What the JSON's typed values may take, by `typed_estimate`: its
    /// bytes alone do not bound them.
    pub json_typed: u64,
    /// The timelines' points held in all (the name is from when a point
    /// was always a second): a timeline takes `POINTS` of them while it is
    /// read and keeps what it filled. One that finds fewer left is named
    /// as not read.
    pub seconds: usize,
    /// Whether timelines are read at all: a reader that plots none (a
    /// summary, a comparison) passes over them without a word.
    pub timelines: bool,
    /// The ACT logs judged and kept: each is an analysis in memory, a
    /// test of the summary and a section of the page.
    pub logs: usize,
    /// What the kept analyses may take, by `typed_estimate` of their
    /// JSON: a log's analysis grows with its slices and drives (a log of
    /// 128 drives and 1,500 hourly slices makes one of 400 KB), which its
    /// count alone does not bound. A log past either bound is named as
    /// not judged: it cannot pass by being left out.
    pub analyses: u64,
    /// The reasons kept whole (cut to `CELL_CHARS`) of logs that could not
    /// be judged: an error quotes the log, and a hostile bundle may hold
    /// 100,000 logs of a megabyte. Past them a log's reason is one
    /// sentence saying so; it is still named and still fails.
    pub reasons: usize,
}

impl Holding {
    /// For a bundle from elsewhere: memory bounded whatever it holds. The
    /// points of 64 timelines (a run of 16 drives at four loads), some
    /// 9 MB, and as many plots on the page.
    pub const BUNDLE: Holding = Holding {
        json_bytes: 16 << 20,
        // 1,000 SATA drives' inventory and health make some 42 MB by this
        // estimate (tests/typed_estimate.rs): 1,500 drives are read
        // whole, and the worst shape found (one-letter strings in a list)
        // holds 69% of it, some 46 MB, beside what a report makes of it.
        json_typed: 64 << 20,
        seconds: 64 * POINTS,
        timelines: true,
        // A run of 16 drives at four loads makes 64 logs, a load search
        // on each of 24 drives some 240: four times that.
        logs: 1024,
        // 1,024 logs of one drive at their estimate (src/bundle/contents.rs
        // test), or three of the largest a log can make; the text
        // act_latency.py would print counts, and a report holds each
        // analysis twice while it makes the page.
        analyses: 16 << 20,
        reasons: NAMED_UNREADABLE,
    };
    /// For this machine's own results folder.
    pub const UNBOUNDED: Holding = Holding {
        json_bytes: u64::MAX,
        json_typed: u64::MAX,
        seconds: usize::MAX,
        timelines: true,
        logs: usize::MAX,
        analyses: u64::MAX,
        reasons: usize::MAX,
    };
}

/// Reads one results file as it passes.
pub struct FileReader {
    kind: Kind,
    config: Option<sha2::Sha256>,
    log: Option<LogReader>,
    json: Vec<u8>,
    over: bool,
    line: Vec<u8>,
    /// The timeline's points, from its first second on.
    thinned: Option<Thinned>,
}

#[derive(PartialEq)]
enum Kind {
    Config,
    Json,
    Timeline,
    Other,
}

impl FileReader {
    pub fn new(path: &str) -> FileReader {
        let kind = if path.ends_with(".toml") || path.ends_with(".conf") {
            Kind::Config
        } else if path.ends_with(".json") {
            Kind::Json
        } else if path.ends_with(".jsonl") {
            Kind::Timeline
        } else {
            Kind::Other
        };
        let (_, name) = split(path);
        FileReader {
            config: (kind == Kind::Config).then(<sha2::Sha256 as sha2::Digest>::new),
            log: (kind != Kind::Config).then(|| LogReader::judging(name, path)),
            kind,
            json: Vec::new(),
            over: false,
            line: Vec::new(),
            thinned: None,
        }
    }

    /// The next bytes of the file, holding what `left` allows (and
    /// taking what it holds from it).
    pub fn push(&mut self, data: &[u8], left: &mut Holding) {
        if let Some(h) = self.config.as_mut() {
            sha2::Digest::update(h, data);
            return;
        }
        if let Some(l) = self.log.as_mut() {
            l.push(data);
        }
        match self.kind {
            Kind::Json if !self.over => {
                if left.json_bytes >= data.len() as u64 {
                    left.json_bytes -= data.len() as u64;
                    self.json.extend_from_slice(data);
                } else {
                    // What it held is given back: one oversized file
                    // leaves the others their room.
                    left.json_bytes += self.json.len() as u64;
                    self.over = true;
                    self.json = Vec::new();
                }
            }
            Kind::Timeline if left.timelines => {
                for part in data.split_inclusive(|b| *b == b'\n') {
                    if self.line.len() < 4096 {
                        self.line.extend_from_slice(part);
                    }
                    if part.ends_with(b"\n") {
                        self.second(left);
                    }
                }
            }
            _ => {}
        }
    }

    fn second(&mut self, left: &mut Holding) {
        let line = std::mem::take(&mut self.line);
        if self.over {
            return;
        }
        let Ok(s) = serde_json::from_slice::<Second>(&line) else {
            return;
        };
        let thinned = match &mut self.thinned {
            Some(t) => t,
            None => {
                // A timeline takes its points at its first second, all it
                // may fill (it cannot know how long it is), and gives back
                // at its end what it did not fill; one that is something
                // else after all (an ACT log) gives back all. Every
                // timeline plotted is plotted alike, or not at all.
                if left.seconds < POINTS {
                    self.over = true;
                    return;
                }
                left.seconds -= POINTS;
                self.thinned.insert(Thinned::new(POINTS))
            }
        };
        thinned.push(s);
    }

    pub fn finish(mut self, left: &mut Holding) -> FileRead {
        if let Some(h) = self.config {
            return FileRead::Config(hex::encode(sha2::Digest::finalize(h)));
        }
        if self.kind == Kind::Timeline && left.timelines && !self.line.is_empty() {
            self.second(left);
        }
        // The points a timeline took and did not fill go back.
        let thinned = self
            .thinned
            .take()
            .inspect(|t| left.seconds += POINTS - t.len());
        let log = self
            .log
            .take()
            .expect("a log reader unless configuration")
            .finish();
        if log.is_act_log {
            if let Some(t) = &thinned {
                left.seconds += t.len();
            }
            // Nor is a log JSON: what it held as JSON goes back too.
            if self.kind == Kind::Json && !self.over {
                left.json_bytes += self.json.len() as u64;
            }
            return kept_log(log.analysis, left);
        }
        match self.kind {
            Kind::Json if self.over => FileRead::NotRead(
                "not read: the results' JSON is more than a report holds in memory".into(),
            ),
            Kind::Json => match storcert_results::typed_estimate(&self.json) {
                Ok(n) if n > left.json_typed => FileRead::NotRead(
                    "not read: the results' JSON makes more values than a report holds in memory"
                        .into(),
                ),
                Ok(n) => {
                    left.json_typed -= n;
                    FileRead::Json(self.json)
                }
                Err(e) if e.is_data() => FileRead::NotRead(format!("not read: {e}")),
                // Named as not JSON when it is read.
                Err(_) => FileRead::Json(self.json),
            },
            Kind::Timeline if !left.timelines => FileRead::Other,
            Kind::Timeline if self.over => FileRead::NotRead(
                "not read: the timelines before it hold all the points a report keeps".into(),
            ),
            Kind::Timeline => FileRead::Timeline(thinned.unwrap_or_default()),
            _ => FileRead::Other,
        }
    }

    /// A file held whole.
    pub fn read(path: &str, data: &[u8], left: &mut Holding) -> FileRead {
        let mut r = FileReader::new(path);
        r.push(data, left);
        r.finish(left)
    }
}

impl FileRead {
    /// A log as the run that wrote it judged it, read as a log read from
    /// its file would be: its reason cut to what a page shows.
    pub fn judged(judged: Result<LogAnalysis, AnalyzeError>) -> FileRead {
        let mut left = Holding::UNBOUNDED;
        kept_log(judged, &mut left)
    }
}

/// The files of a results folder by path relative to `dir`, as a reader
/// of the folder takes them: leaving out temporaries (`*.tmp`) and the
/// report made of them (`report.*` at the top), and refusing a name that
/// is not UTF-8 (two such names could read as one) and anything that is
/// neither a file nor a folder (a link is followed by no reader).
pub fn list_folder(dir: &Path) -> std::io::Result<Vec<String>> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        for e in std::fs::read_dir(d).map_err(|e| in_file(d, e))? {
            let e = e.map_err(|e| in_file(d, e))?;
            let p = e.path();
            let ft = e.file_type().map_err(|e| in_file(&p, e))?;
            let rel = p.strip_prefix(root).expect("under root");
            let Some(rel) = rel.to_str() else {
                return Err(refused(&p, "a name that is not UTF-8"));
            };
            if ft.is_dir() {
                walk(root, &p, out)?;
            } else if !ft.is_file() {
                return Err(refused(&p, "not a regular file or folder"));
            } else if !(rel.ends_with(".tmp") || rel.starts_with("report.")) {
                out.push(rel.to_string());
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

fn in_file(p: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
}

fn refused(p: &Path, why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{}: {why}", reason(&p.to_string_lossy())),
    )
}

/// Reads the files `rels` of a results folder, each as it passes (never
/// held whole: a day's log of many drives is large), as regular files.
pub fn read_files(
    dir: &Path,
    rels: &[String],
    left: Holding,
) -> std::io::Result<BTreeMap<String, FileRead>> {
    let mut r = ResultsReader::new(left);
    for rel in rels {
        let p = dir.join(rel);
        let mut f = storcert_util::fs::open_regular(&p).map_err(|e| in_file(&p, e))?;
        let read = FileReader::read_from(rel, &mut f, &mut r.left).map_err(|e| in_file(&p, e))?;
        r.reads.insert(rel.clone(), read);
    }
    Ok(r.reads)
}

/// Reads a results folder: every file `list_folder` lists.
pub fn read_folder(dir: &Path, left: Holding) -> std::io::Result<BTreeMap<String, FileRead>> {
    read_files(dir, &list_folder(dir)?, left)
}

/// A log's judgement, kept if `left` still has room for it. One that could
/// not be judged is kept too: it is a line of the summary, and the
/// unreadable files a report names are bounded (`NAMED_UNREADABLE`).
fn kept_log(judged: Result<LogAnalysis, AnalyzeError>, left: &mut Holding) -> FileRead {
    let analysis = match judged {
        Ok(a) => a,
        Err(_) if left.reasons == 0 => {
            return FileRead::Log(Err(AnalyzeError(
                "its reason is not kept: the unreadable logs before it hold all a reader keeps"
                    .into(),
            )))
        }
        Err(e) => {
            left.reasons -= 1;
            let why = reason(&e.0);
            return FileRead::Log(Err(AnalyzeError(why)));
        }
    };
    if left.logs == 0 {
        return FileRead::NotRead(format!(
            "not judged: the ACT logs before it are all a reader judges ({})",
            Holding::BUNDLE.logs
        ));
    }
    // The text act_latency.py would print is not in the JSON (it is made
    // again from the analysis when shown) but is held beside it.
    let estimate = serde_json::to_vec(&analysis)
        .ok()
        .and_then(|json| storcert_results::typed_estimate(&json).ok())
        .map_or(u64::MAX, |e| {
            e.saturating_add(analysis.analysis.text.len() as u64)
        });
    if estimate > left.analyses {
        return FileRead::NotRead(
            "not judged: the ACT logs before it take all the memory a reader keeps for analyses"
                .into(),
        );
    }
    left.logs -= 1;
    left.analyses -= estimate;
    FileRead::Log(Ok(Box::new(analysis)))
}

/// Reads a bundle's results as its archive is unpacked
/// (`bundle::unpack::Stream`), holding no more than `left` allows.
pub struct ResultsReader {
    pub reads: BTreeMap<String, FileRead>,
    pub left: Holding,
}

impl ResultsReader {
    pub fn new(left: Holding) -> ResultsReader {
        ResultsReader {
            reads: BTreeMap::new(),
            left,
        }
    }
}

impl storcert_bundle::unpack::Stream for ResultsReader {
    fn wants(&self, path: &str) -> bool {
        path.starts_with(storcert_bundle::RESULTS_PREFIX)
    }

    fn read(&mut self, path: &str, data: &mut dyn std::io::Read) -> std::io::Result<()> {
        let rel = &path[storcert_bundle::RESULTS_PREFIX.len()..];
        let read = FileReader::read_from(rel, data, &mut self.left)?;
        self.reads.insert(rel.to_string(), read);
        Ok(())
    }
}

impl FileReader {
    /// The file at `path` read from `data` a chunk at a time: never held
    /// whole (a bundle's entry, or a standalone log of a day).
    pub fn read_from(
        path: &str,
        data: &mut dyn std::io::Read,
        left: &mut Holding,
    ) -> std::io::Result<FileRead> {
        let mut r = FileReader::new(path);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = data.read(&mut buf)?;
            if n == 0 {
                break;
            }
            r.push(&buf[..n], left);
        }
        Ok(r.finish(left))
    }
}

/// A health snapshot of an older storcert says where in its run it was
/// taken by the name the run gave it alone.
fn moment_by_name(path: &str, a: &mut Artefact) {
    if let Artefact::HealthSnapshot(s) = a {
        if s.moment.is_none() {
            s.moment = match split(path).1 {
                "health-before.json" => Some(Moment::Before),
                "health-after.json" => Some(Moment::After),
                _ => None,
            };
        }
    }
}

/// An untagged file of an older storcert, by the name `storcert run` gave
/// it. `None`: not a name storcert wrote a result under.
fn legacy(path: &str, data: &[u8]) -> Option<Result<Artefact, serde_json::Error>> {
    let rel = path
        .strip_prefix(storcert_bundle::RESULTS_PREFIX)
        .unwrap_or(path);
    let (dir, name) = split(rel);
    let json = |f: fn(&[u8]) -> Result<Artefact, serde_json::Error>| Some(f(data));
    match (dir, name) {
        ("", "inventory.json") => json(|d| Ok(Artefact::Inventory(serde_json::from_slice(d)?))),
        ("", "system.json") => json(|d| Ok(Artefact::System(serde_json::from_slice(d)?))),
        ("", "targets.json") => json(|d| {
            Ok(Artefact::Targets(Targets {
                schema_version: 0,
                targets: serde_json::from_slice::<Vec<Target>>(d)?,
            }))
        }),
        ("", "journal.json") => json(|d| Ok(Artefact::Journal(serde_json::from_slice(d)?))),
        ("", "run-notes.json") => json(|d| Ok(Artefact::RunNotes(serde_json::from_slice(d)?))),
        ("", "policy.json") => json(|d| Ok(Artefact::Policy(serde_json::from_slice(d)?))),
        ("", "stream.json") => json(|d| Ok(Artefact::Stream(serde_json::from_slice(d)?))),
        ("", "health-diff.json") => json(|d| Ok(Artefact::HealthDiff(serde_json::from_slice(d)?))),
        ("", "health-before.json" | "health-after.json") => {
            json(|d| Ok(Artefact::HealthSnapshot(serde_json::from_slice(d)?)))
        }
        ("provision/", n) if n.ends_with(".json") => {
            json(|d| Ok(Artefact::Provision(serde_json::from_slice(d)?)))
        }
        ("act/", n) if n.starts_with("search-") && n.ends_with(".json") => {
            json(|d| Ok(Artefact::ActSearch(serde_json::from_slice(d)?)))
        }
        ("act/", n) if n.starts_with("prep-") && n.ends_with(".json") => json(|d| {
            Ok(Artefact::ActPrep(Prep {
                schema_version: 0,
                devices: vec![serde_json::from_slice::<PrepResult>(d)?],
            }))
        }),
        ("act/", n) if n.ends_with(".json") => {
            json(|d| Ok(Artefact::ActRun(serde_json::from_slice(d)?)))
        }
        _ => None,
    }
}

/// A reason a file was not read, as kept: printable and cut, as an error
/// may quote a hostile file at six times its size.
fn reason(why: &str) -> String {
    storcert_util::text::printable(why, storcert_util::text::CELL_CHARS)
}

fn verdict_word(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// A name of a file beside the artefact, nothing more ("x.log", not
/// "../x.log" or "a/x.log").
fn plain_name(n: &str) -> bool {
    !n.is_empty() && n != "." && n != ".." && !n.contains('/')
}

impl Contents {
    /// The typed contents of a bundle: its results as they were read in
    /// passing (`results`), and its system identity (kept whole).
    pub fn of_bundle(unpacked: &storcert_bundle::Unpacked, mut results: ResultsReader) -> Contents {
        if let Some(d) = unpacked.files.get(storcert_bundle::SYSTEM) {
            let read = FileReader::read(storcert_bundle::SYSTEM, d, &mut results.left);
            results
                .reads
                .insert(storcert_bundle::SYSTEM.to_string(), read);
        }
        Contents::from_reads(results.reads, "")
    }

    /// Reads `files`, by path relative to the results folder.
    pub fn read(files: &BTreeMap<String, Vec<u8>>) -> Contents {
        Self::read_in(files, "")
    }

    /// The same, for results that sit under `prefix` ("results/" in a
    /// bundle): the summary names files with it.
    pub fn read_in(files: &BTreeMap<String, Vec<u8>>, prefix: &str) -> Contents {
        let mut left = Holding::UNBOUNDED;
        let reads = files
            .iter()
            .map(|(p, d)| (p.clone(), FileReader::read(p, d, &mut left)))
            .collect();
        Self::from_reads(reads, prefix)
    }

    /// From files read as they passed (`FileReader`), by path relative to
    /// the results folder.
    pub fn from_reads(reads: BTreeMap<String, FileRead>, prefix: &str) -> Contents {
        let mut c = Contents {
            prefix: prefix.to_string(),
            ..Contents::default()
        };
        let paths: BTreeSet<String> = reads.keys().cloned().collect();
        let (logs, mut timelines) = c.take_reads(reads, prefix);
        let saved = c.take_claims(&paths);
        c.judge_logs(logs, &saved, &paths);
        let judged = c.judged_logs();
        c.name_unanswered_claims(&saved, &judged);
        c.name_unjudged_runs(&judged);
        c.attach_timelines(&mut timelines);
        if c.unreadable.len() > NAMED_UNREADABLE {
            c.more_unreadable = c.unreadable.len() - NAMED_UNREADABLE;
            c.unreadable.truncate(NAMED_UNREADABLE);
        }
        c
    }

    /// Each file as what it was read as: configuration, a log to judge, a
    /// timeline, an artefact, or unreadable. Returns the logs and the
    /// timelines, which the artefacts decide about.
    fn take_reads(
        &mut self,
        reads: BTreeMap<String, FileRead>,
        prefix: &str,
    ) -> (Vec<JudgedLog>, BTreeMap<String, Thinned>) {
        let mut logs = Vec::new();
        let mut timelines = BTreeMap::new();
        for (path, read) in reads {
            let data = match read {
                FileRead::Config(sha) => {
                    self.configuration.insert(format!("{prefix}{path}"), sha);
                    continue;
                }
                FileRead::Log(judged) => {
                    logs.push((path, judged));
                    continue;
                }
                FileRead::Timeline(thinned) => {
                    timelines.insert(path, thinned);
                    continue;
                }
                FileRead::NotRead(why) => {
                    self.unreadable.push((path, why));
                    continue;
                }
                // Under act/ (a phase's phase-N/act/ too), a .log is a log
                // to judge: one that is no ACT log cannot pass by being
                // skipped.
                FileRead::Other => {
                    if path.split('/').any(|c| c == "act") && path.ends_with(".log") {
                        self.unreadable
                            .push((path, "not an ACT log (no \"ACT version\" line)".into()));
                    }
                    continue;
                }
                FileRead::Artefact(mut a) => {
                    moment_by_name(&path, &mut a);
                    self.items.push(Item { path, artefact: *a });
                    continue;
                }
                FileRead::Json(data) => data,
            };
            let mut artefact = match Artefact::from_json(&data) {
                Ok(a) => a,
                Err(ReadError::Untagged) => match legacy(&path, &data) {
                    Some(Ok(a)) => a,
                    Some(Err(e)) => {
                        self.unreadable.push((path, reason(&e.to_string())));
                        continue;
                    }
                    None => continue,
                },
                Err(e) => {
                    self.unreadable.push((path, reason(&e.to_string())));
                    continue;
                }
            };
            moment_by_name(&path, &mut artefact);
            self.items.push(Item { path, artefact });
        }
        (logs, timelines)
    }

    /// Takes the saved analyses out of the items: claims to check against
    /// their logs. One that names no file beside it, or a log not in the
    /// results, is unreadable.
    fn take_claims(&mut self, paths: &BTreeSet<String>) -> Vec<(String, LogAnalysis)> {
        // Every log is judged afresh, by today's rules: a saved analysis is
        // a claim about its log, never taken on trust (whoever holds the
        // signing key could write any). One without its log in the same
        // folder is unreadable; one of other bytes (stale, left by an
        // earlier run) or of an older judge gives way to the log; one of
        // the same bytes whose verdict differs is named as unreadable.
        let mut unreadable = Vec::new();
        let mut saved: Vec<(String, LogAnalysis)> = Vec::new();
        self.items.retain(|i| {
            let Artefact::ActAnalysis(a) = &i.artefact else {
                return true;
            };
            if !plain_name(&a.log) {
                unreadable.push((
                    i.path.clone(),
                    format!("names its log {:?}, not a file beside it", reason(&a.log)),
                ));
            } else if !paths.contains(&format!("{}{}", split(&i.path).0, a.log)) {
                unreadable.push((
                    i.path.clone(),
                    format!(
                        "the analysis of {}, which is not in the results",
                        reason(&a.log)
                    ),
                ));
            } else {
                saved.push((i.path.clone(), a.clone()));
            }
            false
        });
        self.unreadable.extend(unreadable);
        saved
    }

    /// Judges every log, against its claim where there is one.
    fn judge_logs(
        &mut self,
        logs: Vec<JudgedLog>,
        saved: &[(String, LogAnalysis)],
        paths: &BTreeSet<String>,
    ) {
        // Looked up by folder and log name: a bundle may hold thousands of
        // claims and a hundred thousand logs, and a scan for each is
        // minutes of CPU.
        let claims: HashMap<(&str, &str), usize> = saved
            .iter()
            .enumerate()
            .map(|(n, (at, a))| ((split(at).0, a.log.as_str()), n))
            .collect();
        for (path, judged) in logs {
            let (dir, name) = split(&path);
            let claim = claims.get(&(dir, name)).map(|&n| &saved[n]);
            let timeline_name = name.replace(".log", ".timeline.jsonl");
            let timeline = claim
                .and_then(|(_, a)| a.timeline.clone())
                .filter(|t| plain_name(t))
                .or_else(|| {
                    paths
                        .contains(&format!("{dir}{timeline_name}"))
                        .then_some(timeline_name)
                });
            let at = claim.map(|(at, _)| at.clone()).unwrap_or_else(|| {
                analyze::analysis_path(Path::new(&path))
                    .to_string_lossy()
                    .into_owned()
            });
            match judged.map(|a| *a) {
                Ok(mut a) => {
                    a.timeline = timeline;
                    if let Some((claim_at, old)) = claim {
                        let same_bytes = old.log_sha256 == a.log_sha256
                            && old.schema_version == storcert_results::act::ANALYSIS_SCHEMA;
                        if same_bytes && old.analysis.verdict.pass != a.analysis.verdict.pass {
                            self.unreadable.push((
                                claim_at.clone(),
                                format!(
                                    "says {} where its log ({}) is judged {}",
                                    verdict_word(old.analysis.verdict.pass),
                                    a.log,
                                    verdict_word(a.analysis.verdict.pass)
                                ),
                            ));
                        }
                    }
                    self.items.push(Item {
                        path: at,
                        artefact: Artefact::ActAnalysis(a),
                    });
                }
                Err(e) => self
                    .unreadable
                    .push((path.clone(), format!("ACT log unreadable: {e}"))),
            }
        }
    }

    /// The logs judged, by (folder, log name).
    fn judged_logs(&self) -> HashSet<(String, String)> {
        self.items
            .iter()
            .filter_map(|i| match &i.artefact {
                Artefact::ActAnalysis(a) => Some((split(&i.path).0.to_string(), a.log.clone())),
                _ => None,
            })
            .collect()
    }

    /// A claim no log answered (its log is not an ACT log) is named.
    fn name_unanswered_claims(
        &mut self,
        saved: &[(String, LogAnalysis)],
        judged: &HashSet<(String, String)>,
    ) {
        let named: HashSet<String> = self.unreadable.iter().map(|(p, _)| p.clone()).collect();
        for (at, a) in saved {
            let dir = split(at).0;
            if !judged.contains(&(dir.to_string(), a.log.clone()))
                && !named.contains(&format!("{dir}{}", a.log))
            {
                self.unreadable.push((
                    at.clone(),
                    format!("the analysis of {}, which is no ACT log", reason(&a.log)),
                ));
            }
        }
    }

    fn name_unjudged_runs(&mut self, judged: &HashSet<(String, String)>) {
        // An ACT run's result whose log is not beside it: its latency was
        // never judged, so it cannot stand for a pass.
        for item in &self.items {
            if let Artefact::ActRun(_) = &item.artefact {
                // Its own log: "act/x.json" is the run of "act/x.log".
                let (dir, name) = split(&item.path);
                let stem = name.strip_suffix(".json").unwrap_or(name);
                if !judged.contains(&(dir.to_string(), format!("{stem}.log"))) {
                    self.unreadable.push((
                        item.path.clone(),
                        "an ACT run whose log is not in the results: its latency was not judged"
                            .into(),
                    ));
                }
            }
        }
    }

    /// Each analysis gets its timeline's points (moved, not copied: a
    /// timeline's points are some 140 KB).
    fn attach_timelines(&mut self, timelines: &mut BTreeMap<String, Thinned>) {
        for item in &self.items {
            if let Artefact::ActAnalysis(a) = &item.artefact {
                let Some(t) = a.timeline.as_ref().filter(|t| plain_name(t)) else {
                    continue;
                };
                let (dir, _) = split(&item.path);
                // Moved, not copied: a timeline's points are some 140 KB.
                if let Some(thinned) = timelines.remove(&format!("{dir}{t}")) {
                    self.timelines.insert(item.path.clone(), thinned);
                }
            }
        }
    }

    /// The line that says how many unreadable files are not named, when
    /// some are not: a report's note, and `compare`'s.
    pub fn unnamed_unreadable(&self) -> Option<String> {
        (self.more_unreadable > 0).then(|| {
            format!(
                "and {} more files not read, not named one by one",
                self.more_unreadable
            )
        })
    }

    /// The ACT analyses, each with the path of the log it judged.
    pub fn analyses(&self) -> impl Iterator<Item = (String, &LogAnalysis)> {
        self.items.iter().filter_map(|i| match &i.artefact {
            Artefact::ActAnalysis(a) => Some((format!("{}{}", split(&i.path).0, a.log), a)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_file_is_read_by_its_tag_whatever_its_name() {
        let mut files = BTreeMap::new();
        let notes = storcert_results::run::RunNotes {
            schema_version: 1,
            profile: "p".into(),
            ..Default::default()
        };
        files.insert(
            "anything.json".to_string(),
            Artefact::RunNotes(notes).to_json(),
        );
        // Untagged and under no name storcert writes: not a result.
        files.insert(
            "other.json".to_string(),
            br#"{"passes":[],"targets":[],"seed":1}"#.to_vec(),
        );
        let c = Contents::read(&files);
        assert_eq!(c.items.len(), 1);
        assert!(matches!(&c.items[0].artefact, Artefact::RunNotes(n) if n.profile == "p"));
        assert!(c.unreadable.is_empty());
    }

    #[test]
    fn a_newer_schema_or_a_broken_file_is_unreadable_not_ignored() {
        let mut files = BTreeMap::new();
        files.insert(
            "x.json".to_string(),
            br#"{"artefact":"stream","schema_version":99}"#.to_vec(),
        );
        files.insert("policy.json".to_string(), br#"{"checks":"many"}"#.to_vec());
        files.insert(
            "y.json".to_string(),
            br#"{"artefact":"no-such-kind","schema_version":1}"#.to_vec(),
        );
        // A torn write under a results name.
        files.insert(
            "stream.json".to_string(),
            br#"{"artefact":"stream","sche"#.to_vec(),
        );
        let c = Contents::read(&files);
        assert!(c.items.is_empty());
        let why: Vec<&str> = c.unreadable.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(why, ["policy.json", "stream.json", "x.json", "y.json"]);
        assert!(c.unreadable[2].1.contains("newer"), "{:?}", c.unreadable);
    }
}

#[cfg(test)]
mod hostile {
    //! Results folders that try to make the verdict lie.
    use super::*;
    use crate::summary::summarise;
    use storcert_results::Verdict;

    const LOGS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/act/logs/"
    );

    fn log(name: &str) -> Vec<u8> {
        std::fs::read(format!("{LOGS}{name}")).unwrap()
    }

    fn verdict(files: &[(&str, Vec<u8>)]) -> storcert_results::summary::Summary {
        let map: BTreeMap<String, Vec<u8>> = files
            .iter()
            .map(|(p, d)| (p.to_string(), d.clone()))
            .collect();
        summarise(Default::default(), &Contents::read_in(&map, "results/"))
    }

    fn analysis_of(data: &[u8], name: &str) -> Vec<u8> {
        Artefact::from(analyze::judge_log(data, name, name, None).unwrap()).to_json()
    }

    #[test]
    fn every_unreadable_file_fails_the_run_though_a_thousand_are_named() {
        let files: Vec<(String, Vec<u8>)> = (0..NAMED_UNREADABLE + 5)
            .map(|i| (format!("act/d{i:05}.log"), b"ACT version 6.6\n".to_vec()))
            .collect();
        let files: Vec<(&str, Vec<u8>)> =
            files.iter().map(|(p, d)| (p.as_str(), d.clone())).collect();
        let s = verdict(&files);
        assert_eq!(s.verdict, Verdict::Fail);
        let unreadable: Vec<_> = s
            .tests
            .iter()
            .filter(|t| t.name.starts_with("unreadable ("))
            .collect();
        assert_eq!(unreadable.len(), NAMED_UNREADABLE + 1);
        assert!(unreadable.iter().all(|t| t.verdict == Verdict::Fail));
        assert_eq!(unreadable[0].name, "unreadable (results/act/d00000.log)");
        assert_eq!(
            unreadable[NAMED_UNREADABLE].name,
            "unreadable (5 more files)"
        );
    }

    #[test]
    fn logs_past_a_readers_bound_are_named_not_judged() {
        let pass = log("storcert-us-20x.log");
        let mut left = Holding {
            logs: 2,
            ..Holding::BUNDLE
        };
        let reads: BTreeMap<String, FileRead> = ["a", "b", "c"]
            .iter()
            .map(|n| {
                let path = format!("act/{n}-20x.log");
                let read = FileReader::read(&path, &pass, &mut left);
                (path, read)
            })
            .collect();
        let c = Contents::from_reads(reads, "results/");
        assert_eq!(c.analyses().count(), 2);
        assert_eq!(c.unreadable.len(), 1);
        assert_eq!(c.unreadable[0].0, "act/c-20x.log");
        assert!(c.unreadable[0].1.starts_with("not judged"));
        // The room left for analyses is what the two took: a log of one
        // drive takes little enough that the count bounds such logs first.
        let each = (Holding::BUNDLE.analyses - left.analyses) / 2;
        println!("the estimate of a one-drive log's analysis: {each} bytes");
        assert!(each > 0);
        assert!(
            each * Holding::BUNDLE.logs as u64 <= Holding::BUNDLE.analyses,
            "{each}"
        );
        let mut full = Holding {
            analyses: 1000,
            ..Holding::BUNDLE
        };
        let FileRead::NotRead(why) = FileReader::read("act/d-20x.log", &pass, &mut full) else {
            panic!("judged past the bound");
        };
        assert!(why.contains("all the memory"), "{why}");
        assert_eq!(full.analyses, 1000);
    }

    #[test]
    fn an_unjudgeable_logs_reason_is_cut_and_only_so_many_kept() {
        let mut quoted = b"ACT version \x01".to_vec();
        quoted.extend(std::iter::repeat_n(1u8, 100_000));
        quoted.push(b'\n');
        let mut left = Holding {
            reasons: 1,
            ..Holding::BUNDLE
        };
        let FileRead::Log(Err(first)) = FileReader::read("act/a.log", &quoted, &mut left) else {
            panic!("judged");
        };
        assert!(first.0.chars().count() <= storcert_util::text::CELL_CHARS + 1);
        let FileRead::Log(Err(second)) = FileReader::read("act/b.log", &quoted, &mut left) else {
            panic!("judged");
        };
        assert!(
            second.0.starts_with("its reason is not kept"),
            "{}",
            second.0
        );
    }

    #[test]
    fn a_log_under_a_json_name_gives_back_the_json_room() {
        let pass = log("storcert-us-20x.log");
        let mut left = Holding {
            json_bytes: pass.len() as u64 + 100,
            ..Holding::BUNDLE
        };
        assert!(matches!(
            FileReader::read("act/a.json", &pass, &mut left),
            FileRead::Log(Ok(_))
        ));
        // More than the room the log left, were it not given back.
        let json = format!(
            r#"{{"artefact":"no-such-kind","schema_version":1,"pad":"{}"}}"#,
            "a".repeat(1000)
        );
        assert!(matches!(
            FileReader::read("b.json", json.as_bytes(), &mut left),
            FileRead::Json(_)
        ));
    }

    #[test]
    fn a_search_is_held_to_its_trials_logs() {
        // Both logs at the trials' 1x: a trial is held to its log's load.
        let at_1x = |name: &str, from: [&str; 2], to: [&str; 2]| {
            String::from_utf8(log(name))
                .unwrap()
                .replace(from[0], to[0])
                .replace(from[1], to[1])
                .into_bytes()
        };
        let pass = at_1x(
            "storcert-us-20x.log",
            ["read-reqs-per-sec: 40000", "write-reqs-per-sec: 20000"],
            ["read-reqs-per-sec: 2000", "write-reqs-per-sec: 1000"],
        );
        let fail = at_1x(
            "storcert-ms-2dev.log",
            ["read-reqs-per-sec: 24000", "write-reqs-per-sec: 12000"],
            ["read-reqs-per-sec: 4000", "write-reqs-per-sec: 2000"],
        );
        let search = |trials: &[(&str, f64, &str, &str)], highest: Option<f64>| {
            let trials: Vec<serde_json::Value> = trials
                .iter()
                .map(|(log, load, purpose, result)| {
                    serde_json::json!({"load": load, "purpose": purpose, "result": result,
                        "worst_pct_over_1ms": null, "worst_pct_over_8ms": null,
                        "worst_pct_over_64ms": null, "max_lag_ms": 0.0, "log": log})
                })
                .collect();
            serde_json::to_vec(
                &serde_json::json!({"artefact": "act-search", "schema_version": 2,
                "highest_passing_load": highest, "confirmed": true, "trials": trials,
                "interrupted": false}),
            )
            .unwrap()
        };
        let t1 = "/var/lib/storcert/run/act/search-sda/trial-01-1x.log";
        let t2 = "/var/lib/storcert/run/act/search-sda/trial-02-1x.log";
        // Honest: the passing confirm is the load found.
        let honest = search(
            &[
                (t1, 1.0, "escalate", "passing"),
                (t2, 1.0, "confirm", "passing"),
            ],
            Some(1.0),
        );
        let s = verdict(&[
            ("act/search-sda.json", honest),
            ("act/search-sda/trial-01-1x.log", pass.clone()),
            ("act/search-sda/trial-02-1x.log", pass.clone()),
        ]);
        assert_eq!(s.verdict, Verdict::Pass, "{s:#?}");
        // A trial counted as passing whose log fails.
        let lying = search(
            &[
                (t1, 1.0, "escalate", "passing"),
                (t2, 1.0, "confirm", "passing"),
            ],
            Some(1.0),
        );
        let s = verdict(&[
            ("act/search-sda.json", lying),
            ("act/search-sda/trial-01-1x.log", pass.clone()),
            ("act/search-sda/trial-02-1x.log", fail.clone()),
        ]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        assert!(
            s.reasons.iter().any(|r| r.contains("counted as passing")),
            "{s:#?}"
        );
        assert!(s.loads_reached.is_empty(), "{s:#?}");
        // A search naming an ordinary log as its trial exempts nothing.
        let claim = search(
            &[(
                "/elsewhere/act/sda-day.log",
                1.0,
                "escalate",
                "stable at increased latency",
            )],
            None,
        );
        let s = verdict(&[
            ("act/search-sda.json", claim),
            ("act/sda-day.log", fail.clone()),
        ]);
        assert!(
            s.tests.iter().any(|t| t.name.starts_with("act-storage")
                && t.verdict != storcert_results::Verdict::Pass),
            "{s:#?}"
        );
        // A trial whose log is missing.
        let s = verdict(&[(
            "act/search-sda.json",
            search(&[(t1, 1.0, "confirm", "passing")], Some(1.0)),
        )]);
        assert!(
            s.reasons
                .iter()
                .any(|r| r.contains("is not in the results")),
            "{s:#?}"
        );
    }

    #[test]
    fn no_log_escapes_judgement() {
        let fail = log("storcert-ms-2dev.log");
        let run = br#"{"artefact":"act-run","schema_version":1,"outcome":{"outcome":"completed"},"engine":"io_uring","elapsed_s":1.0,"max_lag_ms":0.0,"reports":1,"streams":[],"histograms":[],"devices":[],"read_spikes":{"seconds":[],"period_s":null,"threshold":null}}"#.to_vec();
        // Blank lines in front of a failing log: still found and judged.
        let mut padded = b"\n".repeat(40);
        padded.extend_from_slice(&fail);
        let s = verdict(&[("act/a.log", padded), ("act/a.json", run.clone())]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        assert!(
            s.tests.iter().any(|t| t.name.starts_with("act-storage")),
            "{s:#?}"
        );
        // A .log under act/ that is no ACT log is named, not skipped.
        let s = verdict(&[
            ("act/a.log", b"hello".to_vec()),
            ("act/a.json", run.clone()),
        ]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        assert!(
            s.tests
                .iter()
                .any(|t| t.name == "unreadable (results/act/a.log)"),
            "{s:#?}"
        );
        // An ACT run's result alone: its latency was never judged.
        let s = verdict(&[("act/a.json", run.clone())]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        assert!(
            s.tests
                .iter()
                .any(|t| t.detail.contains("its latency was not judged")),
            "{s:#?}"
        );
        // Beside another run's log: still not its own.
        let other = log("storcert-us-20x.log");
        let s = verdict(&[("act/a.json", run), ("act/b.log", other)]);
        assert!(
            s.tests
                .iter()
                .any(|t| t.name == "unreadable (results/act/a.json)"
                    && t.detail.contains("its latency was not judged")),
            "{s:#?}"
        );
    }

    #[test]
    fn a_saved_analysis_counts_only_for_the_bytes_it_judged() {
        let pass = log("storcert-us-20x.log");
        let fail = log("storcert-ms-2dev.log");
        // The log as analysed: its analysis is used.
        let s = verdict(&[
            ("act/a.log", pass.clone()),
            ("act/a.analysis.json", analysis_of(&pass, "a.log")),
        ]);
        assert_eq!(s.verdict, Verdict::Pass, "{s:#?}");
        // A failing log beside the passing analysis of other bytes: the
        // log is judged afresh and fails.
        let s = verdict(&[
            ("act/a.log", fail.clone()),
            ("act/a.analysis.json", analysis_of(&pass, "a.log")),
        ]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        // Judged once: each of its two drives and the run over both.
        assert_eq!(s.tests.len(), 3, "{s:#?}");
        assert!(
            s.tests
                .iter()
                .all(|t| t.verdict == storcert_results::Verdict::Fail),
            "{s:#?}"
        );
        // A forged analysis of the very bytes, saying PASS for a failing
        // log: the log is judged afresh, and the forgery is named.
        let mut forged = analyze::judge_log(&fail, "a.log", "a.log", None).unwrap();
        forged.analysis.verdict.pass = true;
        forged.analysis.verdict.failures.clear();
        forged.analysis.verdict.problems.clear();
        let s = verdict(&[
            ("act/a.log", fail.clone()),
            ("act/a.analysis.json", Artefact::from(forged).to_json()),
        ]);
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");
        assert!(
            s.tests.iter().any(|t| t
                .name
                .starts_with("unreadable (results/act/a.analysis.json)")
                && t.detail
                    .contains("says PASS where its log (a.log) is judged FAIL")),
            "{s:#?}"
        );
        // An analysis whose log is not there, or outside its folder.
        for name in ["ghost.log", "../a.log", "x/a.log", ""] {
            let mut a = analyze::judge_log(&pass, "a.log", "a.log", None).unwrap();
            a.log = name.to_string();
            let s = verdict(&[("act/b.analysis.json", Artefact::from(a).to_json())]);
            assert_eq!(s.verdict, Verdict::Fail, "{name:?}: {s:#?}");
            assert!(s.tests[0]
                .name
                .starts_with("unreadable (results/act/b.analysis.json)"));
        }
    }

    #[test]
    fn a_broken_tag_or_version_is_unreadable_not_untagged() {
        let run = r#""outcome":{"outcome":"device-errors","errors":9},"engine":"sync","elapsed_s":1.0,"max_lag_ms":0.0,"reports":1,"streams":[],"histograms":[],"devices":[],"read_spikes":{"seconds":[],"period_s":null,"threshold":null}"#;
        for head in [
            r#""artefact":"act-run","schema_version":"1""#,
            r#""artefact":"act-run","schema_version":-1"#,
            r#""artefact":"act-run","schema_version":4294967296"#,
            r#""artefact":"act-run","schema_version":1.0"#,
            r#""artefact":7,"schema_version":1"#,
            r#""artefact":null,"schema_version":1"#,
            r#""artefact":"act-run","artefact":"act-run","schema_version":1"#,
            r#""artefact":"act-run","schema_version":1,"schema_version":1"#,
        ] {
            let s = verdict(&[("x.json", format!("{{{head},{run}}}").into_bytes())]);
            assert_eq!(s.verdict, Verdict::Fail, "{head}: {s:#?}");
        }
    }

    #[test]
    fn flags_do_not_outvote_the_data_and_one_run_has_one_journal() {
        let policy = br#"{"artefact":"policy","schema_version":1,"checks":1,"pass":true,"findings":[{"severity":"fail","rule":"r","device":"/dev/sda","check":"write cache","expected":"off","actual":"on","fix":null}]}"#;
        assert_eq!(
            verdict(&[("p.json", policy.to_vec())]).verdict,
            Verdict::Fail
        );
        let stream = br#"{"artefact":"stream","schema_version":1,"seed":1,"storcert_version":"0","engine":"sync","bs":4096,"qd":1,"jobs_per_target":1,"direct":true,"targets":[],"passes":[]}"#;
        assert_eq!(
            verdict(&[("s.json", stream.to_vec())]).verdict,
            Verdict::Fail
        );
        let health = br#"{"artefact":"health-diff","schema_version":1,"seconds":1,"unmatched":[],"degraded":false,"drives":[{"drive":"/dev/sdb","degraded":true,"endurance":null,"temperature_c":null,"changes":[{"what":"media errors","before":"0","after":"1","degraded":true}]}]}"#;
        assert_eq!(
            verdict(&[("h.json", health.to_vec())]).verdict,
            Verdict::Fail
        );
        let journal = |state: &str| {
            format!(r#"{{"artefact":"journal","schema_version":1,"profile_name":"p","profile_digest":"d","profile_source":"s","started_at":"t","finished_at":null,"starts":1,"stages":[{{"id":"stream","state":"{state}","destructive":true,"attempts":1,"started_at":"t","finished_at":null,"interrupted_seconds":0,"seconds_done":0,"note":""}}]}}"#).into_bytes()
        };
        let s = verdict(&[
            ("journal.json", journal("failed")),
            ("old/journal.json", journal("done")),
            ("p.json", policy.to_vec()),
        ]);
        assert!(
            s.tests
                .iter()
                .any(|t| t.name == "duplicate (results/old/journal.json)"),
            "{s:#?}"
        );
        // Notes are not a place to hide a result in.
        let hidden =
            br#"{"artefact":"run-notes","outcome":{"outcome":"interrupted"},"engine":"sync"}"#;
        assert_eq!(
            verdict(&[("n.json", hidden.to_vec())]).verdict,
            Verdict::Fail
        );
    }

    /// A folder reader follows no link and reads no name that is not
    /// UTF-8 (two could read as one name): it refuses them, as a bundle
    /// does, rather than pass over a file.
    #[test]
    fn a_folder_with_a_link_or_an_odd_name_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a.json"), "{}").unwrap();
        std::fs::write(t.path().join("x.tmp"), "{}").unwrap();
        assert_eq!(list_folder(t.path()).unwrap(), ["a.json"]);
        std::os::unix::fs::symlink("/etc/passwd", t.path().join("l.log")).unwrap();
        let e = list_folder(t.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file or folder"), "{e}");
        std::fs::remove_file(t.path().join("l.log")).unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"a\xfe.log");
        std::fs::write(t.path().join(odd), "x").unwrap();
        let e = read_folder(t.path(), Holding::UNBOUNDED)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }
}
