//! The fleet's table: one row per drive per run, made once from a
//! verified bundle's typed contents, and written out in one file per
//! format (`csv`, `jsonl`). What drive-stats-style analysis reads, and what
//! the collector's history and cohort pages are built from: no page or
//! export opens a bundle again.
//!
//! The schema is versioned (`SCHEMA_VERSION`) and documented in
//! docs/export-schema.md; a field is only ever added (the version says
//! when), never renamed or given another meaning.

mod act;
pub mod csv;
pub mod jsonl;
mod stream;

use serde::{Deserialize, Serialize};

use storcert_judge::contents::Contents;
use storcert_judge::summary::{DriveVerdict, Summary};
use storcert_results::health::{DriveHealth, Moment, Snapshot};
use storcert_results::inventory::{Disk, Health, Inventory};
use storcert_results::stream::StreamResult;
use storcert_results::{Artefact, Verdict};

pub const SCHEMA_VERSION: u32 = 1;

/// Writes the drive table in one format, a row at a time as the rows are
/// read (an export is streamed, never held whole).
pub trait RowWriter {
    /// One row; `waived` is the waiver that covers its failure, if any.
    fn row(&mut self, r: &DriveRow, waived: Option<&str>) -> std::io::Result<()>;
    /// Ends the table and flushes what is buffered.
    fn finish(self: Box<Self>) -> std::io::Result<()>;
}

/// One export format. Adding one is a file of this module with its
/// [`RowWriter`] and a line in [`FORMATS`]: the collector's route
/// (`/api/export.<name>`), its pages' links and `storcert collect export
/// --format` are all made from that list.
pub struct Format {
    /// The value of `--format`, and the route's and file's extension.
    pub name: &'static str,
    /// What a link to it says.
    pub title: &'static str,
    /// Its media type over HTTP.
    pub mime: &'static str,
    /// Begins a table on `out`. `act_keys` are the ACT groups any row may
    /// have ([`ActLoad::key`]), for a format whose columns are fixed up
    /// front.
    pub begin: Begin,
}

/// How a format begins a table on a writer.
pub type Begin = for<'a> fn(
    Box<dyn std::io::Write + 'a>,
    Vec<String>,
) -> std::io::Result<Box<dyn RowWriter + 'a>>;

/// What a workload adds to a drive's row: its fields (part of the
/// schema: a field of `DriveRow`), filled from the bundle's contents, and
/// its columns among the fixed ones of a table whose columns are fixed
/// (CSV). A workload's columns are its file here and its line in
/// [`WORKLOADS`].
pub trait WorkloadColumns: Sync {
    /// Fills its fields of `row`, the row of drive `d`.
    fn fill(&self, row: &mut DriveRow, parts: &Parts, d: &DriveVerdict);
    /// Its columns' names, after the drive's verdict and reasons.
    fn columns(&self) -> &'static [&'static str];
    /// Its cells of `row`, one a column, as CSV writes them.
    fn cells(&self, row: &DriveRow) -> Vec<String>;
}

/// Every workload's columns, in the tables' order.
pub static WORKLOADS: &[&dyn WorkloadColumns] = &[&act::Act, &stream::Stream];

/// Every export format, the first the default.
pub static FORMATS: &[Format] = &[csv::FORMAT, jsonl::FORMAT];

/// The format called `name`, if there is one.
pub fn format(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}

/// Which bundle a row came from, as the collector received it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Received {
    pub sha256: String,
    /// The bundle's (signed) name.
    pub name: String,
    pub received_at: String,
    pub signed_at: String,
}

