//! `storcert upload`: the files given and everything pending in the
//! spool, each until the receiver confirmed its digest.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use super::exit;
use crate::cli::UploadArgs;
use crate::output::console::Console;
use crate::upload::drain::drain;
use crate::upload::{self, spool::Spool, Outcome};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert upload: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn options(a: &UploadArgs) -> anyhow::Result<upload::Options> {
    let duration =
        |flag: &str, v: &str| humantime::parse_duration(v).with_context(|| format!("{flag} {v:?}"));
    let token = match &a.token_file {
        Some(p) => Some(
            crate::input::read_text(p)
                .with_context(|| format!("--token-file {}", p.display()))?
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
        signature_urls: a.minisig_to.clone().zip(a.intoto_to.clone()),
    })
}

pub fn run(a: UploadArgs) -> ExitCode {
    let opts = match options(&a) {
        Ok(o) => o,
        Err(e) => return fail(format!("{e:#}")),
    };
    // With a spool, the given files are placed in it first (so they are
    // safe before any byte leaves), and pending ones go out oldest first.
    let spool_dir = match (&a.spool, a.no_spool) {
        (Some(d), _) => Some(d.clone()),
        (None, true) => None,
        (None, false) => crate::upload::spool::default_dir().inspect(|d| {
            eprintln!(
                "storcert upload: spooling on the results partition, {}",
                d.display()
            )
        }),
    };
    let spool = match spool_dir.as_deref().map(Spool::open).transpose() {
        Ok(s) => s,
        Err(e) => return fail(format!("--spool: {e:#}")),
    };
    // A presigned URL names one object: one bundle, sent directly (a
    // spool would send everything pending to the same three objects).
    if opts.signature_urls.is_some() && (a.files.len() != 1 || spool.is_some()) {
        return fail(
            "a presigned --to takes exactly one bundle, sent directly (--no-spool): \
             its URLs name that bundle's objects",
        );
    }
    let mut queue: Vec<PathBuf> = Vec::new();
    let mut spool_failed = false;
    match &spool {
        Some(s) => {
            // One file that cannot be spooled does not keep the others
            // (or what is already pending) from being sent.
            for f in &a.files {
                if let Err(e) = s.put(f) {
                    eprintln!("storcert upload: {e:#}");
                    spool_failed = true;
                }
            }
            match s.pending() {
                Ok(p) => queue = p,
                Err(e) => return fail(format!("--spool: {e:#}")),
            }
        }
        None => queue.extend(a.files.iter().cloned()),
    }
    // The client only after the files are safe in the spool.
    let deadline = Instant::now() + opts.deadline;
    let client_url = upload::shown_url(&opts.to);
    let client = match upload::Client::new(opts) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let mut worst = if spool_failed {
        exit::COULD_NOT_RUN
    } else {
        exit::PASS
    };
    if queue.is_empty() {
        eprintln!("storcert upload: nothing to send");
        return ExitCode::from(worst);
    }
    let console = Console::for_command();
    let to = client_url.clone();
    let done = drain(
        &queue,
        &[(to, client)],
        spool.as_ref(),
        deadline,
        &console,
        &mut |a| match &a.outcome {
            Outcome::Confirmed { sha256, status } => {
                println!(
                    "{}: delivered, sha256 {sha256} ({status})",
                    a.bundle.display()
                );
            }
            Outcome::Rejected(why) | Outcome::RefusedBundle(why) => {
                eprintln!("storcert upload: {}: refused: {why}", a.bundle.display());
                worst = worst.max(exit::FAIL);
            }
            Outcome::GaveUp(why) => {
                eprintln!(
                    "storcert upload: {}: not delivered: {why}{}",
                    a.bundle.display(),
                    if spool.is_some() {
                        " (kept in the spool)"
                    } else {
                        ""
                    }
                );
                worst = worst.max(exit::COULD_NOT_RUN);
            }
        },
    );
    console.close();
    let done = match done {
        Ok(d) => d,
        Err(e) => return fail(format!("runtime: {e}")),
    };
    for d in &done {
        if let Some(e) = &d.confirm_error {
            eprintln!("storcert upload: {}: {e}", d.bundle.display());
            worst = worst.max(exit::COULD_NOT_RUN);
        }
        if let Some(p) = &d.refused_to {
            eprintln!(
                "storcert upload: {}: set aside in {} (not sent again)",
                d.bundle.display(),
                p.display()
            );
        }
    }
    ExitCode::from(worst)
}
