//! The search for the highest load a drive passes: short trials at rising
//! loads (1x, 2x, 4x, ... up to --max), then bisection between the last
//! passing and the first failing load down to --step (fractions allowed:
//! 0.5x), then one confirmation run at the load found, stepping down while
//! it fails — what people qualifying drives do by hand. Every trial is
//! judged by ACT's rule on its log (hourly slices; a shorter trial is one
//! slice), as any run is.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use storcert_output::console::Console;

use anyhow::{Context, Result};

use super::config::{rates_for_load, StorageConfig};
use super::runner::Outcome;
use super::{run_workload, RunOptions};
pub use storcert_results::act::{SearchResult, Trial};

#[derive(Debug, Clone)]
pub struct SearchSpec {
    /// The configuration every trial starts from (devices, record sizes,
    /// ...); its rates and duration are set per trial.
    pub base: StorageConfig,
    /// In x.
    pub max_load: f64,
    /// The resolution of the bisection, in x.
    pub step: f64,
    pub trial_secs: u64,
    pub confirm_secs: u64,
    pub out_dir: PathBuf,
    /// `out_dir`'s path in its results folder ("act/search-sda/"), which
    /// names the trials' logs in their analyses; empty: their file names.
    pub label_dir: String,
}

/// What every trial of one search shares.
struct Trials<'a> {
    spec: &'a SearchSpec,
    opts: &'a RunOptions,
    stop: &'a Arc<AtomicBool>,
    console: &'a Console,
}

fn trial(
    Trials {
        spec,
        opts,
        stop,
        console,
    }: &Trials,
    load: f64,
    secs: u64,
    purpose: &str,
    n: usize,
) -> Result<(Trial, Judged)> {
    let mut cfg = spec.base.clone();
    let (r, w) = rates_for_load(load, cfg.device_names.len());
    cfg.read_reqs_per_sec = r;
    cfg.write_reqs_per_sec = w;
    cfg.test_duration_sec = secs;
    cfg.finish("search").map_err(|e| anyhow::anyhow!("{e}"))?;
    let log_name = format!("trial-{n:02}-{load}x.log");
    let log_path = spec.out_dir.join(&log_name);
    let mut log = std::fs::File::create(&log_path)
        .with_context(|| format!("create {}", log_path.display()))?;
    console.say(&format!(
        "act search: {purpose} trial at {load}x for {secs} s ({})",
        log_path.display()
    ));
    let run = run_workload(
        &cfg,
        opts,
        stop,
        &mut super::runner::Sinks {
            log: &mut log,
            timeline: None,
            progress: None,
        },
    )?;
    log.flush()?;
    drop(log);
    // The trial's log judged once, as every run's is, and kept beside it.
    let label = format!("{}{log_name}", spec.label_dir);
    let judged = super::save_analysis(
        &log_path,
        (!spec.label_dir.is_empty()).then_some(label.as_str()),
        None,
    );
    let analysis = judged.as_ref().map(|a| &a.analysis);
    let (result, worst) = match (&run.outcome, analysis) {
        (Outcome::CouldNotKeepUp { .. }, _) => ("could not keep up", None),
        (Outcome::DeviceErrors { .. }, _) => ("device errors", None),
        (Outcome::StuckIo { .. }, _) => ("stuck I/O", None),
        (Outcome::Interrupted, _) => ("interrupted", None),
        (Outcome::Completed | Outcome::Decided { .. }, Ok(a)) => {
            let reads = &a.histograms[0];
            let worst = Some((reads.max[0], reads.max[3], reads.max[6]));
            (
                if a.verdict.pass {
                    "passing"
                } else if a.verdict.failures.is_empty() {
                    // No slice over the limits, yet not a pass: a slice
                    // in which no read completed.
                    "stalled"
                } else {
                    "stable at increased latency"
                },
                worst,
            )
        }
        (Outcome::Completed, Err(_)) => ("could not keep up", None),
        (Outcome::Decided { .. }, Err(_)) => ("over ACT's limits", None),
    };
    let t = Trial {
        load,
        purpose: purpose.to_string(),
        result: result.to_string(),
        worst_pct_over_1ms: worst.map(|w| w.0),
        worst_pct_over_8ms: worst.map(|w| w.1),
        worst_pct_over_64ms: worst.map(|w| w.2),
        max_lag_ms: run.max_lag_ms,
        log: log_path.display().to_string(),
    };
    Ok((t, (log_path, judged)))
}

