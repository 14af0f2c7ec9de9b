//! ACT's artefacts: a workload run's result, its judged log (the analysis),
//! a search for the highest passing load, and prep.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Completed,
    CouldNotKeepUp {
        stream: String,
    },
    DeviceErrors {
        errors: u64,
    },
    StuckIo {
        device: String,
        seconds: u64,
    },
    Interrupted,
    /// Stopped once ACT's rule had failed whatever followed.
    Decided {
        seconds: u64,
        reason: String,
    },
    /// A search trial stopped once statistics put every rule's share of
    /// reads under its limit (`act search --statistical`): a pass for the
    /// search's steps, never a pass on ACT's rule (its log is cut short).
    PassingByStatistics {
        seconds: u64,
        reason: String,
    },
}

/// An outcome as written, read flat: serde's own reading of a tagged enum
/// copies the whole object first, the fields it does not know too, so 12 MB
/// of zeros beside the tag took a report to 235 MiB whatever the typed
/// estimate said. Read this way, a field it does not know is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum OutcomeKind {
    Completed,
    CouldNotKeepUp,
    DeviceErrors,
    StuckIo,
    Interrupted,
    Decided,
    PassingByStatistics,
}

#[derive(Deserialize)]
struct OutcomeJson {
    outcome: OutcomeKind,
    stream: Option<String>,
    errors: Option<u64>,
    device: Option<String>,
    seconds: Option<u64>,
    reason: Option<String>,
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        use serde::de::Error;
        let j = OutcomeJson::deserialize(d)?;
        let missing = |field: &'static str| D::Error::missing_field(field);
        Ok(match j.outcome {
            OutcomeKind::Completed => Outcome::Completed,
            OutcomeKind::CouldNotKeepUp => Outcome::CouldNotKeepUp {
                stream: j.stream.ok_or_else(|| missing("stream"))?,
            },
            OutcomeKind::DeviceErrors => Outcome::DeviceErrors {
                errors: j.errors.ok_or_else(|| missing("errors"))?,
            },
            OutcomeKind::StuckIo => Outcome::StuckIo {
                device: j.device.ok_or_else(|| missing("device"))?,
                seconds: j.seconds.ok_or_else(|| missing("seconds"))?,
            },
            OutcomeKind::Interrupted => Outcome::Interrupted,
            OutcomeKind::Decided => Outcome::Decided {
                seconds: j.seconds.ok_or_else(|| missing("seconds"))?,
                reason: j.reason.ok_or_else(|| missing("reason"))?,
            },
            OutcomeKind::PassingByStatistics => Outcome::PassingByStatistics {
                seconds: j.seconds.ok_or_else(|| missing("seconds"))?,
                reason: j.reason.ok_or_else(|| missing("reason"))?,
            },
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamResult {
    pub label: String,
    pub device: Option<String>,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub asked_per_sec: f64,
    pub issued: u64,
    pub completed: u64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub achieved_per_sec: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistSummary {
    pub name: String,
    pub total: u64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub p50_us: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub p99_us: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub p999_us: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub max_us: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub pct_over_1ms: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub pct_over_8ms: f64,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub pct_over_64ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceResult {
    pub name: String,
    pub size_bytes: u64,
    pub min_op_bytes: u32,
    pub direct_io: bool,
    pub read_errors: u64,
    pub write_errors: u64,
    pub first_errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// `RUN_SCHEMA`; 0 in files written before artefacts carried one.
    #[serde(default)]
    pub schema_version: u32,
    pub outcome: Outcome,
    pub engine: String,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub elapsed_s: f64,
    /// How far behind schedule any request was ever issued, ms.
    #[serde(deserialize_with = "super::null_as_nan")]
    pub max_lag_ms: f64,
    pub reports: u64,
    pub streams: Vec<StreamResult>,
    pub histograms: Vec<HistSummary>,
    pub devices: Vec<DeviceResult>,
    pub read_spikes: Spikes,
    #[serde(skip)]
    pub timeline: Vec<Second>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Second {
    /// Seconds since the start; this sample covers [t-1, t).
    pub t: u64,
    pub reads: u64,
    pub writes: u64,
    pub large_block_reads: u64,
    pub large_block_writes: u64,
    /// Device latency of transaction reads, microseconds.
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub read_p999_us: f64,
    pub read_max_us: f64,
    pub read_pct_over_1ms: f64,
    pub read_pct_over_8ms: f64,
    pub read_pct_over_64ms: f64,
    /// How far behind schedule the issuer was at worst in this second, ms.
    pub max_lag_ms: f64,
}

/// Periodic spikes in a per-second series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Spikes {
    /// Seconds (t) whose value stood out.
    pub seconds: Vec<u64>,
    /// The dominant period in seconds, when the spikes recur regularly.
    pub period_s: Option<u64>,
    #[serde(deserialize_with = "super::null_as_nan")]
    pub threshold: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Trial {
    /// The load in x (fractional loads allowed: 1.5x).
    pub load: f64,
    pub purpose: String,
    /// "passing", "passing by statistics" (`PASSING_BY_STATISTICS`),
    /// "stable at increased latency", "could not keep up", "device
    /// errors", "stuck I/O" or "interrupted".
    pub result: String,
    pub worst_pct_over_1ms: Option<f64>,
    pub worst_pct_over_8ms: Option<f64>,
    pub worst_pct_over_64ms: Option<f64>,
    pub max_lag_ms: f64,
    pub log: String,
    /// The drive it ran on, in a search over several drives side by side;
    /// none in a search over one drive (or a group run as one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<String>,
    /// The length it was planned to run, and how long it ran (less when
    /// its verdict was decided early); 0 in files written before.
    #[serde(default)]
    pub planned_s: u64,
    #[serde(default)]
    pub elapsed_s: f64,
    /// The machine's CPU busy share over the trial (all cores, 0-100): a
    /// host that was the bottleneck shows here, not as a slow drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
    /// It stopped once its verdict could no longer change (not because it
    /// could not keep up, had errors, or was interrupted).
    #[serde(default)]
    pub decided: bool,
}

/// A trial stopped once statistics put it under ACT's limits: passing for
/// the search's next step, but no pass of ACT's rule (its log is cut
/// short), so no answer rests on it.
pub const PASSING_BY_STATISTICS: &str = "passing by statistics";

/// A chance as a percentage: "0.1%" for 0.001.
pub fn chance_text(p: f64) -> String {
    let text = format!("{:.4}", p * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

impl Trial {
    /// Whether the search takes the trial as passing its load.
    pub fn passed(&self) -> bool {
        self.result == "passing" || self.result == PASSING_BY_STATISTICS
    }
}

/// One drive's own answer in a search over several identical drives side
/// by side: the load it confirmed (each drive is qualified on its own).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DriveSearch {
    pub drive: String,
    pub highest_passing_load: Option<f64>,
    pub confirmed: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SearchResult {
    /// `SEARCH_SCHEMA`; 0 in files written before artefacts carried one.
    #[serde(default)]
    pub schema_version: u32,
    pub highest_passing_load: Option<f64>,
    pub confirmed: bool,
    /// The highest load tried (--max) passed: the drive's own limit lies
    /// above it and was not found.
    #[serde(default)]
    pub reached_max: bool,
    /// The search's --max and --step, in x.
    #[serde(default)]
    pub max_load: f64,
    #[serde(default)]
    pub step: f64,
    pub trials: Vec<Trial>,
    pub interrupted: bool,
    /// Loads ran side by side, one per drive, on identical drives; the
    /// highest passing load is then the lowest any drive confirmed, and
    /// `drives` holds each drive's own.
    #[serde(default)]
    pub parallel: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drives: Vec<DriveSearch>,
    /// The trials (not the confirmations) could end early by statistics,
    /// at this chance of a wrong early decision each (`--statistical`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistical: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceRow {
    pub slice: usize,
    /// Seconds covered: (start, end].
    pub end_s: u64,
    /// Percent of this slice's operations over each displayed threshold.
    pub overs: Vec<f64>,
    pub rate: f64,
    pub total: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistTable {
    pub name: String,
    pub thresholds: Vec<u64>,
    pub slices: Vec<SliceRow>,
    pub avg: Vec<f64>,
    pub max: Vec<f64>,
    pub avg_rate: f64,
    pub max_rate: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub histogram: String,
    pub slice: usize,
    pub rule: String,
    pub percent: f64,
}

/// The judge's reading of an ACT log's histograms: whether every slice
/// kept within the limits, and where it did not. (`results::Verdict` is
/// the word a summary gives; this is how a log earned it.)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ActVerdict {
    pub pass: bool,
    pub criteria: String,
    /// Microsecond logs have no bucket edge at 1/8/64 ms: the nearest
    /// edges above them (1.024/8.192/65.536 ms) are used and named here.
    pub note: Option<String>,
    pub failures: Vec<Failure>,
    /// Reasons the log cannot pass that are not a slice's percentages: a
    /// slice with no reads, a run that stopped or was cut short.
    #[serde(default)]
    pub problems: Vec<String>,
    /// The slice length the verdict used: an hour, or a shorter run whole.
    #[serde(default)]
    pub slice_seconds: u64,
    /// The highest percentage of reads over 1, 8 and 64 ms in any judged
    /// slice: the figures a cross-load table shows beside the verdict.
    /// Empty where no slice was judged (and in analyses before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worst_pct: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Analysis {
    pub log: String,
    pub act_version: String,
    pub scale: String,
    pub slice_seconds: u64,
    pub histograms: Vec<HistTable>,
    pub verdict: ActVerdict,
    /// The text act_latency.py would print.
    #[serde(skip)]
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PassResult {
    pub pass: String,
    pub bytes: u64,
    pub seconds: f64,
    pub mb_per_sec: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrepResult {
    pub device: String,
    pub size_bytes: u64,
    pub passes: Vec<PassResult>,
    pub interrupted: bool,
}

/// 2: the outcome `decided` (a run stopped once its verdict could not
/// change).
pub const RUN_SCHEMA: u32 = 2;

/// Whether writes per read (`LogAnalysis::writes_per_read`, whole rates
/// near 1,000 per 2,000 already made 0.5) is ACT's own mix, or unsaid.
pub fn standard_mix(writes_per_read: Option<f64>) -> bool {
    writes_per_read.is_none_or(|w| w == 0.5)
}
/// 2: fractional loads, `reached_max`, `max_load` and `step`.
pub const SEARCH_SCHEMA: u32 = 2;
/// 2: the verdict judges `reads` only, by hours, with `problems`.
pub const ANALYSIS_SCHEMA: u32 = 2;
pub const PREP_SCHEMA: u32 = 1;

/// An ACT log judged once, right after its run, with ACT's criteria: the
/// summary and the report read this instead of analysing the log again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogAnalysis {
    pub schema_version: u32,
    /// The log's file name, in the folder of this file.
    pub log: String,
    /// SHA-256 of the log judged: an analysis of other bytes is stale.
    pub log_sha256: String,
    /// "storage" or "index".
    pub workload: String,
    pub devices: Vec<String>,
    /// Nx per device, from the log's configured read rate.
    pub load: Option<f64>,
    /// Writes asked per read (ACT's default mix, 1000 per 2000, is 0.5):
    /// loads compare only within one mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes_per_read: Option<f64>,
    /// The per-second timeline's file name beside the log, when kept.
    pub timeline: Option<String>,
    /// The I/O engine storcert's log header names ("io_uring", "null");
    /// none for upstream ACT's logs.
    #[serde(default)]
    pub engine: Option<String>,
    pub analysis: Analysis,
    /// In a storage run over several drives, each drive's own reads
    /// ("/dev/sdb-reads") judged by the same rule: a drive passes on its
    /// own share, not on the others' average.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_device: Vec<DeviceVerdict>,
}

/// One drive's share of a run over several, judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceVerdict {
    pub device: String,
    pub verdict: ActVerdict,
}

/// A verdict's reasons, one line: its problems, then each failing slice.
pub fn verdict_reasons(v: &ActVerdict) -> String {
    // One reason per histogram and rule, however many slices broke it: a
    // 24-hour run over its limit every hour is one line, not 24.
    let mut groups: Vec<(&str, &str, Vec<&Failure>)> = Vec::new();
    for f in &v.failures {
        match groups
            .iter_mut()
            .find(|(h, r, _)| *h == f.histogram && *r == f.rule)
        {
            Some((_, _, fs)) => fs.push(f),
            None => groups.push((&f.histogram, &f.rule, vec![f])),
        }
    }
    // Past the judge's list of failing slices ("… and N more failing
    // slice(s) not listed"), the worst is the verdict's own figure.
    let (more, problems): (Vec<&String>, Vec<&String>) =
        v.problems.iter().partition(|p| p.starts_with("… and "));
    let truncated = !more.is_empty();
    let unlisted_worst = |rule: &str| {
        let at = ["> 1 ms", "> 8 ms", "> 64 ms"]
            .iter()
            .position(|t| rule.starts_with(t))?;
        truncated.then(|| v.worst_pct.get(at).copied()).flatten()
    };
    let groups = groups
        .into_iter()
        .map(|(histogram, rule, fs)| match fs[..] {
            [f] => match unlisted_worst(rule) {
                Some(w) if w > f.percent => format!(
                    "{histogram} slice {}: {:.2}% (up to {w:.2}% in slices not listed) {rule}",
                    f.slice, f.percent
                ),
                _ => format!("{histogram} slice {}: {:.2}% {rule}", f.slice, f.percent),
            },
            _ => {
                // The first slice at the worst figure.
                let worst = fs[1..]
                    .iter()
                    .fold(fs[0], |w, f| if f.percent > w.percent { f } else { w });
                let slices: Vec<usize> = fs.iter().map(|f| f.slice).collect();
                let most = match unlisted_worst(rule) {
                    Some(w) if w > worst.percent => format!("{w:.2}%"),
                    _ => format!("{:.2}% (slice {})", worst.percent, worst.slice),
                };
                format!(
                    "{histogram} slices {}: up to {most} {rule}",
                    ranges(&slices)
                )
            }
        });
    problems
        .into_iter()
        .cloned()
        .chain(groups)
        .chain(more.into_iter().cloned())
        .collect::<Vec<_>>()
        .join("; ")
}

/// "1-4, 7, 9-10" for slices 1, 2, 3, 4, 7, 9, 10 (in the order given,
/// which is ascending).
fn ranges(slices: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < slices.len() {
        let mut j = i;
        while j + 1 < slices.len() && slices[j + 1] == slices[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            slices[i].to_string()
        } else {
            format!("{}-{}", slices[i], slices[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// The engine that does no I/O: its results are a test of storcert, never
/// of a drive.
pub const NULL_ENGINE: &str = "null";

/// The judgement of a result the null engine made: a failure, whatever its
/// figures say, so that no bundle qualifies a drive on it.
pub fn null_engine_judgement(devices: Vec<String>) -> super::verdict::Judgement {
    super::verdict::Judgement {
        verdict: super::Verdict::Fail,
        detail: "made by the null engine, which does no I/O: it qualifies no drive".into(),
        devices,
        per_device: Vec::new(),
    }
}

/// ACT prep of one or more devices.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prep {
    pub schema_version: u32,
    pub devices: Vec<PrepResult>,
}

impl RunResult {
    /// A run judged by how it ended: completed, or stopped and why.
    pub fn judgement(&self) -> super::verdict::Judgement {
        if self.engine == NULL_ENGINE {
            return null_engine_judgement(self.devices.iter().map(|d| d.name.clone()).collect());
        }
        let errors = self.device_errors();
        let detail = match &self.outcome {
            Outcome::Completed if !errors.is_empty() => {
                format!("completed with {}", errors.join("; "))
            }
            Outcome::Completed => "completed".to_string(),
            // What stopped it, in words and with the drives' errors: the
            // stage's own line folds behind this one on the first screen.
            Outcome::CouldNotKeepUp { stream } => format!("stopped: {stream} could not keep up"),
            Outcome::DeviceErrors { errors: n } => {
                format!("stopped after {n} device errors: {}", errors.join("; "))
            }
            Outcome::StuckIo { device, seconds } => {
                format!("stopped: an I/O on {device} did not complete in {seconds} s")
            }
            Outcome::Interrupted => "interrupted".to_string(),
            Outcome::Decided { seconds, reason }
            | Outcome::PassingByStatistics { seconds, reason } => {
                format!("decided after {seconds} s: {reason}")
            }
        };
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(self.outcome == Outcome::Completed && errors.is_empty()),
            detail,
            devices: self.devices.iter().map(|d| d.name.clone()).collect(),
        }
    }
}

impl LogAnalysis {
    /// Whether it ran ACT's own read/write mix (1,000 writes per 2,000
    /// reads), or says nothing of it: only such a run's load is a load in
    /// ACT's sense.
    pub fn standard_mix(&self) -> bool {
        standard_mix(self.writes_per_read)
    }

    /// "1.5x": the load as ACT's write-ups name it.
    pub fn load_text(&self) -> String {
        match self.load {
            Some(l) => {
                format!("{l:.3}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string()
                    + "x"
            }
            None => "?x".into(),
        }
    }

    /// ACT's criteria over the log's slices.
    pub fn judgement(&self) -> super::verdict::Judgement {
        if self.engine.as_deref() == Some(NULL_ENGINE) {
            return null_engine_judgement(self.devices.clone());
        }
        let v = &self.analysis.verdict;
        let detail = if v.pass {
            format!(
                "reads within ACT's limits in every slice of {} s",
                v.slice_seconds
            )
        } else {
            verdict_reasons(v)
        };
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(v.pass),
            detail,
            devices: self.devices.clone(),
        }
    }
}

impl LogAnalysis {
    /// One drive's share of a run over several: it passes where its own
    /// histogram and ACT's rule over the run's transactions (`reads`)
    /// both pass. In upstream ACT's logs "/dev/X-reads" is the drive's raw
    /// latency, without the queueing `reads` includes, so the drive's own
    /// figure alone could pass a load ACT failed.
    pub fn share_judgement(&self, d: &DeviceVerdict) -> super::verdict::Judgement {
        let run = &self.analysis.verdict;
        let pass = d.verdict.pass && run.pass;
        let detail = match (d.verdict.pass, run.pass) {
            (true, true) => "its reads and the run's within ACT's limits in every slice".into(),
            (false, true) => verdict_reasons(&d.verdict),
            (true, false) => format!("the run over all drives: {}", verdict_reasons(run)),
            (false, false) => format!(
                "{}; the run over all drives: {}",
                verdict_reasons(&d.verdict),
                verdict_reasons(run)
            ),
        };
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(pass),
            detail,
            devices: vec![d.device.clone()],
        }
    }
}

impl SearchResult {
    /// How many trials stopped sooner than planned once their verdict was
    /// decided, and the drive time that saved (trials side by side each
    /// count their own: the wall time saved is less).
    pub fn saved_by_early_decisions(&self) -> (usize, f64) {
        self.trials
            .iter()
            .filter(|t| t.decided && t.planned_s > 0)
            .map(|t| (t.planned_s as f64 - t.elapsed_s).max(0.0))
            .filter(|saved| *saved >= 1.0)
            .fold((0, 0.0), |(n, total), saved| (n + 1, total + saved))
    }

    /// A search is judged by its result: failing the loads above the
    /// highest passing one is how a search works. Its devices are those of
    /// its trials' logs, which the caller knows.
    pub fn judgement(&self, devices: Vec<String>) -> super::verdict::Judgement {
        let detail = match self.highest_passing_load {
            Some(l) => format!(
                "highest passing load {l}x{}{}",
                if self.confirmed {
                    ", confirmed"
                } else {
                    ", not confirmed"
                },
                if self.reached_max {
                    " (reached --max: the drive's limit is higher)"
                } else {
                    ""
                }
            ),
            None => "no load passed".into(),
        };
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(self.highest_passing_load.is_some()),
            detail,
            devices,
        }
    }
}

impl RunResult {
    /// Each device that had errors: "DEV: N read and M write errors, first: …".
    pub fn device_errors(&self) -> Vec<String> {
        self.devices
            .iter()
            .filter(|d| d.read_errors + d.write_errors > 0)
            .map(|d| {
                format!(
                    "{}: {} read and {} write errors{}",
                    d.name,
                    d.read_errors,
                    d.write_errors,
                    d.first_errors
                        .first()
                        .map(|e| format!(", first: {e}"))
                        .unwrap_or_default()
                )
            })
            .collect()
    }
}

impl Analysis {
    /// The verdict as people read it, printed after the table.
    pub fn verdict_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let v = &self.verdict;
        let _ = writeln!(
            s,
            "\nverdict: {} ({})",
            if v.pass { "PASS" } else { "FAIL" },
            v.criteria
        );
        for p in &v.problems {
            let _ = writeln!(s, "  {p}");
        }
        for f in &v.failures {
            let _ = writeln!(
                s,
                "  slice {} of {}: {:.2}% {} (rule: {})",
                f.slice,
                f.histogram,
                f.percent,
                f.rule.split(" must").next().unwrap_or(""),
                f.rule
            );
        }
        // After the reasons, which belong to the verdict line above them.
        if let Some(n) = &v.note {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    /// A reason per histogram and rule: the slices that broke it, as
    /// ranges, and the worst; one slice reads as it always did.
    #[test]
    fn reasons_are_one_per_rule_however_many_slices_broke_it() {
        let f = |slice, rule: &str, percent| super::Failure {
            histogram: "reads".into(),
            slice,
            rule: rule.into(),
            percent,
        };
        let v = super::ActVerdict {
            problems: vec!["the log ends after 5 h of the test's 24 h".into()],
            failures: vec![
                f(1, "> 1 ms must be < 5%", 7.6),
                f(1, "> 8 ms must be < 1%", 1.5),
                f(2, "> 1 ms must be < 5%", 9.25),
                f(3, "> 1 ms must be < 5%", 5.1),
                f(5, "> 1 ms must be < 5%", 6.0),
            ],
            ..Default::default()
        };
        assert_eq!(
            super::verdict_reasons(&v),
            "the log ends after 5 h of the test's 24 h; \
             reads slices 1-3, 5: up to 9.25% (slice 2) > 1 ms must be < 5%; \
             reads slice 1: 1.50% > 8 ms must be < 1%"
        );
        assert_eq!(super::ranges(&[1, 2, 4, 6, 7, 8]), "1-2, 4, 6-8");
        // Past the judge's list: the worst of every slice, and the note
        // of the unlisted ones after the reasons they add to.
        let v = super::ActVerdict {
            problems: vec!["… and 100 more failing slice(s) not listed".into()],
            failures: vec![
                f(1, "> 1 ms must be < 5%", 7.0),
                f(2, "> 1 ms must be < 5%", 8.0),
            ],
            worst_pct: vec![50.0, 0.5, 0.0],
            ..Default::default()
        };
        assert_eq!(
            super::verdict_reasons(&v),
            "reads slices 1-2: up to 50.00% > 1 ms must be < 5%; \
             … and 100 more failing slice(s) not listed"
        );
        let v = super::ActVerdict {
            failures: vec![f(300, "> 1 ms must be < 5%", 7.0)],
            ..v
        };
        assert_eq!(
            super::verdict_reasons(&v),
            "reads slice 300: 7.00% (up to 50.00% in slices not listed) > 1 ms must be < 5%; \
             … and 100 more failing slice(s) not listed"
        );
    }

    #[test]
    fn an_outcome_reads_as_it_is_written_and_skips_what_it_does_not_know() {
        for o in [
            Outcome::Completed,
            Outcome::CouldNotKeepUp {
                stream: "reads".into(),
            },
            Outcome::DeviceErrors { errors: 3 },
            Outcome::StuckIo {
                device: "/dev/sda".into(),
                seconds: 30,
            },
            Outcome::Interrupted,
            Outcome::Decided {
                seconds: 36,
                reason: "slice 1 (0-3600 s) can no longer pass".into(),
            },
            Outcome::PassingByStatistics {
                seconds: 15,
                reason: "slice 1 (0-60 s) passes by statistics".into(),
            },
        ] {
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), o, "{json}");
        }
        let o: Outcome =
            serde_json::from_str(r#"{"outcome":"device-errors","x":[0,0,0],"errors":2}"#).unwrap();
        assert_eq!(o, Outcome::DeviceErrors { errors: 2 });
        let e =
            serde_json::from_str::<Outcome>(r#"{"outcome":"stuck-io","seconds":1}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `device`"), "{e}");
        assert!(serde_json::from_str::<Outcome>(r#"{"outcome":"gone"}"#).is_err());
    }

    use super::*;

    #[test]
    fn a_completed_run_with_device_errors_fails() {
        let mut r: RunResult = serde_json::from_value(serde_json::json!({
            "outcome": {"outcome": "completed"}, "engine": "sync", "elapsed_s": 1.0,
            "max_lag_ms": 0.0, "reports": 1, "streams": [], "histograms": [],
            "devices": [{"name": "/dev/sdb", "size_bytes": 1, "min_op_bytes": 512,
                "direct_io": true, "read_errors": 0, "write_errors": 0, "first_errors": []}],
            "read_spikes": {"seconds": [], "period_s": null, "threshold": null}
        }))
        .unwrap();
        assert_eq!(r.judgement().verdict, crate::Verdict::Pass);
        assert!(r.read_spikes.threshold.is_nan());
        r.devices[0].write_errors = 2;
        r.devices[0].first_errors = vec!["write at 4096: EIO".into()];
        let j = r.judgement();
        assert_eq!(j.verdict, crate::Verdict::Fail);
        assert_eq!(
            j.detail,
            "completed with /dev/sdb: 0 read and 2 write errors, first: write at 4096: EIO"
        );
        assert_eq!(j.devices, ["/dev/sdb"]);
    }
}
