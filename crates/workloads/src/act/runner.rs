//! The open-loop scheduler shared by the storage and index workloads.
//!
//! Every stream has a rate; request k of a stream is due at start + k/rate
//! and is issued then, whether or not earlier requests have completed (no
//! service threads to tune). Streams marked one-in-flight (ACT's per-device
//! large-block reader and writer, the tomb raider) issue their next request
//! only after the previous one completed, as ACT's dedicated threads do.
//!
//! Two latencies are kept per request: device latency (issue to
//! completion, what ACT reports) and transaction latency (due time to
//! completion, which includes any lag; ACT hides it).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

pub use super::burst::Burst;
use super::device::{Device, RecordPattern};
use super::histogram::LatencyHistogram;
use super::runlog::{
    build_result, progress_of, reads_over_1ms, remaining_of, starved, write_block, write_outcome,
    Ended, Snapshot,
};
use super::timeline::{Kind, Timeline};
use storcert_engine::{BufferPools, Completion, Engine, Request};
pub use storcert_results::act::{DeviceResult, HistSummary, Outcome, RunResult, StreamResult};
use storcert_util::random::Rng;

/// What one stream's requests look like.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// A record read or write at a random offset (ACT's pattern).
    Record { write: bool },
    /// A whole large block at a random large-block offset.
    LargeBlock { write: bool },
    /// Large blocks read in order over the device (tomb raider).
    LargeBlockSequential,
    /// 4 KiB at a random 4 KiB offset (the index workload).
    Io4k { write: bool },
}

impl Shape {
    fn is_write(self) -> bool {
        matches!(
            self,
            Shape::Record { write: true }
                | Shape::LargeBlock { write: true }
                | Shape::Io4k { write: true }
        )
    }
}

#[derive(Debug, Clone)]
pub struct StreamSpec {
    pub label: String,
    /// Requests per second; 0 means unpaced (as fast as one in flight goes).
    pub rate: f64,
    pub one_in_flight: bool,
    /// A fixed device, else a uniformly random one per request.
    pub device: Option<usize>,
    pub shape: Shape,
    /// Aggregate device-latency histogram.
    pub hist: Option<usize>,
    /// Per-device device-latency histograms, indexed by device.
    pub device_hists: Option<Vec<usize>>,
    pub txn_hist: Option<usize>,
    /// Pause after each completion (tomb-raider-sleep-usec).
    pub pause: Duration,
    pub kind: Kind,
    /// Paced requests fall due this many at a time, `burst / rate` apart,
    /// as ACT's service threads issue them (each thread's k-th request is
    /// due at the same instant); `Burst::EVEN` paces them evenly.
    pub burst: Burst,
}

#[derive(Clone)]
pub struct RunSpec {
    pub streams: Vec<StreamSpec>,
    /// Histogram names, in the order of the log's blocks.
    pub hist_names: Vec<String>,
    pub microsecond: bool,
    pub duration: Duration,
    pub report_interval: Duration,
    /// Zero disables the check (as in ACT).
    pub max_lag: Duration,
    pub large_block_bytes: u32,
    pub record: (u32, u32),
    pub compress_pct: u32,
    /// Device errors tolerated before the run stops.
    pub max_errors: u64,
    /// A request outstanding this long is reported as stuck.
    pub io_timeout: Duration,
    /// The histograms whose failure decides the run: its reads (a drive's
    /// own share in a run over several fails that drive alone, so it never
    /// stops the others).
    pub judged: Vec<usize>,
    /// Stop once the verdict is decided (`decide`); false runs to the end.
    pub stop_when_decided: bool,
    /// Decide by statistics too, at this chance of deciding the wrong way
    /// (`statistics`; search trials only, with `stop_when_decided`).
    pub statistical: Option<f64>,
}

