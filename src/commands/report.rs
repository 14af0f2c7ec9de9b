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

/// A results folder, or a bundle read (and verified, given a key).
pub enum Opened {
    Results(PathBuf),
    Bundle {
        name: String,
        unpacked: bundle::Unpacked,
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
/// bundle's bytes, verified against `pubkey` first when one is given.
pub fn open(input: &Path, pubkey: Option<&Path>) -> Result<Opened, Refused> {
    let could_not = |message: String| Refused {
        message,
        status: exit::COULD_NOT_RUN,
    };
    if input.is_dir() {
        return Ok(Opened::Results(input.to_path_buf()));
    }
    let bytes = std::fs::read(input).map_err(|e| could_not(format!("{}: {e}", input.display())))?;
    if let Some(pk) = pubkey {
        let keys = crate::bundle::keys::read_public_keys(pk)
            .map_err(|e| could_not(format!("--pubkey {e:#}")))?;
        let read =
            |p: PathBuf| crate::input::read_text(&p).with_context(|| p.display().to_string());
        let checked = read(bundle::minisig_path(input)).and_then(|m| {
            let env = read(bundle::envelope_path(input))?;
            Ok(bundle::verify(&bytes, &m, &env, &keys)?)
        });
        if let Err(e) = checked {
            return Err(Refused {
                message: format!("{}: FAILED verification: {e:#}", input.display()),
                status: exit::FAIL,
            });
        }
    }
    let name = input
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("bundle")
        .to_string();
    let unpacked =
        bundle::unpack(&bytes).map_err(|e| could_not(format!("{}: {e}", input.display())))?;
    Ok(Opened::Bundle { name, unpacked })
}

pub fn run(a: ReportArgs) -> ExitCode {
    let built = match open(&a.input, a.pubkey.as_deref()) {
        Ok(Opened::Results(dir)) => {
            report::for_results(&dir).map_err(|e| format!("{}: {e:#}", dir.display()))
        }
        Ok(Opened::Bundle { name, unpacked }) => {
            report::for_bundle(&name, &unpacked).map_err(|e| format!("{e:#}"))
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
