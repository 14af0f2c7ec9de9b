//! Results bundles: every artefact of a run packed as a deterministic
//! `.tar.zst` with a manifest of SHA-256 digests and a verdict summary,
//! signed twice with one Ed25519 key (a minisign `.minisig` that stock
//! `minisign -V` checks, and an in-toto statement in a DSSE envelope), and
//! verified offline.
//!
//! Layout inside the archive, in this order: `manifest.json`,
//! `summary.json`, `system.json`, then the results folder under
//! `results/` in byte order of the paths. Every entry is a regular file
//! with mode 0644, owner 0:0 and mtime 0, so the same inputs give the same
//! bytes.

pub mod attest;
pub mod contents;
pub mod keys;
pub mod minisign;
pub mod summary;
pub mod system;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use self::minisign::{KeyError, PublicKey, SecretKey};
use self::summary::Summary;
use self::system::SystemIdentity;

pub const MANIFEST: &str = "manifest.json";
pub const SUMMARY: &str = "summary.json";
pub const SYSTEM: &str = "system.json";
pub const RESULTS_PREFIX: &str = "results/";
pub const MANIFEST_SCHEMA: u32 = 1;
/// zstd level: logs compress ~10:1 here and a 24 h ACT log packs in
/// seconds; higher levels buy little.
const ZSTD_LEVEL: i32 = 10;
/// The most a bundle may unpack to (a decompression bomb stops here).
pub const MAX_UNPACKED: u64 = 4 << 30;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema_version: u32,
    pub storcert_version: String,
    pub files: Vec<ManifestEntry>,
}

pub use crate::util::sha256_hex;

/// A bundle in memory: its bytes, digest and summary.
pub struct Created {
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub summary: Summary,
}

/// Regular files under `dir`, as (path relative to `dir` with `/`, bytes),
/// in byte order of the paths. A torn temporary of a durable write
/// (`*.tmp`) is left out; anything but a regular file or folder is an
/// error, so a link to a device is never read.
fn collect_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
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
                let data = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
                out.push((rel.to_string(), data));
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

/// Packs the results folder `dir`. The machine's identity is `dir`'s
/// `system.json` when the run recorded one, else the running machine's.
pub fn create(dir: &Path) -> Result<Created> {
    let files = collect_files(dir)?;
    if files.is_empty() {
        bail!("{}: no result files", dir.display());
    }
    let system = match files.iter().find(|(p, _)| p == SYSTEM) {
        Some((_, data)) => serde_json::from_slice::<SystemIdentity>(data)
            .with_context(|| format!("{}/{SYSTEM}", dir.display()))?,
        None => SystemIdentity::probe(Path::new("/")),
    };
    let by_path: BTreeMap<String, Vec<u8>> = files.iter().cloned().collect();
    let summary = summary::summarise(
        system.machine(),
        &contents::Contents::read_in(&by_path, RESULTS_PREFIX),
    );
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        (SUMMARY.into(), pretty(&summary)),
        (SYSTEM.into(), pretty(&system)),
    ];
    entries.extend(
        files
            .into_iter()
            .map(|(p, d)| (format!("{RESULTS_PREFIX}{p}"), d)),
    );
    let manifest = Manifest {
        schema_version: MANIFEST_SCHEMA,
        storcert_version: env!("CARGO_PKG_VERSION").into(),
        files: entries
            .iter()
            .map(|(path, data)| ManifestEntry {
                path: path.clone(),
                sha256: sha256_hex(data),
                size: data.len() as u64,
            })
            .collect(),
    };
    entries.insert(0, (MANIFEST.into(), pretty(&manifest)));

    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, data) in &entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        tar.append_data(&mut h, path, data.as_slice())
            .with_context(|| format!("packing {path}"))?;
    }
    let tar = tar.into_inner().context("finishing the tar")?;
    let mut enc = zstd::Encoder::new(Vec::new(), ZSTD_LEVEL).context("zstd")?;
    enc.include_checksum(true).context("zstd")?;
    std::io::Write::write_all(&mut enc, &tar).context("zstd")?;
    let bytes = enc.finish().context("zstd")?;
    Ok(Created {
        sha256: sha256_hex(&bytes),
        bytes,
        summary,
    })
}

fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(v).expect("result types serialise");
    s.push(b'\n');
    s
}

/// The two signature files of a bundle.
pub struct Signatures {
    pub minisig: String,
    pub envelope: String,
}

