//! Profiles: what `storcert run` does, as TOML (docs/profile.md). Four are
//! built in (`quick`, the embedded default, `field-check`, `burn-in`,
//! `qualify`). A profile is validated whole, units and contradictions
//! included, before any device is touched; errors name the origin, line
//! and key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::act::config::{parse_duration_secs, parse_load};
use crate::util::size::parse_size;

mod stream;
pub use stream::{FsPlan, Stream, StreamPlan, Streams};

pub const BUILT_IN: [(&str, &str); 4] = [
    ("quick", include_str!("../profiles/quick.toml")),
    ("field-check", include_str!("../profiles/field-check.toml")),
    ("burn-in", include_str!("../profiles/burn-in.toml")),
    ("qualify", include_str!("../profiles/qualify.toml")),
];

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Field check: nothing is written but the results.
    #[serde(default)]
    pub read_only: bool,
    /// The whole run must fit in this ("36h"); checked before the start
    /// against the timed stages, and enforced while running.
    pub time_budget: Option<String>,
    /// What the image does at the end: none, poweroff, reboot, halt, shell.
    #[serde(default = "default_done")]
    pub done: String,
    /// Where runs keep their results (one folder per run).
    pub results: Option<PathBuf>,
    /// Seconds between plain progress lines (serial console, pipe).
    pub progress_interval: Option<String>,
    /// A folder node_exporter's textfile collector reads: the run keeps
    /// `storcert.prom` there with every heartbeat (`run::textfile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub textfile: Option<PathBuf>,
    /// The delivery or lot this machine's drives belong to ("PO-4471",
    /// "lot:2026-11"): the collector groups results by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// What a storage or network controller no driver binds, or firmware
    /// that did not load, does to the verdict: "warn" (the default) or
    /// "fail" (qualify, burn-in: drives nobody can see were not tested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<crate::results::policy::Severity>,
    #[serde(default)]
    pub devices: Devices,
    pub policy: Option<PolicyStage>,
    pub health: Option<Toggle>,
    pub provision: Option<Provision>,
    pub act: Option<Act>,
    /// ACT in phases, in order, each at its own spare area (`[[phase]]`):
    /// the same drives with and without over-provisioning in one run.
    #[serde(default, rename = "phase", skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// `[stream]`, or several named `[[stream]]` entries.
    pub stream: Option<Streams>,
    #[serde(default)]
    pub bundle: Bundle,
    pub upload: Option<Upload>,
    /// The parsed plan (not part of the file: made by `parse`).
    #[serde(skip)]
    pub plan: Plan,
}

/// The longest delivery/lot tag.
pub const MAX_TAG: usize = 64;

/// A tag is a short name from a purchase order or a lot label: letters,
/// digits and `.` `_` `-` `:` `/`, so it is the same in a file name, a
/// URL, a CSV cell and a page.
pub fn check_tag(t: &str) -> Result<(), String> {
    if t.is_empty() || t.len() > MAX_TAG {
        return Err(format!("must be 1 to {MAX_TAG} characters"));
    }
    match t
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-:/".contains(*c)))
    {
        Some(c) => Err(format!(
            "{:?}: only letters, digits and . _ - : / (found {c:?})",
            crate::util::text::printable(t, 80)
        )),
        None => Ok(()),
    }
}

