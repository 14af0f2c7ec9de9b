//! Runs side by side: what a qualification engineer asks of several ACT
//! runs of the same drive. One table per drive and spare-area setting
//! across loads, in the layout of ACT's published write-ups (load, the
//! worst hour's % over 1 / 8 / 64 ms, verdict), with the highest passing
//! load; and one table per drive that was run with more than one spare
//! area, the settings side by side.
//!
//! Every figure comes from a log judged afresh (`Contents` judges each ACT
//! log it holds), never from a saved claim, so a comparison is as right as
//! the verdicts it is built from. Runs are matched to a drive by its serial
//! (from the run's targets or inventory), else by its device path; a run
//! on a partition storcert provisioned is matched to the drive under it,
//! with that partition's spare area (by the partition the kernel listed,
//! or, in a record made before the kernel listed it, by the kernel's name
//! for the drive's first partition).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use storcert_judge::contents::Contents;
use storcert_results::Artefact;

pub const SCHEMA_VERSION: u32 = 1;

/// A drive's spare area in one run: storcert's provisioned share and the
/// factory spare the policy named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpareArea {
    pub spare_pct: f64,
    pub factory_spare_pct: Option<f64>,
    pub total_spare_pct: Option<f64>,
}

/// "no spare partition", "12% spare (total 19%)".
pub fn spare_text(s: Option<&SpareArea>) -> String {
    match s {
        None => "no spare partition".into(),
        Some(s) => format!(
            "{}% spare{}",
            trim_number(s.spare_pct),
            s.total_spare_pct
                .map(|t| format!(" (total {}%)", trim_number(t)))
                .unwrap_or_default()
        ),
    }
}

/// A number without trailing zeros: 12, 12.5, 1.25.
pub fn trim_number(x: f64) -> String {
    format!("{x:.2}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// "1.5x".
pub fn load_text(load: f64) -> String {
    format!("{}x", trim_number(load))
}

/// A read/write mix other than ACT's 1,000 writes per 2,000 reads, named
/// by its rates at 1x ("Nx = N × (2000 reads + 166.67 writes/s)"): loads
/// compare, and a highest passing load counts, only within one mix. None
/// for ACT's own mix, or a log that does not say.
pub fn mix_label(writes_per_read: Option<f64>) -> Option<String> {
    let w = writes_per_read.filter(|_| !storcert_results::act::standard_mix(writes_per_read))?;
    Some(format!(
        "Nx = N × (2000 reads + {} writes/s)",
        trim_number(w * 2000.0)
    ))
}

/// "storage", or "storage at Nx = N × (…)" for another mix.
pub fn workload_text(workload: &str, mix: Option<&str>) -> String {
    match mix {
        Some(m) => format!("{workload} at {m}"),
        None => workload.to_string(),
    }
}

/// One judged ACT log.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The run (results folder or bundle) it came from.
    pub source: String,
    /// The log's path in that run.
    pub log: String,
    pub load: f64,
    /// How long the run ran (its last report), s.
    pub seconds: u64,
    /// The worst judged hour's % of reads over 1, 8 and 64 ms (empty when
    /// no hour was judged: a log with no reads).
    pub worst_pct: Vec<f64>,
    pub pass: bool,
    /// Why it failed, as its verdict says.
    pub why: Option<String>,
    /// act_latency.py's avg and max rows over every threshold of the
    /// reads' table, for the write-ups' layout (none for a drive's share
    /// of a run over several).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<Columns>,
}

/// The reads' table's thresholds (ms, ACT's: 1, 2, 4 … 64) and its avg
/// and max rows.
#[derive(Debug, Clone, Serialize)]
pub struct Columns {
    pub thresholds_ms: Vec<f64>,
    pub avg: Vec<f64>,
    pub max: Vec<f64>,
}

impl Columns {
    fn of(a: &storcert_results::act::Analysis) -> Option<Columns> {
        let h = a.histograms.first()?;
        // A microsecond log's columns start at the 1,024 us edge: ACT's
        // "1 ms" there, as its rule reads it.
        let micro = a.scale.contains("us") || a.scale.contains("micro");
        let ms = |t: u64| if micro { t as f64 / 1024.0 } else { t as f64 };
        Some(Columns {
            thresholds_ms: h.thresholds.iter().map(|&t| ms(t)).collect(),
            avg: h.avg.clone(),
            max: h.max.clone(),
        })
    }
}

/// One drive at one spare-area setting and read/write mix, across loads.
#[derive(Debug, Clone, Serialize)]
pub struct LoadTable {
    /// The drive: "serial S1" where known, else its device path.
    pub drive: String,
    /// Its model, where the run named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The device paths the runs used.
    pub devices: Vec<String>,
    /// "storage" or "index".
    pub workload: String,
    /// A read/write mix other than ACT's (`mix_label`); none for ACT's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    pub spare: Option<SpareArea>,
    /// Sorted by load.
    pub rows: Vec<Point>,
    /// The highest load at which every run passed, with every run at each
    /// lower load passing too.
    pub highest_passing_load: Option<f64>,
    /// Results that do not fit one answer (a pass above a failure).
    pub notes: Vec<String>,
}

impl LoadTable {
    /// "serial S1 (/dev/sdb1)"; the path alone where it is the drive's name.
    pub fn drive_and_devices(&self) -> String {
        let devices = self.devices.join(", ");
        if devices == self.drive {
            devices
        } else {
            format!("{} ({devices})", self.drive)
        }
    }
}

/// One load of a spare-area table: a cell per setting, none where that
/// setting was not run at this load.
#[derive(Debug, Clone, Serialize)]
pub struct SpareRow {
    pub load: f64,
    pub cells: Vec<Option<Cell>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The worst of the runs at this load (empty: none judged an hour).
    pub worst_pct: Vec<f64>,
    pub pass: bool,
}

/// The same drive with and without (or with other) spare area.
#[derive(Debug, Clone, Serialize)]
pub struct SpareTable {
    pub drive: String,
    pub workload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    /// The columns, without spare area first, then by spare.
    pub settings: Vec<Option<SpareArea>>,
    pub rows: Vec<SpareRow>,
    /// Per setting.
    pub highest_passing_load: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub sources: Vec<String>,
    pub loads: Vec<LoadTable>,
    pub spare: Vec<SpareTable>,
    /// ACT logs left out, and why (no load in the log).
    pub left_out: Vec<String>,
}

/// What a run records of its drives: serials by device path, the drive a
/// test path is on, and the spare partitions it provisioned.
struct Drives {
    serials: BTreeMap<String, String>,
    /// Models by device path, as the inventory or the targets name them.
    models: BTreeMap<String, String>,
    /// Test path (drive or partition) → the drive.
    disks: BTreeMap<String, String>,
    /// By partition: a bundle may hold thousands, and every device of
    /// every log is looked up.
    spares: HashMap<String, Vec<ProvisionedSpare>>,
}

/// A spare partition a run provisioned: it applies to the logs under the
/// same folder (a phase's `phase-N/`, or the whole run).
struct ProvisionedSpare {
    folder: String,
    disk: String,
    spare: SpareArea,
}

/// "/dev/sdb1" for the kernel's "sdb1" (as provisioning records it).
fn dev_path(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/dev/{name}")
    }
}

