//! The streaming suite's result (docs/stream-schema.md).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    Write,
    Read,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub device: Option<String>,
    pub size_bytes: u64,
    pub tested_bytes: u64,
    pub logical_sector_size: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Latency {
    pub n: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    /// (percentile, nanoseconds), fio's default list.
    pub percentiles: Vec<(f64, u64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    pub name: String,
    pub target: usize,
    pub offset: u64,
    pub length: u64,
    pub bytes: u64,
    pub ios: u64,
    pub runtime_ms: u64,
    pub runtime_ns: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub clat: Latency,
    /// Bytes completed in each second of the pass.
    pub bw_per_sec: Vec<u64>,
    /// fio's bandwidth samples, KiB/s: one per whole `BW_AVG_MS` window from
    /// the job's first I/O that completed any bytes (a last, partial window
    /// is not sampled, as in fio), so none counts a fraction of a window as
    /// a whole one.
    #[serde(default)]
    pub bw_samples: Vec<f64>,
    /// fio's latency bins and distributions (absent before storcert 0.2).
    #[serde(default)]
    pub fio: FioCounts,
    pub error: Option<String>,
}

/// What fio counts of a job besides bandwidth (`stream::fio_stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioCounts {
    /// Completion latency bins that are not empty: (fio bin index, count).
    pub clat_bins: Vec<(u32, u64)>,
    /// I/Os per latency bucket: ns (10), us (10), ms (12).
    pub lat_ns: Vec<u64>,
    pub lat_us: Vec<u64>,
    pub lat_ms: Vec<u64>,
    /// I/Os submitted at each depth bucket.
    pub depth: Vec<u64>,
    /// Submit calls and reap calls by how many I/Os they moved.
    pub submit: Vec<u64>,
    pub complete: Vec<u64>,
}

/// fio's `bw_avg_time` default: the window of one bandwidth sample.
pub const BW_AVG_MS: u64 = 500;

