//! The fleet's answers from its rows (one per drive per run): a cohort's
//! pass rate and the distribution of its key figures, the drives far
//! worse than their cohort (even when they passed), and waivers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use storcert_report::export::DriveRow;
use storcert_results::Verdict;

/// One key figure of a row: its name, value, and whether more is worse.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    pub value: f64,
    pub higher_is_worse: bool,
}

/// A change of a health counter over the run (after − before); none for
/// a counter that went down (reset, or read from another source): no
/// drive heals, and a negative change would hide the others' spread.
fn delta(r: &DriveRow, f: impl Fn(&storcert_report::export::Smart) -> Option<u64>) -> Option<f64> {
    let (b, a) = (f(r.smart_before.as_ref()?)?, f(r.smart_after.as_ref()?)?);
    (a >= b).then_some(a as f64 - b as f64)
}

/// The figures a cohort compares: the worst hour's % > 1 ms at each ACT
/// load, the stream bandwidths (MB/s), and the health counters' changes.
pub fn figures(r: &DriveRow) -> Vec<Figure> {
    let mut out = Vec::new();
    for a in &r.act {
        if let Some(v) = a.pct_over_1ms {
            out.push(Figure {
                name: format!("{} %>1ms", a.key()),
                value: v,
                higher_is_worse: true,
            });
        }
    }
    for (name, bw) in [
        ("stream write MB/s", r.stream_write_bytes_per_s),
        ("stream read MB/s", r.stream_read_bytes_per_s),
    ] {
        if let Some(bw) = bw.filter(|b| b.is_finite()) {
            out.push(Figure {
                name: name.into(),
                value: bw / 1e6,
                higher_is_worse: false,
            });
        }
    }
    for (name, d) in [
        ("media errors Δ", delta(r, |s| s.media_errors)),
        ("reallocated Δ", delta(r, |s| s.reallocated_sectors)),
        ("pending Δ", delta(r, |s| s.pending_sectors)),
    ] {
        if let Some(d) = d {
            out.push(Figure {
                name: name.into(),
                value: d,
                higher_is_worse: true,
            });
        }
    }
    out
}

/// A figure's name as people read it: "act_1.5x_op20 %>1ms" (the export's
/// column, and the key of the cohort's JSON) is "ACT 1.5x, 20% spare:
/// worst hour % > 1 ms"; the others are read as they are.
pub fn figure_label(name: &str) -> String {
    let Some(key) = name.strip_suffix(" %>1ms") else {
        return name.to_string();
    };
    let Some(load) = key.strip_prefix("act_") else {
        return name.to_string();
    };
    let load = match load.split_once("_op") {
        Some((load, spare)) => format!("{load}, {spare}% spare"),
        None => load.to_string(),
    };
    format!("ACT {load}: worst hour % > 1 ms")
}

/// A figure's spread over a cohort.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Distribution {
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

/// The value at quantile `q` of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

impl Distribution {
    fn of(mut v: Vec<f64>) -> Option<Distribution> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Distribution {
            n: v.len(),
            min: v[0],
            p50: quantile(&v, 0.5),
            p90: quantile(&v, 0.9),
            max: v[v.len() - 1],
        })
    }
}

/// A drive far worse than its cohort in one figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Outlier {
    pub bundle_sha256: String,
    pub device: String,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub machine_serial: Option<String>,
    pub model: Option<String>,
    pub verdict: Verdict,
    pub figure: String,
    pub value: f64,
    /// The median of the drives of its model in the cohort.
    pub cohort_median: f64,
    /// How many robust deviations worse than the median.
    pub score: f64,
}

/// The fewest values a figure needs before anything is called an outlier.
pub const MIN_COHORT: usize = 5;
/// Robust deviations from the median beyond which a value is an outlier.
pub const OUTLIER_SCORE: f64 = 3.5;

