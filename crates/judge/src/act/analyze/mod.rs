//! The analysis of an ACT log, as upstream's analysis/act_latency.py does it
//! (same options, same table, digit for digit), plus the verdict against
//! ACT's pass criteria (`judge`, the same whatever the table shows) and a
//! JSON form of both.

use std::fmt::Write as _;

pub use storcert_results::act::{ActVerdict, Analysis, Failure, HistTable, SliceRow};
use storcert_results::act::{DeviceVerdict, LogAnalysis, ANALYSIS_SCHEMA};

mod table;
use table::*;

/// act_latency.py's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub log: String,
    pub histograms: Vec<String>,
    pub slice: u64,
    /// A run shorter than `slice` is judged as one slice of its whole
    /// length (what `act analyze` does when no `-t` was given, and what
    /// bundles do), where act_latency.py stops: "could not find 3600
    /// seconds of data".
    pub whole_run_if_short: bool,
    pub start_bucket: usize,
    pub num_buckets: usize,
    pub every_nth: usize,
    pub extra: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            log: String::new(),
            histograms: Vec::new(),
            slice: 3600,
            whole_run_if_short: false,
            start_bucket: 0,
            num_buckets: 7,
            every_nth: 1,
            extra: false,
        }
    }
}

/// Buckets act_latency.py can read (labels "00" to "16").
const ALL_BUCKETS: usize = 17;
const GAP: &str = "  ";

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct AnalyzeError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, AnalyzeError> {
    Err(AnalyzeError(msg.into()))
}

/// What an ACT log's configuration echo says of its drives and load.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Setup {
    pub devices: Vec<String>,
    /// Nx per drive, from the read rate.
    pub load: Option<f64>,
    /// Writes asked per read (ACT's 1x is 1000 per 2000: 0.5).
    pub writes_per_read: Option<f64>,
}

/// Drives, load and read/write mix from an ACT log's configuration echo.
pub fn act_log_setup(text: &str) -> Setup {
    let mut devices = Vec::new();
    let mut names = String::new();
    let mut reads = None;
    let mut writes: Option<Option<u32>> = None;
    let mut count = None;
    for line in text.lines().take(200) {
        if let Some(d) = line.strip_prefix("device-names: ") {
            names = storcert_util::text::cut(d.trim(), 4096).into_owned();
            // One past ACT's most is enough to fail the log for it; a
            // hostile line of a megabyte names 400,000.
            devices = d
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .take(crate::act::config::MAX_STORAGE_DEVICES + 1)
                .map(|s| storcert_util::text::cut(s, 4096).into_owned())
                .collect();
        } else if let Some(r) = line.strip_prefix("read-reqs-per-sec: ") {
            reads = r.trim().parse::<f64>().ok();
        } else if let Some(w) = line.strip_prefix("write-reqs-per-sec: ") {
            // ACT reads a whole number of requests; a rate it could not
            // have run leaves the mix, and so the load, unknown.
            writes = Some(w.trim().parse::<u32>().ok());
        } else if let Some(n) = line.strip_prefix("num-devices: ") {
            count = n.trim().parse::<usize>().ok();
        }
    }
    // One device whose path has a space in it (a scratch file in such a
    // folder), as the header's own count says.
    if count == Some(1) && devices.len() > 1 {
        devices = vec![names];
    }
    let load = reads
        .filter(|_| !devices.is_empty() && writes != Some(None))
        .map(|r| r / 2000.0 / devices.len() as f64);
    let writes_per_read = match (reads, writes) {
        // Rates rounded to whole requests (0.3333x is 667 + 333) are still
        // ACT's 1,000 writes per 2,000 reads.
        (Some(r), Some(Some(w))) if r > 0.0 && (2.0 * w as f64 - r).abs() <= 2.0 => Some(0.5),
        (Some(r), Some(Some(w))) if r > 0.0 => Some(w as f64 / r),
        _ => None,
    };
    Setup {
        devices,
        load,
        writes_per_read,
    }
}