/// What decides a run: the histograms its verdict judges (and each drive's
/// share of their reads, which a pass by statistics needs too), with the
/// streams that feed each.
pub(super) fn decider(
    spec: &RunSpec,
    interval_ns: u64,
    total_reports: u64,
) -> super::decide::Decider {
    let feeders = |h: usize| -> Vec<usize> {
        spec.streams
            .iter()
            .enumerate()
            .filter(|(_, st)| {
                st.hist == Some(h) || st.device_hists.as_ref().is_some_and(|d| d.contains(&h))
            })
            .map(|(i, _)| i)
            .collect()
    };
    let named = |h: usize| (h, spec.hist_names[h].clone(), feeders(h));
    let mut shares: Vec<usize> = spec
        .streams
        .iter()
        .filter(|st| st.hist.is_some_and(|h| spec.judged.contains(&h)))
        .flat_map(|st| st.device_hists.iter().flatten().copied())
        .collect();
    shares.sort_unstable();
    shares.dedup();
    let end_ns = total_reports * interval_ns;
    let sampling = spec.statistical.map(|alpha| {
        let judged = spec.judged.len() + shares.len();
        super::statistics::Sampling::new(alpha, judged, total_reports, end_ns)
    });
    super::decide::Decider::new(
        (
            spec.judged.iter().map(|&h| named(h)).collect(),
            shares.into_iter().map(named).collect(),
        ),
        sampling,
        spec.microsecond,
        (interval_ns, end_ns),
    )
}

pub(super) struct StreamState {
    spec: StreamSpec,
    interval_ns: f64,
    pub(super) issued: u64,
    pub(super) completed: u64,
    busy: bool,
    /// For unpaced streams: not before this time.
    not_before: Instant,
    sequential_offset: Vec<u64>,
}

impl StreamState {
    fn due(&self, start: Instant) -> Option<Instant> {
        if self.spec.one_in_flight && self.busy {
            return None;
        }
        if self.spec.rate <= 0.0 {
            return Some(self.not_before);
        }
        Some(self.due_of(start, self.issued))
    }

    /// When request `k` of a paced stream is due: with the rest of its
    /// burst, at the burst's first.
    fn due_of(&self, start: Instant, k: u64) -> Instant {
        let b = self.spec.burst;
        start + Duration::from_nanos((b.of(k) as f64 * self.burst_ns()) as u64)
    }

    /// From one burst to the next.
    fn burst_ns(&self) -> f64 {
        self.spec.burst.size() * self.interval_ns
    }

    /// The last of this stream's requests due by `limit`, if its next is.
    fn last_due_by(&self, start: Instant, limit: Instant) -> Option<Instant> {
        let first = self.due(start)?;
        if first > limit {
            return None;
        }
        if self.spec.rate <= 0.0 || self.spec.one_in_flight {
            return Some(first);
        }
        // The last request of the last burst due by `limit`.
        let burst = ((limit - start).as_nanos() as f64 / self.burst_ns()) as u64;
        let last = (self.spec.burst.first_of(burst + 1) - 1).max(self.issued);
        Some(self.due_of(start, last).min(limit))
    }
}

/// Requests due within this window of the earliest go out together at the
/// last one's due time, one wake-up for all. Sleeping threads such as ACT's
/// get the same from the kernel's default timer slack (50 us); here a lone
/// request is not delayed. Each one's wait is counted in its transaction
/// latency and in the run's lag. At 10x and up it halves the wake-ups, and
/// with them the CPU the host's scheduler and the device driver's worker
/// spend per request.
const ISSUE_SLACK: Duration = Duration::from_micros(50);

/// When to wake next: the earliest due request, or the last due within
/// ISSUE_SLACK of it.
fn next_wake(streams: &[StreamState], start: Instant) -> Option<Instant> {
    let first = streams.iter().filter_map(|s| s.due(start)).min()?;
    let limit = first + ISSUE_SLACK;
    streams
        .iter()
        .filter_map(|s| s.last_due_by(start, limit))
        .max()
}

struct Pending {
    stream: usize,
    device: usize,
    scheduled: Instant,
}

