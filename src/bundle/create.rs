//! Packing a results folder as a stream: the files go from disk into the
//! tar as they are read, never whole in memory, however large a run's
//! logs and timelines are. Two passes over the folder: the first hashes
//! each file for the manifest and reads it for the summary (as a bundle's
//! reader would, holding no timeline); the second writes the archive,
//! hashing each file again, so a file that changed in between fails the
//! bundle instead of making one whose manifest lies.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use rustix::fs::{fstat, openat, statat, AtFlags, Dir, FileType, Mode, OFlags};

use anyhow::{bail, Context, Result};

use super::contents::{Contents, FileReader, Holding};
use super::summary::{self, Summary};
use super::system::SystemIdentity;
use super::unpack::MAX_UNPACKED;
use super::unpack::RATIO_FLOOR;
use super::unpack::{Limits, MAX_ENTRIES, MAX_KEPT_META, MAX_LONG_NAME, MAX_META, MAX_RATIO};
use super::{pretty, Manifest, ManifestEntry, MANIFEST, MANIFEST_SCHEMA, RESULTS_PREFIX};
use super::{SUMMARY, SYSTEM, ZSTD_LEVEL};

/// How much of a file is read at a time.
const CHUNK: usize = 256 << 10;

/// A results folder read once: what the archive will hold.
pub struct Prepared {
    dir: PathBuf,
    /// The folder as opened: every file is opened beneath it, one name at
    /// a time, so a folder swapped for a link since is never followed.
    root: OwnedFd,
    /// The results files, in the manifest's order after the summary and
    /// system identity.
    files: Vec<Listed>,
    manifest: Manifest,
    summary_json: Vec<u8>,
    system_json: Vec<u8>,
    pub summary: Summary,
}

/// A bundle as written: its size, digests and summary.
pub struct Packed {
    pub size: u64,
    pub sha256: String,
    /// What a minisign signature signs.
    pub blake2b512: [u8; 64],
    pub summary: Summary,
}

/// A results file: its path relative to the folder (with `/`) and the
/// file it was when first read (device and inode), which the second
/// pass must open again.
struct Listed {
    rel: String,
    id: (u64, u64),
}

/// The most results files a bundle holds: a bundle's reader takes at most
/// `MAX_ENTRIES` entries, three of them the manifest, summary and system
/// identity. A run writes tens; the bound keeps the listing's memory small.
pub const MAX_FILES: u64 = MAX_ENTRIES - 3;
/// Folders nest no deeper than this (a run's are two or three deep); each
/// level holds an open folder while its contents are read.
const MAX_DEPTH: usize = 32;

fn io_context(e: rustix::io::Errno, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::from(e)).context(what.to_string())
}

