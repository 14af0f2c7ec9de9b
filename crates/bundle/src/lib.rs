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
pub mod keys;
pub mod minisign;
pub mod unpack;
pub mod wire;

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use self::minisign::{KeyError, PublicKey, SecretKey};
pub use self::unpack::{Limits, UnpackError, Unpacked};
use storcert_results::summary::Summary;

pub const MANIFEST: &str = "manifest.json";
pub const SUMMARY: &str = "summary.json";
pub const SYSTEM: &str = "system.json";
pub const RESULTS_PREFIX: &str = "results/";
pub const MANIFEST_SCHEMA: u32 = 1;
/// zstd level: logs compress ~10:1 here and a 24 h ACT log packs in
/// seconds; higher levels buy little.
pub const ZSTD_LEVEL: i32 = 10;

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
    #[serde(deserialize_with = "at_most_entries")]
    pub files: Vec<ManifestEntry>,
}

/// A manifest's files, refused past what an archive may hold
/// (`unpack::MAX_ENTRIES`) as they are read: 16 MiB of entries written as
/// arrays made 1.2 million entries and took every reader to 300 MiB before
/// their number was checked.
fn at_most_entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ManifestEntry>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<ManifestEntry>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of files")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut files = Vec::new();
            while let Some(f) = seq.next_element()? {
                if files.len() as u64 >= unpack::MAX_ENTRIES {
                    return Err(serde::de::Error::custom(format!(
                        "more than {} files listed",
                        unpack::MAX_ENTRIES
                    )));
                }
                files.push(f);
            }
            Ok(files)
        }
    }
    d.deserialize_seq(Entries)
}

pub use storcert_util::sha256_hex;

/// The archive of `entries` (path, bytes) in storcert's bundle format: a
/// manifest of their sizes and digests first, then the files, as one
/// deterministic tar compressed with zstd.
pub fn pack(mut entries: Vec<(String, Vec<u8>)>) -> Result<Vec<u8>> {
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
    enc.finish().context("zstd")
}

/// A manifest or summary as the bundle holds it: pretty JSON.
pub fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(v).expect("result types serialise");
    s.push(b'\n');
    s
}

/// A bundle's name as the collector takes it and the spool keeps it: a
/// plain file name ending in .tar.zst, nothing that could name a path or
/// need quoting in a header.
pub fn valid_name(name: &str) -> bool {
    name.len() <= 200
        && name.ends_with(".tar.zst")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
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
    let blake2b512 = <blake2::Blake2b512 as blake2::Digest>::digest(bytes).into();
    sign_prehashed(&sha256_hex(bytes), &blake2b512, name, summary, key)
}

/// `sign` for a bundle written as a stream, by its digests.
pub fn sign_prehashed(
    sha256: &str,
    blake2b512: &[u8; 64],
    name: &str,
    summary: &Summary,
    key: &SecretKey,
) -> Signatures {
    let now = std::time::SystemTime::now();
    let unix = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let trusted = format!("timestamp:{unix}\tfile:{name}\thashed");
    let signed_at = humantime::format_rfc3339_seconds(now).to_string();
    let statement = attest::statement(name, sha256, summary, &signed_at);
    Signatures {
        minisig: key.sign_minisig_prehashed(blake2b512, &trusted),
        envelope: attest::seal(&statement, key),
    }
}

/// The files read into memory whole whatever a caller keeps: they are
/// parsed, and bounded by `unpack::MAX_META`.
pub(crate) fn is_meta(path: &str) -> bool {
    path == SUMMARY || path == SYSTEM
}