/// One drive in one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DriveRow {
    pub schema_version: u32,
    pub bundle_sha256: String,
    pub bundle: String,
    pub received_at: String,
    pub signed_at: String,
    /// The run's verdict (every drive and test of the bundle).
    pub run_verdict: Verdict,
    /// The delivery/lot tag the run was given, if any.
    pub tag: Option<String>,
    pub profile: Option<String>,
    pub machine_vendor: Option<String>,
    pub machine_product: Option<String>,
    /// The machine's DMI serial.
    pub machine_serial: Option<String>,
    pub hostname: Option<String>,
    /// The path the run tested ("/dev/nvme0n1").
    pub device: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub firmware: Option<String>,
    pub capacity_bytes: Option<u64>,
    /// "nvme", "sata", "sas", "raid", "virtio", …
    pub transport: Option<String>,
    /// The controller it hangs off: a RAID controller's product name, else
    /// the PCI device's name, else its address.
    pub controller: Option<String>,
    pub controller_firmware: Option<String>,
    /// Where it sits: a RAID controller's "enclosure:slot", else the SCSI
    /// address "host:channel:target:lun".
    pub slot: Option<String>,
    /// The drive's own verdict in this run.
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    /// The highest ACT load (Nx) it passed in this run, as the bundle's
    /// summary says it (any passing storage run or search confirmation;
    /// the `act` entries say load by load).
    pub act_load_passed: Option<f64>,
    /// Per ACT load (and spare-area setting) run: the worst hour's
    /// figures. Sorted by spare area, then load.
    pub act: Vec<ActLoad>,
    /// Streaming bandwidth of the sequential write and read passes,
    /// bytes/s (the lowest, where several stream runs tested the drive).
    pub stream_write_bytes_per_s: Option<f64>,
    pub stream_read_bytes_per_s: Option<f64>,
    /// Health before and after the run's tests.
    pub smart_before: Option<Smart>,
    pub smart_after: Option<Smart>,
}

/// The worst judged hour of the ACT runs of one drive at one load.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ActLoad {
    pub load: f64,
    /// storcert's provisioned spare area, %, where the run was on a spare
    /// partition; none on the whole drive.
    pub spare_pct: Option<f64>,
    /// % of reads over 1, 8 and 64 ms in the worst hour (none where no
    /// hour was judged: a log with no reads).
    pub pct_over_1ms: Option<f64>,
    pub pct_over_8ms: Option<f64>,
    pub pct_over_64ms: Option<f64>,
    pub pass: bool,
    /// How long the longest run at this load ran, s.
    pub seconds: u64,
}

impl ActLoad {
    /// The name this load's columns carry: "act_12x", "act_1.5x_op20".
    /// The spare area is named to the whole percent: the share a profile
    /// asked for, whatever rounding to the drive's sectors made of it.
    pub fn key(&self) -> String {
        let load = crate::compare::load_text(self.load);
        match self.spare_pct {
            None => format!("act_{load}"),
            Some(s) => format!("act_{load}_op{}", s.round() as i64),
        }
    }
}

/// The health figures a fleet compares (SMART / NVMe health log).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Smart {
    /// "passed", "failed" or "unknown", as the drive's health log says.
    pub overall: Option<String>,
    pub temperature_c: Option<i32>,
    pub power_on_hours: Option<u64>,
    /// NVMe media and data integrity errors; SAS/RAID media errors.
    pub media_errors: Option<u64>,
    /// ATA reallocated sectors (attribute 5).
    pub reallocated_sectors: Option<u64>,
    /// ATA current pending sectors (attribute 197).
    pub pending_sectors: Option<u64>,
    /// NVMe percentage used.
    pub percentage_used: Option<u8>,
    /// NVMe available spare, %.
    pub available_spare_pct: Option<u8>,
    pub host_bytes_written: Option<u64>,
}

