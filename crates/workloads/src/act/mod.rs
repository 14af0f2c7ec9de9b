//! The Aerospike Certification Tool workload: ACT 6.x configuration and
//! derived rates, prep (zero + salt), the storage and index workloads on an
//! open-loop io_uring scheduler, ACT-format logs, the act_latency.py
//! analysis with a verdict, and the search for the highest passing load.

pub mod burst;
mod decide;
pub mod device;
pub mod index;
pub mod pool;
pub mod prep;
mod runlog;
pub mod runner;
pub mod search;
pub mod statistics;
pub mod storage;
pub mod workers;

// What is read rather than run (the configuration, the histograms, the
// log's analysis and judge) is the judging layer's.
pub use storcert_judge::act::{analyze, config, histogram, judge, timeline};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use storcert_device::safety::Cleared;

use device::Device;
use runner::{RunResult, Sinks};
use storcert_engine::{self as engine, EngineKind};

/// How a workload run is carried out, beyond the ACT configuration.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub engine: EngineKind,
    /// The null engine's latency (with `EngineKind::Null`).
    pub null_latency: engine::NullLatency,
    /// Requests an engine holds at once (the open-loop ceiling); `None`:
    /// from the asked rate (`depth_for`).
    pub depth: Option<u32>,
    /// Worker threads, each with its own engine and share of the drives;
    /// `None`: enough for the asked rate, at most the cores (`threads_for`).
    pub threads: Option<usize>,
    pub max_errors: u64,
    pub io_timeout: Duration,
    /// Run to the end even once the verdict is decided (a failed slice
    /// cannot pass again); the default stops there.
    pub run_to_end: bool,
    /// Decide by statistics too, at this chance of deciding the wrong way
    /// (`statistics::ALPHA`): a search's trials only, never a run that
    /// qualifies a drive.
    pub statistical: Option<f64>,
    /// Worker threads shared with other runs (`storcert run`'s per-drive
    /// runs, a search's trials side by side); `None`: the run has its own
    /// thread, or threads (`threads`).
    pub pool: Option<Arc<pool::Pool>>,
    /// The safety gate's word for each device the run writes: a device
    /// (or file) the gate did not clear is not opened.
    pub cleared: Vec<Cleared>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: EngineKind::Auto,
            null_latency: engine::NullLatency::default(),
            depth: None,
            threads: None,
            max_errors: 100,
            io_timeout: Duration::from_secs(30),
            run_to_end: false,
            statistical: None,
            pool: None,
            cleared: Vec::new(),
        }
    }
}

/// Opens each named device through the gate's word for it.
pub fn open_devices(
    names: &[String],
    cleared: &[Cleared],
    dsync: bool,
    file_size: u64,
) -> Result<Vec<Device>> {
    names
        .iter()
        .map(|n| Device::open(cleared_for(n, cleared)?, dsync, file_size))
        .collect()
}

/// The gate's word for `name`, or the error that none was given.
pub fn cleared_for<'a>(name: &str, cleared: &'a [Cleared]) -> Result<&'a Cleared> {
    cleared
        .iter()
        .find(|c| c.path == std::path::Path::new(name))
        .ok_or_else(|| anyhow::anyhow!("{name}: not cleared by the safety gate, so not opened"))
}

/// What the storage and index workloads have in common for a run: their
/// devices, how to open them, their streams, and their log header.
pub trait Workload {
    fn device_names(&self) -> &[String];
    /// ACT's test-duration-sec.
    fn duration_secs(&self) -> u64;
    /// O_DSYNC on writes (unless disable-odsync).
    fn dsync(&self) -> bool;
    /// ACT's file-size-mbytes, in bytes (0: use the file as it is).
    fn file_size(&self) -> u64;
    fn run_spec(&self, opts: &RunOptions) -> runner::RunSpec;
    /// The log's second line ("Storage device IO test").
    fn title(&self) -> &'static str;
    /// The configuration echo and DERIVED CONFIGURATION block.
    fn echo(&self) -> String;
    /// The line the log gives each device.
    fn device_line(&self, d: &Device) -> String;
    /// What the banner says of ACT's thread counts: how the requests are
    /// paced without them.
    fn pacing(&self) -> String {
        "ACT's thread counts unused".into()
    }
}

/// The version of ACT whose log format storcert writes.
pub const ACT_VERSION: &str = "6.6";

/// Which threads carry a run, as its log's banner says it.
#[derive(Debug, Clone, Copy)]
pub enum Carried {
    /// On this many worker threads of its own (one: the run's own thread).
    Own(usize),
    /// On this many of a pool's worker threads, shared with other runs.
    Pool(usize),
}

