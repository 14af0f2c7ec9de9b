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
//! (`in_image`): it waits for a late results partition's mount, and for a
//! boot medium (a USB stick) that the kernel has not found yet.

use std::path::Path;
use std::time::{Duration, Instant};

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

/// How long the image looks for its results partition before going on
/// without it.
const PARTITION_WAIT: Duration = Duration::from_secs(30);
/// How long after the boot partition appears its sibling partitions' udev
/// links may still be on their way (the kernel adds a disk's partitions
/// together; udev handles them in parallel).
const SIBLING_GRACE: Duration = Duration::from_secs(3);

/// One look at the devices while the image waits for its results partition.
#[derive(Debug, Clone, Copy)]
struct PartitionLook {
    /// The partition labelled STORCERT is mounted.
    mounted: bool,
    /// udev has seen a filesystem labelled STORCERT (its mount follows).
    labelled: bool,
    /// The partition the EFI loader booted from has appeared (None: the
    /// loader did not say, as in a PXE or direct kernel boot).
    boot_partition: Option<bool>,
}

#[derive(Debug, PartialEq)]
enum PartitionStep {
    /// Stop looking: the partition is mounted, or there is none to wait for.
    Stop,
    Wait,
    /// Stop looking, and say why: the limit passed with something pending.
    GiveUp(&'static str),
}

/// What to do after `look`, `waited` into the wait, the boot partition
/// having been present for `boot_present_for` (if it is).
fn partition_step(
    look: PartitionLook,
    waited: Duration,
    boot_present_for: Option<Duration>,
) -> PartitionStep {
    if look.mounted {
        return PartitionStep::Stop;
    }
    // A USB stick comes up late: usb-storage waits before it scans a new
    // device, and udev may have settled in between, so the medium the
    // machine booted from may not exist yet when the run starts.
    let pending = if look.labelled {
        Some("the partition labelled STORCERT is not mounted")
    } else if look.boot_partition == Some(false) {
        Some("the partition the EFI loader booted from has not appeared")
    } else if boot_present_for.is_some_and(|d| d < SIBLING_GRACE) {
        Some("the boot disk's partitions are still being read")
    } else {
        None
    };
    match pending {
        None => PartitionStep::Stop,
        Some(why) if waited >= PARTITION_WAIT => PartitionStep::GiveUp(why),
        Some(_) => PartitionStep::Wait,
    }
}

/// The mounted results partition. In the image, it is waited for (up to
/// 30 s) while udev has seen it but systemd has not mounted it yet (its
/// mount is started from the udev event), and while the medium the EFI
/// loader booted from (a USB stick) has not appeared: its profile.toml
/// decides what this run does.
pub fn results_partition() -> Option<std::path::PathBuf> {
    use crate::upload::spool;
    let roots = crate::inventory::Roots::default();
    if !in_image() {
        return spool::results_partition(&roots);
    }
    let label = spool::results_label_link(&roots);
    let boot_link = crate::inventory::read_loader_part_uuid(&roots)
        .map(|uuid| roots.dev.join("disk/by-partuuid").join(uuid));
    let started = Instant::now();
    let mut boot_since: Option<Instant> = None;
    loop {
        let found = spool::results_partition(&roots);
        let boot_present = boot_link.as_ref().map(|l| l.exists());
        if boot_present == Some(true) {
            boot_since.get_or_insert_with(Instant::now);
        }
        let look = PartitionLook {
            mounted: found.is_some(),
            labelled: label.exists(),
            boot_partition: boot_present,
        };
        match partition_step(look, started.elapsed(), boot_since.map(|t| t.elapsed())) {
            PartitionStep::Stop => return found,
            PartitionStep::Wait => std::thread::sleep(Duration::from_millis(200)),
            PartitionStep::GiveUp(why) => {
                eprintln!(
                    "storcert run: {why} after {} s; going on without a results partition",
                    PARTITION_WAIT.as_secs()
                );
                return None;
            }
        }
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
    fn the_results_partition_is_waited_for_only_while_something_is_pending() {
        use PartitionStep::*;
        let s = Duration::from_secs;
        let look = |mounted, labelled, boot_partition| PartitionLook {
            mounted,
            labelled,
            boot_partition,
        };
        // Mounted: done, whatever else holds.
        assert_eq!(
            partition_step(look(true, true, Some(false)), s(99), None),
            Stop
        );
        // PXE or direct kernel boot, no label: nothing to wait for.
        assert_eq!(partition_step(look(false, false, None), s(0), None), Stop);
        // Labelled but not mounted: wait, until the limit.
        assert_eq!(partition_step(look(false, true, None), s(29), None), Wait);
        let gave_up = partition_step(look(false, true, None), s(30), None);
        assert!(
            matches!(gave_up, GiveUp(w) if w.contains("not mounted")),
            "{gave_up:?}"
        );
        // Booted from a stick the kernel has not found yet: wait for it.
        assert_eq!(
            partition_step(look(false, false, Some(false)), s(20), None),
            Wait
        );
        let gave_up = partition_step(look(false, false, Some(false)), s(30), None);
        assert!(
            matches!(gave_up, GiveUp(w) if w.contains("EFI loader")),
            "{gave_up:?}"
        );
        // The stick has appeared: its siblings get a moment for their links...
        let present = |d| partition_step(look(false, false, Some(true)), s(10), Some(d));
        assert_eq!(present(Duration::from_millis(2900)), Wait);
        // ...and a stick without a STORCERT partition is then given up quietly.
        assert_eq!(present(s(3)), Stop);
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
