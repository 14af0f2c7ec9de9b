//! One ACT run over several worker threads (`--threads`), for wide NVMe
//! boxes whose asked rate one thread cannot issue and reap, or over a
//! pool's workers that it shares with other runs (`pool`).
//!
//! Each worker owns a share of the drives, an engine (its own io_uring)
//! and the streams of those drives: a stream bound to a drive
//! (a large-block reader or writer, the tomb raider) goes to that drive's
//! worker, and one that picks a drive at random for each request (ACT's
//! reads and writes) is split, each worker taking its drives' share of the
//! rate, so each drive is asked what one thread would ask of it. Every
//! share runs on one schedule (one start). At each report every worker
//! hands on its histograms and counts; this thread adds them up (they
//! count the requests one thread would have), writes ACT's report block
//! and decides as a run on one thread does. At each second the workers
//! hand on their timeline's second, which is added up the same way.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::decide::{Decider, Decision};
use super::device::Device;
use super::histogram::LatencyHistogram;
use super::pool::{Control, Job, Msg, Part, Pool, ShareEnd};
use super::runlog::{self, Ended, Snapshot};
use super::runner::{self, RunResult, RunSpec, Sinks};
use super::timeline::Timeline;
pub use storcert_results::act::Outcome;

/// One worker's part of a run.
pub struct Share {
    pub spec: RunSpec,
    /// Its drives, as indices of the run's.
    pub devices: Range<usize>,
    /// For each of its streams, the run's stream it is (a part of).
    of: Vec<usize>,
}

/// Whether a run can be split by drives: every stream that picks its
/// drive at random is paced, so its rate can be shared out.
pub fn splittable(spec: &RunSpec) -> bool {
    spec.streams
        .iter()
        .all(|s| s.device.is_some() || (s.rate > 0.0 && !s.one_in_flight))
}

/// The run cut into `workers` shares of its `n_devices` drives (as even
/// as whole drives allow; never more shares than drives).
pub fn shares(spec: &RunSpec, n_devices: usize, workers: usize) -> Vec<Share> {
    let workers = workers.clamp(1, n_devices.max(1));
    (0..workers)
        .map(|w| {
            let devices = w * n_devices / workers..(w + 1) * n_devices / workers;
            let share = devices.len() as f64 / n_devices as f64;
            let local = |v: &Vec<usize>| v[devices.clone()].to_vec();
            let mut of = Vec::new();
            let mut streams = Vec::new();
            for (i, s) in spec.streams.iter().enumerate() {
                let (device, rate, burst) = match s.device {
                    Some(d) if devices.contains(&d) => (Some(d - devices.start), s.rate, s.burst),
                    Some(_) => continue,
                    // The same instants, each worker its part of every burst.
                    None => (
                        None,
                        s.rate * share,
                        s.burst.part(devices.len() as u64, n_devices as u64),
                    ),
                };
                let mut local_stream = s.clone();
                local_stream.device = device;
                local_stream.rate = rate;
                local_stream.burst = burst;
                local_stream.device_hists = s.device_hists.as_ref().map(local);
                streams.push(local_stream);
                of.push(i);
            }
            Share {
                spec: RunSpec {
                    streams,
                    hist_names: spec.hist_names.clone(),
                    // This thread decides; a share only runs.
                    judged: Vec::new(),
                    stop_when_decided: false,
                    statistical: None,
                    ..*spec
                },
                devices,
                of,
            }
        })
        .collect()
}

/// Messages a share may have waiting for its run's thread: a few
/// seconds' worth, so a log that blocks (a pager, a paused terminal) holds
/// the run back as it holds a run on one thread, instead of queueing a
/// timeline of 270 KB a second each (found in review). On a pool shared
/// with other runs it holds their worker back too: the runs of `storcert
/// run` write their logs to files.
const QUEUED_PER_WORKER: usize = 8;

