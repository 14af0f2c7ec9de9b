//! Health before and after: snapshots of every drive's SMART / NVMe health
//! log as the inventory reads them, the diff of two snapshots with a
//! verdict on what degraded, and the endurance arithmetic of the writes in
//! between (writes per day at the tested load against the drive's rating).

use crate::inventory::{AtaHealth, Health, Inventory, NvmeHealth};
pub use storcert_results::health::{
    Change, ControllerCounters, Diff, DriveDiff, DriveHealth, Endurance, Rating, Snapshot,
};

pub use storcert_results::health::SCHEMA_VERSION;

fn host_written(health: Option<&Health>) -> (Option<u128>, Option<String>) {
    let Some(h) = health else {
        return (None, None);
    };
    if let Some(n) = &h.nvme {
        return (
            Some(n.bytes_written),
            Some("NVMe SMART log data units written × 512000".into()),
        );
    }
    if let Some(a) = &h.ata {
        if let Some(attr) = a.attributes.iter().find(|x| x.id == 241) {
            return (
                Some(attr.raw as u128 * 512),
                Some("ATA attribute 241 (Total LBAs Written) × 512".into()),
            );
        }
    }
    (None, None)
}

/// One drive's entry in a snapshot: its identity (model, serial, WWN),
/// size and health, with the writes its health counts.
fn drive_health(
    name: &str,
    [model, serial, wwn]: [&Option<String>; 3],
    capacity_bytes: u64,
    health: Option<&Health>,
) -> DriveHealth {
    let (host_bytes_written, host_bytes_written_source) = host_written(health);
    DriveHealth {
        name: name.into(),
        model: model.clone(),
        serial: serial.clone(),
        wwn: wwn.clone(),
        capacity_bytes,
        health: health.cloned(),
        host_bytes_written,
        host_bytes_written_source,
        media_bytes_written: health.and_then(|h| h.nvme.as_ref()?.media_bytes_written),
        behind: None,
        controller_counters: None,
        state: None,
    }
}

/// Every drive of `inv`: its disks, and the physical drives behind each
/// RAID controller one of whose virtual drives is among them (read
/// through the controller: the SSDs behind a PERC are the drives whose
/// wear an ACT run on its virtual drive spends).
pub fn snapshot(inv: &Inventory) -> Snapshot {
    let taken_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut drives: Vec<DriveHealth> = inv
        .disks
        .iter()
        .filter(|d| !d.transport.is_virtual())
        .map(|d| {
            drive_health(
                &d.name,
                [&d.model, &d.serial, &d.wwn],
                d.capacity_bytes,
                d.health.as_ref(),
            )
        })
        .collect();
    for c in &inv.controllers {
        let Some(raid) = &c.raid else { continue };
        // A family that cannot list virtual drives (MPI3, an HBA's
        // integrated RAID) has its volumes among the controller's disks.
        let in_use = raid.virtual_drives.iter().any(|vd| {
            vd.block_device
                .as_ref()
                .is_some_and(|b| inv.disks.iter().any(|d| &d.name == b))
        }) || (raid.virtual_drives.is_empty()
            && inv
                .disks
                .iter()
                .any(|d| d.controller.as_deref() == Some(c.pci_address.as_str())));
        if !in_use {
            continue;
        }
        // The drives of its arrays: not a spare, an unconfigured or JBOD
        // disk (a JBOD disk is a disk the kernel sees), nor an enclosure
        // (which has no size). Which array each belongs to is not read
        // yet: a drive of another array of the controller is included.
        let in_an_array = |pd: &&crate::inventory::PhysicalDrive| {
            !inv.kernel_sees(pd)
                && !matches!(
                    pd.state.as_deref(),
                    Some("Unconfigured Good" | "Unconfigured Bad" | "Hot Spare" | "JBOD")
                )
                && pd.raw_size_bytes.unwrap_or(0) > 0
        };
        for pd in raid.physical_drives.iter().filter(in_an_array) {
            let at = format!("{} pd {}", c.pci_address, pd.id);
            drives.push(DriveHealth {
                behind: Some(at.clone()),
                state: pd.state.clone(),
                controller_counters: match (
                    pd.media_errors,
                    pd.other_errors,
                    pd.predictive_failures,
                ) {
                    (Some(m), Some(o), Some(p)) => Some(ControllerCounters {
                        media_errors: m,
                        other_errors: o,
                        predictive_failures: p,
                    }),
                    _ => None,
                },
                ..drive_health(
                    &at,
                    [&pd.model, &pd.serial, &pd.wwn],
                    pd.raw_size_bytes.unwrap_or(0),
                    pd.health.as_ref(),
                )
            });
        }
    }
    Snapshot {
        schema_version: SCHEMA_VERSION,
        taken_at,
        moment: None,
        drives,
    }
}

