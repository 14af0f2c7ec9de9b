//! One function per subcommand: reads its arguments, calls the stage, and
//! prints through `output`. Each returns the process exit status.

pub mod act;
pub mod bundle;
pub mod check;
pub mod collect;
pub mod docs;
pub mod health;
pub mod inventory;
pub mod provision;
pub mod report;
pub mod run;
pub mod stream;
pub mod upload;

use std::io::Write;
use std::path::{Path, PathBuf};
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

/// Writes a result file whole or not at all: a temporary beside it,
/// fsync, rename into place, then fsync of the folder, so a crash or power
/// loss leaves the old file or the new one, never a torn one.
/// A path that exists and is not a regular file (/dev/stdout, a pipe) is
/// written directly, as there is nothing to replace.
pub fn write_durably(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_durably_mode(path, data.as_ref(), 0o644)
}

/// `write_durably` for secrets: the file is 0600 from its creation on.
pub fn write_secret(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_durably_mode(path, data.as_ref(), 0o600)
}

fn write_durably_mode(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, data);
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    // vfat writes a renamed file's new directory entry with size 0 and no
    // first cluster until the file itself is written back: without this
    // second fsync a power cut leaves an empty file under the final name
    // (found by the lab's power-cut test on a STORCERT stick).
    std::fs::File::open(path)?.sync_all()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Creates `dir` and any missing parents so that they survive a power
/// cut: each new folder's parent is fsynced after the folder is made (a
/// fresh folder on vfat is otherwise lost with everything written in it).
pub fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    create_dir_durably(parent)?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    std::fs::File::open(dir)?.sync_all()?;
    std::fs::File::open(parent)?.sync_all()
}

/// A result as pretty JSON through `write_durably`.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    write_durably(path, &(text + "\n"))
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
/// `Err` carries the exit status the command returns at once.
pub fn gate(cmd: &str, action: &str, targets: &[PathBuf], s: &SafetyArgs) -> Result<(), ExitCode> {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_durably_replaces_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_durably(&path, "old\n").unwrap();
        write_json(&path, &serde_json::json!({"load": 3})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"load\": 3\n}\n"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["result.json"]);
        // Not a regular file: written in place, no temporary in /dev.
        write_durably(Path::new("/dev/null"), "x").unwrap();
        assert!(!Path::new("/dev/null.tmp").exists());
        // A folder that does not exist: an error, not a panic.
        assert!(write_durably(&dir.path().join("missing/r.json"), "x").is_err());
        // Folders made durably, parents included; existing ones are fine.
        let deep = dir.path().join("a/b/c");
        create_dir_durably(&deep).unwrap();
        create_dir_durably(&deep).unwrap();
        assert!(deep.is_dir());
    }
}
