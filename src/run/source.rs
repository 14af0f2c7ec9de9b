//! Where a run's profile comes from, in order: `--profile FILE|URL|NAME`,
//! the kernel command line (`storcert.profile=`), `profile.toml` on the
//! partition labelled STORCERT, then the built-in default: `field-check`
//! when booted from storcert's image (every real drive, non-destructive),
//! `quick` elsewhere (a scratch file). Settings a PXE
//! operator needs come from the kernel command line on top of whichever
//! profile won (docs/profile.md lists the keys).

use std::path::Path;

use super::profile::{Profile, ProfileError, TimedLoad, Upload};

/// The `storcert.*` keys of a kernel command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cmdline {
    pub profile: Option<String>,
    pub upload: Vec<String>,
    pub done: Option<String>,
    pub devices: Option<String>,
    pub load: Option<String>,
    pub duration: Option<String>,
    pub allow_http: bool,
    pub pin: Vec<String>,
    pub interval: Option<String>,
    pub debug: bool,
    pub tag: Option<String>,
    pub textfile: Option<String>,
}

const KEYS: &str = "profile, upload, done, devices, load, duration, allow_http, pin, interval, \
                    debug, tag, textfile";

impl Cmdline {
    /// Parses `/proc/cmdline` text; words that are not `storcert.*` are
    /// the kernel's and ignored, an unknown `storcert.*` key is an error.
    pub fn parse(text: &str) -> Result<Cmdline, ProfileError> {
        let mut c = Cmdline::default();
        for word in text.split_whitespace() {
            let Some(kv) = word.strip_prefix("storcert.") else {
                continue;
            };
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let need = |v: &str| {
                if v.is_empty() {
                    Err(ProfileError(format!(
                        "kernel command line: storcert.{k} needs a value"
                    )))
                } else {
                    Ok(v.to_string())
                }
            };
            let flag = |v: &str| matches!(v, "" | "1" | "yes" | "true");
            match k {
                "profile" => c.profile = Some(need(v)?),
                "upload" => c.upload.extend(need(v)?.split(',').map(String::from)),
                "done" => c.done = Some(need(v)?),
                "devices" => c.devices = Some(need(v)?),
                "load" => c.load = Some(need(v)?),
                "duration" => c.duration = Some(need(v)?),
                "allow_http" => c.allow_http = flag(v),
                "pin" => c.pin.push(need(v)?),
                "interval" => c.interval = Some(need(v)?),
                "debug" => c.debug = flag(v),
                "tag" => c.tag = Some(need(v)?),
                "textfile" => c.textfile = Some(need(v)?),
                _ => {
                    return Err(ProfileError(format!(
                        "kernel command line: unknown key storcert.{k} (known: {KEYS})"
                    )))
                }
            }
        }
        Ok(c)
    }

    /// Applies the settings on top of a profile (which is validated
    /// again afterwards by the caller).
    fn apply(&self, p: &mut Profile) {
        if let Some(d) = &self.done {
            p.done = d.clone();
        }
        if let Some(i) = &self.interval {
            p.progress_interval = Some(i.clone());
        }
        if let Some(t) = &self.tag {
            p.tag = Some(t.clone());
        }
        if let Some(t) = &self.textfile {
            p.textfile = Some(t.into());
        }
        if let Some(d) = &self.devices {
            p.devices.scratch = None;
            p.devices.paths.clear();
            p.devices.serials.clear();
            p.devices.models.clear();
            if d == "all" {
                p.devices.select = Some("all".into());
            } else {
                p.devices.select = Some("named".into());
                for w in d.split(',') {
                    match w.strip_prefix("serial:") {
                        Some(s) => p.devices.serials.push(s.to_string()),
                        None => p.devices.paths.push(w.to_string()),
                    }
                }
            }
        }
        if self.load.is_some() || self.duration.is_some() {
            let act = p.act.get_or_insert_with(Default::default);
            // storcert.load= names the one load to run: it replaces the
            // profile's list (two equal loads would be one stage run once).
            if let Some(l) = &self.load {
                let duration = act
                    .storage
                    .first()
                    .map(|t| t.duration.clone())
                    .unwrap_or_else(|| "1h".into());
                // The first entry's config keys stay, but its rates: the
                // load given here sets them.
                let mut config = act
                    .storage
                    .first()
                    .map(|t| t.config.clone())
                    .unwrap_or_default();
                config.retain(|k, _| !super::profile::RATE_KEYS.contains(&k.as_str()));
                act.storage = vec![TimedLoad {
                    load: Some(l.clone()),
                    duration,
                    config,
                }];
            }
            for t in &mut act.storage {
                if let Some(d) = &self.duration {
                    t.duration = d.clone();
                }
            }
        }
        if !self.upload.is_empty() || self.allow_http || !self.pin.is_empty() {
            let u = p.upload.get_or_insert_with(Upload::default);
            if !self.upload.is_empty() {
                u.to = self.upload.clone();
            }
            u.allow_http |= self.allow_http;
            u.pin_sha256.extend(self.pin.iter().cloned());
        }
    }
}