/// The least spread assumed for a figure, so a cohort of nearly equal
/// values does not call a tiny difference an outlier: a quarter of a
/// percentage point for latency, 5% of the median for bandwidth, one
/// event for a counter.
fn least_spread(name: &str, median: f64) -> f64 {
    if name.ends_with("%>1ms") {
        0.25
    } else if name.ends_with("MB/s") {
        0.05 * median.abs()
    } else {
        1.0
    }
    .max(f64::MIN_POSITIVE)
}

/// A cohort: its drives' verdicts, figures and outliers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cohort {
    pub group: String,
    /// Distinct drives (by serial, else WWN, else machine and path): each
    /// counted once, by its newest run.
    pub drives: usize,
    /// Distinct runs (bundles) its rows came from.
    pub runs: usize,
    /// Rows read (a drive per run).
    pub rows: usize,
    /// True when the group had more rows than were read (the newest only).
    pub truncated: bool,
    pub passed: usize,
    pub failed: usize,
    /// Failures a waiver covers (counted in `failed` too).
    pub waived: usize,
    pub figures: BTreeMap<String, Distribution>,
    pub outliers: Vec<Outlier>,
}

impl Cohort {
    /// Passed over judged (passed + failed), %; none with nothing judged.
    pub fn pass_rate(&self) -> Option<f64> {
        let judged = self.passed + self.failed;
        (judged > 0).then(|| 100.0 * self.passed as f64 / judged as f64)
    }
}

/// What a drive keeps across runs: its serial, else its WWN, else the
/// machine and the path it was tested at.
pub fn drive_identity(r: &DriveRow) -> String {
    fn known(x: &Option<String>) -> Option<&str> {
        x.as_deref().map(str::trim).filter(|x| !x.is_empty())
    }
    match (known(&r.serial), known(&r.wwn)) {
        (Some(s), _) => format!("serial {s}"),
        (None, Some(w)) => format!("wwn {w}"),
        (None, None) => format!("{} {}", r.machine_serial.as_deref().unwrap_or(""), r.device),
    }
}

/// One drive of a cohort, by its newest run: only what the statistics
/// need (a cohort of a hundred thousand rows is not held whole).
struct Member {
    bundle_sha256: String,
    device: String,
    serial: Option<String>,
    wwn: Option<String>,
    machine_serial: Option<String>,
    model: Option<String>,
    verdict: Verdict,
    waived: bool,
    figures: Vec<Figure>,
}

/// A cohort made from its rows, newest first.
pub struct CohortBuilder {
    group: String,
    members: Vec<Member>,
    seen: std::collections::HashSet<String>,
    runs: std::collections::HashSet<String>,
    rows: usize,
    pub truncated: bool,
}

impl CohortBuilder {
    pub fn new(group: String) -> CohortBuilder {
        CohortBuilder {
            group,
            members: Vec::new(),
            seen: Default::default(),
            runs: Default::default(),
            rows: 0,
            truncated: false,
        }
    }

    /// Rows added so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The next row (older than those before): a drive already seen is
    /// counted by its newer run.
    pub fn add(&mut self, r: &DriveRow, waived: bool) {
        self.rows += 1;
        if !self.runs.contains(&r.bundle_sha256) {
            self.runs.insert(r.bundle_sha256.clone());
        }
        if !self.seen.insert(drive_identity(r)) {
            return;
        }
        self.members.push(Member {
            bundle_sha256: r.bundle_sha256.clone(),
            device: r.device.clone(),
            serial: r.serial.clone(),
            wwn: r.wwn.clone(),
            machine_serial: r.machine_serial.clone(),
            model: r.model.clone(),
            verdict: r.verdict,
            waived,
            figures: figures(r),
        });
    }

