//! `storcert run`: a whole qualification from a profile, unattended.
//!
//! inventory → policy → health before → provision → ACT prep → ACT
//! storage / search / index → stream → health after → report → bundle
//! (signed, spooled) → upload. Every stage is journalled (journal.rs);
//! a run started again after a kill or power loss continues from the
//! last finished stage. Drives run in parallel where the stage allows
//! (one thread per drive for ACT and prep; stream drives all at once).

pub mod boot;
pub mod heartbeat;
pub mod journal;
pub mod plan;
pub mod profile;
pub mod source;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use sha2::Digest;

use self::journal::{Journal, JournalFile};
use self::profile::Profile;
use crate::act::config::{IndexConfig, StorageConfig};
use crate::inventory::{self, model::Inventory, Roots, ScanOptions};
use crate::output::console::Console;
use crate::results::act::{Prep, PREP_SCHEMA};
pub use crate::results::run::Target;
use crate::results::run::{RunNotes, Targets, NOTES_SCHEMA, TARGETS_SCHEMA};
use crate::results::{Artefact, Verdict};
use crate::util::fs::write_durably;

/// Name of the marker naming the unfinished run in the results root.
const CURRENT: &str = "current";
/// The scratch file of a profile with `devices.scratch`.
pub const SCRATCH: &str = "storcert-scratch.img";

pub struct Options {
    pub profile: Profile,
    pub source: String,
    /// Overrides the profile's results root.
    pub results_root: Option<PathBuf>,
    /// Overrides the profile's signing key.
    pub key: Option<PathBuf>,
    /// Plain progress lines even on a terminal.
    pub plain: bool,
    /// Abandon an unfinished run instead of resuming it.
    pub fresh: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Serialize)]
pub struct Ending {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub run_dir: PathBuf,
    pub bundle: Option<PathBuf>,
    pub bundle_sha256: Option<String>,
    pub delivered_to: Vec<String>,
    pub done_action: String,
}

fn label_of(path: &str) -> String {
    path.rsplit('/')
        .next()
        .unwrap_or(path)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn sha_hex(data: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(data))
}

/// The results root: the profile's, else the results partition's, else
/// ./storcert-results.
fn results_root(opts: &Options) -> PathBuf {
    opts.results_root
        .clone()
        .or_else(|| opts.profile.results.clone())
        .or_else(|| {
            crate::upload::spool::results_partition(&Roots::default())
                .map(|m| m.join("storcert/results"))
        })
        .unwrap_or_else(|| PathBuf::from("storcert-results"))
}

/// The run folder: the unfinished run of the same profile (resumed), or a
/// new one.
fn open_run(root: &Path, opts: &Options, digest: &str) -> Result<(PathBuf, Journal, bool)> {
    crate::util::fs::create_dir_durably(root)
        .with_context(|| format!("results folder {}", root.display()))?;
    let marker = root.join(CURRENT);
    if let Ok(name) = std::fs::read_to_string(&marker) {
        let dir = root.join(name.trim());
        if let Some(mut j) = Journal::load(&dir).map_err(|e| anyhow!(e))? {
            if j.finished_at.is_none() {
                if opts.fresh {
                    j.finished_at = Some(journal::now());
                    j.save().map_err(|e| anyhow!(e))?;
                } else if j.profile_digest != digest {
                    bail!(
                        "{} holds an unfinished run of another profile ({}); run that profile again \
                         to resume it, or pass --fresh to abandon it",
                        dir.display(),
                        j.profile_name
                    );
                } else {
                    j.starts += 1;
                    j.save().map_err(|e| anyhow!(e))?;
                    return Ok((dir, j, true));
                }
            }
        }
    }
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace([':', '-'], "");
    let mut name = format!("run-{stamp}");
    let mut n = 1;
    while root.join(&name).exists() {
        n += 1;
        name = format!("run-{stamp}-{n}");
    }
    let dir = root.join(&name);
    crate::util::fs::create_dir_durably(&dir).with_context(|| format!("{}", dir.display()))?;
    let j = Journal::new(&dir, &opts.profile.name, digest, &opts.source);
    j.save().map_err(|e| anyhow!(e))?;
    crate::util::fs::write_durably(&marker, format!("{name}\n"))
        .with_context(|| format!("{}", marker.display()))?;
    Ok((dir, j, false))
}

/// The drives of the profile, after the data-safety gate for a profile
/// that writes; each one left out is said on the console and added to
/// `skipped` ("/dev/sdb: why", a refused drive with the gate's reason).
pub(super) fn select_targets(
    p: &Profile,
    inv: &Inventory,
    console: &Console,
    skipped: &mut Vec<String>,
) -> Result<Vec<Target>> {
    let mut skip = |dev: &str, why: String| {
        console.say(&format!("skipping {dev}: {why}"));
        skipped.push(format!("{dev}: {why}"));
    };
    let d = &p.devices;
    if let Some(size) = p.plan.scratch_bytes {
        let path = std::env::current_dir()?.join(SCRATCH);
        return Ok(vec![Target {
            path: path.display().to_string(),
            disk: path.display().to_string(),
            label: "scratch".into(),
            serial: None,
            model: Some("scratch file".into()),
            file_size: size,
        }]);
    }
    let all = d.select.as_deref() == Some("all");
    let overrides = crate::safety::Overrides::new(&d.destroy, None).map_err(|e| anyhow!(e))?;
    let mut out = Vec::new();
    // Named paths by device number too: /dev/mapper/x, by-path links and
    // nodes made without udev all name their disk that way.
    let numbers: Vec<String> = d
        .paths
        .iter()
        .filter_map(|p| {
            crate::inventory::sysfs::devnum_of_path(
                &crate::inventory::Roots::default(),
                Path::new(p),
            )
        })
        .collect();
    for disk in &inv.disks {
        let named = d
            .paths
            .iter()
            .any(|p| p == &disk.dev_path || disk.by_id.contains(p))
            || numbers.contains(&disk.major_minor)
            || disk.serial.as_ref().is_some_and(|s| d.serials.contains(s))
            || disk
                .model
                .as_ref()
                .is_some_and(|m| d.models.iter().any(|g| crate::util::glob::matches(g, m)));
        if !(all || named) {
            continue;
        }
        // "All drives" means the machine's drives: never the medium storcert
        // booted from or keeps its results on, nor the system disk, even
        // for reading (a drive named outright is still read when asked).
        if !named && (disk.boot_medium || disk.system_disk) {
            skip(
                &disk.dev_path,
                if disk.role_reasons.is_empty() {
                    "the system disk or boot medium".to_string()
                } else {
                    disk.role_reasons.join("; ")
                },
            );
            continue;
        }
        if !p.read_only {
            let roots = crate::inventory::Roots::default();
            if let Err(refusal) =
                crate::safety::check(Path::new(&disk.dev_path), &roots, &overrides)
            {
                skip(&disk.dev_path, refusal.to_string());
                continue;
            }
        }
        out.push(Target {
            path: disk.dev_path.clone(),
            disk: disk.dev_path.clone(),
            label: label_of(&disk.dev_path),
            serial: disk.serial.clone(),
            model: disk.model.clone(),
            file_size: 0,
        });
    }
    for path in &d.paths {
        let number = crate::inventory::sysfs::devnum_of_path(
            &crate::inventory::Roots::default(),
            Path::new(path),
        );
        let known = inv.disks.iter().any(|x| {
            &x.dev_path == path || x.by_id.contains(path) || number.as_ref() == Some(&x.major_minor)
        });
        if !known {
            bail!("devices.paths: {path} is not a disk in the inventory");
        }
    }
    Ok(out)
}

