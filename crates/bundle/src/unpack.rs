//! Reading a bundle's archive as a stream, bounded before it is read.
//!
//! A bundle is hostile until verified, and even a verified one was signed
//! with a key that sits unencrypted on every stick. So the archive is
//! never decompressed whole: zstd feeds tar, and each entry is hashed as
//! it passes and kept only if the caller asks for it. What that can cost
//! is capped before the first byte is read: the unpacked bytes (absolutely
//! and as a ratio of the compressed size, which stops a decompression
//! bomb in its first megabytes), the number of entries, zstd's window, and
//! optionally the CPU and wall time, with a flag that cancels the work
//! from outside (the collector sets it when the request ends).
//!
//! What a well-formed archive is: `manifest.json` first, then regular
//! files whose names are plain relative paths written one way only (no
//! `//`, `./`, trailing `/`), each listed once in the manifest with its
//! size and digest, each present once; then tar's end marker and nothing
//! but zeros after it. Every entry is hashed once, so the work is bounded
//! by the unpacked bytes whatever the manifest lists.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{Manifest, MANIFEST};

/// What reading one archive may cost.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The most the archive may unpack to, whatever its size.
    pub max_unpacked: u64,
    /// The most it may unpack to per compressed byte, beyond `RATIO_FLOOR`:
    /// ACT logs and JSON compress 10–50:1 here, a bomb of zeros 30,000:1.
    pub max_ratio: u64,
    /// The most entries (files) it may hold.
    pub max_entries: u64,
    /// The largest file kept in memory (a caller that keeps one file, such
    /// as the collector's report page, holds no more than this).
    pub max_kept: u64,
    pub budget: Budget,
}

/// Time limits and cancellation for one verification.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Wall-clock end.
    pub deadline: Option<Instant>,
    /// CPU time of the verifying thread.
    pub cpu: Option<Duration>,
    /// Set from outside to stop the work (the request it serves ended).
    pub cancel: Option<Arc<AtomicBool>>,
    /// The thread's CPU time when the work began (`started`): a pooled
    /// thread has spent CPU on earlier work, which is not this one's.
    cpu_base: Option<Duration>,
}

/// The unpacked size allowed whatever the ratio: a small bundle of small
/// files is never refused for compressing well.
pub const RATIO_FLOOR: u64 = 32 << 20;
/// The largest manifest or summary read into memory.
pub const MAX_META: u64 = 16 << 20;
/// The most of a bundle's summary or system identity a report or a
/// comparison holds (`bundle create` makes none larger).
pub const MAX_KEPT_META: u64 = 4 << 20;
/// zstd's window: 2^24 = 16 MiB (storcert writes level 10, a 4 MiB window);
/// a frame asking for more is refused instead of allocated.
const WINDOW_LOG_MAX: u32 = 24;

/// The default limits, which `bundle create` keeps within so that what it
/// makes every reader at its defaults takes.
pub const MAX_UNPACKED: u64 = 2 << 30;
pub const MAX_RATIO: u64 = 250;
pub const MAX_ENTRIES: u64 = 100_000;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_unpacked: MAX_UNPACKED,
            max_ratio: MAX_RATIO,
            max_entries: MAX_ENTRIES,
            max_kept: u64::MAX,
            budget: Budget::default(),
        }
    }
}

impl Limits {
    /// The unpacked bytes allowed once `compressed` bytes were read.
    pub fn allowance(&self, compressed: u64) -> u64 {
        RATIO_FLOOR
            .saturating_add(self.max_ratio.saturating_mul(compressed))
            .min(self.max_unpacked)
    }
}

/// Which limit stopped the reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    Unpacked(u64),
    Deadline,
    Cpu(Duration),
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Unpacked(n) => write!(
                f,
                "unpacks to more than {n} bytes (the limit for its compressed size; \
                 --max-unpacked / --max-ratio raise it)"
            ),
            Stop::Deadline => write!(f, "verification ran past its deadline"),
            Stop::Cpu(d) => write!(f, "verification used more than {} s of CPU", d.as_secs()),
            Stop::Cancelled => write!(f, "verification cancelled (the request ended)"),
        }
    }
}