/// The one analysis of a finished run's log, made right after the run and
/// saved beside it (`LogAnalysis`): ACT's hourly slices (a shorter run is
/// one slice), microsecond logs shown from the 1.024 ms edge so their
/// columns are the ms-equivalent ones. The verdict does not depend on the
/// displayed columns.
/// `label` names the log in the analysis text, as act_latency.py echoes
/// its argument.
pub fn judge_log(
    data: &[u8],
    log_name: &str,
    label: &str,
    timeline: Option<String>,
) -> Result<LogAnalysis, AnalyzeError> {
    let mut r = LogReader::judging(log_name, label);
    r.push(data);
    let mut a = r.finish().analysis?;
    a.timeline = timeline;
    Ok(a)
}

/// Runs the analysis and returns the text act_latency.py would print, the
/// tables as data and the verdict.
pub fn analyze(log_text: &str, opts: &Options, argv_echo: &str) -> Result<Analysis, AnalyzeError> {
    let mut r = LogReader::analysing(opts.clone(), argv_echo);
    r.push(log_text.as_bytes());
    r.finish().table
}

/// The longest line kept whole. ACT's lines are short (the longest names
/// 32 drives); a longer one is read past, and a log holding one is
/// unreadable.
const MAX_LINE: usize = 1 << 20;
/// The start of a log that is kept to be searched back and forth, as
/// act_latency.py seeks in its file: everything before the first report,
/// and at least the first `PREFIX_LINES` lines (the setup echo). The
/// reports after it are read once, as they pass, so a log's size costs
/// time, not memory.
const MAX_PREFIX: usize = 8 << 20;
const PREFIX_LINES: usize = 200;
/// The most of one report kept for a run shorter than an hour (judged as
/// one slice of its whole length, from its last report).
const MAX_BLOCK: usize = 1 << 20;

/// What a log reader is for.
enum Purpose {
    /// act_latency.py's table with the user's options.
    Table { opts: Options, echo: String },
    /// `judge_log`: the saved analysis, with options from the log itself.
    Judging { log_name: String, label: String },
}

/// What reading a log gave.
pub struct ReadLog {
    /// A line starting "ACT version" was seen (a log, whatever its name).
    pub is_act_log: bool,
    /// The table and verdict (`Purpose::Table`).
    pub table: Result<Analysis, AnalyzeError>,
    /// The saved analysis (`Purpose::Judging`).
    pub analysis: Result<LogAnalysis, AnalyzeError>,
}

/// An ACT log read as a stream of bytes: act_latency.py's table, ACT's
/// verdict (overall and per drive) and the log's SHA-256, in one pass, in
/// memory bounded whatever the log's length.
pub struct LogReader {
    purpose: Purpose,
    hasher: sha2::Sha256,
    line: Vec<u8>,
    line_cut: bool,
    /// The last line ended with "\r": a "\n" next is part of that end.
    after_cr: bool,
    long_line: bool,
    is_act_log: bool,
    /// The latest "after N sec:" (act_latency.py's slice for a run under
    /// an hour is its whole length).
    max_after: u64,
    prefix: Vec<String>,
    prefix_bytes: usize,
    prefix_after: bool,
    body: Option<Body>,
    /// Why the table cannot be made (read on for the verdict).
    failed: Option<AnalyzeError>,
}

/// What is known once the prefix is read.
struct Body {
    opts: Options,
    head: Head,
    /// ACT's criteria on the run's reads, and on each drive's own.
    judges: Option<super::judge::Judges>,
    drives: Option<super::judge::Judges>,
    slicer: Option<Slicer>,
    /// A run under an hour: the report at the latest time, kept whole.
    block: Option<(u64, Vec<String>, usize)>,
    /// The report before it, for a log cut inside its latest report.
    prev_block: Option<(u64, Vec<String>, usize)>,
    saving: bool,
    devices: Vec<String>,
    load: Option<f64>,
    writes_per_read: Option<f64>,
    index: bool,
    engine: Option<String>,
    auto_slice: bool,
    /// The slice act_latency.py is asked for (an hour when it is the
    /// run's to decide; the whole run if shorter, found at the end).
    slice: u64,
}