/// The log up to the first report block: ACT's banner, the configuration
/// echo, the device lines and the histogram names.
pub fn header(
    w: &dyn Workload,
    devices: &[Device],
    names: &[String],
    (engine, carried): (&str, Carried),
) -> String {
    let threads = match carried {
        Carried::Own(1) => String::new(),
        Carried::Own(n) => format!(" on {n} worker threads"),
        Carried::Pool(1) => " on a worker thread of a pool shared by runs side by side".into(),
        Carried::Pool(n) => format!(" on {n} worker threads of a pool shared by runs side by side"),
    };
    let mut s = format!(
        "\nACT version {ACT_VERSION}\n{}\nstorcert {} (ACT-compatible log; open-loop {engine} scheduler{threads}, \
         {})\n\n{}\n",
        w.title(),
        env!("CARGO_PKG_VERSION"),
        w.pacing(),
        w.echo()
    );
    for d in devices {
        s.push_str(&w.device_line(d));
        s.push('\n');
    }
    s.push_str("\nHISTOGRAM NAMES\n");
    for n in names {
        s.push_str(n);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// Runs a workload; the ACT log goes to `sinks.log`.
pub fn run_workload(
    w: &dyn Workload,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    let mut devices = open_devices(w.device_names(), &opts.cleared, w.dsync(), w.file_size())?;
    let spec = w.run_spec(opts);
    let threads = threads_for(&spec, devices.len(), opts.threads);
    let write_header = |sinks: &mut Sinks<'_>, engine: &str, carried: Carried| -> Result<()> {
        let header = header(w, &devices, &spec.hist_names, (engine, carried));
        sinks.log.write_all(header.as_bytes())?;
        // On disk as the run starts: `tail -f` shows what runs, and a run
        // stopped before its first report leaves a log that says what it
        // was.
        sinks.log.flush()?;
        Ok(())
    };
    if let Some(pool) = &opts.pool {
        let shares = workers::shares(&spec, devices.len(), threads.min(pool.len()));
        write_header(sinks, pool.engine(), Carried::Pool(shares.len()))?;
        return workers::run(&spec, (&shares, pool, opts.depth), devices, stop, sinks);
    }
    let shares = workers::shares(&spec, devices.len(), threads);
    let depths: Vec<u32> = shares
        .iter()
        .map(|s| opts.depth.unwrap_or_else(|| depth_for(&s.spec)))
        .collect();
    if shares.len() == 1 {
        let mut engine = engine::open_with(opts.engine, depths[0], &opts.null_latency)
            .context("open the I/O engine")?;
        write_header(sinks, engine.name(), Carried::Own(1))?;
        return runner::run(&spec, &mut devices, engine.as_mut(), stop, sinks);
    }
    // Each worker opens its own engine on its own thread.
    let pool = pool::Pool::start(opts.engine, &opts.null_latency, &depths)?;
    write_header(sinks, pool.engine(), Carried::Own(shares.len()))?;
    workers::run(&spec, (&shares, &pool, opts.depth), devices, stop, sinks)
}

/// A request's latency that the in-flight limit leaves room for at the
/// asked rate: a read slower than 64 ms counts against ACT's strictest
/// rule already, so an engine that holds every request of 64 ms (Little's
/// law: in flight = rate × latency) is never what fails a run first.
const LATENCY_BOUND_S: f64 = 0.064;

/// The in-flight limit of a run (or a worker's share of one): its asked
/// rate times `LATENCY_BOUND_S`, one more for each stream that keeps one in
/// flight, and a whole burst more for each stream due in bursts (found in
/// review: a burst larger than the limit would wait on completions, as
/// ACT's threads never do); at least 2,048 (the fixed limit it replaces),
/// at most what one io_uring holds.
pub fn depth_for(spec: &runner::RunSpec) -> u32 {
    let rate = asked_rate(spec);
    let lone = spec.streams.iter().filter(|s| s.one_in_flight).count() as f64;
    let bursts: f64 = spec
        .streams
        .iter()
        .filter(|s| s.burst != runner::Burst::EVEN)
        .map(|s| s.burst.size().ceil())
        .sum();
    (rate * LATENCY_BOUND_S + lone + bursts)
        .ceil()
        .clamp(2048.0, engine::uring::MAX_DEPTH as f64) as u32
}

/// Requests a second the run's paced streams ask for, in all.
fn asked_rate(spec: &runner::RunSpec) -> f64 {
    spec.streams.iter().map(|s| s.rate.max(0.0)).sum()
}

/// Requests a second one worker thread is given by default: well under
/// what one issues and reaps on a core here (2.4 M/s on the null engine, a
/// third of that on io_uring to a device), so the default adds threads
/// before one falls behind.
pub const REQUESTS_PER_THREAD: f64 = 500_000.0;

/// Worker threads for a run over `n_devices` drives: `asked`, else enough
/// for its rate at `REQUESTS_PER_THREAD`, at most the cores; never more
/// than drives (a drive is one worker's), and one for a run whose streams
/// cannot be shared out.
pub fn threads_for(spec: &runner::RunSpec, n_devices: usize, asked: Option<usize>) -> usize {
    if !workers::splittable(spec) {
        return 1;
    }
    let wanted = asked.unwrap_or_else(|| threads_for_rate(asked_rate(spec)));
    wanted.clamp(1, n_devices.max(1))
}

/// Enough worker threads for `rate` requests a second, at most the cores.
fn threads_for_rate(rate: f64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    ((rate / REQUESTS_PER_THREAD).ceil() as usize).min(cores)
}

/// A pool for runs that go side by side, each of `runs` with its drives'
/// count: `opts.threads` worker threads, else enough for their asked rate
/// in all at `REQUESTS_PER_THREAD`, at most the cores; never more than
/// their drives. Each worker's engine holds its part of the runs' own
/// in-flight limits (`depth_for`, or `opts.depth` each).
pub fn pool_for(runs: &[(runner::RunSpec, usize)], opts: &RunOptions) -> Result<Arc<pool::Pool>> {
    let rate: f64 = runs.iter().map(|(s, _)| asked_rate(s)).sum();
    let drives: usize = runs.iter().map(|(_, n)| n).sum();
    let threads = opts
        .threads
        .unwrap_or_else(|| threads_for_rate(rate))
        .clamp(1, drives.max(1));
    let depth: u64 = runs
        .iter()
        .map(|(s, _)| u64::from(opts.depth.unwrap_or_else(|| depth_for(s))))
        .sum();
    let per_worker = depth
        .div_ceil(threads as u64)
        .min(u64::from(engine::uring::MAX_DEPTH)) as u32;
    let pool = pool::Pool::start(opts.engine, &opts.null_latency, &vec![per_worker; threads])?;
    Ok(Arc::new(pool))
}

/// Why a finished run's log has no analysis.
#[derive(Debug, Clone)]
pub enum Unjudged {
    /// The judge read the log and found nothing it can judge (no whole
    /// report): the log is judged as failing wherever it is read.
    Log {
        name: String,
        why: analyze::AnalyzeError,
    },
    /// The log could not be read back, or its analysis written.
    Io(String),
}

impl std::fmt::Display for Unjudged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unjudged::Log { name, why } => write!(f, "{name}: {why}"),
            Unjudged::Io(why) => f.write_str(why),
        }
    }
}