    pub fn finish(self) -> Cohort {
        let members = &self.members;
        // Figure → its values, and per model (outliers are judged among
        // drives of the same model: a controller's or a tag's cohort may
        // mix SATA and NVMe).
        let mut all: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        // (figure, model) → whether more is worse, (member, value)s.
        type ByModel<'a> = BTreeMap<(&'a str, &'a str), (bool, Vec<(usize, f64)>)>;
        let mut by_model: ByModel = BTreeMap::new();
        for (i, m) in members.iter().enumerate() {
            for f in &m.figures {
                if !f.value.is_finite() {
                    continue;
                }
                all.entry(&f.name).or_default().push(f.value);
                by_model
                    .entry((&f.name, m.model.as_deref().unwrap_or("")))
                    .or_insert_with(|| (f.higher_is_worse, Vec::new()))
                    .1
                    .push((i, f.value));
            }
        }
        let mut outliers = Vec::new();
        for ((name, _), (higher_is_worse, values)) in &by_model {
            if values.len() < MIN_COHORT {
                continue;
            }
            let mut v: Vec<f64> = values.iter().map(|x| x.1).collect();
            v.sort_by(f64::total_cmp);
            let median = quantile(&v, 0.5);
            let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
            dev.sort_by(f64::total_cmp);
            // 1.4826 × MAD estimates the standard deviation of normal data.
            let spread = (1.4826 * quantile(&dev, 0.5)).max(least_spread(name, median));
            for &(i, x) in values {
                let worse = if *higher_is_worse {
                    x - median
                } else {
                    median - x
                };
                let score = worse / spread;
                if score > OUTLIER_SCORE {
                    let m = &members[i];
                    outliers.push(Outlier {
                        bundle_sha256: m.bundle_sha256.clone(),
                        device: m.device.clone(),
                        serial: m.serial.clone(),
                        wwn: m.wwn.clone(),
                        machine_serial: m.machine_serial.clone(),
                        model: m.model.clone(),
                        verdict: m.verdict,
                        figure: name.to_string(),
                        value: x,
                        cohort_median: median,
                        score,
                    });
                }
            }
        }
        outliers.sort_by(|a, b| b.score.total_cmp(&a.score));
        Cohort {
            group: self.group,
            drives: members.len(),
            runs: self.runs.len(),
            rows: self.rows,
            truncated: self.truncated,
            passed: members
                .iter()
                .filter(|m| m.verdict == Verdict::Pass)
                .count(),
            failed: members
                .iter()
                .filter(|m| m.verdict == Verdict::Fail)
                .count(),
            waived: members
                .iter()
                .filter(|m| m.verdict == Verdict::Fail && m.waived)
                .count(),
            figures: all
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), Distribution::of(v)?)))
                .collect(),
            outliers,
        }
    }
}

/// The cohort `group` of `rows`, newest first (waived: whether a row's
/// failure is waived).
pub fn cohort(group: String, rows: &[DriveRow], waived: impl Fn(&DriveRow) -> bool) -> Cohort {
    let mut b = CohortBuilder::new(group);
    for r in rows {
        b.add(r, waived(r));
    }
    b.finish()
}

/// A known failure accepted for a while: findings it covers show as
/// waived (with its reason and expiry), never hidden.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Waiver {
    /// A glob over a failure's reason ("act-storage 6x*", "policy*"):
    /// every reason of the drive's failure must match one waiver.
    pub rule: String,
    /// Globs over the drive's model and serial/WWN ("*" by default).
    #[serde(default = "any")]
    pub model: String,
    #[serde(default = "any")]
    pub serial: String,
    pub reason: String,
    /// The last day it applies, YYYY-MM-DD (UTC).
    pub expires: String,
}

