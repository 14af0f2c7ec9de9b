//! ACT's storage workload (act_storage): transaction reads of records at
//! random offsets, per-device large-block reads and writes at the defrag
//! rates, commit-to-device writes, and the tomb raider.

use std::time::Duration;

use super::config::StorageConfig;
use super::device::Device;
use super::runner::{Burst, RunSpec, Shape, StreamSpec};
use super::timeline::Kind;
use super::{RunOptions, Workload};

/// Histogram names: ACT's, then storcert's transaction latencies, named so
/// that no name starts with another histogram's name (act_latency.py
/// matches by prefix).
pub struct Layout {
    pub names: Vec<String>,
    pub streams: Vec<StreamSpec>,
    /// The histograms the verdict judges (`RunSpec::judged`).
    pub judged: Vec<usize>,
}

pub fn layout(cfg: &StorageConfig) -> Layout {
    let d = &cfg.derived;
    let n = cfg.device_names.len();
    let mut names: Vec<String> = Vec::new();
    let add = |names: &mut Vec<String>, name: String| {
        names.push(name);
        names.len() - 1
    };
    let do_reads = cfg.read_reqs_per_sec != 0;
    let do_large = cfg.write_reqs_per_sec != 0;
    let do_commits = cfg.commit_to_device && cfg.write_reqs_per_sec != 0;
    let mut streams = Vec::new();

    let mut read_hists = None;
    if do_reads {
        let agg = add(&mut names, "reads".into());
        let per: Vec<usize> = cfg
            .device_names
            .iter()
            .map(|dev| add(&mut names, format!("{dev}-reads")))
            .collect();
        read_hists = Some((agg, per));
    }
    let mut lb_hists = None;
    if do_large {
        let r = add(&mut names, "large-block-reads".into());
        let w = add(&mut names, "large-block-writes".into());
        lb_hists = Some((r, w));
    }
    let mut write_hists = None;
    if do_commits {
        let agg = add(&mut names, "writes".into());
        let per: Vec<usize> = cfg
            .device_names
            .iter()
            .map(|dev| add(&mut names, format!("{dev}-writes")))
            .collect();
        write_hists = Some((agg, per));
    }
    // storcert's additions: transaction latency (due time to completion).
    let txn_reads = do_reads.then(|| add(&mut names, "txn-reads".into()));
    let txn_lb = do_large.then(|| {
        (
            add(&mut names, "txn-large-block-reads".into()),
            add(&mut names, "txn-large-block-writes".into()),
        )
    });
    let txn_writes = do_commits.then(|| add(&mut names, "txn-writes".into()));
    // storcert's addition in a run over several drives: each drive's own
    // large-block latencies (ACT keeps their totals only).
    let lb_per = (do_large && n > 1).then(|| {
        let per = |names: &mut Vec<String>, what: &str| -> Vec<usize> {
            cfg.device_names
                .iter()
                .map(|dev| add(names, format!("{dev}-{what}")))
                .collect()
        };
        let r = per(&mut names, "large-block-reads");
        let w = per(&mut names, "large-block-writes");
        (r, w)
    });

    // What may stop a run early: the run's reads, whose failure fails
    // every drive of it. A drive's own share fails that drive alone, so
    // it is judged at the end and never stops the others.
    let judged = read_hists.iter().map(|(agg, _)| *agg).collect();
    let (read_burst, write_burst) = service_bursts(cfg);
    if let Some((agg, per)) = read_hists {
        streams.push(StreamSpec {
            label: "reads".into(),
            rate: d.internal_read_reqs_per_sec as f64,
            one_in_flight: false,
            device: None,
            shape: Shape::Record { write: false },
            hist: Some(agg),
            device_hists: Some(per),
            txn_hist: txn_reads,
            pause: Duration::ZERO,
            kind: Kind::Read,
            burst: read_burst,
        });
    }
    if let Some((agg, per)) = write_hists {
        streams.push(StreamSpec {
            label: "writes".into(),
            rate: d.internal_write_reqs_per_sec as f64,
            one_in_flight: false,
            device: None,
            shape: Shape::Record { write: true },
            hist: Some(agg),
            device_hists: Some(per),
            txn_hist: txn_writes,
            pause: Duration::ZERO,
            kind: Kind::Write,
            burst: write_burst,
        });
    }
    if let Some((r, w)) = lb_hists {
        let (tr, tw) = txn_lb.expect("set with lb_hists");
        // ACT runs one reader and one writer thread per device, each at the
        // total rate divided by the device count.
        for dev in 0..n {
            if !cfg.no_defrag_reads {
                streams.push(StreamSpec {
                    label: "large-block-reads".into(),
                    rate: d.large_block_reads_per_sec / n as f64,
                    one_in_flight: true,
                    device: Some(dev),
                    shape: Shape::LargeBlock { write: false },
                    hist: Some(r),
                    device_hists: lb_per.as_ref().map(|(r, _)| r.clone()),
                    txn_hist: Some(tr),
                    pause: Duration::ZERO,
                    kind: Kind::LargeBlockRead,
                    burst: Burst::EVEN,
                });
            }
            streams.push(StreamSpec {
                label: "large-block-writes".into(),
                rate: d.large_block_writes_per_sec / n as f64,
                one_in_flight: true,
                device: Some(dev),
                shape: Shape::LargeBlock { write: true },
                hist: Some(w),
                device_hists: lb_per.as_ref().map(|(_, w)| w.clone()),
                txn_hist: Some(tw),
                pause: Duration::ZERO,
                kind: Kind::LargeBlockWrite,
                burst: Burst::EVEN,
            });
        }
    }
    if cfg.tomb_raider {
        for dev in 0..n {
            streams.push(StreamSpec {
                label: "tomb-raider".into(),
                rate: 0.0,
                one_in_flight: true,
                device: Some(dev),
                shape: Shape::LargeBlockSequential,
                hist: None,
                device_hists: None,
                txn_hist: None,
                pause: Duration::from_micros(cfg.tomb_raider_sleep_usec as u64),
                kind: Kind::Other,
                burst: Burst::EVEN,
            });
        }
    }
    Layout {
        names,
        streams,
        judged,
    }
}

