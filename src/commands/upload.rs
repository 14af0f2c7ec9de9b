//! `storcert upload`: the files given and everything pending in the
//! spool, each until the receiver confirmed its digest.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use super::exit;
use crate::cli::UploadArgs;
use crate::upload::{self, spool::Spool, Outcome};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert upload: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn options(a: &UploadArgs) -> Result<upload::Options, String> {
    let duration = |flag: &str, v: &str| {
        humantime::parse_duration(v).map_err(|e| format!("{flag} {v:?}: {e}"))
    };
    let token = match &a.token_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("--token-file {}: {e}", p.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var("STORCERT_UPLOAD_TOKEN").ok(),
    };
    Ok(upload::Options {
        to: a.to.clone(),
        ca_file: a.ca_file.clone(),
        pins: a
            .pin_sha256
            .iter()
            .map(|p| upload::tls::parse_pin(p))
            .collect::<Result<_, _>>()?,
        token: token.filter(|t| !t.is_empty()),
        allow_http: a.allow_http,
        deadline: duration("--deadline", &a.deadline)?,
        max_backoff: duration("--max-backoff", &a.max_backoff)?,
    })
}

pub fn run(a: UploadArgs) -> ExitCode {
    let opts = match options(&a) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    let deadline = Instant::now() + opts.deadline;
    let client = match upload::Client::new(opts) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // With a spool, the given files are placed in it first (so they are
    // safe before any byte leaves), and pending ones go out oldest first.
    let spool = match a.spool.as_deref().map(Spool::open).transpose() {
        Ok(s) => s,
        Err(e) => return fail(format!("--spool: {e:#}")),
    };
    let mut queue: Vec<PathBuf> = Vec::new();
    match &spool {
        Some(s) => {
            for f in &a.files {
                if let Err(e) = s.put(f) {
                    return fail(format!("{e:#}"));
                }
            }
            match s.pending() {
                Ok(p) => queue = p,
                Err(e) => return fail(format!("--spool: {e:#}")),
            }
        }
        None => queue.extend(a.files.iter().cloned()),
    }
    if queue.is_empty() {
        eprintln!("storcert upload: nothing to send");
        return ExitCode::SUCCESS;
    }
    let progress: upload::ProgressFn = if std::io::stderr().is_terminal() {
        Arc::new(|name, done, total| {
            eprint!("\rupload {name}: {}%   ", done * 100 / total.max(1));
        })
    } else {
        Arc::new(|_, _, _| {})
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("runtime: {e}")),
    };
    let mut worst = exit::PASS;
    for path in queue {
        let outcome = rt.block_on(client.upload(&path, deadline, Some(progress.clone())));
        match outcome {
            Outcome::Confirmed { sha256, status } => {
                println!("{}: delivered, sha256 {sha256} ({status})", path.display());
                if let Some(s) = &spool {
                    if let Err(e) = s.confirm(&path) {
                        eprintln!("storcert upload: {}: {e:#}", path.display());
                        worst = exit::COULD_NOT_RUN;
                    }
                }
            }
            Outcome::Rejected(why) => {
                eprintln!("storcert upload: {}: refused: {why}", path.display());
                worst = exit::FAIL;
            }
            Outcome::GaveUp(why) => {
                eprintln!(
                    "storcert upload: {}: not delivered: {why}{}",
                    path.display(),
                    if spool.is_some() {
                        " (kept in the spool)"
                    } else {
                        ""
                    }
                );
                worst = worst.max(exit::COULD_NOT_RUN);
            }
        }
    }
    ExitCode::from(worst)
}
