//! The report: one self-contained HTML page (inline SVG plots, no external
//! assets), and Markdown or plain text for terminals and tickets. Built
//! from a bundle or a results folder through the same `Report` data, so
//! the report inside every bundle and `storcert report BUNDLE` agree.

pub mod html;
pub mod plot;
pub mod text;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::act::analyze::{self, Analysis};
use crate::act::timeline::{find_spikes, Second, Spikes};
use crate::bundle::summary::{Builder, Summary};
use crate::bundle::system::SystemIdentity;

pub struct ActSection {
    pub path: String,
    pub devices: Vec<String>,
    pub load: Option<f64>,
    pub analysis: Analysis,
    /// Per-second samples, when the run kept its timeline.
    pub timeline: Vec<Second>,
    pub spikes: Option<Spikes>,
}

pub struct StreamPass {
    pub name: String,
    pub bw_timeline: Vec<u64>,
    pub aggr_bw_bytes: f64,
    pub bytes: u64,
}

pub struct StreamSection {
    pub path: String,
    pub targets: Vec<String>,
    pub passes: Vec<StreamPass>,
}

pub struct Finding {
    pub severity: String,
    pub device: String,
    pub check: String,
    pub expected: String,
    pub actual: String,
}

pub struct HealthChange {
    pub drive: String,
    pub what: String,
    pub before: String,
    pub after: String,
    pub degraded: bool,
}

pub struct EnduranceRow {
    pub drive: String,
    pub drive_writes_per_day: f64,
    pub rated_dwpd: Option<f64>,
    pub years_at_this_rate: Option<f64>,
    pub within_rating: Option<bool>,
}

pub struct Report {
    pub title: String,
    pub summary: Summary,
    pub system: Option<SystemIdentity>,
    pub findings: Vec<Finding>,
    pub act: Vec<ActSection>,
    pub streams: Vec<StreamSection>,
    pub health: Vec<HealthChange>,
    pub endurance: Vec<EnduranceRow>,
    pub notes: Vec<String>,
}