impl LogReader {
    pub fn analysing(opts: Options, argv_echo: &str) -> LogReader {
        Self::new(Purpose::Table {
            opts,
            echo: argv_echo.to_string(),
        })
    }

    pub fn judging(log_name: &str, label: &str) -> LogReader {
        Self::new(Purpose::Judging {
            log_name: log_name.to_string(),
            label: label.to_string(),
        })
    }

    fn new(purpose: Purpose) -> LogReader {
        use sha2::Digest;
        LogReader {
            purpose,
            hasher: sha2::Sha256::new(),
            line: Vec::new(),
            line_cut: false,
            after_cr: false,
            long_line: false,
            is_act_log: false,
            max_after: 0,
            prefix: Vec::new(),
            prefix_bytes: 0,
            prefix_after: false,
            body: None,
            failed: None,
        }
    }

    /// The next bytes of the log.
    pub fn push(&mut self, mut data: &[u8]) {
        use sha2::Digest;
        self.hasher.update(data);
        // Lines end as in Python's text mode, which act_latency.py reads
        // in: "\n", "\r\n" or a lone "\r" (a log saved on Windows or an
        // old Mac), each given on as "\n".
        while !data.is_empty() {
            if std::mem::take(&mut self.after_cr) && data[0] == b'\n' {
                data = &data[1..];
                continue;
            }
            let (part, end) = match data.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(i) => (&data[..=i], Some(data[i])),
                None => (data, None),
            };
            data = &data[part.len()..];
            let text = if end.is_some() {
                &part[..part.len() - 1]
            } else {
                part
            };
            // The start of a long line is kept (an "ACT version" line
            // padded with a megabyte of spaces is still seen), the rest
            // read past, however the bytes arrive.
            let room = MAX_LINE - self.line.len();
            if text.len() > room {
                self.line_cut = true;
            }
            self.line.extend_from_slice(&text[..text.len().min(room)]);
            if let Some(b) = end {
                self.after_cr = b == b'\r';
                if self.line.len() < MAX_LINE {
                    self.line.push(b'\n');
                }
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let bytes = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.line_cut) {
            self.long_line = true;
        }
        // Per line, as the whole text would be: '\n' is never part of a
        // multi-byte sequence.
        let line = String::from_utf8_lossy(&bytes).into_owned();
        self.line(line);
    }

    /// One line, with its line end as Python's readline() gives it.
    fn line(&mut self, line: String) {
        let bare = bare(&line);
        if bare.starts_with("ACT version") {
            self.is_act_log = true;
        }
        if let Some(t) = after_time(bare) {
            self.max_after = self.max_after.max(t);
        }
        match &mut self.body {
            Some(b) => b.line(&line),
            None => {
                self.prefix_after |= bare.starts_with("after ");
                // A line's bookkeeping counts too: 8 MiB of empty lines
                // are 8 million strings.
                self.prefix_bytes += line.len() + std::mem::size_of::<String>();
                self.prefix.push(line);
                if self.prefix_bytes > MAX_PREFIX {
                    self.failed.get_or_insert(AnalyzeError(format!(
                        "more than {} MiB before the first report",
                        MAX_PREFIX >> 20
                    )));
                    self.start_body();
                } else if self.prefix_after && self.prefix.len() >= PREFIX_LINES {
                    self.start_body();
                }
            }
        }
    }

