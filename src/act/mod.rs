//! The Aerospike Certification Tool workload: ACT 6.x configuration and
//! derived rates, prep (zero + salt), the storage and index workloads on an
//! open-loop io_uring scheduler, ACT-format logs, the act_latency.py
//! analysis with a verdict, and the search for the highest passing load.

pub mod analyze;
pub mod config;
pub mod device;
pub mod histogram;
pub mod index;
pub mod prep;
pub mod random;
pub mod runner;
pub mod search;
pub mod storage;
pub mod timeline;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::engine::{self, EngineKind};
use config::{IndexConfig, StorageConfig};
use device::Device;
use runner::{RunResult, Sinks};

/// How a workload run is carried out, beyond the ACT configuration.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub engine: EngineKind,
    /// Requests the engine holds at once (open-loop ceiling).
    pub depth: u32,
    pub max_errors: u64,
    pub io_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: EngineKind::Auto,
            depth: 2048,
            max_errors: 100,
            io_timeout: Duration::from_secs(30),
        }
    }
}

pub fn open_devices(names: &[String], dsync: bool, file_size: u64) -> Result<Vec<Device>> {
    names
        .iter()
        .map(|n| Device::open(n, dsync, file_size))
        .collect()
}

/// Runs ACT's storage workload; the ACT log goes to `sinks.log`.
pub fn run_storage(
    cfg: &StorageConfig,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    let mut devices = open_devices(&cfg.device_names, !cfg.disable_odsync, cfg.file_size_bytes)?;
    let mut engine = engine::open(opts.engine, opts.depth).context("open the I/O engine")?;
    let spec = storage::run_spec(cfg, opts.max_errors, opts.io_timeout);
    let header = storage::header(cfg, &devices, &spec.hist_names, engine.name());
    sinks.log.write_all(header.as_bytes())?;
    runner::run(&spec, &mut devices, engine.as_mut(), stop, sinks)
}

/// Runs ACT's index workload; the ACT log goes to `sinks.log`.
pub fn run_index(
    cfg: &IndexConfig,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    sinks: &mut Sinks<'_>,
) -> Result<RunResult> {
    let mut devices = open_devices(&cfg.device_names, !cfg.disable_odsync, cfg.file_size_bytes)?;
    let mut engine = engine::open(opts.engine, opts.depth).context("open the I/O engine")?;
    let spec = index::run_spec(cfg, opts.max_errors, opts.io_timeout);
    let header = index::header(cfg, &devices, &spec.hist_names, engine.name());
    sinks.log.write_all(header.as_bytes())?;
    runner::run(&spec, &mut devices, engine.as_mut(), stop, sinks)
}