/// The state every stage shares.
struct Ctx<'a> {
    profile: &'a Profile,
    dir: PathBuf,
    journal: Mutex<Journal>,
    console: Arc<Console>,
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
    notes: Mutex<Vec<String>>,
    /// What the heartbeats say, and their thread (none without a
    /// collector among the upload targets).
    live: Arc<heartbeat::Live>,
    beacon: Mutex<Option<heartbeat::Beacon>>,
}

impl Ctx<'_> {
    /// A heartbeat now (a stage started or ended).
    fn kick(&self) {
        if let Some(b) = &*self.beacon.lock().unwrap_or_else(|e| e.into_inner()) {
            b.kick();
        }
    }

    /// The run is over: the last heartbeat says how (bundle and verdict,
    /// or stopped before one), and is waited for a few seconds at most.
    fn last_heartbeat(&self, bundle: Option<(String, Verdict)>) {
        self.live.ended(bundle);
        if let Some(b) = self.beacon.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish();
        }
    }

    fn note(&self, text: String) {
        self.console.say(&text);
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs stage `id` unless the journal has it done. `work` returns a
    /// note (or an error, which fails the stage but not the run).
    fn stage(
        &self,
        id: &str,
        destructive: bool,
        work: impl FnOnce() -> Result<String>,
    ) -> Result<()> {
        if self.journal().is_done(id) {
            self.console
                .say(&format!("[{id}] done in an earlier start: not repeated"));
            return Ok(());
        }
        if self.stopped() {
            return Ok(());
        }
        if let Some(d) = self.deadline {
            if Instant::now() > d {
                self.note(format!("[{id}] not run: the time budget is spent"));
                return Ok(());
            }
        }
        let earlier = self
            .journal()
            .start(id, destructive)
            .map_err(|e| anyhow!(e))?;
        if let Some(secs) = earlier {
            self.note(format!(
                "[{id}] restarted from the beginning: an earlier attempt was interrupted \
                 (about {secs} s of it had been done)"
            ));
        }
        self.console.say(&format!("[{id}] started"));
        self.live.stage_started(id);
        self.kick();
        let result = work();
        if self.stopped() {
            self.console.say(&format!("[{id}] interrupted"));
            return Ok(());
        }
        let (ok, note) = match result {
            Ok(n) => (true, n),
            Err(e) => (false, format!("{e:#}")),
        };
        self.live.stage_ended(id, (!ok).then_some(note.as_str()));
        self.kick();
        self.journal()
            .finish(id, ok, &note)
            .map_err(|e| anyhow!(e))?;
        self.console.say(&format!(
            "[{id}] {}{}",
            if ok { "done" } else { "FAILED" },
            if note.is_empty() {
                String::new()
            } else {
                format!(": {note}")
            }
        ));
        if !ok {
            self.notes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{id}: {note}"));
        }
        Ok(())
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// A result file in the run folder, tagged with what it is (folders
    /// made as needed).
    fn write(&self, rel: &str, artefact: impl Into<Artefact>) -> Result<()> {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            crate::util::fs::create_dir_durably(parent)?;
        }
        write_durably(&path, artefact.into().to_json())
            .with_context(|| format!("{}", path.display()))
    }
}

/// One ACT workload run on one target, its log, result, timeline and
/// analysis in the results folder, progress to the console.
fn act_run(
    ctx: &Ctx,
    key: &str,
    w: &dyn crate::act::Workload,
    base: &str,
    total_s: u64,
) -> Result<String> {
    let files = crate::act::Files {
        log: Some(ctx.path(&format!("{base}.log"))),
        timeline: Some(ctx.path(&format!("{base}.timeline.jsonl"))),
        json: Some(ctx.path(&format!("{base}.json"))),
    };
    if let Some(dir) = ctx.path(base).parent() {
        crate::util::fs::create_dir_durably(dir)?;
    }
    let mut last_save = Instant::now();
    let mut progress = |secs: u64, rate: f64, over: f64| {
        ctx.console.update_act(key, secs, total_s, rate, over);
        if last_save.elapsed() > Duration::from_secs(10) {
            last_save = Instant::now();
            let _ = ctx.journal().progress(key, secs);
        }
    };
    let ran = crate::act::run_to_files(
        w,
        &crate::act::RunOptions::default(),
        &ctx.stop,
        &files,
        &mut progress,
    );
    ctx.console.end(key);
    let ran = ran?;
    if let Some(e) = ran.analysis_error {
        ctx.note(format!("[{key}] {e}"));
    }
    let result = ran.result;
    use crate::act::runner::Outcome;
    let errors = result.device_errors();
    match &result.outcome {
        Outcome::Completed if errors.is_empty() => {
            Ok(format!("max lag {:.1} ms", result.max_lag_ms))
        }
        Outcome::Completed => Err(anyhow!("{}", errors.join("; "))),
        Outcome::Interrupted => Ok("interrupted".into()),
        Outcome::DeviceErrors { errors: n } => Err(anyhow!(
            "stopped after {n} device errors: {}",
            errors.join("; ")
        )),
        Outcome::StuckIo { device, seconds } => Err(anyhow!(
            "an I/O on {device} did not complete in {seconds} s"
        )),
        Outcome::CouldNotKeepUp { stream } => Err(anyhow!("{stream} could not keep up")),
    }
}

