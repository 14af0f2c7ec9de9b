//! The search for the highest load a drive passes: short trials at rising
//! loads (1x, 2x, 4x, ...), then bisection between the last passing and
//! the first failing load, then one confirmation run at the load found —
//! what people qualifying drives do by hand.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;

use super::analyze::{self, Options};
use super::config::{rates_for_load, StorageConfig};
use super::runner::Outcome;
use super::{run_storage, RunOptions};

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

#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    pub load: u32,
    pub purpose: String,
    /// "passing", "stable at increased latency", "could not keep up",
    /// "device errors", "stuck I/O" or "interrupted".
    pub result: String,
    pub worst_pct_over_1ms: Option<f64>,
    pub worst_pct_over_8ms: Option<f64>,
    pub worst_pct_over_64ms: Option<f64>,
    pub max_lag_ms: f64,
    pub log: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub highest_passing_load: Option<u32>,
    pub confirmed: bool,
    pub trials: Vec<Trial>,
    pub interrupted: bool,
}

fn trial(
    spec: &SearchSpec,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
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
    eprintln!(
        "act search: {purpose} trial at {load}x for {secs} s ({})",
        log_path.display()
    );
    let run = run_storage(
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
    let text = std::fs::read_to_string(&log_path)?;
    let slice = secs.max(1);
    let analysis = analyze::analyze(
        &text,
        &Options {
            log: log_path.display().to_string(),
            slice,
            ..Default::default()
        },
        "",
    );
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
    eprintln!("act search: {load}x: {}", t.result);
    Ok(t)
}

pub fn search(
    spec: &SearchSpec,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
) -> Result<SearchResult> {
    std::fs::create_dir_all(&spec.out_dir)
        .with_context(|| format!("create {}", spec.out_dir.display()))?;
    let mut trials: Vec<Trial> = Vec::new();
    let mut lo: Option<u32> = None; // highest passing
    let mut hi: Option<u32> = None; // lowest failing
    let interrupted = |t: &Trial| t.result == "interrupted";
    // Escalate.
    let mut load = 1u32;
    loop {
        let t = trial(
            spec,
            opts,
            stop,
            load,
            spec.trial_secs,
            "escalate",
            trials.len() + 1,
        )?;
        let passed = t.result == "passing";
        let stop_now = interrupted(&t);
        trials.push(t);
        if stop_now || stop.load(Ordering::Relaxed) {
            return Ok(SearchResult {
                highest_passing_load: lo,
                confirmed: false,
                trials,
                interrupted: true,
            });
        }
        if passed {
            lo = Some(load);
            if load >= spec.max_load {
                break;
            }
            load = (load * 2).min(spec.max_load);
        } else {
            hi = Some(load);
            break;
        }
    }
    // Bisect.
    while let (Some(l), Some(h)) = (lo, hi) {
        if h - l <= 1 {
            break;
        }
        let mid = l + (h - l) / 2;
        let t = trial(
            spec,
            opts,
            stop,
            mid,
            spec.trial_secs,
            "bisect",
            trials.len() + 1,
        )?;
        let passed = t.result == "passing";
        let stop_now = interrupted(&t);
        trials.push(t);
        if stop_now {
            return Ok(SearchResult {
                highest_passing_load: lo,
                confirmed: false,
                trials,
                interrupted: true,
            });
        }
        if passed {
            lo = Some(mid);
        } else {
            hi = Some(mid);
        }
    }
    // Confirm, stepping down if the longer run does not hold.
    let mut confirmed = false;
    while let Some(l) = lo {
        let t = trial(
            spec,
            opts,
            stop,
            l,
            spec.confirm_secs,
            "confirm",
            trials.len() + 1,
        )?;
        let passed = t.result == "passing";
        let stop_now = interrupted(&t);
        trials.push(t);
        if stop_now {
            return Ok(SearchResult {
                highest_passing_load: lo,
                confirmed: false,
                trials,
                interrupted: true,
            });
        }
        if passed {
            confirmed = true;
            break;
        }
        lo = if l > 1 { Some(l - 1) } else { None };
    }
    Ok(SearchResult {
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

pub fn default_out_dir() -> &'static Path {
    Path::new("act-search")
}