/// A profile and a sentence saying where it came from.
#[derive(Debug)]
pub struct Resolved {
    pub profile: Profile,
    pub source: String,
}

fn fetch(url: &str) -> Result<String, ProfileError> {
    let fail = |e: String| ProfileError(format!("profile {url}: {e}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(e.to_string()))?;
    rt.block_on(async {
        crate::upload::tls::use_ring();
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut last = String::new();
        // A PXE-booted machine may ask before the network is fully up.
        for attempt in 0..5u32 {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_secs(1 << attempt)).await;
            }
            match client.get(url).send().await {
                Ok(r) if r.status().is_success() => {
                    return r.text().await.map_err(|e| fail(e.to_string()))
                }
                Ok(r) if r.status().is_client_error() => {
                    return Err(fail(format!("HTTP {}", r.status())))
                }
                Ok(r) => last = format!("HTTP {}", r.status()),
                Err(e) => last = e.to_string(),
            }
        }
        Err(fail(last))
    })
}

/// A profile named by `--profile` or `storcert.profile=`: a built-in
/// name, an http(s) URL, or a file.
fn load(spec: &str, how: &str) -> Result<Resolved, ProfileError> {
    if let Some(p) = Profile::built_in(spec) {
        return Ok(Resolved {
            profile: p,
            source: format!("built-in profile {spec} ({how})"),
        });
    }
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let text = fetch(spec)?;
        return Ok(Resolved {
            profile: Profile::parse(&text, spec)?,
            source: format!("{spec} ({how})"),
        });
    }
    let text = crate::input::read_text(Path::new(spec))
        .map_err(|e| ProfileError(format!("profile {spec}: {e} (not a file, URL or built-in name: quick, field-check, burn-in, qualify)")))?;
    Ok(Resolved {
        profile: Profile::parse(&text, spec)?,
        source: format!("{spec} ({how})"),
    })
}

