use crate::results::Artefact;
use std::io::Write;
use std::process::ExitCode;

use super::exit;
use crate::cli::InventoryArgs;
use crate::inventory::capture::{self, Capture, CapturedOptions, Source};
use crate::inventory::{scan, Inventory, Roots, ScanOptions};
use crate::output::inventory_table;
use crate::util::text::printable;

pub fn run(args: InventoryArgs) -> ExitCode {
    let inventory = match &args.replay {
        Some(file) => match replayed(file) {
            Ok(inv) => inv,
            Err(e) => {
                eprintln!("storcert inventory: --replay {}: {e:#}", file.display());
                return ExitCode::from(exit::COULD_NOT_RUN);
            }
        },
        None => match scanned(&args) {
            Ok(inv) => inv,
            Err(e) => {
                eprintln!("storcert inventory: {e:#}");
                return ExitCode::from(exit::COULD_NOT_RUN);
            }
        },
    };
    let text = if args.json {
        String::from_utf8_lossy(&Artefact::from(inventory.clone()).to_json()).into_owned()
    } else {
        inventory_table::render(&inventory)
    };
    // A closed pipe (| head) is not an error worth a message.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    let missing: Vec<&String> = inventory
        .errors
        .iter()
        .filter(|e| e.starts_with("--device "))
        .collect();
    for e in &missing {
        eprintln!("storcert inventory: {e}");
    }
    if !missing.is_empty() {
        return ExitCode::from(exit::COULD_NOT_RUN);
    }
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
    let capture = Capture::recording();
    let roots = Roots {
        source: Source::Capturing(capture.clone()),
        ..Roots::default()
    };
    let inventory = scan(&roots, &opts);
    let archive = capture.to_archive(&roots, &CapturedOptions::from(&opts))?;
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
    let missing = replay.capture.missing();
    if !missing.is_empty() {
        eprintln!(
            "storcert inventory: the capture (made by storcert {}) does not answer {} of this storcert's questions; they read as absent, the first: {}",
            printable(&replay.made_by, 40),
            missing.len(),
            printable(&missing[0], 200)
        );
    }
    Ok(inventory)
}
