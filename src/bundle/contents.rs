//! The typed contents of a results folder or a bundle: every results file
//! read as the artefact its `"artefact"` tag names, which the summary and
//! the report fold over. Nothing here works out what a file is from its
//! JSON keys.
//!
//! Files written before artefacts were tagged (bundles of storcert 0.1
//! before the results model) carry no tag. Those are known by the names
//! `storcert run` gave them (`stream.json`, `act/search-*.json`, …), and
//! an ACT log with no saved analysis beside it is analysed here, once,
//! with the same function a run uses right after the log is written.

use std::collections::BTreeMap;
use std::path::Path;

use crate::act::analyze;
use crate::act::timeline::Second;
use crate::results::act::{LogAnalysis, Prep, PrepResult};
use crate::results::run::{Target, Targets};
use crate::results::{Artefact, ReadError};

/// One results file that was read as an artefact.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its path as given (inside a bundle, `results/…`).
    pub path: String,
    pub artefact: Artefact,
}

#[derive(Debug, Default)]
pub struct Contents {
    pub items: Vec<Item>,
    /// Per-second timelines of ACT runs, by the path of their analysis.
    pub timelines: BTreeMap<String, Vec<Second>>,
    /// Configuration inputs (`*.toml`, `*.conf`): path → SHA-256.
    pub configuration: BTreeMap<String, String>,
    /// Results files that could not be read, and why: never judged as
    /// passing by being left out.
    pub unreadable: Vec<(String, String)>,
}

/// "results/act/x.log" → ("results/act/", "x.log").
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    }
}

fn is_act_log(data: &[u8]) -> bool {
    let head = &data[..data.len().min(4096)];
    String::from_utf8_lossy(head)
        .lines()
        .take(20)
        .any(|l| l.starts_with("ACT version"))
}

/// An untagged file of an older storcert, by the name `storcert run` gave
/// it. `None`: not a name storcert wrote a result under.
fn legacy(path: &str, data: &[u8]) -> Option<Result<Artefact, serde_json::Error>> {
    let rel = path
        .strip_prefix(crate::bundle::RESULTS_PREFIX)
        .unwrap_or(path);
    let (dir, name) = split(rel);
    let json = |f: fn(&[u8]) -> Result<Artefact, serde_json::Error>| Some(f(data));
    match (dir, name) {
        ("", "inventory.json") => json(|d| Ok(Artefact::Inventory(serde_json::from_slice(d)?))),
        ("", "system.json") => json(|d| Ok(Artefact::System(serde_json::from_slice(d)?))),
        ("", "targets.json") => json(|d| {
            Ok(Artefact::Targets(Targets {
                schema_version: 0,
                targets: serde_json::from_slice::<Vec<Target>>(d)?,
            }))
        }),
        ("", "journal.json") => json(|d| Ok(Artefact::Journal(serde_json::from_slice(d)?))),
        ("", "run-notes.json") => json(|d| Ok(Artefact::RunNotes(serde_json::from_slice(d)?))),
        ("", "policy.json") => json(|d| Ok(Artefact::Policy(serde_json::from_slice(d)?))),
        ("", "stream.json") => json(|d| Ok(Artefact::Stream(serde_json::from_slice(d)?))),
        ("", "health-diff.json") => json(|d| Ok(Artefact::HealthDiff(serde_json::from_slice(d)?))),
        ("", "health-before.json" | "health-after.json") => {
            json(|d| Ok(Artefact::HealthSnapshot(serde_json::from_slice(d)?)))
        }
        ("provision/", n) if n.ends_with(".json") => {
            json(|d| Ok(Artefact::Provision(serde_json::from_slice(d)?)))
        }
        ("act/", n) if n.starts_with("search-") && n.ends_with(".json") => {
            json(|d| Ok(Artefact::ActSearch(serde_json::from_slice(d)?)))
        }
        ("act/", n) if n.starts_with("prep-") && n.ends_with(".json") => json(|d| {
            Ok(Artefact::ActPrep(Prep {
                schema_version: 0,
                devices: vec![serde_json::from_slice::<PrepResult>(d)?],
            }))
        }),
        ("act/", n) if n.ends_with(".json") => {
            json(|d| Ok(Artefact::ActRun(serde_json::from_slice(d)?)))
        }
        _ => None,
    }
}