/// One drive's ACT configuration (storage or index) for `plan`, `secs`.
fn drive_config<C: crate::act::config::RunConfig>(
    t: &Target,
    plan: &profile::TimedPlan,
    secs: u64,
) -> Result<C> {
    plan.act_config(vec![t.path.clone()], t.file_size, secs, "profile")
        .map_err(|e| anyhow!("{e}"))
}

/// One ACT storage run over all `targets` at once (a profile's `wide`
/// mode): the load is per drive, as in ACT, so the rates are the load's
/// times the number of drives; rates the entry gives are ACT's totals.
fn wide_storage_config(targets: &[Target], plan: &profile::TimedPlan) -> Result<StorageConfig> {
    let devices = targets.iter().map(|t| t.path.clone()).collect();
    plan.act_config(devices, 0, plan.secs, "profile")
        .map_err(|e| anyhow!("{e}"))
}

/// The run's inputs beside its results: the profile as run
/// (`profile.toml`, whose SHA-256 is the journal's profile digest) and the
/// policy's text (`policy.toml`). The bundle lists their digests as the
/// statement's `configuration`, so a verifier sees what was asked for.
fn write_inputs(dir: &Path, p: &crate::run::profile::Profile) -> Result<()> {
    let profile = toml::to_string(p).map_err(|e| anyhow!("{e}"))?;
    write_durably(&dir.join("profile.toml"), &profile)
        .with_context(|| format!("{}", dir.join("profile.toml").display()))?;
    if let Some(pol) = &p.policy {
        let text = match (&pol.file, &pol.inline) {
            (Some(f), _) => crate::input::read_text(f).ok(),
            (None, Some(t)) => Some(t.clone()),
            _ => None,
        };
        if let Some(text) = text {
            write_durably(&dir.join("policy.toml"), &text)
                .with_context(|| format!("{}", dir.join("policy.toml").display()))?;
        }
    }
    Ok(())
}

/// The profile's policy, from its file or inline text.
fn load_policy(pol: &crate::run::profile::PolicyStage) -> Result<crate::policy::Policy> {
    match (&pol.file, &pol.inline) {
        (Some(f), _) => crate::policy::Policy::from_file(f).map_err(|e| anyhow!("{e}")),
        (None, Some(t)) => {
            crate::policy::Policy::parse(t, "policy.inline").map_err(|e| anyhow!("{e}"))
        }
        _ => bail!("no policy"),
    }
}

/// How long the kernel is given to list a provisioned partition.
const PARTITION_WAIT: Duration = Duration::from_secs(30);
const PARTITION_POLL: Duration = Duration::from_millis(200);

/// Each target's storcert partition as the kernel lists it, asking the
/// kernel to re-read the tables of those not yet listed until `wait` is
/// over.
fn wait_for_partitions(targets: &[&Target], wait: Duration) -> Vec<Option<PathBuf>> {
    let start = Instant::now();
    let mut found: Vec<Option<PathBuf>> = vec![None; targets.len()];
    loop {
        for (t, f) in targets.iter().zip(found.iter_mut()) {
            if f.is_none() {
                let disk = Path::new(&t.disk);
                *f = crate::provision::provisioned_partition(disk);
                if f.is_none() {
                    if let Ok(file) = std::fs::File::open(disk) {
                        let _ = crate::blockdev::reread_partitions(&file);
                    }
                }
            }
        }
        if found.iter().all(Option::is_some) || start.elapsed() >= wait {
            return found;
        }
        std::thread::sleep(PARTITION_POLL);
    }
}

/// Runs `f` for every target at once, one thread each.
fn each_parallel(targets: &[Target], f: impl Fn(&Target) -> Result<()> + Sync) -> Result<()> {
    std::thread::scope(|s| {
        let handles: Vec<_> = targets.iter().map(|t| s.spawn(|| f(t))).collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow!("a stage thread panicked")))
        })
    })
}

/// The stage ids of a phase's ACT runs on `t`.
fn phase_act_ids(ph: &PhaseRun, t: &Target) -> Vec<String> {
    let mut ids: Vec<String> = ph
        .storage
        .iter()
        .map(|tl| {
            if ph.wide {
                format!("{}act {} wide", ph.id, tl.name)
            } else {
                format!("{}act {} {}", ph.id, tl.name, t.label)
            }
        })
        .collect();
    if ph.search.is_some() {
        ids.push(format!("{}act search {}", ph.id, t.label));
    }
    ids
}