fn saturate(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

impl Smart {
    fn of(d: &DriveHealth) -> Smart {
        let mut s = Smart {
            host_bytes_written: d.host_bytes_written.map(saturate),
            media_errors: d.controller_counters.map(|c| u64::from(c.media_errors)),
            ..Smart::default()
        };
        if let Some(h) = &d.health {
            s.add_health(h);
        }
        s
    }

    fn add_health(&mut self, h: &Health) {
        self.overall = Some(h.overall.clone());
        self.temperature_c = h.temperature_c;
        self.power_on_hours = h.power_on_hours;
        if let Some(n) = &h.nvme {
            self.media_errors = Some(saturate(n.media_errors));
            self.percentage_used = Some(n.percentage_used);
            self.available_spare_pct = Some(n.available_spare_pct);
        }
        if let Some(a) = &h.ata {
            self.reallocated_sectors = a.reallocated_sectors;
            self.pending_sectors = a.pending_sectors;
        }
    }
}

/// "/dev/sdb" → "sdb".
fn kernel_name(device: &str) -> &str {
    device.rsplit('/').next().unwrap_or(device)
}

fn same(a: &Option<String>, b: &Option<String>) -> bool {
    match (a.as_deref().map(str::trim), b.as_deref().map(str::trim)) {
        (Some(a), Some(b)) => !a.is_empty() && a == b,
        _ => false,
    }
}

/// What a bundle holds, found once for all its drives.
pub struct Parts<'a> {
    inventory: Option<&'a Inventory>,
    notes: Option<&'a storcert_results::run::RunNotes>,
    before: Option<&'a Snapshot>,
    after: Option<&'a Snapshot>,
    streams: Vec<&'a StreamResult>,
    /// The drive each tested path is on (a partition storcert made is on
    /// its disk), from the run's targets.
    disks: std::collections::BTreeMap<String, String>,
    act: crate::compare::Comparison,
}

impl<'a> Parts<'a> {
    fn of(source: &str, c: &'a Contents) -> Parts<'a> {
        let mut p = Parts {
            inventory: None,
            notes: None,
            before: None,
            after: None,
            streams: Vec::new(),
            disks: std::collections::BTreeMap::new(),
            act: crate::compare::compare(&[(source.to_string(), c)]),
        };
        for item in &c.items {
            match &item.artefact {
                Artefact::Inventory(i) => p.inventory = Some(i),
                Artefact::RunNotes(n) => p.notes = Some(n),
                // The first "before" and the last "after" span the run.
                Artefact::HealthSnapshot(s) => match s.moment {
                    Some(Moment::Before) => p.before = p.before.or(Some(s)),
                    Some(Moment::After) => p.after = Some(s),
                    None => {}
                },
                Artefact::Stream(s) => p.streams.push(s),
                Artefact::Targets(t) => {
                    for t in &t.targets {
                        p.disks.insert(t.path.clone(), t.disk.clone());
                    }
                }
                _ => {}
            }
        }
        p
    }
}

/// The drive's entry in a health snapshot: by serial where both have one;
/// by its kernel name only where that entry or the drive has no serial (a
/// name the kernel gave another drive since is not this drive's).
fn health_of<'a>(
    s: Option<&'a Snapshot>,
    device: &str,
    serial: &Option<String>,
) -> Option<&'a DriveHealth> {
    let s = s?;
    let known = |x: &Option<String>| x.as_deref().is_some_and(|x| !x.trim().is_empty());
    s.drives
        .iter()
        .find(|d| same(&d.serial, serial))
        .or_else(|| {
            s.drives.iter().find(|d| {
                kernel_name(&d.name) == kernel_name(device) && !(known(&d.serial) && known(serial))
            })
        })
}

/// The inventory's disk of `device` (by path, else serial).
fn disk_of<'a>(inv: &'a Inventory, device: &str, serial: &Option<String>) -> Option<&'a Disk> {
    inv.disks
        .iter()
        .find(|d| d.dev_path == device)
        .or_else(|| inv.disks.iter().find(|d| same(&d.serial, serial)))
}

/// The controller, its firmware and the slot of a drive.
fn place(
    inv: &Inventory,
    disk: Option<&Disk>,
    serial: &Option<String>,
    wwn: &Option<String>,
) -> (Option<String>, Option<String>, Option<String>) {
    // A physical drive behind a RAID controller, by its serial or WWN.
    for c in &inv.controllers {
        if let Some(r) = &c.raid {
            if let Some(pd) = r
                .physical_drives
                .iter()
                .find(|pd| same(&pd.serial, serial) || same(&pd.wwn, wwn))
            {
                return (
                    Some(r.product.clone()),
                    Some(r.firmware.clone()).filter(|f| !f.is_empty()),
                    Some(format!("{}:{}", pd.enclosure, pd.slot)),
                );
            }
        }
    }
    let Some(disk) = disk else {
        return (None, None, None);
    };
    let slot = disk.scsi_address.clone();
    let Some(c) = inv.controllers.iter().find(|c| {
        c.disks.iter().any(|d| d == &disk.name)
            || disk.controller.as_deref() == Some(c.pci_address.as_str())
    }) else {
        return (disk.controller.clone(), None, slot);
    };
    let name = c
        .raid
        .as_ref()
        .map(|r| r.product.clone())
        .or_else(|| c.device_name.clone())
        .unwrap_or_else(|| c.pci_address.clone());
    let firmware = c
        .raid
        .as_ref()
        .map(|r| r.firmware.clone())
        .filter(|f| !f.is_empty())
        .or_else(|| c.firmware.clone());
    (Some(name), firmware, slot)
}

