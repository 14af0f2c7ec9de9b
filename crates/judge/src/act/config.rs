//! ACT 6.x configuration files, read as upstream ACT reads them (same keys,
//! defaults, validation and derived values), with stricter errors: a bad
//! value is an error naming file, line and key, where ACT's strtoul would
//! silently read 0.

use std::fmt::Write as _;
use std::path::Path;

/// As in Aerospike server: the write block and record block sizes.
const WBLOCK_SIZE: u32 = 8 * 1024 * 1024;
const RBLOCK_SIZE: u32 = 16;
pub const MAX_STORAGE_DEVICES: usize = 128;
pub const MAX_INDEX_DEVICES: usize = 32;
const MAX_DEVICE_NAME_SIZE: usize = 64;

/// A config error, one line: "act.conf:12: record-bytes: must be 1 to
/// 8388608" for a line, "act.conf: device-names: no devices named" for
/// the config as a whole, "act.conf: No such file" for the file itself.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", self.as_line())]
pub struct ConfigError {
    pub origin: String,
    /// 0: the config as a whole, or the file (`key` "(file)").
    pub line: usize,
    pub key: String,
    pub reason: String,
}

impl ConfigError {
    fn as_line(&self) -> String {
        let (origin, key, reason) = (&self.origin, &self.key, &self.reason);
        match self.line {
            0 if key == FILE => format!("{origin}: {reason}"),
            0 => format!("{origin}: {key}: {reason}"),
            line => format!("{origin}:{line}: {key}: {reason}"),
        }
    }
}

/// The key of an error about the file itself.
const FILE: &str = "(file)";

/// act_storage's configuration (cfg_storage.h), literal and derived.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StorageConfig {
    pub device_names: Vec<String>,
    pub file_size_bytes: u64,
    /// ACT's service threads: storcert's open-loop scheduler has none,
    /// and echoes the count as ACT would default it. Given in the config,
    /// it shapes the load as ACT's threads do: the reads (and commit
    /// writes) fall due in bursts of this many (`service_threads_given`).
    pub service_threads: u32,
    /// Whether the config named `service-threads` (not ACT's default).
    #[serde(default)]
    pub service_threads_given: bool,
    pub test_duration_sec: u64,
    pub report_interval_sec: u64,
    pub microsecond_histograms: bool,
    pub read_reqs_per_sec: u32,
    pub write_reqs_per_sec: u32,
    pub record_bytes: u32,
    pub record_bytes_range_max: u32,
    pub large_block_op_bytes: u32,
    pub replication_factor: u32,
    pub update_pct: u32,
    pub defrag_lwm_pct: u32,
    pub no_defrag_reads: bool,
    pub compress_pct: u32,
    pub disable_odsync: bool,
    pub commit_to_device: bool,
    pub tomb_raider: bool,
    pub tomb_raider_sleep_usec: u32,
    pub max_lag_sec: u64,
    pub derived: StorageDerived,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StorageDerived {
    pub record_stored_bytes: u32,
    pub record_stored_bytes_rmx: u32,
    pub internal_read_reqs_per_sec: u32,
    pub internal_write_reqs_per_sec: u32,
    pub large_block_reads_per_sec: f64,
    pub large_block_writes_per_sec: f64,
}

impl Default for StorageConfig {
    /// ACT's defaults (the non-zero ones of g_scfg).
    fn default() -> Self {
        StorageConfig {
            device_names: Vec::new(),
            file_size_bytes: 0,
            service_threads: 0,
            service_threads_given: false,
            test_duration_sec: 0,
            report_interval_sec: 1,
            microsecond_histograms: false,
            read_reqs_per_sec: 0,
            write_reqs_per_sec: 0,
            record_bytes: 1536,
            record_bytes_range_max: 0,
            large_block_op_bytes: 128 * 1024,
            replication_factor: 1,
            update_pct: 0,
            defrag_lwm_pct: 50,
            no_defrag_reads: false,
            compress_pct: 100,
            disable_odsync: false,
            commit_to_device: false,
            tomb_raider: false,
            tomb_raider_sleep_usec: 0,
            max_lag_sec: 10,
            derived: StorageDerived::default(),
        }
    }
}

