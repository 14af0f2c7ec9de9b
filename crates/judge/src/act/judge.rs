//! ACT's pass rule over a whole log, apart from act_latency.py's display:
//! the transactions (the `reads` histogram, in storage and index logs
//! alike) in every hour have < 5% over 1 ms, < 1% over 8 ms and < 0.1%
//! over 64 ms. Whatever histograms or slice length a user asks the table
//! for, the verdict is this one.
//!
//! What act_latency.py leaves to the reader, the verdict does not: a slice
//! in which no read completed (a stalled drive), a log that ends in ACT's
//! "test stopped", device I/O errors, a log that ends before its
//! test-duration-sec, a gap between reports, and reports too far apart to
//! be cut into hours each fail with that reason. A run not a whole number
//! of hours long has its last part judged as a slice of its own, where
//! act_latency.py drops it.
//!
//! Logs come from bundles of machines nobody vouches for: the reading is
//! one pass in constant memory, and a log that contradicts itself (counts
//! that go down or do not add up, a histogram twice in one report, a
//! setting given twice, reports out of order or past the test's end) fails
//! at the first contradiction rather than being guessed at.

use super::histogram::N_BUCKETS;
use storcert_results::act::{ActVerdict, Failure};

/// The histogram ACT's criteria judge.
pub const JUDGED: &str = "reads";

const HOUR: u64 = 3600;

/// The longest report interval whose slices may overrun an hour (as
/// act_latency.py rounds them up to whole intervals); a longer one must
/// divide the hour.
const MAX_OVERRUN: u64 = 60;

/// Problems listed before the rest are only counted.
const MAX_PROBLEMS: usize = 20;
/// Failing slices listed before the rest are only counted (a hostile log
/// of a million one-hour reports must not cost a million failures).
pub(crate) const MAX_FAILURES: usize = 300;

/// One of ACT's limits: in a slice, reads over `ms` must be fewer than
/// `num`/`den` of the slice's reads.
pub struct Rule {
    pub ms: u64,
    pub num: u64,
    pub den: u64,
}

/// ACT's rules: < 5% over 1 ms, < 1% over 8 ms, < 0.1% over 64 ms.
pub const RULES: [Rule; 3] = [
    Rule {
        ms: 1,
        num: 5,
        den: 100,
    },
    Rule {
        ms: 8,
        num: 1,
        den: 100,
    },
    Rule {
        ms: 64,
        num: 1,
        den: 1000,
    },
];

impl Rule {
    /// "> 8 ms".
    pub fn name(&self) -> String {
        format!("> {} ms", self.ms)
    }

    /// "1%", "0.1%".
    pub fn limit(&self) -> String {
        format!("{}%", self.num as f64 * 100.0 / self.den as f64)
    }

    /// The histogram bucket above which a read counts against the rule
    /// (bucket b holds [2^(b-1), 2^b) of the histogram's unit).
    pub fn edge(&self, microseconds: bool) -> usize {
        let ms = self.ms.trailing_zeros() as usize;
        if microseconds {
            ms + 10
        } else {
            ms
        }
    }

    /// Whether `over` of `total` reads break the rule: over/total ≥
    /// num/den, in integers, so nothing rounds at the edge.
    pub fn broken(&self, over: u64, total: u64) -> bool {
        total > 0 && over as u128 * self.den as u128 >= self.num as u128 * total as u128
    }
}

/// A slice's length for reports `interval` seconds apart: the hour,
/// rounded up to whole reports as act_latency.py rounds it; `u64::MAX`
/// where reports are too far apart to cut into hours (only a run shorter
/// than an hour can then be judged, as one slice).
pub fn slice_secs(interval: u64) -> u64 {
    if interval > HOUR || (interval > MAX_OVERRUN && HOUR % interval != 0) {
        u64::MAX
    } else {
        HOUR.div_ceil(interval.max(1)) * interval.max(1)
    }
}

/// Reads above bucket `edge` in a histogram's bucket counts.
pub fn over_edge(buckets: &[u64], edge: usize) -> u64 {
    let total: u64 = buckets.iter().sum();
    let under: u64 = buckets.iter().take(edge + 1).sum();
    total.saturating_sub(under)
}