/// Picks the profile: `explicit` (--profile), the kernel command line,
/// `partition`/profile.toml, or the built-in default (`field-check` in
/// the boot `image`, else `quick`); then applies the command line's
/// settings and validates the result whole.
pub fn resolve(
    explicit: Option<&str>,
    cmdline: &Cmdline,
    partition: Option<&Path>,
    image: bool,
) -> Result<Resolved, ProfileError> {
    let mut r = if let Some(spec) = explicit {
        load(spec, "--profile")?
    } else if let Some(spec) = &cmdline.profile {
        load(spec, "kernel command line storcert.profile")?
    } else if let Some(file) = partition
        .map(|p| p.join("profile.toml"))
        .filter(|f| f.exists())
    {
        let text = crate::input::read_text(&file)
            .map_err(|e| ProfileError(format!("{}: {e}", file.display())))?;
        Resolved {
            profile: Profile::parse(&text, &file.display().to_string())?,
            source: format!("{} (results partition)", file.display()),
        }
    } else if image {
        // A scratch file in RAM would test nothing of the machine.
        Resolved {
            profile: Profile::built_in("field-check").expect("built in"),
            source: "built-in profile field-check (the boot image's default)".into(),
        }
    } else {
        Resolved {
            profile: Profile::built_in("quick").expect("built in"),
            source: "built-in profile quick (the default)".into(),
        }
    };
    if *cmdline != Cmdline::default() {
        cmdline.apply(&mut r.profile);
        let text = toml::to_string(&r.profile).map_err(|e| ProfileError(e.to_string()))?;
        r.profile = Profile::parse(
            &text,
            &format!("{} with the kernel command line's settings", r.source),
        )?;
        r.source += ", with the kernel command line's settings";
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_keys_and_errors() {
        let c = Cmdline::parse(
            "BOOT_IMAGE=/vmlinuz quiet storcert.profile=burn-in storcert.upload=https://a/,https://b/ \
             storcert.done=poweroff storcert.load=12x storcert.allow_http storcert.devices=/dev/sdb,serial:S1",
        )
        .unwrap();
        assert_eq!(c.profile.as_deref(), Some("burn-in"));
        assert_eq!(c.upload, ["https://a/", "https://b/"]);
        assert!(c.allow_http);
        let e = Cmdline::parse("storcert.profle=x").unwrap_err().0;
        assert!(e.contains("unknown key storcert.profle"), "{e}");
        let e = Cmdline::parse("storcert.upload=").unwrap_err().0;
        assert!(e.contains("needs a value"), "{e}");
        // The delivery tag lands in the profile, and is checked with it.
        let c = Cmdline::parse("storcert.tag=PO-4471").unwrap();
        let mut p = Profile::parse("name = \"x\"\n[devices]\nscratch = \"1G\"\n", "t").unwrap();
        c.apply(&mut p);
        assert_eq!(p.tag.as_deref(), Some("PO-4471"));
        // So does node_exporter's textfile folder.
        let c = Cmdline::parse("storcert.textfile=/run/node-exporter").unwrap();
        c.apply(&mut p);
        assert_eq!(p.textfile, Some("/run/node-exporter".into()));
        let e = Cmdline::parse("storcert.tag=").unwrap_err().0;
        assert!(e.contains("needs a value"), "{e}");
    }

    #[test]
    fn precedence_and_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("profile.toml"),
            "name = \"from-stick\"\n[devices]\nscratch = \"1G\"\n",
        )
        .unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "name = \"from-file\"\n[devices]\nscratch = \"1G\"\n").unwrap();
        let none = Cmdline::default();
        // Built-in default last.
        assert_eq!(
            resolve(None, &none, None, false).unwrap().profile.name,
            "quick"
        );
        // Booted from the image: every real drive, not a scratch file.
        let r = resolve(None, &none, None, true).unwrap();
        assert_eq!(r.profile.name, "field-check");
        assert!(r.source.contains("boot image"), "{}", r.source);
        // The stick's profile beats the default.
        let r = resolve(None, &none, Some(dir.path()), false).unwrap();
        assert_eq!(r.profile.name, "from-stick");
        assert!(r.source.contains("results partition"));
        // The kernel command line beats the stick.
        let cmd = Cmdline::parse("storcert.profile=field-check").unwrap();
        assert_eq!(
            resolve(None, &cmd, Some(dir.path()), false)
                .unwrap()
                .profile
                .name,
            "field-check"
        );
        // --profile beats everything.
        let r = resolve(Some(file.to_str().unwrap()), &cmd, Some(dir.path()), false).unwrap();
        assert_eq!(r.profile.name, "from-file");
        // Settings apply on top, and are validated with the profile.
        let cmd =
            Cmdline::parse("storcert.load=12x storcert.duration=2h storcert.done=reboot").unwrap();
        let r = resolve(Some("burn-in"), &cmd, None, false).unwrap();
        assert_eq!(
            r.profile.act.as_ref().unwrap().storage[0].load.as_deref(),
            Some("12x")
        );
        assert_eq!(r.profile.done, "reboot");
        // On a profile with several loads (quick: 1x and 10x) it is the one load.
        let one = Cmdline::parse("storcert.load=3x").unwrap();
        let r = resolve(Some("quick"), &one, None, false).unwrap();
        let storage = &r.profile.act.as_ref().unwrap().storage;
        assert_eq!(storage.len(), 1, "{storage:?}");
        assert_eq!(storage[0].load.as_deref(), Some("3x"));
        let bad = Cmdline::parse("storcert.load=lots").unwrap();
        assert!(resolve(Some("burn-in"), &bad, None, false).is_err());
        let bad = Cmdline::parse("storcert.upload=http://c/").unwrap();
        let e = resolve(None, &bad, None, false).unwrap_err().0;
        assert!(e.contains("allow_http"), "{e}");
        // A missing file says what was expected.
        let e = resolve(Some("/no/such.toml"), &none, None, false)
            .unwrap_err()
            .0;
        assert!(e.contains("built-in name"), "{e}");
    }
}
