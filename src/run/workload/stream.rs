//! The streaming suite as a run carries it out: each entry's sequential
//! passes over the drives (once, or looped for a burn-in), then its
//! filesystem pass.

use super::*;
use crate::run::plan::secs;

/// The streaming suite in the registry of workloads.
pub(super) struct Stream;

impl Workload for Stream {
    fn steps(&self, p: &Profile) -> Vec<String> {
        p.plan.stream.iter().flat_map(stream_steps).collect()
    }

    /// Each entry's passes over its span of the drive, each loop (one
    /// bounded by time is a timed stage), and its filesystem pass's file,
    /// moved four times (write, rewrite's read and write, read).
    fn size_bound(&self, p: &Profile, drive_bytes: u64) -> Vec<(&'static str, u64)> {
        let (mut stream, mut fs) = (0u64, 0u64);
        for s in &p.plan.stream {
            if s.duration_secs.is_none() {
                let span = s
                    .size
                    .unwrap_or(drive_bytes / 100 * u64::from(s.percent))
                    .min(drive_bytes);
                let loops = u64::from(s.loops.unwrap_or(1));
                stream = stream.saturating_add(
                    span.saturating_mul(s.passes.len() as u64)
                        .saturating_mul(loops),
                );
            }
            if let Some(f) = &s.fs {
                fs = fs.saturating_add(f.file_size.saturating_mul(4));
            }
        }
        vec![("stream", stream), ("filesystem pass", fs)]
    }

    fn run(&self, ctx: &Ctx, targets: &mut Vec<Target>) -> Result<()> {
        run(ctx, targets)
    }
}

/// Each `[[stream]]` entry: its passes, then its filesystem pass.
fn run(ctx: &Ctx, targets: &[Target]) -> Result<()> {
    for s in &ctx.profile.plan.stream {
        if !s.passes.is_empty() {
            stream_stage(ctx, targets, s)?;
        }
        if let Some(fs) = &s.fs {
            ctx.stage(&s.fs_stage(), None, true, || {
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
                ctx.write(&s.file("fs"), r.clone())?;
                if let Some(w) = r.page_cache_warning() {
                    ctx.note(format!("[{}] {w}", s.fs_stage()));
                }
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
    let stage = s.stage();
    // A drive the run cannot open (or the gate now refuses) fails its own
    // stage, and the others are streamed: one bad node must not mark
    // every drive of the run untested.
    let mut usable = Vec::new();
    for t in targets {
        match openable(ctx, t, writes) {
            Ok(()) => usable.push(t.clone()),
            Err(why) => ctx.stage(&format!("{stage} {}", t.label), Some(t), writes, || {
                Err(why.context("this drive is not streamed; the others are"))
            })?,
        }
    }
    if usable.is_empty() {
        return Ok(());
    }
    let targets = &usable[..];
    ctx.stage(&stage, None, writes, || {
        let attempt = ctx.journal().get(&stage).map_or(1, |r| r.attempts);
        // None past what the clock can hold: no end but the loops'.
        let until = s
            .duration_secs
            .and_then(|d| Instant::now().checked_add(Duration::from_secs(d)));
        let mut n = 0u32;
        loop {
            n += 1;
            let paths: Vec<String> = targets.iter().map(|t| t.path.clone()).collect();
            let spec = crate::stream::Spec {
                cleared: match s.passes.contains(&crate::stream::Pass::Write) {
                    true => ctx.clear_all(&paths)?,
                    false => Vec::new(),
                },
                targets: paths,
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
                s.file(&format!("attempt-{attempt}/loop-{n:04}"))
            } else {
                s.file("result")
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

/// Whether the stream passes can open `t`: cleared by the gate where they
/// write, and opened for reading either way.
fn openable(ctx: &Ctx, t: &Target, writes: bool) -> Result<()> {
    if writes {
        ctx.clear(&t.path)?;
    }
    std::fs::File::open(&t.path).with_context(|| format!("open {}", t.path))?;
    Ok(())
}

/// The streaming suite's passes and its filesystem pass.
fn stream_steps(s: &profile::StreamPlan) -> Vec<String> {
    let mut steps = Vec::new();
    if !s.passes.is_empty() {
        steps.push(format!(
            "{}: {} passes of {} blocks at queue depth {} ({} a drive) over {}{}{}",
            s.stage(),
            s.passes
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(" then "),
            crate::output::units::block_size(s.bs),
            s.qd,
            crate::util::text::counted(s.jobs as usize, "job"),
            match s.size {
                Some(b) => crate::output::units::decimal_bytes(b),
                None => format!("{}% of each drive", s.percent),
            },
            if s.verify { ", verified" } else { "" },
            match (s.loops, s.duration_secs) {
                (Some(n), _) => format!(", {n} times over"),
                (None, Some(d)) => format!(", again and again for {}", secs(d)),
                (None, None) => String::new(),
            }
        ));
    }
    if let Some(fs) = &s.fs {
        steps.push(format!(
            "{}: filesystem pass in {} (a {} file, {} files; nothing is formatted)",
            s.fs_stage(),
            fs.dir.display(),
            crate::output::units::decimal_bytes(fs.file_size),
            fs.files
        ));
    }
    steps
}