impl Budget {
    /// This budget, counting CPU from now on this thread (unless already
    /// started: a verification's two passes share one budget).
    pub fn started(&self) -> Budget {
        let mut b = self.clone();
        if b.cpu_base.is_none() {
            b.cpu_base = Some(thread_cpu_time());
        }
        b
    }

    /// The first limit passed, if any.
    pub fn check(&self) -> Option<Stop> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Some(Stop::Cancelled);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Stop::Deadline);
        }
        if let Some(cpu) = self.cpu {
            let used = thread_cpu_time().saturating_sub(self.cpu_base.unwrap_or_default());
            if used > cpu {
                return Some(Stop::Cpu(cpu));
            }
        }
        None
    }
}

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec, a clock every Linux has.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Why an archive was refused, naming the entry or manifest line at fault.
/// A decoding cause is printed in the message, not chained as a `source`,
/// so a `{:#}` chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("archive: not zstd: {0}")]
    NotZstd(std::io::Error),
    #[error("archive: zstd stream damaged: {0}")]
    ZstdDamaged(std::io::Error),
    #[error("archive: {0}")]
    Stopped(Stop),
    #[error("archive: more than {0} entries")]
    TooManyEntries(u64),
    #[error("archive: not a tar: {0}")]
    NotTar(std::io::Error),
    #[error("archive: damaged tar entry: {0}")]
    DamagedEntry(std::io::Error),
    #[error("archive: entry name is not UTF-8")]
    EntryNameNotUtf8,
    #[error("archive: {path}: not a regular file")]
    NotRegularFile { path: String },
    #[error("archive: {path}: not a plain relative path written one way")]
    NotPlainPath { path: String },
    #[error("archive: {path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("archive: {path} appears twice")]
    Duplicate { path: String },
    #[error("archive: {MANIFEST} is not the first entry")]
    ManifestNotFirst,
    #[error("archive: {path} is larger than {limit} bytes")]
    MetaTooLarge { path: String, limit: u64 },
    #[error("{MANIFEST}: {0}")]
    Manifest(serde_json::Error),
    #[error("{MANIFEST}: lists {path} twice")]
    ListedTwice { path: String },
    #[error("{MANIFEST}: lists {path}, not a plain relative path written one way")]
    ListedNotPlain { path: String },
    #[error("{MANIFEST}: lists {path} which is not in the archive")]
    Missing { path: String },
    #[error("{path}: does not match its manifest entry")]
    Mismatch { path: String },
    #[error("archive: {path} is not in the manifest")]
    Unlisted { path: String },
    #[error("archive: data after the tar end marker")]
    TrailingData,
    #[error("archive: data after the zstd stream")]
    TrailingCompressed,
}

/// The kept files of an unpacked archive, by path, and its manifest.
pub struct Unpacked {
    pub files: BTreeMap<String, Vec<u8>>,
    pub manifest: Manifest,
}

/// A path written the one way storcert writes it: non-empty components,
/// none `.` or `..`, no leading, doubled or trailing `/`, and no control
/// character (a line break in a name would print as a line of its own). `results//x`,
/// `results/./x` and `x/` are aliases tar would unpack onto another
/// entry, so they are refused, not normalised.
pub fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(char::is_control))
}