/// act_index's configuration (cfg_index.h), literal and derived.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexConfig {
    pub device_names: Vec<String>,
    pub file_size_bytes: u64,
    pub service_threads: u32,
    pub cache_threads: u32,
    pub test_duration_sec: u64,
    pub report_interval_sec: u64,
    pub microsecond_histograms: bool,
    pub read_reqs_per_sec: u32,
    pub write_reqs_per_sec: u32,
    pub replication_factor: u32,
    pub defrag_lwm_pct: u32,
    pub disable_odsync: bool,
    pub max_lag_sec: u64,
    pub service_thread_reads_per_sec: u64,
    pub cache_thread_reads_and_writes_per_sec: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            device_names: Vec::new(),
            file_size_bytes: 0,
            service_threads: 0,
            cache_threads: 8,
            test_duration_sec: 0,
            report_interval_sec: 1,
            microsecond_histograms: false,
            read_reqs_per_sec: 0,
            write_reqs_per_sec: 0,
            replication_factor: 1,
            defrag_lwm_pct: 50,
            disable_odsync: false,
            max_lag_sec: 10,
            service_thread_reads_per_sec: 0,
            cache_thread_reads_and_writes_per_sec: 0,
        }
    }
}

/// Why a key is not ACT 6's, and for a key of an older ACT, what
/// replaced it (ACT's own message names only the key).
fn unknown_item(key: &str, value: &str) -> String {
    let since = match key {
        "num-queues" | "threads-per-queue" | "queue-per-device" => {
            "ACT 6 has no transaction queues: service-threads replaces them".to_string()
        }
        "max-reqs-queued" => "ACT 6 has no queues: max-lag-sec stops a run that falls behind".into(),
        "large-block-ops-per-sec" => "ACT 4 and later derive the large-block rates: give write-reqs-per-sec (1x: 1000 per drive) with record-bytes, large-block-op-kbytes and defrag-lwm-pct".into(),
        "read-req-num-512-blocks" => match value.trim().parse::<u32>() {
            Ok(n) if n > 0 && n <= 16384 => format!("record-bytes replaces it (record-bytes: {})", n * 512),
            _ => "record-bytes replaces it (512 bytes a block)".into(),
        },
        "use-valloc" => "ACT 4 and later allocate their own buffers: drop it".into(),
        "num-write-buffers" => "ACT 6 writes random data: compress-pct sets how compressible".into(),
        "commit-min-bytes" => "ACT 6.4 dropped it with Aerospike 7's commit-min-size: drop it".into(),
        "scheduler-mode" => "ACT 6.5 dropped it: set /sys/block/DEV/queue/scheduler before the run".into(),
        _ => return format!("unknown config item {key:?}"),
    };
    format!("{key:?} is an older ACT's config item; {since}")
}

fn read_config(path: &Path) -> Result<String, ConfigError> {
    let bytes = storcert_util::input::read_text(path)
        .map(String::into_bytes)
        .map_err(|e| ConfigError {
            origin: path.display().to_string(),
            line: 0,
            key: FILE.into(),
            reason: e.to_string(),
        })?;
    String::from_utf8(bytes).map_err(|e| ConfigError {
        origin: path.display().to_string(),
        line: 0,
        key: FILE.into(),
        reason: format!(
            "not text (invalid UTF-8 at byte {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// ACT's default service thread count: 5 × CPUs.
pub fn default_service_threads() -> u32 {
    5 * std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// One `key: value...` line of an ACT config, comments removed. ACT splits
/// the key at ':' or white space.
struct Line<'a> {
    number: usize,
    key: &'a str,
    values: Vec<&'a str>,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let body = raw.split('#').next().unwrap_or("");
        let mut parts = body
            .split(|c: char| c == ':' || c.is_whitespace())
            .filter(|s| !s.is_empty());
        let key = parts.next()?;
        // Values keep ACT's separators: white space, and for device names
        // also ',' and ';' (split later).
        let rest = body.split_once(key).map(|(_, r)| r).unwrap_or("");
        let rest = rest.trim_start().strip_prefix(':').unwrap_or(rest);
        Some(Line {
            number: i + 1,
            key,
            values: rest.split_whitespace().collect(),
        })
    })
}

struct Parser<'a> {
    origin: &'a str,
    line: usize,
    key: String,
}

impl Parser<'_> {
    fn err(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line: self.line,
            key: self.key.clone(),
            reason: reason.into(),
        }
    }

    fn uint32(&self, values: &[&str]) -> Result<u32, ConfigError> {
        let v = values
            .first()
            .ok_or_else(|| self.err("missing integer value"))?;
        let n: u64 = v
            .parse()
            .map_err(|_| self.err(format!("{v:?} is not an unsigned integer")))?;
        u32::try_from(n).map_err(|_| self.err(format!("{v} overflows unsigned int")))
    }

    /// ACT reads "yes" as anything starting with 'y'; storcert takes yes
    /// or no (and ACT's reading of other words would be a guess).
    fn yes_no(&self, values: &[&str]) -> Result<bool, ConfigError> {
        match values.first().copied() {
            Some(v) if v.starts_with('y') => Ok(true),
            Some(v) if v.starts_with('n') => Ok(false),
            Some(v) => Err(self.err(format!("{v:?} is neither yes nor no"))),
            None => Err(self.err("missing yes/no value")),
        }
    }

    fn device_names(&self, values: &[&str], max: usize) -> Result<Vec<String>, ConfigError> {
        let mut names = Vec::new();
        for v in values {
            for name in v.split([',', ';']).filter(|s| !s.is_empty()) {
                if name.len() >= MAX_DEVICE_NAME_SIZE {
                    return Err(self.err(format!("device name {name:?} is too long")));
                }
                names.push(name.to_string());
            }
        }
        if names.len() > max {
            return Err(self.err(format!("too many device names ({} > {max})", names.len())));
        }
        Ok(names)
    }
}