pub fn minisig_path(bundle: &Path) -> std::path::PathBuf {
    sibling(bundle, ".minisig")
}

pub fn envelope_path(bundle: &Path) -> std::path::PathBuf {
    sibling(bundle, ".intoto.json")
}

fn sibling(bundle: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = bundle.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    bundle.with_file_name(name)
}

/// Signs bundle bytes named `name` (the file name recorded in both
/// signatures).
pub fn sign(bytes: &[u8], name: &str, summary: &Summary, key: &SecretKey) -> Signatures {
    let now = std::time::SystemTime::now();
    let unix = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let trusted = format!("timestamp:{unix}\tfile:{name}\thashed");
    let signed_at = humantime::format_rfc3339_seconds(now).to_string();
    let statement = attest::statement(name, &sha256_hex(bytes), summary, &signed_at);
    Signatures {
        minisig: key.sign_minisig(bytes, &trusted),
        envelope: attest::seal(&statement, key),
    }
}

/// The files of an unpacked bundle, by path.
pub struct Unpacked {
    pub files: BTreeMap<String, Vec<u8>>,
    pub manifest: Manifest,
}

/// Why `unpack` refused an archive, naming the entry or manifest line at
/// fault. A decoding cause is printed in the message, not chained as a
/// `source`, so a `{:#}` chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("archive: not zstd: {0}")]
    NotZstd(std::io::Error),
    #[error("archive: zstd stream damaged: {0}")]
    ZstdDamaged(std::io::Error),
    #[error("archive: unpacks to more than {MAX_UNPACKED} bytes")]
    TooLarge,
    #[error("archive: not a tar: {0}")]
    NotTar(std::io::Error),
    #[error("archive: damaged tar entry: {0}")]
    DamagedEntry(std::io::Error),
    #[error("archive: entry name: {0}")]
    EntryName(std::io::Error),
    #[error("archive: entry name is not UTF-8")]
    EntryNameNotUtf8,
    #[error("archive: {path}: not a regular file")]
    NotRegularFile { path: String },
    #[error("archive: {path}: not a plain relative path")]
    NotPlainPath { path: String },
    #[error("archive: {path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("archive: {path} appears twice")]
    Duplicate { path: String },
    #[error("archive: {MANIFEST} is not the first entry")]
    ManifestNotFirst,
    #[error("{MANIFEST}: {0}")]
    Manifest(serde_json::Error),
    #[error("{MANIFEST}: lists {path} which is not in the archive")]
    Missing { path: String },
    #[error("{path}: does not match its manifest entry")]
    Mismatch { path: String },
    #[error("archive: {path} is not in the manifest")]
    Unlisted { path: String },
}

/// Unpacks and checks the archive: regular files with plain relative
/// paths, no duplicates, the manifest first and matching every other file
/// exactly (digest and size), nothing unlisted.
pub fn unpack(bytes: &[u8]) -> Result<Unpacked, UnpackError> {
    let dec = zstd::Decoder::new(bytes).map_err(UnpackError::NotZstd)?;
    let mut limited = dec.take(MAX_UNPACKED + 1);
    let mut tar_bytes = Vec::new();
    limited
        .read_to_end(&mut tar_bytes)
        .map_err(UnpackError::ZstdDamaged)?;
    if tar_bytes.len() as u64 > MAX_UNPACKED {
        return Err(UnpackError::TooLarge);
    }
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let mut files = BTreeMap::new();
    let mut first = None;
    for entry in archive.entries().map_err(UnpackError::NotTar)? {
        let mut entry = entry.map_err(UnpackError::DamagedEntry)?;
        let path = entry
            .path()
            .map_err(UnpackError::EntryName)?
            .to_str()
            .ok_or(UnpackError::EntryNameNotUtf8)?
            .to_string();
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(UnpackError::NotRegularFile { path });
        }
        if !Path::new(&path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(UnpackError::NotPlainPath { path });
        }
        let mut data = Vec::new();
        if let Err(err) = entry.read_to_end(&mut data) {
            return Err(UnpackError::Read { path, err });
        }
        if first.is_none() {
            first = Some(path.clone());
        }
        if files.insert(path.clone(), data).is_some() {
            return Err(UnpackError::Duplicate { path });
        }
    }
    if first.as_deref() != Some(MANIFEST) {
        return Err(UnpackError::ManifestNotFirst);
    }
    let manifest: Manifest =
        serde_json::from_slice(&files[MANIFEST]).map_err(UnpackError::Manifest)?;
    let mut listed = std::collections::BTreeSet::new();
    for f in &manifest.files {
        let Some(data) = files.get(&f.path) else {
            return Err(UnpackError::Missing {
                path: f.path.clone(),
            });
        };
        if data.len() as u64 != f.size || sha256_hex(data) != f.sha256 {
            return Err(UnpackError::Mismatch {
                path: f.path.clone(),
            });
        }
        listed.insert(f.path.as_str());
    }
    for path in files.keys() {
        if path != MANIFEST && !listed.contains(path.as_str()) {
            return Err(UnpackError::Unlisted { path: path.clone() });
        }
    }
    Ok(Unpacked { files, manifest })
}