pub struct Sinks<'a> {
    pub log: &'a mut dyn Write,
    pub timeline: Option<&'a mut dyn Write>,
    /// Called once per report with (seconds done, reads/s, % reads > 1 ms).
    pub progress: Option<&'a mut dyn FnMut(u64, f64, f64)>,
}

pub(super) struct PerDevicePatterns {
    records: Option<RecordPattern>,
    n_large_blocks: u64,
    n_4k: u64,
}

/// Runs the workload on `devices` and writes ACT-format report blocks to
/// `sinks.log`. The caller has written the log's header.
pub fn run(
    spec: &RunSpec,
    devices: &mut [Device],
    engine: &mut dyn Engine,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    // The drives are open for the whole run: the engine may hold them.
    devices.iter().for_each(|d| engine.register(d.fd()));
    let result = run_registered(spec, devices, engine, stop, sinks);
    devices.iter().for_each(|d| engine.forget(d.fd()));
    result
}

fn run_registered(
    spec: &RunSpec,
    devices: &mut [Device],
    engine: &mut dyn Engine,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    let patterns = patterns(spec, devices)?;
    let mut s = Scheduler::new(Arc::new(spec.clone()), patterns, devices.len(), None);
    let mut outcome = Outcome::Completed;
    loop {
        if stop.load(Ordering::Relaxed) {
            outcome = Outcome::Interrupted;
            break;
        }
        let now = Instant::now();
        if let Some(o) = s.write_reports(now, sinks)? {
            outcome = o;
            break;
        }
        if s.reports >= s.total_reports {
            break;
        }
        s.write_timeline(now, sinks)?;
        if let Some(o) = s.step(now, devices, engine)? {
            outcome = o;
            break;
        }
    }
    let elapsed = s.start.elapsed();
    if !s.drain(devices, engine)? && outcome == Outcome::Completed {
        outcome = Outcome::StuckIo {
            device: "(unknown)".into(),
            seconds: spec.io_timeout.as_secs(),
        };
    }
    for line in s.error_lines.drain(..) {
        writeln!(sinks.log, "{line}")?;
    }
    if outcome == Outcome::Completed {
        let completed: Vec<u64> = s.streams.iter().map(|st| st.completed).collect();
        if let Some(o) = starved(spec, &completed, elapsed) {
            outcome = o;
        }
    }
    // The seconds closed since the loop's last turn (and what the drain
    // completed in them) go to the timeline's file too: the file holds
    // every second the result does.
    s.write_timeline(s.start + elapsed, sinks)?;
    write_outcome(sinks.log, &outcome, spec)?;
    sinks.log.flush()?;
    Ok(s.result(outcome, elapsed, devices, engine.name()))
}

/// Each device's offsets, checked against the streams that use them.
pub(super) fn patterns(spec: &RunSpec, devices: &[Device]) -> Result<Vec<PerDevicePatterns>> {
    let lb = spec.large_block_bytes;
    let patterns: Vec<PerDevicePatterns> = devices
        .iter()
        .map(|d| {
            let n_large_blocks = d.size_bytes / lb as u64;
            PerDevicePatterns {
                records: RecordPattern::new(
                    n_large_blocks,
                    lb,
                    d.min_op_bytes,
                    spec.record.0,
                    spec.record.1,
                ),
                n_large_blocks,
                n_4k: d.size_bytes / 4096,
            }
        })
        .collect();
    let needs_records = spec
        .streams
        .iter()
        .any(|s| matches!(s.shape, Shape::Record { .. }));
    let needs_blocks = spec.streams.iter().any(|s| {
        matches!(
            s.shape,
            Shape::LargeBlock { .. } | Shape::LargeBlockSequential
        )
    });
    for (d, p) in devices.iter().zip(&patterns) {
        if needs_blocks && p.n_large_blocks == 0 || needs_records && p.records.is_none() {
            anyhow::bail!(
                "{}: too small ({} bytes) for {}-byte large blocks",
                d.name,
                d.size_bytes,
                lb
            );
        }
        if p.n_4k == 0 {
            anyhow::bail!("{}: smaller than 4 KiB", d.name);
        }
    }
    Ok(patterns)
}