    /// The prefix is read: set up the table and the judges from it, and
    /// give them the prefix.
    fn start_body(&mut self) {
        let prefix = std::mem::take(&mut self.prefix);
        let bare_lines = || prefix.iter().map(|l| bare(l));
        let (opts, echo, auto_slice) = match &self.purpose {
            Purpose::Table { opts, echo } => (opts.clone(), echo.clone(), opts.whole_run_if_short),
            Purpose::Judging { label, .. } => {
                let micro = bare_lines()
                    .take(60)
                    .any(|l| l.trim() == "microsecond-histograms: yes");
                let opts = Options {
                    log: label.clone(),
                    start_bucket: if micro { 10 } else { 0 },
                    ..Options::default()
                };
                (opts, label.clone(), true)
            }
        };
        let setup: String = bare_lines()
            .take(PREFIX_LINES)
            .flat_map(|l| [l, "\n"])
            .collect();
        let Setup {
            devices,
            load,
            writes_per_read,
        } = act_log_setup(&setup);
        let index = bare_lines()
            .take(5)
            .any(|l| l.starts_with("Index device IO test"));
        // storcert's banner: "(ACT-compatible log; open-loop ENGINE scheduler",
        // looked for in the whole header (lines in front cannot hide it).
        let engine = bare_lines()
            .take_while(|l| !l.starts_with("after "))
            .find_map(|l| {
                let rest = l.split_once("open-loop ")?.1;
                Some(rest.split_once(" scheduler")?.0.to_string())
            });
        // Each drive's own share of a storage run over several.
        let per_device: Vec<String> = if devices.len() > 1
            && devices.len() <= crate::act::config::MAX_STORAGE_DEVICES
            && !index
            && devices.iter().all(|d| d.len() <= 255)
            && matches!(self.purpose, Purpose::Judging { .. })
        {
            devices.iter().map(|d| format!("{d}-reads")).collect()
        } else {
            Vec::new()
        };
        let slice = if auto_slice { 3600 } else { opts.slice };
        let (head, slicer, from) = match Head::read(&prefix, &opts, &echo, slice) {
            Ok((head, from)) => {
                let slicer = Slicer::new(&head, head.slice_time, opts.extra);
                (head, Some(slicer), from)
            }
            Err(e) => {
                self.failed.get_or_insert(e);
                (Head::default(), None, prefix.len())
            }
        };
        // The judges read a log whose table can be made: one that cannot
        // is unreadable whatever they would say (and a file that is no log
        // costs one pass, not one per drive its header names). The run's
        // judge and the drives' are apart, as each reads the dumps of its
        // own histograms only.
        let (mut judges, mut drives) = if self.failed.is_none() {
            (
                Some(super::judge::Judges::new(&[
                    super::judge::JUDGED.to_string()
                ])),
                (!per_device.is_empty()).then(|| super::judge::Judges::new(&per_device)),
            )
        } else {
            (None, None)
        };
        for l in bare_lines() {
            for j in [judges.as_mut(), drives.as_mut()].into_iter().flatten() {
                j.line(l);
            }
        }
        let mut body = Body {
            opts,
            head,
            judges,
            drives,
            slicer,
            block: None,
            prev_block: None,
            saving: false,
            devices,
            load,
            writes_per_read,
            index,
            engine,
            auto_slice,
            slice,
        };
        // From where the histogram names ended, as act_latency.py reads
        // on (the judges have had the whole prefix).
        for l in &prefix[from..] {
            body.slice_line(l);
        }
        self.body = Some(body);
    }