/// Runs `spec` over `devices` in `shares` on `pool`'s workers (`depth`:
/// each share's in-flight limit, else from its rate), and writes
/// ACT-format report blocks to `sinks.log`. The caller has written the
/// log's header, naming the pool's engine.
pub fn run(
    spec: &RunSpec,
    (shares, pool, depth): (&[Share], &Pool, Option<u32>),
    devices: Vec<Device>,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    // The whole run's check, as on one thread, before any share starts.
    runner::patterns(spec, &devices)?;
    let ctl = Arc::new(Control {
        // A little ahead: each worker takes its share on and allocates it
        // before the first request is due.
        start: Instant::now() + Duration::from_millis(20),
        stop: stop.clone(),
        halt: AtomicBool::new(false),
        errors: Arc::default(),
    });
    let (tx, rx) = mpsc::sync_channel(QUEUED_PER_WORKER * shares.len());
    let mut devices = devices.into_iter();
    for (w, share) in shares.iter().enumerate() {
        let job = Job {
            spec: Arc::new(share.spec.clone()),
            devices: devices.by_ref().take(share.devices.len()).collect(),
            ctl: Arc::clone(&ctl),
            tx: tx.clone(),
            share: w,
            depth: depth.unwrap_or_else(|| super::depth_for(&share.spec)) as usize,
        };
        if let Err(e) = pool.attach(job) {
            ctl.halt.store(true, Ordering::Relaxed);
            return Err(e);
        }
    }
    drop(tx);
    // However this thread leaves (an error, a panic), its shares stop.
    let _halt = HaltOnDrop(&ctl);
    let mut m = Merge::new(spec, (shares, pool.engine()), &ctl);
    // This thread failing (a log it cannot write) stops the shares, as it
    // stops a run on one thread (found in review: they ran on, unlogged,
    // to the end).
    m.take_all(&rx, sinks)?;
    m.finish(sinks)
}

/// Halts a run's shares when dropped: they are done by then, unless this
/// thread is leaving early.
struct HaltOnDrop<'a>(&'a Control);

impl Drop for HaltOnDrop<'_> {
    fn drop(&mut self) {
        self.0.halt.store(true, Ordering::Relaxed);
    }
}

/// This thread's side: the workers' parts added up, the log written.
struct Merge<'a> {
    spec: &'a RunSpec,
    shares: &'a [Share],
    /// The engine the shares ran on (the result names it).
    engine: &'static str,
    ctl: &'a Control,
    /// Seconds some workers have handed on: their sum, and how many.
    seconds: BTreeMap<u64, (Timeline, usize)>,
    timeline: Timeline,
    /// Reports some workers have handed on, by worker.
    reports: BTreeMap<u64, Vec<Option<Part>>>,
    written: u64,
    /// The run's histograms at the last report: ACT's buckets only.
    view: Vec<LatencyHistogram>,
    /// The timeline's seconds already in its file.
    written_seconds: usize,
    decider: Option<Decider>,
    decided: Option<Outcome>,
    ends: Vec<Option<ShareEnd>>,
    /// Which workers ended, in the order they did.
    ended: Vec<usize>,
    error: Option<anyhow::Error>,
}

