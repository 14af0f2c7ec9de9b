//! `storcert run`: a whole qualification from a profile, unattended.
//!
//! inventory → policy → health before → provision → ACT prep → ACT
//! storage / search / index → stream → health after → report → bundle
//! (signed, spooled) → upload. Every stage is journalled (journal.rs);
//! a run started again after a kill or power loss continues from the
//! last finished stage. Drives run in parallel where the stage allows
//! (one thread per drive for ACT and prep; stream drives all at once).

pub mod boot;
mod estimate;
mod finish;
pub mod heartbeat;
pub mod journal;
mod made;
pub mod plan;
pub mod profile;
pub mod source;
pub mod textfile;
mod workload;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

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
use finish::*;

/// Name of the marker naming the unfinished run in the results root.
const CURRENT: &str = "current";
/// The scratch file of a profile with `devices.scratch`.
pub const SCRATCH: &str = "storcert-scratch.img";

/// Where a run under `root` keeps its scratch file: the results root's
/// temporary space, never the folder a user happened to start it in, and
/// outside the run's folder (which is bundled).
pub fn scratch_path(root: &Path) -> PathBuf {
    root.join("scratch").join(SCRATCH)
}

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
    /// One line per drive: its verdict and answer.
    pub answers: Vec<String>,
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
    root: &Path,
    inv: &Inventory,
    console: &Console,
    skipped: &mut Vec<String>,
    root_run_name: Option<(&str, &[String])>,
) -> Result<Vec<Target>> {
    let mut skip = |dev: &str, why: String| {
        console.say(&format!("skipping {dev}: {why}"));
        skipped.push(format!("{dev}: {why}"));
    };
    let d = &p.devices;
    if let Some(size) = p.plan.scratch_bytes {
        let path = std::path::absolute(scratch_path(root))?;
        return Ok(vec![Target {
            path: path.display().to_string(),
            disk: path.display().to_string(),
            label: "scratch".into(),
            serial: None,
            model: Some("scratch file".into()),
            file_size: size,
            likeness: None,
        }]);
    }
    let all = d.select.as_deref() == Some("all");
    let mut overrides = crate::safety::Overrides::new(&d.destroy, None).map_err(|e| anyhow!(e))?;
    // A resumed run's drives carry its own "writing" mark, or its own
    // data over it.
    if let Some((run, earlier)) = root_run_name {
        overrides = overrides.for_run(run);
        overrides.earlier = earlier.to_vec();
    }
    overrides.own_table = true;
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
        // "All drives" means this machine's own: a SAN's LUN, a network's
        // disk or a USB stick is listed, and tested only when named.
        if !named && !disk.transport.is_local() {
            skip(
                &disk.dev_path,
                format!(
                    "a {} disk, not local to this machine (name it in devices to test it)",
                    disk.transport.as_str()
                ),
            );
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
            likeness: disk.likeness(),
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

/// The drives the earlier starts of the run in `dir` tested, as its
/// `targets.json` names them: by serial, or by path where a drive has
/// none. Its writes overwrote storcert's mark (a kill lands mid-write), so
/// without this the resumed run would take its own data for a stranger's.
fn earlier_drives(dir: &Path) -> Vec<String> {
    let Ok(text) = crate::input::read_text(&dir.join("targets.json")) else {
        return Vec::new();
    };
    let Ok(t) = serde_json::from_str::<Targets>(&text) else {
        return Vec::new();
    };
    t.targets
        .into_iter()
        .filter(|t| t.file_size == 0)
        .map(|t| t.serial.unwrap_or(t.disk))
        .collect()
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
    /// The results as typed values, as each is written.
    made: Mutex<made::Made>,
    /// ACT runs and search trials of this start stopped once their
    /// verdict was decided, and the planned seconds that saved.
    saved: Mutex<(usize, f64)>,
    /// What the heartbeats say, and their thread (none without a
    /// collector among the upload targets).
    live: Arc<heartbeat::Live>,
    beacon: Mutex<Option<heartbeat::Beacon>>,
    /// The drives an earlier start of this run tested (resumed runs):
    /// the safety gate's `Overrides::earlier`.
    earlier: Vec<String>,
}

impl Ctx<'_> {
    /// The safety gate's word for `path`, asked again before each writer
    /// opens it (a phase's partition, a drive a stage before wrote): the
    /// profile's named drives, storcert's own spare-area table and this
    /// run's own "writing" mark (a resumed run) are the run's to write.
    fn clear(&self, path: &str) -> Result<crate::safety::Cleared> {
        let run = self
            .dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("run");
        let mut overrides = crate::safety::Overrides::new(&self.profile.devices.destroy, None)
            .map_err(|e| anyhow!(e))?
            .for_run(run);
        overrides.own_table = true;
        overrides.earlier = self.earlier.clone();
        crate::safety::check(
            Path::new(path),
            &crate::inventory::Roots::default(),
            &overrides,
        )
        .map_err(|e| anyhow!(e))
    }

    /// `clear` for each of `paths`.
    fn clear_all(&self, paths: &[String]) -> Result<Vec<crate::safety::Cleared>> {
        paths.iter().map(|p| self.clear(p)).collect()
    }

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

    /// `runs` ACT runs stopped once decided, `secs` before their planned end.
    fn saved_by_early_decisions(&self, runs: usize, secs: f64) {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        *saved = (saved.0 + runs, saved.1 + secs);
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs stage `id` unless the journal has it done. `work` returns a
    /// note (or an error, which fails the stage but not the run). A stage
    /// of one `drive` fails that drive; any other, the run as a whole.
    fn stage(
        &self,
        id: &str,
        drive: Option<&Target>,
        destructive: bool,
        work: impl FnOnce() -> Result<String>,
    ) -> Result<()> {
        let drives: Vec<&Target> = drive.into_iter().collect();
        self.stage_on(id, &drives, destructive, work)
    }

    /// `stage` on a group of drives (a search side by side): its failure
    /// fails those drives.
    fn stage_on(
        &self,
        id: &str,
        drives: &[&Target],
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
            .start(
                id,
                destructive,
                &drives.iter().map(|t| t.disk.clone()).collect::<Vec<_>>(),
            )
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
    /// made as needed), written durably and kept as the typed value it is.
    fn write(&self, rel: &str, artefact: impl Into<Artefact>) -> Result<()> {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            crate::util::fs::create_dir_durably(parent)?;
        }
        let artefact = artefact.into();
        write_durably(&path, artefact.to_json()).with_context(|| format!("{}", path.display()))?;
        self.made().artefact(rel, artefact);
        Ok(())
    }

    fn made(&self) -> std::sync::MutexGuard<'_, made::Made> {
        self.made.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The run's inputs beside its results: the profile as run
/// (`profile.toml`, whose SHA-256 is the journal's profile digest) and the
/// policy's text (`policy.toml`). The bundle lists their digests as the
/// statement's `configuration`, so a verifier sees what was asked for.
/// Each is recorded in `made` as written.
fn write_inputs(dir: &Path, p: &crate::run::profile::Profile, made: &mut made::Made) -> Result<()> {
    let profile = toml::to_string(p).map_err(|e| anyhow!("{e}"))?;
    write_durably(&dir.join("profile.toml"), &profile)
        .with_context(|| format!("{}", dir.join("profile.toml").display()))?;
    made.configuration("profile.toml", profile.as_bytes());
    if let Some(pol) = &p.policy {
        let text = match (&pol.file, &pol.inline) {
            (Some(f), _) => crate::input::read_text(f).ok(),
            (None, Some(t)) => Some(t.clone()),
            _ => None,
        };
        if let Some(text) = text {
            write_durably(&dir.join("policy.toml"), &text)
                .with_context(|| format!("{}", dir.join("policy.toml").display()))?;
            made.configuration("policy.toml", text.as_bytes());
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
    let digest =
        crate::util::sha256_hex(toml::to_string(p).map_err(|e| anyhow!("{e}"))?.as_bytes());
    let root = results_root(opts);
    let (dir, journal, resumed) = open_run(&root, opts, &digest)?;
    let earlier = match resumed {
        true => earlier_drives(&dir),
        false => Vec::new(),
    };
    // A resumed run's earlier starts left their results on disk only.
    // One it cannot read (a link put in it) is said, and the run goes on
    // to test: at its end the folder is judged as read, or refused for a
    // bundle with the reason, as it would be without a resume.
    let (mut made, unread) = match resumed {
        true => match made::Made::of_folder(&dir) {
            Ok(m) => (m, None),
            Err(e) => (made::Made::default(), Some(format!("{e:#}"))),
        },
        false => (made::Made::default(), None),
    };
    write_inputs(&dir, p, &mut made)?;
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
        made: Mutex::new(made),
        saved: Mutex::new((0, 0.0)),
        live: Arc::new(heartbeat::Live::default()),
        beacon: Mutex::new(None),
        earlier,
    };
    if let Some(e) = unread {
        ctx.note(format!(
            "the results of earlier starts could not be read: {e}"
        ));
    }
    // Best-effort: a target that cannot take them (a bad CA file) is said,
    // and the run goes on; the upload at the end says it again.
    if let Err(e) = start_heartbeats(&ctx, opts, &system) {
        ctx.note(format!("no heartbeats: {e:#}"));
    }
    let result = run_stages(&ctx, opts, system);
    // Stopped before a bundle (an error, a signal): the board hears so.
    ctx.last_heartbeat(None);
    if result.is_ok() && !ctx.stopped() {
        remove_scratch(p, &root, &console);
    }
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

/// A finished run's scratch file goes, unless the profile keeps it; an
/// interrupted run keeps it to resume on.
fn remove_scratch(p: &Profile, root: &Path, console: &Console) {
    if p.plan.scratch_bytes.is_none() || p.devices.keep_scratch {
        return;
    }
    let scratch = scratch_path(root);
    match std::fs::remove_file(&scratch) {
        Ok(()) => console.say(&format!("removed the scratch file {}", scratch.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => console.say(&format!("could not remove {}: {e}", scratch.display())),
    }
    let _ = std::fs::remove_dir(scratch.parent().expect("has a parent"));
}

fn run_stages(
    ctx: &Ctx,
    opts: &Options,
    system: crate::bundle::system::SystemIdentity,
) -> Result<Ending> {
    let p = ctx.profile;
    let (inv, reach) = record_machine(ctx, &system)?;
    let mut skipped = Vec::new();
    let root = ctx.dir.parent().unwrap_or(Path::new("."));
    let run_name = ctx.dir.file_name().and_then(|n| n.to_str());
    let own = run_name.map(|n| (n, &ctx.earlier[..]));
    let mut targets = select_targets(p, root, &inv, &ctx.console, &mut skipped, own)?;
    if p.plan.scratch_bytes.is_some() {
        let scratch = scratch_path(root);
        crate::util::fs::create_dir_durably(scratch.parent().expect("has a parent"))?;
        ctx.console.say(&format!(
            "scratch file: {} (removed when the run ends)",
            scratch.display()
        ));
    }
    let hidden = inventory::reach::hidden_drives(&reach);
    if targets.is_empty() && hidden.is_empty() {
        bail!("no drive to test: the profile's devices matched none the safety gate clears");
    }
    record_targets(ctx, &targets, &hidden, skipped)?;
    if !targets.is_empty() {
        for line in estimate::text(p, &targets, &inv) {
            ctx.console.say(&line);
        }
    }
    policy_stage(ctx, &inv, &targets, &reach)?;
    if !targets.is_empty() {
        health_and_suites(ctx, &mut targets)?;
    }
    let mut ending = Ending {
        verdict: Verdict::Incomplete,
        answers: Vec::new(),
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
    let (runs, secs) = *ctx.saved.lock().unwrap_or_else(|e| e.into_inner());
    if runs > 0 {
        ctx.note(format!(
            "early decisions saved {} of planned drive time: {} stopped once decided{}",
            crate::util::units::duration_text(secs),
            crate::util::text::counted(runs, "ACT run"),
            if ctx.journal().starts > 1 {
                " (this start's)"
            } else {
                ""
            }
        ));
    }
    // Notes of this and earlier starts go into the results and the report.
    let (answers, summary) = write_notes_and_report(ctx, opts)?;
    ending.answers = answers;

    let (spool, spooled) = bundle_and_spool(ctx, opts, &system, summary, &mut ending)?;
    if let Some(up) = &p.plan.upload {
        upload_spooled(ctx, up, &spool, &spooled, &mut ending)?;
    }
    Ok(ending)
}

/// The machine's identity and the inventory come first; they are cheap
/// and read-only, so they are taken again on every start. Returns the
/// inventory and what this system cannot drive.
fn record_machine(
    ctx: &Ctx,
    system: &crate::bundle::system::SystemIdentity,
) -> Result<(Inventory, Vec<crate::results::policy::Finding>)> {
    let p = ctx.profile;
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
    // Bytes for `inventory --replay`, read as a reader of the bundle reads
    // any file (it judges none of it).
    let mut left = crate::bundle::contents::Holding::UNBOUNDED;
    let read = crate::bundle::contents::FileReader::read(
        inventory::capture::RUN_CAPTURE,
        &archive,
        &mut left,
    );
    write_durably(&path, archive).with_context(|| format!("{}", path.display()))?;
    ctx.made().put(inventory::capture::RUN_CAPTURE, read);
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
    Ok((inv, reach))
}

/// What is under test, first: a results folder always says it, so a run
/// cut short after this never reads as having tested drives it did not.
/// With none, every reason is noted; otherwise the console says which,
/// and a scratch file is made (sparse) where one is tested.
fn record_targets(
    ctx: &Ctx,
    targets: &[Target],
    hidden: &[String],
    skipped: Vec<String>,
) -> Result<()> {
    ctx.write(
        "targets.json",
        Targets {
            schema_version: TARGETS_SCHEMA,
            targets: targets.to_vec(),
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
        return Ok(());
    }
    if ctx.profile.read_only {
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
    Ok(())
}

/// The profile's policy, with what this system cannot drive; without a
/// policy, the built-in check alone.
fn policy_stage(
    ctx: &Ctx,
    inv: &Inventory,
    targets: &[Target],
    reach: &[crate::results::policy::Finding],
) -> Result<()> {
    if let Some(pol) = &ctx.profile.policy {
        ctx.stage("policy", None, false, || {
            let policy = load_policy(pol)?;
            let mut report = crate::policy::check::check(&policy, inv);
            scope_findings(&mut report, targets, pol.machine);
            crate::policy::check::add_machine_findings(&mut report, reach);
            ctx.write("policy.json", report.clone())?;
            Ok(format!(
                "{}, {}",
                crate::util::text::counted(report.checks, "check"),
                crate::util::text::counted(report.findings.len(), "finding")
            ))
        })?;
    } else if !reach.is_empty() {
        // No policy of the profile's: the built-in check is the report.
        ctx.write(
            "policy.json",
            crate::policy::check::machine_findings_alone(reach),
        )?;
    } else {
        // An earlier start on this machine may have left one that no
        // longer holds.
        ctx.made().forget("policy.json");
        match std::fs::remove_file(ctx.path("policy.json")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).context("removing an earlier start's policy.json")
            }
            _ => {}
        }
    }
    Ok(())
}

/// The suites, between two health snapshots of the drives under test when
/// the profile takes them.
fn health_and_suites(ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
    let health = ctx.profile.health.as_ref().is_some_and(|h| h.enabled);
    if health {
        ctx.stage("health before", None, false, || {
            let before = crate::health::Snapshot {
                moment: Some(crate::results::health::Moment::Before),
                ..crate::health::snapshot(&tested_disks(targets))
            };
            ctx.write("health-before.json", before)?;
            Ok(String::new())
        })?;
    }
    workload::run_all(ctx, targets)?;
    if health && !ctx.stopped() {
        ctx.stage("health after", None, false, || {
            let after = crate::health::Snapshot {
                moment: Some(crate::results::health::Moment::After),
                ..crate::health::snapshot(&tested_disks(targets))
            };
            ctx.write("health-after.json", after.clone())?;
            let before = match ctx.made().artefact_at("health-before.json") {
                Some(Artefact::HealthSnapshot(s)) => s.clone(),
                _ => bail!("health-before.json: not a health snapshot this run holds"),
            };
            let d = crate::health::diff(&before, &after, |_| None);
            ctx.write("health-diff.json", d.clone())?;
            Ok(if d.degraded {
                "a drive degraded".into()
            } else {
                String::new()
            })
        })?;
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
            likeness: None,
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