fn default_done() -> String {
    "none".into()
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Devices {
    /// Qualify a sparse scratch file of this size instead of drives. It
    /// lives in the results root's `scratch/` folder while the run lasts
    /// and is removed when the run ends (an interrupted run keeps it to
    /// resume on).
    pub scratch: Option<String>,
    /// Keep the scratch file when the run ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_scratch: bool,
    /// "all": every drive the safety gate clears (or, read-only, every
    /// drive); "named": only `paths`/`serials`/`models`.
    pub select: Option<String>,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub serials: Vec<String>,
    /// Model globs (`*` and `?`).
    #[serde(default)]
    pub models: Vec<String>,
    /// Serials or WWNs of drives holding data that this run may destroy.
    #[serde(default)]
    pub destroy: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Toggle {
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyStage {
    pub file: Option<PathBuf>,
    pub inline: Option<String>,
    /// What findings about the rest of the machine (other disks,
    /// controllers, the server) do to the verdict: "warn" (the default)
    /// or "fail". Findings about the drives under test always count.
    #[serde(default, skip_serializing_if = "MachineFindings::is_warn")]
    pub machine: MachineFindings,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MachineFindings {
    #[default]
    Warn,
    Fail,
}

impl MachineFindings {
    fn is_warn(&self) -> bool {
        *self == MachineFindings::Warn
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Provision {
    pub spare_pct: f64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Act {
    #[serde(default)]
    pub prep: bool,
    #[serde(default)]
    pub storage: Vec<TimedLoad>,
    /// Each storage entry is one ACT run over all the drives at once
    /// (per-drive and overall verdicts), not one run per drive.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
    pub search: Option<Search>,
    pub index: Option<TimedLoad>,
    /// Run every ACT run (storage, index, search trials, phases) to its
    /// end even once a slice has failed whatever follows; by default a
    /// run stops there, failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_to_end: bool,
    /// Worker threads that carry the ACT runs going side by side (a
    /// run's per-drive runs, its searches' trials), or a wide run's;
    /// default: enough for their asked rate, at most the cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u16>,
}

/// One phase of a run: the spare area, then ACT on it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// storcert's partition leaving this share of each drive spare; 0
    /// takes storcert's partition away and tests the whole drive.
    pub spare_pct: f64,
    #[serde(default)]
    pub prep: bool,
    #[serde(default)]
    pub storage: Vec<TimedLoad>,
    /// As `act.wide`: each storage entry one run over all the drives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
    pub search: Option<Search>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimedLoad {
    /// "6x": 6 × (2000 reads + 1000 writes) a second per drive. May be
    /// left out where `config` gives read-reqs-per-sec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    pub duration: String,
    /// Any key of ACT's config file (act_storage.conf, or act_index.conf
    /// for `act.index`), as ACT spells it: "read-reqs-per-sec" = 6000,
    /// "record-bytes" = 1536, "microsecond-histograms" = true. The run
    /// sets device-names, test-duration-sec and file-size-mbytes itself.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, toml::Value>,
}

/// The keys a run sets itself from the drive and the entry's duration.
const RUN_OWNED_KEYS: [&str; 3] = ["device-names", "test-duration-sec", "file-size-mbytes"];

/// The keys that set the load.
pub const RATE_KEYS: [&str; 2] = ["read-reqs-per-sec", "write-reqs-per-sec"];

/// `config` as the lines of an ACT config file, for ACT's own parser (so
/// the keys and values a profile takes are exactly ACT's).
fn act_config_text(
    key: &str,
    config: &BTreeMap<String, toml::Value>,
) -> Result<String, (String, String)> {
    let mut text = String::new();
    for (k, v) in config {
        let bad = |why: String| Err((format!("{key}.config.{k}"), why));
        if RUN_OWNED_KEYS.contains(&k.as_str()) {
            return bad("set by the run from the drive and the duration".into());
        }
        if !k
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return bad("not an ACT config key".into());
        }
        let value = match v {
            toml::Value::Integer(i) if *i >= 0 => i.to_string(),
            toml::Value::Boolean(b) => if *b { "yes" } else { "no" }.to_string(),
            toml::Value::String(s)
                if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
            {
                s.clone()
            }
            other => {
                return bad(format!(
                    "{other} is not a value ACT takes (a whole number, true/false or a word)"
                ))
            }
        };
        text.push_str(&format!("{k}: {value}\n"));
    }
    Ok(text)
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// The highest load to try, in x (fractions allowed).
    pub max_load: f64,
    /// The search's resolution in x (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    pub trial: String,
    pub confirm: String,
    /// Drives alike (model, firmware, capacity) are searched as one group,
    /// one load per drive at once, each drive confirming on its own.
    #[serde(default)]
    pub parallel: bool,
    /// Trials (never the confirmation) may end early once statistics say
    /// how they end, at a 0.1% chance of deciding one the wrong way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub statistical: bool,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// The signing key (made on first use when missing).
    pub key: Option<PathBuf>,
    /// Where bundles wait for upload (default: the results partition's
    /// spool, else the results folder's).
    pub spool: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Upload {
    pub to: Vec<String>,
    #[serde(default)]
    pub allow_http: bool,
    pub ca_file: Option<PathBuf>,
    #[serde(default)]
    pub pin_sha256: Vec<String>,
    pub token_file: Option<PathBuf>,
    pub deadline: Option<String>,
}

/// A profile with every unit parsed, made once by `Profile::parse`: what
/// `storcert run` carries out, so nothing is parsed twice or two ways.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub progress_interval: Duration,
    pub time_budget: Option<Duration>,
    /// Bytes of the scratch file, when the profile tests one.
    pub scratch_bytes: Option<u64>,
    pub storage: Vec<TimedPlan>,
    pub search: Option<SearchPlan>,
    pub index: Option<TimedPlan>,
    pub phases: Vec<PhasePlan>,
    /// The streaming entries, in order.
    pub stream: Vec<StreamPlan>,
    pub upload: Option<UploadPlan>,
}

/// An ACT load for a time: `name` as the profile wrote it ("10x"), or
/// the rates it gave ("6000r-2000w").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimedPlan {
    pub name: String,
    pub load: f64,
    pub secs: u64,
    /// The entry's ACT config keys, as config-file lines.
    pub config: String,
    /// Whether `config` sets the read and write rates itself.
    pub sets_reads: bool,
    pub sets_writes: bool,
}

impl TimedPlan {
    /// The ACT config this entry runs as on `devices` for `secs`: its own
    /// keys, then the drives, the duration, and its load's rates (the
    /// load is per drive, so rates for all of them) where it gave none.
    /// The profile's check and the run build it here, alike.
    pub fn act_config<C: crate::act::config::RunConfig>(
        &self,
        devices: Vec<String>,
        file_size: u64,
        secs: u64,
        origin: &str,
    ) -> Result<C, crate::act::config::ConfigError> {
        let mut c = C::literal(&self.config, origin)?;
        let (r, w) = crate::act::config::rates_for_load(self.load, devices.len());
        c.set_run(
            devices,
            (
                (!self.sets_reads).then_some(r),
                (!self.sets_writes).then_some(w),
            ),
            secs,
            file_size,
        );
        c.check(origin)?;
        Ok(c)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhasePlan {
    /// 0: no spare partition.
    pub spare_pct: f64,
    pub prep: bool,
    pub storage: Vec<TimedPlan>,
    pub wide: bool,
    pub search: Option<SearchPlan>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchPlan {
    pub max_load: f64,
    pub step: f64,
    pub trial_secs: u64,
    pub confirm_secs: u64,
    pub parallel: bool,
    pub statistical: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UploadPlan {
    pub deadline: Duration,
    pub pins: Vec<[u8; 32]>,
}

/// A profile error, one line: origin, place, what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(pub String);

/// The line of `key = ` for `key` in `text`, for errors found after parsing.
fn line_of(text: &str, key: &str) -> String {
    // "stream[1].size": the second [stream] header, then the first "size"
    // under it; "time_budget": the first line that sets it. An error about
    // a table itself ("stream[1]"), or a field not written under its
    // header, points at the header; a table not found gives no line rather
    // than another table's field.
    let lines: Vec<&str> = text.lines().collect();
    let sets = |l: &str, k: &str| {
        let t = l.trim_start();
        t.starts_with(k) && t[k.len()..].trim_start().starts_with(['=', ']', '.'])
    };
    // A header as TOML reads it: "[[ stream ]] # two" is "[[stream]]".
    let header = |l: &str| -> Option<String> {
        let t = l.split('#').next().unwrap_or("").trim();
        t.starts_with('[')
            .then(|| t.chars().filter(|c| !c.is_whitespace()).collect())
    };
    let (table, field) = match key.split_once('.') {
        Some((t, rest)) => (t, rest.rsplit(['.', '[']).next().unwrap_or(rest)),
        None if key.contains('[') => (key, ""),
        None => ("", key),
    };
    let (name, index) = match table.split_once('[') {
        Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().unwrap_or(0)),
        None => (table, 0),
    };
    let found = if name.is_empty() {
        // A top-level key, or a whole table ("devices", "phase").
        let own = [format!("[{field}]"), format!("[[{field}]]")];
        lines
            .iter()
            .take_while(|l| header(l).is_none())
            .position(|l| sets(l, field))
            .or_else(|| {
                lines
                    .iter()
                    .position(|l| header(l).is_some_and(|h| own.contains(&h)))
            })
    } else {
        let own = [format!("[{name}]"), format!("[[{name}]]")];
        let at = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| header(l).is_some_and(|h| own.contains(&h)))
            .nth(index)
            .map(|(i, _)| i);
        match at {
            Some(h) => lines[h + 1..]
                .iter()
                .take_while(|l| header(l).is_none())
                .position(|l| !field.is_empty() && sets(l, field))
                .map(|n| h + 1 + n)
                .or(Some(h)),
            // A table written inline at the top (`act = { ... }`).
            None => lines
                .iter()
                .take_while(|l| header(l).is_none())
                .position(|l| sets(l, name)),
        }
    };
    found
        .map(|n| format!("line {}: ", n + 1))
        .unwrap_or_default()
}

impl Profile {
    pub fn built_in(name: &str) -> Option<Profile> {
        let (_, text) = BUILT_IN.iter().find(|(n, _)| *n == name)?;
        Some(
            Profile::parse(text, &format!("built-in profile {name}")).expect("built-ins are valid"),
        )
    }

    /// Parses and validates; `origin` names the source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            let place = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: ")
                })
                .unwrap_or_default();
            ProfileError(format!("{origin}: {place}{}", e.message()))
        })?;
        let mut p = p;
        p.plan = p.validate().map_err(|(key, msg)| {
            ProfileError(format!("{origin}: {}{key}: {msg}", line_of(text, &key)))
        })?;
        Ok(p)
    }

    fn storage_plan(key: &str, loads: &[TimedLoad]) -> Result<Vec<TimedPlan>, (String, String)> {
        let mut plans: Vec<TimedPlan> = Vec::new();
        for (i, t) in loads.iter().enumerate() {
            let k = format!("{key}[{i}]");
            let plan = Self::timed_plan(&k, t)?;
            // Checked whole, as ACT checks a config, with a stand-in drive:
            // a value ACT refuses fails here, not after drives are wiped.
            plan.act_config::<crate::act::config::StorageConfig>(
                vec!["/dev/profile-check".into()],
                0,
                plan.secs,
                &k,
            )
            .map_err(|e| (format!("{k}.config"), e.to_string()))?;
            // Stage ids and files are named after the entry: two of one
            // name would be one run.
            if plans.iter().any(|p| p.name == plan.name) {
                return Err((
                    k,
                    format!(
                        "a second entry named {:?} (loads and rates name the runs)",
                        plan.name
                    ),
                ));
            }
            plans.push(plan);
        }
        Ok(plans)
    }

    /// One ACT entry: its load (or rates), duration and config keys.
    fn timed_plan(k: &str, t: &TimedLoad) -> Result<TimedPlan, (String, String)> {
        let config = act_config_text(k, &t.config)?;
        let rate = |key: &str| {
            t.config
                .get(key)
                .and_then(|v| v.as_integer())
                .filter(|r| *r >= 0)
        };
        let (reads, writes) = (rate(RATE_KEYS[0]), rate(RATE_KEYS[1]));
        if t.load.is_some() && (reads.is_some() || writes.is_some()) {
            return Err((
                k.to_string(),
                "give a load or config rates, not both (the rates would run, the load's name \
                 would say otherwise)"
                    .into(),
            ));
        }
        let (name, load) = match (&t.load, reads) {
            (Some(l), _) => (
                l.clone(),
                parse_load(l).map_err(|e| (format!("{k}.load"), e.to_string()))?,
            ),
            (None, Some(r)) => (
                format!("{r}r-{}w", writes.map_or("?".into(), |w| w.to_string())),
                r as f64 / 2000.0,
            ),
            (None, None) => {
                return Err((
                    k.to_string(),
                    "give a load (\"6x\") or config.read-reqs-per-sec".into(),
                ))
            }
        };
        if reads.is_none() && writes.is_some() && t.load.is_none() {
            return Err((k.to_string(), "give a load or read-reqs-per-sec".into()));
        }
        Ok(TimedPlan {
            name,
            load,
            secs: Self::duration(&format!("{k}.duration"), &t.duration)?,
            config,
            sets_reads: reads.is_some(),
            sets_writes: writes.is_some(),
        })
    }

    fn search_plan(
        key: &str,
        s: &Search,
        run_to_end: bool,
    ) -> Result<SearchPlan, (String, String)> {
        if s.statistical && run_to_end {
            return Err((
                format!("{key}.statistical"),
                "trials decided by statistics stop early, and act.run_to_end runs every trial \
                 to its end: set one"
                    .into(),
            ));
        }
        let step = s.step.unwrap_or(1.0);
        crate::act::search::check_loads(s.max_load, step).map_err(|e| (key.to_string(), e))?;
        Ok(SearchPlan {
            max_load: s.max_load,
            step,
            trial_secs: Self::duration(&format!("{key}.trial"), &s.trial)?,
            confirm_secs: Self::duration(&format!("{key}.confirm"), &s.confirm)?,
            parallel: s.parallel,
            statistical: s.statistical,
        })
    }

    fn duration(key: &str, v: &str) -> Result<u64, (String, String)> {
        parse_duration_secs(v).map_err(|e| (key.to_string(), e.to_string()))
    }

    /// Every unit parsed into the plan and every contradiction found;
    /// Err((key, why)).
    fn validate(&self) -> Result<Plan, (String, String)> {
        let mut plan = Plan {
            progress_interval: Duration::from_secs(10),
            ..Plan::default()
        };
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        if self.name.trim().is_empty() {
            return bad("name", "must not be empty".into());
        }
        if !["none", "poweroff", "reboot", "halt", "shell"].contains(&self.done.as_str()) {
            return bad(
                "done",
                format!(
                    "{:?}: one of none, poweroff, reboot, halt, shell",
                    self.done
                ),
            );
        }
        if let Some(t) = &self.tag {
            check_tag(t).map_err(|e| ("tag".to_string(), e))?;
        }
        if let Some(i) = &self.progress_interval {
            plan.progress_interval =
                Duration::from_secs(Self::duration("progress_interval", i)?.max(1));
        }
        self.validate_devices(&mut plan)?;
        if let Some(p) = &self.policy {
            if p.file.is_some() == p.inline.is_some() {
                return bad("policy", "give exactly one of file or inline".into());
            }
            if let Some(f) = &p.file {
                crate::policy::Policy::from_file(f)
                    .map_err(|e| ("policy.file".into(), e.to_string()))?;
            }
            if let Some(t) = &p.inline {
                crate::policy::Policy::parse(t, "policy.inline")
                    .map_err(|e| ("policy.inline".into(), e.to_string()))?;
            }
        }
        if let Some(pr) = &self.provision {
            if !(pr.spare_pct > 0.0 && pr.spare_pct < 90.0) {
                return bad(
                    "provision.spare_pct",
                    format!("{} is not a percentage between 0 and 90", pr.spare_pct),
                );
            }
            if self.devices.scratch.is_some() {
                return bad("provision", "a scratch file cannot be provisioned".into());
            }
        }
        self.validate_act(&mut plan)?;
        self.validate_phases(&mut plan)?;
        if let Some(s) = &self.stream {
            plan.stream = stream::plan(s, self.read_only, plan.scratch_bytes)?;
        }
        if self.read_only {
            if self.provision.is_some() {
                return bad("provision", "contradicts read_only = true".into());
            }
            if self.act.is_some() {
                return bad("act", "contradicts read_only = true (ACT writes)".into());
            }
            if !self.phases.is_empty() {
                return bad("phase", "contradicts read_only = true (ACT writes)".into());
            }
            if self.devices.scratch.is_some() {
                return bad("devices.scratch", "contradicts read_only = true".into());
            }
        }
        self.validate_upload(&mut plan)?;
        if let Some(b) = &self.time_budget {
            let budget = Self::duration("time_budget", b)?;
            plan.time_budget = Some(Duration::from_secs(budget));
            let need = plan.timed_seconds();
            if need > budget {
                return bad(
                    "time_budget",
                    format!(
                        "{b} is less than the timed stages need ({})",
                        humantime::format_duration(Duration::from_secs(need))
                    ),
                );
            }
        }
        Ok(plan)
    }

    /// Which devices: a scratch file, a selection, or paths.
    fn validate_devices(&self, plan: &mut Plan) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        let d = &self.devices;
        if d.keep_scratch && d.scratch.is_none() {
            return bad(
                "devices.keep_scratch",
                "there is no scratch file to keep".into(),
            );
        }
        match (&d.scratch, d.select.as_deref()) {
            (Some(s), _) => {
                plan.scratch_bytes = Some(
                    parse_size(s).map_err(|e| ("devices.scratch".to_string(), e.to_string()))?,
                );
                if d.select.is_some()
                    || !d.paths.is_empty()
                    || !d.serials.is_empty()
                    || !d.models.is_empty()
                {
                    return bad(
                        "devices.scratch",
                        "a scratch file and drives are exclusive".into(),
                    );
                }
            }
            (None, Some("all")) => {}
            (None, Some("named")) | (None, None) => {
                if d.paths.is_empty() && d.serials.is_empty() && d.models.is_empty() {
                    return bad(
                        "devices",
                        "names no drive: set scratch, select = \"all\", or paths/serials/models"
                            .into(),
                    );
                }
            }
            (None, Some(other)) => {
                return bad("devices.select", format!("{other:?}: \"all\" or \"named\""))
            }
        }
        for p in &d.paths {
            if !std::path::Path::new(p).exists() {
                return bad("devices.paths", format!("{p}: no such device"));
            }
        }
        Ok(())
    }

    /// The ACT stages: prep, storage loads, search, index.
    fn validate_act(&self, plan: &mut Plan) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        let d = &self.devices;
        if let Some(a) = &self.act {
            if a.wide && a.storage.is_empty() {
                return bad("act.wide", "needs storage entries to run wide".into());
            }
            if a.wide && d.scratch.is_some() {
                return bad("act.wide", "a scratch file is one drive".into());
            }
            if a.threads.is_some_and(|n| !(1..=1024).contains(&n)) {
                return bad("act.threads", "must be from 1 to 1024".into());
            }
            plan.storage = Self::storage_plan("act.storage", &a.storage)?;
            plan.search = a
                .search
                .as_ref()
                .map(|s| Self::search_plan("act.search", s, a.run_to_end))
                .transpose()?;
            if let Some(t) = &a.index {
                let ix = Self::timed_plan("act.index", t)?;
                ix.act_config::<crate::act::config::IndexConfig>(
                    vec!["/dev/profile-check".into()],
                    0,
                    ix.secs,
                    "act.index",
                )
                .map_err(|e| ("act.index.config".to_string(), e.to_string()))?;
                plan.index = Some(ix);
            }
            if a.storage.is_empty() && a.search.is_none() && a.index.is_none() && !a.prep {
                return bad(
                    "act",
                    "names no ACT stage (prep, storage, search or index)".into(),
                );
            }
        }
        Ok(())
    }

    /// The phases (each a spare area with its own loads), and what they
    /// cannot share a profile with.
    fn validate_phases(&self, plan: &mut Plan) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        let d = &self.devices;
        for (i, ph) in self.phases.iter().enumerate() {
            let k = format!("phase[{i}]");
            if !(ph.spare_pct >= 0.0 && ph.spare_pct < 90.0) {
                return bad(
                    &format!("{k}.spare_pct"),
                    format!(
                        "{} is not a percentage from 0 (no spare partition) to under 90",
                        ph.spare_pct
                    ),
                );
            }
            if ph.storage.is_empty() && ph.search.is_none() {
                return bad(&k, "names no ACT run (storage or search)".into());
            }
            if ph.wide && ph.storage.is_empty() {
                return bad(
                    &format!("{k}.wide"),
                    "needs storage entries to run wide".into(),
                );
            }
            plan.phases.push(PhasePlan {
                spare_pct: ph.spare_pct,
                prep: ph.prep,
                wide: ph.wide,
                storage: Self::storage_plan(&format!("{k}.storage"), &ph.storage)?,
                search: ph
                    .search
                    .as_ref()
                    .map(|s| {
                        let run_to_end = self.act.as_ref().is_some_and(|a| a.run_to_end);
                        Self::search_plan(&format!("{k}.search"), s, run_to_end)
                    })
                    .transpose()?,
            });
        }
        if !self.phases.is_empty() {
            if d.scratch.is_some() {
                return bad("phase", "a scratch file has no spare area to vary".into());
            }
            if self.provision.is_some() {
                return bad(
                    "provision",
                    "phases set the spare area each; drop [provision]".into(),
                );
            }
            if self
                .act
                .as_ref()
                .is_some_and(|a| a.prep || !a.storage.is_empty() || a.search.is_some())
            {
                return bad(
                    "act",
                    "phases run ACT storage and search; keep only act.index beside them".into(),
                );
            }
        }
        Ok(())
    }

    /// Where results go and with what credentials.
    fn validate_upload(&self, plan: &mut Plan) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        if let Some(u) = &self.upload {
            if u.to.is_empty() {
                return bad("upload.to", "names no target".into());
            }
            for t in &u.to {
                let url = reqwest::Url::parse(t)
                    .map_err(|e| ("upload.to".to_string(), format!("{t}: {e}")))?;
                if url.scheme() == "http" && !u.allow_http {
                    return bad(
                        "upload.to",
                        format!("{t}: plain http needs allow_http = true"),
                    );
                }
                if url.scheme() != "http" && url.scheme() != "https" {
                    return bad("upload.to", format!("{t}: not http(s)"));
                }
                // Refused before the run, not after it: a presigned URL
                // would take the bundle without its signatures.
                if url.query().is_some() {
                    return bad(
                        "upload.to",
                        format!(
                            "{t}: a presigned URL (with a query) takes the bundle alone; \
                             upload to a collector or a bucket folder, or use `storcert upload` \
                             with --minisig-to and --intoto-to"
                        ),
                    );
                }
            }
            let mut up = UploadPlan {
                deadline: Duration::from_secs(600),
                pins: Vec::new(),
            };
            if let Some(dl) = &u.deadline {
                up.deadline = humantime::parse_duration(dl)
                    .map_err(|e| ("upload.deadline".to_string(), e.to_string()))?;
            }
            for p in &u.pin_sha256 {
                up.pins.push(
                    crate::upload::tls::parse_pin(p)
                        .map_err(|e| ("upload.pin_sha256".to_string(), e.to_string()))?,
                );
            }
            plan.upload = Some(up);
        }
        Ok(())
    }
}