fn any() -> String {
    "*".into()
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Waivers {
    #[serde(default, rename = "waiver")]
    pub waivers: Vec<Waiver>,
}

/// The longest glob a waiver may hold (globs are matched in linear time
/// up to this length).
const MAX_GLOB: usize = 127;

/// How many days ahead a waiver may expire unless the collector is told
/// otherwise (`--waiver-max-days`): a year, so an accepted failure is
/// looked at again rather than waived for good.
pub const DEFAULT_MAX_DAYS: u32 = 365;

impl Waivers {
    /// Reads a waivers file (`[[waiver]]` tables) on `today` (YYYY-MM-DD):
    /// each expiry a real date at most `max_days` ahead (an expired waiver
    /// is kept, and covers nothing), and no waiver that would cover every
    /// failure of every drive. An error is one line naming the file, the
    /// waiver and what is wrong with it.
    pub fn parse(text: &str, origin: &str, today: &str, max_days: u32) -> Result<Waivers, String> {
        let w: Waivers = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        let today_day =
            day_number(today).ok_or_else(|| format!("today {today:?} is not a date"))?;
        for (i, x) in w.waivers.iter().enumerate() {
            let at = format!("{origin}: waiver[{i}]");
            for (key, glob) in [
                ("rule", &x.rule),
                ("model", &x.model),
                ("serial", &x.serial),
            ] {
                if glob.is_empty() || glob.len() > MAX_GLOB {
                    return Err(format!("{at}.{key}: 1 to {MAX_GLOB} characters"));
                }
            }
            if [&x.rule, &x.model, &x.serial]
                .iter()
                .all(|g| matches_anything(g))
            {
                return Err(format!(
                    "{at}: rule, model and serial all match anything, so it would waive \
                     every failure of every drive; narrow one of them"
                ));
            }
            if x.reason.trim().is_empty() {
                return Err(format!("{at}.reason: say why the failure is accepted"));
            }
            let Some(day) = day_number(&x.expires) else {
                return Err(format!(
                    "{at}.expires: {:?} is not a date YYYY-MM-DD (a real day, 1970 or later)",
                    storcert_util::text::printable(&x.expires, 40)
                ));
            };
            let ahead = day.saturating_sub(today_day);
            if ahead > u64::from(max_days) {
                return Err(format!(
                    "{at}.expires: {} is {ahead} days after today ({today}); at most \
                     {max_days} (--waiver-max-days)",
                    x.expires
                ));
            }
        }
        Ok(w)
    }

    /// The waiver that covers `r`'s failure on `today` (YYYY-MM-DD): one
    /// whose model and serial globs match the drive and whose rule matches
    /// a reason, with every reason so matched by some waiver. None for a
    /// drive that did not fail.
    pub fn covering<'a>(&'a self, r: &DriveRow, today: &str) -> Option<&'a Waiver> {
        if r.verdict != Verdict::Fail || r.reasons.is_empty() {
            return None;
        }
        let glob = |p: &str, t: &str| storcert_util::glob::matches_short(p, t).unwrap_or(false);
        let applies: Vec<&Waiver> = self
            .waivers
            .iter()
            .filter(|w| w.expires.as_str() >= today)
            .filter(|w| glob(&w.model, r.model.as_deref().unwrap_or("")))
            .filter(|w| {
                w.serial == "*"
                    || [r.serial.as_deref(), r.wwn.as_deref()]
                        .into_iter()
                        .flatten()
                        .any(|s| glob(&w.serial, s))
            })
            .collect();
        let mut first = None;
        for reason in &r.reasons {
            let w = applies.iter().find(|w| glob(&w.rule, reason))?;
            first.get_or_insert(*w);
        }
        first
    }

    /// "reason (waived until YYYY-MM-DD)".
    pub fn describe(w: &Waiver) -> String {
        format!("{} (waived until {})", w.reason, w.expires)
    }
}

/// The day `s` (YYYY-MM-DD) is, counted from 1970-01-01; None unless it is
/// a day of the calendar (February 29 only in a leap year) from 1970 on.
/// humantime's RFC 3339 reader checks the calendar, leap years included.
fn day_number(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let shaped = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shaped {
        return None;
    }
    let t = humantime::parse_rfc3339(&format!("{s}T00:00:00Z")).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() / 86_400)
}

/// Whether a glob is wildcards only (`*`, `**`, `?*`): it matches every
/// text but the shortest, so it narrows nothing.
fn matches_anything(glob: &str) -> bool {
    glob.contains('*') && glob.chars().all(|c| c == '*' || c == '?')
}