impl Contents {
    /// Reads `files` (path → bytes). Paths may carry the bundle's
    /// `results/` prefix or not.
    pub fn read(files: &BTreeMap<String, Vec<u8>>) -> Contents {
        let mut c = Contents::default();
        let mut logs = Vec::new();
        for (path, data) in files {
            if path.ends_with(".toml") || path.ends_with(".conf") {
                use sha2::Digest;
                c.configuration
                    .insert(path.clone(), hex::encode(sha2::Sha256::digest(data)));
                continue;
            }
            if is_act_log(data) {
                logs.push((path, data));
                continue;
            }
            if !path.ends_with(".json") {
                continue;
            }
            let artefact = match Artefact::from_json(data) {
                Ok(a) => a,
                Err(ReadError::Untagged) => match legacy(path, data) {
                    Some(Ok(a)) => a,
                    Some(Err(e)) => {
                        c.unreadable.push((path.clone(), e.to_string()));
                        continue;
                    }
                    None => continue,
                },
                Err(e) => {
                    c.unreadable.push((path.clone(), e.to_string()));
                    continue;
                }
            };
            c.items.push(Item {
                path: path.clone(),
                artefact,
            });
        }
        // A log whose analysis was saved with it is read through that; an
        // older one is analysed now, the way a run does after each log.
        for (path, data) in logs {
            let (dir, name) = split(path);
            let analysed = c.items.iter().any(|i| match &i.artefact {
                Artefact::ActAnalysis(a) => split(&i.path).0 == dir && a.log == name,
                _ => false,
            });
            if analysed {
                continue;
            }
            let timeline_name = name.replace(".log", ".timeline.jsonl");
            let timeline = files
                .contains_key(&format!("{dir}{timeline_name}"))
                .then_some(timeline_name);
            let text = String::from_utf8_lossy(data);
            let at = analyze::analysis_path(Path::new(path))
                .to_string_lossy()
                .into_owned();
            let label = path
                .strip_prefix(crate::bundle::RESULTS_PREFIX)
                .unwrap_or(path);
            match analyze::judge_log(&text, name, label, timeline) {
                Ok(a) => c.items.push(Item {
                    path: at,
                    artefact: Artefact::ActAnalysis(a),
                }),
                Err(e) => c
                    .unreadable
                    .push((path.clone(), format!("ACT log unreadable: {e}"))),
            }
        }
        for item in &c.items {
            if let Artefact::ActAnalysis(a) = &item.artefact {
                let Some(t) = &a.timeline else { continue };
                let (dir, _) = split(&item.path);
                if let Some(data) = files.get(&format!("{dir}{t}")) {
                    let seconds = String::from_utf8_lossy(data)
                        .lines()
                        .filter_map(|l| serde_json::from_str(l).ok())
                        .collect();
                    c.timelines.insert(item.path.clone(), seconds);
                }
            }
        }
        c
    }

    /// The ACT analyses, each with the path of the log it judged.
    pub fn analyses(&self) -> impl Iterator<Item = (String, &LogAnalysis)> {
        self.items.iter().filter_map(|i| match &i.artefact {
            Artefact::ActAnalysis(a) => Some((format!("{}{}", split(&i.path).0, a.log), a)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_file_is_read_by_its_tag_whatever_its_name() {
        let mut files = BTreeMap::new();
        let notes = crate::results::run::RunNotes {
            schema_version: 1,
            profile: "p".into(),
            ..Default::default()
        };
        files.insert(
            "anything.json".to_string(),
            Artefact::RunNotes(notes).to_json(),
        );
        // Untagged and under no name storcert writes: not a result.
        files.insert(
            "other.json".to_string(),
            br#"{"passes":[],"targets":[],"seed":1}"#.to_vec(),
        );
        let c = Contents::read(&files);
        assert_eq!(c.items.len(), 1);
        assert!(matches!(&c.items[0].artefact, Artefact::RunNotes(n) if n.profile == "p"));
        assert!(c.unreadable.is_empty());
    }

    #[test]
    fn a_newer_schema_or_a_broken_file_is_unreadable_not_ignored() {
        let mut files = BTreeMap::new();
        files.insert(
            "x.json".to_string(),
            br#"{"artefact":"stream","schema_version":99}"#.to_vec(),
        );
        files.insert("policy.json".to_string(), br#"{"checks":"many"}"#.to_vec());
        files.insert(
            "y.json".to_string(),
            br#"{"artefact":"no-such-kind","schema_version":1}"#.to_vec(),
        );
        // A torn write under a results name.
        files.insert(
            "stream.json".to_string(),
            br#"{"artefact":"stream","sche"#.to_vec(),
        );
        let c = Contents::read(&files);
        assert!(c.items.is_empty());
        let why: Vec<&str> = c.unreadable.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(why, ["policy.json", "stream.json", "x.json", "y.json"]);
        assert!(c.unreadable[2].1.contains("newer"), "{:?}", c.unreadable);
    }
}
