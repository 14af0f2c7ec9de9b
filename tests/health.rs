//! Health snapshots and their diff: what degraded, drives that went away,
//! the endurance arithmetic, and the command's files and errors.

mod common;

use std::path::PathBuf;

use storcert::health::{self, Rating, Snapshot};
use storcert::inventory::Inventory;

fn snapshot() -> Snapshot {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/inventory.json");
    let inv: Inventory = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let mut s = health::snapshot(&inv);
    s.taken_at = 1_000_000;
    s
}

#[test]
fn an_unchanged_run_is_not_degraded() {
    let before = snapshot();
    let mut after = before.clone();
    after.taken_at += 3600;
    let d = health::diff(&before, &after, |_| None);
    assert!(!d.degraded);
    assert!(d.drives.iter().all(|dr| dr.changes.is_empty()));
    assert!(d.unmatched.is_empty());
    // Every drive of the snapshot is matched (by serial).
    assert_eq!(d.drives.len(), before.drives.len());
}

#[test]
fn new_media_errors_warnings_and_reallocations_are_degradation() {
    let before = snapshot();
    let mut after = before.clone();
    after.taken_at += 86400;
    for dr in &mut after.drives {
        let h = dr.health.as_mut();
        if let Some(n) = h.and_then(|h| h.nvme.as_mut()) {
            n.media_errors += 2;
            n.critical_warning = 0x04;
            n.critical_warnings = vec!["NVM subsystem reliability degraded".into()];
            n.percentage_used += 1;
            n.bytes_written += 3_200_000_000_000;
        }
        let h = dr.health.as_mut();
        if let Some(a) = h.and_then(|h| h.ata.as_mut()) {
            a.reallocated_sectors = Some(8);
        }
        if dr.host_bytes_written.is_some() {
            dr.host_bytes_written = dr.host_bytes_written.map(|w| w + 3_200_000_000_000);
        }
    }
    let d = health::diff(&before, &after, |dr| {
        dr.model
            .as_deref()
            .is_some_and(|m| m.starts_with("QEMU NVMe"))
            .then_some(Rating {
                dwpd: 1.0,
                warranty_years: 5.0,
            })
    });
    assert!(d.degraded);
    let nvme = d
        .drives
        .iter()
        .find(|dr| dr.drive.starts_with("nvme0n1"))
        .unwrap();
    let what: Vec<(&str, bool)> = nvme
        .changes
        .iter()
        .map(|c| (c.what.as_str(), c.degraded))
        .collect();
    assert_eq!(
        what,
        vec![
            ("NVMe media errors", true),
            ("NVMe percentage used", false),
            ("NVMe critical warning", true)
        ]
    );
    assert_eq!(
        nvme.changes[2].after,
        "0x04 (NVM subsystem reliability degraded)"
    );
    // 3.2 TB in a day on a 2 GiB drive rated 1 DWPD: far beyond it.
    let e = nvme.endurance.as_ref().unwrap();
    assert_eq!(e.host_bytes_written, 3_200_000_000_000);
    assert_eq!(e.within_rating, Some(false));
    let sata = d
        .drives
        .iter()
        .find(|dr| dr.drive.starts_with("sda"))
        .unwrap();
    assert_eq!(sata.changes[0].what, "reallocated sectors");
    assert_eq!(
        (
            sata.changes[0].before.as_str(),
            sata.changes[0].after.as_str()
        ),
        ("0", "8")
    );
    assert!(sata.degraded);
    let text = health::render(&d);
    assert!(
        text.starts_with("health over 86400 s: DEGRADED\n"),
        "{text}"
    );
    assert!(
        text.contains("  NVMe media errors: 0 -> 2 (degraded)\n"),
        "{text}"
    );
}

#[test]
fn a_drive_that_went_away_is_degradation() {
    let before = snapshot();
    let mut after = before.clone();
    after.drives.retain(|d| !d.name.starts_with("sdb"));
    let d = health::diff(&before, &after, |_| None);
    assert!(d.degraded);
    assert_eq!(d.unmatched.len(), 1);
    assert!(
        d.unmatched[0].contains("only before (the drive went away)"),
        "{:?}",
        d.unmatched
    );
}