/// Analyses a finished log, once, and saves the analysis beside it
/// (`x.log` → `x.analysis.json`), naming the timeline when it was kept in
/// the same folder. The summary and the report read this file. `label`:
/// the log's name in the analysis text (its path in a results folder, as
/// a reader of the folder names it), else its file name.
pub fn save_analysis(
    log: &std::path::Path,
    label: Option<&str>,
    timeline: Option<&std::path::Path>,
) -> std::result::Result<storcert_results::act::LogAnalysis, Unjudged> {
    let io = |e: std::io::Error, p: &std::path::Path| Unjudged::Io(format!("{}: {e}", p.display()));
    let text = std::fs::read(log).map_err(|e| io(e, log))?;
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let timeline = timeline
        .filter(|t| t.parent() == log.parent())
        .and_then(|t| t.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let a = analyze::judge_log(&text, &name, label.unwrap_or(&name), timeline)
        .map_err(|why| Unjudged::Log { name, why })?;
    let path = analyze::analysis_path(log);
    storcert_util::fs::write_durably(&path, storcert_results::Artefact::from(a.clone()).to_json())
        .map_err(|e| io(e, &path))?;
    Ok(a)
}

/// A path that names an open stream rather than a file of the run's own
/// (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`): written as it is,
/// never truncated, read back or given files beside it.
fn is_stream_path(p: &std::path::Path) -> bool {
    p.starts_with("/dev/") || p.starts_with("/proc/")
}

/// Where one workload run's outputs go: the ACT log (standard output when
/// `None`), the per-second timeline and the run's result artefact.
#[derive(Debug, Clone, Default)]
pub struct Files {
    pub log: Option<std::path::PathBuf>,
    pub timeline: Option<std::path::PathBuf>,
    pub json: Option<std::path::PathBuf>,
    /// The log's path in its results folder, which names it in its
    /// analysis (`None`: its file name).
    pub label: Option<String>,
}

/// A workload run with its outputs written.
pub struct Ran {
    pub result: RunResult,
    /// The log judged by ACT's rule: saved beside a log in a regular file,
    /// judged as it passed for one written to standard output or a pipe.
    /// The error says why there is none (a log with no whole report has
    /// nothing to judge); the run's own result stands.
    pub analysis: std::result::Result<storcert_results::act::LogAnalysis, Unjudged>,
}

/// The log on its way to standard output (or a pipe), judged as it passes.
struct JudgedOnTheWay<'a> {
    out: &'a mut dyn std::io::Write,
    /// None where the log is a file, analysed once written.
    reader: Option<analyze::LogReader>,
}

