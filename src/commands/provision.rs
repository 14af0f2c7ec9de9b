//! `storcert provision`: spare area with a partition.

use std::process::ExitCode;

use anyhow::anyhow;

use super::{exit, gate};
use crate::cli::ProvisionArgs;
use crate::provision::{self, Spec};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert provision: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

fn pct(flag: &str, text: &str) -> anyhow::Result<f64> {
    text.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| anyhow!("{flag} {text:?} is not a percentage like 21%"))
}

/// `provision --remove`: storcert's partition table taken away.
fn remove(a: &ProvisionArgs) -> ExitCode {
    let action = format!(
        "{}zero the first and last MiB (storcert's partition table)",
        if a.no_discard {
            ""
        } else {
            "discard every block, then "
        }
    );
    // Refused before the gate where the table is not storcert's, so the
    // gate's advice (name the drive to destroy it) is not given for a
    // table this command would not touch anyway.
    if let Some(sig) = crate::safety::storcert_partition_in_use(&a.device) {
        return fail(format!(
            "storcert's partition on {} now holds {sig}: it was put to use since, it is no \
             test data; storcert does not remove it",
            a.device.display()
        ));
    }
    if crate::safety::storcert_partition(&a.device).is_none() && a.device.exists() {
        return fail(format!(
            "{} carries no storcert partition table (one partition named \"{}\"): nothing \
             of storcert's to remove",
            a.device.display(),
            crate::safety::STORCERT_PARTITION
        ));
    }
    let cleared = match gate(
        "provision",
        &action,
        std::slice::from_ref(&a.device),
        &a.safety,
    ) {
        Ok(mut c) => c.remove(0),
        Err(code) => return code,
    };
    let r = match provision::remove(&cleared, !a.no_discard) {
        Ok(r) => r,
        Err(e) => return fail(format!("{e:#}")),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a removal serialises")
        );
    } else if let Some(d) = &r.discard {
        match &d.error {
            None => println!("discarded {} bytes in {} ranges", d.bytes, d.ranges),
            Some(e) => println!("discard refused ({e}); the table was removed all the same"),
        }
    }
    if !a.json {
        println!("removed storcert's partition table from {}", r.device);
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    if !r.kernel_partitions.is_empty() {
        return fail(format!(
            "{}: the kernel still lists {} after re-reading the table; \
             it may be in use (close it and run blockdev --rereadpt)",
            r.device,
            r.kernel_partitions.join(", ")
        ));
    }
    ExitCode::SUCCESS
}

pub fn run(a: ProvisionArgs) -> ExitCode {
    if a.remove {
        return remove(&a);
    }
    let spare_text = a.spare.as_deref().unwrap_or_default();
    let spare = match pct("--spare", spare_text) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let mut factory = match a
        .factory_spare
        .as_deref()
        .map(|f| pct("--factory-spare", f))
        .transpose()
    {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    if let (None, Some(path)) = (factory, &a.policy) {
        let policy = match crate::policy::Policy::from_file(path) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        // The drive as it identifies itself.
        let inv = crate::inventory::scan(
            &crate::inventory::Roots::default(),
            &crate::inventory::ScanOptions {
                devices: vec![a.device.display().to_string()],
                ..Default::default()
            },
        );
        if let Some(d) = inv.disks.first() {
            factory = policy.factory_spare(d.model.as_deref(), d.serial.as_deref());
        }
    }
    if !(spare > 0.0 && spare < 100.0) {
        return fail(format!(
            "--spare {spare}% must be more than 0% and less than 100%"
        ));
    }
    let action = format!(
        "{}write a GPT with one partition leaving {spare}% unpartitioned",
        if a.no_discard {
            ""
        } else {
            "discard every block, then "
        }
    );
    let cleared = match gate(
        "provision",
        &action,
        std::slice::from_ref(&a.device),
        &a.safety,
    ) {
        Ok(mut c) => c.remove(0),
        Err(code) => return code,
    };
    let r = match provision::provision(
        &cleared,
        &Spec {
            device: a.device.clone(),
            spare_pct: spare,
            factory_spare_pct: factory,
            discard: !a.no_discard,
        },
    ) {
        Ok(r) => r,
        Err(e) => return fail(format!("{e:#}")),
    };
    if a.json {
        print!(
            "{}",
            String::from_utf8_lossy(&crate::results::Artefact::from(r.clone()).to_json())
        );
    } else {
        if let Some(d) = &r.discard {
            match &d.error {
                None => println!("discarded {} bytes in {} ranges", d.bytes, d.ranges),
                Some(e) => println!("discard refused ({e}); provisioning went on"),
            }
        }
        println!(
            "partition 1: bytes {}..{} ({} bytes); spare {} bytes = {:.2}% of {} bytes{}",
            r.partition_start_bytes,
            r.partition_end_bytes,
            r.partition_size_bytes,
            r.spare_bytes,
            r.spare_pct,
            r.size_bytes,
            match (r.factory_spare_pct, r.total_spare_pct) {
                (Some(f), Some(t)) => format!(" (+{f}% factory spare = {t:.2}% in all)"),
                _ => String::new(),
            }
        );
        if let Some(k) = &r.kernel {
            println!(
                "the kernel sees {} at {} bytes, {} bytes long",
                k.partition, k.start_bytes, k.size_bytes
            );
        }
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    ExitCode::SUCCESS
}
