//! The verdict of a results folder, read from its artefacts as data: ACT
//! logs (analysed here with ACT's own criteria), ACT run and search
//! results, stream results, policy reports, health diffs and the
//! inventory that names the drives. Each artefact is recognised by its
//! shape (an ACT log by its "ACT version" header, a JSON result by the
//! fields its schema documents), so files may be named anything.

use serde_json::Value;

use crate::act::analyze;
use crate::inventory::model::Inventory;
pub use crate::results::summary::{DriveVerdict, Machine, Summary, TestVerdict};

pub const SCHEMA_VERSION: u32 = 1;

/// What one artefact is, by its shape.
enum Artefact {
    ActLog,
    ActRun(Value),
    ActSearch(Value),
    Stream(Value),
    Policy(Value),
    HealthDiff(Value),
    Inventory(Box<Inventory>),
    /// `storcert run`'s list of what it tested (paths).
    Targets(Vec<String>),
    /// `storcert run`'s stage journal.
    Journal(Value),
    Config,
    Other,
}

fn classify(path: &str, data: &[u8]) -> Artefact {
    let head = &data[..data.len().min(4096)];
    if let Ok(text) = std::str::from_utf8(head) {
        if text.lines().take(20).any(|l| l.starts_with("ACT version")) {
            return Artefact::ActLog;
        }
    }
    if path.ends_with(".toml") || path.ends_with(".conf") {
        return Artefact::Config;
    }
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return Artefact::Other;
    };
    if let Some(list) = v.as_array() {
        let paths: Vec<String> = list
            .iter()
            .filter(|t| t.get("label").is_some())
            .filter_map(|t| t.get("path")?.as_str().map(String::from))
            .collect();
        if !paths.is_empty() && paths.len() == list.len() {
            return Artefact::Targets(paths);
        }
    }
    let has = |k: &str| v.get(k).is_some();
    if has("disks") && has("controllers") && has("host") {
        if let Ok(inv) = serde_json::from_value::<Inventory>(v.clone()) {
            return Artefact::Inventory(Box::new(inv));
        }
    }
    if has("stages") && has("profile_digest") {
        return Artefact::Journal(v);
    }
    if has("outcome") && has("histograms") && has("devices") {
        Artefact::ActRun(v)
    } else if has("highest_passing_load") && has("trials") {
        Artefact::ActSearch(v)
    } else if has("passes") && has("targets") && has("seed") {
        Artefact::Stream(v)
    } else if has("findings") && has("checks") && has("pass") {
        Artefact::Policy(v)
    } else if has("drives") && has("degraded") && has("unmatched") {
        Artefact::HealthDiff(v)
    } else {
        Artefact::Other
    }
}

/// ACT's hourly slices; a run shorter than an hour is judged as one slice
/// of its whole length (act_latency.py needs a whole slice of data).
pub fn judging_slice(text: &str) -> u64 {
    let last = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("after ")?
                .strip_suffix(" sec:")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    if last > 0 && last < 3600 {
        last
    } else {
        3600
    }
}

/// Loads and devices from an ACT log's configuration echo.
pub fn act_log_setup(text: &str) -> (Vec<String>, Option<f64>) {
    let mut devices = Vec::new();
    let mut reads = None;
    for line in text.lines().take(200) {
        if let Some(d) = line.strip_prefix("device-names: ") {
            devices = d
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
        } else if let Some(r) = line.strip_prefix("read-reqs-per-sec: ") {
            reads = r.trim().parse::<f64>().ok();
        }
    }
    let load = reads
        .filter(|_| !devices.is_empty())
        .map(|r| r / 2000.0 / devices.len() as f64);
    (devices, load)
}

pub struct Builder {
    summary: Summary,
    inventory: Option<Inventory>,
    targets: Option<Vec<String>>,
    journal: Option<Value>,
    /// ACT logs, judged at the end unless a search owns them.
    act_logs: Vec<(String, Vec<u8>)>,
    searches: Vec<(String, Value)>,
}

fn judge(s: &mut Summary, name: String, pass: bool, detail: String, devices: Vec<String>) {
    if !pass {
        s.reasons.push(format!("{name}: {detail}"));
    }
    s.tests.push(TestVerdict {
        name,
        pass,
        detail,
        devices,
    });
}