/// The first partition of the disk at `disk` by the kernel's naming
/// ("/dev/sdb" → "/dev/sdb1", "/dev/nvme0n1" → "/dev/nvme0n1p1"); None
/// for a path that is not a disk under /dev.
fn first_partition(disk: &str) -> Option<String> {
    let name = disk.strip_prefix("/dev/")?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some(if name.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{disk}p1")
    } else {
        format!("{disk}1")
    })
}

fn drives(c: &Contents) -> Drives {
    let mut d = Drives {
        serials: BTreeMap::new(),
        models: BTreeMap::new(),
        disks: BTreeMap::new(),
        spares: HashMap::new(),
    };
    for item in &c.items {
        match &item.artefact {
            Artefact::Inventory(inv) => {
                for disk in &inv.disks {
                    if let Some(s) = disk.serial.as_ref().filter(|s| !s.trim().is_empty()) {
                        d.serials
                            .entry(disk.dev_path.clone())
                            .or_insert_with(|| s.trim().to_string());
                    }
                    if let Some(m) = disk.model.as_ref().filter(|m| !m.trim().is_empty()) {
                        d.models
                            .entry(disk.dev_path.clone())
                            .or_insert_with(|| m.trim().to_string());
                    }
                }
            }
            Artefact::Targets(t) => {
                for t in &t.targets {
                    if let Some(s) = t.serial.as_ref().filter(|s| !s.trim().is_empty()) {
                        d.serials.insert(t.disk.clone(), s.trim().to_string());
                    }
                    if let Some(m) = t.model.as_ref().filter(|m| !m.trim().is_empty()) {
                        d.models.insert(t.disk.clone(), m.trim().to_string());
                    }
                    d.disks.insert(t.path.clone(), t.disk.clone());
                    d.disks.insert(t.disk.clone(), t.disk.clone());
                }
            }
            Artefact::Provision(p) => {
                // A record whose partition the kernel listed only after
                // provisioning looked (an older run's) names the
                // partition the kernel would: storcert's is the first.
                let partition = match &p.kernel {
                    Some(k) => Some(dev_path(&k.partition)),
                    None => first_partition(&p.device),
                };
                if let Some(partition) = partition {
                    let folder = item
                        .path
                        .find("provision/")
                        .map_or("", |i| &item.path[..i])
                        .to_string();
                    d.spares
                        .entry(partition)
                        .or_default()
                        .push(ProvisionedSpare {
                            folder,
                            disk: p.device.clone(),
                            spare: SpareArea {
                                spare_pct: p.spare_pct,
                                factory_spare_pct: p.factory_spare_pct,
                                total_spare_pct: p.total_spare_pct,
                            },
                        });
                }
            }
            _ => {}
        }
    }
    d
}

