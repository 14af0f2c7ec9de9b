//! ACT's index workload (act_index): 4 KiB reads for every read and write
//! request's index lookup, plus the cache threads' 4 KiB reads and writes
//! from defrag, spread over the devices.

use std::time::Duration;

use super::config::IndexConfig;
use super::device::Device;
use super::runner::{Burst, RunSpec, Shape, StreamSpec};
use super::timeline::Kind;
use super::{RunOptions, Workload};

fn run_spec(cfg: &IndexConfig, opts: &super::RunOptions) -> RunSpec {
    let mut names = vec!["reads".to_string()];
    let per_reads: Vec<usize> = cfg
        .device_names
        .iter()
        .map(|d| {
            names.push(format!("{d}-reads"));
            names.len() - 1
        })
        .collect();
    let has_writes = cfg.cache_thread_reads_and_writes_per_sec != 0;
    let mut per_writes = Vec::new();
    let mut writes = None;
    if has_writes {
        names.push("writes".into());
        writes = Some(names.len() - 1);
        for d in &cfg.device_names {
            names.push(format!("{d}-writes"));
            per_writes.push(names.len() - 1);
        }
    }
    names.push("txn-reads".into());
    let txn_reads = names.len() - 1;
    let txn_writes = has_writes.then(|| {
        names.push("txn-writes".into());
        names.len() - 1
    });
    let stream = |label: &str, rate: f64, write: bool| StreamSpec {
        label: label.into(),
        rate,
        one_in_flight: false,
        device: None,
        shape: Shape::Io4k { write },
        hist: Some(if write {
            writes.expect("has writes")
        } else {
            0
        }),
        device_hists: Some(if write {
            per_writes.clone()
        } else {
            per_reads.clone()
        }),
        txn_hist: if write { txn_writes } else { Some(txn_reads) },
        pause: Duration::ZERO,
        kind: if write { Kind::Write } else { Kind::Read },
        // act_index's service threads are not shaped (docs/act.md).
        burst: Burst::EVEN,
    };
    let mut streams = vec![stream(
        "reads",
        cfg.service_thread_reads_per_sec as f64,
        false,
    )];
    if has_writes {
        let rate = cfg.cache_thread_reads_and_writes_per_sec as f64;
        streams.push(StreamSpec {
            label: "cache-reads".into(),
            ..stream("reads", rate, false)
        });
        streams.push(stream("writes", rate, true));
    }
    RunSpec {
        streams,
        hist_names: names,
        microsecond: cfg.microsecond_histograms,
        duration: Duration::from_secs(cfg.test_duration_sec),
        report_interval: Duration::from_secs(cfg.report_interval_sec),
        max_lag: Duration::from_secs(cfg.max_lag_sec),
        large_block_bytes: 4096,
        record: (4096, 4096),
        compress_pct: 100,
        max_errors: opts.max_errors,
        io_timeout: opts.io_timeout,
        // What may stop a run early: its reads, all an index log's
        // verdict judges.
        judged: vec![0],
        stop_when_decided: !opts.run_to_end,
        // Only a search's trials are decided by statistics.
        statistical: None,
    }
}

impl Workload for IndexConfig {
    fn device_names(&self) -> &[String] {
        &self.device_names
    }
    fn duration_secs(&self) -> u64 {
        self.test_duration_sec
    }

    fn dsync(&self) -> bool {
        !self.disable_odsync
    }

    fn file_size(&self) -> u64 {
        self.file_size_bytes
    }

    fn run_spec(&self, opts: &RunOptions) -> RunSpec {
        run_spec(self, opts)
    }

    fn title(&self) -> &'static str {
        "Index device IO test"
    }

    fn echo(&self) -> String {
        IndexConfig::echo(self)
    }

    fn device_line(&self, d: &Device) -> String {
        format!("{} size = {} bytes", d.name, d.size_bytes)
    }
}