fn check(origin: &str, ok: bool, key: &str, reason: &str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            origin: origin.to_string(),
            line: 0,
            key: key.to_string(),
            reason: reason.to_string(),
        })
    }
}

impl StorageConfig {
    pub fn from_file(path: &Path) -> Result<StorageConfig, ConfigError> {
        let mut c = Self::from_file_unchecked(path)?;
        c.finish(&path.display().to_string())?;
        Ok(c)
    }

    pub fn from_file_unchecked(path: &Path) -> Result<StorageConfig, ConfigError> {
        let origin = path.display().to_string();
        Self::parse_unchecked(&read_config(path)?, &origin)
    }

    pub fn parse(text: &str, origin: &str) -> Result<StorageConfig, ConfigError> {
        let mut c = Self::parse_unchecked(text, origin)?;
        c.finish(origin)?;
        Ok(c)
    }

    /// The literal settings of a file, before validation and derivation
    /// (so that flags can still override them).
    pub fn parse_unchecked(text: &str, origin: &str) -> Result<StorageConfig, ConfigError> {
        let mut c = StorageConfig::default();
        for line in lines(text) {
            let p = Parser {
                origin,
                line: line.number,
                key: line.key.to_string(),
            };
            let v = &line.values;
            match line.key {
                "device-names" => c.device_names = p.device_names(v, MAX_STORAGE_DEVICES)?,
                "file-size-mbytes" => c.file_size_bytes = (p.uint32(v)? as u64) << 20,
                "service-threads" => {
                    c.service_threads = p.uint32(v)?;
                    c.service_threads_given = c.service_threads != 0;
                }
                "test-duration-sec" => c.test_duration_sec = p.uint32(v)? as u64,
                "report-interval-sec" => c.report_interval_sec = p.uint32(v)? as u64,
                "microsecond-histograms" => c.microsecond_histograms = p.yes_no(v)?,
                "read-reqs-per-sec" => c.read_reqs_per_sec = p.uint32(v)?,
                "write-reqs-per-sec" => c.write_reqs_per_sec = p.uint32(v)?,
                "record-bytes" => c.record_bytes = p.uint32(v)?,
                "record-bytes-range-max" => c.record_bytes_range_max = p.uint32(v)?,
                "large-block-op-kbytes" => {
                    c.large_block_op_bytes = p
                        .uint32(v)?
                        .checked_mul(1024)
                        .ok_or_else(|| p.err("too large"))?
                }
                "replication-factor" => c.replication_factor = p.uint32(v)?,
                "update-pct" => c.update_pct = p.uint32(v)?,
                "defrag-lwm-pct" => c.defrag_lwm_pct = p.uint32(v)?,
                "no-defrag-reads" => c.no_defrag_reads = p.yes_no(v)?,
                "compress-pct" => c.compress_pct = p.uint32(v)?,
                "disable-odsync" => c.disable_odsync = p.yes_no(v)?,
                "commit-to-device" => c.commit_to_device = p.yes_no(v)?,
                "tomb-raider" => c.tomb_raider = p.yes_no(v)?,
                "tomb-raider-sleep-usec" => c.tomb_raider_sleep_usec = p.uint32(v)?,
                "max-lag-sec" => c.max_lag_sec = p.uint32(v)? as u64,
                other => return Err(p.err(unknown_item(other, v.first().copied().unwrap_or("")))),
            }
        }
        Ok(c)
    }