impl Drives {
    /// The drive `device` is (or is on), and its spare area when `device`
    /// is a partition provisioned in the folder of the log at `log`.
    fn of(&self, log: &str, device: &str) -> (String, Option<SpareArea>) {
        let (disk, spare) = self.disk_of(log, device);
        (drive_name(&self.serials, disk), spare)
    }

    /// The drive's model, where the run named it.
    fn model(&self, log: &str, device: &str) -> Option<String> {
        self.models.get(self.disk_of(log, device).0).cloned()
    }

    /// The disk `device` is (or is on), and its spare area.
    fn disk_of<'a>(&'a self, log: &str, device: &'a str) -> (&'a str, Option<SpareArea>) {
        // A drive the run's targets list as a whole disk is no partition,
        // whatever a provisioning record claims.
        if self.disks.get(device).is_some_and(|d| d == device) {
            return (device, None);
        }
        let spare = self
            .spares
            .get(device)
            .into_iter()
            .flatten()
            .filter(|s| log.starts_with(&s.folder))
            .max_by_key(|s| s.folder.len());
        if let Some(s) = spare {
            return (&s.disk, Some(s.spare.clone()));
        }
        (self.disks.get(device).map_or(device, String::as_str), None)
    }
}

fn drive_name(serials: &BTreeMap<String, String>, disk: &str) -> String {
    match serials.get(disk) {
        Some(s) => format!("serial {s}"),
        None => disk.to_string(),
    }
}

/// The highest load passed with every run at it and below passing, and a
/// note for each pass above the first failure.
fn highest_passing(points: &[(f64, bool)]) -> (Option<f64>, Vec<String>) {
    let mut by_load: BTreeMap<u64, (f64, bool)> = BTreeMap::new();
    for &(load, pass) in points {
        let e = by_load.entry(load.to_bits()).or_insert((load, true));
        e.1 &= pass;
    }
    let mut loads: Vec<(f64, bool)> = by_load.into_values().collect();
    loads.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut highest = None;
    let mut first_failure = None;
    let mut notes = Vec::new();
    for (load, pass) in loads {
        match (pass, first_failure) {
            (true, None) => highest = Some(load),
            (false, None) => first_failure = Some(load),
            (true, Some(f)) => notes.push(format!(
                "{} passed above a failing {}: the highest passing load counts up to the \
                 first failure only; run both again",
                load_text(load),
                load_text(f)
            )),
            (false, Some(_)) => {}
        }
    }
    (highest, notes)
}

fn spare_key(s: &Option<SpareArea>) -> (bool, u64) {
    match s {
        None => (false, 0),
        Some(s) => (true, (s.spare_pct * 100.0).round() as u64),
    }
}

/// The comparison of the ACT runs in `runs` (a name and its contents each).
pub fn compare(runs: &[(String, &Contents)]) -> Comparison {
    let mut comparer = Comparer::default();
    for (source, c) in runs {
        comparer.add(source, c);
    }
    comparer.finish()
}

/// Group key → devices, spare, points, model.
type Group = (Vec<String>, Option<SpareArea>, Vec<Point>, Option<String>);

/// A comparison made a run at a time: what it keeps of each is its points,
/// so a reader can let each run's contents go before reading the next.
#[derive(Default)]
pub struct Comparer {
    sources: Vec<String>,
    groups: BTreeMap<GroupKey, Group>,
    /// Each group's devices, to look up: a bundle's logs may name
    /// 130,000, and a scan of the group's list for each is minutes.
    named: HashMap<GroupKey, HashSet<String>>,
    left_out: Vec<String>,
}

/// A group of points: drive, workload, read/write mix, spare area.
type GroupKey = (String, String, Option<String>, (bool, u64));

