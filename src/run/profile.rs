//! Profiles: what `storcert run` does, as TOML (docs/profile.md). Four are
//! built in (`quick`, the embedded default, `field-check`, `burn-in`,
//! `qualify`). A profile is validated whole, units and contradictions
//! included, before any device is touched; errors name the origin, line
//! and key.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::act::config::{parse_duration_secs, parse_load};
use crate::util::size::parse_size;

pub const BUILT_IN: [(&str, &str); 4] = [
    ("quick", include_str!("profiles/quick.toml")),
    ("field-check", include_str!("profiles/field-check.toml")),
    ("burn-in", include_str!("profiles/burn-in.toml")),
    ("qualify", include_str!("profiles/qualify.toml")),
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
    #[serde(default)]
    pub devices: Devices,
    pub policy: Option<PolicyStage>,
    pub health: Option<Toggle>,
    pub provision: Option<Provision>,
    pub act: Option<Act>,
    pub stream: Option<Stream>,
    #[serde(default)]
    pub bundle: Bundle,
    pub upload: Option<Upload>,
}

fn default_done() -> String {
    "none".into()
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Devices {
    /// Qualify a sparse scratch file of this size in the current folder
    /// instead of drives.
    pub scratch: Option<String>,
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
    pub search: Option<Search>,
    pub index: Option<TimedLoad>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimedLoad {
    pub load: String,
    pub duration: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub max_load: u32,
    pub trial: String,
    pub confirm: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    pub size: Option<String>,
    pub percent: Option<u32>,
    pub bs: Option<String>,
    pub qd: Option<u32>,
    pub jobs: Option<u32>,
    #[serde(default)]
    pub verify: bool,
    /// Passes in order: "write", "read" (default both).
    pub pattern: Option<Vec<String>>,
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

/// A profile error, one line: origin, place, what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(pub String);

/// The line of `key = ` for `key` in `text`, for errors found after parsing.
fn line_of(text: &str, key: &str) -> String {
    text.lines()
        .position(|l| {
            let t = l.trim_start();
            t.starts_with(key) && t[key.len()..].trim_start().starts_with(['=', ']', '.'])
        })
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
        p.validate().map_err(|(key, msg)| {
            ProfileError(format!(
                "{origin}: {}{key}: {msg}",
                line_of(text, key.split(['.', '[']).next_back().unwrap_or(&key))
            ))
        })?;
        Ok(p)
    }

    fn duration(key: &str, v: &str) -> Result<u64, (String, String)> {
        parse_duration_secs(v).map_err(|e| (key.to_string(), e.to_string()))
    }

    /// Every unit parsed and every contradiction found; Err((key, why)).
    fn validate(&self) -> Result<(), (String, String)> {
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
        if let Some(i) = &self.progress_interval {
            Self::duration("progress_interval", i)?;
        }
        let d = &self.devices;
        match (&d.scratch, d.select.as_deref()) {
            (Some(s), _) => {
                parse_size(s).map_err(|e| ("devices.scratch".to_string(), e.to_string()))?;
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
            if d.scratch.is_some() {
                return bad("provision", "a scratch file cannot be provisioned".into());
            }
        }
        if let Some(a) = &self.act {
            for (i, t) in a.storage.iter().enumerate() {
                let k = format!("act.storage[{i}]");
                parse_load(&t.load).map_err(|e| (format!("{k}.load"), e.to_string()))?;
                Self::duration(&format!("{k}.duration"), &t.duration)?;
            }
            if let Some(s) = &a.search {
                if s.max_load < 1 {
                    return bad("act.search.max_load", "must be at least 1".into());
                }
                Self::duration("act.search.trial", &s.trial)?;
                Self::duration("act.search.confirm", &s.confirm)?;
            }
            if let Some(t) = &a.index {
                parse_load(&t.load).map_err(|e| ("act.index.load".to_string(), e.to_string()))?;
                Self::duration("act.index.duration", &t.duration)?;
            }
            if a.storage.is_empty() && a.search.is_none() && a.index.is_none() && !a.prep {
                return bad(
                    "act",
                    "names no ACT stage (prep, storage, search or index)".into(),
                );
            }
        }
        if let Some(s) = &self.stream {
            if s.size.is_some() && s.percent.is_some() {
                return bad("stream", "give size or percent, not both".into());
            }
            if let Some(v) = &s.size {
                parse_size(v).map_err(|e| ("stream.size".to_string(), e.to_string()))?;
            }
            if let Some(p) = s.percent {
                if !(1..=100).contains(&p) {
                    return bad("stream.percent", format!("{p} is not 1-100"));
                }
            }
            if let Some(v) = &s.bs {
                parse_size(v).map_err(|e| ("stream.bs".to_string(), e.to_string()))?;
            }
            for p in s.pattern.iter().flatten() {
                if p != "read" && p != "write" {
                    return bad("stream.pattern", format!("{p:?}: \"write\" or \"read\""));
                }
            }
            if self.read_only
                && s.pattern
                    .as_ref()
                    .is_none_or(|p| p.iter().any(|x| x == "write"))
            {
                return bad("stream.pattern", "read_only allows only [\"read\"]".into());
            }
            if s.verify
                && s.pattern
                    .as_ref()
                    .is_some_and(|p| !p.iter().any(|x| x == "write"))
            {
                return bad("stream.verify", "verify needs the write pass".into());
            }
        }
        if self.read_only {
            if self.provision.is_some() {
                return bad("provision", "contradicts read_only = true".into());
            }
            if self.act.is_some() {
                return bad("act", "contradicts read_only = true (ACT writes)".into());
            }
            if self.devices.scratch.is_some() {
                return bad("devices.scratch", "contradicts read_only = true".into());
            }
        }
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
            }
            if let Some(dl) = &u.deadline {
                humantime::parse_duration(dl)
                    .map_err(|e| ("upload.deadline".to_string(), e.to_string()))?;
            }
            for p in &u.pin_sha256 {
                crate::upload::tls::parse_pin(p)
                    .map_err(|e| ("upload.pin_sha256".to_string(), e.to_string()))?;
            }
        }
        if let Some(b) = &self.time_budget {
            let budget = Self::duration("time_budget", b)?;
            let need = self.timed_seconds();
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
        Ok(())
    }

    /// Seconds of the timed stages (ACT runs; a search counts its
    /// confirmation and one trial per doubling up to max_load).
    pub fn timed_seconds(&self) -> u64 {
        let secs = |d: &str| parse_duration_secs(d).unwrap_or(0);
        let Some(a) = &self.act else { return 0 };
        let mut total: u64 = a.storage.iter().map(|t| secs(&t.duration)).sum();
        if let Some(s) = &a.search {
            let trials = (s.max_load.max(1) as f64).log2().ceil() as u64 + 1;
            total += trials * secs(&s.trial) + secs(&s.confirm);
        }
        if let Some(i) = &a.index {
            total += secs(&i.duration);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = err(
            "name = \"x\"\n[devices]\nselect = \"all\"\n[stream]\nsize = \"1G\"\npercent = 10\n",
        );
        assert!(e.contains("size or percent"), "{e}");
        let e = err("name = \"x\"\ndone = \"explode\"\n[devices]\nselect = \"all\"\n");
        assert!(e.contains("line 2: done"), "{e}");
    }
}