/// The run's state from one turn of the loop to the next: the streams'
/// schedules, the requests in flight, the histograms and the timeline.
pub(super) struct Scheduler {
    spec: Arc<RunSpec>,
    patterns: Vec<PerDevicePatterns>,
    max_record: usize,
    hists: Vec<LatencyHistogram>,
    pools: BufferPools,
    start: Instant,
    streams: Vec<StreamState>,
    rng: Rng,
    pending: Vec<Option<Pending>>,
    free_slots: Vec<usize>,
    completions: Vec<Completion>,
    timeline: Timeline,
    error_lines: Vec<String>,
    total_errors: u64,
    /// Device errors of the whole run: a worker thread's share of a run
    /// counts the others' too (the limit is the run's).
    run_errors: Arc<AtomicU64>,
    pub(super) max_lag_ns: u64,
    interval_ns: u64,
    pub(super) total_reports: u64,
    pub(super) reports: u64,
    decider: Option<super::decide::Decider>,
    /// A worker thread's share wakes at each second too, to hand its
    /// timeline's second on (`workers`).
    pub(super) wake_each_second: bool,
    /// The streams in the order they are issued: those that keep one
    /// request in flight first (`ISSUE_BATCH`).
    order: Vec<usize>,
    /// When `stuck` last looked.
    stuck_checked: Instant,
    /// Added to every request's tag: a pool worker's engine carries the
    /// requests of several runs and gives each its own completions by it
    /// (`pool`). The slot is the low 32 bits.
    pub(super) tag_base: u64,
    /// The most of this run's requests in flight at once: on an engine of
    /// its own, the engine's capacity; on a pool's, the run's own share.
    pub(super) depth: usize,
}

/// The most requests of paced streams one turn of the loop issues before
/// it reaps. A stream that keeps one request in flight (ACT's large-block
/// reader and writer) sees its completion only when the loop reaps, so a
/// turn that issued every due read first held it to 63% of its rate (8
/// null drives at 200x on two threads); at 512 it reached 88 to 91%. At
/// 128 it reached 83 to 100%, but a run on one thread reaped so often that
/// its reads waited (53% of them over 1 ms of transaction latency at 100x,
/// against 6 to 10% at 512).
const ISSUE_BATCH: u32 = 512;

/// The bits of a request's tag that name its slot; the rest is the run's
/// `tag_base`.
pub(super) const SLOT_BITS: u64 = (1 << 32) - 1;

impl Scheduler {
    /// `shared`: a worker thread's share of a run, with the run's start
    /// (one schedule for every share) and its device error count.
    pub(super) fn new(
        spec: Arc<RunSpec>,
        patterns: Vec<PerDevicePatterns>,
        n_devices: usize,
        shared: Option<(Instant, Arc<AtomicU64>)>,
    ) -> Self {
        let scale = if spec.microsecond {
            super::histogram::Scale::Microseconds
        } else {
            super::histogram::Scale::Milliseconds
        };
        let max_record = patterns
            .iter()
            .filter_map(|p| p.records.map(|r| r.max_bytes()))
            .max()
            .unwrap_or(4096) as usize;
        let hists = spec
            .hist_names
            .iter()
            .map(|_| LatencyHistogram::new(scale))
            .collect();
        let pools = BufferPools::default();
        // The clock starts after the allocations: they are no request's lag
        // (a worker's share is given the run's, a little ahead).
        let (start, run_errors) = shared.unwrap_or_else(|| (Instant::now(), Arc::default()));
        let interval_ns = spec.report_interval.as_nanos().max(1) as u64;
        let total_reports = (spec.duration.as_nanos() as u64)
            .div_ceil(interval_ns)
            .max(1);
        let decider = spec
            .stop_when_decided
            .then(|| decider(&spec, interval_ns, total_reports));
        let order = {
            let mut order: Vec<usize> = (0..spec.streams.len()).collect();
            order.sort_by_key(|&i| !spec.streams[i].one_in_flight);
            order
        };
        Scheduler {
            patterns,
            max_record,
            hists,
            pools,
            start,
            streams: spec
                .streams
                .iter()
                .map(|s| StreamState {
                    spec: s.clone(),
                    interval_ns: if s.rate > 0.0 { 1e9 / s.rate } else { 0.0 },
                    issued: 0,
                    completed: 0,
                    busy: false,
                    not_before: start,
                    sequential_offset: vec![0; n_devices],
                })
                .collect(),
            rng: Rng::from_entropy(),
            pending: Vec::new(),
            free_slots: Vec::new(),
            completions: Vec::with_capacity(256),
            timeline: Timeline::default(),
            error_lines: Vec::new(),
            total_errors: 0,
            run_errors,
            max_lag_ns: 0,
            interval_ns,
            total_reports,
            reports: 0,
            decider,
            wake_each_second: false,
            stuck_checked: start,
            order,
            tag_base: 0,
            depth: usize::MAX,
            spec,
        }
    }