impl Comparer {
    /// The ACT runs of one source.
    pub fn add(&mut self, source: &str, c: &Contents) {
        let (groups, named, left_out) = (&mut self.groups, &mut self.named, &mut self.left_out);
        let source = source.to_string();
        self.sources.push(source.clone());
        let known = drives(c);
        let (owned, confirmations) = search_logs(c);
        let mut trials = 0;
        for (log, a) in c.analyses() {
            // A search's trials are shorter runs that find a load; its
            // confirmation, at full length, is the one that qualifies it.
            if storcert_judge::summary::is_trial_log(&log)
                && owned
                    .iter()
                    .any(|o| storcert_judge::summary::same_log(&log, o))
                && !confirmations
                    .iter()
                    .any(|c| storcert_judge::summary::same_log(&log, c))
            {
                trials += 1;
                continue;
            }
            if a.engine.as_deref() == Some(storcert_results::act::NULL_ENGINE) {
                left_out.push(format!(
                    "{source}: {log}: made by the null engine, which measures no drive"
                ));
                continue;
            }
            let Some(load) = a.load.filter(|l| l.is_finite() && *l > 0.0) else {
                left_out.push(format!("{source}: {log}: the log names no read rate"));
                continue;
            };
            let seconds = a
                .analysis
                .histograms
                .first()
                .and_then(|h| h.slices.last())
                .map_or(0, |s| s.end_s);
            // A run over several drives: a point per drive, by its own
            // share; a run on one drive: its verdict.
            let shares: Vec<(
                Vec<String>,
                &storcert_results::act::ActVerdict,
                storcert_results::verdict::Judgement,
            )> = if a.per_device.is_empty() {
                vec![(a.devices.clone(), &a.analysis.verdict, a.judgement())]
            } else {
                a.per_device
                    .iter()
                    .map(|d| (vec![d.device.clone()], &d.verdict, a.share_judgement(d)))
                    .collect()
            };
            let columns = a
                .per_device
                .is_empty()
                .then(|| Columns::of(&a.analysis))
                .flatten();
            for (devices, verdict, judgement) in shares {
                let (drive, spare) = drive_of(&known, &log, &devices);
                let pass = judgement.verdict == storcert_results::Verdict::Pass;
                let key = (
                    drive,
                    a.workload.clone(),
                    mix_label(a.writes_per_read),
                    spare_key(&spare),
                );
                let model = match devices.as_slice() {
                    [one] => known.model(&log, one),
                    _ => None,
                };
                let g = groups
                    .entry(key.clone())
                    .or_insert_with(|| (Vec::new(), spare.clone(), Vec::new(), None));
                if g.3.is_none() {
                    g.3 = model;
                }
                // The key once a group, not once a device: a drive's name
                // may be 128 long paths joined.
                let seen = named.entry(key).or_default();
                for d in &devices {
                    if seen.insert(d.clone()) {
                        g.0.push(d.clone());
                    }
                }
                g.2.push(Point {
                    source: source.clone(),
                    log: log.clone(),
                    load,
                    seconds,
                    worst_pct: verdict.worst_pct.clone(),
                    pass,
                    why: (!pass).then_some(judgement.detail),
                    columns: columns.clone(),
                });
            }
        }
        if trials > 0 {
            left_out.push(format!(
                "{source}: {trials} search trial log(s): shorter runs that find a load, not \
                 qualify it (a search's confirmation is shown)"
            ));
        }
    }

    /// The comparison of every run added.
    pub fn finish(self) -> Comparison {
        let mut loads = Vec::new();
        for ((drive, workload, mix, _), (devices, spare, mut rows, model)) in self.groups {
            rows.sort_by(|a, b| {
                a.load
                    .total_cmp(&b.load)
                    .then_with(|| a.source.cmp(&b.source))
                    .then_with(|| a.log.cmp(&b.log))
            });
            let (highest, notes) =
                highest_passing(&rows.iter().map(|p| (p.load, p.pass)).collect::<Vec<_>>());
            loads.push(LoadTable {
                drive,
                model,
                devices,
                workload,
                mix,
                spare,
                rows,
                highest_passing_load: highest,
                notes,
            });
        }
        let spare = spare_tables(&loads);
        Comparison {
            schema_version: SCHEMA_VERSION,
            sources: self.sources,
            loads,
            spare,
            left_out: self.left_out,
        }
    }
}

/// The logs of searches' trials, and of their confirmation runs.
fn search_logs(c: &Contents) -> (Vec<String>, Vec<String>) {
    let trials: Vec<&storcert_results::act::Trial> = c
        .items
        .iter()
        .filter_map(|i| match &i.artefact {
            Artefact::ActSearch(s) => Some(s),
            _ => None,
        })
        .flat_map(|s| s.trials.iter())
        .collect();
    (
        trials.iter().map(|t| t.log.clone()).collect(),
        trials
            .iter()
            .filter(|t| t.purpose == "confirm")
            .map(|t| t.log.clone())
            .collect(),
    )
}

