//! Packing a results folder as a stream: the files go from disk into the
//! tar as they are read, never whole in memory, however large a run's
//! logs and timelines are. Two passes over the folder: the first hashes
//! each file for the manifest and reads it for the summary (as a bundle's
//! reader would, holding no timeline); the second writes the archive,
//! hashing each file again, so a file that changed in between fails the
//! bundle instead of making one whose manifest lies.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::contents::{Contents, FileReader, Holding};
use super::summary::{self, Summary};
use super::system::SystemIdentity;
use super::{pretty, Manifest, ManifestEntry, MANIFEST, MANIFEST_SCHEMA, RESULTS_PREFIX};
use super::{SUMMARY, SYSTEM, ZSTD_LEVEL};

/// How much of a file is read at a time.
const CHUNK: usize = 256 << 10;

/// A results folder read once: what the archive will hold.
pub struct Prepared {
    dir: PathBuf,
    /// The results files (path relative to the folder, where it is), in
    /// the manifest's order after the summary and system identity.
    files: Vec<(String, PathBuf)>,
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

/// Regular files under `dir`, as (path relative to `dir` with `/`, path),
/// in byte order of the paths. A torn temporary of a durable write
/// (`*.tmp`) is left out; anything but a regular file or folder is an
/// error, so a link to a device is never read.
fn list_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("{}", dir.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}", dir.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let ft = e
                .file_type()
                .with_context(|| format!("{}", path.display()))?;
            if ft.is_dir() {
                walk(root, &path, out)?;
            } else if ft.is_file() {
                let rel = path.strip_prefix(root).expect("under root");
                let Some(rel) = rel.to_str() else {
                    bail!("{}: file name is not UTF-8", path.display());
                };
                if rel.ends_with(".tmp") {
                    eprintln!("storcert bundle: leaving out {rel} (an unfinished write)");
                    continue;
                }
                out.push((rel.to_string(), path));
            } else {
                bail!("{}: not a regular file or folder", path.display());
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Opens a file listed, without following a link swapped in since.
fn open(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("{}", path.display()))
}

/// The first pass: every file hashed and read for the summary, a chunk at
/// a time. The machine's identity is the folder's `system.json` when the
/// run recorded one, else the running machine's.
pub fn prepare(dir: &Path) -> Result<Prepared> {
    let files = list_files(dir)?;
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
    for (rel, path) in &files {
        let mut f = open(path)?;
        let mut reader = FileReader::new(rel);
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
            reader.push(&buf[..n], &mut left);
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
        reads.insert(rel.clone(), reader.finish(&mut left));
        entries.push(ManifestEntry {
            path: format!("{RESULTS_PREFIX}{rel}"),
            sha256: hex::encode(sha2::Digest::finalize(sha)),
            size,
        });
    }
    let system = recorded_system.unwrap_or_else(|| SystemIdentity::probe(Path::new("/")));
    let summary = summary::summarise(
        system.machine(),
        &Contents::from_reads(reads, RESULTS_PREFIX),
    );
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
    Ok(Prepared {
        dir: dir.to_path_buf(),
        files,
        manifest: Manifest {
            schema_version: MANIFEST_SCHEMA,
            storcert_version: env!("CARGO_PKG_VERSION").into(),
            files: manifest_files,
        },
        summary_json,
        system_json,
        summary,
    })
}

/// What passes through to `inner`, hashed as a bundle's signatures need
/// it and counted.
struct Hashing<W> {
    inner: W,
    sha: sha2::Sha256,
    blake: blake2::Blake2b512,
    len: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        sha2::Digest::update(&mut self.sha, &buf[..n]);
        blake2::Digest::update(&mut self.blake, &buf[..n]);
        self.len += n as u64;
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
        let out = Hashing {
            inner: out,
            sha: <sha2::Sha256 as sha2::Digest>::new(),
            blake: <blake2::Blake2b512 as blake2::Digest>::new(),
            len: 0,
        };
        let mut enc = zstd::Encoder::new(out, ZSTD_LEVEL).context("zstd")?;
        enc.include_checksum(true).context("zstd")?;
        let mut tar = tar::Builder::new(enc);
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
        for ((rel, path), entry) in self.files.iter().zip(&self.manifest.files[2..]) {
            let mut file = Checked {
                inner: open(path)?.take(entry.size),
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
        let enc = tar.into_inner().context("finishing the tar")?;
        let out = enc.finish().context("zstd")?;
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
        let prepared = prepare(t.path()).unwrap();
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
        let prepared = prepare(t.path()).unwrap();
        data.extend_from_slice(b"{\"t\":1}\n");
        std::fs::write(&tl, &data).unwrap();
        let (bytes, packed) = prepared.write(Vec::new()).unwrap();
        assert_eq!(packed.size, bytes.len() as u64);
        crate::bundle::unpack_bytes(&bytes, &Default::default()).unwrap();
    }
}