/// One report's cumulative reads: total and per-bucket counts.
#[derive(Clone)]
struct Snapshot {
    total: u64,
    buckets: [u64; N_BUCKETS],
}

impl Snapshot {
    fn zero() -> Snapshot {
        Snapshot {
            total: 0,
            buckets: [0; N_BUCKETS],
        }
    }

    /// Operations above bucket `edge` (bucket b holds [2^(b-1), 2^b)).
    fn over(&self, edge: usize) -> u64 {
        let under: u64 = self.buckets.iter().take(edge + 1).sum();
        self.total.saturating_sub(under)
    }
}

#[derive(Default)]
struct Settings {
    duration: Option<u64>,
    interval: Option<u64>,
    microseconds: Option<bool>,
}

struct Judge {
    /// The histogram judged: "reads", or a drive's own "/dev/sdb-reads".
    name: String,
    settings: Settings,
    /// The slice length once the first report is seen (None before).
    slice: Option<u64>,
    failures: Vec<Failure>,
    more_failures: usize,
    problems: Vec<String>,
    more_problems: usize,
    /// The report being read: its time, and its reads if seen yet.
    report: Option<(u64, Option<Snapshot>)>,
    /// The last report taken in, and the last slice's end.
    last: Option<(u64, Snapshot)>,
    boundary: (u64, Snapshot),
    slices: usize,
    /// The highest percentage over each rule's edge in any slice.
    worst: [f64; 3],
    io_errors: usize,
    first_io_error: Option<String>,
    stopped: Option<String>,
    /// A contradiction ends the reading of reports.
    broken: bool,
    /// Whether the histogram appeared at all.
    saw_histogram: bool,
}

/// A setting's value, read as act_latency.py reads it ("key: value"); a
/// line that starts with the key in any other shape is `Err`, so the
/// verdict and the table never read a setting differently.
fn setting<'a>(line: &'a str, key: &str) -> Option<Result<&'a str, ()>> {
    let rest = line.strip_prefix(key)?;
    Some(rest.strip_prefix(": ").map(str::trim).ok_or(()))
}

/// `(NN: count)` pairs of a bucket line.
fn bucket_pairs(line: &str) -> Option<Vec<(usize, u64)>> {
    let mut out = Vec::new();
    for part in line.split('(').skip(1) {
        let (b, rest) = part.split_once(':')?;
        let count = rest.split(')').next()?.trim();
        out.push((b.trim().parse().ok()?, count.parse().ok()?));
    }
    Some(out)
}

impl Judge {
    fn problem(&mut self, p: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }

    fn broken(&mut self, p: String) {
        self.problem(p);
        self.broken = true;
    }

    fn interval(&self) -> u64 {
        self.settings.interval.unwrap_or(1).max(1)
    }

    /// One line of the header, made printable and cut (`header_view`).
    fn header_line(&mut self, line: &str) {
        let set = |key: &str, slot: &mut Option<u64>| -> Option<String> {
            let Ok(v) = setting(line, key)? else {
                return Some(format!("a malformed {key} line \"{line}\""));
            };
            if slot.is_some() {
                return Some(format!("{key} is given twice"));
            }
            match v.parse::<u64>() {
                Ok(n) => *slot = Some(n),
                Err(_) => return Some(format!("{key} {v:?} is not a whole number")),
            }
            None
        };
        let settings = &mut self.settings;
        let mut why = set("test-duration-sec", &mut settings.duration)
            .or_else(|| set("report-interval-sec", &mut settings.interval));
        match setting(line, "microsecond-histograms") {
            Some(Ok(v)) => {
                if settings.microseconds.is_some() {
                    why = Some("microsecond-histograms is given twice".into());
                }
                settings.microseconds = Some(v.starts_with('y'));
            }
            Some(Err(())) => {
                why = Some(format!(
                    "a malformed microsecond-histograms line \"{line}\""
                ))
            }
            None => {}
        }
        if let Some(w) = why {
            self.broken(w);
        }
    }