/// The drive of `devices` (drives joined by " + " for a share of several)
/// and its spare area (only where every device has the same).
fn drive_of(known: &Drives, log: &str, devices: &[String]) -> (String, Option<SpareArea>) {
    let infos: Vec<(String, Option<SpareArea>)> =
        devices.iter().map(|d| known.of(log, d)).collect();
    let drive = infos
        .iter()
        .map(|i| i.0.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    let spare = match infos.split_first() {
        Some((first, rest)) if rest.iter().all(|i| i.1 == first.1) => first.1.clone(),
        _ => None,
    };
    (drive, spare)
}

/// One table per drive and workload run at more than one spare setting.
fn spare_tables(loads: &[LoadTable]) -> Vec<SpareTable> {
    type Key<'a> = (&'a str, &'a str, Option<&'a str>);
    let mut by_drive: BTreeMap<Key<'_>, Vec<&LoadTable>> = BTreeMap::new();
    for t in loads {
        by_drive
            .entry((t.drive.as_str(), t.workload.as_str(), t.mix.as_deref()))
            .or_default()
            .push(t);
    }
    let mut out = Vec::new();
    for ((drive, workload, mix), mut tables) in by_drive {
        if tables.len() < 2 {
            continue;
        }
        tables.sort_by_key(|t| spare_key(&t.spare));
        let mut all_loads: Vec<f64> = tables
            .iter()
            .flat_map(|t| t.rows.iter().map(|p| p.load))
            .collect();
        all_loads.sort_by(f64::total_cmp);
        all_loads.dedup();
        let rows = all_loads
            .iter()
            .map(|&load| SpareRow {
                load,
                cells: tables
                    .iter()
                    .map(|t| {
                        let at: Vec<&Point> = t.rows.iter().filter(|p| p.load == load).collect();
                        (!at.is_empty()).then(|| Cell {
                            worst_pct: worst_of(&at),
                            pass: at.iter().all(|p| p.pass),
                        })
                    })
                    .collect(),
            })
            .collect();
        out.push(SpareTable {
            drive: drive.to_string(),
            workload: workload.to_string(),
            mix: mix.map(str::to_string),
            settings: tables.iter().map(|t| t.spare.clone()).collect(),
            rows,
            highest_passing_load: tables.iter().map(|t| t.highest_passing_load).collect(),
        });
    }
    out
}

/// Each figure's worst over several runs; empty if any run has none.
fn worst_of(points: &[&Point]) -> Vec<f64> {
    if points.iter().any(|p| p.worst_pct.len() != 3) {
        return Vec::new();
    }
    (0..3)
        .map(|k| points.iter().map(|p| p.worst_pct[k]).fold(0.0, f64::max))
        .collect()
}

/// "20s", "24h": how long a run ran.
pub fn duration_text(seconds: u64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(seconds)).to_string()
}

/// A figure as the tables print it: two places, "–" where none.
pub fn pct(worst: &[f64], k: usize) -> String {
    worst
        .get(k)
        .map(|v| format!("{v:.2}"))
        .unwrap_or_else(|| "–".into())
}