/// A folder named `name` in `parent`, never through a link.
fn open_folder(parent: BorrowedFd, name: &str) -> rustix::io::Result<OwnedFd> {
    openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Regular files under the folder `root`, in byte order of their paths.
/// Each folder is read through the one opened before it, never by path,
/// so one swapped for a link is never followed. A torn temporary of a
/// durable write (`*.tmp`) is left out; anything but a regular file or
/// folder is an error, so a link to a device is never read. What a
/// bundle's reader would refuse (too many files, names too long or not
/// UTF-8) is refused here.
fn list_files(dir: &Path, root: &OwnedFd) -> Result<Vec<Listed>> {
    fn walk(dir: &Path, at: BorrowedFd, prefix: &str, out: &mut Vec<Listed>) -> Result<()> {
        let shown = || format!("{}/{prefix}", dir.display());
        if prefix.matches('/').count() > MAX_DEPTH {
            bail!("{}: folders nest deeper than {MAX_DEPTH}", shown());
        }
        let mut names = Vec::new();
        for entry in Dir::read_from(at).map_err(|e| io_context(e, shown()))? {
            let entry = entry.map_err(|e| io_context(e, shown()))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(name) else {
                bail!(
                    "{}{}: file name is not UTF-8",
                    shown(),
                    String::from_utf8_lossy(name)
                );
            };
            if name.contains(char::is_control) {
                bail!(
                    "{}{}: a file name with control characters, which a bundle's reader refuses",
                    shown(),
                    crate::util::text::printable(name, 200)
                );
            }
            names.push(name.to_string());
        }
        names.sort();
        for name in names {
            let rel = format!("{prefix}{name}");
            let st = statat(at, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| io_context(e, format!("{}/{rel}", dir.display())))?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let sub = open_folder(at, &name)
                        .map_err(|e| io_context(e, format!("{}/{rel}", dir.display())))?;
                    walk(dir, sub.as_fd(), &format!("{rel}/"), out)?;
                }
                FileType::RegularFile if rel.ends_with(".tmp") => {
                    eprintln!("storcert bundle: leaving out {rel} (an unfinished write)");
                }
                FileType::RegularFile => {
                    // tar writes a long name with its NUL.
                    if (RESULTS_PREFIX.len() + rel.len() + 1) as u64 > MAX_LONG_NAME {
                        bail!("{}/{rel}: path longer than a bundle holds", dir.display());
                    }
                    if out.len() as u64 >= MAX_FILES {
                        bail!(
                            "{}: more than {MAX_FILES} files, more than a bundle's reader takes",
                            dir.display()
                        );
                    }
                    out.push(Listed {
                        rel,
                        id: (st.st_dev, st.st_ino),
                    });
                }
                _ => bail!("{}/{rel}: not a regular file or folder", dir.display()),
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, root.as_fd(), "", &mut out)?;
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// Opens the listed file beneath `root` a name at a time, following no
/// link and never waiting (a FIFO swapped in opens at once and is
/// refused), and checks it is the regular file that was listed.
fn open(dir: &Path, root: &OwnedFd, file: &Listed) -> Result<std::fs::File> {
    let shown = || format!("{}/{}", dir.display(), file.rel);
    let mut parts: Vec<&str> = file.rel.split('/').collect();
    let name = parts.pop().expect("split gives one part");
    let mut held: Option<OwnedFd> = None;
    for part in parts {
        let at = held.as_ref().map_or(root.as_fd(), |f| f.as_fd());
        held = Some(open_folder(at, part).map_err(|e| io_context(e, shown()))?);
    }
    let at = held.as_ref().map_or(root.as_fd(), |f| f.as_fd());
    let fd = openat(
        at,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_context(e, shown()))?;
    let st = fstat(&fd).map_err(|e| io_context(e, shown()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
        || (st.st_dev, st.st_ino) != file.id
    {
        bail!(
            "{}: replaced while it was bundled (run bundle create again once nothing writes to it)",
            shown()
        );
    }
    Ok(std::fs::File::from(fd))
}

/// The first pass: every file hashed, a chunk at a time, and read for the
/// summary unless the run that made the folder gives its own (`made`:
/// the summary of the values it holds, which judged every log as it was
/// written). The machine's identity is the folder's `system.json` when
/// the run recorded one, else an unrecorded machine's (never the machine
/// this happens to run on).
pub fn prepare(dir: &Path, made: Option<Summary>) -> Result<Prepared> {
    let root = openat(
        rustix::fs::CWD,
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_context(e, dir.display()))?;
    let files = list_files(dir, &root)?;
    if files.is_empty() {
        bail!("{}: no result files", dir.display());
    }
    // The summary judges the logs and the JSON results; it plots nothing,
    // so no timeline is held. JSON is held as before: these are this
    // machine's own results.
    let mut left = Holding {
        timelines: false,
        ..Holding::UNBOUNDED
    };
    let mut reads = BTreeMap::new();
    let mut entries = Vec::with_capacity(files.len());
    let mut recorded_system = None;
    let mut buf = vec![0u8; CHUNK];
    for file in &files {
        let (rel, path) = (&file.rel, dir.join(&file.rel));
        let mut f = open(dir, &root, file)?;
        let mut reader = made.is_none().then(|| FileReader::new(rel));
        let mut sha = <sha2::Sha256 as sha2::Digest>::new();
        let mut size = 0u64;
        let mut whole = (rel == SYSTEM).then(Vec::new);
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("{}", path.display()))?;
            if n == 0 {
                break;
            }
            sha2::Digest::update(&mut sha, &buf[..n]);
            if let Some(r) = reader.as_mut() {
                r.push(&buf[..n], &mut left);
            }
            if let Some(w) = whole.as_mut() {
                w.extend_from_slice(&buf[..n]);
            }
            size += n as u64;
        }
        if let Some(data) = whole {
            recorded_system = Some(
                serde_json::from_slice::<SystemIdentity>(&data)
                    .with_context(|| format!("{}/{SYSTEM}", dir.display()))?,
            );
        }
        if let Some(r) = reader {
            reads.insert(rel.clone(), r.finish(&mut left));
        }
        entries.push(ManifestEntry {
            path: format!("{RESULTS_PREFIX}{rel}"),
            sha256: hex::encode(sha2::Digest::finalize(sha)),
            size,
        });
    }
    let system = recorded_system.unwrap_or_else(crate::bundle::system::unrecorded);
    let summary = made.unwrap_or_else(|| {
        summary::summarise(
            system.machine(),
            &Contents::from_reads(reads, RESULTS_PREFIX),
        )
    });
    let (summary_json, system_json) = (pretty(&summary), pretty(&system));
    let mut manifest_files = vec![
        ManifestEntry {
            path: SUMMARY.into(),
            sha256: super::sha256_hex(&summary_json),
            size: summary_json.len() as u64,
        },
        ManifestEntry {
            path: SYSTEM.into(),
            sha256: super::sha256_hex(&system_json),
            size: system_json.len() as u64,
        },
    ];
    manifest_files.extend(entries);
    let manifest = Manifest {
        schema_version: MANIFEST_SCHEMA,
        storcert_version: env!("CARGO_PKG_VERSION").into(),
        files: manifest_files,
    };
    within_reader_limits(dir, &manifest, &summary_json, &system_json)?;
    Ok(Prepared {
        dir: dir.to_path_buf(),
        root,
        files,
        manifest,
        summary_json,
        system_json,
        summary,
    })
}

/// Refuses a bundle a reader at its defaults would refuse for its head: a
/// manifest, summary or system identity past `MAX_META` as written, or
/// more entries than `MAX_ENTRIES` (tar writes a path past 100 bytes as
/// two: its long name, then the file).
fn within_reader_limits(
    dir: &Path,
    manifest: &Manifest,
    summary_json: &[u8],
    system_json: &[u8],
) -> Result<()> {
    // A report keeps the summary and system identity whole, at most
    // MAX_KEPT_META of each.
    for (what, len, most) in [
        (MANIFEST, pretty(manifest).len(), MAX_META),
        (SUMMARY, summary_json.len(), MAX_KEPT_META),
        (SYSTEM, system_json.len(), MAX_KEPT_META),
    ] {
        if len as u64 > most {
            bail!(
                "{}: its {what} would be {len} bytes, more than a bundle's reader takes ({most})",
                dir.display()
            );
        }
    }
    let long_names = manifest.files.iter().filter(|f| f.path.len() > 100).count();
    let entries = (1 + manifest.files.len() + long_names) as u64;
    if entries > MAX_ENTRIES {
        bail!(
            "{}: {entries} archive entries ({long_names} of them long names), more than a \
             bundle's reader takes ({MAX_ENTRIES})",
            dir.display()
        );
    }
    Ok(())
}

/// What passes through to `inner`, hashed as a bundle's signatures need
/// it and counted.
struct Hashing<W> {
    inner: W,
    sha: sha2::Sha256,
    blake: blake2::Blake2b512,
    len: u64,
    /// `len`, for the tar's side to bound itself by.
    written: Rc<Cell<u64>>,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        sha2::Digest::update(&mut self.sha, &buf[..n]);
        blake2::Digest::update(&mut self.blake, &buf[..n]);
        self.len += n as u64;
        self.written.set(self.len);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The tar on its way into zstd, held to what a bundle's reader at its
/// default limits unpacks: `allowance` of the compressed bytes written so
/// far. The reader holds that ratio at every point of the stream; the
/// compressed bytes lag the tar here (zstd holds a block before it writes
/// it), so this is the stricter of the two and what passes here passes
/// there.
struct WithinLimits<W> {
    inner: W,
    unpacked: u64,
    compressed: Rc<Cell<u64>>,
}

impl<W: Write> Write for WithinLimits<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let allowance = Limits::default().allowance(self.compressed.get());
        if self.unpacked + buf.len() as u64 > allowance {
            return Err(std::io::Error::other(format!(
                "the bundle would unpack to more than {allowance} bytes for its compressed size, \
                 more than a bundle's reader takes at its defaults ({MAX_UNPACKED} bytes, \
                 {MAX_RATIO}:1 past the first {RATIO_FLOOR})"
            )));
        }
        let n = self.inner.write(buf)?;
        self.unpacked += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A file read into the tar: its bytes counted and hashed on the way.
struct Checked<R> {
    inner: R,
    sha: sha2::Sha256,
    len: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        sha2::Digest::update(&mut self.sha, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

fn header(size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

impl Prepared {
    /// The second pass: the archive written to `out` as it is made, in
    /// the bundle format (`super::pack` makes the same bytes from files
    /// held in memory). Returns `out` and what was written.
    pub fn write<W: Write>(self, out: W) -> Result<(W, Packed)> {
        let compressed = Rc::new(Cell::new(0));
        let out = Hashing {
            inner: out,
            sha: <sha2::Sha256 as sha2::Digest>::new(),
            blake: <blake2::Blake2b512 as blake2::Digest>::new(),
            len: 0,
            written: compressed.clone(),
        };
        let mut enc = zstd::Encoder::new(out, ZSTD_LEVEL).context("zstd")?;
        enc.include_checksum(true).context("zstd")?;
        let mut tar = tar::Builder::new(WithinLimits {
            inner: enc,
            unpacked: 0,
            compressed,
        });
        tar.mode(tar::HeaderMode::Deterministic);
        for (path, data) in [
            (MANIFEST, &pretty(&self.manifest)),
            (SUMMARY, &self.summary_json),
            (SYSTEM, &self.system_json),
        ] {
            tar.append_data(&mut header(data.len() as u64), path, data.as_slice())
                .with_context(|| format!("packing {path}"))?;
        }
        // The manifest lists the summary and the system identity first.
        for (file, entry) in self.files.iter().zip(&self.manifest.files[2..]) {
            let (rel, path) = (&file.rel, self.dir.join(&file.rel));
            let mut file = Checked {
                inner: open(&self.dir, &self.root, file)?.take(entry.size),
                sha: <sha2::Sha256 as sha2::Digest>::new(),
                len: 0,
            };
            tar.append_data(&mut header(entry.size), &entry.path, &mut file)
                .with_context(|| format!("packing {}", path.display()))?;
            if file.len != entry.size
                || hex::encode(sha2::Digest::finalize(file.sha)) != entry.sha256
            {
                bail!(
                    "{}/{rel}: changed while it was bundled (run bundle create again once nothing writes to it)",
                    self.dir.display()
                );
            }
        }
        let tar = tar.into_inner().context("finishing the tar")?;
        let out = tar.inner.finish().context("zstd")?;
        let packed = Packed {
            size: out.len,
            sha256: hex::encode(sha2::Digest::finalize(out.sha)),
            blake2b512: blake2::Digest::finalize(out.blake).into(),
            summary: self.summary,
        };
        Ok((out.inner, packed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/act/logs/storcert-us-20x.log"
    );

    fn folder() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("act/deep")).unwrap();
        std::fs::copy(LOG, d.join("act/d-20x.log")).unwrap();
        let mut tl = String::new();
        for s in 1..=5000 {
            tl += &format!(
                "{{\"t\":{s},\"reads\":1,\"writes\":1,\"large_block_reads\":0,\"large_block_writes\":0,\
                 \"read_p50_us\":1,\"read_p99_us\":2,\"read_p999_us\":3,\"read_max_us\":4,\
                 \"read_pct_over_1ms\":0,\"read_pct_over_8ms\":0,\"read_pct_over_64ms\":0,\"max_lag_ms\":0}}\n"
            );
        }
        std::fs::write(d.join("act/d-20x.timeline.jsonl"), tl).unwrap();
        std::fs::write(d.join("act/deep/x.conf"), "a = 1\n").unwrap();
        std::fs::write(
            d.join(SYSTEM),
            r#"{"schema_version":1,"dmi":{},"cpu_count":1,"storcert_version":"0"}"#,
        )
        .unwrap();
        // A long name, which tar writes with a GNU long-name entry.
        std::fs::write(d.join(format!("{}.json", "n".repeat(150))), "{}").unwrap();
        t
    }

    #[test]
    fn streamed_bytes_are_the_in_memory_format_s() {
        let t = folder();
        let created = crate::bundle::create(t.path()).unwrap();
        assert_eq!(created.sha256, crate::bundle::sha256_hex(&created.bytes));
        // The same files packed whole in memory, as bundles were made
        // before: the same bytes.
        let un = crate::bundle::unpack_bytes(&created.bytes, &Default::default()).unwrap();
        let entries: Vec<(String, Vec<u8>)> = un
            .manifest
            .files
            .iter()
            .map(|e| (e.path.clone(), un.files[&e.path].clone()))
            .collect();
        assert_eq!(entries.len(), 7);
        assert!(crate::bundle::pack(entries).unwrap() == created.bytes);
        // The summary judged the log.
        assert_eq!(created.summary.verdict, crate::results::Verdict::Pass);
    }

    #[test]
    fn a_file_changed_between_the_passes_fails_the_bundle() {
        let t = folder();
        let prepared = prepare(t.path(), None).unwrap();
        let tl = t.path().join("act/d-20x.timeline.jsonl");
        let mut data = std::fs::read(&tl).unwrap();
        data[10] ^= 1;
        std::fs::write(&tl, &data).unwrap();
        let e = prepared.write(Vec::new()).err().expect("refused");
        assert!(
            format!("{e:#}").contains("changed while it was bundled"),
            "{e:#}"
        );
        // Grown past what was hashed: the bundle holds what was, whole.
        let prepared = prepare(t.path(), None).unwrap();
        data.extend_from_slice(b"{\"t\":1}\n");
        std::fs::write(&tl, &data).unwrap();
        let (bytes, packed) = prepared.write(Vec::new()).unwrap();
        assert_eq!(packed.size, bytes.len() as u64);
        crate::bundle::unpack_bytes(&bytes, &Default::default()).unwrap();
    }

    /// What `write` gives, or a hang named as one (a FIFO opened blocking
    /// waits for a writer for ever).
    fn write_or_hang(prepared: Prepared) -> Result<(Vec<u8>, Packed)> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(prepared.write(Vec::new()));
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("bundle create hung")
    }

    #[test]
    fn a_folder_swapped_for_a_link_between_the_passes_is_not_followed() {
        let t = folder();
        // Elsewhere, the same bytes: the digests alone would not tell.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("deep")).unwrap();
        std::fs::write(elsewhere.path().join("deep/x.conf"), "a = 1\n").unwrap();
        let prepared = prepare(t.path(), None).unwrap();
        let act = t.path().join("act");
        std::fs::rename(act.join("deep"), t.path().join("deep.old")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("deep"), act.join("deep")).unwrap();
        let e = write_or_hang(prepared).err().expect("followed the link");
        assert!(format!("{e:#}").contains("act/deep/x.conf"), "{e:#}");
        // Listed, a link is refused by name as before.
        let e = prepare(t.path(), None).err().expect("listed a link");
        assert!(
            format!("{e:#}").contains("not a regular file or folder"),
            "{e:#}"
        );
    }

    #[test]
    fn a_file_swapped_for_a_fifo_or_another_file_is_refused_without_waiting() {
        let t = folder();
        let conf = t.path().join("act/deep/x.conf");
        let prepared = prepare(t.path(), None).unwrap();
        std::fs::remove_file(&conf).unwrap();
        let c = std::ffi::CString::new(conf.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = write_or_hang(prepared).err().expect("read a FIFO");
        assert!(
            format!("{e:#}").contains("replaced while it was bundled"),
            "{e:#}"
        );
        // The same bytes in a new file renamed over it: not the file read.
        std::fs::remove_file(&conf).unwrap();
        std::fs::write(&conf, "a = 1\n").unwrap();
        let prepared = prepare(t.path(), None).unwrap();
        let new = t.path().join("new");
        std::fs::write(&new, "a = 1\n").unwrap();
        std::fs::rename(&new, &conf).unwrap();
        let e = write_or_hang(prepared).err().expect("took another file");
        assert!(
            format!("{e:#}").contains("replaced while it was bundled"),
            "{e:#}"
        );
    }

    #[test]
    fn what_a_reader_at_its_defaults_refuses_is_refused_at_create() {
        // More files than a reader takes: refused while listing, before
        // any is read (the listing is what grows).
        let t = tempfile::tempdir().unwrap();
        for i in 0..=MAX_FILES {
            let dir = t.path().join(format!("{:03}", i / 1000));
            if i % 1000 == 0 {
                std::fs::create_dir(&dir).unwrap();
            }
            std::fs::File::create(dir.join(format!("{i}.txt"))).unwrap();
        }
        let e = prepare(t.path(), None)
            .err()
            .expect("listed too many files");
        assert!(format!("{e:#}").contains("more than 99997 files"), "{e:#}");
        drop(t);
        // Zeros unpack past the reader's ratio: refused, not made.
        let t = folder();
        let zeros = t.path().join("zeros.bin");
        std::fs::write(&zeros, vec![0u8; 40 << 20]).unwrap();
        let e = write_or_hang(prepare(t.path(), None).unwrap())
            .err()
            .expect("made a bundle a reader refuses");
        assert!(
            format!("{e:#}").contains("more than a bundle's reader takes"),
            "{e:#}"
        );
        // Under the reader's floor they are bundled, and read back.
        std::fs::write(&zeros, vec![0u8; 20 << 20]).unwrap();
        let (bytes, _) = write_or_hang(prepare(t.path(), None).unwrap()).unwrap();
        crate::bundle::unpack_bytes(&bytes, &Default::default()).unwrap();
    }

    #[test]
    fn names_a_reader_refuses_are_refused_at_create() {
        let t = folder();
        std::fs::write(t.path().join("act/note\nx.txt"), "x").unwrap();
        let e = prepare(t.path(), None)
            .err()
            .expect("listed a control character");
        assert!(format!("{e:#}").contains("control characters"), "{e:#}");
        std::fs::remove_file(t.path().join("act/note\nx.txt")).unwrap();
        // The longest path a reader takes is 4095 bytes with results/ (tar
        // writes the long name with its NUL): that one is bundled and read
        // back; one byte more is refused.
        let room = MAX_LONG_NAME as usize - 1 - RESULTS_PREFIX.len();
        // Made a folder at a time beneath the last: the whole path is
        // longer than the kernel takes in one call.
        let mut at = openat(
            rustix::fs::CWD,
            t.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let mut len = 0;
        while room - len > 250 {
            let part = "f".repeat(200);
            rustix::fs::mkdirat(&at, part.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            at = open_folder(at.as_fd(), &part).unwrap();
            len += 201;
        }
        let make = |name: &str| {
            let fd = openat(
                &at,
                name,
                OFlags::WRONLY | OFlags::CREATE,
                Mode::from_raw_mode(0o644),
            )
            .unwrap();
            rustix::io::write(&fd, b"x").unwrap();
        };
        let name = "g".repeat(room - len);
        make(&name);
        let (bytes, _) = write_or_hang(prepare(t.path(), None).unwrap()).unwrap();
        let un = crate::bundle::unpack_bytes(&bytes, &Default::default()).unwrap();
        assert!(un
            .manifest
            .files
            .iter()
            .any(|f| f.path.len() == room + RESULTS_PREFIX.len()));
        make(&format!("{name}h"));
        let e = prepare(t.path(), None)
            .err()
            .expect("listed a path too long");
        assert!(
            format!("{e:#}").contains("path longer than a bundle holds"),
            "{e:#}"
        );
    }

    fn manifest_of(paths: impl Iterator<Item = String>) -> Manifest {
        Manifest {
            schema_version: MANIFEST_SCHEMA,
            storcert_version: "0".into(),
            files: paths
                .map(|path| ManifestEntry {
                    path,
                    sha256: "0".repeat(64),
                    size: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn a_head_a_reader_refuses_is_refused_at_create() {
        let dir = Path::new("r");
        let fits = |m: &Manifest, system: &[u8]| within_reader_limits(dir, m, b"{}", system);
        // Entries: the manifest, each file, and a long name for each path
        // past 100 bytes.
        let short = manifest_of((0..MAX_ENTRIES - 1).map(|i| format!("results/{i}")));
        fits(&short, b"{}").unwrap();
        let one_long = manifest_of(
            (0..MAX_ENTRIES - 2)
                .map(|i| format!("results/{i}"))
                .chain([format!("results/{}", "l".repeat(100))]),
        );
        let e = fits(&one_long, b"{}").unwrap_err();
        assert!(format!("{e:#}").contains("1 of them long names"), "{e:#}");
        // The manifest as written (indented, in its wrapper), not its list.
        let path = format!("results/{}", "m".repeat(4020));
        let big = manifest_of(std::iter::repeat_n(path, 4038));
        assert!(pretty(&big.files).len() as u64 <= MAX_META);
        let e = fits(&big, b"{}").unwrap_err();
        assert!(
            format!("{e:#}").contains("its manifest.json would be"),
            "{e:#}"
        );
        // The system identity is kept whole by a report, at most 4 MiB.
        let e = fits(&short, &vec![b' '; MAX_KEPT_META as usize + 1]).unwrap_err();
        assert!(
            format!("{e:#}").contains("its system.json would be"),
            "{e:#}"
        );
    }
}