/// A trial's log and its judgement.
pub type Judged = (
    PathBuf,
    std::result::Result<storcert_results::act::LogAnalysis, super::Unjudged>,
);

/// A search's result and the judgement of each of its trials' logs.
pub struct Searched {
    pub result: SearchResult,
    pub trials: Vec<Judged>,
}

/// Each trial's start and result go to `console`.
pub fn search(
    spec: &SearchSpec,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    console: &Console,
) -> Result<Searched> {
    std::fs::create_dir_all(&spec.out_dir)
        .with_context(|| format!("create {}", spec.out_dir.display()))?;
    let shared = Trials {
        spec,
        opts,
        stop,
        console,
    };
    let mut n = 0;
    let mut judged = Vec::new();
    let result = strategy(
        spec.max_load,
        spec.step,
        spec.trial_secs,
        spec.confirm_secs,
        |load, secs, purpose| {
            n += 1;
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let (t, j) = trial(&shared, load, secs, purpose, n)?;
            console.say(&format!("act search: {load}x: {}", t.result));
            judged.push(j);
            Ok(Some(t))
        },
    )?;
    Ok(Searched {
        result,
        trials: judged,
    })
}

/// Loads are counted in thousandths of 1x, so that bisection and steps
/// are exact.
const MILLI: f64 = 1000.0;

/// The highest --max a search takes, in x.
const MAX_LOAD: f64 = 10_000.0;

/// Checks a search's --max and --step.
pub fn check_loads(max_load: f64, step: f64) -> Result<(), String> {
    if !(0.001..=MAX_LOAD).contains(&step) {
        return Err(format!("the step must be from 0.001x to {MAX_LOAD}x"));
    }
    if !(step..=MAX_LOAD).contains(&max_load) {
        return Err(format!(
            "the highest load must be from the step ({step}x) to {MAX_LOAD}x"
        ));
    }
    Ok(())
}

/// The search itself, over any way of running a trial (None: interrupted):
/// escalate by doubling from 1x (or from --max, if lower) up to `max_load`,
/// bisect between the last pass (or 0) and the first failure down to
/// `step`, then confirm with a longer run, stepping down by `step` while
/// the confirmation fails.
pub fn strategy(
    max_load: f64,
    step: f64,
    trial_secs: u64,
    confirm_secs: u64,
    mut run: impl FnMut(f64, u64, &str) -> Result<Option<Trial>>,
) -> Result<SearchResult> {
    check_loads(max_load, step).map_err(anyhow::Error::msg)?;
    let unit = ((step * MILLI).round() as u64).max(1);
    let max = (max_load * MILLI).round() as u64;
    let x = |m: u64| m as f64 / MILLI;
    let mut trials: Vec<Trial> = Vec::new();
    let mut lo: Option<u64> = None; // highest passing
    let mut hi: Option<u64> = None; // lowest failing
                                    // Runs one trial; None when the search was interrupted.
    let mut go =
        |trials: &mut Vec<Trial>, load: u64, secs: u64, purpose: &str| -> Result<Option<bool>> {
            match run(x(load), secs, purpose)? {
                Some(t) if t.result != "interrupted" => {
                    let passed = t.result == "passing";
                    trials.push(t);
                    Ok(Some(passed))
                }
                other => {
                    trials.extend(other);
                    Ok(None)
                }
            }
        };
    let result = |trials: Vec<Trial>, lo: Option<u64>, confirmed, interrupted| SearchResult {
        schema_version: storcert_results::act::SEARCH_SCHEMA,
        highest_passing_load: lo.map(x),
        confirmed,
        reached_max: lo == Some(max) && confirmed,
        max_load,
        step,
        trials,
        interrupted,
    };
    let mut load = max.min(1000);
    loop {
        match go(&mut trials, load, trial_secs, "escalate")? {
            None => return Ok(result(trials, lo, false, true)),
            Some(true) => {
                lo = Some(load);
                if load >= max {
                    break;
                }
                load = (load * 2).min(max);
            }
            Some(false) => {
                hi = Some(load);
                break;
            }
        }
    }
    while let Some(h) = hi {
        let l = lo.unwrap_or(0);
        // The middle, whole steps above the last pass, below the failure.
        let mid = l + ((h - l) / 2 / unit).max(1) * unit;
        if h - l <= unit || mid >= h {
            break;
        }
        match go(&mut trials, mid, trial_secs, "bisect")? {
            None => return Ok(result(trials, lo, false, true)),
            Some(true) => lo = Some(mid),
            Some(false) => hi = Some(mid),
        }
    }
    let mut confirmed = false;
    while let Some(l) = lo {
        match go(&mut trials, l, confirm_secs, "confirm")? {
            None => return Ok(result(trials, lo, false, true)),
            Some(true) => {
                confirmed = true;
                break;
            }
            Some(false) => lo = l.checked_sub(unit).filter(|&d| d > 0),
        }
    }
    Ok(result(trials, lo, confirmed, false))
}