    /// ACT's check_configuration() and derive_configuration().
    pub fn finish(&mut self, origin: &str) -> Result<(), ConfigError> {
        let o = origin;
        check(
            o,
            !self.device_names.is_empty(),
            "device-names",
            "no devices named",
        )?;
        if self.service_threads == 0 {
            self.service_threads = default_service_threads();
        }
        check(
            o,
            self.test_duration_sec != 0,
            "test-duration-sec",
            "must be non-zero",
        )?;
        check(
            o,
            self.report_interval_sec != 0,
            "report-interval-sec",
            "must be non-zero",
        )?;
        check(
            o,
            self.record_bytes != 0 && self.record_bytes <= WBLOCK_SIZE,
            "record-bytes",
            "must be 1 to 8388608",
        )?;
        check(
            o,
            self.record_bytes_range_max == 0
                || (self.record_bytes_range_max > self.record_bytes
                    && self.record_bytes_range_max <= WBLOCK_SIZE),
            "record-bytes-range-max",
            "must be 0, or more than record-bytes and at most 8388608",
        )?;
        check(
            o,
            self.large_block_op_bytes <= WBLOCK_SIZE && self.large_block_op_bytes.is_power_of_two(),
            "large-block-op-kbytes",
            "must be a power of 2, at most 8192",
        )?;
        check(
            o,
            self.replication_factor != 0,
            "replication-factor",
            "must be non-zero",
        )?;
        check(o, self.update_pct <= 100, "update-pct", "must be 0 to 100")?;
        check(
            o,
            self.defrag_lwm_pct < 100,
            "defrag-lwm-pct",
            "must be less than 100",
        )?;
        check(
            o,
            self.compress_pct <= 100,
            "compress-pct",
            "must be 0 to 100",
        )?;
        check(
            o,
            !(self.disable_odsync && self.commit_to_device),
            "disable-odsync",
            "can't be set together with commit-to-device",
        )?;
        check(
            o,
            self.read_reqs_per_sec as u64 + self.write_reqs_per_sec as u64 != 0,
            "read-reqs-per-sec",
            "read-reqs-per-sec and write-reqs-per-sec can't both be zero",
        )?;
        // ACT would divide by zero here and run at an infinite rate.
        let rmx = self.record_bytes_range_max.max(self.record_bytes);
        check(
            o,
            self.large_block_op_bytes >= (self.record_bytes + rmx) / 2,
            "large-block-op-kbytes",
            "a large block must hold at least one average record (record-bytes, record-bytes-range-max)",
        )?;
        self.derive();
        let d = &self.derived;
        let total = d.internal_read_reqs_per_sec as u64 + d.internal_write_reqs_per_sec as u64;
        check(
            o,
            total == 0 || total / self.service_threads as u64 != 0,
            "service-threads",
            "load config too small for the service threads (read-reqs-per-sec, write-reqs-per-sec)",
        )?;
        Ok(())
    }

    fn derive(&mut self) {
        let round_up = |size: u32| (size + (RBLOCK_SIZE - 1)) & !(RBLOCK_SIZE - 1);
        let d = &mut self.derived;
        d.internal_read_reqs_per_sec = self.read_reqs_per_sec
            + (self.write_reqs_per_sec as u64 * self.update_pct as u64 / 100) as u32;
        let internal_write_reqs = self
            .replication_factor
            .wrapping_mul(self.write_reqs_per_sec);
        d.record_stored_bytes = round_up(self.record_bytes);
        d.record_stored_bytes_rmx = if self.record_bytes_range_max == 0 {
            d.record_stored_bytes
        } else {
            round_up(self.record_bytes_range_max)
        };
        let avg_record_stored_bytes = (d.record_stored_bytes + d.record_stored_bytes_rmx) / 2;
        // ACT divides records per large block in integers: at 1x this gives
        // 23.53 large-block ops/s, not 22.95.
        let records_per_block = (self.large_block_op_bytes / avg_record_stored_bytes).max(1);
        let original_rate = internal_write_reqs as f64 / records_per_block as f64;
        let amplification = 100.0 / (100 - self.defrag_lwm_pct) as f64;
        d.large_block_reads_per_sec = original_rate * amplification;
        if self.commit_to_device {
            d.large_block_writes_per_sec = original_rate * (amplification - 1.0);
            d.internal_write_reqs_per_sec = internal_write_reqs;
        } else {
            d.large_block_writes_per_sec = d.large_block_reads_per_sec;
            d.internal_write_reqs_per_sec = 0;
        }
        if self.no_defrag_reads {
            d.large_block_reads_per_sec = 0.0;
        }
    }

