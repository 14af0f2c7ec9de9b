//! The filesystem pass (bonnie++'s territory): in a directory it is given
//! (it never formats anything), write, rewrite and read a large file
//! through the page cache with fsync, seek randomly in it, then create,
//! stat and delete many files in order and in random order. Rates and the
//! worst latency of each, as bonnie++'s two tables report them.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
pub use storcert_results::stream::{FsResult, Measure, FS_SCHEMA};

use storcert_util::random::Rng;

#[derive(Debug, Clone)]
pub struct FsSpec {
    pub dir: PathBuf,
    pub file_size: u64,
    pub chunk: usize,
    pub files: u32,
    pub seeks: u32,
}

struct Timer {
    start: Instant,
    worst: Duration,
}

impl Timer {
    fn new() -> Timer {
        Timer {
            start: Instant::now(),
            worst: Duration::ZERO,
        }
    }

    fn op<T>(&mut self, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let t = Instant::now();
        let r = f();
        self.worst = self.worst.max(t.elapsed());
        r
    }

    fn measure(&self, test: &str, amount: f64, unit: &str) -> Measure {
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        Measure {
            test: test.into(),
            per_sec: amount / secs,
            unit: unit.into(),
            max_latency_us: self.worst.as_micros() as u64,
            seconds: secs,
        }
    }
}

fn drop_cache(f: &File) {
    // SAFETY: advisory call on an open fd.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

pub fn run(spec: &FsSpec, stop: &AtomicBool) -> Result<FsResult> {
    if !spec.dir.is_dir() {
        bail!("--fs {}: not a directory", spec.dir.display());
    }
    if spec.chunk == 0 || spec.file_size < spec.chunk as u64 {
        bail!(
            "--fs: the file ({} bytes) must hold at least one {}-byte chunk",
            spec.file_size,
            spec.chunk
        );
    }
    let work = spec.dir.join(format!("storcert-fs-{}", std::process::id()));
    fs::create_dir(&work).with_context(|| format!("create {}", work.display()))?;
    let result = run_in(spec, &work, stop);
    let _ = fs::remove_dir_all(&work);
    result
}

fn run_in(spec: &FsSpec, work: &Path, stop: &AtomicBool) -> Result<FsResult> {
    let mut rng = Rng::from_entropy();
    let mut buf = vec![0u8; spec.chunk];
    rng.fill(&mut buf, 100);
    let path = work.join("bigfile");
    let chunks = spec.file_size / spec.chunk as u64;
    let size = chunks * spec.chunk as u64;
    let mut data = Vec::new();
    let mut interrupted = false;
    let stopped = || stop.load(Ordering::Relaxed);

    // Block write, then fsync: the data is on the device when timed.
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    let mut t = Timer::new();
    for _ in 0..chunks {
        if stopped() {
            interrupted = true;
            break;
        }
        t.op(|| f.write_all(&buf))?;
    }
    t.op(|| f.sync_all())?;
    data.push(t.measure("block write", size as f64, "B"));

    // Rewrite: read a chunk, change it, write it back in place.
    f.seek(SeekFrom::Start(0))?;
    drop_cache(&f);
    let mut t = Timer::new();
    for _ in 0..chunks {
        if interrupted || stopped() {
            interrupted = true;
            break;
        }
        t.op(|| f.read_exact(&mut buf))?;
        buf[0] = buf[0].wrapping_add(1);
        t.op(|| f.seek(SeekFrom::Current(-(spec.chunk as i64))))?;
        t.op(|| f.write_all(&buf))?;
    }
    t.op(|| f.sync_all())?;
    data.push(t.measure("rewrite", size as f64, "B"));

    // Block read, with the file's pages dropped first.
    drop_cache(&f);
    f.seek(SeekFrom::Start(0))?;
    let mut t = Timer::new();
    for _ in 0..chunks {
        if interrupted || stopped() {
            interrupted = true;
            break;
        }
        t.op(|| f.read_exact(&mut buf))?;
    }
    data.push(t.measure("block read", size as f64, "B"));

    // Random seeks: 4 KiB reads at random offsets, every tenth rewritten.
    drop_cache(&f);
    let mut small = [0u8; 4096];
    let blocks = (size / 4096).max(1);
    let mut t = Timer::new();
    for i in 0..spec.seeks {
        if interrupted || stopped() {
            interrupted = true;
            break;
        }
        let off = (rng.next_u64() % blocks) * 4096;
        t.op(|| f.read_exact_at(&mut small, off))?;
        if i % 10 == 0 {
            t.op(|| f.write_all_at(&small, off))?;
        }
    }
    data.push(t.measure("random seeks", spec.seeks as f64, "ops"));
    drop(f);
    fs::remove_file(&path)?;

    // Metadata: create, stat, delete, in order and in random order.
    let mut metadata = Vec::new();
    let names: Vec<String> = (0..spec.files).map(|i| format!("{i:010}")).collect();
    let mut shuffled = names.clone();
    for i in (1..shuffled.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        shuffled.swap(i, j);
    }
    for (order, list) in [("sequential", &names), ("random", &shuffled)] {
        let dir = work.join(order);
        fs::create_dir(&dir)?;
        for (op, verb) in [(0, "create"), (1, "stat"), (2, "delete")] {
            let mut t = Timer::new();
            for name in list.iter() {
                if interrupted || stopped() {
                    interrupted = true;
                    break;
                }
                let p = dir.join(name);
                match op {
                    0 => t.op(|| File::create(&p).map(|_| ()))?,
                    1 => t.op(|| fs::metadata(&p).map(|_| ()))?,
                    _ => t.op(|| fs::remove_file(&p))?,
                }
            }
            metadata.push(t.measure(&format!("{order} {verb}"), list.len() as f64, "ops"));
        }
        fs::remove_dir_all(&dir)?;
    }
    Ok(FsResult {
        schema_version: FS_SCHEMA,
        dir: spec.dir.display().to_string(),
        file_size: size,
        chunk: spec.chunk,
        files: spec.files,
        data,
        metadata,
        interrupted,
        ram_bytes: memory_bytes(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string()),
    })
}

/// This machine's memory (MemTotal), for the page-cache warning.
pub fn memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    storcert_util::size::mem_total_bytes(&info)
}

/// bonnie++'s two tables, in words.
pub fn render(r: &FsResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Filesystem pass in {} ({} byte file, {} byte chunks)",
        r.dir, r.file_size, r.chunk
    );
    if let Some(w) = r.page_cache_warning() {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(s, "{:<16} {:>14} {:>14}", "data", "rate", "max latency");
    for m in &r.data {
        let rate = if m.unit == "B" {
            format!(
                "{}/s",
                storcert_output::units::decimal_bytes(m.per_sec as u64)
            )
        } else {
            format!("{:.0}/s", m.per_sec)
        };
        let _ = writeln!(s, "{:<16} {:>14} {:>11} us", m.test, rate, m.max_latency_us);
    }
    let _ = writeln!(
        s,
        "\n{:<20} {:>10} {:>14}  ({} files)",
        "files", "ops/s", "max latency", r.files
    );
    for m in &r.metadata {
        let _ = writeln!(
            s,
            "{:<20} {:>10.0} {:>11} us",
            m.test, m.per_sec, m.max_latency_us
        );
    }
    if r.interrupted {
        let _ = writeln!(s, "\ninterrupted: the figures cover what was done");
    }
    // bonnie++'s CSV line last, as bonnie++ prints it (bon_csv2html reads it).
    let _ = writeln!(s, "\n{}", r.bonnie_csv());
    s
}