    /// Report blocks, each at its interval's end, and the progress after
    /// each; the outcome if a report decided the run.
    fn write_reports(&mut self, now: Instant, sinks: &mut Sinks<'_>) -> Result<Option<Outcome>> {
        let spec = Arc::clone(&self.spec);
        while self.reports < self.total_reports
            && now >= self.start + Duration::from_nanos((self.reports + 1) * self.interval_ns)
        {
            self.reports += 1;
            let secs = self.reports * self.interval_ns / 1_000_000_000;
            write_block(
                sinks.log,
                secs,
                &spec.hist_names,
                &self.hists,
                &self.error_lines,
            )?;
            self.error_lines.clear();
            if let Some(p) = sinks.progress.as_mut() {
                let completed: Vec<u64> = self.streams.iter().map(|st| st.completed).collect();
                let over = reads_over_1ms(&spec, &self.hists);
                let (rate, over) = progress_of(&spec, &completed, over, now - self.start);
                p(secs, rate, over);
            }
            use super::decide::Decision;
            match self.decided() {
                Some(Decision::Fails(reason)) => {
                    return Ok(Some(Outcome::Decided {
                        seconds: secs,
                        reason,
                    }))
                }
                Some(Decision::Passes(reason)) => {
                    return Ok(Some(Outcome::PassingByStatistics {
                        seconds: secs,
                        reason,
                    }))
                }
                None => {}
            }
        }
        Ok(None)
    }

    /// What the reports so far decided, if anything (asked after each).
    fn decided(&mut self) -> Option<super::decide::Decision> {
        let t_ns = self.reports * self.interval_ns;
        let streams = &self.streams;
        let remaining = |i: usize, until_ns: u64| -> Option<u64> {
            let st = &streams[i];
            remaining_of(
                (st.spec.rate, st.spec.burst),
                (st.issued, st.completed),
                until_ns,
            )
        };
        let in_flight = |i: usize| streams[i].issued - streams[i].completed;
        self.decider
            .as_mut()?
            .check(t_ns, &self.hists, (&remaining, &in_flight))
    }

    /// The seconds that closed since the last turn, into the timeline.
    fn write_timeline(&mut self, now: Instant, sinks: &mut Sinks<'_>) -> Result<()> {
        let closed = self
            .timeline
            .advance(now.duration_since(self.start).as_secs())
            .to_vec();
        if let Some(t) = sinks.timeline.as_mut() {
            for s in closed {
                serde_json::to_writer(&mut **t, &s)?;
                writeln!(t)?;
            }
        }
        Ok(())
    }

    /// One turn of a run's loop past its reports: issue what is due, wait
    /// and reap, look for a stuck request; the outcome if one ends the run.
    pub(super) fn step(
        &mut self,
        now: Instant,
        devices: &mut [Device],
        engine: &mut dyn Engine,
    ) -> Result<Option<Outcome>> {
        if let Some(o) = self.issue_due(now, devices, engine)? {
            return Ok(Some(o));
        }
        if let Some(o) = self.reap(now, devices, engine)? {
            return Ok(Some(o));
        }
        Ok(self.stuck(devices))
    }

