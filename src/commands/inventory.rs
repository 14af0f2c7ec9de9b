use crate::results::Artefact;
use std::io::Write;
use std::process::ExitCode;

use super::exit;
use crate::cli::InventoryArgs;
use crate::inventory::capture;
use crate::inventory::{scan, Inventory, Roots, ScanOptions};
use crate::output::inventory_table;
use crate::util::text::printable;

pub fn run(args: InventoryArgs) -> ExitCode {
    // What a replay prints came from a capture (anyone's file): every
    // message is made printable and bounded.
    let inventory = match &args.replay {
        Some(file) => match replayed(file) {
            Ok(inv) => inv,
            Err(e) => {
                eprintln!(
                    "storcert inventory: --replay {}: {}",
                    printable(&file.display().to_string(), 200),
                    printable(&format!("{e:#}"), 600)
                );
                return ExitCode::from(exit::COULD_NOT_RUN);
            }
        },
        None => match scanned(&args) {
            Ok(inv) => inv,
            Err(e) => {
                eprintln!("storcert inventory: {}", printable(&format!("{e:#}"), 600));
                return ExitCode::from(exit::COULD_NOT_RUN);
            }
        },
    };
    // An unknown --device of this command line is an error, said once and
    // before any table; in a replay it was the capturing machine's, and
    // is in the inventory's errors.
    if args.replay.is_none() {
        let missing: Vec<&String> = inventory
            .errors
            .iter()
            .filter(|e| e.starts_with("--device "))
            .collect();
        for e in &missing {
            eprintln!("storcert inventory: {}", printable(e, 600));
        }
        if !missing.is_empty() {
            return ExitCode::from(exit::COULD_NOT_RUN);
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 && !args.no_probe {
            eprintln!(
                "storcert inventory: not root: the drives' own identity, write cache and health (SG_IO, NVMe admin commands) need root; what sysfs says is shown"
            );
        }
    }
    let text = if args.json {
        let json = Artefact::from(inventory.clone()).to_json();
        crate::util::text::json_printable(&String::from_utf8_lossy(&json))
    } else {
        inventory_table::render(&inventory)
    };
    // A closed pipe (| head) is not an error worth a message.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    ExitCode::SUCCESS
}

/// This machine's inventory, captured to `--capture` when asked: the
/// capture is written (durably) before the inventory is printed.
fn scanned(args: &InventoryArgs) -> anyhow::Result<Inventory> {
    let opts = ScanOptions {
        all: args.all,
        devices: args.device.clone(),
        no_probe: args.no_probe,
    };
    let Some(file) = &args.capture else {
        return Ok(scan(&Roots::default(), &opts));
    };
    let (inventory, archive) = capture::scan_captured(&opts)?;
    crate::util::fs::write_durably(file, &archive)
        .map_err(|e| anyhow::anyhow!("--capture {}: {e}", file.display()))?;
    eprintln!(
        "storcert inventory: captured to {} ({} KiB; it holds the drives' serial numbers)",
        file.display(),
        archive.len().div_ceil(1024)
    );
    Ok(inventory)
}

/// The inventory a capture holds, made again here; what this storcert
/// asked and the capture does not answer is said (it reads as absent).
fn replayed(file: &std::path::Path) -> anyhow::Result<Inventory> {
    let replay = capture::read_file(file)?;
    let inventory = capture::replay(&replay);
    // What the replay left out by its bounds (a hostile capture's
    // millions of names), one line each.
    for cut in replay.capture.cuts() {
        eprintln!("storcert inventory: {}", printable(&cut, 400));
    }
    let (count, first) = replay.capture.missing();
    if let Some(first) = first.first() {
        eprintln!(
            "storcert inventory: the capture (made by storcert {}) does not answer {count} of this storcert's questions; they read as absent, the first: {}",
            printable(&replay.made_by, 40),
            printable(first, 200)
        );
    }
    Ok(inventory)
}