    /// The configuration echo of act_storage's log, line for line.
    pub fn echo(&self) -> String {
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut s = String::new();
        let _ = writeln!(s, "ACT-STORAGE CONFIGURATION");
        let _ = writeln!(s, "device-names: {}", self.device_names.join(" "));
        let _ = writeln!(s, "num-devices: {}", self.device_names.len());
        if self.file_size_bytes != 0 {
            let _ = writeln!(s, "file-size-mbytes: {}", self.file_size_bytes >> 20);
        }
        let _ = writeln!(s, "service-threads: {}", self.service_threads);
        let _ = writeln!(s, "test-duration-sec: {}", self.test_duration_sec);
        let _ = writeln!(s, "report-interval-sec: {}", self.report_interval_sec);
        let _ = writeln!(
            s,
            "microsecond-histograms: {}",
            yn(self.microsecond_histograms)
        );
        let _ = writeln!(s, "read-reqs-per-sec: {}", self.read_reqs_per_sec);
        let _ = writeln!(s, "write-reqs-per-sec: {}", self.write_reqs_per_sec);
        let _ = writeln!(s, "record-bytes: {}", self.record_bytes);
        let _ = writeln!(s, "record-bytes-range-max: {}", self.record_bytes_range_max);
        let _ = writeln!(
            s,
            "large-block-op-kbytes: {}",
            self.large_block_op_bytes / 1024
        );
        let _ = writeln!(s, "replication-factor: {}", self.replication_factor);
        let _ = writeln!(s, "update-pct: {}", self.update_pct);
        let _ = writeln!(s, "defrag-lwm-pct: {}", self.defrag_lwm_pct);
        let _ = writeln!(s, "no-defrag-reads: {}", yn(self.no_defrag_reads));
        let _ = writeln!(s, "compress-pct: {}", self.compress_pct);
        let _ = writeln!(s, "disable-odsync: {}", yn(self.disable_odsync));
        let _ = writeln!(s, "commit-to-device: {}", yn(self.commit_to_device));
        let _ = writeln!(s, "tomb-raider: {}", yn(self.tomb_raider));
        let _ = writeln!(s, "tomb-raider-sleep-usec: {}", self.tomb_raider_sleep_usec);
        let _ = writeln!(s, "max-lag-sec: {}", self.max_lag_sec);
        let d = &self.derived;
        let _ = writeln!(s, "\nDERIVED CONFIGURATION");
        let _ = writeln!(
            s,
            "record-stored-bytes: {} ... {}",
            d.record_stored_bytes, d.record_stored_bytes_rmx
        );
        let _ = writeln!(
            s,
            "internal-read-reqs-per-sec: {}",
            d.internal_read_reqs_per_sec
        );
        let _ = writeln!(
            s,
            "internal-write-reqs-per-sec: {}",
            d.internal_write_reqs_per_sec
        );
        let _ = writeln!(
            s,
            "large-block-reads-per-sec: {:.2}",
            d.large_block_reads_per_sec
        );
        let _ = writeln!(
            s,
            "large-block-writes-per-sec: {:.2}",
            d.large_block_writes_per_sec
        );
        s
    }
}