fn run_phase(ctx: &Ctx, targets: &mut Vec<Target>, ph: &PhaseRun) -> Result<()> {
    let p = ctx.profile;
    let dir = &ph.folder;
    if !ph.folder.is_empty() {
        // A resumed run does not set up again the spare area of a phase
        // whose every ACT run is done (a later phase may have changed it).
        targets.retain(|t| {
            !phase_act_ids(ph, t)
                .iter()
                .all(|id| ctx.journal().is_done(id))
        });
    }
    match ph.spare {
        SpareSetting::AsItIs => {}
        SpareSetting::Remove => {
            let remove_id = |t: &Target| format!("{}remove partition {}", ph.id, t.label);
            // Drives that carry storcert's partition now (or whose removal
            // an earlier start began).
            let carrying: Vec<String> = targets
                .iter()
                .filter(|t| {
                    t.file_size == 0
                        && (crate::safety::storcert_partition(Path::new(&t.disk)).is_some()
                            || ctx.journal().get(&remove_id(t)).is_some())
                })
                .map(|t| t.label.clone())
                .collect();
            each_parallel(targets, |t| {
                if !carrying.contains(&t.label) {
                    return Ok(());
                }
                ctx.stage(&remove_id(t), true, || {
                    if crate::safety::storcert_partition(Path::new(&t.disk)).is_none() {
                        return Ok("removed by an earlier, interrupted attempt".into());
                    }
                    let r = crate::provision::remove(Path::new(&t.disk), true)?;
                    if let Some(n) = r.notes.first() {
                        bail!("{n}: whether the kernel still lists a partition is unknown");
                    }
                    if !r.kernel_partitions.is_empty() {
                        bail!(
                            "the kernel still lists {} after the table was removed",
                            r.kernel_partitions.join(", ")
                        );
                    }
                    Ok("storcert's partition removed: the whole drive is tested".into())
                })
            })?;
            // A drive whose partition was not removed is not tested whole:
            // its failed stage says why.
            targets
                .retain(|t| !carrying.contains(&t.label) || ctx.journal().is_done(&remove_id(t)));
        }
        SpareSetting::Provision(spare_pct) => {
            // The factory spare the policy gives each drive, for the total
            // spare area (a policy that does not load fails its own stage).
            let policy = p.policy.as_ref().and_then(|pol| load_policy(pol).ok());
            let provision_id = |t: &Target| format!("{}provision {}", ph.id, t.label);
            each_parallel(targets, |t| {
                ctx.stage(&provision_id(t), true, || {
                    let r = crate::provision::provision(&crate::provision::Spec {
                        device: PathBuf::from(&t.disk),
                        spare_pct,
                        factory_spare_pct: policy.as_ref().and_then(|pol| {
                            pol.factory_spare(t.model.as_deref(), t.serial.as_deref())
                        }),
                        discard: true,
                    })?;
                    ctx.write(&format!("{dir}provision/{}.json", t.label), r.clone())?;
                    Ok(format!(
                        "partition of {} bytes, {} spare",
                        r.partition_size_bytes, r.spare_bytes
                    ))
                })
            })?;
            // Later stages run on the partition storcert made, never on
            // the whole drive (that would write over the table and the
            // spare area). The kernel may list the partition late (udev
            // still probing the drive holds off the re-read), so it is
            // asked again for a while; a drive whose partition never
            // shows fails with that reason.
            let waiting: Vec<&Target> = targets
                .iter()
                .filter(|t| t.file_size == 0 && ctx.journal().is_done(&provision_id(t)))
                .collect();
            let found = wait_for_partitions(&waiting, PARTITION_WAIT);
            for (t, part) in waiting.iter().zip(&found) {
                ctx.stage(
                    &format!("{}partition {}", ph.id, t.label),
                    false,
                    || match part {
                        Some(p) => Ok(format!("the kernel lists {}", p.display())),
                        None => Err(anyhow!(
                            "the kernel lists no partition on {} {} s after provisioning (its \
                             table re-read every {} ms): the drive is not tested, rather than \
                             tested whole, which would write over its spare area",
                            t.disk,
                            PARTITION_WAIT.as_secs(),
                            PARTITION_POLL.as_millis()
                        )),
                    },
                )?;
            }
            let parts: std::collections::BTreeMap<String, PathBuf> = waiting
                .iter()
                .zip(found)
                .filter_map(|(t, p)| Some((t.label.clone(), p?)))
                .collect();
            // A drive whose provisioning failed is not tested either: its
            // failed stage says why.
            targets.retain_mut(|t| {
                if t.file_size > 0 {
                    return true;
                }
                match parts.get(&t.label) {
                    Some(p) => {
                        t.path = p.display().to_string();
                        true
                    }
                    None => false,
                }
            });
        }
    }
    if ph.prep {
        each_parallel(targets, |t| {
            ctx.stage(&format!("{}act prep {}", ph.id, t.label), true, || {
                if t.file_size > 0 {
                    // A scratch file is created at its size first.
                    crate::act::device::Device::open(&t.path, false, t.file_size)?;
                }
                let mut dev = crate::act::device::Device::open(&t.path, false, 0)?;
                let mut engine = crate::engine::open(crate::engine::EngineKind::Auto, 64)?;
                let r = crate::act::prep::prep(&mut dev, engine.as_mut(), &ctx.stop, &ctx.console)?;
                ctx.write(
                    &format!("{dir}act/prep-{}.json", t.label),
                    Prep {
                        schema_version: PREP_SCHEMA,
                        devices: vec![r],
                    },
                )?;
                Ok(String::new())
            })
        })?;
    }
    if ph.wide && !ph.storage.is_empty() && !targets.is_empty() {
        // One run over every drive, judged per drive and over all.
        for tl in ph.storage {
            let id = format!("{}act {} wide", ph.id, tl.name);
            ctx.stage(&id, true, || {
                let c = wide_storage_config(targets, tl)?;
                act_run(ctx, &id, &c, &format!("{dir}act/wide-{}", tl.name), tl.secs)
            })?;
        }
    }
    for tl in ph.storage.iter().filter(|_| !ph.wide) {
        each_parallel(targets, |t| {
            let id = format!("{}act {} {}", ph.id, tl.name, t.label);
            ctx.stage(&id, true, || {
                let c: StorageConfig = drive_config(t, tl, tl.secs)?;
                act_run(
                    ctx,
                    &id,
                    &c,
                    &format!("{dir}act/{}-{}", t.label, tl.name),
                    tl.secs,
                )
            })
        })?;
    }
    if let Some(s) = ph.search {
        let (trial, confirm) = (s.trial_secs, s.confirm_secs);
        each_parallel(targets, |t| {
            ctx.stage(&format!("{}act search {}", ph.id, t.label), true, || {
                let spec = crate::act::search::SearchSpec {
                    base: drive_config(
                        t,
                        &profile::TimedPlan {
                            load: 1.0,
                            ..Default::default()
                        },
                        trial,
                    )?,
                    max_load: s.max_load,
                    step: s.step,
                    trial_secs: trial,
                    confirm_secs: confirm,
                    out_dir: ctx.path(&format!("{dir}act/search-{}", t.label)),
                };
                let r = crate::act::search::search(
                    &spec,
                    &crate::act::RunOptions::default(),
                    &ctx.stop,
                    &ctx.console,
                )?;
                ctx.write(&format!("{dir}act/search-{}.json", t.label), r.clone())?;
                Ok(match r.highest_passing_load {
                    Some(l) => format!("highest passing load {l}x"),
                    None => "no load passed".into(),
                })
            })
        })?;
    }
    Ok(())
}

/// The spare area a phase sets before its ACT runs.
enum SpareSetting {
    /// Whatever the drives have (a run without a provision stage).
    AsItIs,
    /// storcert's partition leaving this share spare.
    Provision(f64),
    /// No spare partition: storcert's partition, where there is one, is
    /// taken away.
    Remove,
}

/// One phase: its spare area, then ACT prep, storage and search. Its
/// files go under `folder` and its stage ids start with `id`, so phases
/// of one run do not overwrite or resume each other.
struct PhaseRun<'a> {
    folder: String,
    id: String,
    spare: SpareSetting,
    prep: bool,
    storage: &'a [profile::TimedPlan],
    /// The storage runs over all drives at once, not one per drive.
    wide: bool,
    search: Option<&'a profile::SearchPlan>,
}