    /// What the reader holds of the log (the prefix, a line, a report).
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        let body = self.body.as_ref().map_or(0, |b| {
            b.block.as_ref().map_or(0, |(_, lines, _)| {
                lines.iter().map(String::len).sum::<usize>()
                    + b.slicer.as_ref().map_or(0, |s| s.rows.len())
            }) + b.prev_block.as_ref().map_or(0, |(_, lines, _)| {
                lines.iter().map(String::len).sum::<usize>()
            })
        });
        let strings = |v: &[String]| {
            v.iter()
                .map(|l| l.len() + std::mem::size_of::<String>())
                .sum::<usize>()
        };
        strings(&self.prefix) + self.line.len() + body
    }

    /// The end of the log.
    pub fn finish(mut self) -> ReadLog {
        use sha2::Digest;
        if !self.line.is_empty() || self.line_cut {
            self.end_line();
        }
        if self.body.is_none() {
            self.start_body();
        }
        let body = self.body.take().expect("started");
        let is_act_log = self.is_act_log;
        let log_sha256 = hex::encode(self.hasher.finalize());
        let drive_verdicts = body.drives.map(|d| d.verdicts()).unwrap_or_default();
        let mut table = match (self.failed.as_ref(), body.slicer, body.judges) {
            (Some(e), _, _) => Err(e.clone()),
            (None, Some(slicer), Some(judges)) => {
                let cut = judges.last_report_cut();
                let verdict = judges.verdicts().pop().expect("one judge");
                let short = body.auto_slice
                    && slicer.which_slice == 0
                    && self.max_after > 0
                    && self.max_after < 3600;
                if short {
                    // One slice of the run's whole length, from its last
                    // report (act_latency.py -t LENGTH); a log cut right
                    // after its last "after N sec:" line ends a report
                    // earlier.
                    let one_slice = |slice: u64, block: &Option<(u64, Vec<String>, usize)>| {
                        let slice_time = slice.div_ceil(body.head.interval) * body.head.interval;
                        let mut s = Slicer::new(&body.head, slice_time, body.opts.extra);
                        if let Some((_, lines, _)) = block {
                            for l in lines {
                                s.line(l);
                            }
                        }
                        s.finish(&body.head, &body.opts, slice, verdict.clone())
                    };
                    // The report before the last where the last is cut
                    // (the judge leaves it out too), or holds no data of
                    // the histograms the log has.
                    let prev = match &body.prev_block {
                        Some((at, _, _)) if *at > 0 => Some(*at),
                        _ => None,
                    };
                    match (prev, cut) {
                        (Some(at), true) => one_slice(at, &body.prev_block),
                        (Some(at), false) => match one_slice(self.max_after, &body.block) {
                            Err(_) if body.head.missing.is_none() => {
                                one_slice(at, &body.prev_block)
                            }
                            r => r,
                        },
                        (None, _) => one_slice(self.max_after, &body.block),
                    }
                } else {
                    slicer.finish(&body.head, &body.opts, body.slice, verdict)
                }
            }
            _ => Err(AnalyzeError("no table".into())),
        };
        if self.long_line && is_act_log {
            table = Err(AnalyzeError(format!(
                "a line longer than {} MiB",
                MAX_LINE >> 20
            )));
        }
        let analysis = match (&self.purpose, table) {
            (Purpose::Judging { log_name, .. }, Ok(mut analysis)) => {
                if body.devices.len() > crate::act::config::MAX_STORAGE_DEVICES {
                    analysis.verdict.pass = false;
                    analysis.verdict.problems.push(format!(
                        "the log names more drives than ACT's {}",
                        crate::act::config::MAX_STORAGE_DEVICES
                    ));
                }
                Ok(LogAnalysis {
                    schema_version: ANALYSIS_SCHEMA,
                    log: log_name.clone(),
                    log_sha256,
                    workload: if body.index { "index" } else { "storage" }.into(),
                    per_device: body
                        .devices
                        .iter()
                        .zip(drive_verdicts)
                        .map(|(d, verdict)| DeviceVerdict {
                            device: d.clone(),
                            verdict,
                        })
                        .collect(),
                    devices: {
                        let mut d = body.devices;
                        d.truncate(crate::act::config::MAX_STORAGE_DEVICES);
                        d
                    },
                    load: body.load,
                    writes_per_read: body.writes_per_read,
                    timeline: None,
                    engine: body.engine,
                    analysis,
                })
            }
            (Purpose::Judging { .. }, Err(e)) => Err(e),
            (Purpose::Table { .. }, table) => {
                return ReadLog {
                    is_act_log,
                    table,
                    analysis: Err(AnalyzeError("not judging".into())),
                }
            }
        };
        ReadLog {
            is_act_log,
            table: Err(AnalyzeError("judged, not tabled".into())),
            analysis,
        }
    }
}

impl Body {
    fn line(&mut self, line: &str) {
        for j in [self.judges.as_mut(), self.drives.as_mut()]
            .into_iter()
            .flatten()
        {
            j.line(bare(line));
        }
        self.slice_line(line);
    }