    /// A new "after N sec:" line: the report before it is complete.
    fn start_report(&mut self, t: u64) {
        self.finish_report();
        if self.broken {
            return;
        }
        if self.slice.is_none() {
            self.slice = Some(slice_secs(self.interval()));
        }
        let prev = self.last.as_ref().map_or(0, |l| l.0);
        if t <= prev {
            return self.broken(format!(
                "the report after {t} s comes after the one at {prev} s"
            ));
        }
        if let Some(d) = self.settings.duration {
            if t > d.saturating_add(self.interval()) {
                return self.broken(format!("a report after {t} s, past the test's {d} s"));
            }
        }
        // ACT reports at every interval, one after another: a report
        // anywhere else means the log and its settings disagree (a slice
        // would never close on its boundary).
        if t - prev != self.interval() {
            if t - prev > self.interval() && t % self.interval() == 0 {
                self.problem(format!(
                    "no report between {prev} and {t} s (a gap in the log)"
                ));
            } else {
                return self.broken(format!(
                    "a report after {t} s, where report-interval-sec {} puts one at {} s",
                    self.interval(),
                    prev + self.interval()
                ));
            }
        }
        self.report = Some((t, None));
    }

    fn reads_dump(&mut self, dump: Dump) {
        let Some((t, got)) = self.report.as_ref() else {
            return;
        };
        let t = *t;
        if got.is_some() {
            return self.broken(format!(
                "the {} histogram appears twice after {t} s",
                self.name
            ));
        }
        let Dump { snap, ok, sum, .. } = dump;
        if !ok {
            return self.broken(format!(
                "the {} histogram after {t} s is unreadable",
                self.name
            ));
        }
        if sum != snap.total {
            return self.broken(format!(
                "the {} histogram after {t} s does not add up ({sum} in its buckets, {} total)",
                self.name, snap.total
            ));
        }
        if let Some(r) = self.report.as_mut() {
            r.1 = Some(snap);
        }
    }

    /// Takes in the report just read, closing a slice at an hour's end.
    fn finish_report(&mut self) {
        let Some((t, snap)) = self.report.take() else {
            return;
        };
        if self.broken {
            return;
        }
        // A report cut off in the writing (no histogram) is not taken in.
        let Some(snap) = snap else { return };
        if let Some((_, prev)) = &self.last {
            let down = snap.total < prev.total
                || snap.buckets.iter().zip(&prev.buckets).any(|(a, b)| a < b);
            if down {
                return self.broken(format!(
                    "the {} counts go down after {t} s (a histogram is cumulative)",
                    self.name
                ));
            }
        }
        let slice = self.slice.unwrap_or(HOUR);
        if t >= HOUR && slice == u64::MAX {
            return self.broken(format!(
                "report-interval-sec {} cannot be cut into hours, so the run cannot be judged hour by hour",
                self.interval()
            ));
        }
        self.last = Some((t, snap));
        if t % slice == 0 {
            self.close_slice();
        }
    }

    fn close_slice(&mut self) {
        let Some((end, at)) = self.last.clone() else {
            return;
        };
        let (from, before) = self.boundary.clone();
        if end <= from {
            return;
        }
        self.slices += 1;
        let n = self.slices;
        let total = at.total - before.total;
        if total == 0 {
            let name = self.name.clone();
            self.problem(format!("slice {n} ({from}-{end} s): no {name} completed"));
        }
        let microseconds = self.settings.microseconds == Some(true);
        for (k, rule) in RULES.iter().enumerate() {
            let edge = rule.edge(microseconds);
            let over = at.over(edge).saturating_sub(before.over(edge));
            if total > 0 {
                self.worst[k] = self.worst[k].max(over as f64 * 100.0 / total as f64);
            }
            if rule.broken(over, total) {
                if self.failures.len() >= MAX_FAILURES {
                    self.more_failures += 1;
                    continue;
                }
                let pct = over as f64 * 100.0 / total as f64;
                self.failures.push(Failure {
                    histogram: self.name.clone(),
                    slice: n,
                    rule: format!("{} must be < {}", rule.name(), rule.limit()),
                    // Shown to two places, as act_latency.py rounds.
                    percent: format!("{pct:.2}").parse().unwrap_or(pct),
                });
            }
        }
        self.boundary = (end, at);
    }
}

/// Judges a log by ACT's criteria; never fails to answer.
pub fn judge(text: &str) -> ActVerdict {
    judge_histograms(text, &[JUDGED.to_string()])
        .pop()
        .expect("one verdict per name")
}