impl IndexConfig {
    pub fn from_file(path: &Path) -> Result<IndexConfig, ConfigError> {
        Self::parse(&read_config(path)?, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<IndexConfig, ConfigError> {
        let mut c = Self::parse_unchecked(text, origin)?;
        c.finish(origin)?;
        Ok(c)
    }

    /// The literal settings of a file, before validation and derivation.
    pub fn parse_unchecked(text: &str, origin: &str) -> Result<IndexConfig, ConfigError> {
        let mut c = IndexConfig::default();
        for line in lines(text) {
            let p = Parser {
                origin,
                line: line.number,
                key: line.key.to_string(),
            };
            let v = &line.values;
            match line.key {
                "device-names" => c.device_names = p.device_names(v, MAX_INDEX_DEVICES)?,
                "file-size-mbytes" => c.file_size_bytes = (p.uint32(v)? as u64) << 20,
                "service-threads" => c.service_threads = p.uint32(v)?,
                "cache-threads" => c.cache_threads = p.uint32(v)?,
                "test-duration-sec" => c.test_duration_sec = p.uint32(v)? as u64,
                "report-interval-sec" => c.report_interval_sec = p.uint32(v)? as u64,
                "microsecond-histograms" => c.microsecond_histograms = p.yes_no(v)?,
                "read-reqs-per-sec" => c.read_reqs_per_sec = p.uint32(v)?,
                "write-reqs-per-sec" => c.write_reqs_per_sec = p.uint32(v)?,
                "replication-factor" => c.replication_factor = p.uint32(v)?,
                "defrag-lwm-pct" => c.defrag_lwm_pct = p.uint32(v)?,
                "disable-odsync" => c.disable_odsync = p.yes_no(v)?,
                "max-lag-sec" => c.max_lag_sec = p.uint32(v)? as u64,
                other => return Err(p.err(unknown_item(other, v.first().copied().unwrap_or("")))),
            }
        }
        Ok(c)
    }

    pub fn finish(&mut self, origin: &str) -> Result<(), ConfigError> {
        let o = origin;
        check(
            o,
            !self.device_names.is_empty(),
            "device-names",
            "no devices named",
        )?;
        if self.service_threads == 0 {
            self.service_threads = default_service_threads();
        }
        check(
            o,
            self.cache_threads != 0,
            "cache-threads",
            "must be non-zero",
        )?;
        check(
            o,
            self.test_duration_sec != 0,
            "test-duration-sec",
            "must be non-zero",
        )?;
        check(
            o,
            self.report_interval_sec != 0,
            "report-interval-sec",
            "must be non-zero",
        )?;
        check(
            o,
            self.replication_factor != 0,
            "replication-factor",
            "must be non-zero",
        )?;
        check(
            o,
            self.defrag_lwm_pct < 100,
            "defrag-lwm-pct",
            "must be less than 100",
        )?;
        check(
            o,
            self.read_reqs_per_sec as u64 + self.write_reqs_per_sec as u64 != 0,
            "read-reqs-per-sec",
            "read-reqs-per-sec and write-reqs-per-sec can't both be zero",
        )?;
        let effective_writes = self.replication_factor as u64 * self.write_reqs_per_sec as u64;
        self.service_thread_reads_per_sec = self.read_reqs_per_sec as u64 + effective_writes;
        check(
            o,
            self.service_thread_reads_per_sec / self.service_threads as u64 != 0,
            "service-threads",
            "load config too small for the service threads (read-reqs-per-sec, write-reqs-per-sec)",
        )?;
        let per_write = 100.0 / (100 - self.defrag_lwm_pct) as f64;
        // ACT stores this in an integer (truncating).
        self.cache_thread_reads_and_writes_per_sec = (effective_writes as f64 * per_write) as u64;
        Ok(())
    }

    pub fn echo(&self) -> String {
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut s = String::new();
        let _ = writeln!(s, "ACT-INDEX CONFIGURATION");
        let _ = writeln!(s, "device-names: {}", self.device_names.join(" "));
        let _ = writeln!(s, "num-devices: {}", self.device_names.len());
        if self.file_size_bytes != 0 {
            let _ = writeln!(s, "file-size-mbytes: {}", self.file_size_bytes >> 20);
        }
        let _ = writeln!(s, "service-threads: {}", self.service_threads);
        let _ = writeln!(s, "cache-threads: {}", self.cache_threads);
        let _ = writeln!(s, "test-duration-sec: {}", self.test_duration_sec);
        let _ = writeln!(s, "report-interval-sec: {}", self.report_interval_sec);
        let _ = writeln!(
            s,
            "microsecond-histograms: {}",
            yn(self.microsecond_histograms)
        );
        let _ = writeln!(s, "read-reqs-per-sec: {}", self.read_reqs_per_sec);
        let _ = writeln!(s, "write-reqs-per-sec: {}", self.write_reqs_per_sec);
        let _ = writeln!(s, "replication-factor: {}", self.replication_factor);
        let _ = writeln!(s, "defrag-lwm-pct: {}", self.defrag_lwm_pct);
        let _ = writeln!(s, "disable-odsync: {}", yn(self.disable_odsync));
        let _ = writeln!(s, "max-lag-sec: {}", self.max_lag_sec);
        let _ = writeln!(s, "\nDERIVED CONFIGURATION");
        let _ = writeln!(
            s,
            "service-thread-reads-per-sec: {}",
            self.service_thread_reads_per_sec
        );
        let _ = writeln!(
            s,
            "cache-thread-reads-and-writes-per-sec: {}",
            self.cache_thread_reads_and_writes_per_sec
        );
        s
    }
}

/// A load that `parse_load` does not take; `text` as given.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("load {text:?} is not a positive multiple like 10x")]
pub struct LoadError {
    pub text: String,
}

/// "10x" → 10.0; a bare number is taken as a multiple too.
pub fn parse_load(text: &str) -> Result<f64, LoadError> {
    let t = text.trim();
    let n = t.strip_suffix(['x', 'X']).unwrap_or(t);
    match n.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 10_000.0 => Ok(v),
        _ => Err(LoadError { text: text.into() }),
    }
}

/// Transaction rates of an "Nx" load on `devices` drives: N × 2000 reads
/// and N × 1000 writes per second per drive (ACT's rates are totals over
/// all devices).
/// What a run sets in an ACT config of either workload, on top of the
/// literal keys a profile entry gave: the drives, the rates its load
/// gives (unless the entry gave them), the duration and a scratch size.
pub trait RunConfig: Sized {
    /// The entry's literal keys, before validation and derivation.
    fn literal(text: &str, origin: &str) -> Result<Self, ConfigError>;
    fn set_run(
        &mut self,
        devices: Vec<String>,
        rates: (Option<u32>, Option<u32>),
        secs: u64,
        file_size: u64,
    );
    /// ACT's check_configuration() and derive_configuration().
    fn check(&mut self, origin: &str) -> Result<(), ConfigError>;
}

macro_rules! run_config {
    ($ty:ty) => {
        impl RunConfig for $ty {
            fn literal(text: &str, origin: &str) -> Result<Self, ConfigError> {
                Self::parse_unchecked(text, origin)
            }

            fn set_run(
                &mut self,
                devices: Vec<String>,
                (reads, writes): (Option<u32>, Option<u32>),
                secs: u64,
                file_size: u64,
            ) {
                self.device_names = devices;
                if let Some(r) = reads {
                    self.read_reqs_per_sec = r;
                }
                if let Some(w) = writes {
                    self.write_reqs_per_sec = w;
                }
                self.test_duration_sec = secs;
                self.file_size_bytes = file_size;
            }

            fn check(&mut self, origin: &str) -> Result<(), ConfigError> {
                self.finish(origin)
            }
        }
    };
}

run_config!(StorageConfig);
run_config!(IndexConfig);

pub fn rates_for_load(load: f64, devices: usize) -> (u32, u32) {
    let d = devices.max(1) as f64;
    (
        (2000.0 * load * d).round() as u32,
        (1000.0 * load * d).round() as u32,
    )
}

/// A duration that `parse_duration_secs` does not take; `text` as given.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    #[error("duration {text:?} is too long (at most 10 years)")]
    TooLong { text: String },
    #[error("duration {text:?} is not like 30s, 10m, 24h")]
    Malformed { text: String },
    #[error("duration {text:?} runs nothing: give at least 1s")]
    Zero { text: String },
}

/// The longest duration taken: ten years.
pub const MAX_DURATION_SECS: u64 = 10 * 366 * 86_400;

/// "24h", "10m", "30s", "90" (seconds) → seconds.
pub fn parse_duration_secs(text: &str) -> Result<u64, DurationError> {
    let t = text.trim();
    let (num, mult) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1),
        Some('m') => (&t[..t.len() - 1], 60),
        Some('h') => (&t[..t.len() - 1], 3600),
        Some('d') => (&t[..t.len() - 1], 86400),
        _ => (t, 1),
    };
    match num.parse::<u64>() {
        Ok(0) => Err(DurationError::Zero { text: text.into() }),
        // Bounded, so sums of a profile's stages cannot wrap and an end
        // time always fits the clock.
        Ok(n) => n
            .checked_mul(mult)
            .filter(|&secs| secs <= MAX_DURATION_SECS)
            .ok_or_else(|| DurationError::TooLong { text: text.into() }),
        Err(_) => Err(DurationError::Malformed { text: text.into() }),
    }
}