/// The most rows one bundle gives (a summary is anyone's signed claim:
/// matching each drive against the inventory costs drives × disks).
pub const MAX_ROWS: usize = 4096;

/// The characters of one identity field of a row (a name, a serial, a
/// tag). The bundle's fields are copied into each of its rows: a 7 KB
/// bundle of 4,096 drives whose tag and profile held 40,000 characters
/// each took the collector to 358 MiB and its index to 1.6 GB.
pub const MAX_FIELD_CHARS: usize = 256;

fn clip(s: &str) -> String {
    storcert_util::text::cut(s, MAX_FIELD_CHARS).into_owned()
}

/// The rows of one verified bundle: one per drive its summary judged (at
/// most `MAX_ROWS`).
pub fn rows(received: &Received, summary: &Summary, contents: &Contents) -> Vec<DriveRow> {
    let parts = Parts::of(&received.sha256, contents);
    let m = &summary.machine;
    summary
        .drives
        .iter()
        .take(MAX_ROWS)
        .map(|d| {
            let disk = parts
                .inventory
                .and_then(|inv| disk_of(inv, &d.device, &d.serial));
            let (controller, controller_firmware, slot) = match parts.inventory {
                Some(inv) => place(inv, disk, &d.serial, &d.wwn),
                None => (None, None, None),
            };
            let mut row = DriveRow {
                schema_version: SCHEMA_VERSION,
                bundle_sha256: received.sha256.clone(),
                bundle: clip(&received.name),
                received_at: clip(&received.received_at),
                signed_at: clip(&received.signed_at),
                run_verdict: summary.verdict,
                tag: parts.notes.and_then(|n| n.tag.as_deref().map(clip)),
                profile: parts.notes.map(|n| clip(&n.profile)),
                machine_vendor: m.vendor.as_deref().map(clip),
                machine_product: m.product.as_deref().map(clip),
                machine_serial: m.serial.as_deref().map(clip),
                hostname: m.hostname.as_deref().map(clip),
                device: clip(&d.device),
                model: d.model.as_deref().map(clip),
                serial: d.serial.as_deref().map(clip),
                wwn: d.wwn.as_deref().map(clip),
                firmware: d.firmware.as_deref().map(clip),
                capacity_bytes: disk.map(|k| k.capacity_bytes).filter(|c| *c > 0),
                transport: disk.and_then(|k| {
                    serde_json::to_value(k.transport)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                }),
                controller: controller.as_deref().map(clip),
                controller_firmware: controller_firmware.as_deref().map(clip),
                slot: slot.as_deref().map(clip),
                verdict: d.verdict,
                reasons: d.reasons.clone(),
                smart_before: health_of(parts.before, &d.device, &d.serial).map(Smart::of),
                smart_after: health_of(parts.after, &d.device, &d.serial).map(Smart::of),
                ..DriveRow::default()
            };
            for w in WORKLOADS {
                w.fill(&mut row, &parts, d);
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use storcert_judge::summary::{DriveVerdict, Summary};

    fn artefact(kind: &str, body: serde_json::Value) -> Vec<u8> {
        let mut v = body;
        v["artefact"] = kind.into();
        v["schema_version"] = 1.into();
        serde_json::to_vec(&v).unwrap()
    }

    fn health(name: &str, serial: &str, media_errors: u64) -> serde_json::Value {
        serde_json::json!({
            "name": name, "model": "M", "serial": serial, "wwn": null,
            "capacity_bytes": 1, "host_bytes_written": null, "host_bytes_written_source": null,
            "health": {"overall": "passed", "source": "t", "temperature_c": 40,
                "power_on_hours": 1, "ata": null, "scsi": null,
                "nvme": {"critical_warning": 0, "critical_warnings": [],
                    "available_spare_pct": 100, "available_spare_threshold_pct": 10,
                    "percentage_used": 0, "data_units_read": 0, "data_units_written": 0,
                    "bytes_written": 0, "power_cycles": 0, "unsafe_shutdowns": 0,
                    "media_errors": media_errors, "error_log_entries": 0,
                    "volatile_write_cache_present": true, "media_bytes_written": null}}
        })
    }

    fn stream_job(target: usize, bw: f64) -> serde_json::Value {
        serde_json::json!({"name": "j", "target": target, "offset": 0, "length": 1, "bytes": 1,
            "ios": 1, "runtime_ms": 1, "runtime_ns": 1, "bw_bytes": bw, "iops": 1.0,
            "clat": {"n": 0, "min_ns": 0, "max_ns": 0, "mean_ns": 0.0, "stddev_ns": 0.0,
                     "percentiles": []},
            "bw_per_sec": [], "error": null})
    }

    #[test]
    fn every_format_is_found_by_its_name_and_writes_each_row_and_its_waiver() {
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len(), "two formats share a name");
        assert!(format("nope").is_none());
        let row = DriveRow {
            schema_version: SCHEMA_VERSION,
            device: "/dev/sdq".into(),
            serial: Some("S3RIAL-1".into()),
            act: vec![ActLoad {
                load: 12.0,
                pct_over_1ms: Some(0.5),
                ..ActLoad::default()
            }],
            ..DriveRow::default()
        };
        for f in FORMATS {
            // The route and file name take it as an extension.
            assert!(f
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
            assert!(std::ptr::eq(format(f.name).unwrap(), f));
            let mut out = Vec::new();
            let mut w = (f.begin)(Box::new(&mut out), vec![row.act[0].key()]).unwrap();
            w.row(&row, None).unwrap();
            w.row(&row, Some("RMA 4411")).unwrap();
            w.finish().unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.matches("S3RIAL-1").count(), 2, "{}: {text}", f.name);
            assert_eq!(text.matches("RMA 4411").count(), 1, "{}: {text}", f.name);
            assert!(text.contains("0.5"), "{}: {text}", f.name);
        }
    }

    #[test]
    fn figures_follow_the_drive_onto_its_spare_partition_and_health_by_serial() {
        let mut files = BTreeMap::new();
        files.insert(
            "targets.json".to_string(),
            artefact(
                "targets",
                serde_json::json!({"targets": [
                    {"path": "/dev/sdb1", "disk": "/dev/sdb", "label": "sdb", "serial": "A",
                     "model": "M", "file_size": 0},
                    {"path": "/dev/sdc", "disk": "/dev/sdc", "label": "sdc", "serial": "B",
                     "model": "M", "file_size": 0}]}),
            ),
        );
        let pass = |p: &str, bws: [f64; 2]| {
            serde_json::json!({"pass": p, "jobs": [stream_job(0, bws[0]), stream_job(1, bws[1])],
                "group": {"bytes": 2, "aggr_bw_bytes": 1.0, "min_bw_bytes": 1.0,
                          "max_bw_bytes": 1.0, "min_runtime_ms": 1, "max_runtime_ms": 1},
                "disks": [], "verify": null, "bw_timeline": [], "elapsed_ms": 1, "cpu": null,
                "interrupted": false})
        };
        files.insert(
            "stream.json".to_string(),
            artefact(
                "stream",
                serde_json::json!({"seed": 1, "storcert_version": "x", "engine": "sync",
                    "bs": 1, "qd": 1, "jobs_per_target": 1, "direct": true,
                    "targets": [
                        {"path": "/dev/sdb1", "device": "sdb1", "size_bytes": 1,
                         "tested_bytes": 1, "logical_sector_size": 512},
                        {"path": "/dev/sdc", "device": "sdc", "size_bytes": 1,
                         "tested_bytes": 1, "logical_sector_size": 512}],
                    "passes": [pass("write", [1.0e9, 2.0e9]), pass("read", [3.0e9, 0.0])]}),
            ),
        );
        // After the run the kernel named the drives the other way round:
        // health goes by serial, not by the name.
        files.insert(
            "health-before.json".to_string(),
            artefact(
                "health-snapshot",
                serde_json::json!({"taken_at": 1, "drives": [health("sdb", "A", 0), health("sdc", "B", 5)]}),
            ),
        );
        // The snapshot after says so itself (any name); the one before is
        // an older storcert's, known by its name alone.
        files.insert(
            "later.json".to_string(),
            artefact(
                "health-snapshot",
                serde_json::json!({"taken_at": 2, "moment": "after",
                    "drives": [health("sdb", "B", 6), health("sdc", "A", 1)]}),
            ),
        );
        let c = Contents::read(&files);
        assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
        let drive = |device: &str, serial: &str| DriveVerdict {
            device: device.into(),
            serial: Some(serial.into()),
            verdict: Verdict::Pass,
            ..DriveVerdict::default()
        };
        let summary = Summary {
            drives: vec![drive("/dev/sdb", "A"), drive("/dev/sdc", "B")],
            ..Summary::default()
        };
        let rows = rows(&Received::default(), &summary, &c);
        let (a, b) = (&rows[0], &rows[1]);
        // The partition's bandwidth is the drive's.
        assert_eq!(a.stream_write_bytes_per_s, Some(1.0e9));
        assert_eq!(a.stream_read_bytes_per_s, Some(3.0e9));
        // A pass that moved nothing is a figure (0), not a gap.
        assert_eq!(b.stream_read_bytes_per_s, Some(0.0));
        let errors = |r: &DriveRow| {
            (
                r.smart_before.as_ref().and_then(|s| s.media_errors),
                r.smart_after.as_ref().and_then(|s| s.media_errors),
            )
        };
        assert_eq!(errors(a), (Some(0), Some(1)));
        assert_eq!(errors(b), (Some(5), Some(6)));
        // A drive whose serial no snapshot has: another drive under its old
        // name is not it; a name without a serial on either side is.
        let snap: Snapshot = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "taken_at": 1, "drives": [health("sdd", "D", 9)]
        }))
        .unwrap();
        assert!(health_of(Some(&snap), "/dev/sdd", &Some("C".into())).is_none());
        assert!(health_of(Some(&snap), "/dev/sdd", &None).is_some());
    }

    #[test]
    fn a_bundle_field_copied_into_every_row_is_clipped() {
        let long = "t".repeat(40_000);
        let mut files = BTreeMap::new();
        files.insert(
            "run-notes.json".to_string(),
            artefact(
                "run-notes",
                serde_json::json!({"profile": long, "source": "s", "tag": long,
                                   "starts": 1, "notes": [], "stages": []}),
            ),
        );
        let c = Contents::read(&files);
        assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
        let summary = Summary {
            machine: storcert_judge::summary::Machine {
                hostname: Some(long.clone()),
                ..Default::default()
            },
            drives: vec![
                DriveVerdict {
                    device: long.clone(),
                    serial: Some(long.clone()),
                    ..DriveVerdict::default()
                };
                100
            ],
            ..Summary::default()
        };
        let rows = rows(&Received::default(), &summary, &c);
        assert_eq!(rows.len(), 100);
        let json = serde_json::to_string(&rows).unwrap();
        assert!(json.len() < 100 * 4 * 2000, "{} bytes", json.len());
        let r = &rows[0];
        for field in [
            r.tag.as_deref(),
            r.profile.as_deref(),
            r.hostname.as_deref(),
            r.serial.as_deref(),
            Some(r.device.as_str()),
        ] {
            let field = field.unwrap();
            assert_eq!(field.chars().count(), MAX_FIELD_CHARS + 1, "{field}");
            assert!(field.ends_with('…'));
        }
    }
}