pub fn verdict_word(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// The comparison's answer in a sentence per drive: the highest passing
/// load at each spare setting.
pub fn headline(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for t in &c.spare {
        out.push(format!(
            "{} ({}): highest passing load {}",
            t.drive,
            workload_text(&t.workload, t.mix.as_deref()),
            t.settings
                .iter()
                .zip(&t.highest_passing_load)
                .map(|(s, h)| format!(
                    "{} with {}",
                    h.map(load_text).unwrap_or_else(|| "none".into()),
                    spare_text(s.as_ref())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for t in &c.loads {
        if c.spare
            .iter()
            .any(|s| s.drive == t.drive && s.workload == t.workload && s.mix == t.mix)
        {
            continue;
        }
        out.push(format!(
            "{} ({}, {}): highest passing load {}",
            t.drive,
            workload_text(&t.workload, t.mix.as_deref()),
            spare_text(t.spare.as_ref()),
            t.highest_passing_load
                .map(load_text)
                .unwrap_or_else(|| "none".into())
        ));
    }
    out
}

/// Whether there is anything to compare: a drive at more than one load,
/// or at more than one spare setting.
pub fn worth_showing(c: &Comparison) -> bool {
    !c.spare.is_empty()
        || c.loads.iter().any(|t| {
            t.rows
                .iter()
                .any(|p| p.load.to_bits() != t.rows[0].load.to_bits())
        })
}

/// The comparison in ACT's published write-ups' layout: per drive, mix
/// and spare setting, each load's avg and max rows over every threshold of
/// act_latency.py's reads table (`md`: Markdown tables).
pub fn writeup(c: &Comparison, md: bool) -> String {
    let shown = |s: &str| storcert_util::text::inline(s, md);
    let mut out = String::new();
    for t in &c.loads {
        let title = format!(
            "ACT {}, {}, {}",
            workload_text(&t.workload, t.mix.as_deref()),
            shown(&t.drive_and_devices()),
            spare_text(t.spare.as_ref())
        );
        let thresholds = t
            .rows
            .iter()
            .find_map(|p| p.columns.as_ref())
            .map(|c| c.thresholds_ms.clone())
            .unwrap_or_default();
        out += &heading_text(&title, md);
        if thresholds.is_empty() {
            // A drive's share of a run over several is judged on its own
            // histogram; act_latency.py's table is the run's.
            out += "no act_latency.py table for a drive's share of a run over several drives: \
                    see the run's own table\n\n";
        } else {
            let mut header = vec!["load".to_string(), String::new()];
            header.extend(
                thresholds
                    .iter()
                    .map(|t| format!("%>{}ms", trim_number(*t))),
            );
            header.extend(["verdict", "run"].map(String::from));
            let mut rows = Vec::new();
            for p in &t.rows {
                for (name, figures) in [
                    ("avg", p.columns.as_ref().map(|c| &c.avg)),
                    ("max", p.columns.as_ref().map(|c| &c.max)),
                ] {
                    let mut row = vec![load_text(p.load), name.to_string()];
                    row.extend((0..thresholds.len()).map(|k| {
                        figures
                            .and_then(|f| f.get(k))
                            .map_or("–".to_string(), |x| format!("{x:.2}"))
                    }));
                    // The run once, on its avg row.
                    let first = name == "avg";
                    row.push(if first {
                        verdict_word(p.pass).into()
                    } else {
                        String::new()
                    });
                    row.push(if first {
                        shown(&format!("{}: {}", p.source, p.log))
                    } else {
                        String::new()
                    });
                    rows.push(row);
                }
            }
            out += &table_text(&header, &rows, md);
        }
        out += &answer_text(t, md);
    }
    out += &left_out_text(c, md);
    storcert_util::text::printable_lines(&out)
}

/// A heading as Markdown, or underlined plain text.
fn heading_text(t: &str, md: bool) -> String {
    if md {
        format!("### {t}\n\n")
    } else {
        format!("{t}\n{}\n", "-".repeat(t.chars().count()))
    }
}

/// A table as Markdown, or as aligned plain text.
fn table_text(header: &[String], rows: &[Vec<String>], md: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if md {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for r in rows {
            let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    } else {
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = storcert_util::table::Table::new(&h);
        for r in rows {
            t.row(r.clone());
        }
        out.push_str(&t.render());
    }
    out.push('\n');
    out
}

/// The comparison as text (`md`: Markdown tables), after its answer in a
/// sentence per drive where `with_headline` (a report has it on its first
/// screen already).
pub fn text(c: &Comparison, md: bool, with_headline: bool) -> String {
    use std::fmt::Write;
    // Text from a run (device paths, serials, log names): one line, and in
    // Markdown no link, image or emphasis of its own.
    let shown = |s: &str| storcert_util::text::inline(s, md);
    let mut out = String::new();
    let heading = |out: &mut String, t: &str| out.push_str(&heading_text(t, md));
    let table = |out: &mut String, header: &[String], rows: &[Vec<String>]| {
        out.push_str(&table_text(header, rows, md));
    };
    if with_headline {
        for line in headline(c) {
            let _ = writeln!(out, "- {}", shown(&line));
        }
        out.push('\n');
    }
    for t in &c.spare {
        heading(
            &mut out,
            &format!(
                "ACT {}, {}: with and without spare area",
                workload_text(&t.workload, t.mix.as_deref()),
                shown(&t.drive)
            ),
        );
        let mut header = vec!["load".to_string()];
        for s in &t.settings {
            let name = spare_text(s.as_ref());
            header.push(format!("{name}: max %>1ms"));
            header.push("verdict".into());
        }
        let mut rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![load_text(r.load)];
                for cell in &r.cells {
                    match cell {
                        Some(c) => {
                            row.push(pct(&c.worst_pct, 0));
                            row.push(verdict_word(c.pass).into());
                        }
                        None => {
                            row.push("not run".into());
                            row.push("–".into());
                        }
                    }
                }
                row
            })
            .collect();
        let mut last = vec!["highest passing".to_string()];
        for h in &t.highest_passing_load {
            last.push(h.map(load_text).unwrap_or_else(|| "none".into()));
            last.push(String::new());
        }
        rows.push(last);
        table(&mut out, &header, &rows);
    }
    for t in &c.loads {
        heading(
            &mut out,
            &format!(
                "ACT {}, {}, {}",
                workload_text(&t.workload, t.mix.as_deref()),
                shown(&t.drive_and_devices()),
                spare_text(t.spare.as_ref())
            ),
        );
        let header: Vec<String> = [
            "load",
            "max %>1ms",
            "max %>8ms",
            "max %>64ms",
            "verdict",
            "run",
            "log",
        ]
        .map(String::from)
        .to_vec();
        let rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|p| {
                vec![
                    load_text(p.load),
                    pct(&p.worst_pct, 0),
                    pct(&p.worst_pct, 1),
                    pct(&p.worst_pct, 2),
                    verdict_word(p.pass).into(),
                    duration_text(p.seconds),
                    shown(&format!("{}: {}", p.source, p.log)),
                ]
            })
            .collect();
        table(&mut out, &header, &rows);
        out += &answer_text(t, md);
    }
    out += &left_out_text(c, md);
    storcert_util::text::printable_lines(&out)
}

/// Under a load table: its highest passing load, its notes, and why each
/// failing run failed.
fn answer_text(t: &LoadTable, md: bool) -> String {
    use std::fmt::Write;
    let shown = |s: &str| storcert_util::text::inline(s, md);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "highest passing load: {}",
        t.highest_passing_load
            .map(load_text)
            .unwrap_or_else(|| "none".into())
    );
    for n in &t.notes {
        let _ = writeln!(out, "note: {}", shown(n));
    }
    for p in t.rows.iter().filter(|p| !p.pass) {
        if let Some(why) = &p.why {
            let _ = writeln!(
                out,
                "{} ({}) failed: {}",
                load_text(p.load),
                shown(&p.log),
                shown(why)
            );
        }
    }
    out.push('\n');
    out
}

/// The logs a comparison left out, and why.
fn left_out_text(c: &Comparison, md: bool) -> String {
    c.left_out
        .iter()
        .map(|l| format!("left out: {}\n", storcert_util::text::inline(l, md)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's name for a disk's first partition; none for a path that
    /// is no kernel disk name (a by-id link, a hostile record's name).
    #[test]
    fn first_partitions_are_named_as_the_kernel_names_them() {
        for (disk, part) in [
            ("/dev/sdb", Some("/dev/sdb1")),
            ("/dev/nvme0n1", Some("/dev/nvme0n1p1")),
            ("/dev/mmcblk0", Some("/dev/mmcblk0p1")),
            ("/dev/vda", Some("/dev/vda1")),
            ("/dev/dm-0", None),
            ("/dev/disk/by-id/wwn-0x5000", None),
            ("/dev/", None),
            ("sdb", None),
        ] {
            assert_eq!(first_partition(disk).as_deref(), part, "{disk}");
        }
    }

    /// The write-up's odd mix: 36,000 reads + 3,000 writes/s is "18x" by
    /// its reads, but not on ACT's scale; it is its own table, labelled by
    /// its rates, and its pass raises no highest passing load of ACT's mix.
    #[test]
    fn each_read_write_mix_is_its_own_series() {
        let log = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/storcert-us-20x.log"
        ))
        .unwrap();
        let at = |reads: u32, writes: u32| {
            log.replace(
                "read-reqs-per-sec: 40000",
                &format!("read-reqs-per-sec: {reads}"),
            )
            .replace(
                "write-reqs-per-sec: 20000",
                &format!("write-reqs-per-sec: {writes}"),
            )
            .into_bytes()
        };
        let files: BTreeMap<String, Vec<u8>> = [
            ("act/d-1x.log".to_string(), at(2000, 1000)),
            ("act/d-2x.log".to_string(), at(4000, 2000)),
            ("act/d-36000r-3000w.log".to_string(), at(36000, 3000)),
        ]
        .into();
        let c = compare(&[("run".into(), &Contents::read(&files))]);
        assert_eq!(c.loads.len(), 2, "{c:#?}");
        let ours = c.loads.iter().find(|t| t.mix.is_none()).unwrap();
        assert_eq!(
            ours.rows.iter().map(|p| p.load).collect::<Vec<_>>(),
            [1.0, 2.0]
        );
        assert_eq!(ours.highest_passing_load, Some(2.0));
        let other = c.loads.iter().find(|t| t.mix.is_some()).unwrap();
        assert_eq!(
            other.mix.as_deref(),
            Some("Nx = N × (2000 reads + 166.67 writes/s)")
        );
        assert_eq!(
            other.rows.iter().map(|p| p.load).collect::<Vec<_>>(),
            [18.0]
        );
        let text = text(&c, false, true);
        assert!(
            text.contains("(storage at Nx = N × (2000 reads + 166.67 writes/s), no spare partition): highest passing load 18x"),
            "{text}"
        );
        assert!(
            text.contains("(storage, no spare partition): highest passing load 2x"),
            "{text}"
        );
        // As a spreadsheet's table: a row per run, the drive named by the
        // run's targets, a model that reads as a formula defused.
        let mut files = files.clone();
        files.insert(
            "targets.json".into(),
            Artefact::from(storcert_results::run::Targets {
                schema_version: storcert_results::run::TARGETS_SCHEMA,
                targets: vec![storcert_results::run::Target {
                    path: "/dev/loop0".into(),
                    disk: "/dev/loop0".into(),
                    label: "loop0".into(),
                    serial: Some("S3R1AL".into()),
                    model: Some("=HYPERLINK(\"x\")".into()),
                    file_size: 0,
                    likeness: None,
                }],
            })
            .to_json(),
        );
        let c = compare(&[("run".into(), &Contents::read(&files))]);
        let csv = crate::export::csv::comparison(&c).unwrap();
        let mut rows = ::csv::Reader::from_reader(csv.as_bytes());
        let head = rows.headers().unwrap().clone();
        let rows: Vec<::csv::StringRecord> = rows.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 3, "{csv}");
        let cell = |r: &::csv::StringRecord, name: &str| {
            r[head.iter().position(|h| h == name).unwrap()].to_string()
        };
        let odd = rows.iter().find(|r| cell(r, "load") == "18").unwrap();
        assert_eq!(cell(odd, "serial"), "S3R1AL");
        assert_eq!(cell(odd, "model"), "'=HYPERLINK(\"x\")");
        assert_eq!(cell(odd, "mix"), "Nx = N × (2000 reads + 166.67 writes/s)");
        assert_eq!(cell(odd, "verdict"), "pass");
        assert_eq!(cell(odd, "log"), "act/d-36000r-3000w.log");
        assert_eq!(cell(&rows[0], "mix"), "");

        // Nor may a search claim a load its log ran at another mix, or
        // at another load (found in review: a hand-made search claimed 18x).
        for (claimed, writes, want) in [
            (18.0, 3000, "another read/write mix"),
            (1.0, 18000, "counted at 1x, but its log runs at 18x"),
        ] {
            let mut files = files.clone();
            let trial = "act/search-d/trial-01-18x.log".to_string();
            files.insert(trial.clone(), at(36000, writes));
            files.insert(
                "act/search-d.json".into(),
                Artefact::from(storcert_results::act::SearchResult {
                    schema_version: storcert_results::act::SEARCH_SCHEMA,
                    highest_passing_load: Some(claimed),
                    confirmed: true,
                    reached_max: false,
                    max_load: 20.0,
                    step: 1.0,
                    trials: vec![storcert_results::act::Trial {
                        load: claimed,
                        purpose: "confirm".into(),
                        result: "passing".into(),
                        worst_pct_over_1ms: None,
                        worst_pct_over_8ms: None,
                        worst_pct_over_64ms: None,
                        max_lag_ms: 0.0,
                        log: trial,
                        ..Default::default()
                    }],
                    interrupted: false,
                    ..Default::default()
                })
                .to_json(),
            );
            let summary =
                storcert_judge::summary::summarise(Default::default(), &Contents::read(&files));
            let search = summary
                .tests
                .iter()
                .find(|t| t.name.starts_with("act-search"))
                .unwrap();
            assert!(search.detail.contains(want), "{claimed}: {search:?}");
            let passed: Vec<Option<f64>> =
                summary.drives.iter().map(|d| d.act_load_passed).collect();
            assert_eq!(passed, [Some(2.0)], "{claimed}");
        }

        // The summary's "ACT passed" is on ACT's scale only.
        let summary =
            storcert_judge::summary::summarise(Default::default(), &Contents::read(&files));
        let passed: Vec<Option<f64>> = summary.drives.iter().map(|d| d.act_load_passed).collect();
        assert_eq!(passed, [Some(2.0)], "{summary:#?}");
    }

    #[test]
    fn the_highest_passing_load_stops_at_the_first_failure() {
        assert_eq!(highest_passing(&[]), (None, vec![]));
        assert_eq!(
            highest_passing(&[(2.0, true), (1.0, true), (3.0, false)]).0,
            Some(2.0)
        );
        // Two runs at 2x, one failing: 2x is not passed.
        assert_eq!(
            highest_passing(&[(1.0, true), (2.0, true), (2.0, false)]).0,
            Some(1.0)
        );
        // Failing at the lowest load: none, whatever passed above.
        let (h, notes) = highest_passing(&[(1.0, false), (4.0, true)]);
        assert_eq!(h, None);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("4x passed above a failing 1x"),
            "{notes:?}"
        );
    }

    #[test]
    fn numbers_read_as_write_ups_write_them() {
        assert_eq!(load_text(1.5), "1.5x");
        assert_eq!(load_text(12.0), "12x");
        assert_eq!(load_text(0.25), "0.25x");
        let s = SpareArea {
            spare_pct: 12.0,
            factory_spare_pct: Some(7.0),
            total_spare_pct: Some(19.0),
        };
        assert_eq!(spare_text(Some(&s)), "12% spare (total 19%)");
        assert_eq!(spare_text(None), "no spare partition");
    }
}