impl std::io::Write for JudgedOnTheWay<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some(r) = self.reader.as_mut() {
            r.push(&buf[..n]);
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Runs a workload into its files: the one way both `storcert act` and
/// `storcert run` run ACT. The log and timeline are flushed, the result
/// written as its artefact, and the log analysed once and saved beside it.
/// `progress` gets (seconds done, reads/s, % reads > 1 ms) per report.
pub fn run_to_files(
    w: &dyn Workload,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    files: &Files,
    progress: &mut dyn FnMut(u64, f64, f64),
) -> Result<Ran> {
    use std::io::Write;
    // Only a log in a regular file of its own is read back and analysed:
    // `--log /dev/stdout` (even redirected to a file), a pipe or a terminal
    // is written, never read (that would wait forever), never truncated (a
    // shell's `>>` keeps what it held), and gets no `.analysis.json` beside
    // it in /dev; it is judged as it passes instead.
    let analysed_log = files
        .log
        .as_deref()
        .filter(|p| !is_stream_path(p) && std::fs::metadata(p).map_or(true, |m| m.is_file()));
    // Nothing of an earlier run at these paths may outlive a run that
    // fails: its result and its log's analysis go first.
    for stale in files
        .json
        .iter()
        .cloned()
        .chain(analysed_log.map(analyze::analysis_path))
    {
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("{}", stale.display()));
            }
            _ => {}
        }
    }
    let create = |p: &std::path::Path| {
        // A stream is appended to: reopened through /dev it would start
        // at offset 0 of a redirected file and overwrite what it held.
        let mut open = std::fs::OpenOptions::new();
        match is_stream_path(p) {
            true => open.append(true),
            false => open.write(true).create(true).truncate(true),
        };
        open.open(p)
            .map(std::io::BufWriter::new)
            .with_context(|| format!("{}", p.display()))
    };
    let mut log_file = files.log.as_deref().map(create).transpose()?;
    let mut timeline = files.timeline.as_deref().map(create).transpose()?;
    let mut stdout = std::io::stdout().lock();
    let passing: &mut dyn Write = match log_file.as_mut() {
        Some(f) => f,
        None => &mut stdout,
    };
    let name = files.log.as_deref().map_or("stdout".into(), |p| {
        p.file_name().map_or(p.display().to_string(), |n| {
            n.to_string_lossy().into_owned()
        })
    });
    let mut log = JudgedOnTheWay {
        out: passing,
        reader: analysed_log
            .is_none()
            .then(|| analyze::LogReader::judging(&name, &name)),
    };
    let result = run_workload(
        w,
        opts,
        stop,
        &mut Sinks {
            log: &mut log,
            timeline: timeline.as_mut().map(|t| t as &mut dyn Write),
            progress: Some(progress),
        },
    );
    if let Some(p) = &files.log {
        log.flush().with_context(|| format!("{}", p.display()))?;
    }
    if let (Some(t), Some(p)) = (timeline.as_mut(), &files.timeline) {
        t.flush().with_context(|| format!("{}", p.display()))?;
    }
    let result = result?;
    if let Some(p) = &files.json {
        storcert_util::fs::write_durably(
            p,
            storcert_results::Artefact::from(result.clone()).to_json(),
        )
        .with_context(|| format!("{}", p.display()))?;
    }
    let analysis = match analysed_log {
        Some(log) => save_analysis(log, files.label.as_deref(), files.timeline.as_deref()),
        None => match log.reader.take() {
            Some(r) => r
                .finish()
                .analysis
                .map_err(|why| Unjudged::Log { name, why }),
            None => Err(Unjudged::Io(format!("{name} was not judged"))),
        },
    };
    Ok(Ran { result, analysis })
}
