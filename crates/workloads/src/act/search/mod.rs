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
use storcert_util::cpu::CpuTimes;

use anyhow::{Context, Result};

use super::config::{rates_for_load, StorageConfig};
use super::runner::Outcome;
use super::{run_workload, RunOptions};
pub use storcert_results::act::{SearchResult, Trial};

mod strategy;

pub use strategy::{check_loads, side_by_side, Ask, Plan};

#[derive(Debug, Clone)]
pub struct SearchSpec {
    /// The configuration every trial starts from (devices, record sizes,
    /// ...); its rates and duration are set per trial.
    pub base: StorageConfig,
    pub plan: Plan,
    /// The base's drives are identical and each runs its own trials, side
    /// by side (`side_by_side`); otherwise each trial runs over them all.
    pub parallel: bool,
    /// Trials (never a confirmation) may end early by statistics, at this
    /// chance of a wrong early decision (`statistics::ALPHA`).
    pub statistical: Option<f64>,
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

impl SearchSpec {
    /// The drive an ask runs on, in a search side by side.
    fn drive(&self, ask: &Ask) -> Option<&String> {
        self.parallel
            .then(|| self.base.device_names.get(ask.drive))
            .flatten()
    }

    /// The trial's configuration: the base at the ask's load for its
    /// length, over the ask's drive alone in a search side by side.
    fn config(&self, ask: &Ask) -> Result<StorageConfig> {
        let mut cfg = self.base.clone();
        if let Some(d) = self.drive(ask) {
            cfg.device_names = vec![d.clone()];
        }
        let (r, w) = rates_for_load(ask.load, cfg.device_names.len());
        cfg.read_reqs_per_sec = r;
        cfg.write_reqs_per_sec = w;
        cfg.test_duration_sec = ask.secs;
        cfg.finish("search").map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(cfg)
    }
}

fn trial(shared: &Trials, ask: &Ask, n: usize) -> Result<(Trial, Judged)> {
    let Trials {
        spec,
        opts,
        stop,
        console,
    } = shared;
    let cfg = spec.config(ask)?;
    let drive = spec.drive(ask).cloned();
    let load = ask.load;
    let log_name = format!("trial-{n:02}-{load}x.log");
    let log_path = spec.out_dir.join(&log_name);
    let mut log = std::fs::File::create(&log_path)
        .with_context(|| format!("create {}", log_path.display()))?;
    console.say(&format!(
        "act search: {} trial at {load}x for {} s{} ({})",
        ask.purpose,
        ask.secs,
        drive
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default(),
        log_path.display()
    ));
    // A confirmation always runs its full length.
    let opts = &RunOptions {
        statistical: spec.statistical.filter(|_| ask.purpose != "confirm"),
        ..(*opts).clone()
    };
    let (started, cpu) = (std::time::Instant::now(), CpuTimes::now());
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
    let elapsed_s = started.elapsed().as_secs_f64();
    let cpu_busy_pct = cpu
        .zip(CpuTimes::now())
        .and_then(|(a, b)| b.busy_pct_since(&a));
    log.flush()?;
    drop(log);
    // The trial's log judged once, as every run's is, and kept beside it.
    let label = format!("{}{log_name}", spec.label_dir);
    let judged = super::save_analysis(
        &log_path,
        (!spec.label_dir.is_empty()).then_some(label.as_str()),
        None,
    );
    let (result, worst) = trial_result(&run.outcome, judged.as_ref().map(|a| &a.analysis));
    let t = Trial {
        load,
        purpose: ask.purpose.to_string(),
        result: result.to_string(),
        worst_pct_over_1ms: worst.map(|w| w.0),
        worst_pct_over_8ms: worst.map(|w| w.1),
        worst_pct_over_64ms: worst.map(|w| w.2),
        max_lag_ms: run.max_lag_ms,
        log: log_path.display().to_string(),
        drive,
        planned_s: ask.secs,
        elapsed_s,
        cpu_busy_pct,
        decided: matches!(
            run.outcome,
            Outcome::Decided { .. } | Outcome::PassingByStatistics { .. }
        ),
    };
    Ok((t, (log_path, judged)))
}

/// A trial's result in words, and the worst slice's shares of reads over
/// 1, 8 and 64 ms where its log was judged.
fn trial_result<E>(
    outcome: &Outcome,
    analysis: std::result::Result<&storcert_results::act::Analysis, E>,
) -> (&'static str, Option<(f64, f64, f64)>) {
    match (outcome, analysis) {
        (Outcome::CouldNotKeepUp { .. }, _) => ("could not keep up", None),
        (Outcome::DeviceErrors { .. }, _) => ("device errors", None),
        (Outcome::StuckIo { .. }, _) => ("stuck I/O", None),
        (Outcome::Interrupted, _) => ("interrupted", None),
        (
            Outcome::Completed | Outcome::Decided { .. } | Outcome::PassingByStatistics { .. },
            Ok(a),
        ) => {
            let reads = &a.histograms[0];
            let worst = Some((reads.max[0], reads.max[3], reads.max[6]));
            let result = if !a.verdict.failures.is_empty() {
                "stable at increased latency"
            } else if matches!(outcome, Outcome::PassingByStatistics { .. }) {
                // Its log is cut short, so it is no pass of ACT's rule.
                storcert_results::act::PASSING_BY_STATISTICS
            } else if a.verdict.pass {
                "passing"
            } else {
                // No slice over the limits, yet not a pass: a slice in
                // which no read completed.
                "stalled"
            };
            (result, worst)
        }
        (Outcome::Completed | Outcome::PassingByStatistics { .. }, Err(_)) => {
            ("could not keep up", None)
        }
        (Outcome::Decided { .. }, Err(_)) => ("over ACT's limits", None),
    }
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

/// Each trial's start and result go to `console`. A search side by side
/// runs each round's trials at once: every trial is its own run, as on a
/// drive of its own, and they share one pool of worker threads (the
/// caller's, else one sized for every drive at the search's highest load).
pub fn search(
    spec: &SearchSpec,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    console: &Console,
) -> Result<Searched> {
    std::fs::create_dir_all(&spec.out_dir)
        .with_context(|| format!("create {}", spec.out_dir.display()))?;
    let pooled;
    let opts = match opts.pool.is_none() && spec.parallel {
        true => {
            pooled = RunOptions {
                pool: Some(pool_at_highest_load(spec, opts)?),
                ..opts.clone()
            };
            &pooled
        }
        false => opts,
    };
    let shared = &Trials {
        spec,
        opts,
        stop,
        console,
    };
    let drives = match spec.parallel {
        true => spec.base.device_names.clone(),
        false => vec![spec.base.device_names.join(",")],
    };
    let mut n = 0;
    let mut judged = Vec::new();
    let result = side_by_side(&spec.plan, &drives, |asks| {
        if stop.load(Ordering::Relaxed) {
            return Ok(vec![None; asks.len()]);
        }
        let first = n + 1;
        n += asks.len();
        let ran: Vec<Result<(Trial, Judged)>> = std::thread::scope(|scope| {
            let running: Vec<_> = asks
                .iter()
                .zip(first..)
                .map(|(ask, k)| scope.spawn(move || trial(shared, ask, k)))
                .collect();
            running
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a trial's thread panicked")))
                })
                .collect()
        });
        let mut trials = Vec::new();
        for r in ran {
            let (t, j) = r?;
            console.say(&format!(
                "act search: {}x{}: {}",
                t.load,
                t.drive
                    .as_ref()
                    .map(|d| format!(" on {d}"))
                    .unwrap_or_default(),
                t.result
            ));
            judged.push(j);
            trials.push(Some(t));
        }
        Ok(trials)
    })?;
    Ok(Searched {
        result: SearchResult {
            statistical: spec.statistical,
            ..result
        },
        trials: judged,
    })
}

