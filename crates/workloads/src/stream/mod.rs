//! The streaming suite: a sequential write pass, then a sequential read of
//! what was written, at full device speed, on the shared I/O engine. Each
//! target is split into regions, one per job (fio's offset_increment), and
//! all targets run at once. Results are kept per job and per group as fio
//! reports them, with the device's own view from /proc/diskstats.

pub mod diskstats;
pub mod export;
pub mod fio_stats;
pub mod fs;
pub mod verify;

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram as Hdr;

use storcert_device::blockdev;
use storcert_engine::{self as engine, BufferPools, EngineKind, Request};
use storcert_output::console::Console;
use storcert_output::progress::Progress;
pub use storcert_results::stream::{
    CpuUsage, GroupResult, JobResult, Latency, Pass, PassResult, StreamResult, TargetInfo,
    VerifyResult,
};

use storcert_results::stream::BW_AVG_MS;
pub use storcert_results::stream::SCHEMA_VERSION;

/// fio's default completion latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

#[derive(Debug, Clone)]
pub struct Spec {
    pub targets: Vec<String>,
    /// The safety gate's word for each target a write pass writes: one it
    /// did not clear is not opened for writing.
    pub cleared: Vec<storcert_device::safety::Cleared>,
    /// Bytes per target (None: `percent` of each target).
    pub size: Option<u64>,
    pub percent: u32,
    pub bs: u32,
    pub qd: u32,
    pub jobs: u32,
    pub passes: Vec<Pass>,
    pub verify: bool,
    /// O_DIRECT (false: through the page cache, as plain dd).
    pub direct: bool,
    pub engine: EngineKind,
    /// The null engine's latency (with `EngineKind::Null`).
    pub null_latency: engine::NullLatency,
    pub seed: u64,
}

/// A job's completion latencies as the results give them.
fn latency_of(h: &Hdr<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        n: h.len(),
        min_ns: h.min(),
        max_ns: h.max(),
        mean_ns: h.mean(),
        stddev_ns: h.stdev(),
        percentiles: PERCENTILES
            .iter()
            .map(|&p| (p, h.value_at_percentile(p)))
            .collect(),
    }
}

struct Opened {
    file: File,
    /// storcert's mark on a block device written: "tested" once dropped,
    /// after `file` is closed.
    _writing: Option<storcert_device::safety::Writing>,
    info: TargetInfo,
    /// Opened with O_DIRECT (a file on tmpfs cannot be: it goes buffered).
    direct: bool,
}

fn size_of(file: &File, path: &str) -> Result<(u64, u32, bool)> {
    let meta = file.metadata().with_context(|| format!("stat {path}"))?;
    if meta.file_type().is_block_device() {
        let size = blockdev::size_bytes(file).with_context(|| format!("{path}: size"))?;
        let lbs = blockdev::logical_block_size(file)
            .with_context(|| format!("{path}: logical sector size"))?;
        Ok((size, lbs.max(512), true))
    } else {
        Ok((meta.len(), 512, false))
    }
}