/// Today's date, UTC, YYYY-MM-DD.
pub fn today() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_labelled_in_words() {
        assert_eq!(
            figure_label("act_12x %>1ms"),
            "ACT 12x: worst hour % > 1 ms"
        );
        assert_eq!(
            figure_label("act_1.5x_op20 %>1ms"),
            "ACT 1.5x, 20% spare: worst hour % > 1 ms"
        );
        assert_eq!(figure_label("stream read MB/s"), "stream read MB/s");
    }

    use storcert_report::export::{ActLoad, Smart};

    fn row(serial: &str, pct: f64, write_bw: f64, verdict: Verdict) -> DriveRow {
        DriveRow {
            bundle_sha256: format!("sha-{serial}"),
            device: "/dev/nvme0n1".into(),
            serial: Some(serial.into()),
            model: Some("M".into()),
            verdict,
            reasons: if verdict == Verdict::Fail {
                vec!["act-storage 6x (results/act/x.log): reads slice 1: 9% > 1 ms".into()]
            } else {
                vec![]
            },
            act: vec![ActLoad {
                load: 6.0,
                pct_over_1ms: Some(pct),
                pass: pct < 5.0,
                ..ActLoad::default()
            }],
            stream_write_bytes_per_s: Some(write_bw),
            smart_before: Some(Smart {
                media_errors: Some(0),
                ..Smart::default()
            }),
            smart_after: Some(Smart {
                media_errors: Some(0),
                ..Smart::default()
            }),
            ..DriveRow::default()
        }
    }

    #[test]
    fn a_passing_drive_far_worse_than_its_cohort_is_an_outlier() {
        let mut rows: Vec<DriveRow> = (0..8)
            .map(|i| {
                row(
                    &format!("S{i}"),
                    0.5 + 0.05 * i as f64,
                    2.0e9,
                    Verdict::Pass,
                )
            })
            .collect();
        // Passes (4.2% < 5%), but eight times its cohort's latency.
        rows.push(row("SLOW", 4.2, 2.0e9, Verdict::Pass));
        // Half the cohort's bandwidth.
        rows.push(row("HALF", 0.6, 1.0e9, Verdict::Pass));
        let c = cohort("M".into(), &rows, |_| false);
        assert_eq!((c.drives, c.passed, c.failed), (10, 10, 0));
        assert_eq!(c.pass_rate(), Some(100.0));
        let named: Vec<(&str, &str)> = c
            .outliers
            .iter()
            .map(|o| (o.serial.as_deref().unwrap(), o.figure.as_str()))
            .collect();
        assert!(named.contains(&("SLOW", "act_6x %>1ms")), "{named:?}");
        assert!(named.contains(&("HALF", "stream write MB/s")), "{named:?}");
        assert_eq!(named.len(), 2, "{named:?}");
        let d = &c.figures["act_6x %>1ms"];
        assert_eq!(d.n, 10);
        assert_eq!(d.max, 4.2);
    }

    #[test]
    fn a_drive_counts_once_by_its_newest_run_and_outliers_stay_within_a_model() {
        // Newest first: S0's newer run is slow, its older one fine.
        let mut rows: Vec<DriveRow> = vec![row("S0", 4.0, 2.0e9, Verdict::Pass)];
        rows[0].bundle_sha256 = "newer".into();
        rows.extend((0..6).map(|i| row(&format!("S{i}"), 0.5, 2.0e9, Verdict::Pass)));
        // Another model, much slower in bandwidth: not an outlier of M's.
        for i in 0..5 {
            let mut r = row(&format!("T{i}"), 0.5, 0.5e9, Verdict::Pass);
            r.model = Some("SATA".into());
            rows.push(r);
        }
        // A counter that went down (a reset) is no figure.
        rows[2].smart_after.as_mut().unwrap().media_errors = Some(0);
        rows[2].smart_before.as_mut().unwrap().media_errors = Some(7);
        let c = cohort("PO-1".into(), &rows, |_| false);
        assert_eq!((c.drives, c.rows, c.runs), (11, 12, 12));
        let named: Vec<(&str, &str)> = c
            .outliers
            .iter()
            .map(|o| (o.serial.as_deref().unwrap(), o.figure.as_str()))
            .collect();
        assert_eq!(named, [("S0", "act_6x %>1ms")], "{named:?}");
        assert_eq!(c.outliers[0].bundle_sha256, "newer");
        assert_eq!(c.figures["media errors Δ"].n, 10);
    }

    #[test]
    fn near_equal_values_and_small_cohorts_have_no_outliers() {
        // All within a quarter point: the spread floor keeps them in.
        let rows: Vec<DriveRow> = (0..10)
            .map(|i| {
                row(
                    &format!("S{i}"),
                    0.5 + 0.02 * i as f64,
                    2.0e9,
                    Verdict::Pass,
                )
            })
            .collect();
        assert!(cohort("M".into(), &rows, |_| false).outliers.is_empty());
        // Four drives are too few to call one far worse.
        let mut few: Vec<DriveRow> = (0..3)
            .map(|i| row(&format!("S{i}"), 0.5, 2.0e9, Verdict::Pass))
            .collect();
        few.push(row("X", 4.9, 2.0e9, Verdict::Pass));
        assert!(cohort("M".into(), &few, |_| false).outliers.is_empty());
    }

    #[test]
    fn a_waiver_covers_only_matching_unexpired_failures() {
        let w = Waivers::parse(
            "[[waiver]]\nrule = \"act-storage 6x*\"\nmodel = \"M\"\nserial = \"S*\"\n\
             reason = \"vendor fix in FW 2\"\nexpires = \"2026-12-31\"\n",
            "w.toml",
            "2026-12-01",
            DEFAULT_MAX_DAYS,
        )
        .unwrap();
        let failed = row("S1", 9.0, 2.0e9, Verdict::Fail);
        let got = w.covering(&failed, "2026-12-01").unwrap();
        assert_eq!(
            Waivers::describe(got),
            "vendor fix in FW 2 (waived until 2026-12-31)"
        );
        // Expired, another serial, a passing drive, another reason: no.
        assert!(w.covering(&failed, "2027-01-01").is_none());
        assert!(w
            .covering(&row("X1", 9.0, 2.0e9, Verdict::Fail), "2026-12-01")
            .is_none());
        assert!(w
            .covering(&row("S1", 0.5, 2.0e9, Verdict::Pass), "2026-12-01")
            .is_none());
        let mut two = failed.clone();
        two.reasons
            .push("policy (results/policy.json): firmware".into());
        assert!(w.covering(&two, "2026-12-01").is_none());
    }

    #[test]
    fn bad_waivers_are_refused_naming_the_waiver_and_key() {
        for (text, want) in [
            (
                "[[waiver]]\nrule = \"x\"\nreason = \"r\"\nexpires = \"soon\"\n",
                "waiver[0].expires",
            ),
            (
                "[[waiver]]\nrule = \"x\"\nreason = \" \"\nexpires = \"2026-12-31\"\n",
                "waiver[0].reason",
            ),
            (
                "[[waiver]]\nrule = \"\"\nreason = \"r\"\nexpires = \"2026-12-31\"\n",
                "waiver[0].rule",
            ),
            (
                "[[waiver]]\nrule = \"x\"\nreason = \"r\"\nexpires = \"2026-13-01\"\n",
                "waiver[0].expires",
            ),
            (
                "[[waiver]]\nrule = \"x\"\nreason = \"r\"\nexpires = \"2026-12-31\"\nwho = 1\n",
                "who",
            ),
        ] {
            let e = Waivers::parse(text, "w.toml", "2026-12-01", DEFAULT_MAX_DAYS).unwrap_err();
            assert!(e.contains(want) && e.starts_with("w.toml"), "{text}: {e}");
        }
    }

    fn waiver(rule: &str, model: &str, serial: &str, expires: &str) -> String {
        format!(
            "[[waiver]]\nrule = {rule:?}\nmodel = {model:?}\nserial = {serial:?}\n\
             reason = \"r\"\nexpires = {expires:?}\n"
        )
    }

    #[test]
    fn a_waiver_expires_on_a_real_day_at_most_max_days_ahead() {
        let parse = |expires: &str, today: &str, max: u32| {
            // A good waiver first: the error names the second.
            let text = waiver("x", "M", "S1", "2026-12-31") + &waiver("y", "M", "S2", expires);
            Waivers::parse(&text, "w.toml", today, max)
        };
        for bad in [
            "2026-02-31",
            "2026-04-31",
            "2027-02-29",
            "2100-02-29",
            "0000-01-01",
            "1969-12-31",
            "2026-00-10",
            "2026-12-00",
            "2026-12-1",
            "2026/12/01",
            "+202-12-01",
            "２０２６-12-01",
        ] {
            let e = parse(bad, "2026-12-01", DEFAULT_MAX_DAYS).unwrap_err();
            assert!(
                e.starts_with("w.toml: waiver[1].expires: ") && e.contains("not a date"),
                "{bad}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        // Too far ahead: by default a year.
        for far in ["9999-12-31", "2027-12-02", "2030-01-01"] {
            let e = parse(far, "2026-12-01", DEFAULT_MAX_DAYS).unwrap_err();
            assert!(
                e.starts_with("w.toml: waiver[1].expires: ")
                    && e.contains("at most 365 (--waiver-max-days)"),
                "{far}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(parse("2027-12-02", "2026-12-01", DEFAULT_MAX_DAYS)
            .unwrap_err()
            .contains("366 days after today (2026-12-01)"));
        // Within the limit, leap days of leap years, and expired ones
        // (kept, covering nothing).
        for good in [
            "2027-12-01",
            "2026-12-01",
            "2000-02-29",
            "1970-01-01",
            "2024-02-29",
        ] {
            parse(good, "2026-12-01", DEFAULT_MAX_DAYS).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        parse("2028-02-29", "2027-06-01", DEFAULT_MAX_DAYS).unwrap();
        // The limit is the caller's (the collector's --waiver-max-days).
        parse("2027-12-02", "2026-12-01", 366).unwrap();
        assert!(parse("2026-12-02", "2026-12-01", 0).is_err());
        let old = parse("2024-02-29", "2026-12-01", DEFAULT_MAX_DAYS).unwrap();
        assert!(old
            .covering(&row("S2", 9.0, 2.0e9, Verdict::Fail), "2026-12-01")
            .is_none());
    }

    #[test]
    fn a_waiver_that_covers_every_failure_of_every_drive_is_refused() {
        for (rule, model, serial) in [
            ("*", "*", "*"),
            ("**", "*", "*"),
            ("*", "?*", "*?"),
            ("*?*", "***", "*"),
        ] {
            let text =
                waiver("x", "M", "S1", "2026-12-31") + &waiver(rule, model, serial, "2026-12-31");
            let e = Waivers::parse(&text, "w.toml", "2026-12-01", DEFAULT_MAX_DAYS).unwrap_err();
            assert!(
                e.starts_with("w.toml: waiver[1]: ") && e.contains("every failure of every drive"),
                "{rule} {model} {serial}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        // model and serial default to "*": a rule of "*" alone is everything.
        let e = Waivers::parse(
            "[[waiver]]\nrule = \"*\"\nreason = \"r\"\nexpires = \"2026-12-31\"\n",
            "w.toml",
            "2026-12-01",
            DEFAULT_MAX_DAYS,
        )
        .unwrap_err();
        assert!(e.starts_with("w.toml: waiver[0]: "), "{e}");
        // Any one of them narrowed is a waiver for something.
        for (rule, model, serial) in [
            ("*", "*", "S1"),
            ("*", "M*", "*"),
            ("act-storage *", "*", "*"),
            ("?", "*", "*"),
        ] {
            let text = waiver(rule, model, serial, "2026-12-31");
            Waivers::parse(&text, "w.toml", "2026-12-01", DEFAULT_MAX_DAYS)
                .unwrap_or_else(|e| panic!("{rule} {model} {serial}: {e}"));
        }
    }
}
