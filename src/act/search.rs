//! The search for the highest load a drive passes: short trials at rising
//! loads (1x, 2x, 4x, ...), then bisection between the last passing and
//! the first failing load, then one confirmation run at the load found —
//! what people qualifying drives do by hand.

use crate::output::console::Console;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use super::config::{rates_for_load, StorageConfig};
use super::runner::Outcome;
use super::{run_workload, RunOptions};
pub use crate::results::act::{SearchResult, Trial};

#[derive(Debug, Clone)]
pub struct SearchSpec {
    /// The configuration every trial starts from (devices, record sizes,
    /// ...); its rates and duration are set per trial.
    pub base: StorageConfig,
    pub max_load: u32,
    pub trial_secs: u64,
    pub confirm_secs: u64,
    pub out_dir: PathBuf,
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
    load: u32,
    secs: u64,
    purpose: &str,
    n: usize,
) -> Result<Trial> {
    let mut cfg = spec.base.clone();
    let (r, w) = rates_for_load(load as f64, cfg.device_names.len());
    cfg.read_reqs_per_sec = r;
    cfg.write_reqs_per_sec = w;
    cfg.test_duration_sec = secs;
    cfg.finish("search").map_err(|e| anyhow::anyhow!("{e}"))?;
    let log_path = spec.out_dir.join(format!("trial-{n:02}-{load}x.log"));
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
    let analysis = super::save_analysis(&log_path, None).map(|a| a.analysis);
    let (result, worst) = match (&run.outcome, &analysis) {
        (Outcome::CouldNotKeepUp { .. }, _) => ("could not keep up", None),
        (Outcome::DeviceErrors { .. }, _) => ("device errors", None),
        (Outcome::StuckIo { .. }, _) => ("stuck I/O", None),
        (Outcome::Interrupted, _) => ("interrupted", None),
        (Outcome::Completed, Ok(a)) => {
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
    Ok(t)
}

/// Each trial's start and result go to `console`.
pub fn search(
    spec: &SearchSpec,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    console: &Console,
) -> Result<SearchResult> {
    std::fs::create_dir_all(&spec.out_dir)
        .with_context(|| format!("create {}", spec.out_dir.display()))?;
    let shared = Trials {
        spec,
        opts,
        stop,
        console,
    };
    let mut n = 0;
    strategy(
        spec.max_load,
        spec.trial_secs,
        spec.confirm_secs,
        |load, secs, purpose| {
            n += 1;
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let t = trial(&shared, load, secs, purpose, n)?;
            console.say(&format!("act search: {load}x: {}", t.result));
            Ok(Some(t))
        },
    )
}

/// The search itself, over any way of running a trial (None: interrupted):
/// escalate by doubling up to `max_load`, bisect between the last pass and
/// the first failure, then confirm with a longer run, stepping down by 1x
/// while the confirmation fails.
pub fn strategy(
    max_load: u32,
    trial_secs: u64,
    confirm_secs: u64,
    mut run: impl FnMut(u32, u64, &str) -> Result<Option<Trial>>,
) -> Result<SearchResult> {
    let mut trials: Vec<Trial> = Vec::new();
    let mut lo: Option<u32> = None; // highest passing
    let mut hi: Option<u32> = None; // lowest failing
                                    // Runs one trial; None when the search was interrupted.
    let mut go =
        |trials: &mut Vec<Trial>, load: u32, secs: u64, purpose: &str| -> Result<Option<bool>> {
            match run(load, secs, purpose)? {
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
    let interrupted = |trials: Vec<Trial>, lo| SearchResult {
        schema_version: crate::results::act::SEARCH_SCHEMA,
        highest_passing_load: lo,
        confirmed: false,
        trials,
        interrupted: true,
    };
    let mut load = 1u32;
    loop {
        match go(&mut trials, load, trial_secs, "escalate")? {
            None => return Ok(interrupted(trials, lo)),
            Some(true) => {
                lo = Some(load);
                if load >= max_load {
                    break;
                }
                load = (load * 2).min(max_load);
            }
            Some(false) => {
                hi = Some(load);
                break;
            }
        }
    }
    while let (Some(l), Some(h)) = (lo, hi) {
        if h - l <= 1 {
            break;
        }
        let mid = l + (h - l) / 2;
        match go(&mut trials, mid, trial_secs, "bisect")? {
            None => return Ok(interrupted(trials, lo)),
            Some(true) => lo = Some(mid),
            Some(false) => hi = Some(mid),
        }
    }
    let mut confirmed = false;
    while let Some(l) = lo {
        match go(&mut trials, l, confirm_secs, "confirm")? {
            None => return Ok(interrupted(trials, lo)),
            Some(true) => {
                confirmed = true;
                break;
            }
            Some(false) => lo = if l > 1 { Some(l - 1) } else { None },
        }
    }
    Ok(SearchResult {
        schema_version: crate::results::act::SEARCH_SCHEMA,
        highest_passing_load: lo,
        confirmed,
        trials,
        interrupted: false,
    })
}

/// The trial table as people read it.
pub fn table(r: &SearchResult) -> String {
    let mut t = crate::output::table::Table::new(&[
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
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trials that pass up to a load, as a drive would.
    fn drive(
        limit_trial: u32,
        limit_confirm: u32,
    ) -> impl FnMut(u32, u64, &str) -> Result<Option<Trial>> {
        move |load, _secs, purpose| {
            let limit = if purpose == "confirm" {
                limit_confirm
            } else {
                limit_trial
            };
            let result = if load <= limit {
                "passing"
            } else if load > limit + 4 {
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

    fn loads(r: &SearchResult) -> Vec<(u32, &str)> {
        r.trials
            .iter()
            .map(|t| (t.load, t.purpose.as_str()))
            .collect()
    }

    #[test]
    fn escalates_bisects_and_confirms() {
        let r = strategy(60, 600, 3600, drive(11, 11)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1, "escalate"),
                (2, "escalate"),
                (4, "escalate"),
                (8, "escalate"),
                (16, "escalate"),
                (12, "bisect"),
                (10, "bisect"),
                (11, "bisect"),
                (11, "confirm")
            ]
        );
        assert_eq!(r.trials[4].result, "could not keep up");
        assert_eq!(r.trials[5].result, "stable at increased latency");
        assert_eq!((r.highest_passing_load, r.confirmed), (Some(11), true));
    }

    #[test]
    fn steps_down_when_the_confirmation_fails_and_stops_at_max() {
        let r = strategy(60, 600, 3600, drive(11, 9)).unwrap();
        assert_eq!(
            &loads(&r)[8..],
            &[(11, "confirm"), (10, "confirm"), (9, "confirm")]
        );
        assert_eq!((r.highest_passing_load, r.confirmed), (Some(9), true));
        let r = strategy(6, 10, 10, drive(100, 100)).unwrap();
        assert_eq!(
            loads(&r),
            vec![
                (1, "escalate"),
                (2, "escalate"),
                (4, "escalate"),
                (6, "escalate"),
                (6, "confirm")
            ]
        );
        let r = strategy(60, 10, 10, drive(0, 0)).unwrap();
        assert_eq!(
            (r.highest_passing_load, r.confirmed, r.trials.len()),
            (None, false, 1)
        );
    }

    #[test]
    fn an_interrupted_trial_ends_the_search() {
        let mut n = 0;
        let r = strategy(60, 10, 10, |load, s, p| {
            n += 1;
            if n == 3 {
                return Ok(None);
            }
            drive(100, 100)(load, s, p)
        })
        .unwrap();
        assert!(r.interrupted);
        assert_eq!((r.trials.len(), r.highest_passing_load), (2, Some(2)));
    }
}