impl Judge {
    fn new(name: &str) -> Judge {
        Judge {
            name: name.to_string(),
            settings: Settings::default(),
            slice: None,
            failures: Vec::new(),
            more_failures: 0,
            problems: Vec::new(),
            more_problems: 0,
            report: None,
            last: None,
            boundary: (0, Snapshot::zero()),
            slices: 0,
            worst: [0.0; 3],
            io_errors: 0,
            first_io_error: None,
            stopped: None,
            broken: false,
            saw_histogram: false,
        }
    }
}

/// ACT's criteria applied to each histogram of `names` in a log, in one
/// pass over it: "reads", and in a run over several drives each drive's
/// own share ("/dev/sdb-reads"). A verdict per name, in order.
pub fn judge_histograms(text: &str, names: &[String]) -> Vec<ActVerdict> {
    let mut judges = Judges::new(names);
    for line in text.lines() {
        judges.line(line);
    }
    judges.verdicts()
}

/// The judges of one log, fed a line at a time (a log is read as a
/// stream, never whole: a 24-hour log of many drives is large, and one
/// from a bundle may be hostile).
pub struct Judges {
    judges: Vec<Judge>,
    in_reports: bool,
    /// The histogram dump being read: its judge, and what it holds so far.
    dump: Option<(usize, Dump)>,
    /// The time of a report not yet ended by ACT's blank line after it.
    open_report: Option<u64>,
}

/// A "reads (N total)" dump read a bucket line at a time.
struct Dump {
    snap: Snapshot,
    ok: bool,
    sum: u64,
    seen: [bool; N_BUCKETS],
}

impl Dump {
    fn new(total: Option<u64>) -> Dump {
        Dump {
            snap: Snapshot {
                total: total.unwrap_or(0),
                buckets: [0; N_BUCKETS],
            },
            ok: total.is_some(),
            sum: 0,
            seen: [false; N_BUCKETS],
        }
    }

    /// One " (NN: count) ..." line.
    fn line(&mut self, l: &str) {
        let Some(pairs) = bucket_pairs(l) else {
            self.ok = false;
            return;
        };
        for (b, n) in pairs {
            match (self.snap.buckets.get_mut(b), self.sum.checked_add(n)) {
                (Some(slot), Some(s)) if !self.seen[b] => {
                    self.seen[b] = true;
                    *slot = n;
                    self.sum = s;
                }
                _ => self.ok = false,
            }
        }
    }
}

impl Judges {
    pub fn new(names: &[String]) -> Judges {
        Judges {
            judges: names.iter().map(|n| Judge::new(n)).collect(),
            in_reports: false,
            dump: None,
            open_report: None,
        }
    }

    /// One line of the log, without its line end.
    pub fn line(&mut self, raw: &str) {
        // " (NN: count)" lines continue the dump being read.
        if raw.starts_with(" (") {
            if let Some((_, d)) = self.dump.as_mut() {
                d.line(raw);
                return;
            }
        }
        self.end_dump();
        let judges = &mut self.judges;
        let line = raw.trim_end();
        if line.ends_with("- test stopped") {
            let quoted = storcert_util::text::printable(line.trim(), 240);
            for j in judges.iter_mut() {
                j.stopped.get_or_insert_with(|| quoted.clone());
            }
            return;
        }
        if let Some(what) = line
            .strip_prefix("ERROR: reading ")
            .or_else(|| line.strip_prefix("ERROR: writing "))
        {
            // ACT's wording names the device: "ERROR: reading DEV: ...".
            // A drive's own judge counts its own errors; the run's all.
            let device = what.split(": ").next().unwrap_or("");
            let quoted = storcert_util::text::printable(line, 160);
            for j in judges.iter_mut() {
                let own = j.name == JUDGED || j.name.strip_suffix("-reads") == Some(device);
                if own {
                    j.io_errors += 1;
                    j.first_io_error.get_or_insert_with(|| quoted.clone());
                }
            }
            return;
        }
        if let Some(t) = line
            .strip_prefix("after ")
            .and_then(|l| l.strip_suffix(" sec:"))
        {
            self.in_reports = true;
            self.open_report = t.parse().ok();
            for j in judges.iter_mut() {
                match t.parse::<u64>() {
                    Ok(t) => j.start_report(t),
                    Err(_) => j.broken(format!(
                        "a bad report line {:?}",
                        line.chars().take(60).collect::<String>()
                    )),
                }
            }
            return;
        }
        if line.is_empty() {
            self.open_report = None;
        }
        if !self.in_reports {
            // Made once for every judge: a log of 128 drives has 129.
            let line = header_view(line);
            for j in judges.iter_mut() {
                j.header_line(&line);
            }
            return;
        }
        // "reads (N total)" followed by " (NN: count)" lines.
        let Some((i, rest)) = judges.iter().enumerate().find_map(|(i, j)| {
            let rest = line.strip_prefix(j.name.as_str())?.strip_prefix(" (")?;
            Some((i, rest))
        }) else {
            return;
        };
        judges[i].saw_histogram = true;
        let total = rest
            .split_once(" total)")
            .and_then(|(n, _)| n.trim().parse::<u64>().ok());
        self.dump = Some((i, Dump::new(total)));
    }

