//! `storcert upload`: the files given and everything pending in the
//! spool, each until the receiver confirmed its digest.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;

use super::exit;
use crate::cli::UploadArgs;
use crate::output::progress::Progress;
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
    // The client only after the files are safe in the spool.
    let deadline = Instant::now() + opts.deadline;
    let client = match upload::Client::new(opts) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    if queue.is_empty() {
        eprintln!("storcert upload: nothing to send");
        return ExitCode::SUCCESS;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("runtime: {e}")),
    };
    let mut worst = exit::PASS;
    for path in queue {
        // A bar on a terminal, a plain line every 10 s elsewhere.
        let bar: Arc<Mutex<Option<Progress>>> = Arc::new(Mutex::new(None));
        let shown = bar.clone();
        let progress: upload::ProgressFn = Arc::new(move |name, done, total| {
            let mut p = shown.lock().unwrap_or_else(|e| e.into_inner());
            p.get_or_insert_with(|| Progress::bytes(&format!("upload {name}"), total))
                .set(done);
        });
        let outcome = rt.block_on(client.upload(&path, deadline, Some(progress)));
        if let Some(p) = bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let total = std::fs::metadata(&path).map_or(0, |m| m.len());
            p.finish(if matches!(outcome, Outcome::Confirmed { .. }) {
                total
            } else {
                0
            });
        }
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
