//! ACT as a run carries it out: the phases that vary the spare area
//! (provisioning or removing storcert's partition), ACT prep, storage
//! (wide over several drives or one at a time), search, and index.

use super::*;
use crate::run::plan::secs;
use crate::run::profile::{PhasePlan, SearchPlan, TimedPlan};

/// ACT in the registry of workloads.
pub(super) struct Act;

impl Workload for Act {
    fn steps(&self, p: &Profile) -> Vec<String> {
        let plan = &p.plan;
        let mut steps = Vec::new();
        if let Some(a) = &p.act {
            steps.extend(act_steps(
                a.prep,
                &plan.storage,
                a.wide,
                plan.search.as_ref(),
            ));
        }
        for (i, ph) in plan.phases.iter().enumerate() {
            steps.extend(phase_steps(i, ph));
        }
        if let Some(ix) = &plan.index {
            steps.push(format!("ACT index at {}", loads(std::slice::from_ref(ix))));
        }
        steps
    }

    /// ACT prep writes the ACT area twice (zeroes, then salt): the whole
    /// drive, or in a phase the share its spare area leaves.
    fn size_bound(&self, p: &Profile, drive_bytes: u64) -> Vec<(&'static str, u64)> {
        let share = |spare_pct: f64| (drive_bytes as f64 * (1.0 - spare_pct / 100.0)) as u64;
        let mut prep: u64 = 0;
        if p.act.as_ref().is_some_and(|a| a.prep) {
            prep = prep.saturating_add(2 * drive_bytes);
        }
        for ph in p.plan.phases.iter().filter(|ph| ph.prep) {
            prep = prep.saturating_add(2 * share(ph.spare_pct));
        }
        vec![("prep", prep)]
    }

    fn run(&self, ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
        run(ctx, targets)
    }
}