impl Plan {
    /// Seconds of the timed stages (ACT runs; a search counts its
    /// confirmation and one trial per doubling up to max_load).
    pub fn timed_seconds(&self) -> u64 {
        let acts = |storage: &[TimedPlan], search: Option<&SearchPlan>| {
            let mut total: u64 = storage.iter().map(|t| t.secs).sum();
            if let Some(s) = search {
                let trials = s.max_load.max(1.0).log2().ceil() as u64 + 1;
                total += trials * s.trial_secs + s.confirm_secs;
            }
            total
        };
        acts(&self.storage, self.search.as_ref())
            + self
                .stream
                .iter()
                .filter_map(|s| s.duration_secs)
                .fold(0u64, u64::saturating_add)
            + self
                .phases
                .iter()
                .map(|p| acts(&p.storage, p.search.as_ref()))
                .sum::<u64>()
            + self.index.as_ref().map_or(0, |i| i.secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_makes_the_plan_run_carries_out() {
        let p = Profile::built_in("quick").unwrap();
        let plan = &p.plan;
        assert_eq!(plan.scratch_bytes, Some(4 << 30));
        assert_eq!(
            plan.storage,
            [
                TimedPlan {
                    name: "1x".into(),
                    load: 1.0,
                    secs: 20,
                    ..Default::default()
                },
                TimedPlan {
                    name: "10x".into(),
                    load: 10.0,
                    secs: 20,
                    ..Default::default()
                },
            ]
        );
        let st = &plan.stream[0];
        assert_eq!(
            (st.size, st.bs, st.qd, st.percent),
            (Some(1 << 30), 1 << 20, 32, 100)
        );
        assert_eq!(
            st.passes,
            [crate::stream::Pass::Write, crate::stream::Pass::Read]
        );
        assert_eq!(plan.progress_interval, Duration::from_secs(10));
        assert_eq!(plan.timed_seconds(), 40);
        let p = Profile::parse(
            "name = \"x\"\nprogress_interval = \"3s\"\ntime_budget = \"2h\"\n[devices]\nscratch = \"1G\"\n\
             [act]\nsearch = { max_load = 8, trial = \"1m\", confirm = \"10m\" }\n\
             [upload]\nto = [\"https://c.example/u/\"]\ndeadline = \"90s\"\n",
            "t",
        )
        .unwrap();
        let s = p.plan.search.as_ref().unwrap();
        assert_eq!(
            (
                s.max_load,
                s.step,
                s.trial_secs,
                s.confirm_secs,
                s.statistical
            ),
            (8.0, 1.0, 60, 600, false)
        );
        let stat = |more: &str| {
            Profile::parse(
                &format!("name = \"x\"\n[devices]\nscratch = \"1G\"\n[act]\n{more}search = {{ max_load = 8, trial = \"1m\", confirm = \"10m\", statistical = true }}\n"),
                "t",
            )
        };
        assert!(stat("").unwrap().plan.search.unwrap().statistical);
        let e = stat("run_to_end = true\n").unwrap_err().0;
        assert!(
            e.contains("act.search.statistical: trials decided by statistics"),
            "{e}"
        );
        assert_eq!(p.plan.timed_seconds(), 4 * 60 + 600);
        assert_eq!(p.plan.time_budget, Some(Duration::from_secs(7200)));
        assert_eq!(p.plan.progress_interval, Duration::from_secs(3));
        assert_eq!(
            p.plan.upload.as_ref().unwrap().deadline,
            Duration::from_secs(90)
        );
        let bad = Profile::parse(
            "name = \"x\"\n[devices]\nscratch = \"1G\"\n[stream]\nbs = \"8G\"\n",
            "t",
        );
        assert!(bad.unwrap_err().0.contains("stream.bs"));
    }

    #[test]
    fn built_ins_are_valid() {
        for (name, _) in BUILT_IN {
            let p = Profile::built_in(name).unwrap();
            assert_eq!(p.name, name);
        }
        assert!(Profile::built_in("quick")
            .unwrap()
            .devices
            .scratch
            .is_some());
        assert!(Profile::built_in("field-check").unwrap().read_only);
    }

    fn err(text: &str) -> String {
        Profile::parse(text, "p.toml").unwrap_err().0
    }

    #[test]
    fn invalid_profiles_are_refused_with_line_and_reason() {
        let e = err("name = \"x\"\nbogus = 1\n[devices]\nscratch = \"1G\"\n");
        assert!(
            e.starts_with("p.toml: line 2: unknown field `bogus`"),
            "{e}"
        );
        let e = err("name = \"x\"\n[devices]\nscratch = \"lots\"\n");
        assert!(
            e.contains("line 3: devices.scratch") && e.contains("not a size"),
            "{e}"
        );
        let e = err("name = \"x\"\n[devices]\nscratch = \"1G\"\n[act]\nstorage = [{ load = \"1x\", duration = \"forever\" }]\n");
        assert!(e.contains("act.storage[0].duration"), "{e}");
        let e = err("name = \"x\"\n[devices]\npaths = [\"/dev/no-such-disk\"]\n");
        assert!(e.contains("/dev/no-such-disk: no such device"), "{e}");
        let e = err(
            "name = \"x\"\nread_only = true\n[devices]\nselect = \"all\"\n[act]\nprep = true\n",
        );
        assert!(e.contains("contradicts read_only"), "{e}");
        let e = err("name = \"x\"\ntime_budget = \"1h\"\n[devices]\nscratch = \"1G\"\n[act]\nstorage = [{ load = \"1x\", duration = \"2h\" }]\n");
        assert!(
            e.contains("line 2: time_budget") && e.contains("less than"),
            "{e}"
        );
        let e = err("name = \"x\"\n[devices]\nscratch = \"1G\"\nselect = \"all\"\n");
        assert!(e.contains("exclusive"), "{e}");
        let e = err("name = \"x\"\n[devices]\nscratch = \"1G\"\n[upload]\nto = [\"http://c/\"]\n");
        assert!(e.contains("allow_http"), "{e}");
        let e = err("name = \"x\"\n[devices]\nscratch = \"1G\"\n[upload]\nto = [\"https://b/x.tar.zst?X-Amz-Signature=1\"]\n");
        assert!(e.contains("presigned URL"), "{e}");
        let e = err(
            "name = \"x\"\n[devices]\nselect = \"all\"\n[stream]\nsize = \"1G\"\npercent = 10\n",
        );
        assert!(e.contains("size or percent"), "{e}");
        let e = err("name = \"x\"\ndone = \"explode\"\n[devices]\nselect = \"all\"\n");
        assert!(e.contains("line 2: done"), "{e}");
    }

    #[test]
    fn act_entries_take_rates_and_act_s_own_config_keys() {
        const DRIVES: &str = "name = \"x\"\n[devices]\nselect = \"all\"\n[act]\n";
        let p = Profile::parse(
            &format!(
                "{DRIVES}storage = [{{ duration = \"1h\", config = {{ \"read-reqs-per-sec\" = 6000, \
                 \"write-reqs-per-sec\" = 6000, \"record-bytes\" = 4096, \"microsecond-histograms\" = true }} }}, \
                 {{ load = \"2x\", duration = \"1h\", config = {{ \"large-block-op-kbytes\" = 256 }} }}]\n\
                 index = {{ load = \"1x\", duration = \"1m\", config = {{ \"cache-threads\" = 4 }} }}\n"
            ),
            "p.toml",
        )
        .unwrap();
        let s = &p.plan.storage;
        assert_eq!((s[0].name.as_str(), s[0].load), ("6000r-6000w", 3.0));
        assert!(s[0].sets_reads && s[0].sets_writes);
        assert_eq!(
            s[0].config,
            "microsecond-histograms: yes\nread-reqs-per-sec: 6000\nrecord-bytes: 4096\nwrite-reqs-per-sec: 6000\n"
        );
        assert_eq!((s[1].name.as_str(), s[1].load), ("2x", 2.0));
        assert!(!s[1].sets_reads);
        assert_eq!(p.plan.index.as_ref().unwrap().config, "cache-threads: 4\n");

        let entry = |e: &str| err(&format!("{DRIVES}storage = [{e}]\n"));
        let e = entry("{ duration = \"1h\" }");
        assert!(e.contains("act.storage[0]: give a load"), "{e}");
        let e =
            entry("{ load = \"1x\", duration = \"1h\", config = { \"device-names\" = \"sdb\" } }");
        assert!(
            e.contains("act.storage[0].config.device-names: set by the run"),
            "{e}"
        );
        let e = entry("{ load = \"1x\", duration = \"1h\", config = { \"record-byte\" = 1 } }");
        assert!(e.contains("unknown config item \"record-byte\""), "{e}");
        let e = entry("{ load = \"1x\", duration = \"1h\", config = { \"record-bytes\" = -1 } }");
        assert!(
            e.contains("record-bytes: -1 is not a value ACT takes"),
            "{e}"
        );
        let e =
            entry("{ load = \"1x\", duration = \"1h\", config = { \"update-pct\" = \"a b\" } }");
        assert!(e.contains("update-pct"), "{e}");
        let e = entry(
            "{ load = \"2x\", duration = \"1h\", config = { \"read-reqs-per-sec\" = 20000 } }",
        );
        assert!(
            e.contains("act.storage[0]: give a load or config rates, not both"),
            "{e}"
        );
        // Values ACT's own check refuses are refused with the profile.
        let e =
            entry("{ load = \"1x\", duration = \"1h\", config = { \"report-interval-sec\" = 0 } }");
        assert!(e.contains("act.storage[0].config"), "{e}");
        let e =
            entry("{ load = \"1x\", duration = \"1h\", config = { \"record-bytes\" = 9000000 } }");
        assert!(e.contains("act.storage[0].config"), "{e}");
        let e = entry(
            "{ load = \"1x\", duration = \"1h\" }, { load = \"1x\", duration = \"2h\", config = { \"record-bytes\" = 4096 } }",
        );
        assert!(
            e.contains("act.storage[1]: a second entry named \"1x\""),
            "{e}"
        );
        let e = err(&format!(
            "{DRIVES}index = {{ load = \"1x\", duration = \"1m\", config = {{ \"record-bytes\" = 1 }} }}\n"
        ));
        assert!(
            e.contains("act.index.config") && e.contains("record-bytes"),
            "{e}"
        );
    }

    #[test]
    fn phases_plan_each_spare_area_and_its_loads() {
        const DRIVES: &str = "name = \"x\"\ntime_budget = \"3h\"\n[devices]\nselect = \"all\"\n";
        let p = Profile::parse(
            &format!(
                "{DRIVES}[[phase]]\nspare_pct = 0\nstorage = [{{ load = \"1x\", duration = \"1h\" }}]\n\
                 [[phase]]\nspare_pct = 21\nprep = true\n\
                 search = {{ max_load = 4, trial = \"10m\", confirm = \"30m\" }}\n"
            ),
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.plan.phases.len(), 2);
        assert_eq!(p.plan.phases[0].spare_pct, 0.0);
        assert_eq!(p.plan.phases[0].storage[0].secs, 3600);
        assert!(p.plan.phases[1].prep);
        assert_eq!(p.plan.phases[1].search.as_ref().unwrap().max_load, 4.0);
        // 1 h, then 3 trials of 10 min and a 30 min confirmation.
        assert_eq!(p.plan.timed_seconds(), 3600 + 3 * 600 + 1800);

        let phase = |body: &str| err(&format!("{DRIVES}[[phase]]\n{body}"));
        let e = phase("spare_pct = 95\nstorage = [{ load = \"1x\", duration = \"1h\" }]\n");
        assert!(e.contains("phase[0].spare_pct") && e.contains("95"), "{e}");
        let e = phase("spare_pct = 10\n");
        assert!(e.contains("phase[0]: names no ACT run"), "{e}");
        let e = phase("spare_pct = 10\nstorage = [{ load = \"fast\", duration = \"1h\" }]\n");
        assert!(e.contains("phase[0].storage[0].load"), "{e}");
        let e = phase(
            "spare_pct = 10\nsearch = { max_load = 4, trial = \"1m\", confirm = \"soon\" }\n",
        );
        assert!(e.contains("phase[0].search.confirm"), "{e}");
        let e = phase("spare_pct = 10\nstorage = [{ load = \"1x\", duration = \"5h\" }]\n");
        assert!(e.contains("time_budget"), "{e}");
        let one = "[[phase]]\nspare_pct = 10\nstorage = [{ load = \"1x\", duration = \"1h\" }]\n";
        let e = err(&format!("{DRIVES}[provision]\nspare_pct = 5\n{one}"));
        assert!(e.contains("drop [provision]"), "{e}");
        let e = err(&format!("{DRIVES}[act]\nprep = true\n{one}"));
        assert!(e.contains("keep only act.index"), "{e}");
        let e = err(&format!("name = \"x\"\n[devices]\nscratch = \"1G\"\n{one}"));
        assert!(e.contains("a scratch file has no spare area"), "{e}");
        let e = err(&format!(
            "name = \"x\"\nread_only = true\n[devices]\nselect = \"all\"\n{one}"
        ));
        assert!(e.contains("contradicts read_only"), "{e}");
    }

    #[test]
    fn a_tag_is_a_short_plain_name() {
        let with = |t: &str| {
            Profile::parse(
                &format!("name = \"x\"\ntag = {t:?}\n[devices]\nscratch = \"1G\"\n"),
                "t",
            )
        };
        assert_eq!(
            with("PO-4471/lot:2").unwrap().tag.as_deref(),
            Some("PO-4471/lot:2")
        );
        for bad in [
            "",
            "a b",
            "x<script>",
            "=cmd|' /C calc'!A0",
            &"x".repeat(65),
            "caf\u{e9}",
        ] {
            let e = with(bad).unwrap_err().0;
            assert!(e.contains("tag"), "{bad}: {e}");
        }
    }
}
