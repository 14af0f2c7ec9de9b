//! How the boot image ends and what it lets a person do, decided from the
//! kernel command line before any unit starts: `storcert generator` is the
//! image's systemd generator (systemd.generator(7)). It writes
//!
//! - a drop-in for `storcert.service` with `SuccessAction=`/`FailureAction=`
//!   per `storcert.done=` (poweroff when absent; `shell` and `none` leave
//!   the machine up);
//! - a `multi-user.target` want for `storcert-shell.service` (a root shell
//!   on the console once the run has ended) for `storcert.done=shell`;
//! - a want for systemd's `debug-shell.service` (a root shell on tty9 from
//!   the start) for `storcert.debug`.
//!
//! Nothing else in the image starts a shell or a login. A generator must
//! never fail the boot: a command line it cannot read gets the default
//! (poweroff), and `storcert run` reports the error itself.
//!
//! Also what `storcert run` does differently as the image's service
//! (`in_image`): it waits for a late results partition's mount.

use std::path::Path;

use anyhow::{Context, Result};

use super::source::Cmdline;

/// The unit files the generator writes, relative to its output folder.
pub fn units(cmdline: &Cmdline) -> Vec<(String, String)> {
    let done = cmdline.done.as_deref().unwrap_or("poweroff");
    let action = match done {
        "reboot" => "reboot",
        "halt" => "halt",
        "shell" | "none" => "none",
        _ => "poweroff",
    };
    let mut files = vec![(
        "storcert.service.d/50-done.conf".to_string(),
        format!(
            "# Written by storcert generator from storcert.done={done}\n\
             [Unit]\nSuccessAction={action}\nFailureAction={action}\n"
        ),
    )];
    if done == "shell" {
        files.push((
            "multi-user.target.wants/storcert-shell.service".to_string(),
            "/usr/lib/systemd/system/storcert-shell.service".to_string(),
        ));
    }
    if cmdline.debug {
        files.push((
            "multi-user.target.wants/debug-shell.service".to_string(),
            "/usr/lib/systemd/system/debug-shell.service".to_string(),
        ));
    }
    files
}

/// Writes `units` into `dir`: drop-ins as files, wants as symlinks.
pub fn generate(cmdline_text: &str, dir: &Path) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let cmdline = Cmdline::parse(cmdline_text).unwrap_or_else(|e| {
        notes.push(format!("{e}; the image powers off at the end"));
        Cmdline::default()
    });
    for (name, body) in units(&cmdline) {
        let path = dir.join(&name);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
        if name.contains(".wants/") {
            let _ = std::fs::remove_file(&path);
            std::os::unix::fs::symlink(&body, &path).with_context(|| path.display().to_string())?;
        } else {
            std::fs::write(&path, body).with_context(|| path.display().to_string())?;
        }
    }
    Ok(notes)
}

/// Whether this is the boot image's `storcert.service` (it sets
/// STORCERT_IN_IMAGE=1).
pub fn in_image() -> bool {
    std::env::var_os("STORCERT_IN_IMAGE").is_some()
}

/// The mounted results partition. In the image, a partition labelled
/// STORCERT that udev has seen but systemd has not mounted yet (a USB stick
/// comes up late, and its mount is started from the udev event) is waited
/// for, up to 15 s: its profile.toml decides what this run does.
pub fn results_partition() -> Option<std::path::PathBuf> {
    use crate::upload::spool;
    let roots = crate::inventory::Roots::default();
    let label = spool::results_label_link(&roots);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let found = spool::results_partition(&roots);
        if found.is_some() || !in_image() || !label.exists() {
            return found;
        }
        if std::time::Instant::now() > deadline {
            eprintln!(
                "storcert run: {} is not mounted after 15 s; going on without it",
                label.display()
            );
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(cmdline: &str) -> (String, Vec<String>) {
        let c = Cmdline::parse(cmdline).unwrap();
        let u = units(&c);
        let dropin = u[0].1.clone();
        let wants = u[1..].iter().map(|(n, _)| n.clone()).collect();
        (dropin, wants)
    }

    #[test]
    fn done_sets_both_actions_and_shell_brings_a_shell() {
        let (d, w) = actions("quiet");
        assert!(
            d.contains("SuccessAction=poweroff\nFailureAction=poweroff"),
            "{d}"
        );
        assert!(w.is_empty());
        let (d, _) = actions("storcert.done=reboot");
        assert!(
            d.contains("SuccessAction=reboot\nFailureAction=reboot"),
            "{d}"
        );
        let (d, _) = actions("storcert.done=halt");
        assert!(d.contains("FailureAction=halt"), "{d}");
        let (d, w) = actions("storcert.done=shell");
        assert!(d.contains("SuccessAction=none"), "{d}");
        assert_eq!(w, ["multi-user.target.wants/storcert-shell.service"]);
        let (d, w) = actions("storcert.done=none storcert.debug");
        assert!(d.contains("FailureAction=none"), "{d}");
        assert_eq!(w, ["multi-user.target.wants/debug-shell.service"]);
    }

    #[test]
    fn a_bad_command_line_still_powers_off_and_says_why() {
        let t = tempfile::tempdir().unwrap();
        let notes = generate("storcert.nonsense=1 storcert.debug", t.path()).unwrap();
        assert!(notes[0].contains("storcert.nonsense"), "{notes:?}");
        let d = std::fs::read_to_string(t.path().join("storcert.service.d/50-done.conf")).unwrap();
        assert!(d.contains("FailureAction=poweroff"), "{d}");
        // The unreadable line grants no shell either.
        assert!(!t.path().join("multi-user.target.wants").exists());
    }

    #[test]
    fn wants_are_symlinks_and_a_second_run_replaces_them() {
        let t = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            generate("storcert.done=shell", t.path()).unwrap();
        }
        let link = t
            .path()
            .join("multi-user.target.wants/storcert-shell.service");
        assert_eq!(
            std::fs::read_link(link).unwrap(),
            Path::new("/usr/lib/systemd/system/storcert-shell.service")
        );
    }
}