impl<'a> Merge<'a> {
    fn new(
        spec: &'a RunSpec,
        (shares, engine): (&'a [Share], &'static str),
        ctl: &'a Control,
    ) -> Merge<'a> {
        let interval_ns = spec.report_interval.as_nanos().max(1) as u64;
        let total_reports = (spec.duration.as_nanos() as u64)
            .div_ceil(interval_ns)
            .max(1);
        Merge {
            spec,
            shares,
            engine,
            ctl,
            seconds: BTreeMap::new(),
            timeline: Timeline::default(),
            reports: BTreeMap::new(),
            written: 0,
            view: Vec::new(),
            written_seconds: 0,
            decider: spec
                .stop_when_decided
                .then(|| runner::decider(spec, interval_ns, total_reports)),
            decided: None,
            ends: shares.iter().map(|_| None).collect(),
            ended: Vec::new(),
            error: None,
        }
    }

    /// Takes every worker's messages until the last worker has ended.
    fn take_all(&mut self, rx: &Receiver<Msg>, sinks: &mut Sinks<'_>) -> Result<()> {
        for msg in rx {
            match msg {
                Msg::Second(k, part) => self.second(k, &part, sinks)?,
                Msg::Report(w, r, part) => self.report(w, r, part, sinks)?,
                Msg::Done(w, Ok(end)) => {
                    self.ends[w] = Some(end);
                    self.ended.push(w);
                }
                Msg::Done(_, Err(e)) => {
                    self.error.get_or_insert(e);
                }
            }
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn second(&mut self, k: u64, part: &Timeline, sinks: &mut Sinks<'_>) -> Result<()> {
        let entry = self.seconds.entry(k).or_default();
        entry.0.absorb(part);
        entry.1 += 1;
        // A second is whole once every worker handed it on; each hands its
        // seconds on in order, so the whole ones come first.
        while let Some(e) = self.seconds.first_entry() {
            if e.get().1 < self.shares.len() {
                break;
            }
            let (k, (sum, _)) = e.remove_entry();
            self.close_second(k, &sum, sinks)?;
        }
        Ok(())
    }

    fn close_second(&mut self, k: u64, sum: &Timeline, sinks: &mut Sinks<'_>) -> Result<()> {
        self.timeline.absorb(sum);
        self.timeline.advance(k + 1);
        self.write_seconds(sinks)
    }

    /// The timeline's closed seconds not yet in its file.
    fn write_seconds(&mut self, sinks: &mut Sinks<'_>) -> Result<()> {
        if let Some(t) = sinks.timeline.as_mut() {
            for s in &self.timeline.seconds[self.written_seconds..] {
                serde_json::to_writer(&mut **t, s)?;
                writeln!(t)?;
            }
        }
        self.written_seconds = self.timeline.seconds.len();
        Ok(())
    }

    fn report(&mut self, w: usize, r: u64, part: Part, sinks: &mut Sinks<'_>) -> Result<()> {
        if self.decided.is_some() {
            return Ok(());
        }
        let parts = self
            .reports
            .entry(r)
            .or_insert_with(|| self.shares.iter().map(|_| None).collect());
        parts[w] = Some(part);
        if parts.iter().any(Option::is_none) {
            return Ok(());
        }
        let parts: Vec<Part> = self
            .reports
            .remove(&r)
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .collect();
        self.written = r;
        let snaps: Vec<&Snapshot> = parts.iter().map(|p| &p.0).collect();
        let mut hists = std::mem::take(&mut self.view);
        if hists.is_empty() {
            // Made once: an HDR histogram each is 270 KB to allocate.
            let scale = self.scale();
            hists = self
                .spec
                .hist_names
                .iter()
                .map(|_| LatencyHistogram::new(scale))
                .collect();
        }
        for (i, h) in hists.iter_mut().enumerate() {
            let mut sum = [0; super::histogram::N_BUCKETS];
            for snap in &snaps {
                for (c, o) in sum.iter_mut().zip(&snap.buckets[i]) {
                    *c += o;
                }
            }
            h.set_buckets(&sum);
        }
        let counts = self.add_counts(snaps.iter().map(|s| &s.counts[..]));
        let lines: Vec<String> = parts.iter().flat_map(|p| p.1.iter().cloned()).collect();
        let interval_ns = self.spec.report_interval.as_nanos().max(1) as u64;
        let secs = r * interval_ns / 1_000_000_000;
        runlog::write_block(sinks.log, secs, &self.spec.hist_names, &hists, &lines)?;
        if let Some(p) = sinks.progress.as_mut() {
            let completed: Vec<u64> = counts.iter().map(|c| c.1).collect();
            let over = snaps.iter().fold((0, 0), |a, s| {
                (a.0 + s.reads_over_1ms.0, a.1 + s.reads_over_1ms.1)
            });
            let elapsed = Instant::now().saturating_duration_since(self.ctl.start);
            let (rate, over) = runlog::progress_of(self.spec, &completed, over, elapsed);
            p(secs, rate, over);
        }
        let decision = self.decide(r * interval_ns, &hists, &snaps);
        self.view = hists;
        self.decided = decision.map(|d| match d {
            Decision::Fails(reason) => Outcome::Decided {
                seconds: secs,
                reason,
            },
            Decision::Passes(reason) => Outcome::PassingByStatistics {
                seconds: secs,
                reason,
            },
        });
        if self.decided.is_some() {
            self.ctl.halt.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn scale(&self) -> super::histogram::Scale {
        match self.spec.microsecond {
            true => super::histogram::Scale::Microseconds,
            false => super::histogram::Scale::Milliseconds,
        }
    }

    /// Each of the run's streams' (issued, completed), from every worker's
    /// (in the order of the shares).
    fn add_counts<'c>(&self, parts: impl Iterator<Item = &'c [(u64, u64)]>) -> Vec<(u64, u64)> {
        let mut counts = vec![(0, 0); self.spec.streams.len()];
        for (share, part) in self.shares.iter().zip(parts) {
            for (&i, &(issued, completed)) in share.of.iter().zip(part) {
                counts[i].0 += issued;
                counts[i].1 += completed;
            }
        }
        counts
    }

    /// The decider's view of the run's streams, from the workers' parts.
    fn decide(
        &mut self,
        t_ns: u64,
        hists: &[LatencyHistogram],
        snaps: &[&Snapshot],
    ) -> Option<Decision> {
        let parts = |i: usize| {
            self.shares
                .iter()
                .zip(snaps)
                .flat_map(move |(share, snap)| {
                    share
                        .of
                        .iter()
                        .enumerate()
                        .filter(move |(_, of)| **of == i)
                        .map(move |(j, _)| {
                            let st = &share.spec.streams[j];
                            ((st.rate, st.burst), snap.counts[j])
                        })
                })
        };
        let remaining = |i: usize, until_ns: u64| -> Option<u64> {
            parts(i)
                .map(|(rate, counts)| runlog::remaining_of(rate, counts, until_ns))
                .sum()
        };
        let in_flight =
            |i: usize| -> u64 { parts(i).map(|(_, (issued, done))| issued - done).sum() };
        self.decider
            .as_mut()?
            .check(t_ns, hists, (&remaining, &in_flight))
    }

    /// The run's outcome and result, once every share has ended.
    fn finish(mut self, sinks: &mut Sinks<'_>) -> Result<RunResult> {
        let mut ends: Vec<ShareEnd> = std::mem::take(&mut self.ends)
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow!("a worker thread ended without its result"))?;
        // Each share's drives, back in the run's order.
        let devices: Vec<Device> = ends
            .iter_mut()
            .flat_map(|e| std::mem::take(&mut e.devices))
            .collect();
        let elapsed = ends.iter().map(|e| e.elapsed).max().unwrap_or_default();
        // What the workers recorded after their last whole second.
        for (k, (sum, _)) in std::mem::take(&mut self.seconds) {
            self.close_second(k, &sum, sinks)?;
        }
        for e in &ends {
            self.timeline.absorb(&e.timeline);
        }
        let mut hists = ends[0].hists.clone();
        for e in &ends[1..] {
            for (h, o) in hists.iter_mut().zip(&e.hists) {
                h.add(o);
            }
        }
        let counts = self.add_counts(ends.iter().map(|e| &e.counts[..]));
        let outcome = self.outcome(&ends, &counts, elapsed);
        for e in &ends {
            for line in &e.error_lines {
                writeln!(sinks.log, "{line}")?;
            }
        }
        self.timeline.advance(elapsed.as_secs());
        // The seconds the end closed go to the timeline's file too.
        self.write_seconds(sinks)?;
        runlog::write_outcome(sinks.log, &outcome, self.spec)?;
        sinks.log.flush()?;
        let ended = Ended {
            outcome,
            elapsed,
            max_lag_ns: ends.iter().map(|e| e.max_lag_ns).max().unwrap_or(0),
            reports: self.written,
        };
        Ok(runlog::build_result(
            self.spec,
            ended,
            (&counts, &hists),
            self.timeline,
            (&devices, self.engine),
        ))
    }

    /// As on one thread: a decision; else the first worker's own outcome
    /// (in the order they ended); else interrupted; a request that never
    /// came back; too few completed.
    fn outcome(&self, ends: &[ShareEnd], counts: &[(u64, u64)], elapsed: Duration) -> Outcome {
        if let Some(o) = &self.decided {
            return o.clone();
        }
        if let Some(o) = self
            .ended
            .iter()
            .map(|&w| &ends[w].outcome)
            .find(|o| **o != Outcome::Completed)
        {
            return o.clone();
        }
        if ends.iter().any(|e| e.interrupted) {
            return Outcome::Interrupted;
        }
        if ends.iter().any(|e| !e.drained) {
            return Outcome::StuckIo {
                device: "(unknown)".into(),
                seconds: self.spec.io_timeout.as_secs(),
            };
        }
        let completed: Vec<u64> = counts.iter().map(|c| c.1).collect();
        runlog::starved(self.spec, &completed, elapsed).unwrap_or(Outcome::Completed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::config::StorageConfig;
    use crate::act::Workload;

    /// ACT's storage streams at `load` over `n` drives.
    fn spec(n: usize, load: u32) -> RunSpec {
        let text = format!(
            "device-names: {}\ntest-duration-sec: 10\nread-reqs-per-sec: {}\nwrite-reqs-per-sec: {}\n",
            (0..n).map(|i| format!("/d{i}")).collect::<Vec<_>>().join(","),
            2000 * load * n as u32,
            1000 * load * n as u32,
        );
        let cfg = StorageConfig::parse(&text, "t.conf").unwrap();
        cfg.run_spec(&Default::default())
    }

    #[test]
    fn each_worker_issues_its_part_of_every_burst_at_the_same_instants() {
        let text = "device-names: /d0,/d1,/d2\ntest-duration-sec: 10\n\
                    read-reqs-per-sec: 6000\nwrite-reqs-per-sec: 3000\nservice-threads: 30\n";
        let run = StorageConfig::parse(text, "t.conf")
            .unwrap()
            .run_spec(&Default::default());
        let reads = |spec: &RunSpec| spec.streams.iter().find(|s| s.label == "reads").cloned();
        let whole = reads(&run).unwrap();
        let parts: Vec<_> = shares(&run, 3, 2)
            .iter()
            .filter_map(|s| reads(&s.spec))
            .collect();
        let burst = |n, d| crate::act::burst::Burst::new(n, d).unwrap();
        assert_eq!(whole.burst, burst(30, 1));
        assert_eq!(
            parts.iter().map(|p| p.burst).collect::<Vec<_>>(),
            [burst(10, 1), burst(20, 1)]
        );
        for p in &parts {
            let apart = p.burst.size() / p.rate;
            assert!((apart - whole.burst.size() / whole.rate).abs() < 1e-12);
        }
        // 10 over 3 drives on 2 workers: 10/3 and 20/3 a burst, at the
        // run's instants still.
        let ten = text.replace("service-threads: 30", "service-threads: 10");
        let run = StorageConfig::parse(&ten, "t.conf")
            .unwrap()
            .run_spec(&Default::default());
        let parts: Vec<_> = shares(&run, 3, 2)
            .iter()
            .filter_map(|s| reads(&s.spec))
            .collect();
        assert_eq!(
            parts.iter().map(|p| p.burst).collect::<Vec<_>>(),
            [burst(10, 3), burst(20, 3)]
        );
    }

    #[test]
    fn each_drive_is_one_share_s_and_asked_what_one_thread_asks_of_it() {
        let run = spec(3, 10);
        let shares = shares(&run, 3, 2);
        assert_eq!(
            shares.iter().map(|s| s.devices.clone()).collect::<Vec<_>>(),
            [0..1, 1..3]
        );
        for (i, s) in run.streams.iter().enumerate() {
            let parts: Vec<(&Share, &crate::act::runner::StreamSpec)> = shares
                .iter()
                .flat_map(|sh| {
                    sh.of
                        .iter()
                        .zip(&sh.spec.streams)
                        .filter(move |(of, _)| **of == i)
                        .map(move |(_, st)| (sh, st))
                })
                .collect();
            match s.device {
                // A drive's own stream goes whole to its worker, as that
                // worker's drive.
                Some(d) => {
                    assert_eq!(parts.len(), 1, "{}", s.label);
                    let (sh, st) = parts[0];
                    assert!(sh.devices.contains(&d));
                    assert_eq!(st.device, Some(d - sh.devices.start));
                    assert_eq!(st.rate, s.rate);
                }
                // A stream over every drive is shared out by drives: 1/3
                // and 2/3 of its rate, each with its drives' histograms.
                None => {
                    let rates: Vec<f64> = parts.iter().map(|p| p.1.rate).collect();
                    assert!((rates[0] - s.rate / 3.0).abs() < 1e-6, "{rates:?}");
                    assert!((rates[1] - s.rate * 2.0 / 3.0).abs() < 1e-6, "{rates:?}");
                    let all = s.device_hists.clone().unwrap();
                    assert_eq!(parts[0].1.device_hists.as_deref(), Some(&all[..1]));
                    assert_eq!(parts[1].1.device_hists.as_deref(), Some(&all[1..]));
                }
            }
        }
        // The shares only run: the run's own thread judges and decides.
        assert!(shares.iter().all(|s| s.spec.judged.is_empty()));
        assert!(run.stop_when_decided && !shares[0].spec.stop_when_decided);
    }

    #[test]
    fn threads_follow_the_rate_up_to_the_cores_and_the_drives() {
        use crate::act::{depth_for, threads_for};
        // 1x on one drive: one thread, the old in-flight limit.
        let one = spec(1, 1);
        assert_eq!(threads_for(&one, 1, None), 1);
        assert_eq!(threads_for(&one, 1, Some(4)), 1);
        assert_eq!(depth_for(&one), 2048);
        // 200x on eight drives: 3.2 M reads a second, as many threads
        // as cores (at most eight, the drives); asked for, up to the
        // drives whatever the cores.
        let wide = spec(8, 200);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads_for(&wide, 8, None), cores.min(8));
        assert_eq!(threads_for(&wide, 8, Some(3)), 3);
        assert_eq!(threads_for(&wide, 8, Some(64)), 8);
        // Each of two shares asks 1.6 M reads/s: 64 ms of them is more
        // than one ring holds.
        let half = &shares(&wide, 8, 2)[0].spec;
        assert_eq!(depth_for(half), storcert_engine::uring::MAX_DEPTH);
        // 20x on one drive: 40,000 reads a second and a few large blocks
        // (ACT's writes go out as large blocks), 64 ms of them 2,560 and
        // a little more.
        let d = depth_for(&spec(1, 20));
        assert!((2562..2700).contains(&d), "{d}");
    }
}