/// Writes per day at the run's rate against the rating: "3.20 TB/day =
/// 4.00 DWPD; rated 10 DWPD for 5 years: enough to run this load 24/7 for
/// the warranty (the rated writes last 12.5 years)".
pub fn endurance(written: u128, seconds: u64, capacity: u64, rating: Option<Rating>) -> Endurance {
    let per_day = written as f64 / seconds.max(1) as f64 * 86400.0;
    let dwpd = per_day / capacity.max(1) as f64;
    let years = rating.map(|r| r.dwpd * r.warranty_years / dwpd.max(f64::MIN_POSITIVE));
    let within = rating.map(|r| dwpd <= r.dwpd);
    let mut summary = format!("{:.2} TB/day = {:.2} DWPD", per_day / 1e12, dwpd);
    if let (Some(r), Some(y), Some(ok)) = (rating, years, within) {
        summary.push_str(&format!(
            "; rated {} DWPD for {} years: {} (the rated writes last {:.1} years at this rate)",
            r.dwpd,
            r.warranty_years,
            if ok {
                "enough to run this load 24/7 for the warranty"
            } else {
                "NOT enough for the warranty"
            },
            y
        ));
    }
    Endurance {
        host_bytes_written: written,
        seconds,
        bytes_per_day: per_day,
        drive_writes_per_day: dwpd,
        rated_dwpd: rating.map(|r| r.dwpd),
        warranty_years: rating.map(|r| r.warranty_years),
        years_at_this_rate: years,
        within_rating: within,
        write_amplification: None,
        summary,
    }
}

fn same_drive(a: &DriveHealth, b: &DriveHealth) -> bool {
    // A drive behind a controller is never a disk the kernel sees (a
    // virtual drive can carry its member's serial, as qemu's do).
    if a.behind.is_some() != b.behind.is_some() {
        return false;
    }
    // Behind a controller, a serial missing on one side (a read that
    // failed) leaves the place: the WWN may come from the drive on one
    // side and from the controller's copy on the other.
    if a.behind.is_some() && (a.serial.is_none() || b.serial.is_none()) {
        return a.behind == b.behind;
    }
    match (&a.serial, &b.serial, &a.wwn, &b.wwn) {
        (Some(x), Some(y), _, _) if !x.is_empty() => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => a.name == b.name,
    }
}

/// Compares two snapshots; `rating_of` gives a drive's rating (from the
/// policy) for the endurance arithmetic.
pub fn diff(
    before: &Snapshot,
    after: &Snapshot,
    rating_of: impl Fn(&DriveHealth) -> Option<Rating>,
) -> Diff {
    let seconds = after.taken_at.saturating_sub(before.taken_at);
    let mut drives = Vec::new();
    let mut unmatched = Vec::new();
    for a in &after.drives {
        let label = format!(
            "{} ({} {})",
            a.name,
            a.model.as_deref().unwrap_or("?"),
            a.serial.as_deref().unwrap_or("?")
        );
        let Some(b) = before.drives.iter().find(|b| same_drive(b, a)) else {
            unmatched.push(format!("{label}: only after"));
            continue;
        };
        let mut changes = Vec::new();
        state_changes(&mut changes, b, a);
        controller_changes(&mut changes, b, a);
        nvme_changes(&mut changes, b, a);
        ata_changes(&mut changes, b, a);
        let (hb, ha) = (b.health.as_ref(), a.health.as_ref());
        let temps = match (
            hb.and_then(|h| h.temperature_c),
            ha.and_then(|h| h.temperature_c),
        ) {
            (Some(x), Some(y)) => Some((x, y)),
            _ => None,
        };
        let degraded = changes.iter().any(|c| c.degraded);
        drives.push(DriveDiff {
            drive: label,
            changes,
            degraded,
            endurance: endurance_between(b, a, seconds, &rating_of),
            temperature_c: temps,
        });
    }
    for b in &before.drives {
        if !after.drives.iter().any(|a| same_drive(b, a)) {
            unmatched.push(format!(
                "{} ({}): only before (the drive went away)",
                b.name,
                b.serial.as_deref().unwrap_or("?")
            ));
        }
    }
    let degraded =
        drives.iter().any(|d| d.degraded) || unmatched.iter().any(|u| u.contains("only before"));
    Diff {
        schema_version: SCHEMA_VERSION,
        seconds,
        drives,
        unmatched,
        degraded,
    }
}

/// A counter that moved, as a change; `worse_if_up`: whether a rise
/// degrades the drive.
fn count(
    changes: &mut Vec<Change>,
    what: &str,
    x: Option<u128>,
    y: Option<u128>,
    worse_if_up: bool,
) {
    if let (Some(x), Some(y)) = (x, y) {
        if x != y {
            changes.push(Change {
                what: what.into(),
                before: x.to_string(),
                after: y.to_string(),
                degraded: worse_if_up && y > x,
            });
        }
    }
}