fn open_targets(spec: &Spec) -> Result<Vec<Opened>> {
    let writes = spec.passes.contains(&Pass::Write);
    let mut out = Vec::new();
    for path in &spec.targets {
        let mut flags = 0;
        if spec.direct {
            flags |= libc::O_DIRECT;
        }
        let is_block = std::fs::metadata(path)
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false);
        // Nothing is opened for writing that the gate did not clear.
        let cleared = match writes {
            true => Some(crate::act::cleared_for(path, &spec.cleared)?),
            false => None,
        };
        // A file on a filesystem without O_DIRECT (tmpfs) is streamed
        // through the page cache, and the results say so (`direct: false`).
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(writes)
            .create(writes && !is_block && spec.size.is_some())
            .truncate(false);
        let opened = match cleared {
            Some(c) => c.open(&options, flags),
            None => blockdev::open_for_reading(path, flags),
        };
        let (file, direct) = opened.map_err(|e| match e.raw_os_error() {
            Some(libc::EROFS) | Some(libc::EACCES) if writes => {
                anyhow::anyhow!(
                    "{path} is read-only ({e}); a read-only target takes --pattern read only"
                )
            }
            _ => anyhow::anyhow!("open {path}: {e}"),
        })?;
        let (mut size, lbs, is_block) = size_of(&file, path)?;
        if writes && is_block && blockdev::read_only(&file).unwrap_or(false) {
            bail!("{path} is read-only (the kernel marks it so); a read-only target takes --pattern read only");
        }
        // storcert's mark, once the target is known to take writes.
        let writing = cleared
            .map(|c| c.begin_writing())
            .transpose()
            .with_context(|| format!("{path}: write storcert's mark"))?;
        if !is_block && size == 0 {
            if let Some(want) = spec.size {
                file.set_len(want).with_context(|| format!("size {path}"))?;
                size = want;
            }
        }
        if spec.bs % lbs != 0 {
            bail!(
                "--bs {} is not a multiple of {path}'s logical sector size ({lbs} bytes)",
                spec.bs
            );
        }
        let tested = match spec.size {
            Some(s) if s > size => bail!("--size {s} is larger than {path} ({size} bytes)"),
            Some(s) => s,
            None => size / 100 * spec.percent as u64,
        };
        let tested = tested / lbs as u64 * lbs as u64;
        if tested == 0 {
            bail!("{path}: nothing to test ({size} bytes)");
        }
        out.push(Opened {
            info: TargetInfo {
                path: path.clone(),
                device: diskstats::device_name(std::path::Path::new(path)),
                size_bytes: size,
                tested_bytes: tested,
                logical_sector_size: lbs,
            },
            file,
            _writing: writing,
            direct,
        });
    }
    Ok(out)
}

/// Splits `length` bytes into `jobs` regions, each a whole number of
/// `bs` blocks except the last, which takes the remainder: no gaps, no
/// overlaps.
pub fn regions(length: u64, jobs: u32, bs: u32) -> Vec<(u64, u64)> {
    let jobs = jobs.max(1) as u64;
    let per = length / jobs / bs as u64 * bs as u64;
    (0..jobs)
        .map(|k| {
            let start = k * per;
            let end = if k + 1 == jobs { length } else { start + per };
            (start, end - start)
        })
        .filter(|r| r.1 > 0)
        .collect()
}

struct Job {
    target: usize,
    start: u64,
    end: u64,
    next: u64,
    in_flight: u32,
    bytes: u64,
    ios: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    clat: Hdr<u64>,
    bw: Vec<u64>,
    /// Bytes completed in each `BW_AVG_MS` window from `first`.
    windows: Vec<u64>,
    fio: fio_stats::Counter,
    error: Option<String>,
}

/// Progress goes to `console`, one bar or line per target.
pub fn run(spec: &Spec, stop: &Arc<AtomicBool>, console: &Arc<Console>) -> Result<StreamResult> {
    if spec.bs == 0 || spec.qd == 0 || spec.jobs == 0 {
        bail!("--bs, --qd and --jobs must be at least 1");
    }
    let targets = open_targets(spec)?;
    let depth = (spec.qd as usize * spec.jobs as usize * targets.len()).clamp(1, 4096) as u32;
    let mut engine =
        engine::open_with(spec.engine, depth, &spec.null_latency).context("open the I/O engine")?;
    let mut passes = Vec::new();
    for &pass in &spec.passes {
        let r = run_pass(spec, pass, &targets, engine.as_mut(), stop, console)?;
        let stop_here = r.interrupted || r.jobs.iter().any(|j| j.error.is_some());
        passes.push(r);
        if stop_here {
            break;
        }
    }
    Ok(StreamResult {
        schema_version: SCHEMA_VERSION,
        seed: spec.seed,
        storcert_version: env!("CARGO_PKG_VERSION").to_string(),
        engine: engine.name().to_string(),
        bs: spec.bs,
        qd: spec.qd,
        jobs_per_target: spec.jobs,
        direct: targets.iter().all(|t| t.direct),
        targets: targets.into_iter().map(|t| t.info).collect(),
        passes,
    })
}

