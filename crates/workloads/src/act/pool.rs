//! A pool of worker threads that carries ACT runs. Each worker owns one
//! engine (one io_uring) and runs the shares of as many runs as it is
//! given on one loop: it issues each run's due requests, waits once for
//! the earliest of their wake-ups, and hands each completion to the run
//! whose tag it carries. A run's own thread only merges and writes its
//! log (`workers::Merge`), so the per-drive runs of `storcert run` share
//! a pool sized to their rate and the cores instead of a thread each, and
//! a wide run's shares are one pool's of its own.
//!
//! Each run keeps everything that makes it a run of its own: its schedule,
//! its histograms, its in-flight limit, its errors and its decision. A run
//! that ends (decided, failed, interrupted) waits for its own requests
//! while the others go on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::device::Device;
use super::runner::{self, RunSpec, Scheduler, SLOT_BITS};
use storcert_engine::{Completion, Engine, EngineKind, NullLatency};
pub use storcert_results::act::Outcome;

/// What a run's shares and its own thread share.
pub(super) struct Control {
    pub start: Instant,
    pub stop: Arc<AtomicBool>,
    /// Set by whoever ends the run early: a share's outcome, a decision,
    /// the run's own thread failing.
    pub halt: AtomicBool,
    pub errors: Arc<AtomicU64>,
}

/// What a share hands its run's thread.
pub(super) enum Msg {
    /// A second (from 0), a share's timeline's part of it.
    Second(u64, super::timeline::Timeline),
    /// Share, report (from 1), its histograms and counts, its error lines.
    Report(usize, u64, Part),
    Done(usize, Result<ShareEnd>),
}

/// A share's report: its snapshot and its error lines since the last.
pub(super) type Part = (super::runlog::Snapshot, Vec<String>);

/// How a share ended, with what it recorded and its drives back.
pub(super) struct ShareEnd {
    pub outcome: Outcome,
    /// Stopped by the caller's stop flag (Ctrl-C).
    pub interrupted: bool,
    /// Its histograms, whole (the result's quantiles), and each stream's
    /// (issued, completed).
    pub hists: Vec<super::histogram::LatencyHistogram>,
    pub counts: Vec<(u64, u64)>,
    pub timeline: super::timeline::Timeline,
    pub error_lines: Vec<String>,
    pub max_lag_ns: u64,
    /// Its loop's time, before the drain.
    pub elapsed: Duration,
    pub drained: bool,
    pub devices: Vec<Device>,
}

/// One share of a run, given to a worker.
pub(super) struct Job {
    pub spec: Arc<RunSpec>,
    pub devices: Vec<Device>,
    pub ctl: Arc<Control>,
    pub tx: SyncSender<Msg>,
    /// The share's index in its run.
    pub share: usize,
    /// Its own in-flight limit.
    pub depth: usize,
}

/// Worker threads, an engine each, that carry the shares of ACT runs.
pub struct Pool {
    workers: Vec<Worker>,
    engine: &'static str,
    /// Held while a share picks its worker, so shares attached at once
    /// each see the others' rates.
    choosing: std::sync::Mutex<()>,
}

struct Worker {
    jobs: Option<Sender<Job>>,
    /// Requests a second its shares ask for now: a share goes to the
    /// worker asked the least.
    load: Arc<AtomicU64>,
    /// Its engine failed: it takes no more shares.
    broken: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} × {})", self.workers.len(), self.engine)
    }
}

/// How often a worker with runs looks for new ones: a share given to it
/// is due 20 ms after it is given (`workers::run`).
const NEW_JOB_POLL: Duration = Duration::from_millis(10);