/// Counts the bytes that pass, refusing past the allowance, the budget or
/// a cancel. What stopped it is left in `stop` (the tar reader wraps the
/// error it is given).
struct Bounded<R> {
    inner: R,
    read: u64,
    limits: Limits,
    /// Compressed bytes read so far (counted beneath the decompressor):
    /// the ratio is held at every point, so padding placed after a bomb
    /// (a skippable frame, a tail of noise) cannot pay for it.
    consumed: Rc<Cell<u64>>,
    budget: Budget,
    stop: Rc<Cell<Option<Stop>>>,
    /// The decompressor failed (the stream is damaged or not zstd).
    damaged: Rc<Cell<bool>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let allowance = self.limits.allowance(self.consumed.get());
        let stop = self
            .budget
            .check()
            .or_else(|| (self.read > allowance).then_some(Stop::Unpacked(allowance)));
        if let Some(s) = stop {
            self.stop.set(Some(s));
            return Err(std::io::Error::other(s.to_string()));
        }
        // Never more than one byte past the allowance.
        let room = allowance
            .saturating_add(1)
            .saturating_sub(self.read)
            .min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room]).inspect_err(|_| {
            self.damaged.set(true);
        })?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// The most a GNU long name may be: storcert writes one only past 100
/// bytes of path, and no path of a bundle is near this.
pub const MAX_LONG_NAME: u64 = 4096;

/// Reads the zstd `archive` within `limits`, keeping the files for which
/// `keep` says yes; every file is checked against the manifest whether
/// kept or not.
pub fn unpack<R: Read>(
    archive: R,
    limits: &Limits,
    keep: impl Fn(&str) -> bool,
) -> Result<Unpacked, UnpackError> {
    unpack_into(archive, limits, keep, &mut NoStream)
}

/// What reads an archive's files as they pass, without keeping them
/// whole (a report judges a 24-hour ACT log a line at a time).
pub trait Stream {
    /// Whether `path` is given to `read` (and not kept).
    fn wants(&self, path: &str) -> bool;
    /// Reads the file; what it leaves unread is read (and hashed) after.
    /// What it made of a file is worth nothing unless the whole archive
    /// unpacks: the file is checked against the manifest at its end.
    fn read(&mut self, path: &str, data: &mut dyn Read) -> std::io::Result<()>;
}

/// Streams nothing: every file is kept or skipped.
pub struct NoStream;

impl Stream for NoStream {
    fn wants(&self, _: &str) -> bool {
        false
    }
    fn read(&mut self, _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        Ok(())
    }
}

/// Hashes and counts what is read through it.
struct Hashing<'a, R> {
    inner: &'a mut R,
    hasher: Sha256,
    total: u64,
}

impl<R: Read> Read for Hashing<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.total += n as u64;
        Ok(n)
    }
}