fn run_pass(
    spec: &Spec,
    pass: Pass,
    targets: &[Opened],
    engine: &mut dyn engine::Engine,
    stop: &Arc<AtomicBool>,
    console: &Arc<Console>,
) -> Result<PassResult> {
    let write = pass == Pass::Write;
    let mut jobs = jobs_of(spec, targets);
    // One progress line per device.
    let mut progress: Vec<Progress> = targets
        .iter()
        .map(|t| {
            let label = format!(
                "{} {}",
                if write { "writing" } else { "reading" },
                t.info.path
            );
            Progress::bytes(console, &label, t.info.tested_bytes)
        })
        .collect();
    let before: Vec<Option<diskstats::Counters>> = targets
        .iter()
        .map(|t| t.info.device.as_deref().and_then(diskstats::read))
        .collect();
    let mut pools = BufferPools::default();
    let mut filler = storcert_util::random::Rng::from_entropy();
    let cpu_before = thread_rusage();
    let started = Instant::now();
    let mut tally = Tally {
        started,
        timeline: Vec::new(),
        done_per_target: vec![0u64; targets.len()],
        verify: (spec.verify && !write).then_some(VerifyResult {
            blocks_checked: 0,
            bad_blocks: 0,
            first_bad: Vec::new(),
        }),
        bad: Default::default(),
    };
    let fill = Fill {
        spec,
        write,
        targets,
    };
    let mut completions = Vec::new();
    let mut interrupted = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
        }
        if !interrupted {
            for (j, job) in jobs.iter_mut().enumerate() {
                fill.queue(j, job, engine, &mut pools, &mut filler)?;
            }
        } else {
            // Nothing more is queued; fio's per-call counters still see
            // the (empty) submission.
            for job in jobs.iter_mut() {
                job.fio.submit_call(0);
            }
        }
        if engine.in_flight() == 0 {
            break;
        }
        completions.clear();
        engine.reap(
            Some(Instant::now() + Duration::from_millis(100)),
            &mut completions,
        )?;
        let mut reaped = vec![0u32; jobs.len()];
        for c in &completions {
            reaped[c.tag as usize] += 1;
        }
        for (job, n) in jobs.iter_mut().zip(reaped) {
            job.fio.complete_call(n);
        }
        for mut c in completions.drain(..) {
            let job = &mut jobs[c.tag as usize];
            tally.complete(job, &mut c, spec, targets);
            pools.put(c.buf);
        }
        for (p, &d) in progress.iter_mut().zip(&tally.done_per_target) {
            p.set(d);
        }
    }
    for (p, &d) in progress.into_iter().zip(&tally.done_per_target) {
        p.finish(d);
    }
    if let Some(v) = tally.verify.as_mut() {
        v.first_bad = tally
            .bad
            .iter()
            .map(|((t, off), problem)| format!("{} offset {off}: {problem}", targets[*t].info.path))
            .collect();
    }
    if write {
        sync_written(targets)?;
    }
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let last_completion_ms = jobs.iter().filter_map(|j| j.last).max().map_or(0, |l| {
        l.saturating_duration_since(started).as_millis() as u64
    });
    let disks = targets
        .iter()
        .zip(before)
        .filter_map(|(t, b)| {
            let name = t.info.device.as_deref()?;
            Some(diskstats::delta(
                name,
                b?,
                diskstats::read(name)?,
                elapsed_ms,
            ))
        })
        .collect();
    let results: Vec<JobResult> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| job_result(i, j, targets))
        .collect();
    Ok(PassResult {
        pass,
        group: group_of(&results),
        jobs: results,
        disks,
        verify: tally.verify,
        bw_timeline: tally.timeline,
        elapsed_ms: last_completion_ms,
        cpu: cpu_before.zip(thread_rusage()).map(|(a, b)| CpuUsage {
            usr_ms: b.usr_ms.saturating_sub(a.usr_ms),
            sys_ms: b.sys_ms.saturating_sub(a.sys_ms),
            ctx: b.ctx.saturating_sub(a.ctx),
            majf: b.majf.saturating_sub(a.majf),
            minf: b.minf.saturating_sub(a.minf),
        }),
        interrupted,
    })
}

