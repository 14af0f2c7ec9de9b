//! ACT's pass rule over a whole log, apart from act_latency.py's display:
//! the transactions (the `reads` histogram, in storage and index logs
//! alike) in every hour have < 5% over 1 ms, < 1% over 8 ms and < 0.1%
//! over 64 ms. Whatever histograms or slice length a user asks the table
//! for, the verdict is this one.
//!
//! What act_latency.py leaves to the reader, the verdict does not: a slice
//! in which no read completed (a stalled drive), a log that ends in ACT's
//! "test stopped", and a log that ends before its test-duration-sec each
//! fail with that reason. A run not a whole number of hours long has its
//! last part judged as a slice of its own, where act_latency.py drops it.

use super::histogram::N_BUCKETS;
use crate::results::act::{Failure, Verdict};

/// The histogram ACT's criteria judge.
pub const JUDGED: &str = "reads";

const HOUR: u64 = 3600;

/// One report's cumulative reads: total and per-bucket counts.
#[derive(Clone, Default)]
struct Snapshot {
    total: u64,
    buckets: Vec<u64>,
}

impl Snapshot {
    /// Operations above bucket `edge` (its upper bound is the threshold).
    fn over(&self, edge: usize) -> u64 {
        let under: u64 = self.buckets.iter().take(edge + 1).sum();
        self.total.saturating_sub(under)
    }
}

struct Log {
    duration: Option<u64>,
    interval: u64,
    microseconds: bool,
    /// (seconds, the reads histogram if the report had one)
    reports: Vec<(u64, Option<Snapshot>)>,
    stopped: Option<String>,
    unreadable: Option<String>,
}

fn setting<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.strip_prefix(key)?.strip_prefix(": ").map(str::trim)
}

/// `(NN: count)` pairs of a bucket line, in order.
fn bucket_pairs(line: &str) -> Option<Vec<(usize, u64)>> {
    let mut out = Vec::new();
    for part in line.split('(').skip(1) {
        let (b, rest) = part.split_once(':')?;
        let count = rest.split(')').next()?.trim();
        out.push((b.trim().parse().ok()?, count.parse().ok()?));
    }
    Some(out)
}

fn read_log(text: &str) -> Log {
    let mut log = Log {
        duration: None,
        interval: 1,
        microseconds: false,
        reports: Vec::new(),
        stopped: None,
        unreadable: None,
    };
    let mut lines = text.lines().peekable();
    let mut in_reports = false;
    while let Some(line) = lines.next() {
        if let Some(t) = line
            .strip_prefix("after ")
            .and_then(|l| l.strip_suffix(" sec:"))
        {
            in_reports = true;
            match t.parse::<u64>() {
                Ok(t) if log.reports.last().is_none_or(|r| r.0 < t) => {
                    log.reports.push((t, None));
                }
                _ => {
                    log.unreadable
                        .get_or_insert(format!("out-of-order report line {line:?}"));
                }
            }
            continue;
        }
        if line.ends_with("- test stopped") {
            log.stopped.get_or_insert(line.trim().to_string());
            continue;
        }
        if !in_reports {
            if let Some(v) = setting(line, "test-duration-sec") {
                log.duration = v.parse().ok();
            } else if let Some(v) = setting(line, "report-interval-sec") {
                log.interval = v.parse().ok().filter(|&i| i > 0).unwrap_or(1);
            } else if let Some(v) = setting(line, "microsecond-histograms") {
                log.microseconds = v.starts_with('y');
            }
            continue;
        }
        // "reads (N total) ..." followed by " (NN: count)" lines.
        let Some(rest) = line.strip_prefix(JUDGED).and_then(|r| r.strip_prefix(" (")) else {
            continue;
        };
        let Some((t, report)) = log.reports.last_mut() else {
            continue;
        };
        let total = rest
            .split_once(" total)")
            .and_then(|(n, _)| n.trim().parse::<u64>().ok());
        let mut snap = Snapshot {
            total: total.unwrap_or(0),
            buckets: vec![0; N_BUCKETS],
        };
        let mut bad = total.is_none();
        while let Some(next) = lines.next_if(|l| l.starts_with(" (")) {
            match bucket_pairs(next) {
                Some(pairs) => {
                    for (b, n) in pairs {
                        match snap.buckets.get_mut(b) {
                            Some(slot) => *slot = n,
                            None => bad = true,
                        }
                    }
                }
                None => bad = true,
            }
        }
        if bad {
            log.unreadable
                .get_or_insert(format!("the reads histogram after {t} s is unreadable"));
        } else {
            *report = Some(snap);
        }
    }
    log
}