/// The drive's state behind its controller, and whether its health could
/// still be read through it.
fn state_changes(changes: &mut Vec<Change>, b: &DriveHealth, a: &DriveHealth) {
    if let (Some(x), Some(y)) = (&b.state, &a.state) {
        if x != y {
            // Leaving Online, or arriving where a drive is lost or
            // being rebuilt, is what a burn-in must not pass.
            let degraded = x == "Online"
                || matches!(
                    y.as_str(),
                    "Offline" | "Failed" | "Rebuild" | "Unconfigured Bad"
                );
            changes.push(Change {
                what: "state behind the controller".into(),
                before: x.clone(),
                after: y.clone(),
                degraded,
            });
        }
    }
    if a.behind.is_some() && b.health.is_some() && a.health.is_none() {
        changes.push(Change {
            what: "health through the controller".into(),
            before: "read".into(),
            after: "not readable".into(),
            degraded: true,
        });
    }
}

/// The controller's own error counters for the drive.
fn controller_changes(changes: &mut Vec<Change>, b: &DriveHealth, a: &DriveHealth) {
    let (cb, ca) = (b.controller_counters, a.controller_counters);
    type Counter = fn(ControllerCounters) -> u32;
    let counters: [(&str, Counter, bool); 3] = [
        ("controller media errors", |c| c.media_errors, true),
        ("controller other errors", |c| c.other_errors, false),
        (
            "controller predictive failures",
            |c| c.predictive_failures,
            true,
        ),
    ];
    for (what, get, worse_if_up) in counters {
        count(
            changes,
            what,
            cb.map(get).map(u128::from),
            ca.map(get).map(u128::from),
            worse_if_up,
        );
    }
}

/// An NVMe drive's SMART / health log counters and critical warning.
fn nvme_changes(changes: &mut Vec<Change>, b: &DriveHealth, a: &DriveHealth) {
    let nb = b.health.as_ref().and_then(|h| h.nvme.as_ref());
    let na = a.health.as_ref().and_then(|h| h.nvme.as_ref());
    type Counter = fn(&NvmeHealth) -> u128;
    let counters: [(&str, Counter, bool); 4] = [
        ("NVMe media errors", |n| n.media_errors, true),
        ("NVMe error log entries", |n| n.error_log_entries, false),
        ("NVMe percentage used", |n| n.percentage_used as u128, false),
        ("NVMe unsafe shutdowns", |n| n.unsafe_shutdowns, false),
    ];
    for (what, get, worse_if_up) in counters {
        count(changes, what, nb.map(get), na.map(get), worse_if_up);
    }
    if let (Some(x), Some(y)) = (nb, na) {
        let new_bits = y.critical_warning & !x.critical_warning;
        if new_bits != 0 {
            changes.push(Change {
                what: "NVMe critical warning".into(),
                before: format!("0x{:02x}", x.critical_warning),
                after: format!(
                    "0x{:02x} ({})",
                    y.critical_warning,
                    y.critical_warnings.join(", ")
                ),
                degraded: true,
            });
        }
    }
}

/// An ATA drive's SMART attributes that a burn-in must not see rise, and
/// its overall assessment.
fn ata_changes(changes: &mut Vec<Change>, b: &DriveHealth, a: &DriveHealth) {
    let (hb, ha) = (b.health.as_ref(), a.health.as_ref());
    let ab = hb.and_then(|h| h.ata.as_ref());
    let aa = ha.and_then(|h| h.ata.as_ref());
    type Attribute = fn(&AtaHealth) -> Option<u64>;
    let attributes: [(&str, Attribute); 4] = [
        ("reallocated sectors", |x| x.reallocated_sectors),
        ("pending sectors", |x| x.pending_sectors),
        ("offline uncorrectable", |x| x.offline_uncorrectable),
        ("CRC errors", |x| x.crc_errors),
    ];
    for (what, get) in attributes {
        let w = |h: Option<&AtaHealth>| h.and_then(get).map(u128::from);
        count(changes, what, w(ab), w(aa), true);
    }
    if let (Some(x), Some(y)) = (hb, ha) {
        if x.overall == "passed" && y.overall == "failed" {
            changes.push(Change {
                what: "overall health".into(),
                before: x.overall.clone(),
                after: y.overall.clone(),
                degraded: true,
            });
        }
    }
}