impl Pool {
    /// One worker per entry of `depths`, each opening its own engine of
    /// `kind` that holds that many requests, on its own thread (an io_uring
    /// set up for a single issuer refuses any other thread's submissions).
    /// The first worker's engine decides what `auto` is for all: a pool's
    /// runs name one engine in their logs, and all of them run on it.
    pub fn start(kind: EngineKind, null: &NullLatency, depths: &[u32]) -> Result<Pool> {
        let mut workers = Vec::with_capacity(depths.len());
        let mut engine = None;
        for (i, &depth) in depths.iter().enumerate() {
            let kind = match (i, engine) {
                (0, _) | (_, None) => kind,
                (_, Some(name)) => kind_named(name),
            };
            // Each worker's null drives draw their own latencies.
            let mut null = null.clone();
            null.seed = null.seed.map(|s| s.wrapping_add(i as u64));
            let (jobs, rx) = mpsc::channel();
            let (opened_tx, opened) = mpsc::channel();
            let load = Arc::new(AtomicU64::new(0));
            let broken = Arc::new(AtomicBool::new(false));
            let state = (Arc::clone(&load), Arc::clone(&broken));
            let thread = std::thread::Builder::new()
                .name(format!("act-worker-{i}"))
                .spawn(
                    move || match storcert_engine::open_with(kind, depth, &null) {
                        Ok(mut e) => {
                            let _ = opened_tx.send(Ok(e.name()));
                            serve(e.as_mut(), &rx, (&state.0, &state.1));
                        }
                        Err(e) => {
                            let _ = opened_tx.send(Err(e));
                        }
                    },
                )
                .map_err(|e| anyhow!("start ACT worker thread {i}: {e}"))?;
            let name = opened
                .recv()
                .map_err(|_| anyhow!("ACT worker {i} ended before opening its engine"))?
                .map_err(|e| anyhow!("ACT worker {i}'s I/O engine: {e}"))?;
            engine.get_or_insert(name);
            workers.push(Worker {
                jobs: Some(jobs),
                load,
                broken,
                thread: Some(thread),
            });
        }
        Ok(Pool {
            workers,
            engine: engine.ok_or_else(|| anyhow!("a pool of no worker threads"))?,
            choosing: std::sync::Mutex::new(()),
        })
    }

    /// Worker threads.
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The engine every worker runs.
    pub fn engine(&self) -> &'static str {
        self.engine
    }

    /// Gives `job` to the worker asked the fewest requests a second (of
    /// those whose engine still works), and counts its rate there until
    /// it ends.
    pub(super) fn attach(&self, job: Job) -> Result<()> {
        let rate = asked(&job.spec);
        let _choosing = self.choosing.lock().unwrap_or_else(|e| e.into_inner());
        let w = self
            .workers
            .iter()
            .filter(|w| !w.broken.load(Ordering::Relaxed))
            .min_by_key(|w| w.load.load(Ordering::Relaxed))
            .ok_or_else(|| anyhow!("every ACT worker thread's I/O engine has failed"))?;
        w.load.fetch_add(rate, Ordering::Relaxed);
        w.jobs
            .as_ref()
            .and_then(|tx| tx.send(job).ok())
            .ok_or_else(|| anyhow!("an ACT worker thread has ended"))
    }
}

