//! `storcert health`: snapshots and their diff.

use std::process::ExitCode;

use anyhow::{bail, Context};

use super::exit;
use crate::cli::HealthArgs;
use crate::health::{self, Snapshot};
use crate::inventory::{scan, Roots, ScanOptions};
use crate::policy::Policy;
use crate::results::Artefact;
use crate::util::fs::write_durably;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert health: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

fn load(path: &std::path::Path) -> anyhow::Result<Snapshot> {
    let text = crate::input::read_text(path).with_context(|| path.display().to_string())?;
    let s: Snapshot = serde_json::from_str(&text).map_err(|e| {
        let at = format!(
            "{}:{}:{}: not a health snapshot",
            path.display(),
            e.line(),
            e.column()
        );
        anyhow::Error::new(e).context(at)
    })?;
    if s.schema_version != health::SCHEMA_VERSION {
        bail!(
            "{}: snapshot schema {} (this storcert reads {})",
            path.display(),
            s.schema_version,
            health::SCHEMA_VERSION
        );
    }
    Ok(s)
}

pub fn run(a: HealthArgs) -> ExitCode {
    if let Some(path) = &a.snapshot {
        let inv = scan(
            &Roots::default(),
            &ScanOptions {
                devices: a.device.clone(),
                ..Default::default()
            },
        );
        if let Some(e) = inv.errors.iter().find(|e| e.starts_with("--device ")) {
            return fail(e);
        }
        let snap = health::snapshot(&inv);
        if let Err(e) = write_durably(path, Artefact::from(snap.clone()).to_json()) {
            return fail(format!("{}: {e}", path.display()));
        }
        eprintln!(
            "health snapshot of {} in {}",
            crate::util::text::counted(snap.drives.len(), "drive"),
            path.display()
        );
        return ExitCode::SUCCESS;
    }
    if a.diff.len() != 2 {
        return fail("give --snapshot FILE, or --diff BEFORE AFTER");
    }
    let (before, after) = match (load(&a.diff[0]), load(&a.diff[1])) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return fail(format!("{e:#}")),
    };
    let policy = match a.policy.as_deref().map(Policy::from_file).transpose() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let d = health::diff(&before, &after, |dr| {
        policy
            .as_ref()
            .and_then(|p| p.rating(dr.model.as_deref(), dr.serial.as_deref()))
    });
    if a.json {
        print!(
            "{}",
            String::from_utf8_lossy(&Artefact::from(d.clone()).to_json())
        );
    } else {
        print!("{}", health::render(&d));
    }
    ExitCode::from(if d.degraded { exit::FAIL } else { exit::PASS })
}