/// Each target's region split among its jobs.
fn jobs_of(spec: &Spec, targets: &[Opened]) -> Vec<Job> {
    let mut jobs: Vec<Job> = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        for (start, len) in regions(target.info.tested_bytes, spec.jobs, spec.bs) {
            jobs.push(Job {
                target: t,
                start,
                end: start + len,
                next: start,
                in_flight: 0,
                bytes: 0,
                ios: 0,
                first: None,
                last: None,
                clat: Hdr::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
                bw: Vec::new(),
                windows: Vec::new(),
                fio: fio_stats::Counter::default(),
                error: None,
            });
        }
    }
    jobs
}

/// What queues a pass's requests.
struct Fill<'a> {
    spec: &'a Spec,
    write: bool,
    targets: &'a [Opened],
}

impl Fill<'_> {
    /// Queues job `j`'s next blocks up to the queue depth.
    fn queue(
        &self,
        j: usize,
        job: &mut Job,
        engine: &mut dyn engine::Engine,
        pools: &mut BufferPools,
        filler: &mut storcert_util::random::Rng,
    ) -> Result<()> {
        let spec = self.spec;
        let mut queued = 0;
        while job.error.is_none() && job.in_flight < spec.qd && job.next < job.end {
            let len = (job.end - job.next).min(spec.bs as u64) as u32;
            let mut buf = pools.get(spec.bs as usize);
            if self.write {
                let block = &mut buf.as_mut_slice()[..len as usize];
                if spec.verify {
                    verify::fill(block, job.next, job.target as u32, spec.seed);
                } else if block[..64].iter().all(|&b| b == 0) {
                    // A fresh buffer: random data once (fio's default),
                    // so compressing drives see incompressible data.
                    filler.fill(block, 100);
                }
            }
            job.first.get_or_insert_with(Instant::now);
            engine.push(Request {
                fd: self.targets[job.target].file.as_raw_fd(),
                offset: job.next,
                len,
                write: self.write,
                buf,
                tag: j as u64,
            })?;
            job.next += len as u64;
            job.in_flight += 1;
            job.fio.submitted_at(job.in_flight);
            queued += 1;
        }
        job.fio.submit_call(queued);
        Ok(())
    }
}

/// What a pass counts across its jobs as they complete.
struct Tally {
    started: Instant,
    /// Bytes completed in each second of the pass.
    timeline: Vec<u64>,
    done_per_target: Vec<u64>,
    verify: Option<VerifyResult>,
    /// The ten lowest (target, offset) that failed verification.
    bad: std::collections::BTreeMap<(usize, u64), verify::Problem>,
}