/// Reads a bundle held in memory, within `limits`, keeping every file.
pub fn unpack_bytes(bytes: &[u8], limits: &Limits) -> Result<Unpacked, UnpackError> {
    unpack::unpack(bytes, limits, |_| true)
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
    #[error("reading the bundle: {0}")]
    Io(std::io::Error),
    #[error("archive: {0}")]
    Stopped(unpack::Stop),
    #[error(transparent)]
    Minisig(#[from] KeyError),
    #[error(transparent)]
    Envelope(#[from] attest::EnvelopeError),
    #[error("envelope: statement has no subject")]
    NoSubject,
    #[error("envelope: statement's subject is another bundle (digest differs)")]
    OtherBundle,
    #[error("signed as {signed:?} ({by}), but this bundle is named {name:?}")]
    Renamed {
        signed: String,
        by: &'static str,
        name: String,
    },
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    #[error("archive: no {SUMMARY}")]
    NoSummary,
    #[error("{SUMMARY}: {0}")]
    Summary(serde_json::Error),
    #[error("envelope: attested summary differs from the bundle's")]
    SummaryDiffers,
    #[error("the bundle changed while it was read")]
    Changed,
    #[error("envelope: the statement's {what} is not what the summary says ({detail})")]
    Inconsistent { what: &'static str, detail: String },
}

impl VerifyError {
    /// The minisign signature is by a key not among those given: the
    /// sender is unknown, rather than the bundle damaged.
    pub fn is_untrusted_key(&self) -> bool {
        matches!(self, VerifyError::Minisig(e) if e.0.contains("not trusted"))
    }

    /// Not a verdict on the bundle: reading it failed, or the work ran out
    /// of wall time or was cancelled. The same bundle may verify later.
    pub fn is_transient(&self) -> bool {
        use unpack::Stop;
        matches!(
            self,
            VerifyError::Io(_)
                | VerifyError::Stopped(Stop::Deadline | Stop::Cancelled)
                | VerifyError::Unpack(UnpackError::Stopped(Stop::Deadline | Stop::Cancelled))
        )
    }
}

/// What can be checked of a bundle's signatures before the bundle itself
/// is read: the minisig's form and trusted key, its trusted comment's
/// signature, and the DSSE envelope's signature over its statement. The
/// collector refuses an upload that fails this before a byte of its body.
/// Returns the bundle's name and SHA-256 as the statement signs them.
pub fn check_signatures(
    minisig: &str,
    envelope: &str,
    keys: &[PublicKey],
) -> Result<(String, String), VerifyError> {
    let key = minisign::signer(minisig, keys)?;
    let statement = attest::open(envelope, &key)?;
    let first = statement.subject.first().ok_or(VerifyError::NoSubject)?;
    Ok((
        first.name.clone(),
        first.digest.get("sha256").cloned().unwrap_or_default(),
    ))
}

/// The largest bundle whose legacy (not prehashed) minisign signature is
/// checked: that needs the whole file in memory.
const MAX_LEGACY_SIGNED: u64 = 16 << 20;

/// The `file:` field of minisign's trusted comment
/// ("timestamp:…\tfile:NAME\thashed").
fn trusted_file_name(comment: &str) -> Option<&str> {
    comment.split('\t').find_map(|f| f.strip_prefix("file:"))
}

/// Checks a bundle named `name` against its two signatures with `keys`:
/// the minisign signature, the DSSE envelope (same key), the statement's
/// subject digest, the name both signed, every manifest entry, that the
/// attested summary is the bundle's, and that the statement says what the
/// summary says (result, tests, subjects). Reads `bundle` twice as a
/// stream (hashing, then unpacking) within `limits`; only the manifest and
/// the summary are held in memory. The error names what failed.
pub fn verify<R: Read + Seek>(
    bundle: R,
    name: &str,
    minisig: &str,
    envelope: &str,
    keys: &[PublicKey],
    limits: &Limits,
) -> Result<Verified, VerifyError> {
    verify_keeping(
        bundle,
        name,
        minisig,
        envelope,
        keys,
        limits,
        |_| false,
        &mut unpack::NoStream,
    )
    .map(|(v, _)| v)
}

/// Pass 1 of a verification: the bundle's SHA-256 (the statement's
/// subject), its BLAKE2b-512 (what minisign signs, prehashed) and its
/// length, read within the budget.
fn digests<R: Read + Seek>(
    bundle: &mut R,
    limits: &Limits,
) -> Result<(String, [u8; 64], u64), VerifyError> {
    let mut sha = <sha2::Sha256 as sha2::Digest>::new();
    let mut blake = <blake2::Blake2b512 as blake2::Digest>::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0u64;
    bundle.seek(SeekFrom::Start(0)).map_err(VerifyError::Io)?;
    loop {
        if let Some(stop) = limits.budget.check() {
            return Err(VerifyError::Stopped(stop));
        }
        let n = bundle.read(&mut buf).map_err(VerifyError::Io)?;
        if n == 0 {
            break;
        }
        sha2::Digest::update(&mut sha, &buf[..n]);
        blake2::Digest::update(&mut blake, &buf[..n]);
        len += n as u64;
    }
    let sha256 = hex::encode(sha2::Digest::finalize(sha));
    let blake: [u8; 64] = blake2::Digest::finalize(blake).into();
    Ok((sha256, blake, len))
}

/// The name is signed twice: a renamed bundle is not the one signed.
fn signed_names(subject: &str, trusted_comment: &str, name: &str) -> Result<(), VerifyError> {
    if subject != name {
        return Err(VerifyError::Renamed {
            signed: subject.to_string(),
            by: "the statement's subject",
            name: name.to_string(),
        });
    }
    if trusted_file_name(trusted_comment) != Some(name) {
        return Err(VerifyError::Renamed {
            signed: trusted_file_name(trusted_comment).unwrap_or("").to_string(),
            by: "minisign's trusted comment",
            name: name.to_string(),
        });
    }
    Ok(())
}

/// The signed statement against the statement this summary makes: its
/// result, subjects, test lists and configuration must be the summary's.
fn statement_agrees(
    statement: &attest::Statement,
    summary: &Summary,
    name: &str,
    sha256: &str,
) -> Result<(), VerifyError> {
    // What the statement says for verifiers that never open the summary
    // (the in-toto checker reads result and subjects only) must be what
    // the summary says.
    let expected = attest::statement(
        name,
        sha256,
        summary,
        &statement.predicate.storcert.signed_at,
    );
    let inconsistent =
        |what: &'static str, detail: String| Err(VerifyError::Inconsistent { what, detail });
    if statement.predicate.result != expected.predicate.result {
        return inconsistent(
            "result",
            format!(
                "{} where the summary's verdict is {}",
                statement.predicate.result, summary.verdict
            ),
        );
    }
    let names = |s: &[attest::Subject]| -> BTreeSet<String> {
        s.iter().skip(1).map(|s| s.name.clone()).collect()
    };
    let (signed_ids, own_ids) = (names(&statement.subject), names(&expected.subject));
    if let Some(stranger) = signed_ids.difference(&own_ids).next() {
        return inconsistent(
            "subject",
            format!("{stranger} is not a machine or drive of this bundle"),
        );
    }
    if statement.subject != expected.subject {
        return inconsistent(
            "subject",
            "the bundle's machine and drives are listed otherwise".into(),
        );
    }
    let signed = attest::TestLists::signed(statement);
    let own = attest::TestLists::signed(&expected);
    if signed != own && signed != attest::TestLists::before_warned(summary) {
        for (what, signed, own) in [
            ("passedTests", &signed.passed, &own.passed),
            ("failedTests", &signed.failed, &own.failed),
            ("warnedTests", &signed.warned, &own.warned),
        ] {
            if signed != own {
                return inconsistent(
                    what,
                    format!("{} listed, {} in the summary", signed.len(), own.len()),
                );
            }
        }
    }
    if statement.predicate.configuration != expected.predicate.configuration {
        return inconsistent("configuration", "its files or digests differ".into());
    }
    Ok(())
}

/// `verify`, also keeping the files `keep` asks for from its unpacking
/// pass and giving `stream` the files it wants as they pass: what a
/// caller renders is what was verified, read once more by no one.
#[allow(clippy::too_many_arguments)]
pub fn verify_keeping<R: Read + Seek>(
    mut bundle: R,
    name: &str,
    minisig: &str,
    envelope: &str,
    keys: &[PublicKey],
    limits: &Limits,
    keep: impl Fn(&str) -> bool,
    stream: &mut dyn unpack::Stream,
) -> Result<(Verified, Unpacked), VerifyError> {
    // Both passes share one budget, its CPU counted from here.
    let limits = &Limits {
        budget: limits.budget.started(),
        ..limits.clone()
    };
    // Pass 1: the digests minisign and the statement sign.
    let (sha256, blake, len) = digests(&mut bundle, limits)?;
    let (info, key) = minisign::verify_minisig_prehashed(&blake, minisig, keys, || {
        if len > MAX_LEGACY_SIGNED {
            return Err(KeyError(format!(
                "signature: a legacy (not prehashed) signature on a bundle over {MAX_LEGACY_SIGNED} bytes is refused"
            )));
        }
        let mut all = Vec::with_capacity(len as usize);
        bundle
            .seek(SeekFrom::Start(0))
            .and_then(|_| bundle.by_ref().take(len).read_to_end(&mut all))
            .map_err(|e| KeyError(format!("reading the bundle: {e}")))?;
        Ok(all)
    })?;
    let statement = attest::open(envelope, &key)?;
    let Some(first) = statement.subject.first() else {
        return Err(VerifyError::NoSubject);
    };
    if first.digest.get("sha256") != Some(&sha256) {
        return Err(VerifyError::OtherBundle);
    }
    signed_names(&first.name, &info.trusted_comment, name)?;
    // Pass 2: every entry against the manifest, hashed again: the bytes
    // unpacked must be the bytes signed (a file changed in between fails).
    bundle.seek(SeekFrom::Start(0)).map_err(VerifyError::Io)?;
    let mut second = storcert_util::HashingReader::new(bundle.take(len));
    let unpacked = unpack::unpack_into(&mut second, limits, |p| p == SUMMARY || keep(p), stream)?;
    // What follows the zstd stream (nothing, once it unpacked) counts too.
    std::io::copy(&mut second, &mut std::io::sink()).map_err(VerifyError::Io)?;
    if second.sha256_hex() != sha256 {
        return Err(VerifyError::Changed);
    }
    let summary = Summary::from_json(unpacked.files.get(SUMMARY).ok_or(VerifyError::NoSummary)?)
        .map_err(VerifyError::Summary)?;
    if summary != statement.predicate.storcert.summary {
        return Err(VerifyError::SummaryDiffers);
    }
    statement_agrees(&statement, &summary, name, &sha256)?;
    let verified = Verified {
        sha256,
        key_id: key.id_hex(),
        trusted_comment: info.trusted_comment,
        signed_at: statement.predicate.storcert.signed_at.clone(),
        signed_name: first.name.clone(),
        files: unpacked.manifest.files.len() + 1,
        summary,
        subjects: statement
            .subject
            .iter()
            .skip(1)
            .map(|s| s.name.clone())
            .collect(),
    };
    Ok((verified, unpacked))
}