fn suites(ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
    let p = ctx.profile;
    let plan = &p.plan;
    if plan.phases.is_empty() {
        run_phase(
            ctx,
            targets,
            &PhaseRun {
                folder: String::new(),
                id: String::new(),
                spare: match &p.provision {
                    Some(pr) => SpareSetting::Provision(pr.spare_pct),
                    None => SpareSetting::AsItIs,
                },
                prep: p.act.as_ref().is_some_and(|a| a.prep),
                storage: &plan.storage,
                wide: p.act.as_ref().is_some_and(|a| a.wide),
                search: plan.search.as_ref(),
            },
        )?;
    } else {
        // Each phase starts from the whole drives; later stages (index,
        // stream) run on the drives as the last phase left them.
        let whole: Vec<Target> = targets
            .iter()
            .map(|t| Target {
                path: t.disk.clone(),
                ..t.clone()
            })
            .collect();
        for (i, ph) in plan.phases.iter().enumerate() {
            if ctx.stopped() {
                break;
            }
            run_phase(
                ctx,
                &mut whole.clone(),
                &PhaseRun {
                    folder: format!("phase-{}/", i + 1),
                    id: format!("phase {} ", i + 1),
                    spare: if ph.spare_pct > 0.0 {
                        SpareSetting::Provision(ph.spare_pct)
                    } else {
                        SpareSetting::Remove
                    },
                    prep: ph.prep,
                    storage: &ph.storage,
                    wide: ph.wide,
                    search: ph.search.as_ref(),
                },
            )?;
        }
        // Later stages see the drives as the last phase left them: on
        // storcert's partition where it set one.
        let last_provisions = plan.phases.last().is_some_and(|ph| ph.spare_pct > 0.0);
        *targets = whole
            .into_iter()
            .filter_map(|mut t| {
                if last_provisions {
                    let part = crate::provision::provisioned_partition(Path::new(&t.disk))?;
                    t.path = part.display().to_string();
                }
                Some(t)
            })
            .collect();
    }
    if p.act.is_some() {
        if let Some(ix) = &plan.index {
            each_parallel(targets, |t| {
                let id = format!("act index {} {}", ix.name, t.label);
                ctx.stage(&id, true, || {
                    let c: IndexConfig = drive_config(t, ix, ix.secs)?;
                    act_run(
                        ctx,
                        &id,
                        &c,
                        &format!("act/index-{}-{}", t.label, ix.name),
                        ix.secs,
                    )
                })
            })?;
        }
    }
    if let Some(s) = &plan.stream {
        if !s.passes.is_empty() {
            stream_stage(ctx, targets, s)?;
        }
        if let Some(fs) = &s.fs {
            ctx.stage("stream fs", true, || {
                let r = crate::stream::fs::run(
                    &crate::stream::fs::FsSpec {
                        dir: fs.dir.clone(),
                        file_size: fs.file_size,
                        chunk: s.bs as usize,
                        files: fs.files,
                        seeks: 8000,
                    },
                    &ctx.stop,
                )?;
                ctx.write("stream-fs.json", r.clone())?;
                Ok(format!("in {}", fs.dir.display()))
            })?;
        }
    }
    Ok(())
}

/// The streaming passes over the drives: once, or for a burn-in again and
/// again (`loops`, or until `duration` has gone), each loop's result kept
/// as it ends; a loop that fails ends the burn-in.
fn stream_stage(ctx: &Ctx, targets: &[Target], s: &profile::StreamPlan) -> Result<()> {
    let writes = s.passes.contains(&crate::stream::Pass::Write);
    let burn_in = s.loops.is_some() || s.duration_secs.is_some();
    ctx.stage("stream", writes, || {
        let attempt = ctx.journal().get("stream").map_or(1, |r| r.attempts);
        let until = s
            .duration_secs
            .map(|d| Instant::now() + Duration::from_secs(d));
        let mut n = 0u32;
        loop {
            n += 1;
            let spec = crate::stream::Spec {
                targets: targets.iter().map(|t| t.path.clone()).collect(),
                size: s.size,
                percent: s.percent,
                bs: s.bs,
                qd: s.qd,
                jobs: s.jobs,
                passes: s.passes.clone(),
                verify: s.verify,
                direct: true,
                engine: crate::engine::EngineKind::Auto,
                null_latency: Default::default(),
                seed: rand::random(),
            };
            let r = crate::stream::run(&spec, &ctx.stop, &ctx.console)?;
            if burn_in && ctx.stopped() {
                // A loop cut short by a stop is no result: the stage runs
                // again, whole, when the run resumes.
                break;
            }
            // Each attempt's loops in a folder of their own: a resumed
            // burn-in neither overwrites an earlier attempt's failed loop
            // nor leaves it to look like this attempt's.
            let name = if burn_in {
                format!("stream/attempt-{attempt}/loop-{n:04}.json")
            } else {
                "stream.json".to_string()
            };
            ctx.write(&name, r.clone())?;
            if r.failed() {
                let why: Vec<String> = r
                    .passes
                    .iter()
                    .flat_map(|p| {
                        p.jobs.iter().filter_map(|j| {
                            j.error.as_ref().map(|e| {
                                format!(
                                    "{} {}: {e}",
                                    r.targets.get(j.target).map_or("?", |t| t.path.as_str()),
                                    j.name
                                )
                            })
                        })
                    })
                    .collect();
                bail!(
                    "a stream pass failed{}: {}",
                    if burn_in {
                        format!(" in loop {n}")
                    } else {
                        String::new()
                    },
                    if why.is_empty() {
                        "verify found bad blocks".into()
                    } else {
                        why.join("; ")
                    }
                );
            }
            let more = match (until, s.loops) {
                (Some(u), _) => Instant::now() < u,
                (None, Some(l)) => n < l,
                (None, None) => false,
            };
            if !more || ctx.stopped() {
                break;
            }
        }
        Ok(if burn_in {
            format!("{n} loop(s)")
        } else {
            String::new()
        })
    })
}

/// A report of the built-in hardware-reach findings alone (a run whose
/// profile has no policy).
fn reach_report(reach: &[crate::results::policy::Finding]) -> crate::results::policy::Report {
    let mut report = crate::results::policy::Report {
        schema_version: crate::results::policy::SCHEMA_VERSION,
        checks: 0,
        findings: Vec::new(),
        pass: true,
    };
    add_reach(&mut report, reach);
    report
}

/// The built-in hardware-reach findings, after the policy's own are
/// scoped: their severity is the profile's `hardware`, whatever the
/// policy says of machine findings.
fn add_reach(
    report: &mut crate::results::policy::Report,
    reach: &[crate::results::policy::Finding],
) {
    use crate::results::policy::Severity;
    report.checks += 1;
    report.findings.extend(reach.iter().cloned());
    report
        .findings
        .sort_by_key(|f| (f.machine, std::cmp::Reverse(f.severity)));
    report.pass = !report.findings.iter().any(|f| f.severity == Severity::Fail);
}