/// How many reads, and commit writes, fall due together: one each where
/// the config leaves `service-threads` to its default. Given, ACT's
/// service threads each issue their k-th request at the same instant, one
/// request a thread: `service-threads` requests at a time, shared between
/// reads and commit writes in proportion to their rates (each thread
/// draws which per request), so both streams' bursts come
/// `service-threads / (reads + writes a second)` apart.
fn service_bursts(cfg: &StorageConfig) -> (Burst, Burst) {
    if !cfg.service_threads_given {
        return (Burst::EVEN, Burst::EVEN);
    }
    let d = &cfg.derived;
    let (reads, writes) = (
        u64::from(d.internal_read_reqs_per_sec),
        u64::from(d.internal_write_reqs_per_sec),
    );
    let share = |rate: u64| {
        Burst::new(u64::from(cfg.service_threads) * rate, reads + writes).unwrap_or(Burst::EVEN)
    };
    (share(reads), share(writes))
}

impl Workload for StorageConfig {
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
        let Layout {
            names,
            streams,
            judged,
        } = layout(self);
        RunSpec {
            streams,
            hist_names: names,
            microsecond: self.microsecond_histograms,
            duration: Duration::from_secs(self.test_duration_sec),
            report_interval: Duration::from_secs(self.report_interval_sec),
            max_lag: Duration::from_secs(self.max_lag_sec),
            large_block_bytes: self.large_block_op_bytes,
            record: (
                self.derived.record_stored_bytes,
                self.derived.record_stored_bytes_rmx,
            ),
            compress_pct: self.compress_pct,
            max_errors: opts.max_errors,
            io_timeout: opts.io_timeout,
            judged,
            stop_when_decided: !opts.run_to_end,
            statistical: opts.statistical.filter(|_| !opts.run_to_end),
        }
    }

    fn title(&self) -> &'static str {
        "Storage device IO test"
    }

    fn pacing(&self) -> String {
        match self.service_threads_given {
            true => format!(
                "requests due {0} at a time, as ACT's {0} service threads issue them",
                self.service_threads
            ),
            false => "requests due evenly; ACT's thread counts unused".into(),
        }
    }

    fn echo(&self) -> String {
        StorageConfig::echo(self)
    }

    fn device_line(&self, d: &Device) -> String {
        format!(
            "{} size = {} bytes, {} large blocks, minimum IO size = {} bytes",
            d.name,
            d.size_bytes,
            d.size_bytes / self.large_block_op_bytes as u64,
            d.min_op_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bursts(conf: &str) -> Vec<(String, Burst)> {
        let text = format!("device-names: /d0\ntest-duration-sec: 10\n{conf}");
        let cfg = StorageConfig::parse(&text, "t.conf").unwrap();
        layout(&cfg)
            .streams
            .iter()
            .map(|s| (s.label.clone(), s.burst))
            .collect()
    }

    #[test]
    fn acts_service_threads_share_each_burst_between_reads_and_commit_writes() {
        let load = "read-reqs-per-sec: 2000\nwrite-reqs-per-sec: 1000\n";
        let one = |label: &str| (label.to_string(), Burst::EVEN);
        let burst = |label: &str, n| (label.to_string(), Burst::new(n, 1).unwrap());
        let large = [one("large-block-reads"), one("large-block-writes")];
        // Left to ACT's default (0 is the default too): even pacing.
        for threads in ["", "service-threads: 0\n"] {
            let even = bursts(&format!("{load}{threads}"));
            assert_eq!(even, [vec![one("reads")], large.to_vec()].concat());
        }
        // Given: the reads come 12 at a time; the large blocks, one
        // thread each in ACT, stay even.
        let given = bursts(&format!("{load}service-threads: 12\n"));
        assert_eq!(given, [vec![burst("reads", 12)], large.to_vec()].concat());
        // Commit writes draw from the same threads: 12 shared 2:1.
        let commits = bursts(&format!(
            "{load}service-threads: 12\ncommit-to-device: yes\n"
        ));
        assert_eq!(commits[..2], [burst("reads", 8), burst("writes", 4)]);
        // 10 shared 2:1 is 20/3 and 10/3 a burst: together, 10 at each
        // of the same instants.
        let commits = bursts(&format!(
            "{load}service-threads: 10\ncommit-to-device: yes\n"
        ));
        let part = |n| Burst::new(n, 3).unwrap();
        assert_eq!(
            commits[..2],
            [("reads".into(), part(20)), ("writes".into(), part(10))]
        );
    }
}