    /// Issues every request that is due; the outcome if a stream fell
    /// further behind than the run allows.
    pub(super) fn issue_due(
        &mut self,
        now: Instant,
        devices: &[Device],
        engine: &mut dyn Engine,
    ) -> Result<Option<Outcome>> {
        let spec = &*self.spec;
        let lb = spec.large_block_bytes;
        let mut budget = ISSUE_BATCH;
        for &si in &self.order {
            let st = &mut self.streams[si];
            while let Some(due) = st.due(self.start) {
                if due > now {
                    break;
                }
                if !st.spec.one_in_flight {
                    if budget == 0 {
                        break;
                    }
                    budget -= 1;
                }
                let lag = now.duration_since(due);
                let lag_ns = lag.as_nanos() as u64;
                if !spec.max_lag.is_zero() && lag > spec.max_lag {
                    return Ok(Some(Outcome::CouldNotKeepUp {
                        stream: st.spec.label.clone(),
                    }));
                }
                // A full engine, or the run's own share of a pool's: the
                // request waits, and its lag grows until the check above
                // ends the run.
                if engine.in_flight() >= engine.capacity()
                    || self.pending.len() - self.free_slots.len() >= self.depth
                {
                    break;
                }
                if st.spec.rate > 0.0 {
                    self.max_lag_ns = self.max_lag_ns.max(lag_ns);
                    self.timeline.lag(lag_ns);
                }
                let dev = match st.spec.device {
                    Some(d) => d,
                    None => (self.rng.next_u32() as usize) % devices.len(),
                };
                let p = &self.patterns[dev];
                let write = st.spec.shape.is_write();
                let pools = &mut self.pools;
                let (offset, len, mut buf) = match st.spec.shape {
                    Shape::Record { .. } => {
                        let (o, l) = p.records.expect("checked above").pick(&mut self.rng);
                        (o, l, pools.get(self.max_record))
                    }
                    Shape::LargeBlock { .. } => {
                        let o = (self.rng.next_u64() % p.n_large_blocks) * lb as u64;
                        (o, lb, pools.get(lb as usize))
                    }
                    Shape::LargeBlockSequential => {
                        let o = st.sequential_offset[dev];
                        st.sequential_offset[dev] =
                            (o + lb as u64) % (p.n_large_blocks * lb as u64);
                        (o, lb, pools.get(lb as usize))
                    }
                    Shape::Io4k { .. } => {
                        ((self.rng.next_u64() % p.n_4k) * 4096, 4096, pools.get(4096))
                    }
                };
                if write {
                    // Salt every write with fresh data, compress-pct shaped.
                    self.rng
                        .fill(&mut buf.as_mut_slice()[..len as usize], spec.compress_pct);
                }
                let pending = &mut self.pending;
                let slot = self.free_slots.pop().unwrap_or_else(|| {
                    pending.push(None);
                    pending.len() - 1
                });
                let pushed = engine.push(Request {
                    fd: devices[dev].fd(),
                    offset,
                    len,
                    write,
                    buf,
                    tag: self.tag_base | slot as u64,
                });
                if let Err(e) = pushed {
                    // Not in flight: a run that ends on it waits for none.
                    self.free_slots.push(slot);
                    return Err(e.into());
                }
                pending[slot] = Some(Pending {
                    stream: si,
                    device: dev,
                    scheduled: due,
                });
                st.issued += 1;
                if st.spec.one_in_flight {
                    st.busy = true;
                }
                if st.spec.rate <= 0.0 && !st.spec.one_in_flight {
                    break;
                }
            }
        }
        Ok(None)
    }