/// One ACT workload run on one target, its log, result, timeline and
/// analysis in the results folder, progress to the console.
pub(super) fn act_run(
    ctx: &Ctx,
    (key, pool): (&str, Option<&Pool>),
    w: &dyn crate::act::Workload,
    base: &str,
    total_s: u64,
) -> Result<String> {
    let files = crate::act::Files {
        log: Some(ctx.path(&format!("{base}.log"))),
        timeline: Some(ctx.path(&format!("{base}.timeline.jsonl"))),
        json: Some(ctx.path(&format!("{base}.json"))),
        label: Some(format!("{base}.log")),
    };
    if let Some(dir) = ctx.path(base).parent() {
        crate::util::fs::create_dir_durably(dir)?;
    }
    ctx.journal()
        .produces(key, &[format!("{base}.log"), format!("{base}.json")]);
    let mut last_save = Instant::now();
    let mut progress = |secs: u64, rate: f64, over: f64| {
        ctx.console.update_act(key, secs, total_s, rate, over);
        if last_save.elapsed() > Duration::from_secs(10) {
            last_save = Instant::now();
            let _ = ctx.journal().progress(key, secs);
        }
    };
    let opts = crate::act::RunOptions {
        pool: pool.cloned(),
        cleared: ctx.clear_all(w.device_names())?,
        ..act_options(ctx)
    };
    let ran = crate::act::run_to_files(w, &opts, &ctx.stop, &files, &mut progress);
    ctx.console.end(key);
    let ran = keep_ran(ctx, base, ran)?;
    // The stage's line says the log's verdict beside the run's lag.
    let verdict = match &ran.analysis {
        Ok(a) if a.analysis.verdict.pass => "PASS, ",
        Ok(_) => "FAIL, ",
        Err(e) => {
            ctx.note(format!("[{key}] {e}"));
            ""
        }
    };
    let result = ran.result;
    use crate::act::runner::Outcome;
    let errors = result.device_errors();
    match &result.outcome {
        Outcome::Completed if errors.is_empty() => {
            Ok(format!("{verdict}max lag {:.1} ms", result.max_lag_ms))
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
        // A verdict, not a broken stage: its log is judged as any other.
        // (A pass by statistics is a search trial's alone.)
        Outcome::Decided { seconds, reason } | Outcome::PassingByStatistics { seconds, reason } => {
            ctx.saved_by_early_decisions(1, total_s.saturating_sub(*seconds) as f64);
            Ok(format!(
                "{verdict}stopped once decided after {seconds} s: {reason}"
            ))
        }
    }
}

/// Keeps what an ACT run wrote (`base`.log, .json, .timeline.jsonl, and
/// the log's analysis) as the values the run holds. Where the run failed
/// midway, or its log could not be read back or its analysis written,
/// what it left on disk is read as the bundle's reader will read it.
fn keep_ran(ctx: &Ctx, base: &str, ran: Result<crate::act::Ran>) -> Result<crate::act::Ran> {
    let (log, json, timeline) = (
        format!("{base}.log"),
        format!("{base}.json"),
        format!("{base}.timeline.jsonl"),
    );
    let mut made = ctx.made();
    let ran = match ran {
        Ok(r) => r,
        Err(e) => {
            let analysis = crate::act::analyze::analysis_path(Path::new(&log))
                .to_string_lossy()
                .into_owned();
            made.read_back(&ctx.dir, &[log, analysis, json, timeline]);
            return Err(e);
        }
    };
    made.judged_log(&ctx.dir, &log, &ran.analysis);
    // The seconds go in the timeline's points; the result on disk has none.
    made.timeline(&timeline, &ran.result.timeline);
    let result = crate::results::act::RunResult {
        timeline: Vec::new(),
        ..ran.result.clone()
    };
    made.artefact(&json, result.into());
    Ok(ran)
}

/// How the profile's ACT runs run.
fn act_options(ctx: &Ctx) -> crate::act::RunOptions {
    let act = ctx.profile.act.as_ref();
    crate::act::RunOptions {
        run_to_end: act.is_some_and(|a| a.run_to_end),
        threads: act.and_then(|a| a.threads).map(usize::from),
        ..Default::default()
    }
}

/// The worker threads that carry ACT runs going side by side, or why
/// there are none: each stage that would have run on them fails with it.
type Pool = Arc<crate::act::pool::Pool>;
type PoolOrWhy = std::result::Result<Pool, String>;

/// A pool for one ACT run per target, each `C` at `plan` for `secs`:
/// sized to their asked rate in all (`act::pool_for`), so a box of many
/// drives runs them on as many threads as the cores need, not one each.
fn pool_for<C>(ctx: &Ctx, targets: &[&Target], plan: &profile::TimedPlan, secs: u64) -> PoolOrWhy
where
    C: crate::act::config::RunConfig + crate::act::Workload,
{
    let opts = act_options(ctx);
    let runs = targets
        .iter()
        .map(|t| Ok((drive_config::<C>(t, plan, secs)?.run_spec(&opts), 1)))
        .collect::<Result<Vec<_>>>();
    runs.and_then(|runs| crate::act::pool_for(&runs, &opts))
        .map_err(|e| format!("ACT worker threads: {e:#}"))
}

/// The pool a stage runs on, or its error.
fn pooled(pool: &PoolOrWhy) -> Result<&Pool> {
    pool.as_ref().map_err(|why| anyhow!("{why}"))
}

/// One drive's ACT configuration (storage or index) for `plan`, `secs`.
pub(super) fn drive_config<C: crate::act::config::RunConfig>(
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
pub(super) fn wide_storage_config(
    targets: &[Target],
    plan: &profile::TimedPlan,
) -> Result<StorageConfig> {
    let devices = targets.iter().map(|t| t.path.clone()).collect();
    plan.act_config(devices, 0, plan.secs, "profile")
        .map_err(|e| anyhow!("{e}"))
}

/// How long the kernel is given to list a provisioned partition.
pub(super) const PARTITION_WAIT: Duration = Duration::from_secs(30);
pub(super) const PARTITION_POLL: Duration = Duration::from_millis(200);

/// Runs `step` every PARTITION_POLL until it says done or `wait` is over:
/// whether it was done. The kernel's view of a partition table is waited
/// for this way, whether a partition is to appear or to go.
fn poll(wait: Duration, mut step: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if step() {
            return true;
        }
        if start.elapsed() >= wait {
            return false;
        }
        std::thread::sleep(PARTITION_POLL);
    }
}

/// Asks the kernel to re-read `disk`'s partition table.
fn reread(disk: &Path) -> std::io::Result<()> {
    crate::blockdev::reread_partitions(&std::fs::File::open(disk)?)
}

/// Each target's storcert partition as the kernel lists it, asking the
/// kernel to re-read the tables of those not yet listed until `wait` is
/// over.
pub(super) fn wait_for_partitions(targets: &[&Target], wait: Duration) -> Vec<Option<PathBuf>> {
    let mut found: Vec<Option<PathBuf>> = vec![None; targets.len()];
    poll(wait, || {
        for (t, f) in targets.iter().zip(found.iter_mut()) {
            if f.is_none() {
                let disk = Path::new(&t.disk);
                *f = crate::provision::provisioned_partition(disk);
                if f.is_none() {
                    let _ = reread(disk);
                }
            }
        }
        found.iter().all(Option::is_some)
    });
    found
}

/// Asks the kernel to re-read `disk`'s table until it lists no partition
/// on it or `wait` is over: how long that took, or the last reason it
/// still did not.
pub(super) fn wait_for_unlisted(disk: &Path, wait: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    let mut why = String::new();
    let gone = poll(wait, || {
        why = match reread(disk) {
            Err(e) => format!("the kernel did not re-read the partition table: {e}"),
            Ok(()) => match crate::provision::listed_partition(disk) {
                None => return true,
                Some(p) => format!("the kernel still lists {p}"),
            },
        };
        false
    });
    if gone {
        Ok(start.elapsed())
    } else {
        Err(why)
    }
}

/// Runs `f` for every target at once, one thread each.
pub(super) fn each_parallel<T: Sync>(
    targets: &[T],
    f: impl Fn(&T) -> Result<()> + Sync,
) -> Result<()> {
    std::thread::scope(|s| {
        let handles: Vec<_> = targets.iter().map(|t| s.spawn(|| f(t))).collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow!("a stage thread panicked")))
        })
    })
}