/// Marks the findings that are not about a drive under test as the
/// machine's; unless the profile says they fail the run, they become
/// warnings (a spare disk's firmware does not fail the disks qualified).
fn scope_findings(
    report: &mut crate::results::policy::Report,
    targets: &[Target],
    machine: profile::MachineFindings,
) {
    use crate::results::policy::Severity;
    let bare = |p: &str| p.strip_prefix("/dev/").unwrap_or(p).to_string();
    for f in &mut report.findings {
        let tested = f
            .disk
            .as_deref()
            .is_some_and(|d| targets.iter().any(|t| bare(&t.disk) == bare(d)));
        if !tested {
            f.machine = true;
            if machine == profile::MachineFindings::Warn {
                f.severity = f.severity.min(Severity::Warn);
            }
        }
    }
    report
        .findings
        .sort_by_key(|f| (f.machine, std::cmp::Reverse(f.severity)));
    report.pass = !report.findings.iter().any(|f| f.severity == Severity::Fail);
}

/// The drives under test, and only those: a scratch file has none, and the
/// machine's other disks are not this run's to judge.
fn tested_disks(targets: &[Target]) -> Inventory {
    let mut inv = scan(Some(targets));
    inv.disks.retain(|d| {
        targets
            .iter()
            .any(|t| t.file_size == 0 && t.disk == d.dev_path)
    });
    inv
}

fn scan(targets: Option<&[Target]>) -> Inventory {
    let named = targets.is_some_and(|t| t.iter().any(|t| t.disk.starts_with("/dev/loop")));
    let opts = ScanOptions {
        all: named,
        devices: targets
            .map(|t| {
                t.iter()
                    .filter(|t| t.file_size == 0)
                    .map(|t| t.disk.clone())
                    .collect()
            })
            .unwrap_or_default(),
        ..ScanOptions::default()
    };
    inventory::scan(&Roots::default(), &opts)
}

/// Runs the profile. Errors are "could not run" (bad setup, nothing to
/// test); verdicts come back in `Ending`.
pub fn run(opts: &Options, stop: Arc<AtomicBool>) -> Result<Ending> {
    let p = &opts.profile;
    let digest = sha_hex(toml::to_string(p).map_err(|e| anyhow!("{e}"))?.as_bytes());
    let root = results_root(opts);
    let (dir, journal, resumed) = open_run(&root, opts, &digest)?;
    write_inputs(&dir, p)?;
    let console = Console::new(p.plan.progress_interval, opts.plain);
    console.say(&format!("profile: {} — {}", p.name, opts.source));
    console.say(&format!(
        "results: {}{}",
        dir.display(),
        if resumed {
            format!(" (resumed; start {})", journal.starts)
        } else {
            String::new()
        }
    ));
    let system = crate::bundle::system::probe(Path::new("/"));
    let ctx = Ctx {
        profile: p,
        dir: dir.clone(),
        journal: Mutex::new(journal),
        console: console.clone(),
        stop,
        deadline: p.plan.time_budget.map(|b| Instant::now() + b),
        notes: Mutex::new(Vec::new()),
        live: Arc::new(heartbeat::Live::default()),
        beacon: Mutex::new(None),
    };
    // Best-effort: a target that cannot take them (a bad CA file) is said,
    // and the run goes on; the upload at the end says it again.
    if let Err(e) = start_heartbeats(&ctx, opts, &system) {
        ctx.note(format!("no heartbeats: {e:#}"));
    }
    let result = run_stages(&ctx, opts, system);
    // Stopped before a bundle (an error, a signal): the board hears so.
    ctx.last_heartbeat(None);
    console.close();
    let mut ending = result?;
    if ctx.stopped() {
        ending.verdict = Verdict::Interrupted;
        ending
            .reasons
            .push("interrupted: run again to continue from the last finished stage".into());
    } else {
        let mut j = ctx.journal();
        j.finished_at = Some(journal::now());
        j.save().map_err(|e| anyhow!(e))?;
        let _ = std::fs::remove_file(root.join(CURRENT));
    }
    Ok(ending)
}

/// The run's signing key: `--key`, the profile's, or storcert.key beside
/// the results (made on first use).
fn signing_key(ctx: &Ctx, opts: &Options) -> Result<crate::bundle::minisign::SecretKey> {
    let key_path = opts
        .key
        .clone()
        .or_else(|| ctx.profile.bundle.key.clone())
        .unwrap_or_else(|| {
            ctx.dir
                .parent()
                .unwrap_or(Path::new("."))
                .join("storcert.key")
        });
    if key_path.exists() {
        return crate::bundle::keys::read_secret_key(&key_path).map_err(|e| anyhow!(e));
    }
    let k = crate::bundle::keys::make_key(&key_path, false).map_err(|e| anyhow!(e))?;
    ctx.console.say(&format!(
        "made signing key {} ({})",
        k.public().id_hex(),
        key_path.display()
    ));
    Ok(k)
}

/// The run's bundle name without ".tar.zst": also its id on the board.
fn run_id(ctx: &Ctx, system: &crate::bundle::system::SystemIdentity) -> String {
    let machine = system
        .dmi
        .product_serial
        .clone()
        .unwrap_or_else(|| "machine".into());
    let run_name = ctx
        .dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("run")
        .to_string();
    format!(
        "storcert-{}-{}-{run_name}",
        label_of(&machine),
        ctx.profile.name
    )
}

/// A client per upload target of the profile, with its URL as given.
fn upload_clients(p: &Profile) -> Result<Vec<(String, crate::upload::Client)>> {
    let (Some(u), Some(up)) = (&p.upload, &p.plan.upload) else {
        return Ok(Vec::new());
    };
    let token = u
        .token_file
        .as_ref()
        .map(|f| crate::input::read_text(f).map(|t| t.trim().to_string()))
        .transpose()?;
    let mut clients = Vec::new();
    for to in &u.to {
        let client = crate::upload::Client::new(crate::upload::Options {
            to: to.clone(),
            ca_file: u.ca_file.clone(),
            pins: up.pins.clone(),
            token: token.clone(),
            allow_http: u.allow_http,
            deadline: up.deadline,
            max_backoff: Duration::from_secs(60),
            signature_urls: None,
        })
        .map_err(|e| anyhow!(e))?;
        clients.push((to.clone(), client));
    }
    Ok(clients)
}

