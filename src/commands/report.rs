//! `storcert report`: a bundle's (or results folder's) report.

use std::process::ExitCode;

use anyhow::Context;

use super::exit;
use crate::bundle;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report;
use crate::util::fs::write_durably;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert report: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn run(a: ReportArgs) -> ExitCode {
    let built = if a.input.is_dir() {
        report::for_results(&a.input).map_err(|e| format!("{}: {e:#}", a.input.display()))
    } else {
        let bytes = match std::fs::read(&a.input) {
            Ok(b) => b,
            Err(e) => return fail(format!("{}: {e}", a.input.display())),
        };
        if let Some(pk) = &a.pubkey {
            let keys = match crate::bundle::keys::read_public_keys(pk) {
                Ok(k) => k,
                Err(e) => return fail(format!("--pubkey {e:#}")),
            };
            let read = |p: std::path::PathBuf| {
                crate::input::read_text(&p).with_context(|| p.display().to_string())
            };
            let checked = read(bundle::minisig_path(&a.input)).and_then(|m| {
                let env = read(bundle::envelope_path(&a.input))?;
                Ok(bundle::verify(&bytes, &m, &env, &keys)?)
            });
            if let Err(e) = checked {
                eprintln!(
                    "storcert report: {}: FAILED verification: {e:#}",
                    a.input.display()
                );
                return ExitCode::from(exit::FAIL);
            }
        }
        let name = a
            .input
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("bundle")
            .to_string();
        bundle::unpack(&bytes)
            .map_err(|e| format!("{}: {e}", a.input.display()))
            .and_then(|u| report::for_bundle(&name, &u).map_err(|e| format!("{e:#}")))
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
    match &a.output {
        Some(p) => {
            if let Err(e) = write_durably(p, &text) {
                return fail(format!("{}: {e}", p.display()));
            }
        }
        None => print!("{text}"),
    }
    ExitCode::SUCCESS
}