/// A pool for `spec`'s trials side by side: one run per drive at the
/// search's highest load.
pub fn pool_at_highest_load(
    spec: &SearchSpec,
    opts: &RunOptions,
) -> Result<Arc<super::pool::Pool>> {
    let runs = (0..spec.base.device_names.len())
        .map(|drive| {
            let ask = Ask {
                load: spec.plan.max_load,
                secs: spec.plan.trial_secs,
                purpose: "size the pool",
                drive,
            };
            let cfg = spec.config(&ask)?;
            Ok((
                super::Workload::run_spec(&cfg, opts),
                cfg.device_names.len(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    super::pool_for(&runs, opts)
}

/// The trial table as people read it.
pub fn table(r: &SearchResult) -> String {
    let mut header = vec![
        "TRIAL",
        "LOAD",
        "PURPOSE",
        "RESULT",
        "MAX%>1ms",
        "MAX%>8ms",
        "MAX%>64ms",
        "MAX LAG",
    ];
    // Side by side, which drive ran which load, and whether the host
    // itself was the bottleneck.
    if r.parallel {
        header.extend(["DRIVE", "CPU BUSY"]);
    }
    let mut t = storcert_output::table::Table::new(&header);
    let pct = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    for (i, tr) in r.trials.iter().enumerate() {
        let mut row = vec![
            format!("{}", i + 1),
            format!("{}x", tr.load),
            tr.purpose.clone(),
            tr.result.clone(),
            pct(tr.worst_pct_over_1ms),
            pct(tr.worst_pct_over_8ms),
            pct(tr.worst_pct_over_64ms),
            format!("{:.1} ms", tr.max_lag_ms),
        ];
        if r.parallel {
            row.push(tr.drive.clone().unwrap_or_default());
            row.push(tr.cpu_busy_pct.map_or("-".into(), |c| format!("{c:.0}%")));
        }
        t.row(row);
    }
    let mut s = t.render();
    s.push_str(&match (r.highest_passing_load, r.confirmed) {
        (Some(l), true) => format!("highest passing load: {l}x (confirmed)\n"),
        (Some(l), false) => format!("highest passing load: {l}x (not confirmed)\n"),
        (None, _) => "no load passed\n".to_string(),
    });
    if let Some(alpha) = r.statistical {
        s.push_str(&format!(
            "trials could end early by statistics (at most a {} chance of each, on its reads' \
             latency, decided the wrong way){}\n",
            storcert_results::act::chance_text(alpha),
            match r.confirmed {
                true => "; the confirmation ran its full length",
                false => "; nothing was confirmed, and no load passed by statistics is an answer",
            }
        ));
    }
    if r.reached_max {
        s.push_str(&format!(
            "reached --max {}x: the drive passed every load tried, its limit is higher\n",
            r.max_load
        ));
    }
    if r.parallel {
        s.push_str(&format!(
            "loads ran side by side on {} identical drives; each drive's own:\n",
            r.drives.len()
        ));
        for d in &r.drives {
            s.push_str(&format!(
                "  {}: {}\n",
                d.drive,
                match (d.highest_passing_load, d.confirmed) {
                    (Some(l), true) => format!("{l}x (confirmed)"),
                    (Some(l), false) => format!("{l}x (not confirmed)"),
                    (None, _) => "no load passed".into(),
                }
            ));
        }
    }
    s
}