#[test]
fn snapshot_and_diff_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let out = common::storcert(&["health", "--snapshot", a.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = tmp.path().join("b.json");
    std::fs::copy(&a, &b).unwrap();
    let out = common::storcert(&[
        "health",
        "--diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["degraded"], false);
    std::fs::write(&b, "{\"schema_version\": 1, \"taken_at\": 5}").unwrap();
    let out = common::storcert(&["health", "--diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(&format!("storcert health: {}:1:", b.display())),
        "{err}"
    );
    assert!(err.contains("missing field `drives`"), "{err}");
    let out = common::storcert(&["health"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn write_amplification_where_the_drive_reports_media_writes() {
    let mut before = snapshot();
    for dr in &mut before.drives {
        if dr.name == "nvme0n1" {
            dr.media_bytes_written = Some(10_000_000_000);
        }
    }
    let mut after = before.clone();
    after.taken_at += 3600;
    for dr in &mut after.drives {
        if dr.name == "nvme0n1" {
            dr.host_bytes_written = dr.host_bytes_written.map(|w| w + 1_000_000_000);
            dr.media_bytes_written = Some(12_500_000_000);
        }
    }
    let d = health::diff(&before, &after, |_| None);
    let e = d
        .drives
        .iter()
        .find(|x| x.drive.starts_with("nvme0n1"))
        .unwrap()
        .endurance
        .as_ref()
        .unwrap();
    assert_eq!(e.write_amplification, Some(2.5));
    assert!(
        e.summary.ends_with("; write amplification 2.50"),
        "{}",
        e.summary
    );
    // Without media writes there is no amplification to report.
    let d = health::diff(
        &snapshot(),
        &{
            let mut s = snapshot();
            s.taken_at += 10;
            s
        },
        |_| None,
    );
    assert!(d.drives.iter().all(|x| x
        .endurance
        .as_ref()
        .is_none_or(|e| e.write_amplification.is_none())));
}

#[test]
fn drives_behind_a_raid_controller_are_in_the_snapshot_and_its_diff() {
    // The lab's MegaRAID: two virtual drives (sdb, sdc) in the inventory,
    // so the physical drives behind the controller are snapshotted too,
    // with its counters, and matched only with drives behind it.
    let before = snapshot();
    let behind: Vec<&str> = before
        .drives
        .iter()
        .filter_map(|d| d.behind.as_deref())
        .collect();
    // (qemu answers PD_GET_INFO for 0x0100 with drive 0's: nothing of
    // it is known, not even a size, so it is not taken for a drive.)
    assert_eq!(behind, ["0000:00:03.0 pd 0"]);
    let mut after = before.clone();
    after.taken_at += 3600;
    // A drive behind carrying its virtual drive's serial (qemu's do) is
    // still matched with itself, not with the virtual drive.
    let vd_serial = before
        .drives
        .iter()
        .find(|d| d.name == "sdb")
        .and_then(|d| d.serial.clone());
    for snap in [&mut after] {
        for d in &mut snap.drives {
            if d.behind.as_deref() == Some("0000:00:03.0 pd 0") {
                d.serial = vd_serial.clone();
                d.controller_counters.as_mut().unwrap().media_errors += 3;
            }
        }
    }
    let mut before = before;
    for d in &mut before.drives {
        if d.behind.as_deref() == Some("0000:00:03.0 pd 0") {
            d.serial = vd_serial.clone();
        }
    }
    let d = health::diff(&before, &after, |_| None);
    assert!(d.degraded, "{d:#?}");
    let pd = d
        .drives
        .iter()
        .find(|x| x.drive.contains("pd 0"))
        .expect("the drive behind is in the diff");
    assert_eq!(pd.changes.len(), 1, "{:?}", pd.changes);
    assert_eq!(pd.changes[0].what, "controller media errors");
    assert!(pd.changes[0].degraded);
    let sdb = d
        .drives
        .iter()
        .find(|x| x.drive.starts_with("sdb"))
        .unwrap();
    assert!(sdb.changes.is_empty(), "{:?}", sdb.changes);
    assert!(d.unmatched.is_empty(), "{:?}", d.unmatched);
}

#[test]
fn a_drive_behind_that_leaves_its_array_or_goes_unread_is_degradation() {
    let before = snapshot();
    let at = "0000:00:03.0 pd 0";
    for (state, health_gone, degraded) in [
        ("Failed", false, true),
        ("Rebuild", false, true),
        ("Offline", true, true),
        ("Offline", false, false),
    ] {
        let mut after = before.clone();
        after.taken_at += 60;
        let mut before = before.clone();
        for snap in [&mut before] {
            for d in &mut snap.drives {
                if d.behind.as_deref() == Some(at) {
                    d.health = Some(
                        serde_json::from_value(serde_json::json!({
                            "overall": "unknown", "source": "test", "temperature_c": null,
                            "power_on_hours": null, "nvme": null, "ata": null, "scsi": null
                        }))
                        .unwrap(),
                    );
                }
            }
        }
        for d in &mut after.drives {
            if d.behind.as_deref() == Some(at) {
                d.state = Some(state.into());
                if !health_gone {
                    d.health = before
                        .drives
                        .iter()
                        .find(|b| b.behind.as_deref() == Some(at))
                        .unwrap()
                        .health
                        .clone();
                }
            }
        }
        let d = health::diff(&before, &after, |_| None);
        assert_eq!(d.degraded, degraded, "{state} {health_gone}: {d:#?}");
    }
    // A hot spare or an unconfigured drive is no array's: not snapshotted.
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/inventory.json");
    let mut inv: Inventory = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    for c in &mut inv.controllers {
        for pd in c.raid.iter_mut().flat_map(|r| r.physical_drives.iter_mut()) {
            pd.state = Some("Hot Spare".into());
        }
    }
    assert!(health::snapshot(&inv)
        .drives
        .iter()
        .all(|d| d.behind.is_none()));
}

#[test]
fn a_family_without_virtual_drives_has_its_members_snapshotted_by_its_disks() {
    // MPI3 and an HBA's integrated RAID list no virtual drives: the
    // controller's own disks in the inventory are what puts its members
    // in the snapshot.
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab/inventory.json");
    let mut inv: Inventory = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let behind = |inv: &Inventory| {
        health::snapshot(inv)
            .drives
            .iter()
            .filter_map(|d| d.behind.clone())
            .collect::<Vec<_>>()
    };
    let raid = inv
        .controllers
        .iter_mut()
        .find_map(|c| c.raid.as_mut())
        .unwrap();
    raid.virtual_drives.clear();
    assert_eq!(behind(&inv), ["0000:00:03.0 pd 0"]);
    // Neither a virtual drive nor a disk of the controller: none.
    inv.disks
        .retain(|d| d.controller.as_deref() != Some("0000:00:03.0"));
    assert!(behind(&inv).is_empty());
}