    fn end_dump(&mut self) {
        if let Some((i, d)) = self.dump.take() {
            let j = &mut self.judges[i];
            if !j.broken {
                j.reads_dump(d);
            }
        }
    }

    /// Whether the log ends inside a histogram of its last report: its
    /// bucket lines hold less than its total.
    pub fn last_report_cut(&self) -> bool {
        self.open_report.is_some()
            && self
                .dump
                .as_ref()
                .is_some_and(|(_, d)| !d.ok || d.sum != d.snap.total)
    }

    /// A verdict per name, once the whole log is read.
    pub fn verdicts(mut self) -> Vec<ActVerdict> {
        // A log cut inside a histogram of its last report (its buckets
        // short of its total, no blank line after it): that report is not
        // judged, the ones before it are. A whole report whose blank line
        // alone is missing (an editor strips it) is judged as any other.
        if self.last_report_cut() {
            if let (Some(t), Some((i, _))) = (self.open_report, self.dump.take()) {
                let j = &mut self.judges[i];
                if j.report.take_if(|r| r.0 == t).is_some() && !j.broken {
                    j.problem(format!(
                        "the log ends inside its report after {t} s, which is not judged"
                    ));
                }
            }
        }
        self.end_dump();
        let in_reports = self.in_reports;
        self.judges
            .into_iter()
            .map(|j| j.verdict(in_reports))
            .collect()
    }
}

impl Judge {
    /// The verdict once the whole log is read.
    fn verdict(mut self, in_reports: bool) -> ActVerdict {
        let j = &mut self;
        let name = j.name.clone();
        j.finish_report();
        let last = j.last.as_ref().map_or(0, |l| l.0);
        if !j.broken {
            if last == 0 && !j.saw_histogram && j.report.is_none() && j.slices == 0 {
                if in_reports {
                    j.problem(format!(
                        "the log has no {name} histogram: ACT's criteria judge transaction reads"
                    ));
                } else {
                    j.problem("the log has no report (\"after N sec:\")".into());
                }
            } else if j.slices == 0 {
                // Shorter than a slice: the whole run is one.
                j.close_slice();
            } else if last > j.boundary.0 {
                // A last part-hour, judged on its own.
                j.close_slice();
            }
        }
        if j.io_errors > 0 {
            let first = j.first_io_error.clone().unwrap_or_default();
            j.problem(format!(
                "{} device I/O error(s) in the log (first: {first})",
                j.io_errors
            ));
        }
        if let Some(line) = j.stopped.clone() {
            j.problem(format!("the run stopped: {line}"));
        } else if !j.broken && last > 0 {
            match j.settings.duration {
                Some(d) if last < d => j.problem(format!(
                    "the log ends after {last} s of the test's {d} s (the run was cut short)"
                )),
                Some(_) => {}
                None => j.problem(
                    "the log names no test-duration-sec, so whether it is whole cannot be told"
                        .into(),
                ),
            }
        }
        if j.more_failures > 0 {
            let more = j.more_failures;
            j.problem(format!("… and {more} more failing slice(s) not listed"));
        }
        if j.more_problems > 0 {
            let more = j.more_problems;
            j.problems.push(format!("… and {more} more problem(s)"));
        }
        let slice = match j.slice {
            Some(s) if s != u64::MAX && last >= s => s,
            _ => last,
        };
        ActVerdict {
            pass: j.failures.is_empty() && j.problems.is_empty(),
            criteria: format!(
                "{name}, in every slice{}: < 5% over 1 ms, < 1% over 8 ms, < 0.1% over 64 ms",
                if slice == 0 {
                    // No report was taken in (none written, or the first
                    // broken): there is no slice to size.
                    " (no report of the log was judged)".to_string()
                } else if slice >= HOUR {
                    format!(" of {slice} s (an hour, in whole reports)")
                } else {
                    format!(" of {slice} s (the whole run)")
                }
            ),
            note: (j.settings.microseconds == Some(true)).then(|| {
                "microsecond histograms: the bucket edges 1.024, 8.192 and 65.536 ms stand for 1, 8 and 64 ms".into()
            }),
            // Shown to two places, as act_latency.py rounds; none where no
            // slice was judged.
            worst_pct: if j.slices == 0 {
                Vec::new()
            } else {
                j.worst
                    .iter()
                    .map(|w| format!("{w:.2}").parse().unwrap_or(*w))
                    .collect()
            },
            failures: std::mem::take(&mut j.failures),
            problems: std::mem::take(&mut j.problems),
            slice_seconds: slice,
        }
    }
}

