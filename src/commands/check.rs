//! `storcert check`: an inventory against a policy.

use std::process::ExitCode;

use super::exit;
use crate::cli::CheckArgs;
use crate::inventory::reach::{findings, kernel_log};
use crate::inventory::{scan, Inventory, Roots, ScanOptions};
use crate::policy::{check, fix, Policy};
use crate::results::policy::Severity;
use crate::safety::{self, Overrides};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert check: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn run(a: CheckArgs) -> ExitCode {
    let policy = match Policy::from_file(&a.policy) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let inventory: Inventory = match &a.inventory {
        Some(path) => {
            let text = match crate::input::read_text(path) {
                Ok(t) => t,
                Err(e) => return fail(format!("{}: {e}", path.display())),
            };
            match serde_json::from_str(&text) {
                Ok(i) => i,
                Err(e) => {
                    return fail(format!(
                        "{}:{}:{}: not an inventory: {e}",
                        path.display(),
                        e.line(),
                        e.column()
                    ))
                }
            }
        }
        None => scan(
            &Roots::default(),
            &ScanOptions {
                devices: a.device.clone(),
                ..Default::default()
            },
        ),
    };
    if let Some(e) = inventory.errors.iter().find(|e| e.starts_with("--device ")) {
        return fail(e);
    }
    // What this system cannot drive (a controller with no driver hides
    // its drives), whatever the policy, as `run` says it: from a saved
    // inventory alone, from the live one with the kernel's log.
    let live = a.inventory.is_none();
    let checked = |inv: &Inventory| {
        let log = if live {
            kernel_log()
        } else {
            Some(String::new())
        };
        let mut report = check::check(&policy, inv);
        check::add_machine_findings(&mut report, &findings(inv, log.as_deref(), Severity::Warn));
        report
    };
    let mut report = checked(&inventory);
    let mut fixes = Vec::new();
    if a.fix {
        let plan = fix::plan(&report.findings);
        if !plan.is_empty() {
            eprintln!("storcert check --fix will change (no data is touched):");
            for p in &plan {
                eprintln!("  {p}");
            }
            if a.safety.dry_run {
                eprintln!("dry run: nothing changed");
                return ExitCode::SUCCESS;
            }
            let overrides =
                match Overrides::new(&a.safety.force_destroy, a.safety.destroy_policy.as_deref()) {
                    Ok(o) => o,
                    Err(e) => return fail(format!("--destroy-policy: {e}")),
                };
            let roots = Roots::default();
            fixes = fix::apply(&report.findings, |dev| {
                safety::check(std::path::Path::new(dev), &roots, &overrides).map(|_| ())
            });
            // Check again what the devices say now.
            let after = scan(
                &Roots::default(),
                &ScanOptions {
                    devices: a.device.clone(),
                    ..Default::default()
                },
            );
            report = checked(&after);
        }
    }
    if a.json {
        // The report's fields, and the fixes beside them.
        let mut v = serde_json::to_value(crate::results::Artefact::from(report.clone()))
            .unwrap_or_default();
        v["fixes"] = serde_json::to_value(&fixes).unwrap_or_default();
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        for f in &fixes {
            println!(
                "fix {}: {} by {}: {}",
                f.device, f.change, f.method, f.outcome
            );
        }
        print!("{}", check::render(&report));
    }
    ExitCode::from(if report.pass { exit::PASS } else { exit::FAIL })
}