impl Tally {
    fn complete(
        &mut self,
        job: &mut Job,
        c: &mut engine::Completion,
        spec: &Spec,
        targets: &[Opened],
    ) {
        job.in_flight -= 1;
        if let Some(e) = c.error() {
            job.error.get_or_insert_with(|| {
                format!(
                    "{} {} at offset {}: {e} ({} bytes done)",
                    targets[job.target].info.path,
                    if c.write { "write" } else { "read" },
                    c.offset,
                    job.bytes
                )
            });
            return;
        }
        let lat = c.completed_at.duration_since(c.issued_at).as_nanos() as u64;
        job.clat.saturating_record(lat.max(1));
        job.fio.completed(lat);
        job.bytes += c.len as u64;
        job.ios += 1;
        job.last = Some(c.completed_at);
        let sec = c.completed_at.duration_since(self.started).as_secs() as usize;
        if job.bw.len() <= sec {
            job.bw.resize(sec + 1, 0);
        }
        job.bw[sec] += c.len as u64;
        let since_first = job.first.map_or(Duration::ZERO, |f| {
            c.completed_at.saturating_duration_since(f)
        });
        add_to_window(&mut job.windows, since_first, c.len as u64);
        if self.timeline.len() <= sec {
            self.timeline.resize(sec + 1, 0);
        }
        self.timeline[sec] += c.len as u64;
        self.done_per_target[job.target] += c.len as u64;
        if let Some(v) = self.verify.as_mut().filter(|_| !c.write) {
            let block = &mut c.buf.as_mut_slice()[..c.len as usize];
            v.blocks_checked += 1;
            if let Some(problem) = verify::check(block, c.offset, job.target as u32, spec.seed) {
                v.bad_blocks += 1;
                // Keep the ten lowest (target, offset): completions
                // arrive out of order.
                self.bad.insert((job.target, c.offset), problem);
                if self.bad.len() > 10 {
                    self.bad.pop_last();
                }
            }
        }
    }
}