impl Builder {
    pub fn new(machine: Machine) -> Builder {
        Builder {
            summary: Summary {
                schema_version: SCHEMA_VERSION,
                machine,
                ..Summary::default()
            },
            inventory: None,
            targets: None,
            journal: None,
            act_logs: Vec::new(),
            searches: Vec::new(),
        }
    }

    /// Reads one artefact (its path inside the bundle and its bytes).
    pub fn add(&mut self, path: &str, data: &[u8]) {
        let s = &mut self.summary;
        match classify(path, data) {
            Artefact::ActLog => self.act_logs.push((path.to_string(), data.to_vec())),
            Artefact::ActRun(v) => {
                let outcome = v["outcome"]["outcome"]
                    .as_str()
                    .unwrap_or("unknown")
                    .to_string();
                let devices: Vec<String> = v["devices"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|d| d["name"].as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                judge(
                    s,
                    format!("act-run ({path})"),
                    outcome == "completed",
                    outcome,
                    devices,
                );
            }
            Artefact::ActSearch(v) => self.searches.push((path.to_string(), v)),
            Artefact::Stream(v) => {
                let mut bad = Vec::new();
                for p in v["passes"].as_array().into_iter().flatten() {
                    for j in p["jobs"].as_array().into_iter().flatten() {
                        if let Some(e) = j["error"].as_str() {
                            bad.push(e.to_string());
                        }
                    }
                    if p["verify"]["bad_blocks"].as_u64().unwrap_or(0) > 0 {
                        bad.push(format!(
                            "{} bad blocks on verify",
                            p["verify"]["bad_blocks"]
                        ));
                    }
                    if p["interrupted"].as_bool() == Some(true) {
                        bad.push("interrupted".into());
                    }
                }
                let devices: Vec<String> = v["targets"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|t| t["path"].as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                let detail = if bad.is_empty() {
                    "all passes completed".into()
                } else {
                    bad.join("; ")
                };
                judge(
                    s,
                    format!("stream ({path})"),
                    bad.is_empty(),
                    detail,
                    devices,
                );
            }
            Artefact::Policy(v) => {
                let mut devices = Vec::new();
                let mut fails = Vec::new();
                for f in v["findings"].as_array().into_iter().flatten() {
                    if f["severity"]
                        .as_str()
                        .is_some_and(|x| x.eq_ignore_ascii_case("fail"))
                    {
                        let d = f["device"].as_str().unwrap_or("?").to_string();
                        fails.push(format!(
                            "{d} {}: expected {}, found {}",
                            f["check"].as_str().unwrap_or("?"),
                            f["expected"].as_str().unwrap_or("?"),
                            f["actual"].as_str().unwrap_or("?")
                        ));
                        devices.push(d);
                    }
                }
                let pass = v["pass"].as_bool() == Some(true);
                let detail = if fails.is_empty() {
                    format!("{} checks passed", v["checks"])
                } else {
                    fails.join("; ")
                };
                judge(s, format!("policy ({path})"), pass, detail, devices);
            }
            Artefact::HealthDiff(v) => {
                let mut devices = Vec::new();
                let mut what = Vec::new();
                for d in v["drives"].as_array().into_iter().flatten() {
                    if d["degraded"].as_bool() == Some(true) {
                        let name = d["drive"].as_str().unwrap_or("?").to_string();
                        for c in d["changes"].as_array().into_iter().flatten() {
                            if c["degraded"].as_bool() == Some(true) {
                                what.push(format!(
                                    "{name} {}: {} -> {}",
                                    c["what"].as_str().unwrap_or("?"),
                                    c["before"].as_str().unwrap_or("?"),
                                    c["after"].as_str().unwrap_or("?")
                                ));
                            }
                        }
                        devices.push(name);
                    }
                }
                let pass = v["degraded"].as_bool() != Some(true);
                let detail = if what.is_empty() {
                    "no drive degraded".into()
                } else {
                    what.join("; ")
                };
                judge(s, format!("health ({path})"), pass, detail, devices);
            }
            Artefact::Inventory(inv) => self.inventory = Some(*inv),
            Artefact::Targets(t) => self.targets = Some(t),
            Artefact::Journal(v) => self.journal = Some(v),
            Artefact::Config => {
                use sha2::Digest;
                s.configuration
                    .insert(path.to_string(), hex::encode(sha2::Sha256::digest(data)));
            }
            Artefact::Other => {}
        }
    }

    fn judge_log(&mut self, path: &str, data: &[u8]) {
        let s = &mut self.summary;
        let text = String::from_utf8_lossy(data);
        let (devices, load) = act_log_setup(&text);
        let opts = analyze::Options {
            log: path.to_string(),
            slice: judging_slice(&text),
            ..analyze::Options::default()
        };
        let load_text = load.map(|l| {
            format!("{l:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
                + "x"
        });
        let kind = if text
            .lines()
            .take(5)
            .any(|l| l.starts_with("Index device IO test"))
        {
            "act-index"
        } else {
            "act-storage"
        };
        let name = format!(
            "{kind} {} ({path})",
            load_text.clone().unwrap_or_else(|| "?x".into())
        );
        match analyze::analyze(&text, &opts, path) {
            Ok(a) => {
                let detail = if a.verdict.pass {
                    format!(
                        "{} hourly slice(s) within ACT's limits",
                        a.histograms.first().map_or(0, |h| h.slices.len())
                    )
                } else {
                    a.verdict
                        .failures
                        .iter()
                        .map(|f| {
                            format!(
                                "{} slice {}: {:.2}% {}",
                                f.histogram, f.slice, f.percent, f.rule
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                if a.verdict.pass {
                    if let Some(l) = load {
                        for d in &devices {
                            let e = s.loads_reached.entry(d.clone()).or_insert(l);
                            *e = e.max(l);
                        }
                    }
                }
                judge(s, name, a.verdict.pass, detail, devices);
            }
            Err(e) => judge(s, name, false, format!("log unreadable: {e}"), devices),
        }
    }

    /// A search's trials are its own business (failing the loads above
    /// the highest passing one is how a search works): it is judged by
    /// its result, on the devices its trial logs name.
    fn judge_search(&mut self, path: &str, v: &Value) {
        let best = v["highest_passing_load"].as_f64();
        let mut devices: Vec<String> = Vec::new();
        for t in v["trials"].as_array().into_iter().flatten() {
            let Some(log) = t["log"].as_str() else {
                continue;
            };
            if let Some((_, data)) = self.act_logs.iter().find(|(p, _)| same_log(p, log)) {
                for d in act_log_setup(&String::from_utf8_lossy(data)).0 {
                    if !devices.contains(&d) {
                        devices.push(d);
                    }
                }
            }
        }
        let s = &mut self.summary;
        let detail = match best {
            Some(l) => {
                for d in &devices {
                    let e = s.loads_reached.entry(d.clone()).or_insert(l);
                    *e = e.max(l);
                }
                format!(
                    "highest passing load {l}x{}",
                    if v["confirmed"].as_bool() == Some(true) {
                        ", confirmed"
                    } else {
                        ", not confirmed"
                    }
                )
            }
            None => "no load passed".into(),
        };
        judge(
            s,
            format!("act-search ({path})"),
            best.is_some(),
            detail,
            devices,
        );
    }

    pub fn finish(mut self) -> Summary {
        let searches = std::mem::take(&mut self.searches);
        let owned: Vec<String> = searches
            .iter()
            .flat_map(|(_, v)| v["trials"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["log"].as_str().map(String::from))
            .collect();
        for (path, v) in &searches {
            self.judge_search(path, v);
        }
        for (path, data) in std::mem::take(&mut self.act_logs) {
            if !owned.iter().any(|o| same_log(&path, o)) {
                self.judge_log(&path, &data);
            }
        }
        let s = &mut self.summary;
        if let Some(v) = &self.journal {
            // A stage that failed outright (no result file to judge) fails
            // the run; its note says why.
            for st in v["stages"].as_array().into_iter().flatten() {
                if st["state"] == "failed" {
                    let id = st["id"].as_str().unwrap_or("?");
                    let devices = self
                        .targets
                        .iter()
                        .flatten()
                        .filter(|t| id.ends_with(t.rsplit('/').next().unwrap_or(t)))
                        .cloned()
                        .collect();
                    judge(
                        s,
                        format!("stage {id}"),
                        false,
                        st["note"].as_str().unwrap_or("failed").to_string(),
                        devices,
                    );
                }
            }
        }
        // Drives: the inventory's, or else every device a test named.
        let mut drives: Vec<DriveVerdict> = match &self.inventory {
            Some(inv) => inv
                .disks
                .iter()
                .map(|d| DriveVerdict {
                    device: d.dev_path.clone(),
                    model: d.model.clone(),
                    serial: d.serial.clone(),
                    wwn: d.wwn.clone(),
                    firmware: d.firmware.clone(),
                    ..DriveVerdict::default()
                })
                .collect(),
            None => Vec::new(),
        };
        // A run names what it tested: the other disks of the machine are
        // not part of its verdict.
        if let Some(targets) = &self.targets {
            drives.retain(|d| targets.iter().any(|t| names_same(&d.device, t)));
            for t in targets {
                if !drives.iter().any(|d| names_same(&d.device, t)) {
                    drives.push(DriveVerdict {
                        device: t.clone(),
                        ..DriveVerdict::default()
                    });
                }
            }
        }
        for t in &s.tests {
            for dev in &t.devices {
                if !drives.iter().any(|d| names_same(&d.device, dev)) {
                    drives.push(DriveVerdict {
                        device: dev.clone(),
                        ..DriveVerdict::default()
                    });
                }
            }
        }
        for d in &mut drives {
            let mine: Vec<&TestVerdict> = s
                .tests
                .iter()
                .filter(|t| t.devices.iter().any(|x| names_same(&d.device, x)))
                .collect();
            d.reasons = mine
                .iter()
                .filter(|t| !t.pass)
                .map(|t| format!("{}: {}", t.name, t.detail))
                .collect();
            d.verdict = if mine.is_empty() {
                "untested"
            } else if d.reasons.is_empty() {
                "pass"
            } else {
                "fail"
            }
            .into();
            d.act_load_passed = s
                .loads_reached
                .iter()
                .find(|(k, _)| names_same(&d.device, k))
                .map(|(_, v)| *v);
        }
        s.drives = drives;
        s.verdict = if s.tests.iter().any(|t| !t.pass) {
            "fail"
        } else if s.tests.is_empty() {
            s.reasons.push("no test results in the bundle".into());
            "incomplete"
        } else {
            "pass"
        }
        .into();
        self.summary
    }
}

/// A log in the bundle ("results/act/search-sdb/trial-2.log") and the path
/// a search recorded for it: the same when their last two components agree.
fn same_log(in_bundle: &str, recorded: &str) -> bool {
    fn tail(p: &str) -> Vec<&str> {
        p.rsplit('/').take(2).collect()
    }
    tail(in_bundle) == tail(recorded)
}

/// Whether `dev` is the drive `drive` or a partition on it: "/dev/sda" and
/// "sda" name the same drive, and a run that provisioned spare area tests
/// "/dev/sda1" or "/dev/nvme0n1p1", whose results are the drive's.
fn names_same(drive: &str, dev: &str) -> bool {
    let drive = drive.strip_prefix("/dev/").unwrap_or(drive);
    let dev = dev.strip_prefix("/dev/").unwrap_or(dev);
    let Some(rest) = dev.strip_prefix(drive) else {
        return false;
    };
    // The kernel puts a 'p' between a name ending in a digit and the number.
    let number = if drive.ends_with(|c: char| c.is_ascii_digit()) {
        rest.strip_prefix('p').unwrap_or("x")
    } else {
        rest
    };
    rest.is_empty() || (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod partition_tests {
    use super::names_same;

    #[test]
    fn a_partition_names_its_drive() {
        assert!(names_same("/dev/sda", "sda"));
        assert!(names_same("/dev/sda", "/dev/sda1"));
        assert!(names_same("/dev/nvme0n1", "/dev/nvme0n1p1"));
        assert!(names_same("vda", "/dev/vda12"));
        assert!(!names_same("/dev/sda", "/dev/sdab"));
        assert!(!names_same("/dev/nvme0n1", "/dev/nvme0n11"));
        assert!(!names_same("/dev/nvme0n1", "/dev/nvme0n1p"));
        assert!(!names_same("/dev/sda1", "/dev/sda"));
    }
}