/// Heartbeats to every collector among the upload targets, signed with
/// the run's key.
fn start_heartbeats(
    ctx: &Ctx,
    opts: &Options,
    system: &crate::bundle::system::SystemIdentity,
) -> Result<()> {
    let run_id = run_id(ctx, system);
    let targets: Vec<_> = upload_clients(ctx.profile)?
        .into_iter()
        .filter_map(|(to, c)| {
            let url = c.heartbeat_url(&run_id)?;
            Some((crate::upload::shown_url(&to), c, url))
        })
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    if !crate::results::heartbeat::valid_run_id(&run_id) {
        bail!(
            "the run id {} is not a plain name (the profile's name?)",
            crate::util::text::printable(&run_id, 200)
        );
    }
    let key = signing_key(ctx, opts)?;
    let p = ctx.profile;
    let info = heartbeat::RunInfo {
        run_id,
        machine: system.machine(),
        profile: p.name.clone(),
        tag: p.tag.clone(),
        interval: p.plan.progress_interval,
        timed_seconds: p.plan.timed_seconds(),
        // Beside the run folder, not in it: not a result.
        seq_file: ctx.dir.with_extension("heartbeat-seq"),
    };
    ctx.console.say(&format!(
        "heartbeats every {} s to {}",
        p.plan.progress_interval.as_secs().max(1),
        targets
            .iter()
            .map(|t| t.0.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    *ctx.beacon.lock().unwrap_or_else(|e| e.into_inner()) =
        heartbeat::Beacon::start(targets, key, info, ctx.live.clone(), ctx.console.clone());
    Ok(())
}

fn run_stages(
    ctx: &Ctx,
    opts: &Options,
    system: crate::bundle::system::SystemIdentity,
) -> Result<Ending> {
    let p = ctx.profile;
    // The machine's identity and the inventory come first; they are cheap
    // and read-only, so they are taken again on every start.
    ctx.write("system.json", system.clone())?;
    // In the boot image (the unit sets STORCERT_IN_IMAGE), the time from
    // kernel start to the first command sent to a device: the image's boot
    // cost, which the boot tests print and hold to a target.
    if boot::in_image() {
        if let Some(up) = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        {
            ctx.console
                .say(&format!("first device I/O {up:.1} s after kernel start"));
        }
    }
    // Named loop, md or dm devices are only in an inventory that lists all.
    // The scan is captured: a bundle whose hardware misread can be
    // replayed (`storcert inventory --replay`) where nobody has that
    // hardware.
    let (inv, archive) = inventory::capture::scan_captured(&ScanOptions {
        all: !p.devices.paths.is_empty(),
        ..ScanOptions::default()
    })?;
    ctx.write("inventory.json", inv.clone())?;
    let path = ctx.path(inventory::capture::RUN_CAPTURE);
    write_durably(&path, archive).with_context(|| format!("{}", path.display()))?;
    // What this system cannot drive, from the inventory and the kernel's
    // log: always checked, whatever the policy.
    let reach = inventory::reach::findings(
        &inv,
        inventory::reach::kernel_log().as_deref(),
        p.hardware.unwrap_or(crate::results::policy::Severity::Warn),
    );
    for f in &reach {
        ctx.console.say(&format!(
            "hardware: {} ({}): {}",
            crate::util::text::printable(&f.device, 200),
            f.check,
            crate::util::text::printable(&f.actual, 300)
        ));
    }
    let mut skipped = Vec::new();
    let mut targets = select_targets(p, &inv, &ctx.console, &mut skipped)?;
    let hidden = inventory::reach::hidden_drives(&reach);
    if targets.is_empty() && hidden.is_empty() {
        bail!("no drive to test: the profile's devices matched none the safety gate clears");
    }
    // First: a results folder always says what was under test, so a run
    // cut short after this never reads as having tested drives it did not.
    ctx.write(
        "targets.json",
        Targets {
            schema_version: TARGETS_SCHEMA,
            targets: targets.clone(),
        },
    )?;
    if targets.is_empty() {
        // Not an error that stops here: the operator hears of it only from
        // a bundle, so one is made (and uploaded) with the findings, the
        // inventory and its capture; the policy is checked, no drive is
        // tested. Every reason is said: the drives out of sight, and those
        // the profile selected and the safety gate refused.
        let why: Vec<String> = hidden.iter().cloned().chain(skipped).collect();
        ctx.note(format!(
            "no drive to test: {}",
            crate::util::text::printable(&why.join("; "), 1000)
        ));
    } else {
        if p.read_only {
            ctx.console
                .say("read-only profile: nothing is written but the results");
        }
        ctx.console.say(&format!(
            "testing: {}",
            targets
                .iter()
                .map(|t| t.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(t) = targets.iter().find(|t| t.file_size > 0) {
            if !Path::new(&t.path).exists() {
                // Sparse: the scratch file takes no space until written.
                let f = std::fs::File::create(&t.path).with_context(|| t.path.clone())?;
                f.set_len(t.file_size)?;
            }
        }
    }
    if let Some(pol) = &p.policy {
        ctx.stage("policy", false, || {
            let policy = load_policy(pol)?;
            let mut report = crate::policy::check::check(&policy, &inv);
            scope_findings(&mut report, &targets, pol.machine);
            add_reach(&mut report, &reach);
            ctx.write("policy.json", report.clone())?;
            Ok(format!(
                "{} checks, {} findings",
                report.checks,
                report.findings.len()
            ))
        })?;
    } else if !reach.is_empty() {
        // No policy of the profile's: the built-in check is the report.
        ctx.write("policy.json", reach_report(&reach))?;
    } else {
        // An earlier start on this machine may have left one that no
        // longer holds.
        match std::fs::remove_file(ctx.path("policy.json")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).context("removing an earlier start's policy.json")
            }
            _ => {}
        }
    }
    if !targets.is_empty() {
        let health = p.health.as_ref().is_some_and(|h| h.enabled);
        if health {
            ctx.stage("health before", false, || {
                ctx.write(
                    "health-before.json",
                    crate::health::snapshot(&tested_disks(&targets)),
                )?;
                Ok(String::new())
            })?;
        }
        suites(ctx, &mut targets)?;
        if health && !ctx.stopped() {
            ctx.stage("health after", false, || {
                let after = crate::health::snapshot(&tested_disks(&targets));
                ctx.write("health-after.json", after.clone())?;
                let before: crate::health::Snapshot =
                    serde_json::from_slice(&std::fs::read(ctx.path("health-before.json"))?)?;
                let d = crate::health::diff(&before, &after, |_| None);
                ctx.write("health-diff.json", d.clone())?;
                Ok(if d.degraded {
                    "a drive degraded".into()
                } else {
                    String::new()
                })
            })?;
        }
    }
    let mut ending = Ending {
        verdict: Verdict::Incomplete,
        reasons: Vec::new(),
        run_dir: ctx.dir.clone(),
        bundle: None,
        bundle_sha256: None,
        delivered_to: Vec::new(),
        done_action: p.done.clone(),
    };
    if ctx.stopped() {
        return Ok(ending);
    }
    // Notes of this and earlier starts go into the results and the report.
    write_notes_and_report(ctx, opts)?;

    let (spool, spooled) = bundle_and_spool(ctx, opts, &system, &mut ending)?;
    if let Some(up) = &p.plan.upload {
        upload_spooled(ctx, up, &spool, &spooled, &mut ending)?;
    }
    Ok(ending)
}

/// The run's notes (of this and earlier starts) and its report, into the
/// results folder.
fn write_notes_and_report(ctx: &Ctx, opts: &Options) -> Result<()> {
    let p = ctx.profile;
    let notes: Vec<String> = ctx.notes.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let journal_copy = ctx.journal().clone();
    ctx.write(
        "run-notes.json",
        RunNotes {
            schema_version: NOTES_SCHEMA,
            profile: p.name.clone(),
            source: opts.source.clone(),
            tag: p.tag.clone(),
            starts: journal_copy.starts,
            notes,
            stages: journal_copy.stages,
        },
    )?;
    crate::report::write_for_results(&ctx.dir).context("report")?;
    Ok(())
}

/// Bundles and signs the results and puts the bundle in the spool: the
/// results are safe on disk before any upload. Returns the spool and the
/// spooled bundle's path, and fills in `ending`'s verdict and bundle.
fn bundle_and_spool(
    ctx: &Ctx,
    opts: &Options,
    system: &crate::bundle::system::SystemIdentity,
    ending: &mut Ending,
) -> Result<(crate::upload::spool::Spool, PathBuf)> {
    let p = ctx.profile;
    let spool_dir = p
        .bundle
        .spool
        .clone()
        .or_else(crate::upload::spool::default_dir)
        .unwrap_or_else(|| ctx.dir.parent().unwrap_or(Path::new(".")).join("spool"));
    let spool = crate::upload::spool::Spool::open(&spool_dir)?;
    let key = signing_key(ctx, opts)?;
    let bundle_name = format!("{}.tar.zst", run_id(ctx, system));
    let out = ctx
        .dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("bundles")
        .join(&bundle_name);
    crate::util::fs::create_dir_durably(out.parent().expect("has a parent"))?;
    let created =
        crate::bundle::create_signed(&ctx.dir, &out, Some(&key)).map_err(|e| anyhow!(e))?;
    let spooled = spool.put(&out)?;
    ending.verdict = created.summary.verdict;
    ending.reasons = created.summary.reasons.clone();
    ending.bundle = Some(spooled.clone());
    ending.bundle_sha256 = Some(created.sha256.clone());
    // The board moves the run to finished now; its bundle follows.
    ctx.last_heartbeat(Some((bundle_name.clone(), created.summary.verdict)));
    Ok((spool, spooled))
}

/// Sends the spool's pending bundles (earlier runs' first) to the
/// profile's collectors until the upload deadline; a bundle leaves the
/// spool once every target confirmed it.
fn upload_spooled(
    ctx: &Ctx,
    up: &profile::UploadPlan,
    spool: &crate::upload::spool::Spool,
    spooled: &Path,
    ending: &mut Ending,
) -> Result<()> {
    let p = ctx.profile;
    let deadline = up.deadline;
    let clients = upload_clients(p)?;
    let until = Instant::now() + deadline;
    // Pending bundles of earlier runs go first; a bundle leaves the
    // spool once every target confirmed it.
    let queue = spool.pending()?;
    let mut delivered_to = Vec::new();
    let done = crate::upload::drain::drain(
        &queue,
        &clients,
        Some(spool),
        until,
        &ctx.console,
        &mut |a| match &a.outcome {
            crate::upload::Outcome::Confirmed { status, .. } => {
                ctx.console.say(&format!(
                    "{}: delivered to {} ({status})",
                    a.bundle.display(),
                    a.to
                ));
                if a.bundle == spooled {
                    delivered_to.push(a.to.clone());
                }
            }
            crate::upload::Outcome::Rejected(why)
            | crate::upload::Outcome::RefusedBundle(why)
            | crate::upload::Outcome::GaveUp(why) => {
                ctx.note(format!(
                    "upload of {} to {}: {why}; kept in the spool",
                    a.bundle.display(),
                    a.to
                ));
            }
        },
    )?;
    ending.delivered_to = delivered_to;
    for d in done {
        if let Some(e) = d.confirm_error {
            bail!("{}: {e}", d.bundle.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::policy::{Finding, Report, Severity};

    fn report() -> Report {
        let f = |disk: Option<&str>, severity| Finding {
            severity,
            rule: "r".into(),
            device: disk.unwrap_or("(the server)").into(),
            disk: disk.map(String::from),
            machine: false,
            check: "c".into(),
            expected: "e".into(),
            actual: "a".into(),
            fix: None,
            action: None,
        };
        Report {
            schema_version: 1,
            checks: 3,
            findings: vec![
                f(Some("/dev/sdb"), Severity::Fail),
                f(None, Severity::Fail),
                f(Some("/dev/sda"), Severity::Warn),
            ],
            pass: false,
        }
    }

    fn targets() -> Vec<Target> {
        vec![Target {
            path: "/dev/sda1".into(),
            disk: "/dev/sda".into(),
            label: "sda".into(),
            serial: None,
            model: None,
            file_size: 0,
        }]
    }

    #[test]
    fn findings_about_the_rest_of_the_machine_are_warnings_unless_asked() {
        let mut r = report();
        scope_findings(&mut r, &targets(), profile::MachineFindings::Warn);
        assert!(r.pass);
        let seen: Vec<(Option<&str>, Severity, bool)> = r
            .findings
            .iter()
            .map(|f| (f.disk.as_deref(), f.severity, f.machine))
            .collect();
        // The drive under test first, then the machine's, downgraded.
        assert_eq!(
            seen,
            vec![
                (Some("/dev/sda"), Severity::Warn, false),
                (Some("/dev/sdb"), Severity::Warn, true),
                (None, Severity::Warn, true),
            ]
        );
        let mut r = report();
        scope_findings(&mut r, &targets(), profile::MachineFindings::Fail);
        assert!(!r.pass);
        assert!(r
            .findings
            .iter()
            .filter(|f| f.machine)
            .all(|f| f.severity == Severity::Fail));
    }
}