/// What the kernel wrote must be on the device before the read pass,
/// and (buffered, dd-style) not still in the page cache to be read back.
fn sync_written(targets: &[Opened]) -> Result<()> {
    for t in targets {
        // SAFETY: fsync and fadvise on an open fd.
        if unsafe { libc::fsync(t.file.as_raw_fd()) } != 0 {
            let e = std::io::Error::last_os_error();
            bail!("fsync {}: {e}", t.info.path);
        }
        if !t.direct {
            unsafe { libc::posix_fadvise(t.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
    Ok(())
}

fn job_result(i: usize, j: &Job, targets: &[Opened]) -> JobResult {
    let runtime = match (j.first, j.last) {
        (Some(a), Some(b)) => b.duration_since(a),
        _ => Duration::ZERO,
    };
    let secs = runtime.as_secs_f64().max(1e-9);
    JobResult {
        name: format!(
            "{}-job{}",
            std::path::Path::new(&targets[j.target].info.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            i
        ),
        target: j.target,
        offset: j.start,
        length: j.end - j.start,
        bytes: j.bytes,
        ios: j.ios,
        runtime_ms: runtime.as_millis() as u64,
        runtime_ns: runtime.as_nanos() as u64,
        bw_bytes: if j.bytes > 0 {
            j.bytes as f64 / secs
        } else {
            0.0
        },
        iops: if j.ios > 0 { j.ios as f64 / secs } else { 0.0 },
        clat: latency_of(&j.clat),
        bw_per_sec: j.bw.clone(),
        bw_samples: bw_samples(&j.windows, runtime),
        fio: j.fio.finish(),
        error: j.error.clone(),
    }
}

/// The pass as fio's group line sums it.
fn group_of(results: &[JobResult]) -> GroupResult {
    let bytes: u64 = results.iter().map(|j| j.bytes).sum();
    let max_rt = results.iter().map(|j| j.runtime_ms).max().unwrap_or(0);
    let max_rt_ns = results.iter().map(|j| j.runtime_ns).max().unwrap_or(0);
    GroupResult {
        bytes,
        aggr_bw_bytes: if max_rt_ns > 0 {
            bytes as f64 * 1e9 / max_rt_ns as f64
        } else {
            0.0
        },
        min_bw_bytes: results
            .iter()
            .map(|j| j.bw_bytes)
            .fold(f64::INFINITY, f64::min)
            .min(f64::MAX),
        max_bw_bytes: results.iter().map(|j| j.bw_bytes).fold(0.0, f64::max),
        min_runtime_ms: results.iter().map(|j| j.runtime_ms).min().unwrap_or(0),
        max_runtime_ms: max_rt,
    }
}

/// This thread's CPU time, context switches and faults so far.
fn thread_rusage() -> Option<CpuUsage> {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return None;
    }
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    Some(CpuUsage {
        usr_ms: ms(ru.ru_utime),
        sys_ms: ms(ru.ru_stime),
        ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        majf: ru.ru_majflt as u64,
        minf: ru.ru_minflt as u64,
    })
}

/// Counts `bytes` completed `since_first` (the job's first I/O) in its
/// `BW_AVG_MS` window.
pub fn add_to_window(windows: &mut Vec<u64>, since_first: Duration, bytes: u64) {
    let w = (since_first.as_millis() / BW_AVG_MS as u128) as usize;
    if windows.len() <= w {
        windows.resize(w + 1, 0);
    }
    windows[w] += bytes;
}

/// fio's bandwidth samples (KiB/s) from bytes per `BW_AVG_MS` window of a
/// job that ran `runtime`: whole windows only, and none where nothing
/// completed (fio's `__add_samples`).
pub fn bw_samples(windows: &[u64], runtime: Duration) -> Vec<f64> {
    let whole = (runtime.as_millis() / BW_AVG_MS as u128) as usize;
    windows
        .iter()
        .take(whole)
        .filter(|&&b| b > 0)
        .map(|&b| b as f64 * 1000.0 / BW_AVG_MS as f64 / 1024.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_samples_cover_whole_windows_as_fio_takes_them() {
        // 2.3 s at a steady 1 MiB per window, then a tail of 0.3 s with
        // 0.3 MiB: four whole windows sampled, the tail not.
        let mib = 1 << 20;
        let windows = [mib, mib, mib, mib, 3 * mib / 10];
        let s = bw_samples(&windows, Duration::from_millis(2300));
        assert_eq!(s, vec![2048.0; 4]);
        let (min, max, mean, dev) = storcert_results::stream::fio_stats(&s);
        assert_eq!((min, max, mean, dev), (2048.0, 2048.0, 2048.0, 0.0));
        // Shorter than a window: no sample, as fio (and no -0.0).
        assert!(bw_samples(&[mib], Duration::from_millis(300)).is_empty());
        let zero = storcert_results::stream::fio_stats(&[]);
        assert_eq!(format!("{zero:?}"), "(0.0, 0.0, 0.0, 0.0)");
        // A window where nothing completed is not a sample of 0.
        assert_eq!(
            bw_samples(&[mib, 0, mib], Duration::from_millis(1500)).len(),
            2
        );
        // fio's deviation is the sample deviation (n - 1).
        let (_, _, _, dev) = storcert_results::stream::fio_stats(&[1.0, 3.0]);
        assert!((dev - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn the_last_partial_second_counts_for_the_time_it_covers() {
        let p: PassResult = serde_json::from_value(serde_json::json!({
            "pass": "write", "jobs": [], "disks": [], "verify": null, "interrupted": false,
            "group": {"bytes": 0, "aggr_bw_bytes": 0.0, "min_bw_bytes": 0.0, "max_bw_bytes": 0.0,
                      "min_runtime_ms": 0, "max_runtime_ms": 0},
            "bw_timeline": [1000, 1000, 250], "elapsed_ms": 2250
        }))
        .unwrap();
        assert_eq!(
            p.bw_per_second(),
            vec![(1.0, 1000.0), (2.0, 1000.0), (2.25, 1000.0)]
        );
    }

    #[test]
    fn regions_have_no_gaps_or_overlaps() {
        for (len, jobs, bs) in [
            (1 << 30, 4, 1 << 20),
            (1_000_000_000, 3, 4096),
            (8192, 4, 4096),
            (12800, 2, 4096),
        ] {
            let r = regions(len, jobs, bs);
            assert_eq!(r[0].0, 0);
            for w in r.windows(2) {
                assert_eq!(w[0].0 + w[0].1, w[1].0, "gap or overlap");
                assert_eq!(w[0].1 % bs as u64, 0);
            }
            let last = r.last().unwrap();
            assert_eq!(last.0 + last.1, len);
        }
        // Fewer blocks than jobs: only the jobs with work remain.
        assert_eq!(regions(8192, 4, 4096), vec![(0, 8192)]);
    }
}