    /// Sleeps until the next due request or report, or a completion, and
    /// records what completed; the outcome if device errors passed the
    /// limit.
    fn reap(
        &mut self,
        now: Instant,
        devices: &mut [Device],
        engine: &mut dyn Engine,
    ) -> Result<Option<Outcome>> {
        let until = self.wake(now, self.blocked(engine));
        let mut completions = std::mem::take(&mut self.completions);
        completions.clear();
        engine.reap(Some(until), &mut completions)?;
        let mut outcome = None;
        for c in completions.drain(..) {
            let ended = self.complete(c, devices);
            outcome = outcome.or(ended);
        }
        self.completions = completions;
        Ok(outcome)
    }

    /// Whether no request of this run can go out now: the engine is full,
    /// or the run has its own limit in flight. Its due requests then wait
    /// for a completion, not for their due time, which has passed.
    pub(super) fn blocked(&self, engine: &dyn Engine) -> bool {
        engine.in_flight() >= engine.capacity() || self.in_flight() >= self.depth
    }

    /// When this run's loop must wake next: its next due request (unless
    /// `blocked`) or report (or second, on a worker), and at least every
    /// 100 ms, to see Ctrl-C and stuck requests.
    pub(super) fn wake(&self, now: Instant, blocked: bool) -> Instant {
        let next_report = self.start + Duration::from_nanos((self.reports + 1) * self.interval_ns);
        let due = match blocked {
            true => None,
            false => next_wake(&self.streams, self.start),
        };
        let mut wake = due.map_or(next_report, |d| d.min(next_report));
        if self.wake_each_second {
            let next_second = now.saturating_duration_since(self.start).as_secs() + 1;
            wake = wake.min(self.start + Duration::from_secs(next_second));
        }
        wake.min(now + Duration::from_millis(100))
    }

    /// This run's requests in flight.
    pub(super) fn in_flight(&self) -> usize {
        self.pending.len() - self.free_slots.len()
    }