/// The stage ids of a phase's ACT runs on `t`, one of `targets`.
pub(super) fn phase_act_ids(ph: &PhaseRun, t: &Target, targets: &[Target]) -> Vec<String> {
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
    if let Some(s) = ph.search {
        let groups = search_groups(targets, s.parallel);
        if let Some(g) = groups.iter().find(|g| g.iter().any(|x| x.label == t.label)) {
            ids.push(format!("{}act search {}", ph.id, group_label(g)));
        }
    }
    ids
}

pub(super) fn run_phase(ctx: &Ctx, targets: &mut Vec<Target>, ph: &PhaseRun) -> Result<()> {
    // The phase's drives as it starts: search groups are made of these,
    // whichever of them the steps below leave, so a group keeps its stage
    // id across starts.
    let all = targets.clone();
    if !ph.folder.is_empty() {
        // A resumed run does not set up again the spare area of a phase
        // whose every ACT run is done (a later phase may have changed it).
        targets.retain(|t| {
            !phase_act_ids(ph, t, &all)
                .iter()
                .all(|id| ctx.journal().is_done(id))
        });
    }
    match ph.spare {
        SpareSetting::AsItIs => {}
        SpareSetting::Remove => remove_spare(ctx, targets, ph)?,
        SpareSetting::Provision(spare_pct) => provision_spare(ctx, targets, ph, spare_pct)?,
    }
    if ph.prep {
        act_prep(ctx, targets, ph)?;
    }
    act_storage(ctx, targets, ph)?;
    if let Some(s) = ph.search {
        act_search(ctx, &all, targets, ph, s)?;
    }
    Ok(())
}

