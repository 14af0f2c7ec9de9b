//! `storcert run --dry-run`: what a run of this profile would do on this
//! machine, the drives it would destroy first, with nothing written (no
//! results folder, no key, no scratch file).

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::profile::Profile;
use super::{select_targets, Options, Target};
use crate::inventory::Inventory;
use crate::output::console::Console;

pub(super) fn secs(s: u64) -> String {
    humantime::format_duration(Duration::from_secs(s)).to_string()
}

/// Whether the profile writes to the drives under test.
pub fn writes(p: &Profile) -> bool {
    !p.read_only
        && (p.provision.is_some()
            || p.act.is_some()
            || !p.plan.phases.is_empty()
            || p.plan
                .stream
                .iter()
                .any(|s| s.passes.contains(&crate::stream::Pass::Write)))
}

/// The plan as text.
pub fn dry_run(opts: &Options) -> Result<String> {
    let p = &opts.profile;
    let console = Console::new(p.plan.progress_interval, true);
    // As the run scans: named loop, md or dm devices are only in an
    // inventory that lists all.
    let inv = crate::inventory::scan(
        &crate::inventory::Roots::default(),
        &crate::inventory::ScanOptions {
            all: !p.devices.paths.is_empty(),
            ..Default::default()
        },
    );
    let mut skipped = Vec::new();
    let targets = select_targets(
        p,
        &super::results_root(opts),
        &inv,
        &console,
        &mut skipped,
        None,
    )?;
    console.close();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "dry run of profile {} ({}): nothing is written",
        p.name, opts.source
    );
    if targets.is_empty() {
        out += &no_targets(p, &inv, skipped);
        return Ok(out);
    }
    out += &targets_text(p, &targets, &inv)?;
    let _ = writeln!(out, "\nstages, in order:");
    for (i, s) in stages(p).iter().enumerate() {
        let _ = writeln!(out, "  {:>2}. {s}", i + 1);
    }
    let _ = writeln!(out);
    for line in super::estimate::text(p, &targets, &inv) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(b) = p.plan.time_budget {
        let _ = writeln!(out, "time budget: {}", secs(b.as_secs()));
    }
    Ok(out)
}

/// Why there is no drive to test, and what the run does then.
fn no_targets(p: &Profile, inv: &Inventory, skipped: Vec<String>) -> String {
    let reach = crate::inventory::reach::findings(
        inv,
        None,
        p.hardware.unwrap_or(crate::results::policy::Severity::Warn),
    );
    let hidden = crate::inventory::reach::hidden_drives(&reach);
    if hidden.is_empty() {
        return "no drive to test: the profile's devices matched none the safety gate clears\n"
            .into();
    }
    let why: Vec<String> = hidden.into_iter().chain(skipped).collect();
    format!(
        "no drive to test: {}\nthe run tests nothing, and still makes and uploads a bundle that says so\n",
        crate::util::text::printable(&why.join("; "), 1000)
    )
}

/// The drives under test, what happens to them, and which of the safety
/// gate's objections the profile overrides.
fn targets_text(p: &Profile, targets: &[Target], inv: &Inventory) -> Result<String> {
    let mut out = String::new();
    let destroys = writes(p);
    let scratch = targets.iter().all(|t| t.file_size > 0);
    let _ = writeln!(
        out,
        "\n{}:",
        match (destroys, scratch) {
            (true, false) => "DESTROYED: every byte of these drives is overwritten",
            (true, true) => "written: a scratch file storcert makes",
            (false, _) => "read only: these are read, nothing is written to them",
        }
    );
    let mut overrides =
        crate::safety::Overrides::new(&p.devices.destroy, None).map_err(|e| anyhow::anyhow!(e))?;
    overrides.own_table = true;
    for t in targets {
        let _ = writeln!(out, "  {}", describe(t, inv));
        if destroys && t.file_size == 0 {
            if let Ok(c) = crate::safety::check(
                Path::new(&t.disk),
                &crate::inventory::Roots::default(),
                &overrides,
            ) {
                let _ = writeln!(out, "    holds {}", c.holds);
                for o in &c.overridden {
                    let _ = writeln!(out, "    allowed although {o}");
                }
            }
        }
    }
    Ok(out)
}

/// The run's stages, in order, as one line each.
fn stages(p: &Profile) -> Vec<String> {
    let mut steps: Vec<String> = vec!["inventory of the machine".into()];
    if let Some(pol) = &p.policy {
        steps.push(format!(
            "policy check ({}), findings about other disks and controllers: {}",
            pol.file
                .as_ref()
                .map_or("inline".to_string(), |f| f.display().to_string()),
            match pol.machine {
                super::profile::MachineFindings::Warn => "warnings",
                super::profile::MachineFindings::Fail => "failures",
            }
        ));
    }
    let health = p.health.as_ref().is_some_and(|h| h.enabled);
    if health {
        steps.push("health snapshot of the drives under test".into());
    }
    if let Some(pr) = &p.provision {
        steps.push(format!(
            "discard each drive, then storcert's partition leaving {}% spare; later stages run on it",
            pr.spare_pct
        ));
    }
    for w in super::workload::WORKLOADS {
        steps.extend(w.steps(p));
    }
    if health {
        steps.push("health snapshot again, and what changed".into());
    }
    steps.push("report, signed bundle, spool".into());
    if let Some(u) = &p.upload {
        steps.push(format!("upload to {}", u.to.join(", ")));
    }
    steps
}

/// "/dev/sdb: SAMSUNG X, serial S1, 960.2 GB"; a scratch file by its size.
fn describe(t: &Target, inv: &crate::inventory::Inventory) -> String {
    if t.file_size > 0 {
        return format!(
            "{} (a scratch file of {}, made sparse)",
            t.path,
            crate::output::units::decimal_bytes(t.file_size)
        );
    }
    let d = inv.disks.iter().find(|d| d.dev_path == t.disk);
    format!(
        "{}: {}, serial {}, {}",
        t.disk,
        crate::util::text::printable(t.model.as_deref().unwrap_or("model unknown"), 80),
        crate::util::text::printable(t.serial.as_deref().unwrap_or("unknown"), 80),
        d.map_or("size unknown".into(), |d| {
            crate::output::units::decimal_bytes(d.capacity_bytes)
        })
    )
}