/// `unpack`, giving the files `stream` wants to it as they pass.
pub fn unpack_into<R: Read>(
    archive: R,
    limits: &Limits,
    keep: impl Fn(&str) -> bool,
    stream: &mut dyn Stream,
) -> Result<Unpacked, UnpackError> {
    let consumed = Rc::new(Cell::new(0));
    let counted = Counting {
        inner: archive,
        count: consumed.clone(),
    };
    let mut dec = zstd::Decoder::new(counted).map_err(UnpackError::NotZstd)?;
    dec.window_log_max(WINDOW_LOG_MAX)
        .map_err(UnpackError::NotZstd)?;
    let stop = Rc::new(Cell::new(None));
    let damaged = Rc::new(Cell::new(false));
    let mut bounded = Bounded {
        inner: dec,
        read: 0,
        limits: limits.clone(),
        consumed,
        budget: limits.budget.started(),
        stop: stop.clone(),
        damaged: damaged.clone(),
    };
    let failure = ReadFailure { stop, damaged };
    let stopped =
        |e: std::io::Error, other: fn(std::io::Error) -> UnpackError| failure.of(e, other);
    let mut tar = tar::Archive::new(&mut bounded);
    let mut files = BTreeMap::new();
    let mut manifest: Option<Manifest> = None;
    let mut listed: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut count = 0u64;
    // Raw entries: the tar crate would read a GNU long name or a PAX
    // header whole into memory before any check of ours (a 300 MB name);
    // storcert writes only regular files and, for a path over 100 bytes, a
    // GNU long name, which is read here within a small bound.
    let mut long_name: Option<Vec<u8>> = None;
    for entry in tar
        .entries()
        .map_err(|e| stopped(e, UnpackError::NotTar))?
        .raw(true)
    {
        let mut entry = entry.map_err(|e| stopped(e, UnpackError::DamagedEntry))?;
        count += 1;
        if count > limits.max_entries {
            return Err(UnpackError::TooManyEntries(limits.max_entries));
        }
        if entry.header().entry_type() == tar::EntryType::GNULongName
            && long_name.is_none()
            && entry.size() <= MAX_LONG_NAME
        {
            let mut name = Vec::new();
            entry
                .read_to_end(&mut name)
                .map_err(|e| stopped(e, UnpackError::DamagedEntry))?;
            while name.last() == Some(&0) {
                name.pop();
            }
            long_name = Some(name);
            continue;
        }
        let raw_name = match long_name.take() {
            Some(n) => n,
            None => entry.path_bytes().into_owned(),
        };
        // Printable and bounded in every message: names are hostile too.
        let path = std::str::from_utf8(&raw_name)
            .map_err(|_| UnpackError::EntryNameNotUtf8)?
            .to_string();
        let shown = || storcert_util::text::printable(&path, 200);
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(UnpackError::NotRegularFile { path: shown() });
        }
        if !plain_path(&path) {
            return Err(UnpackError::NotPlainPath { path: shown() });
        }
        let size = entry.size();
        if manifest.is_none() {
            if path != MANIFEST {
                return Err(UnpackError::ManifestNotFirst);
            }
            let data = read_meta(&mut entry, &path, size, &failure.stop)?;
            manifest = Some(read_manifest(&data, &mut listed)?);
            if keep(MANIFEST) {
                files.insert(MANIFEST.to_string(), data);
            }
            continue;
        }
        if path == MANIFEST || !seen.insert(path.clone()) {
            return Err(UnpackError::Duplicate { path });
        }
        let Some(expected) = listed.get(&path) else {
            return Err(UnpackError::Unlisted { path });
        };
        let data = read_entry(
            &mut entry, &path, size, expected, &keep, limits, stream, &failure,
        )?;
        if let Some(data) = data {
            files.insert(path, data);
        }
    }
    let Some(manifest) = manifest else {
        return Err(UnpackError::ManifestNotFirst);
    };
    if let Some(path) = listed.keys().find(|p| !seen.contains(*p)) {
        return Err(UnpackError::Missing { path: path.clone() });
    }
    // After the end marker: only tar's zero padding, up to the end of the
    // zstd stream, and nothing after that stream.
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match bounded.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if buf[..n].iter().all(|b| *b == 0) => {}
            Ok(_) => return Err(UnpackError::TrailingData),
            Err(e) => return Err(stopped(e, UnpackError::ZstdDamaged)),
        }
    }
    let mut rest = bounded.inner.finish();
    match rest.fill_buf() {
        Ok([]) => {}
        Ok(_) => return Err(UnpackError::TrailingCompressed),
        Err(e) => return Err(UnpackError::ZstdDamaged(e)),
    }
    Ok(Unpacked { files, manifest })
}

/// What a failed read means: the budget stopped it, or zstd found its
/// stream damaged, before whatever the reader itself says.
struct ReadFailure {
    stop: Rc<Cell<Option<Stop>>>,
    damaged: Rc<Cell<bool>>,
}

impl ReadFailure {
    fn of(
        &self,
        e: std::io::Error,
        other: impl FnOnce(std::io::Error) -> UnpackError,
    ) -> UnpackError {
        match self.stop.get() {
            Some(s) => UnpackError::Stopped(s),
            None if self.damaged.get() => UnpackError::ZstdDamaged(e),
            None => other(e),
        }
    }
}

