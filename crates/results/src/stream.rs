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
    /// The machine's memory when the pass ran: a file smaller than twice
    /// it may be read back from the page cache, not the drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_bytes: Option<u64>,
    /// The machine's name, bonnie++'s `name` column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The filesystem pass's file tests, in bonnie++'s order.
pub const FS_FILE_TESTS: [&str; 6] = [
    "sequential create",
    "sequential stat",
    "sequential delete",
    "random create",
    "random stat",
    "random delete",
];

impl Measure {
    /// The rate as people read it: "1.4 GB/s" for data, "9646 ops/s".
    pub fn rate_text(&self) -> String {
        if self.unit == "B" {
            format!(
                "{}/s",
                storcert_util::units::decimal_bytes(self.per_sec as u64)
            )
        } else {
            format!("{:.0} {}/s", self.per_sec, self.unit)
        }
    }
}

/// Why a filesystem pass on a file of `file_size` may measure the page
/// cache: bonnie++ asks for a file of at least twice the memory.
pub fn page_cache_warning(file_size: u64, ram_bytes: Option<u64>) -> Option<String> {
    let ram = ram_bytes?;
    (file_size < ram.saturating_mul(2)).then(|| {
        format!(
            "the file ({} MiB) is smaller than twice this machine's memory ({} MiB): \
             its reads may come from the page cache, not the drive (bonnie++ asks for twice the memory)",
            file_size >> 20,
            ram >> 20
        )
    })
}

/// bonnie++'s latency cell: "95us", "12ms", "3s".
fn bonnie_latency(us: u64) -> String {
    match us {
        0 => String::new(),
        us if us >= 100_000_000 => format!("{}s", us / 1_000_000),
        us if us >= 100_000 => format!("{}ms", us / 1000),
        us => format!("{us}us"),
    }
}

/// bonnie++'s size cell: 1024 divided out while it divides ("1G", "512M";
/// "1m" for a chunk of 1 MiB).
fn bonnie_size(mut n: u64, units: &[char]) -> String {
    let mut i = 0;
    while n != 0 && n % 1024 == 0 && i + 1 < units.len() {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units[i]).trim_end().to_string()
}

impl FsResult {
    pub fn page_cache_warning(&self) -> Option<String> {
        page_cache_warning(self.file_size, self.ram_bytes)
    }

    /// The pass as bonnie++ 1.98's CSV line (what bon_csv2html reads):
    /// the per-character tests and the CPU columns bonnie++ measures and
    /// storcert does not are empty; `num_files` is in bonnie++'s units of
    /// 1024 files where the count divides, else the count itself.
    pub fn bonnie_csv(&self) -> String {
        fn by<'a>(list: &'a [Measure], test: &str) -> Option<&'a Measure> {
            list.iter().find(|m| m.test == test)
        }
        let kib = |test: &str| {
            by(&self.data, test).map_or(String::new(), |m| {
                format!("{}", (m.per_sec / 1024.0) as u64)
            })
        };
        let seeks = by(&self.data, "random seeks").map_or(String::new(), |m| {
            if m.per_sec >= 1000.0 {
                format!("{:.0}", m.per_sec)
            } else {
                format!("{:.1}", m.per_sec)
            }
        });
        let ops = |test: &str| {
            by(&self.metadata, test).map_or(String::new(), |m| format!("{}", m.per_sec as u64))
        };
        let latency = |list: &[Measure], test: &str| {
            by(list, test).map_or(String::new(), |m| bonnie_latency(m.max_latency_us))
        };
        let chunk = bonnie_size(self.chunk as u64, &[' ', 'k', 'm']);
        let files = if self.files % 1024 == 0 {
            (self.files / 1024).to_string()
        } else {
            self.files.to_string()
        };
        let mut cells: Vec<String> = vec![
            "1.98".into(),
            "1.98".into(),
            self.host.clone().unwrap_or_default().replace(',', " "),
            "1".into(),
            String::new(),
            bonnie_size(self.file_size >> 20, &['M', 'G']),
            chunk,
            String::new(),
            String::new(),
            kib("block write"),
            String::new(),
            kib("rewrite"),
            String::new(),
            String::new(),
            String::new(),
            kib("block read"),
            String::new(),
            seeks,
            String::new(),
            files,
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
        for t in FS_FILE_TESTS {
            cells.push(ops(t));
            cells.push(String::new());
        }
        cells.push(String::new());
        for t in ["block write", "rewrite"] {
            cells.push(latency(&self.data, t));
        }
        cells.push(String::new());
        for t in ["block read", "random seeks"] {
            cells.push(latency(&self.data, t));
        }
        for t in FS_FILE_TESTS {
            cells.push(latency(&self.metadata, t));
        }
        cells.join(",")
    }

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

    fn measure(test: &str, per_sec: f64, unit: &str, max_latency_us: u64) -> Measure {
        Measure {
            test: test.into(),
            per_sec,
            unit: unit.into(),
            max_latency_us,
            seconds: 1.0,
        }
    }

    /// bonnie++ 1.98's 48 columns, each figure where bon_csv2html looks.
    #[test]
    fn a_filesystem_pass_is_bonnie_csv_column_for_column() {
        let r = FsResult {
            schema_version: FS_SCHEMA,
            dir: "/mnt/v".into(),
            file_size: 8 << 30,
            chunk: 1 << 20,
            files: 1024,
            data: vec![
                measure("block write", 1024.0 * 500_000.0, "B", 15_838),
                measure("rewrite", 1024.0 * 300_000.0, "B", 250_000),
                measure("block read", 1024.0 * 900_000.0, "B", 6_892),
                measure("random seeks", 812.46, "ops", 3_411),
            ],
            metadata: FS_FILE_TESTS
                .iter()
                .enumerate()
                .map(|(i, t)| measure(t, 1000.0 * (i + 1) as f64, "ops", 95))
                .collect(),
            interrupted: false,
            ram_bytes: Some(2 << 30),
            host: Some("rack1,u12".into()),
        };
        let csv = r.bonnie_csv();
        let c: Vec<&str> = csv.split(',').collect();
        assert_eq!(c.len(), 48, "{csv}");
        assert_eq!(&c[..7], ["1.98", "1.98", "rack1 u12", "1", "", "8G", "1m"]);
        // put_block, rewrite, get_block in KiB/s; seeks under 1000 with a decimal.
        assert_eq!(
            (c[9], c[11], c[15], c[17]),
            ("500000", "300000", "900000", "812.5")
        );
        assert_eq!((c[7], c[8], c[10], c[13]), ("", "", "", ""));
        assert_eq!(c[19], "1");
        assert_eq!((c[24], c[26], c[34]), ("1000", "2000", "6000"));
        assert_eq!(&c[36..42], ["", "15838us", "250ms", "", "6892us", "3411us"]);
        assert_eq!(c[47], "95us");
        // 8 GiB against 2 GiB of memory: large enough.
        assert_eq!(r.page_cache_warning(), None);
        let small = FsResult {
            file_size: 1 << 30,
            ..r
        };
        assert!(small.page_cache_warning().unwrap().starts_with(
            "the file (1024 MiB) is smaller than twice this machine's memory (2048 MiB)"
        ));
    }
}