/// What the run wrote to the drive, against its rating; with the media's
/// own count, the write amplification.
fn endurance_between(
    b: &DriveHealth,
    a: &DriveHealth,
    seconds: u64,
    rating_of: &impl Fn(&DriveHealth) -> Option<Rating>,
) -> Option<Endurance> {
    let mut endurance = match (b.host_bytes_written, a.host_bytes_written) {
        (Some(x), Some(y)) if y >= x && seconds > 0 => {
            Some(endurance(y - x, seconds, a.capacity_bytes, rating_of(a)))
        }
        _ => None,
    };
    if let (Some(e), Some(mb), Some(ma)) = (
        endurance.as_mut(),
        b.media_bytes_written,
        a.media_bytes_written,
    ) {
        if ma >= mb && e.host_bytes_written > 0 {
            let wa = (ma - mb) as f64 / e.host_bytes_written as f64;
            e.write_amplification = Some(wa);
            e.summary
                .push_str(&format!("; write amplification {wa:.2}"));
        }
    }
    endurance
}

pub fn render(d: &Diff) -> String {
    let mut s = format!(
        "health over {} s: {}\n",
        d.seconds,
        if d.degraded {
            "DEGRADED"
        } else {
            "no degradation"
        }
    );
    for dr in &d.drives {
        s.push_str(&format!(
            "{}{}\n",
            dr.drive,
            if dr.degraded { ": DEGRADED" } else { "" }
        ));
        for c in &dr.changes {
            s.push_str(&format!(
                "  {}: {} -> {}{}\n",
                c.what,
                c.before,
                c.after,
                if c.degraded { " (degraded)" } else { "" }
            ));
        }
        if let Some((x, y)) = dr.temperature_c {
            s.push_str(&format!("  temperature: {x} C -> {y} C\n"));
        }
        if let Some(e) = &dr.endurance {
            s.push_str(&format!(
                "  writes: {} bytes in {} s: {}\n",
                e.host_bytes_written, e.seconds, e.summary
            ));
        }
    }
    for u in &d.unmatched {
        s.push_str(&format!("{u}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_845dc_pro_worked_example() {
        // An 800 GB 845DC PRO (rated 10 DWPD for 5 years) at ACT 12x for
        // 24 hours: 12 × 23.53 large-block writes/s of 128 KiB (ACT's
        // integer division: 1000 / 85 × 2 = 23.53 per 1x).
        let per_sec = 12.0 * (1000.0 / 85.0 * 2.0) * 131072.0;
        let written = (per_sec * 86400.0) as u128;
        let e = endurance(
            written,
            86400,
            800_000_000_000,
            Some(Rating {
                dwpd: 10.0,
                warranty_years: 5.0,
            }),
        );
        assert!(
            (e.bytes_per_day - 3.1976e12).abs() / 3.1976e12 < 1e-3,
            "{}",
            e.bytes_per_day
        );
        assert!(
            (e.drive_writes_per_day - 3.997).abs() < 0.01,
            "{}",
            e.drive_writes_per_day
        );
        assert_eq!(e.within_rating, Some(true));
        assert!((e.years_at_this_rate.unwrap() - 12.51).abs() < 0.05);
        assert_eq!(
            e.summary,
            "3.20 TB/day = 4.00 DWPD; rated 10 DWPD for 5 years: enough to run this load 24/7 for the warranty \
             (the rated writes last 12.5 years at this rate)"
        );
        // The same load on a 1 DWPD drive is not enough.
        let e = endurance(
            written,
            86400,
            800_000_000_000,
            Some(Rating {
                dwpd: 1.0,
                warranty_years: 5.0,
            }),
        );
        assert_eq!(e.within_rating, Some(false));
        let e = endurance(written, 86400, 800_000_000_000, None);
        assert_eq!(e.summary, "3.20 TB/day = 4.00 DWPD");
    }
}

#[cfg(test)]
mod wide_numbers {
    use std::collections::BTreeMap;

    use storcert_judge::contents::Contents;
    use storcert_results::Artefact;

    #[test]
    fn an_nvme_drive_s_u128_counters_read_back() {
        // NVMe counts bytes written in u128; a tagged inventory and health
        // snapshot holding one must read back (the lab's NVMe drive did not).
        let mut inv: storcert_results::inventory::Inventory = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/fixtures/qemu-lab/inventory.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let nvme = inv
            .disks
            .iter_mut()
            .find_map(|d| d.health.as_mut()?.nvme.as_mut())
            .expect("the lab fixture has an NVMe drive with health");
        nvme.bytes_written = 1 << 100;
        let snap = crate::health::snapshot(&inv);
        let files: BTreeMap<String, Vec<u8>> = [
            ("inventory.json".to_string(), Artefact::from(inv).to_json()),
            (
                "health-before.json".to_string(),
                Artefact::from(snap).to_json(),
            ),
        ]
        .into();
        let c = Contents::read(&files);
        assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
        assert_eq!(c.items.len(), 2);
    }
}