/// The slice length the verdict uses: an hour, or the whole of a shorter
/// log, rounded up to whole report intervals as act_latency.py does.
fn slice_seconds(last: u64, interval: u64) -> u64 {
    let s = if last > 0 && last < HOUR { last } else { HOUR };
    s.div_ceil(interval) * interval
}

/// Judges a log by ACT's criteria; never fails to answer.
pub fn judge(text: &str) -> Verdict {
    let log = read_log(text);
    let mut failures = Vec::new();
    let mut problems = Vec::new();
    // Reports with the histogram (one cut off in the writing has none).
    let judged: Vec<(u64, &Snapshot)> = log
        .reports
        .iter()
        .filter_map(|(t, s)| Some((*t, s.as_ref()?)))
        .collect();
    let last = judged.last().map_or(0, |r| r.0);
    let slice = slice_seconds(last, log.interval);
    let edges = if log.microseconds {
        [10, 13, 16]
    } else {
        [0, 3, 6]
    };
    if let Some(why) = &log.unreadable {
        problems.push(why.clone());
    }
    if log.reports.is_empty() {
        problems.push("the log has no report (\"after N sec:\")".into());
    } else if judged.is_empty() {
        problems.push(format!(
            "the log has no {JUDGED} histogram: ACT's criteria judge transaction reads"
        ));
    } else {
        // Slice ends: every multiple of the slice length reached, then the
        // log's last report if it lies beyond.
        let mut ends: Vec<u64> = (1..=last / slice).map(|k| k * slice).collect();
        if ends.last().is_none_or(|&e| e < last) {
            ends.push(last);
        }
        let mut before = Snapshot::default();
        let mut from = 0;
        for (n, &end) in ends.iter().enumerate() {
            let at = judged
                .iter()
                .rev()
                .find(|r| r.0 <= end)
                .map(|r| r.1.clone())
                .unwrap_or_default();
            let total = at.total.saturating_sub(before.total);
            if total == 0 {
                problems.push(format!(
                    "slice {} ({from}-{end} s): no {JUDGED} completed",
                    n + 1
                ));
            }
            const RULES: [(&str, u64, u64); 3] =
                [("> 1 ms", 5, 100), ("> 8 ms", 1, 100), ("> 64 ms", 1, 1000)];
            for (k, (rule, num, den)) in RULES.iter().enumerate() {
                let over = at.over(edges[k]).saturating_sub(before.over(edges[k]));
                // over/total < num/den, in integers: no rounding at the edge.
                if total > 0 && over as u128 * *den as u128 >= *num as u128 * total as u128 {
                    failures.push(Failure {
                        histogram: JUDGED.into(),
                        slice: n + 1,
                        rule: format!("{rule} must be < {}%", *num as f64 * 100.0 / *den as f64),
                        percent: over as f64 * 100.0 / total as f64,
                    });
                }
            }
            before = at;
            from = end;
        }
    }
    if let Some(line) = &log.stopped {
        problems.push(format!("the run stopped: {line}"));
    } else if !judged.is_empty() {
        match log.duration {
            Some(d) if last < d => problems.push(format!(
                "the log ends after {last} s of the test's {d} s (the run was cut short)"
            )),
            Some(_) => {}
            None => problems.push(
                "the log names no test-duration-sec, so whether it is whole cannot be told".into(),
            ),
        }
    }
    for f in &mut failures {
        // Shown to two places, as act_latency.py rounds.
        f.percent = format!("{:.2}", f.percent).parse().unwrap_or(f.percent);
    }
    Verdict {
        pass: failures.is_empty() && problems.is_empty(),
        criteria: format!(
            "{JUDGED}, in every slice of {}: < 5% over 1 ms, < 1% over 8 ms, < 0.1% over 64 ms",
            if slice >= HOUR {
                "an hour".to_string()
            } else {
                format!("{slice} s (the whole run)")
            }
        ),
        note: log.microseconds.then(|| {
            "microsecond histograms: the bucket edges 1.024, 8.192 and 65.536 ms stand for 1, 8 and 64 ms".into()
        }),
        failures,
        problems,
        slice_seconds: slice,
    }
}
