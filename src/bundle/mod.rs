//! Results bundles as the run makes them: the bytes (pack, sign, verify,
//! unpack) are `storcert-bundle`'s and the judging reader (`contents`,
//! `summary`) is `storcert-judge`'s; what is here packs a results folder,
//! which needs both, and reads the machine's identity.

pub mod create;
pub mod system;

use std::path::Path;

use anyhow::{Context, Result};

pub use storcert_bundle::*;
pub use storcert_judge::{contents, summary};

use self::minisign::SecretKey;
use self::summary::Summary;

/// A bundle in memory: its bytes, digest and summary.
pub struct Created {
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub summary: Summary,
}

/// Packs the results folder `dir` in memory (`create_signed` writes a
/// bundle of any size to a file instead). The machine's identity is
/// `dir`'s `system.json` when the run recorded one; else the bundle names
/// no machine.
pub fn create(dir: &Path) -> Result<Created> {
    let (bytes, packed) = create::prepare(dir, None)?.write(Vec::new())?;
    Ok(Created {
        bytes,
        sha256: packed.sha256,
        summary: packed.summary,
    })
}

/// Creates, signs and durably writes a bundle and its signatures
/// (signatures first, so a bundle on disk always has them). The bundle is
/// written as it is made, never held: its files stream from the folder
/// into a temporary beside `output`, which becomes the bundle once the
/// signatures of its digests are written. `made`: the summary of the run
/// that made `dir`, from the values it holds; without it the folder is
/// judged as it is read. Returns the bundle's size, digest and summary.
pub fn create_signed(
    dir: &Path,
    made: Option<Summary>,
    output: &Path,
    key: Option<&SecretKey>,
) -> Result<create::Packed> {
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow::anyhow!("{}: not a file name", output.display()));
    let name = match key {
        Some(_) => name?,
        None => "",
    };
    let prepared = create::prepare(dir, made)?;
    crate::util::fs::write_durably_with(output, |f| {
        let mut w = std::io::BufWriter::with_capacity(256 << 10, f);
        let (_, packed) = prepared
            .write(&mut w)
            .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
        std::io::Write::flush(&mut w)?;
        if let Some(key) = key {
            let sigs = sign_prehashed(
                &packed.sha256,
                &packed.blake2b512,
                name,
                &packed.summary,
                key,
            );
            for (path, text) in [
                (minisig_path(output), &sigs.minisig),
                (envelope_path(output), &sigs.envelope),
            ] {
                crate::util::fs::write_durably(&path, text).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
                })?;
            }
        }
        Ok(packed)
    })
    .with_context(|| output.display().to_string())
}