impl Drop for Pool {
    /// Each worker finishes the runs it carries, then ends.
    fn drop(&mut self) {
        for w in &mut self.workers {
            w.jobs = None;
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn kind_named(name: &str) -> EngineKind {
    match name {
        "io_uring" => EngineKind::Uring,
        "sync" => EngineKind::Sync,
        "null" => EngineKind::Null,
        _ => EngineKind::Auto,
    }
}

/// Requests a second a share's paced streams ask for.
fn asked(spec: &RunSpec) -> u64 {
    spec.streams.iter().map(|s| s.rate.max(0.0)).sum::<f64>() as u64
}

/// A share on its worker.
struct Running {
    job: Job,
    sched: Scheduler,
    /// The share's tag base, shifted down: its completions carry it.
    key: u64,
    rate: u64,
    /// Seconds handed on.
    second: u64,
    ended: Option<Ending>,
}

/// A share whose loop has ended and that waits for its requests.
struct Ending {
    outcome: Outcome,
    interrupted: bool,
    elapsed: Duration,
    until: Instant,
    /// What ended it, where that was an error (its engine refused).
    error: Option<anyhow::Error>,
}

/// A worker's loop: its runs' shares, until the pool is dropped and the
/// last of them has ended.
fn serve(engine: &mut dyn Engine, jobs: &Receiver<Job>, (load, broken): (&AtomicU64, &AtomicBool)) {
    let mut runs: Vec<Running> = Vec::new();
    let mut next_key = 0u64;
    let mut completions: Vec<Completion> = Vec::with_capacity(256);
    let mut open = true;
    loop {
        if runs.is_empty() {
            match jobs.recv() {
                Ok(job) => runs.extend(take_on(job, &mut next_key, (load, engine))),
                Err(_) => return,
            }
        }
        while open {
            match jobs.try_recv() {
                Ok(job) => runs.extend(take_on(job, &mut next_key, (load, engine))),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        share_out(&mut runs, engine);
        let now = Instant::now();
        for r in runs.iter_mut() {
            r.turn(now, engine);
        }
        let until = runs
            .iter()
            .map(|r| match &r.ended {
                None => r.sched.wake(now, r.sched.blocked(engine)),
                Some(e) => e.until.min(now + Duration::from_millis(50)),
            })
            .min()
            .unwrap_or(now)
            .min(now + NEW_JOB_POLL);
        completions.clear();
        if let Err(e) = engine.reap(Some(until), &mut completions) {
            // Short of memory or interrupted for now: the next turn asks
            // again (a run that keeps falling behind ends on its lag).
            let transient = [libc::EAGAIN, libc::ENOMEM, libc::EINTR];
            if e.raw_os_error().is_some_and(|n| transient.contains(&n)) {
                continue;
            }
            // The engine is every run's here: each ends with its error, and
            // so does every share given to this worker after (the pool
            // gives it none once it sees it broken).
            broken.store(true, Ordering::Relaxed);
            let why = format!("an ACT worker thread's I/O engine failed: {e}");
            let fail = |job: Job| {
                job.ctl.halt.store(true, Ordering::Relaxed);
                let _ = job.tx.send(Msg::Done(job.share, Err(anyhow!("{why}"))));
            };
            for r in runs.drain(..) {
                r.job.devices.iter().for_each(|d| engine.forget(d.fd()));
                fail(r.job);
            }
            jobs.iter().for_each(fail);
            return;
        }
        for c in completions.drain(..) {
            let key = c.tag >> 32;
            if let Some(r) = runs.iter_mut().find(|r| r.key == key) {
                r.completed(c);
            }
        }
        let now = Instant::now();
        let mut i = 0;
        while i < runs.len() {
            runs[i].look_for_stuck();
            let r = &runs[i];
            match &r.ended {
                Some(e) if r.sched.in_flight() == 0 || now >= e.until => {
                    let r = runs.swap_remove(i);
                    load.fetch_sub(r.rate, Ordering::Relaxed);
                    for d in &r.job.devices {
                        engine.forget(d.fd());
                    }
                    r.finish();
                }
                _ => i += 1,
            }
        }
    }
}

/// Each run's in-flight limit on a shared engine: its own where the
/// live runs' own limits fit in what the engine holds (less what ended
/// runs still hold, and what runs that ended left in it for good), else
/// that room shared in proportion to their own limits. A drive that
/// stalls fills its own share and no other run's (found in review: on the
/// sync engine, 1,024 requests shared by 24 runs, one slow drive failed
/// them all). What a run already holds is not taken back: a run that
/// joins a worker whose engine a stalled run filled alone waits for it.
fn share_out(runs: &mut [Running], engine: &dyn Engine) {
    let ours: usize = runs.iter().map(|r| r.sched.in_flight()).sum();
    let ended: usize = runs
        .iter()
        .filter(|r| r.ended.is_some())
        .map(|r| r.sched.in_flight())
        .sum();
    let left_behind = engine.in_flight().saturating_sub(ours);
    let room = engine.capacity().saturating_sub(left_behind + ended);
    let asked: usize = runs
        .iter()
        .filter(|r| r.ended.is_none())
        .map(|r| r.job.depth)
        .sum();
    for r in runs.iter_mut().filter(|r| r.ended.is_none()) {
        r.sched.depth = match asked <= room {
            true => r.job.depth,
            false => (room as u128 * r.job.depth as u128 / asked.max(1) as u128).max(1) as usize,
        };
    }
}

/// A share's scheduler, made on its worker (its buffers and histograms
/// are the worker's); its error goes straight back to its run. Its drives
/// are open until it ends, when `serve` forgets them: the engine may hold
/// them meanwhile.
fn take_on(
    job: Job,
    next_key: &mut u64,
    (load, engine): (&AtomicU64, &mut dyn Engine),
) -> Option<Running> {
    let patterns = match runner::patterns(&job.spec, &job.devices) {
        Ok(p) => p,
        Err(e) => {
            load.fetch_sub(asked(&job.spec), Ordering::Relaxed);
            job.ctl.halt.store(true, Ordering::Relaxed);
            let _ = job.tx.send(Msg::Done(job.share, Err(e)));
            return None;
        }
    };
    let key = *next_key & SLOT_BITS;
    *next_key += 1;
    let shared = Some((job.ctl.start, Arc::clone(&job.ctl.errors)));
    job.devices.iter().for_each(|d| engine.register(d.fd()));
    let mut sched = Scheduler::new(Arc::clone(&job.spec), patterns, job.devices.len(), shared);
    sched.wake_each_second = true;
    sched.tag_base = key << 32;
    sched.depth = job.depth;
    Some(Running {
        rate: asked(&job.spec),
        job,
        sched,
        key,
        second: 0,
        ended: None,
    })
}

impl Running {
    /// One turn of the share's loop before the wait: its seconds and
    /// reports handed on, its due requests issued, or its end.
    fn turn(&mut self, now: Instant, engine: &mut dyn Engine) {
        if self.ended.is_some() {
            return;
        }
        let ctl = Arc::clone(&self.job.ctl);
        if ctl.stop.load(Ordering::Relaxed) {
            return self.end(Outcome::Completed, true);
        }
        if ctl.halt.load(Ordering::Relaxed) {
            return self.end(Outcome::Completed, false);
        }
        let s = &mut self.sched;
        while now >= ctl.start + Duration::from_secs(self.second + 1) {
            let _ = self
                .job
                .tx
                .send(Msg::Second(self.second, s.take_timeline()));
            self.second += 1;
        }
        let interval_ns = self.job.spec.report_interval.as_nanos().max(1) as u64;
        while s.reports < s.total_reports
            && now >= ctl.start + Duration::from_nanos((s.reports + 1) * interval_ns)
        {
            s.reports += 1;
            let part = (s.snapshot(), s.take_error_lines());
            let _ = self
                .job
                .tx
                .send(Msg::Report(self.job.share, s.reports, part));
        }
        if s.reports >= s.total_reports {
            return self.end(Outcome::Completed, false);
        }
        match s.issue_due(now, &self.job.devices, engine) {
            Ok(None) => {}
            Ok(Some(o)) => {
                ctl.halt.store(true, Ordering::Relaxed);
                self.end(o, false);
            }
            Err(e) => self.fail(e),
        }
    }

    /// One of its completions.
    fn completed(&mut self, c: Completion) {
        if self.ended.is_some() {
            return self.sched.drained(c, &mut self.job.devices);
        }
        if let Some(o) = self.sched.complete(c, &mut self.job.devices) {
            self.job.ctl.halt.store(true, Ordering::Relaxed);
            self.end(o, false);
        }
    }

    fn look_for_stuck(&mut self) {
        if self.ended.is_some() {
            return;
        }
        if let Some(o) = self.sched.stuck(&self.job.devices) {
            self.job.ctl.halt.store(true, Ordering::Relaxed);
            self.end(o, false);
        }
    }

    /// Its loop ends: what is in flight is waited for, bounded.
    fn end(&mut self, outcome: Outcome, interrupted: bool) {
        self.ended = Some(Ending {
            outcome,
            interrupted,
            elapsed: self.job.ctl.start.elapsed(),
            until: self.sched.drain_deadline(),
            error: None,
        });
    }

    /// An engine's refusal ends the share with the error, once what it
    /// has in flight is back.
    fn fail(&mut self, e: anyhow::Error) {
        self.job.ctl.halt.store(true, Ordering::Relaxed);
        self.end(Outcome::Completed, false);
        if let Some(end) = self.ended.as_mut() {
            end.error = Some(e);
        }
    }

    /// Its result and drives back to its run.
    fn finish(mut self) {
        let Some(end) = self.ended.take() else {
            return;
        };
        if let Some(e) = end.error {
            let _ = self.job.tx.send(Msg::Done(self.job.share, Err(e)));
            return;
        }
        let drained = self.sched.in_flight() == 0;
        let s = &mut self.sched;
        let result = ShareEnd {
            outcome: end.outcome,
            interrupted: end.interrupted,
            hists: s.take_hists(),
            counts: s.counts(),
            timeline: s.take_timeline(),
            error_lines: s.take_error_lines(),
            max_lag_ns: s.max_lag_ns,
            elapsed: end.elapsed,
            drained,
            devices: std::mem::take(&mut self.job.devices),
        };
        let _ = self.job.tx.send(Msg::Done(self.job.share, Ok(result)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::config::StorageConfig;
    use crate::act::runner::Sinks;
    use crate::act::{run_workload, RunOptions};

    /// ACT storage at `load` on one null drive, a file in `dir`.
    fn drive(dir: &std::path::Path, name: &str, load: u32, secs: u32) -> StorageConfig {
        let text = format!(
            "device-names: {}\nfile-size-mbytes: 64\ntest-duration-sec: {secs}\n\
             read-reqs-per-sec: {}\nwrite-reqs-per-sec: {}\n",
            dir.join(name).display(),
            2000 * load,
            1000 * load,
        );
        StorageConfig::parse(&text, "t.conf").unwrap()
    }

    fn run(cfg: &StorageConfig, opts: &RunOptions) -> (runner::RunResult, String) {
        run_reporting(cfg, opts, &mut |_, _, _| {})
    }

    /// `run`, telling `report` of each report.
    fn run_reporting(
        cfg: &StorageConfig,
        opts: &RunOptions,
        report: &mut dyn FnMut(u64, f64, f64),
    ) -> (runner::RunResult, String) {
        let mut log = Vec::new();
        let opts = &RunOptions {
            cleared: storcert_device::safety::check_all(
                &cfg.device_names
                    .iter()
                    .map(std::path::PathBuf::from)
                    .collect::<Vec<_>>(),
                &Default::default(),
            )
            .unwrap(),
            ..opts.clone()
        };
        let result = run_workload(
            cfg,
            opts,
            &Arc::default(),
            &mut Sinks {
                log: &mut log,
                timeline: None,
                progress: Some(report),
            },
        )
        .unwrap();
        (result, String::from_utf8(log).unwrap())
    }

    #[test]
    fn runs_on_one_worker_are_runs_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        // A drive asked more than 9,000 requests a second answers in 3 ms:
        // 4x (8,000 reads and a few large blocks) passes, 5x fails ACT's
        // 1 ms rule from its first second. The latency is the engine's,
        // not this machine's.
        let opts = RunOptions {
            engine: EngineKind::Null,
            null_latency: "200us,9000/s=3ms".parse().unwrap(),
            threads: Some(1),
            ..Default::default()
        };
        let (passing, failing) = (drive(dir.path(), "a", 4, 5), drive(dir.path(), "b", 5, 5));
        let runs = [passing.clone(), failing.clone()].map(|c| {
            let spec = crate::act::Workload::run_spec(&c, &opts);
            (spec, 1)
        });
        let pool = crate::act::pool_for(&runs, &opts).unwrap();
        assert_eq!(pool.len(), 1);
        assert_eq!(pool.engine(), "null");
        let opts = RunOptions {
            pool: Some(pool),
            ..opts
        };
        let ((a, a_log), (b, b_log)) = std::thread::scope(|s| {
            let a = s.spawn(|| run(&passing, &opts));
            let b = s.spawn(|| run(&failing, &opts));
            (a.join().unwrap(), b.join().unwrap())
        });
        for log in [&a_log, &b_log] {
            assert!(
                log.contains("open-loop null scheduler on a worker thread of a pool shared by runs side by side,"),
                "{log}"
            );
        }
        // The failing run stops once decided, and says so; the other goes
        // on to its end on the same worker and engine, unharmed.
        assert!(
            matches!(b.outcome, Outcome::Decided { seconds, .. } if seconds < 5),
            "{:?}",
            b.outcome
        );
        assert!(b_log.contains("can no longer pass"), "{b_log}");
        assert_eq!(a.outcome, Outcome::Completed, "{a_log}");
        assert!(a.elapsed_s >= 5.0, "{}", a.elapsed_s);
        let judged = |log: &str| {
            crate::act::analyze::judge_log(log.as_bytes(), "l", "l", None)
                .unwrap()
                .analysis
                .verdict
                .pass
        };
        assert!(judged(&a_log), "{a_log}");
        assert!(!judged(&b_log), "{b_log}");
        // Each run counted its own requests only: the passing run's reads
        // are its own drive's, none of the failing run's slow ones.
        let reads = a.streams.iter().find(|s| s.label == "reads").unwrap();
        assert!(reads.completed > 8000 * 4, "{reads:?}");
        let b_reads = b.streams.iter().find(|s| s.label == "reads").unwrap();
        assert!(b_reads.completed < 10000 * 4, "{b_reads:?}");
    }

    #[test]
    fn a_stalled_drive_fills_its_own_share_of_the_engine_and_no_other_run_s() {
        let dir = tempfile::tempdir().unwrap();
        // Asked more than 9,000 requests a second a drive answers in 5 s:
        // the 5x run's requests pile up in flight. The engine holds 1,000,
        // less than either run's own limit (2,048): without a fair share
        // the stalled run takes it all and the other waits 5 s to issue.
        let null: NullLatency = "200us,9000/s=5s".parse().unwrap();
        let pool = Pool::start(EngineKind::Null, &null, &[1000]).unwrap();
        let opts = RunOptions {
            engine: EngineKind::Null,
            null_latency: null,
            pool: Some(Arc::new(pool)),
            ..Default::default()
        };
        let (healthy, stalled) = (drive(dir.path(), "a", 4, 6), drive(dir.path(), "b", 5, 6));
        // The stalled run joins once the healthy one runs (its first
        // report), however busy this machine: what a run already holds is
        // not taken back, so the order is the test's, not the scheduler's.
        let (tx, rx) = std::sync::mpsc::channel();
        let (healthy, stalled, opts) = (&healthy, &stalled, &opts);
        let ((a, a_log), (b, b_log)) = std::thread::scope(|s| {
            let a = s.spawn(move || {
                run_reporting(healthy, opts, &mut |_, _, _| {
                    let _ = tx.send(());
                })
            });
            let b = s.spawn(move || {
                rx.recv().unwrap();
                run(stalled, opts)
            });
            (a.join().unwrap(), b.join().unwrap())
        });
        // Decided, or too few of its reads back to judge: failed either way.
        assert!(
            matches!(
                b.outcome,
                Outcome::Decided { .. } | Outcome::CouldNotKeepUp { .. }
            ),
            "{:?}: {b_log}",
            b.outcome
        );
        assert_eq!(a.outcome, Outcome::Completed, "{a_log}");
        // Never held back for the stalled run's 5 s (a busy machine's
        // scheduling lag is far less, even beside CPU burners).
        assert!(a.max_lag_ms < 4000.0, "{} ms: {a_log}", a.max_lag_ms);
    }

    #[test]
    fn a_run_after_another_on_the_same_worker_starts_as_a_new_drive() {
        let dir = tempfile::tempdir().unwrap();
        let opts = RunOptions {
            engine: EngineKind::Null,
            null_latency: "200us,9000/s=3ms".parse().unwrap(),
            run_to_end: true,
            ..Default::default()
        };
        let (over, under) = (drive(dir.path(), "a", 5, 2), drive(dir.path(), "b", 1, 2));
        let runs = [(crate::act::Workload::run_spec(&over, &opts), 1)];
        let opts = RunOptions {
            pool: Some(crate::act::pool_for(&runs, &opts).unwrap()),
            ..opts
        };
        let reads = |r: &runner::RunResult| {
            r.histograms
                .iter()
                .find(|h| h.name == "reads")
                .unwrap()
                .pct_over_1ms
        };
        let (first, first_log) = run(&over, &opts);
        assert!(reads(&first) > 50.0, "{first_log}");
        // Its drive is closed, and the next run's drive is likely given its
        // descriptor's number within the second: that drive has had none
        // of the first one's requests, and answers at 200 us from its start.
        let (second, second_log) = run(&under, &opts);
        assert_eq!(second.outcome, Outcome::Completed, "{second_log}");
        assert_eq!(reads(&second), 0.0, "{second_log}");
    }
}
