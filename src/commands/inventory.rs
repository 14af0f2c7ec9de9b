use crate::results::Artefact;
use std::io::Write;
use std::process::ExitCode;

use super::exit;
use crate::cli::InventoryArgs;
use crate::inventory::{scan, RawRecorder, Roots, ScanOptions};
use crate::output::inventory_table;

pub fn run(args: InventoryArgs) -> ExitCode {
    let opts = ScanOptions {
        all: args.all,
        devices: args.device.clone(),
        no_probe: args.no_probe,
        recorder: RawRecorder::new(args.record_raw),
    };
    let inventory = scan(&Roots::default(), &opts);
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