/// Minimum, maximum, mean and standard deviation of samples as fio's
/// `calc_lat` gives them (sample deviation, n - 1); all zero without one.
pub fn fio_stats(samples: &[f64]) -> (f64, f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let dev = if samples.len() > 1 {
        (samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // + 0.0 turns a -0.0 into 0.0.
    (min + 0.0, max + 0.0, mean + 0.0, dev + 0.0)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupResult {
    pub bytes: u64,
    /// Aggregate bandwidth: all bytes over the longest job's runtime.
    pub aggr_bw_bytes: f64,
    pub min_bw_bytes: f64,
    pub max_bw_bytes: f64,
    pub min_runtime_ms: u64,
    pub max_runtime_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyResult {
    pub blocks_checked: u64,
    pub bad_blocks: u64,
    /// The first bad blocks: "target offset: problem".
    pub first_bad: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PassResult {
    pub pass: Pass,
    pub jobs: Vec<JobResult>,
    pub group: GroupResult,
    pub disks: Vec<DiskUtil>,
    pub verify: Option<VerifyResult>,
    /// Bytes completed in each second of the pass, from its start.
    pub bw_timeline: Vec<u64>,
    /// From the pass's start to its last completion: the last second of
    /// `bw_timeline` covers only what of it is past the whole seconds.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// CPU the pass's thread used (its jobs share it), as fio reports it.
    #[serde(default)]
    pub cpu: Option<CpuUsage>,
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamResult {
    pub schema_version: u32,
    /// The seed of the verify headers (give it to --seed to verify later).
    pub seed: u64,
    pub storcert_version: String,
    pub engine: String,
    pub bs: u32,
    pub qd: u32,
    pub jobs_per_target: u32,
    pub direct: bool,
    pub targets: Vec<TargetInfo>,
    pub passes: Vec<PassResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    pub util: f64,
}

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    pub usr_ms: u64,
    pub sys_ms: u64,
    /// Voluntary and involuntary context switches.
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
}

impl PassResult {
    /// Bandwidth in each second, bytes/s: the last, partial second by the
    /// time it covers (not as a whole second).
    pub fn bw_per_second(&self) -> Vec<(f64, f64)> {
        let n = self.bw_timeline.len();
        self.bw_timeline
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let covered = if i + 1 == n && self.elapsed_ms > 0 {
                    (self.elapsed_ms as f64 / 1000.0 - i as f64).clamp(1e-3, 1.0)
                } else {
                    1.0
                };
                (i as f64 + covered, b as f64 / covered)
            })
            .collect()
    }
}

impl StreamResult {
    /// Each device's counters over the whole run, once per device (fio
    /// prints one line a disk): the passes' counts summed, utilisation
    /// weighted by each pass's length.
    pub fn disks(&self) -> Vec<DiskUtil> {
        let mut out: Vec<(DiskUtil, f64)> = Vec::new();
        for p in &self.passes {
            let ms = p.group.max_runtime_ms as f64;
            for d in &p.disks {
                match out.iter_mut().find(|(o, _)| o.name == d.name) {
                    Some((o, weight)) => {
                        o.read_ios += d.read_ios;
                        o.write_ios += d.write_ios;
                        o.read_merges += d.read_merges;
                        o.write_merges += d.write_merges;
                        o.read_ticks += d.read_ticks;
                        o.write_ticks += d.write_ticks;
                        o.in_queue += d.in_queue;
                        let total = *weight + ms;
                        if total > 0.0 {
                            o.util = (o.util * *weight + d.util * ms) / total;
                        }
                        *weight = total;
                    }
                    None => out.push((d.clone(), ms)),
                }
            }
        }
        out.into_iter().map(|(d, _)| d).collect()
    }

    /// Failed on a job's error, bad blocks on verify, or an interrupted pass.
    pub fn judgement(&self) -> super::verdict::Judgement {
        if self.engine == super::act::NULL_ENGINE {
            return super::act::null_engine_judgement(
                self.targets.iter().map(|t| t.path.clone()).collect(),
            );
        }
        let mut bad = Vec::new();
        if self.passes.is_empty() {
            bad.push("no pass ran".to_string());
        }
        for p in &self.passes {
            bad.extend(p.jobs.iter().filter_map(|j| j.error.clone()));
            if let Some(v) = p.verify.as_ref().filter(|v| v.bad_blocks > 0) {
                bad.push(format!("{} bad blocks on verify", v.bad_blocks));
            }
            if p.interrupted {
                bad.push("interrupted".into());
            }
        }
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(bad.is_empty()),
            detail: if bad.is_empty() {
                "all passes completed".into()
            } else {
                bad.join("; ")
            },
            devices: self.targets.iter().map(|t| t.path.clone()).collect(),
        }
    }
}

impl Pass {
    pub fn as_str(self) -> &'static str {
        match self {
            Pass::Write => "write",
            Pass::Read => "read",
        }
    }
}

pub const FS_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measure {
    pub test: String,
    /// Bytes per second for the data tests, operations per second for the
    /// others.
    pub per_sec: f64,
    pub unit: String,
    pub max_latency_us: u64,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
/// The filesystem pass (`stream --fs`), bonnie++'s two tables.
pub struct FsResult {
    pub schema_version: u32,
    pub dir: String,
    pub file_size: u64,
    pub chunk: usize,
    pub files: u32,
    pub data: Vec<Measure>,
    pub metadata: Vec<Measure>,
    pub interrupted: bool,
}

impl FsResult {
    /// An interrupted pass fails: its figures cover part of the work.
    pub fn judgement(&self) -> super::verdict::Judgement {
        super::verdict::Judgement {
            per_device: Vec::new(),
            verdict: super::Verdict::of(!self.interrupted),
            detail: if self.interrupted {
                "interrupted".into()
            } else {
                format!(
                    "{} data and {} file tests",
                    self.data.len(),
                    self.metadata.len()
                )
            },
            devices: vec![self.dir.clone()],
        }
    }
}

impl StreamResult {
    /// A job failed or verification found bad blocks.
    pub fn failed(&self) -> bool {
        self.passes.iter().any(|p| {
            p.jobs.iter().any(|j| j.error.is_some())
                || p.verify.as_ref().is_some_and(|v| v.bad_blocks > 0)
        })
    }

    /// A pass was stopped before its end.
    pub fn interrupted(&self) -> bool {
        self.passes.iter().any(|p| p.interrupted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_disk_once_over_the_passes() {
        let disk = |name: &str, ios: u64, util: f64| {
            serde_json::json!({"name": name, "read_ios": ios, "write_ios": ios, "read_merges": 0,
                "write_merges": 0, "read_ticks": 1, "write_ticks": 1, "in_queue": 2, "util": util})
        };
        let pass = |p: &str, ms: u64, disks: Vec<serde_json::Value>| {
            serde_json::json!({"pass": p, "jobs": [], "disks": disks, "verify": null,
                "bw_timeline": [], "interrupted": false,
                "group": {"bytes": 0, "aggr_bw_bytes": 0.0, "min_bw_bytes": 0.0,
                    "max_bw_bytes": 0.0, "min_runtime_ms": ms, "max_runtime_ms": ms}})
        };
        let r: StreamResult = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "seed": 1, "storcert_version": "0", "engine": "io_uring",
            "bs": 4096, "qd": 1, "jobs_per_target": 1, "direct": true, "targets": [],
            "passes": [
                pass("write", 3000, vec![disk("sda", 10, 90.0), disk("sdb", 20, 80.0)]),
                pass("read", 1000, vec![disk("sda", 1, 50.0), disk("sdb", 2, 40.0)]),
            ]
        }))
        .unwrap();
        let d = r.disks();
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["sda", "sdb"]);
        assert_eq!((d[0].read_ios, d[0].in_queue), (11, 4));
        // Three seconds at 90% and one at 50%: 80%.
        assert!((d[0].util - 80.0).abs() < 1e-9, "{}", d[0].util);
        assert!((d[1].util - 70.0).abs() < 1e-9, "{}", d[1].util);
    }
}