/// What a verified bundle says and who signed it.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    pub sha256: String,
    pub key_id: String,
    /// minisign's trusted comment: "timestamp:… file:… hashed".
    pub trusted_comment: String,
    pub signed_at: String,
    pub signed_name: String,
    pub files: usize,
    pub summary: Summary,
    pub subjects: Vec<String>,
}

/// Why `verify` refused a bundle: the first check that failed.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Minisig(#[from] KeyError),
    #[error(transparent)]
    Envelope(#[from] attest::EnvelopeError),
    #[error("envelope: statement has no subject")]
    NoSubject,
    #[error("envelope: statement's subject is another bundle (digest differs)")]
    OtherBundle,
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    #[error("archive: no {SUMMARY}")]
    NoSummary,
    #[error("{SUMMARY}: {0}")]
    Summary(serde_json::Error),
    #[error("envelope: attested summary differs from the bundle's")]
    SummaryDiffers,
}

impl VerifyError {
    /// The minisign signature is by a key not among those given: the
    /// sender is unknown, rather than the bundle damaged.
    pub fn is_untrusted_key(&self) -> bool {
        matches!(self, VerifyError::Minisig(e) if e.0.contains("not trusted"))
    }
}

/// Checks a bundle against its two signatures with `keys`: the minisign
/// signature, the DSSE envelope (same key), the statement's subject digest,
/// every manifest entry, and that the attested summary is the bundle's.
/// The error names what failed.
pub fn verify(
    bytes: &[u8],
    minisig: &str,
    envelope: &str,
    keys: &[PublicKey],
) -> Result<Verified, VerifyError> {
    let (info, key) = minisign::verify_minisig(bytes, minisig, keys)?;
    let statement = attest::open(envelope, &key)?;
    let sha256 = sha256_hex(bytes);
    let Some(first) = statement.subject.first() else {
        return Err(VerifyError::NoSubject);
    };
    if first.digest.get("sha256") != Some(&sha256) {
        return Err(VerifyError::OtherBundle);
    }
    let unpacked = unpack(bytes)?;
    let summary: Summary =
        serde_json::from_slice(unpacked.files.get(SUMMARY).ok_or(VerifyError::NoSummary)?)
            .map_err(VerifyError::Summary)?;
    if summary != statement.predicate.storcert.summary {
        return Err(VerifyError::SummaryDiffers);
    }
    Ok(Verified {
        sha256,
        key_id: key.id_hex(),
        trusted_comment: info.trusted_comment,
        signed_at: statement.predicate.storcert.signed_at.clone(),
        signed_name: first.name.clone(),
        files: unpacked.files.len(),
        summary,
        subjects: statement
            .subject
            .iter()
            .skip(1)
            .map(|s| s.name.clone())
            .collect(),
    })
}

/// Creates, signs and durably writes a bundle and its signatures
/// (signatures first, so a bundle on disk always has them). Returns the
/// bundle's digest and summary.
pub fn create_signed(dir: &Path, output: &Path, key: Option<&SecretKey>) -> Result<Created> {
    let created = create(dir)?;
    if let Some(key) = key {
        let name = output
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", output.display()))?;
        let sigs = sign(&created.bytes, name, &created.summary, key);
        for (path, text) in [
            (minisig_path(output), &sigs.minisig),
            (envelope_path(output), &sigs.envelope),
        ] {
            crate::util::fs::write_durably(&path, text)
                .with_context(|| path.display().to_string())?;
        }
    }
    crate::util::fs::write_durably(output, &created.bytes)
        .with_context(|| output.display().to_string())?;
    Ok(created)
}