/// The manifest, and every file it lists by path: each a plain path,
/// listed once, never the manifest itself.
fn read_manifest(
    data: &[u8],
    listed: &mut BTreeMap<String, (String, u64)>,
) -> Result<Manifest, UnpackError> {
    let m: Manifest = serde_json::from_slice(data).map_err(UnpackError::Manifest)?;
    for f in &m.files {
        if !plain_path(&f.path) || f.path == MANIFEST {
            return Err(UnpackError::ListedNotPlain {
                path: f.path.clone(),
            });
        }
        if listed
            .insert(f.path.clone(), (f.sha256.clone(), f.size))
            .is_some()
        {
            return Err(UnpackError::ListedTwice {
                path: f.path.clone(),
            });
        }
    }
    Ok(m)
}

/// One listed file, read through its hash: handed to `stream` (which
/// wants it), kept (`keep`: returned), or read past. Its size is the listed one before a
/// byte is read, and its digest the listed one after.
#[allow(clippy::too_many_arguments)]
fn read_entry<E: Read>(
    entry: &mut E,
    path: &str,
    size: u64,
    (sha256, listed_size): &(String, u64),
    keep: &impl Fn(&str) -> bool,
    limits: &Limits,
    stream: &mut dyn Stream,
    failure: &ReadFailure,
) -> Result<Option<Vec<u8>>, UnpackError> {
    let path = path.to_string();
    // The size is known from the header: a lie is refused before a byte
    // of it is read.
    if *listed_size != size {
        return Err(UnpackError::Mismatch { path });
    }
    let streamed = stream.wants(&path);
    let kept = !streamed && keep(&path);
    let limit = match super::is_meta(&path) {
        true => limits.max_kept.min(MAX_META),
        false => limits.max_kept,
    };
    if kept && size > limit {
        return Err(UnpackError::MetaTooLarge { path, limit });
    }
    let mut data = Vec::new();
    if kept {
        // Reserved once from the header's size (already within the
        // allowance or the read fails), not doubled as it grows.
        data.reserve_exact(size.min(MAX_META) as usize);
    }
    let mut hashing = Hashing {
        inner: entry,
        hasher: Sha256::new(),
        total: 0,
    };
    let read = if streamed {
        stream
            .read(&path, &mut hashing)
            .and_then(|()| std::io::copy(&mut hashing, &mut std::io::sink()).map(drop))
    } else if kept {
        hashing.read_to_end(&mut data).map(drop)
    } else {
        std::io::copy(&mut hashing, &mut std::io::sink()).map(drop)
    };
    if let Err(err) = read {
        return Err(failure.of(err, |err| UnpackError::Read {
            path: path.clone(),
            err,
        }));
    }
    let Hashing { hasher, total, .. } = hashing;
    if total != size || hex::encode(hasher.finalize()) != *sha256 {
        return Err(UnpackError::Mismatch { path });
    }
    Ok(kept.then_some(data))
}