    /// Records one of this run's completions; the outcome if device errors
    /// passed the limit.
    pub(super) fn complete(&mut self, c: Completion, devices: &mut [Device]) -> Option<Outcome> {
        let slot = (c.tag & SLOT_BITS) as usize;
        let p = self.pending.get_mut(slot).and_then(Option::take)?;
        self.free_slots.push(slot);
        let st = &mut self.streams[p.stream];
        st.completed += 1;
        st.busy = false;
        if !st.spec.pause.is_zero() || st.spec.rate <= 0.0 {
            st.not_before = c.completed_at + st.spec.pause;
        }
        if let Some(err) = c.error() {
            devices[p.device].record_error(c.write, c.offset, c.len, &err);
            self.total_errors += 1;
            let run_errors = self.run_errors.fetch_add(1, Ordering::Relaxed) + 1;
            if self.error_lines.len() < 100 {
                // ACT's wording: "ERROR: reading DEV: ERRNO 'STRERROR'".
                let text = err.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text).to_string();
                self.error_lines.push(format!(
                    "ERROR: {} {}: {} '{}' (offset {})",
                    if c.write { "writing" } else { "reading" },
                    devices[p.device].name,
                    err.raw_os_error().unwrap_or(0),
                    text,
                    c.offset
                ));
            }
            self.pools.put(c.buf);
            return (run_errors > self.spec.max_errors)
                .then_some(Outcome::DeviceErrors { errors: run_errors });
        }
        let device_ns = c.completed_at.duration_since(c.issued_at).as_nanos() as u64;
        let txn_ns = c
            .completed_at
            .saturating_duration_since(p.scheduled)
            .as_nanos() as u64;
        if let Some(h) = st.spec.hist {
            self.hists[h].record(device_ns);
        }
        if let Some(dh) = &st.spec.device_hists {
            self.hists[dh[p.device]].record(device_ns);
        }
        if let Some(h) = st.spec.txn_hist {
            self.hists[h].record(txn_ns);
        }
        self.timeline.record(st.spec.kind, device_ns);
        self.pools.put(c.buf);
        None
    }

    /// A request outstanding too long: a stuck device, not a slow one.
    pub(super) fn stuck(&mut self, devices: &[Device]) -> Option<Outcome> {
        if self.in_flight() == 0 || self.spec.io_timeout.is_zero() {
            return None;
        }
        // A pass over every slot, so at most ten a second: the timeout is
        // seconds, and a loop turning 25,000 times a second spent more on
        // this pass than on its requests.
        let now = Instant::now();
        if now < self.stuck_checked + Duration::from_millis(100) {
            return None;
        }
        self.stuck_checked = now;
        let (dev, age) = oldest_pending(&self.pending, now)?;
        (age > self.spec.io_timeout).then(|| Outcome::StuckIo {
            device: devices[dev].name.clone(),
            seconds: age.as_secs(),
        })
    }

    /// Lets what is in flight finish (bounded), so buffers are not freed
    /// under the kernel and the devices see no aborted writes; false if
    /// some never came back (their buffers stay with the engine).
    pub(super) fn drain(
        &mut self,
        devices: &mut [Device],
        engine: &mut dyn Engine,
    ) -> Result<bool> {
        let drain_until = self.drain_deadline();
        while self.in_flight() > 0 && Instant::now() < drain_until {
            self.completions.clear();
            engine.reap(
                Some(Instant::now() + Duration::from_millis(50)),
                &mut self.completions,
            )?;
            let mut completions = std::mem::take(&mut self.completions);
            for c in completions.drain(..) {
                self.drained(c, devices);
            }
            self.completions = completions;
        }
        Ok(self.in_flight() == 0)
    }

    /// How long a run that ended waits for what it has in flight.
    pub(super) fn drain_deadline(&self) -> Instant {
        Instant::now() + self.spec.io_timeout.max(Duration::from_secs(1))
    }

    /// One of this run's completions after its end: its slot freed, a
    /// device error still recorded against its drive.
    pub(super) fn drained(&mut self, c: Completion, devices: &mut [Device]) {
        let slot = (c.tag & SLOT_BITS) as usize;
        if let Some(p) = self.pending.get_mut(slot).and_then(Option::take) {
            self.free_slots.push(slot);
            if let Some(err) = c.error() {
                devices[p.device].record_error(c.write, c.offset, c.len, &err);
            }
        }
    }

    /// What a worker thread's share hands on at a report: its histograms
    /// and each stream's counts so far (`workers`).
    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            buckets: self.hists.iter().map(|h| *h.counts()).collect(),
            reads_over_1ms: reads_over_1ms(&self.spec, &self.hists),
            counts: self.counts(),
        }
    }

    /// Each stream's (issued, completed).
    pub(super) fn counts(&self) -> Vec<(u64, u64)> {
        self.streams
            .iter()
            .map(|st| (st.issued, st.completed))
            .collect()
    }

    /// The histograms, whole, as the run ends (`workers`).
    pub(super) fn take_hists(&mut self) -> Vec<LatencyHistogram> {
        std::mem::take(&mut self.hists)
    }

    /// The timeline's part since it was last taken (`workers`).
    pub(super) fn take_timeline(&mut self) -> Timeline {
        std::mem::take(&mut self.timeline)
    }

    /// Error lines not yet written (`workers`).
    pub(super) fn take_error_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.error_lines)
    }

    fn result(
        mut self,
        outcome: Outcome,
        elapsed: Duration,
        devices: &[Device],
        engine: &str,
    ) -> RunResult {
        self.timeline.advance(elapsed.as_secs());
        let counts = self.counts();
        let ended = Ended {
            outcome,
            elapsed,
            max_lag_ns: self.max_lag_ns,
            reports: self.reports,
        };
        build_result(
            &self.spec,
            ended,
            (&counts, &self.hists),
            self.timeline,
            (devices, engine),
        )
    }
}

fn oldest_pending(pending: &[Option<Pending>], now: Instant) -> Option<(usize, Duration)> {
    // Transaction age since the due time bounds the I/O's own age.
    pending
        .iter()
        .flatten()
        .map(|p| (p.device, now.saturating_duration_since(p.scheduled)))
        .max_by_key(|x| x.1)
}

#[cfg(test)]
mod tests;
