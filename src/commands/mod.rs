//! One function per subcommand: reads its arguments, calls the stage, and
//! prints through `output`. Each returns the process exit status.

pub mod act;
mod alike;
pub mod bundle;
pub mod check;
#[cfg(feature = "collector")]
pub mod collect;
pub mod compare;
pub mod docs;
pub mod health;
pub mod inventory;
pub mod provision;
pub mod report;
pub mod run;
pub mod stream;
pub mod upload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cli::SafetyArgs;
use crate::safety::{self, Overrides};

/// Exit statuses that fleet tools act on (documented in the README).
pub mod exit {
    pub const PASS: u8 = 0;
    pub const FAIL: u8 = 1;
    pub const COULD_NOT_RUN: u8 = 2;
    pub const INTERRUPTED: u8 = 3;

    use crate::results::Verdict;

    /// The status of a verdict: the one place that maps the two.
    pub fn of(v: Verdict) -> u8 {
        match v {
            Verdict::Pass => PASS,
            Verdict::Fail => FAIL,
            Verdict::Interrupted => INTERRUPTED,
            Verdict::Untested | Verdict::Incomplete | Verdict::CouldNotRun => COULD_NOT_RUN,
        }
    }
}

/// `storcert … | head` ends quietly, as other Unix tools do, instead of
/// a panic in `println!` once the reader has gone. Not for the network
/// commands, which must see EPIPE on a socket as an error to retry.
pub fn die_quietly_on_closed_pipe() {
    // SAFETY: resetting a signal to its default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// SIGINT and SIGTERM end a run cleanly (the caller checks the flag), so
/// logs and results stay whole.
pub fn stop_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// Writes a command's output durably to `output`, or prints it.
pub fn emit(cmd: &str, output: Option<&std::path::Path>, text: &str) -> ExitCode {
    // Standard output by name is written to, not replaced: a durable write
    // would rename a file over /dev/stdout (a link), as root.
    let output = output
        .filter(|p| *p != std::path::Path::new("-") && *p != std::path::Path::new("/dev/stdout"));
    match output {
        Some(p) => match crate::util::fs::write_durably(p, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("storcert {cmd}: {}: {e}", p.display());
                ExitCode::from(exit::COULD_NOT_RUN)
            }
        },
        None => {
            print!("{text}");
            ExitCode::SUCCESS
        }
    }
}

/// Later stages run on the partition of a device storcert provisioned:
/// a whole disk given to a workload is replaced by it, and said so.
pub fn on_provisioned(cmd: &str, targets: &[String]) -> Vec<String> {
    targets
        .iter()
        .map(
            |t| match crate::provision::provisioned_partition(std::path::Path::new(t)) {
                Some(p) => {
                    eprintln!(
                        "storcert {cmd}: {t} is provisioned; using its partition {}",
                        p.display()
                    );
                    p.display().to_string()
                }
                None => t.clone(),
            },
        )
        .collect()
}

/// The safety gate for a command about to write: every target cleared or
/// a one-line refusal, the plan printed, and a dry run stopped here.
/// `Ok` carries the gate's word for each target, which every writer
/// takes; `Err` the exit status the command returns at once.
pub fn gate(
    cmd: &str,
    action: &str,
    targets: &[PathBuf],
    s: &SafetyArgs,
) -> Result<Vec<safety::Cleared>, ExitCode> {
    let refuse = |msg: String| {
        eprintln!("storcert {cmd}: {msg}");
        ExitCode::from(exit::COULD_NOT_RUN)
    };
    let overrides = Overrides::new(&s.force_destroy, s.destroy_policy.as_deref())
        .map_err(|e| refuse(format!("--destroy-policy: {e}")))?;
    let cleared = safety::check_all(targets, &overrides).map_err(|e| refuse(e.to_string()))?;
    eprint!("{}", safety::plan(action, &cleared));
    if s.dry_run {
        eprintln!("dry run: nothing written");
        return Err(ExitCode::SUCCESS);
    }
    Ok(cleared)
}