/// A header line as the judges read it: printable and cut short, as a
/// line quoted in a problem costs its reading, not its copies.
fn header_view(line: &str) -> String {
    storcert_util::text::printable(line, 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log reporting every `interval` s for `duration` s, `reads(t)`
    /// giving the cumulative (bucket, count) pairs at each report.
    fn log(
        duration: u64,
        interval: u64,
        micro: bool,
        reads: impl Fn(u64) -> Vec<(usize, u64)>,
        tail: &str,
    ) -> String {
        let mut s = format!(
            "\nACT version 6.6\nStorage device IO test\n\nACT-STORAGE CONFIGURATION\n\
             test-duration-sec: {duration}\nreport-interval-sec: {interval}\n\
             microsecond-histograms: {}\n\nHISTOGRAM NAMES\nreads\n\n",
            if micro { "yes" } else { "no" }
        );
        let mut t = interval;
        while t <= duration {
            let r = reads(t);
            let total: u64 = r.iter().map(|p| p.1).sum();
            s.push_str(&format!("after {t} sec:\nreads ({total} total)\n"));
            for (b, n) in r {
                s.push_str(&format!(" ({b:02}: {n:010})\n"));
            }
            s.push('\n');
            t += interval;
        }
        s + tail
    }

    fn reasons(v: &ActVerdict) -> Vec<String> {
        v.failures
            .iter()
            .map(|f| format!("slice {}: {}", f.slice, f.rule))
            .chain(v.problems.iter().cloned())
            .collect()
    }

    /// Steady reads: 1000 a second, `slow(t)` of those of second t in
    /// `bucket` (not 0).
    fn steady(bucket: usize, slow: impl Fn(u64) -> u64) -> impl Fn(u64) -> Vec<(usize, u64)> {
        move |t| {
            let s: u64 = (1..=t).map(&slow).sum();
            vec![(0, 1000 * t - s), (bucket, s)]
        }
    }

    /// 1000 fast reads a second.
    fn clean(t: u64) -> Vec<(usize, u64)> {
        vec![(0, 1000 * t)]
    }

    #[test]
    fn the_64_ms_and_microsecond_edges_are_acts() {
        // Bucket 6 is [32, 64) ms: under the 64 ms edge; bucket 7 over.
        let v = judge(&log(10, 1, false, steady(6, |_| 5), ""));
        assert!(v.pass, "{:?}", reasons(&v));
        let v = judge(&log(10, 1, false, steady(7, |_| 1), ""));
        assert_eq!(reasons(&v), ["slice 1: > 64 ms must be < 0.1%"]);
        // Microseconds: bucket 13 is [4096, 8192) µs, 14 over 8.192 ms.
        let v = judge(&log(10, 1, true, steady(13, |_| 50), ""));
        assert_eq!(reasons(&v), ["slice 1: > 1 ms must be < 5%"]);
        let v = judge(&log(10, 1, true, steady(14, |_| 10), ""));
        assert_eq!(reasons(&v), ["slice 1: > 8 ms must be < 1%"]);
        // Bucket 16 is [32.768, 65.536) ms: over 8 ms, under 64 ms.
        let v = judge(&log(10, 1, true, steady(16, |_| 10), ""));
        assert_eq!(reasons(&v), ["slice 1: > 8 ms must be < 1%"]);
        let v = judge(&log(10, 1, true, steady(17, |_| 1), ""));
        assert_eq!(reasons(&v), ["slice 1: > 64 ms must be < 0.1%"]);
    }

    #[test]
    fn hours_are_hours_whatever_the_report_interval() {
        // Reports every 10 minutes; ten minutes of the second hour are
        // all slow (1/6 of that hour's reads > 5%).
        let slow = |t: u64| if (4201..=4800).contains(&t) { 1000 } else { 0 };
        let v = judge(&log(7200, 600, false, steady(1, slow), ""));
        assert_eq!(reasons(&v), ["slice 2: > 1 ms must be < 5%"]);
        assert_eq!(v.slice_seconds, 3600);
        // The worst slice's figures: 600,000 of the second hour's 3.6 M
        // reads in bucket 1 (over 1 ms, under 8 ms).
        assert_eq!(v.worst_pct, [16.67, 0.0, 0.0]);
        // A day in one report cannot be cut into hours.
        let v = judge(&log(86400, 86400, false, clean, ""));
        assert!(!v.pass);
        assert!(
            v.problems[0].contains("cannot be cut into hours"),
            "{:?}",
            v.problems
        );
        // 3599 s reports would make slices of two hours: refused too.
        let v = judge(&log(7198, 3599, false, clean, ""));
        assert!(
            v.problems[0].contains("cannot be cut into hours"),
            "{:?}",
            v.problems
        );
        // 7 s reports: slices of 3605 s, as act_latency.py makes them.
        let v = judge(&log(7210, 7, false, clean, ""));
        assert_eq!(v.slice_seconds, 3605);
        // A run shorter than an hour is one slice, whatever its interval.
        let v = judge(&log(1800, 900, false, clean, ""));
        assert!(v.pass && v.slice_seconds == 1800, "{:?}", reasons(&v));
    }

    #[test]
    fn a_log_that_contradicts_itself_fails() {
        let good = log(4, 1, false, clean, "");
        let cases: [(&str, String); 9] = [
            (
                "given twice",
                good.replace(
                    "report-interval-sec: 1\n",
                    "report-interval-sec: 1\nreport-interval-sec: 2\n",
                ),
            ),
            (
                "given twice",
                good.replace(
                    "microsecond-histograms: no\n",
                    "microsecond-histograms: no\nmicrosecond-histograms: yes\n",
                ),
            ),
            (
                "appears twice",
                good.replace(
                    "after 2 sec:\n",
                    "after 2 sec:\nreads (2000 total)\n (00: 0000002000)\n",
                ),
            ),
            (
                "does not add up",
                good.replace("reads (3000 total)", "reads (2000 total)"),
            ),
            (
                "go down",
                good.replace(
                    "reads (3000 total)\n (00: 0000003000)",
                    "reads (1000 total)\n (00: 0000001000)",
                ),
            ),
            ("comes after", good.replace("after 3 sec:", "after 1 sec:")),
            (
                "past the test",
                good.replace("after 4 sec:", "after 36000000000000 sec:"),
            ),
            ("a gap", {
                let g = log(10, 1, false, clean, "");
                let (a, b) = (
                    g.find("after 3 sec:").unwrap(),
                    g.find("after 9 sec:").unwrap(),
                );
                format!("{}{}", &g[..a], &g[b..])
            }),
            (
                "unreadable",
                good.replace("(00: 0000002000)", "(00: 18446744073709551615) (01: 1)"),
            ),
        ];
        for (why, text) in cases {
            let v = judge(&text);
            assert!(!v.pass, "{why}");
            assert!(
                v.problems.iter().any(|p| p.contains(why)),
                "{why}: {:?}",
                v.problems
            );
        }
        // Settings the table would read otherwise: a report off the
        // interval, a setting in another shape.
        let off = log(14, 7, false, clean, "")
            .replace("report-interval-sec: 7", "report-interval-sec: 2");
        let v = judge(&off);
        assert!(
            v.problems.iter().any(|p| p.contains("puts one at")),
            "{:?}",
            v.problems
        );
        let v = judge(&good.replace("microsecond-histograms: no", "microsecond-histograms:yes"));
        assert!(
            v.problems.iter().any(|p| p.contains("malformed")),
            "{:?}",
            v.problems
        );
        // A stop line with trailing blanks, and I/O errors, fail too.
        let v = judge(&format!("{good}drive(s) can't keep up - test stopped  \n"));
        assert!(v.problems.iter().any(|p| p.contains("test stopped")));
        let v = judge(&good.replace(
            "after 2 sec:",
            "ERROR: reading /dev/sdz: 5 'Input/output error'\nafter 2 sec:",
        ));
        assert_eq!(
            v.problems,
            ["1 device I/O error(s) in the log (first: ERROR: reading /dev/sdz: 5 'Input/output error')"]
        );
    }

    #[test]
    fn a_drive_s_own_judge_counts_its_own_errors_and_quotes_are_cut_short() {
        // Each report's reads again as each drive's own.
        let mut text = String::new();
        let plain = log(4, 1, false, clean, "");
        let mut lines = plain.lines().peekable();
        while let Some(l) = lines.next() {
            text.push_str(l);
            text.push('\n');
            if l.starts_with("reads (") {
                let buckets = lines.next().unwrap();
                text.push_str(buckets);
                text.push('\n');
                for d in ["/dev/sda", "/dev/sdb"] {
                    text.push_str(&format!("{d}-{l}\n{buckets}\n"));
                }
            }
        }
        let text = text.replace(
            "after 2 sec:",
            "ERROR: reading /dev/sdb: 5 'Input/output error'\nafter 2 sec:",
        );
        let names: Vec<String> = ["reads", "/dev/sda-reads", "/dev/sdb-reads"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        let v = judge_histograms(&text, &names);
        let errors = |v: &ActVerdict| v.problems.iter().any(|p| p.contains("I/O error"));
        assert!(errors(&v[0]) && errors(&v[2]) && !errors(&v[1]), "{v:?}");
        assert!(v[1].pass, "{:?}", v[1].problems);
        // One malformed setting line of a megabyte is quoted in 80
        // characters, not copied whole into each judge's problems.
        let huge = format!("test-duration-secX{}\n", "\u{1}".repeat(1 << 20));
        let v = judge_histograms(&format!("{huge}{}", log(4, 1, false, clean, "")), &names);
        for v in &v {
            assert!(
                v.problems.iter().all(|p| p.len() < 2000),
                "{:?}",
                v.problems
            );
        }
    }

    #[test]
    fn hostile_logs_take_bounded_time_and_memory() {
        // A report far past a huge test-duration-sec: the slices are the
        // reports', not one per hour of the claimed time.
        let text = log(3600, 3600, false, clean, "").replace(
            "test-duration-sec: 3600",
            "test-duration-sec: 18446744073709551615",
        )
            + "after 18446744073709551614 sec:\nreads (3600000 total)\n (00: 0003600000)\n";
        let asked = std::time::Instant::now();
        let v = judge(&text);
        assert!(asked.elapsed() < std::time::Duration::from_secs(2));
        assert!(v.problems.len() <= MAX_PROBLEMS + 1, "{}", v.problems.len());
        // Many hourly reports: linear.
        let big = log(3600 * 20_000, 3600, false, clean, "");
        let asked = std::time::Instant::now();
        let v = judge(&big);
        assert!(v.pass, "{:?}", reasons(&v));
        assert!(asked.elapsed() < std::time::Duration::from_secs(5));
        // Many problems: listed up to a bound, then counted.
        let stalls = log(3600 * 100, 3600, false, |_| vec![(0, 1)], "");
        let v = judge(&stalls);
        assert_eq!(v.problems.len(), MAX_PROBLEMS + 1);
        assert!(
            v.problems.last().unwrap().starts_with("… and 79 more"),
            "{:?}",
            v.problems.last()
        );
    }
}