fn read_meta<R: Read>(
    entry: &mut R,
    path: &str,
    size: u64,
    stop: &Rc<Cell<Option<Stop>>>,
) -> Result<Vec<u8>, UnpackError> {
    if size > MAX_META {
        return Err(UnpackError::MetaTooLarge {
            path: path.to_string(),
            limit: MAX_META,
        });
    }
    let mut data = Vec::with_capacity(size as usize);
    entry
        .take(MAX_META + 1)
        .read_to_end(&mut data)
        .map_err(|err| match stop.get() {
            Some(s) => UnpackError::Stopped(s),
            None => UnpackError::Read {
                path: path.to_string(),
                err,
            },
        })?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar of `entries` as given (names written raw), zstd-compressed.
    pub(crate) fn archive(entries: &[(&str, &[u8])], trailing: &[u8]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.extend_from_slice(h.as_bytes());
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.extend_from_slice(&[0u8; 1024]);
        tar.extend_from_slice(trailing);
        zstd::encode_all(tar.as_slice(), 3).unwrap()
    }

    fn manifest(files: &[(&str, &[u8])]) -> Vec<u8> {
        let m = Manifest {
            schema_version: 1,
            storcert_version: "t".into(),
            files: files
                .iter()
                .map(|(p, d)| super::super::ManifestEntry {
                    path: p.to_string(),
                    sha256: storcert_util::sha256_hex(d),
                    size: d.len() as u64,
                })
                .collect(),
        };
        serde_json::to_vec(&m).unwrap()
    }

    fn open(bytes: &[u8]) -> Result<Unpacked, UnpackError> {
        unpack(bytes, &Limits::default(), |_| true)
    }

    #[test]
    fn a_well_formed_archive_unpacks() {
        let m = manifest(&[("results/x", b"x")]);
        let u = open(&archive(&[(MANIFEST, &m), ("results/x", b"x")], &[])).unwrap();
        assert_eq!(u.files["results/x"], b"x");
    }

    #[test]
    fn aliases_and_duplicates_are_refused() {
        for alias in [
            "results//x",
            "results/./x",
            "results/x/",
            "./results/x",
            // A line break in a name would print as a line of its own.
            "results/x\nVERDICT: PASS",
        ] {
            let m = manifest(&[("results/x", b"x")]);
            let a = archive(&[(MANIFEST, &m), ("results/x", b"x"), (alias, b"y")], &[]);
            assert!(
                matches!(open(&a), Err(UnpackError::NotPlainPath { .. })),
                "{alias}"
            );
        }
        let m = manifest(&[("results/x", b"x")]);
        let a = archive(
            &[(MANIFEST, &m), ("results/x", b"x"), ("results/x", b"x")],
            &[],
        );
        assert!(matches!(open(&a), Err(UnpackError::Duplicate { .. })));
        let a = archive(&[(MANIFEST, &m), (MANIFEST, &m), ("results/x", b"x")], &[]);
        assert!(matches!(open(&a), Err(UnpackError::Duplicate { .. })));
    }

    #[test]
    fn a_manifest_listing_one_file_many_times_is_refused_unread() {
        let big = vec![7u8; 1 << 20];
        let one = manifest(&[("results/big", &big)]);
        let mut m: Manifest = serde_json::from_slice(&one).unwrap();
        let entry = m.files[0].clone();
        m.files = vec![entry; 50_000];
        let m = serde_json::to_vec(&m).unwrap();
        let a = archive(&[(MANIFEST, &m), ("results/big", &big)], &[]);
        assert!(matches!(open(&a), Err(UnpackError::ListedTwice { .. })));
    }

    #[test]
    fn data_after_the_end_marker_is_refused() {
        let m = manifest(&[("results/x", b"x")]);
        let entries: &[(&str, &[u8])] = &[(MANIFEST, &m), ("results/x", b"x")];
        // Zero padding (GNU tar pads to 10 KiB) is fine.
        assert!(open(&archive(entries, &[0u8; 9216])).is_ok());
        let mut hidden = vec![0u8; 512];
        hidden.extend_from_slice(b"a hidden payload");
        assert!(matches!(
            open(&archive(entries, &hidden)),
            Err(UnpackError::TrailingData)
        ));
        // Bytes after the zstd stream.
        let mut a = archive(entries, &[]);
        a.extend_from_slice(b"junk after the frame");
        assert!(open(&a).is_err());
    }

    #[test]
    fn a_cancel_or_deadline_stops_the_reading() {
        let big = vec![7u8; 4 << 20];
        let m = manifest(&[("results/big", &big)]);
        let a = archive(&[(MANIFEST, &m), ("results/big", &big)], &[]);
        let cancel = Arc::new(AtomicBool::new(true));
        let limits = Limits {
            budget: Budget {
                cancel: Some(cancel),
                ..Budget::default()
            },
            ..Limits::default()
        };
        let e = unpack(a.as_slice(), &limits, |_| true).err().unwrap();
        assert!(matches!(e, UnpackError::Stopped(Stop::Cancelled)), "{e}");
        let limits = Limits {
            budget: Budget {
                deadline: Some(Instant::now()),
                ..Budget::default()
            },
            ..Limits::default()
        };
        let e = unpack(a.as_slice(), &limits, |_| true).err().unwrap();
        assert!(matches!(e, UnpackError::Stopped(Stop::Deadline)), "{e}");
    }

    #[test]
    fn too_many_entries_are_refused() {
        let m = manifest(&[("a", b""), ("b", b""), ("c", b"")]);
        let a = archive(&[(MANIFEST, &m), ("a", b""), ("b", b""), ("c", b"")], &[]);
        let limits = Limits {
            max_entries: 3,
            ..Limits::default()
        };
        assert!(matches!(
            unpack(a.as_slice(), &limits, |_| true),
            Err(UnpackError::TooManyEntries(3))
        ));
    }

    #[test]
    fn padding_after_a_bomb_does_not_pay_for_it() {
        // 100 MiB of zeros in one entry, then 4 MiB of a zstd skippable
        // frame: over the whole file the ratio would allow 1 GiB, but the
        // bomb is read before the padding.
        let size: u64 = 100 << 20;
        let mut enc = zstd::Encoder::new(Vec::new(), 3).unwrap();
        let m = format!(
            r#"{{"schema_version":1,"storcert_version":"t","files":[{{"path":"z","sha256":"{}","size":{size}}}]}}"#,
            "0".repeat(64)
        );
        for (path, len) in [(MANIFEST, m.len() as u64), ("z", size)] {
            let mut h = tar::Header::new_gnu();
            h.set_path(path).unwrap();
            h.set_size(len);
            h.set_cksum();
            std::io::Write::write_all(&mut enc, h.as_bytes()).unwrap();
            if path == MANIFEST {
                std::io::Write::write_all(&mut enc, m.as_bytes()).unwrap();
                std::io::Write::write_all(&mut enc, &vec![0u8; 512 - m.len() % 512]).unwrap();
            }
        }
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..100 {
            std::io::Write::write_all(&mut enc, &zeros).unwrap();
        }
        let mut a = enc.finish().unwrap();
        let pad: u32 = 4 << 20;
        a.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        a.extend_from_slice(&pad.to_le_bytes());
        a.resize(a.len() + pad as usize, 7);
        let e = open(&a).err().unwrap();
        // Refused well before the 100 MiB (zstd reads ahead up to its
        // buffer, 128 KiB, which the ratio then counts).
        assert!(
            matches!(e, UnpackError::Stopped(Stop::Unpacked(n)) if n < 70 << 20),
            "{e}"
        );
    }

    #[test]
    fn long_names_are_read_within_a_bound() {
        // storcert's own long path (a GNU long name entry) unpacks.
        let long = format!("results/{}/x.json", "d".repeat(120));
        let m = manifest(&[(long.as_str(), b"{}")]);
        let mut b = tar::Builder::new(Vec::new());
        for (p, d) in [(MANIFEST, m.as_slice()), (long.as_str(), b"{}".as_slice())] {
            let mut h = tar::Header::new_gnu();
            h.set_size(d.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, p, d).unwrap();
        }
        let a = zstd::encode_all(b.into_inner().unwrap().as_slice(), 3).unwrap();
        assert_eq!(open(&a).unwrap().files[&long], b"{}");
        // A long name of 8 KiB is not read: refused as an entry.
        let mut tar = Vec::new();
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(8192);
        h.set_cksum();
        tar.extend_from_slice(h.as_bytes());
        tar.resize(tar.len() + 8192, b'a');
        tar.extend_from_slice(&[0u8; 1024]);
        let a = zstd::encode_all(tar.as_slice(), 3).unwrap();
        assert!(matches!(open(&a), Err(UnpackError::NotRegularFile { .. })));
    }

    #[test]
    fn the_cpu_budget_counts_from_its_start() {
        // CPU spent on this thread before the work is not the work's.
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        let b = Budget {
            cpu: Some(Duration::from_millis(30)),
            ..Budget::default()
        }
        .started();
        assert_eq!(b.check(), None);
    }
}
