//! `storcert report`: a bundle's (or results folder's) report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::exit;
use crate::bundle;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert report: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

/// The most of a bundle's summary or system identity held in memory.
const KEPT: u64 = crate::bundle::unpack::MAX_KEPT_META;

/// A results folder, or a bundle read (and verified, given a key).
pub enum Opened {
    Results(PathBuf),
    Bundle {
        name: String,
        summary: Box<crate::results::summary::Summary>,
        /// Its results, read as they passed (never held whole).
        contents: Box<crate::bundle::contents::Contents>,
        /// The key that signed it, when verified; `None`: not verified.
        verified_by: Option<String>,
    },
}

/// Why an input could not be opened: the message and the exit status
/// (a bundle that fails verification is a FAIL, anything else could not
/// run).
pub struct Refused {
    pub message: String,
    pub status: u8,
}

/// Opens `input` for a report or a comparison: a folder as it is; a
/// bundle read as a stream within `limits`, verified against `pubkey`
/// first when one is given, its results held as far as `holding` allows.
pub fn open(
    input: &Path,
    pubkey: Option<&Path>,
    limits: &crate::cli::UnpackLimitArgs,
    holding: bundle::contents::Holding,
) -> Result<Opened, Refused> {
    let could_not = |message: String| Refused {
        message,
        status: exit::COULD_NOT_RUN,
    };
    if input.is_dir() {
        return Ok(Opened::Results(input.to_path_buf()));
    }
    let limits = bundle::unpack::Limits {
        // Only the summary and the system identity are held whole (small
        // in any bundle storcert writes); the results are read in passing.
        max_kept: KEPT,
        ..limits.limits().map_err(could_not)?
    };
    let mut results = bundle::contents::ResultsReader::new(holding);
    let kept = |p: &str| p == bundle::SUMMARY || p == bundle::SYSTEM;
    let name = input
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("bundle")
        .to_string();
    // One open file for the check and the reading (verify hashes both of
    // its passes: a file changed in between is refused, not rendered).
    let file =
        std::fs::File::open(input).map_err(|e| could_not(format!("{}: {e}", input.display())))?;
    let (unpacked, verified_by) = match pubkey {
        // Verified and unpacked in one: what is rendered is what verified.
        Some(pk) => {
            let keys = crate::bundle::keys::read_public_keys(pk)
                .map_err(|e| could_not(format!("--pubkey {e:#}")))?;
            let read =
                |p: PathBuf| crate::input::read_text(&p).with_context(|| p.display().to_string());
            let checked = read(bundle::minisig_path(input)).and_then(|m| {
                let env = read(bundle::envelope_path(input))?;
                Ok(bundle::verify_keeping(
                    &file,
                    &name,
                    &m,
                    &env,
                    &keys,
                    &limits,
                    kept,
                    &mut results,
                )?)
            });
            match checked {
                Ok((v, unpacked)) => (unpacked, Some(v.key_id)),
                Err(e) => {
                    return Err(Refused {
                        message: format!("{}: FAILED verification: {e:#}", input.display()),
                        status: exit::FAIL,
                    })
                }
            }
        }
        None => (
            bundle::unpack::unpack_into(
                std::io::BufReader::new(&file),
                &limits,
                kept,
                &mut results,
            )
            .map_err(|e| could_not(format!("{}: {e}", input.display())))?,
            None,
        ),
    };
    let summary = unpacked
        .files
        .get(bundle::SUMMARY)
        .ok_or_else(|| {
            could_not(format!(
                "{}: the bundle has no summary.json",
                input.display()
            ))
        })
        .and_then(|d| {
            crate::results::summary::Summary::from_json(d)
                .map(Box::new)
                .map_err(|e| could_not(format!("{}: summary.json: {e}", input.display())))
        })?;
    let contents = Box::new(crate::bundle::contents::Contents::of_bundle(
        &unpacked, results,
    ));
    Ok(Opened::Bundle {
        name,
        summary,
        contents,
        verified_by,
    })
}

pub fn run(a: ReportArgs) -> ExitCode {
    let holding = bundle::contents::Holding::BUNDLE;
    let built = match open(&a.input, a.pubkey.as_deref(), &a.limits, holding) {
        Ok(Opened::Results(dir)) => {
            report::for_results(&dir).map_err(|e| format!("{}: {e:#}", dir.display()))
        }
        Ok(Opened::Bundle {
            name,
            summary,
            contents,
            verified_by,
        }) => {
            if verified_by.is_none() {
                eprintln!(
                    "storcert report: {}: NOT VERIFIED (no --pubkey): anyone could have made this bundle",
                    crate::util::text::printable(&a.input.display().to_string(), 300)
                );
            }
            Ok(report::for_bundle(&name, *summary, &contents, verified_by))
        }
        Err(r) => {
            eprintln!(
                "storcert report: {}",
                crate::util::text::printable(&r.message, 1000)
            );
            return ExitCode::from(r.status);
        }
    };
    let r = match built {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let text = match a.format {
        ReportFormat::Html => report::html::render(&r),
        ReportFormat::Md => report::text::markdown(&r),
        ReportFormat::Txt => report::text::plain(&r),
    };
    super::emit("report", a.output.as_deref(), &text)
}