fn s(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

impl Report {
    /// From files by path (a results folder's, or a bundle's with their
    /// `results/` prefix removed) and their summary.
    pub fn build(title: &str, summary: Summary, files: &BTreeMap<String, Vec<u8>>) -> Report {
        let mut r = Report {
            title: title.into(),
            summary,
            system: None,
            findings: Vec::new(),
            act: Vec::new(),
            streams: Vec::new(),
            health: Vec::new(),
            endurance: Vec::new(),
            notes: Vec::new(),
        };
        for (path, data) in files {
            let text = String::from_utf8_lossy(&data[..data.len().min(4096)]).into_owned();
            if path.ends_with(".log") && text.lines().take(20).any(|l| l.starts_with("ACT version"))
            {
                if let Some(sec) = act_section(path, data, files) {
                    r.act.push(sec);
                }
                continue;
            }
            let Ok(v) = serde_json::from_slice::<Value>(data) else {
                continue;
            };
            if path == "system.json" {
                r.system = serde_json::from_value(v).ok();
            } else if v.get("findings").is_some() && v.get("checks").is_some() {
                for f in v["findings"].as_array().into_iter().flatten() {
                    r.findings.push(Finding {
                        severity: s(&f["severity"]),
                        device: s(&f["device"]),
                        check: s(&f["check"]),
                        expected: s(&f["expected"]),
                        actual: s(&f["actual"]),
                    });
                }
            } else if v.get("passes").is_some() && v.get("targets").is_some() {
                r.streams.push(StreamSection {
                    path: path.clone(),
                    targets: v["targets"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|t| s(&t["path"]))
                        .collect(),
                    passes: v["passes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|p| StreamPass {
                            name: s(&p["pass"]),
                            bw_timeline: p["bw_timeline"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|x| x.as_u64())
                                .collect(),
                            aggr_bw_bytes: p["group"]["aggr_bw_bytes"].as_f64().unwrap_or(0.0),
                            bytes: p["group"]["bytes"].as_u64().unwrap_or(0),
                        })
                        .collect(),
                });
            } else if v.get("drives").is_some() && v.get("unmatched").is_some() {
                for d in v["drives"].as_array().into_iter().flatten() {
                    let drive = s(&d["drive"]);
                    for c in d["changes"].as_array().into_iter().flatten() {
                        r.health.push(HealthChange {
                            drive: drive.clone(),
                            what: s(&c["what"]),
                            before: s(&c["before"]),
                            after: s(&c["after"]),
                            degraded: c["degraded"].as_bool() == Some(true),
                        });
                    }
                    if let Some(e) = d.get("endurance").filter(|e| !e.is_null()) {
                        r.endurance.push(EnduranceRow {
                            drive: drive.clone(),
                            drive_writes_per_day: e["drive_writes_per_day"].as_f64().unwrap_or(0.0),
                            rated_dwpd: e["rated_dwpd"].as_f64(),
                            years_at_this_rate: e["years_at_this_rate"].as_f64(),
                            within_rating: e["within_rating"].as_bool(),
                        });
                    }
                }
            } else if path == "run-notes.json" {
                r.notes.extend(
                    v["notes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|n| n.as_str().map(String::from)),
                );
                let starts = v["starts"].as_u64().unwrap_or(1);
                if starts > 1 {
                    r.notes.push(format!(
                        "the run was started {starts} times (resumed after interruptions)"
                    ));
                }
            }
        }
        r
    }
}

/// The ACT log's analysis (hourly slices; a shorter run is one slice; µs
/// logs shown at the 1.024-65.536 ms edges, the ms-equivalent columns).
fn act_section(path: &str, data: &[u8], files: &BTreeMap<String, Vec<u8>>) -> Option<ActSection> {
    let text = String::from_utf8_lossy(data);
    let micro = text
        .lines()
        .take(60)
        .any(|l| l.trim() == "microsecond-histograms: yes");
    let opts = analyze::Options {
        log: path.to_string(),
        slice: crate::bundle::summary::judging_slice(&text),
        start_bucket: if micro { 10 } else { 0 },
        ..analyze::Options::default()
    };
    let analysis = analyze::analyze(&text, &opts, path).ok()?;
    let (devices, load) = crate::bundle::summary::act_log_setup(&text);
    let timeline: Vec<Second> = files
        .get(&path.replace(".log", ".timeline.jsonl"))
        .map(|t| {
            String::from_utf8_lossy(t)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default();
    let spikes = (!timeline.is_empty()).then(|| {
        find_spikes(
            &timeline
                .iter()
                .map(|s| (s.t, s.read_p99_us))
                .collect::<Vec<_>>(),
        )
    });
    Some(ActSection {
        path: path.to_string(),
        devices,
        load,
        analysis,
        timeline,
        spikes,
    })
}

/// Files of a results folder, by relative path.
pub fn read_dir_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
        for e in std::fs::read_dir(d).with_context(|| format!("{}", d.display()))? {
            let e = e?;
            let p = e.path();
            let ft = e.file_type()?;
            if ft.is_dir() {
                walk(root, &p, out)?;
            } else if ft.is_file() {
                let rel = p
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .into_owned();
                if !rel.ends_with(".tmp") && !rel.starts_with("report.") {
                    out.insert(rel, std::fs::read(&p)?);
                }
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// The report of a results folder (as the bundle will judge it).
pub fn for_results(dir: &Path) -> Result<Report> {
    let files = read_dir_files(dir)?;
    let system = files
        .get(crate::bundle::SYSTEM)
        .and_then(|d| serde_json::from_slice::<SystemIdentity>(d).ok())
        .unwrap_or_else(|| SystemIdentity::probe(Path::new("/")));
    let mut b = Builder::new(system.machine());
    for (p, d) in &files {
        b.add(&format!("{}{p}", crate::bundle::RESULTS_PREFIX), d);
    }
    let title = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("results")
        .to_string();
    Ok(Report::build(&title, b.finish(), &files))
}

/// The report of a bundle's unpacked files.
pub fn for_bundle(name: &str, unpacked: &crate::bundle::Unpacked) -> Result<Report> {
    let summary: Summary = serde_json::from_slice(
        unpacked
            .files
            .get(crate::bundle::SUMMARY)
            .context("the bundle has no summary.json")?,
    )?;
    let files: BTreeMap<String, Vec<u8>> = unpacked
        .files
        .iter()
        .filter_map(|(p, d)| {
            p.strip_prefix(crate::bundle::RESULTS_PREFIX)
                .map(|r| (r.to_string(), d.clone()))
                .or_else(|| (p == crate::bundle::SYSTEM).then(|| (p.clone(), d.clone())))
        })
        .collect();
    Ok(Report::build(name, summary, &files))
}

/// Writes report.html and report.md into a results folder (before it is
/// bundled, so every bundle carries its report).
pub fn write_for_results(dir: &Path) -> Result<()> {
    let r = for_results(dir)?;
    crate::util::fs::write_durably(&dir.join("report.html"), html::render(&r))?;
    crate::util::fs::write_durably(&dir.join("report.md"), text::markdown(&r))?;
    Ok(())
}