/// Takes storcert's partition off each drive that carries one, so the
/// phase tests the whole drive; a drive whose partition stays is dropped.
fn remove_spare(ctx: &Ctx, targets: &mut Vec<Target>, ph: &PhaseRun) -> Result<()> {
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
        ctx.stage(&remove_id(t), Some(t), true, || {
            if crate::safety::storcert_partition(Path::new(&t.disk)).is_none() {
                return Ok("removed by an earlier, interrupted attempt".into());
            }
            let r = crate::provision::remove(&ctx.clear(&t.disk)?, true)?;
            if r.notes.is_empty() && r.kernel_partitions.is_empty() {
                return Ok("storcert's partition removed: the whole drive is tested".into());
            }
            // The kernel refuses to re-read a table while a partition is
            // open (udev still probing it, a monitoring agent): asked
            // again for a while, as provisioning does, before the drive
            // is given up on. Said as it starts, so whoever holds the
            // partition (and a test) hears that it is waited for.
            ctx.console.say(&format!(
                "[{}] the kernel still lists the old partition: asking it again every {} ms \
                 for up to {} s",
                remove_id(t),
                PARTITION_POLL.as_millis(),
                PARTITION_WAIT.as_secs()
            ));
            let after = wait_for_unlisted(Path::new(&t.disk), PARTITION_WAIT).map_err(|why| {
                anyhow!(
                    "{why}, {} s after the table was removed (its re-read asked every {} ms): \
                     the drive is not tested, rather than tested whole with the kernel \
                     still holding the old partition",
                    PARTITION_WAIT.as_secs(),
                    PARTITION_POLL.as_millis()
                )
            })?;
            Ok(format!(
                "storcert's partition removed (the kernel re-read the table after {} s): \
                 the whole drive is tested",
                after.as_secs().max(1)
            ))
        })
    })?;
    // A drive whose partition was not removed is not tested whole:
    // its failed stage says why.
    targets.retain(|t| !carrying.contains(&t.label) || ctx.journal().is_done(&remove_id(t)));
    Ok(())
}

/// A provisioning record whose partition the kernel listed only once
/// asked again: it gets the kernel's view after all, so the drive's tests
/// on that partition are given its spare area (the report's and
/// `compare`'s), not taken for tests of another drive with none.
fn listed_late(
    ctx: &Ctx,
    path: &str,
    mut r: crate::results::provision::ProvisionResult,
    partition: &Path,
    after: Duration,
) -> Result<()> {
    if r.kernel.is_some() {
        return Ok(());
    }
    let name = partition
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    r.notes.push(format!(
        "the kernel listed {name} within {} s of being asked again",
        after.as_secs().max(1)
    ));
    // provisioned_partition checked that the kernel's start and size are
    // the ones written.
    r.kernel = Some(crate::results::provision::KernelView {
        partition: name,
        start_bytes: r.partition_start_bytes,
        size_bytes: r.partition_size_bytes,
    });
    ctx.write(path, r)
}

