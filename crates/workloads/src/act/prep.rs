//! ACT's prep (act_prep): zero the whole device, then salt it with random
//! data, in 128 KiB sequential O_DIRECT writes, so that reads during the
//! test hit written flash. storcert keeps 32 writes in flight on the engine
//! instead of ACT's 8 threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::device::Device;
use storcert_engine::{BufferPools, Engine, Request};
use storcert_output::console::Console;
use storcert_output::progress::Progress;
pub use storcert_results::act::{PassResult, PrepResult};
use storcert_util::random::Rng;

pub const PREP_BLOCK: u32 = 128 * 1024;
const DEPTH: usize = 32;

/// Zero, then salt, the whole of `dev`, progress to `console`.
pub fn prep(
    dev: &mut Device,
    engine: &mut dyn Engine,
    stop: &Arc<AtomicBool>,
    console: &Arc<Console>,
) -> Result<PrepResult> {
    let mut passes = Vec::new();
    for (name, salt) in [("cleaning", false), ("salting", true)] {
        let r = pass(dev, engine, stop, console, name, salt)?;
        let interrupted = r.bytes < dev.size_bytes;
        passes.push(r);
        if interrupted {
            return Ok(PrepResult {
                device: dev.name.clone(),
                size_bytes: dev.size_bytes,
                passes,
                interrupted: true,
            });
        }
    }
    Ok(PrepResult {
        device: dev.name.clone(),
        size_bytes: dev.size_bytes,
        passes,
        interrupted: false,
    })
}

fn pass(
    dev: &mut Device,
    engine: &mut dyn Engine,
    stop: &Arc<AtomicBool>,
    console: &Arc<Console>,
    name: &str,
    salt: bool,
) -> Result<PassResult> {
    let size = dev.size_bytes;
    let mut rng = Rng::from_entropy();
    let mut pools = BufferPools::default();
    let mut progress = Progress::bytes(console, &format!("{name} {}", dev.name), size);
    let started = Instant::now();
    let mut next = 0u64;
    let mut done = 0u64;
    let mut completions = Vec::new();
    let mut failure = None;
    while done < size {
        while failure.is_none()
            && !stop.load(Ordering::Relaxed)
            && next < size
            && engine.in_flight() < DEPTH.min(engine.capacity())
        {
            // The tail smaller than a block is written in whole sectors.
            let len = (size - next).min(PREP_BLOCK as u64) as u32;
            let mut buf = pools.get(PREP_BLOCK as usize);
            if salt {
                rng.fill(&mut buf.as_mut_slice()[..len as usize], 100);
            } else {
                buf.as_mut_slice().fill(0);
            }
            engine.push(Request {
                fd: dev.fd(),
                offset: next,
                len,
                write: true,
                buf,
                tag: next,
            })?;
            next += len as u64;
        }
        if engine.in_flight() == 0 {
            break;
        }
        completions.clear();
        engine.reap(
            Some(Instant::now() + Duration::from_millis(200)),
            &mut completions,
        )?;
        for c in completions.drain(..) {
            if let Some(e) = c.error() {
                dev.record_error(true, c.offset, c.len, &e);
                failure.get_or_insert(format!(
                    "{name} {}: write at offset {}: {e}",
                    dev.name, c.offset
                ));
            } else {
                done += c.len as u64;
            }
            pools.put(c.buf);
        }
        progress.set(done);
    }
    progress.finish(done);
    if let Some(f) = failure {
        bail!(f);
    }
    // SAFETY: fsync on our open fd.
    if unsafe { libc::fsync(dev.fd()) } != 0 {
        bail!(
            "{name} {}: fsync: {}",
            dev.name,
            std::io::Error::last_os_error()
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(PassResult {
        pass: name.to_string(),
        bytes: done,
        seconds,
        mb_per_sec: done as f64 / seconds.max(1e-9) / 1e6,
    })
}