/// The trial table as people read it.
pub fn table(r: &SearchResult) -> String {
    let mut t = storcert_output::table::Table::new(&[
        "TRIAL",
        "LOAD",
        "PURPOSE",
        "RESULT",
        "MAX%>1ms",
        "MAX%>8ms",
        "MAX%>64ms",
        "MAX LAG",
    ]);
    let pct = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    for (i, tr) in r.trials.iter().enumerate() {
        t.row(vec![
            format!("{}", i + 1),
            format!("{}x", tr.load),
            tr.purpose.clone(),
            tr.result.clone(),
            pct(tr.worst_pct_over_1ms),
            pct(tr.worst_pct_over_8ms),
            pct(tr.worst_pct_over_64ms),
            format!("{:.1} ms", tr.max_lag_ms),
        ]);
    }
    let mut s = t.render();
    s.push_str(&match (r.highest_passing_load, r.confirmed) {
        (Some(l), true) => format!("highest passing load: {l}x (confirmed)\n"),
        (Some(l), false) => format!("highest passing load: {l}x (not confirmed)\n"),
        (None, _) => "no load passed\n".to_string(),
    });
    if r.reached_max {
        s.push_str(&format!(
            "reached --max {}x: the drive passed every load tried, its limit is higher\n",
            r.max_load
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trials that pass up to a load, as a drive would.
    fn drive(
        limit_trial: f64,
        limit_confirm: f64,
    ) -> impl FnMut(f64, u64, &str) -> Result<Option<Trial>> {
        move |load, _secs, purpose| {
            let limit = if purpose == "confirm" {
                limit_confirm
            } else {
                limit_trial
            };
            let result = if load <= limit {
                "passing"
            } else if load > limit + 4.0 {
                "could not keep up"
            } else {
                "stable at increased latency"
            };
            Ok(Some(Trial {
                load,
                purpose: purpose.into(),
                result: result.into(),
                worst_pct_over_1ms: None,
                worst_pct_over_8ms: None,
                worst_pct_over_64ms: None,
                max_lag_ms: 0.0,
                log: String::new(),
            }))
        }
    }

    fn loads(r: &SearchResult) -> Vec<(f64, &str)> {
        r.trials
            .iter()
            .map(|t| (t.load, t.purpose.as_str()))
            .collect()
    }

    #[test]
    fn escalates_bisects_and_confirms() {
        let r = strategy(60.0, 1.0, 600, 3600, drive(11.0, 11.0)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1.0, "escalate"),
                (2.0, "escalate"),
                (4.0, "escalate"),
                (8.0, "escalate"),
                (16.0, "escalate"),
                (12.0, "bisect"),
                (10.0, "bisect"),
                (11.0, "bisect"),
                (11.0, "confirm")
            ]
        );
        assert_eq!(r.trials[4].result, "could not keep up");
        assert_eq!(r.trials[5].result, "stable at increased latency");
        assert_eq!((r.highest_passing_load, r.confirmed), (Some(11.0), true));
        assert!(!r.reached_max);
    }

    #[test]
    fn steps_down_when_the_confirmation_fails_and_stops_at_max() {
        let r = strategy(60.0, 1.0, 600, 3600, drive(11.0, 9.0)).unwrap();
        assert_eq!(
            &loads(&r)[8..],
            &[(11.0, "confirm"), (10.0, "confirm"), (9.0, "confirm")]
        );
        assert_eq!((r.highest_passing_load, r.confirmed), (Some(9.0), true));
        // A drive faster than --max: the search says it reached --max.
        let r = strategy(6.0, 1.0, 10, 10, drive(100.0, 100.0)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1.0, "escalate"),
                (2.0, "escalate"),
                (4.0, "escalate"),
                (6.0, "escalate"),
                (6.0, "confirm")
            ]
        );
        assert!(r.reached_max);
        assert!(table(&r).contains("reached --max 6x"), "{}", table(&r));
        let r = strategy(60.0, 1.0, 10, 10, drive(0.0, 0.0)).unwrap();
        assert_eq!(
            (r.highest_passing_load, r.confirmed, r.trials.len()),
            (None, false, 1)
        );
        assert!(!r.reached_max);
        // Reaching --max but failing its confirmation is not "reached".
        let r = strategy(4.0, 1.0, 10, 10, drive(100.0, 3.0)).unwrap();
        assert_eq!((r.highest_passing_load, r.reached_max), (Some(3.0), false));
    }

    #[test]
    fn fractional_loads_and_steps() {
        // Half steps: a drive that passes 2.5x but not 3x.
        let r = strategy(8.0, 0.5, 10, 10, drive(2.5, 2.5)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1.0, "escalate"),
                (2.0, "escalate"),
                (4.0, "escalate"),
                (3.0, "bisect"),
                (2.5, "bisect"),
                (2.5, "confirm")
            ]
        );
        assert_eq!(r.highest_passing_load, Some(2.5));
        // A fractional --max is tried as it is.
        let r = strategy(2.5, 1.0, 10, 10, drive(100.0, 100.0)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1.0, "escalate"),
                (2.0, "escalate"),
                (2.5, "escalate"),
                (2.5, "confirm")
            ]
        );
        assert!(r.reached_max);
        // Below 1x, with a fine step.
        let r = strategy(4.0, 0.25, 10, 10, drive(0.5, 0.5)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1.0, "escalate"),
                (0.5, "bisect"),
                (0.75, "bisect"),
                (0.5, "confirm")
            ]
        );
        assert_eq!(r.highest_passing_load, Some(0.5));
        // A --max below 1x starts there.
        let r = strategy(0.5, 0.25, 10, 10, drive(100.0, 100.0)).unwrap();
        assert_eq!(loads(&r), vec![(0.5, "escalate"), (0.5, "confirm")]);
        // Bad --max and --step are refused before any trial.
        for (max, step) in [
            (0.0, 1.0),
            (2.0, 0.0),
            (0.5, 1.0),
            (f64::NAN, 1.0),
            (1e9, 1.0),
        ] {
            assert!(strategy(max, step, 1, 1, |_, _, _| unreachable!()).is_err());
        }
    }

    #[test]
    fn an_interrupted_trial_ends_the_search() {
        let mut n = 0;
        let r = strategy(60.0, 1.0, 10, 10, |load, s, p| {
            n += 1;
            if n == 3 {
                return Ok(None);
            }
            drive(100.0, 100.0)(load, s, p)
        })
        .unwrap();
        assert!(r.interrupted);
        assert_eq!((r.trials.len(), r.highest_passing_load), (2, Some(2.0)));
    }
}