/// Provisions each drive with `spare_pct` spare, and moves it onto the
/// partition the kernel lists; a drive without one is dropped.
fn provision_spare(
    ctx: &Ctx,
    targets: &mut Vec<Target>,
    ph: &PhaseRun,
    spare_pct: f64,
) -> Result<()> {
    let p = ctx.profile;
    let dir = &ph.folder;
    // The factory spare the policy gives each drive, for the total
    // spare area (a policy that does not load fails its own stage).
    let policy = p.policy.as_ref().and_then(|pol| load_policy(pol).ok());
    let provision_id = |t: &Target| format!("{}provision {}", ph.id, t.label);
    let record = |t: &Target| format!("{dir}provision/{}.json", t.label);
    // This start's records, for the kernel's late view of a partition.
    let written = std::sync::Mutex::new(std::collections::BTreeMap::new());
    each_parallel(targets, |t| {
        ctx.stage(&provision_id(t), Some(t), true, || {
            let r = crate::provision::provision(
                &ctx.clear(&t.disk)?,
                &crate::provision::Spec {
                    device: PathBuf::from(&t.disk),
                    spare_pct,
                    factory_spare_pct: policy
                        .as_ref()
                        .and_then(|pol| pol.factory_spare(t.model.as_deref(), t.serial.as_deref())),
                    discard: true,
                },
            )?;
            ctx.write(&record(t), r.clone())?;
            let done = format!(
                "partition of {} bytes, {} spare",
                r.partition_size_bytes, r.spare_bytes
            );
            written
                .lock()
                .map_err(|_| anyhow!("a provisioning thread panicked"))?
                .insert(t.label.clone(), r);
            Ok(done)
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
    let since = Instant::now();
    let found = wait_for_partitions(&waiting, PARTITION_WAIT);
    let mut written = written.into_inner().unwrap_or_default();
    for (t, part) in waiting.iter().zip(&found) {
        if let (Some(p), Some(r)) = (part, written.remove(&t.label)) {
            listed_late(ctx, &record(t), r, p, since.elapsed())?;
        }
    }
    for (t, part) in waiting.iter().zip(&found) {
        ctx.stage(
            &format!("{}partition {}", ph.id, t.label),
            Some(t),
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
    Ok(())
}

fn act_prep(ctx: &Ctx, targets: &[Target], ph: &PhaseRun) -> Result<()> {
    let dir = &ph.folder;
    each_parallel(targets, |t| {
        ctx.stage(
            &format!("{}act prep {}", ph.id, t.label),
            Some(t),
            true,
            || {
                let cleared = ctx.clear(&t.path)?;
                if t.file_size > 0 {
                    // A scratch file is created at its size first.
                    crate::act::device::Device::open(&cleared, false, t.file_size)?;
                }
                let mut dev = crate::act::device::Device::open(&cleared, false, 0)?;
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
            },
        )
    })?;
    Ok(())
}

/// The phase's timed ACT runs: one over every drive (wide), or one a drive.
fn act_storage(ctx: &Ctx, targets: &[Target], ph: &PhaseRun) -> Result<()> {
    let dir = &ph.folder;
    if ph.wide && !ph.storage.is_empty() && !targets.is_empty() {
        // One run over every drive, judged per drive and over all.
        for tl in ph.storage {
            let id = format!("{}act {} wide", ph.id, tl.name);
            ctx.stage(&id, None, true, || {
                let c = wide_storage_config(targets, tl)?;
                act_run(
                    ctx,
                    (&id, None),
                    &c,
                    &format!("{dir}act/wide-{}", tl.name),
                    tl.secs,
                )
            })?;
        }
    }
    for tl in ph.storage.iter().filter(|_| !ph.wide) {
        let all: Vec<&Target> = targets.iter().collect();
        let pool = pool_for::<StorageConfig>(ctx, &all, tl, tl.secs);
        each_parallel(targets, |t| {
            let id = format!("{}act {} {}", ph.id, tl.name, t.label);
            ctx.stage(&id, Some(t), true, || {
                let c: StorageConfig = drive_config(t, tl, tl.secs)?;
                act_run(
                    ctx,
                    (&id, Some(pooled(&pool)?)),
                    &c,
                    &format!("{dir}act/{}-{}", t.label, tl.name),
                    tl.secs,
                )
            })
        })?;
    }
    Ok(())
}

/// The phase's searches, over groups made of all its drives (`all`) and
/// run on those of them still to test (`targets`): a group whose drives
/// are all done or dropped is not run, one that lost a drive (its spare
/// area could not be set) runs on the rest under its own id.
fn act_search(
    ctx: &Ctx,
    all: &[Target],
    targets: &[Target],
    ph: &PhaseRun,
    s: &profile::SearchPlan,
) -> Result<()> {
    // Every group's trials on one pool, sized for every drive at the
    // highest load.
    let highest = profile::TimedPlan {
        load: s.max_load,
        ..Default::default()
    };
    let left: Vec<&Target> = targets.iter().collect();
    let pool = pool_for::<StorageConfig>(ctx, &left, &highest, s.trial_secs);
    each_parallel(&search_groups(all, s.parallel), |group| {
        let label = group_label(group);
        let left: Vec<&Target> = group
            .iter()
            .filter_map(|g| targets.iter().find(|t| t.label == g.label))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        ctx.stage_on(&format!("{}act search {label}", ph.id), &left, true, || {
            search_group(ctx, (&left, pooled(&pool)?), &label, ph, s)
        })
    })
}

/// One search: over one drive, or side by side over a group alike.
fn search_group(
    ctx: &Ctx,
    (group, pool): (&[&Target], &Pool),
    label: &str,
    ph: &PhaseRun,
    s: &profile::SearchPlan,
) -> Result<String> {
    let dir = &ph.folder;
    let mut base: StorageConfig = drive_config(
        group[0],
        &profile::TimedPlan {
            load: 1.0,
            ..Default::default()
        },
        s.trial_secs,
    )?;
    base.device_names = group.iter().map(|t| t.path.clone()).collect();
    let spec = crate::act::search::SearchSpec {
        base,
        plan: crate::act::search::Plan {
            max_load: s.max_load,
            step: s.step,
            trial_secs: s.trial_secs,
            confirm_secs: s.confirm_secs,
        },
        parallel: group.len() > 1,
        statistical: s.statistical.then_some(crate::act::statistics::ALPHA),
        out_dir: ctx.path(&format!("{dir}act/search-{label}")),
        label_dir: format!("{dir}act/search-{label}/"),
    };
    // An interrupted attempt's trials are not this attempt's: the stage
    // starts from an empty folder.
    clear_folder(&spec.out_dir)?;
    ctx.made().read_back_under(&ctx.dir, &spec.label_dir);
    let opts = crate::act::RunOptions {
        pool: Some(Arc::clone(pool)),
        cleared: ctx.clear_all(&spec.base.device_names)?,
        ..act_options(ctx)
    };
    let searched = crate::act::search::search(&spec, &opts, &ctx.stop, &ctx.console);
    let searched = match searched {
        Ok(s) => s,
        Err(e) => {
            // What the trials left is judged as it is on disk.
            ctx.made().read_back_under(&ctx.dir, &spec.label_dir);
            return Err(e);
        }
    };
    keep_trials(ctx, &searched.trials);
    let r = searched.result;
    let (runs, secs) = r.saved_by_early_decisions();
    ctx.saved_by_early_decisions(runs, secs);
    ctx.write(&format!("{dir}act/search-{label}.json"), r.clone())?;
    Ok(match r.highest_passing_load {
        Some(l) if r.parallel => format!(
            "highest passing load {l}x on every drive ({} side by side)",
            group.len()
        ),
        Some(l) => format!("highest passing load {l}x"),
        None => "no load passed".into(),
    })
}

/// The drives a phase's search runs on together: with `parallel`, drives
/// alike (model, firmware, capacity, as the inventory read them) form
/// one group searched side by side; otherwise, and a drive alike with
/// no other, each drive alone.
pub(super) fn search_groups(targets: &[Target], parallel: bool) -> Vec<Vec<&Target>> {
    let mut groups: Vec<Vec<&Target>> = Vec::new();
    for t in targets {
        let alike = parallel
            .then(|| {
                groups
                    .iter_mut()
                    .find(|g| t.likeness.is_some() && g[0].likeness == t.likeness)
            })
            .flatten();
        match alike {
            Some(g) => g.push(t),
            None => groups.push(vec![t]),
        }
    }
    groups
}

/// A group's name in its stage id and files: its drives' labels
/// ("sdb+sdc"), or the first and a count where that would be long.
pub(super) fn group_label(group: &[&Target]) -> String {
    let all: Vec<&str> = group.iter().map(|t| t.label.as_str()).collect();
    let joined = all.join("+");
    match joined.len() <= 120 {
        true => joined,
        false => format!("{}-and-{}-more", all[0], all.len() - 1),
    }
}

/// Removes a folder of the run's own and what it holds, if it is there.
fn clear_folder(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Keeps a search's trial logs as judged, with their analyses.
fn keep_trials(ctx: &Ctx, trials: &[crate::act::search::Judged]) {
    let mut made = ctx.made();
    for (log, judged) in trials {
        if let Ok(rel) = log.strip_prefix(&ctx.dir) {
            made.judged_log(&ctx.dir, &rel.to_string_lossy(), judged);
        }
    }
}

/// The spare area a phase sets before its ACT runs.
pub(super) enum SpareSetting {
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
pub(super) struct PhaseRun<'a> {
    folder: String,
    id: String,
    spare: SpareSetting,
    prep: bool,
    storage: &'a [profile::TimedPlan],
    /// The storage runs over all drives at once, not one per drive.
    wide: bool,
    search: Option<&'a profile::SearchPlan>,
}

/// The phases (the run without phases is one): each sets its spare area,
/// then runs ACT prep, storage and search; then ACT index.
fn run(ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
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
            let all: Vec<&Target> = targets.iter().collect();
            let pool = pool_for::<IndexConfig>(ctx, &all, ix, ix.secs);
            each_parallel(targets, |t| {
                let id = format!("act index {} {}", ix.name, t.label);
                ctx.stage(&id, Some(t), true, || {
                    let c: IndexConfig = drive_config(t, ix, ix.secs)?;
                    act_run(
                        ctx,
                        (&id, Some(pooled(&pool)?)),
                        &c,
                        &format!("act/index-{}-{}", t.label, ix.name),
                        ix.secs,
                    )
                })
            })?;
        }
    }
    Ok(())
}

/// The ACT steps of a phase (or of the run without phases), one line each.
fn act_steps(
    prep: bool,
    storage: &[TimedPlan],
    wide: bool,
    srch: Option<&SearchPlan>,
) -> Vec<String> {
    let mut out = Vec::new();
    if prep {
        out.push("ACT prep (zero, then salt, every block)".into());
    }
    if !storage.is_empty() {
        out.push(format!(
            "ACT storage{} at {}",
            if wide {
                ", one run over all the drives at once (judged per drive and over all),"
            } else {
                ""
            },
            loads(storage)
        ));
    }
    if let Some(s) = srch {
        out.push(format!("ACT {}", search(s)));
    }
    out
}

fn phase_steps(i: usize, ph: &PhasePlan) -> Vec<String> {
    let spare = if ph.spare_pct > 0.0 {
        format!(
            "phase {}: discard each drive, then storcert's partition leaving {}% spare; the tests run on it",
            i + 1,
            ph.spare_pct
        )
    } else {
        format!(
            "phase {}: no spare partition (storcert's own partition, where there is one, is removed); the whole drive is tested",
            i + 1
        )
    };
    std::iter::once(spare)
        .chain(
            act_steps(ph.prep, &ph.storage, ph.wide, ph.search.as_ref())
                .into_iter()
                .map(|s| format!("phase {}: {s}", i + 1)),
        )
        .collect()
}

fn loads(storage: &[TimedPlan]) -> String {
    storage
        .iter()
        .map(|t| format!("{} for {}", t.name, secs(t.secs)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn search(s: &SearchPlan) -> String {
    format!(
        "search for the highest passing load up to {}x in steps of {}x ({} trials, {} confirmation){}",
        s.max_load,
        s.step,
        secs(s.trial_secs),
        secs(s.confirm_secs),
        if s.parallel {
            "; drives alike side by side, one load each, each confirming on its own"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(label: &str, likeness: Option<&str>) -> Target {
        Target {
            path: format!("/dev/{label}"),
            disk: format!("/dev/{label}"),
            label: label.into(),
            serial: None,
            model: None,
            file_size: 0,
            likeness: likeness.map(String::from),
        }
    }

    #[test]
    fn drives_alike_search_as_one_group_and_the_rest_alone() {
        let m1 = Some("M1 firmware A, 100 bytes");
        let ts = [
            target("sdb", m1),
            target("sdc", None),
            target("sdd", Some("M1 firmware B, 100 bytes")),
            target("sde", m1),
            target("sdf", None),
        ];
        let labels = |groups: Vec<Vec<&Target>>| -> Vec<String> {
            groups.iter().map(|g| group_label(g)).collect()
        };
        assert_eq!(
            labels(search_groups(&ts, true)),
            ["sdb+sde", "sdc", "sdd", "sdf"]
        );
        assert_eq!(
            labels(search_groups(&ts, false)),
            ["sdb", "sdc", "sdd", "sde", "sdf"]
        );
        // 24 drives alike: a name short enough for a file name.
        let many: Vec<Target> = (0..24).map(|i| target(&format!("nvme{i}n1"), m1)).collect();
        assert_eq!(labels(search_groups(&many, true)), ["nvme0n1-and-23-more"]);
    }
}