    /// A line after the histogram names: the slices' and, for a run that
    /// may be under an hour, the latest report's.
    fn slice_line(&mut self, line: &str) {
        if let Some(s) = self.slicer.as_mut() {
            s.line(line);
        }
        if !self.auto_slice {
            return;
        }
        if let Some(t) = after_time(bare(line)) {
            if self.block.as_ref().is_none_or(|(at, _, _)| t > *at) {
                self.prev_block = self.block.replace((t, Vec::new(), 0));
                self.saving = true;
            }
        }
        if self.saving {
            let Some((_, lines, bytes)) = self.block.as_mut() else {
                return;
            };
            *bytes += line.len();
            if *bytes > MAX_BLOCK {
                self.saving = false;
                return;
            }
            lines.push(line.to_string());
            if line.trim().is_empty() {
                self.saving = false;
            }
        }
    }
}

/// A line without its line end, as Python's str.splitlines() and Rust's
/// lines() give it.
fn bare(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

/// N of an "after N sec:" line.
fn after_time(bare: &str) -> Option<u64> {
    bare.strip_prefix("after ")?
        .strip_suffix(" sec:")?
        .parse()
        .ok()
}

/// Where a log's analysis is saved: "act/x.log" → "act/x.analysis.json".
pub fn analysis_path(log: &std::path::Path) -> std::path::PathBuf {
    log.with_extension("analysis.json")
}

#[cfg(test)]
mod tests {
    use super::{act_log_setup, judge_log, LogReader, Setup};

    /// A short millisecond log of two drives (tests/fixtures/act/logs).
    fn two_drive_log() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/storcert-ms-2dev.log"
        ))
        .unwrap()
    }

    /// Every log of the fixtures, judged whole and fed in small pieces
    /// (a line cut anywhere, even inside a UTF-8 sequence), gives the same
    /// analysis: the reader keeps nothing of where the bytes were cut.
    #[test]
    fn a_log_read_in_pieces_is_judged_as_the_whole() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/act");
        let mut seen = 0;
        for dir in ["logs", "verdicts"] {
            for e in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let path = e.unwrap().path();
                if path.extension().is_none_or(|x| x != "log") {
                    continue;
                }
                let mut data = std::fs::read(&path).unwrap();
                data.extend_from_slice("\n\u{e9}t\u{e9}\n".as_bytes());
                let whole = judge_log(&data, "x.log", "x.log", None)
                    .map(|a| (serde_json::to_string(&a).unwrap(), a.analysis.text));
                for step in [1, 2, 7, 4096] {
                    let mut r = LogReader::judging("x.log", "x.log");
                    for piece in data.chunks(step) {
                        r.push(piece);
                    }
                    let read = r.finish();
                    assert!(read.is_act_log, "{path:?}");
                    let pieces = read
                        .analysis
                        .map(|a| (serde_json::to_string(&a).unwrap(), a.analysis.text));
                    match (&whole, &pieces) {
                        (Ok(w), Ok(p)) => assert_eq!(w, p, "{path:?} in pieces of {step}"),
                        (Err(w), Err(p)) => assert_eq!(w.0, p.0, "{path:?}"),
                        _ => panic!("{path:?} in pieces of {step}: {whole:?} / {pieces:?}"),
                    }
                }
                seen += 1;
            }
        }
        assert!(seen >= 15, "{seen}");
    }

    /// A log saved with Windows ("\r\n") or old Mac ("\r") line ends is
    /// read as act_latency.py reads it in Python's text mode: as the same
    /// log with "\n", even when a piece ends between "\r" and "\n".
    #[test]
    fn a_log_with_windows_line_ends_is_the_same_log() {
        let lf = two_drive_log();
        let crlf = lf.replace('\n', "\r\n");
        // The same but for the digest of the file's bytes.
        let mut want = judge_log(lf.as_bytes(), "x.log", "x.log", None).unwrap();
        want.log_sha256 = String::new();
        let want = (serde_json::to_string(&want).unwrap(), want.analysis.text);
        for (text, step) in [
            (&crlf, 1),
            (&crlf, 2),
            (&crlf, 4096),
            (&lf.replace('\n', "\r"), 1),
            (&lf.replace('\n', "\r"), 4096),
        ] {
            let mut r = LogReader::judging("x.log", "x.log");
            for piece in text.as_bytes().chunks(step) {
                r.push(piece);
            }
            let mut got = r.finish().analysis.unwrap();
            got.log_sha256 = String::new();
            assert_eq!(
                (serde_json::to_string(&got).unwrap(), got.analysis.text),
                want,
                "in pieces of {step}"
            );
        }
    }

    /// Hostile shapes cost their reading, not memory: a million empty
    /// lines before any report; twenty thousand one-hour reports, each a
    /// failing slice (listed up to a bound, then counted, never passing).
    #[test]
    fn hostile_logs_hold_bounded_state() {
        let mut r = LogReader::judging("x.log", "x.log");
        r.push(&vec![b'\n'; 1 << 20]);
        assert!(
            r.held_bytes() <= super::MAX_PREFIX + (1 << 10),
            "{}",
            r.held_bytes()
        );
        let fixture = two_drive_log();
        let head = &fixture[..fixture.find("after ").unwrap()];
        let head = head
            .replace("report-interval-sec: 1", "report-interval-sec: 3600")
            .replace("test-duration-sec: 12", "test-duration-sec: 72000000");
        let mut r = LogReader::judging("x.log", "x.log");
        r.push(head.as_bytes());
        let mut most = 0;
        for k in 1..=20_000u64 {
            r.push(
                format!(
                    "after {} sec:\nreads ({k} total)\n (16: {k:010})\n\n",
                    k * 3600
                )
                .as_bytes(),
            );
            most = most.max(r.held_bytes());
        }
        assert!(most < 512 << 10, "{most}");
        let a = r.finish().analysis.unwrap();
        let v = &a.analysis.verdict;
        assert!(!v.pass);
        assert_eq!(v.failures.len(), super::super::judge::MAX_FAILURES);
        assert!(
            v.problems.iter().any(|p| p.contains("more failing slice")),
            "{:?}",
            v.problems
        );
        let t = &a.analysis.histograms[0];
        assert_eq!(t.slices.len(), super::MAX_TABLE_SLICES);
        assert_eq!(t.max[0], 100.0);
        assert!(
            a.analysis.text.contains("18500 more slices"),
            "{}",
            &a.analysis.text[..200]
        );
    }

    /// A run stopped is a fail whichever dump its line sits in: the run's
    /// judge reads each drive's dump lines as lines of the log.
    #[test]
    fn a_stop_inside_a_drive_s_dump_still_stops_the_run() {
        let fixture = two_drive_log();
        let clean = judge_log(fixture.as_bytes(), "x.log", "x.log", None).unwrap();
        let mut lines: Vec<String> = fixture.lines().map(String::from).collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("/dev/") && l.contains("-reads ("))
            .unwrap();
        lines[at + 1].push_str(" - test stopped");
        let text = lines.join("\n") + "\n";
        let a = judge_log(text.as_bytes(), "x.log", "x.log", None).unwrap();
        assert!(!a.analysis.verdict.pass);
        assert!(
            a.analysis
                .verdict
                .problems
                .iter()
                .any(|p| p.contains("the run stopped")),
            "{:?} (clean: {:?})",
            a.analysis.verdict.problems,
            clean.analysis.verdict.problems
        );
    }

    /// However long the log, the reader holds its prefix and one report,
    /// not the log: 200,000 reports of one drive.
    #[test]
    fn a_long_log_is_held_as_its_prefix_and_one_report() {
        let fixture = two_drive_log();
        let head = &fixture[..fixture.find("after ").unwrap()];
        let head = head.replace("report-interval-sec: 2", "report-interval-sec: 1");
        let mut r = LogReader::judging("x.log", "x.log");
        r.push(head.as_bytes());
        let mut most = 0;
        for t in 1..=200_000u64 {
            let n = t * 100;
            r.push(format!("after {t} sec:\nreads ({n} total)\n (00: {n:010})\n\n").as_bytes());
            most = most.max(r.held_bytes());
        }
        assert!(most < 64 << 10, "{most}");
        let a = r.finish().analysis.unwrap();
        assert_eq!(a.analysis.histograms[0].slices.len(), 55);
    }

    /// The seventh review's headers: 410,000 device names on one line,
    /// a version of a million digits, 500 configuration lines of 16 KiB
    /// of DEL. What the analysis keeps of a header is bounded whatever it
    /// holds, and still fails the log where it should.
    #[test]
    fn what_an_analysis_keeps_of_a_header_is_bounded() {
        let fixture = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/storcert-us-20x.log"
        ))
        .unwrap();
        let many = vec!["a"; 410_000].join(",");
        let devices = act_log_setup(&format!("device-names: {many}\nnum-devices: 2\n")).devices;
        assert_eq!(devices.len(), crate::act::config::MAX_STORAGE_DEVICES + 1);
        let named = fixture
            .replacen(
                "device-names: /dev/loop0",
                &format!("device-names: {many}"),
                1,
            )
            .replacen("num-devices: 1", "num-devices: 2", 1);
        let a = judge_log(named.as_bytes(), "d.log", "d.log", None).unwrap();
        assert_eq!(a.devices.len(), crate::act::config::MAX_STORAGE_DEVICES);
        assert!(
            !a.analysis.verdict.pass,
            "more drives than ACT's is no pass"
        );

        let digits = fixture.replacen(
            "ACT version 6.6",
            &format!("ACT version 6.{}", "0".repeat(1_000_000)),
            1,
        );
        let a = judge_log(digits.as_bytes(), "d.log", "d.log", None).unwrap();
        assert!(a.analysis.act_version.chars().count() <= 33);
        assert!(
            a.analysis.text.len() < 64 << 10,
            "{}",
            a.analysis.text.len()
        );

        let pad: String = (0..500)
            .map(|i| format!("pad-{i}: {}\n", "\u{7f}".repeat(16 << 10)))
            .collect();
        let padded = fixture.replacen("max-lag-sec: 10\n", &format!("max-lag-sec: 10\n{pad}"), 1);
        let a = judge_log(padded.as_bytes(), "d.log", "d.log", None).unwrap();
        assert!(a.analysis.verdict.pass, "{:?}", a.analysis.verdict);
        assert!(
            a.analysis.text.len() < 64 << 10,
            "{}",
            a.analysis.text.len()
        );
        assert!(!a.analysis.text.contains('\u{7f}'), "echoed unprintable");
    }

    #[test]
    fn a_device_path_with_a_space_is_one_device_as_the_header_counts() {
        let head = "device-names: /home/u/My Tests/storcert-scratch.img\nnum-devices: 1\n\
                    read-reqs-per-sec: 2000\n";
        let setup = act_log_setup(head);
        assert_eq!(setup.devices, ["/home/u/My Tests/storcert-scratch.img"]);
        assert_eq!(setup.load, Some(1.0));
        let two = "device-names: /dev/sda /dev/sdb\nnum-devices: 2\nread-reqs-per-sec: 4000\n\
                   write-reqs-per-sec: 1000\n";
        assert_eq!(
            act_log_setup(two),
            Setup {
                devices: vec!["/dev/sda".to_string(), "/dev/sdb".to_string()],
                load: Some(1.0),
                writes_per_read: Some(0.25),
            }
        );
        // Rates rounded to whole requests are still ACT's mix (0.3333x is
        // 667 reads + 333 writes); a write rate ACT could not have run
        // leaves the load unknown (found in review).
        let one = "device-names: /dev/sda\nnum-devices: 1\n";
        let mix = |r: &str, w: &str| {
            act_log_setup(&format!(
                "{one}read-reqs-per-sec: {r}\nwrite-reqs-per-sec: {w}\n"
            ))
        };
        assert_eq!(mix("667", "333").writes_per_read, Some(0.5));
        assert_eq!(mix("36000", "3000").writes_per_read, Some(3000.0 / 36000.0));
        for bad in ["inf", "nan", "-1000", "1e308", "x"] {
            let s = mix("2000", bad);
            assert_eq!((s.load, s.writes_per_read), (None, None), "{bad}");
        }
    }
}
