//! The command line: one clap definition from which help, shell
//! completions and the man page are all generated.

use std::path::PathBuf;

/// An output option's path, refused at parse time where it is a device or
/// under /dev (`util::fs::output_problem`): one line naming the option.
pub fn output_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match storcert_util::fs::output_problem(&p) {
        Some(why) => Err(why),
        None => Ok(p),
    }
}

use clap::{Args, Parser, Subcommand};

/// The collector's flags: `storcert-collect`, and `storcert collect`.
#[cfg(feature = "collector")]
pub mod collect;
mod examples;

#[derive(Debug, Parser)]
#[command(
    name = "storcert",
    bin_name = "storcert",
    version,
    about = "Storage qualification: inventory, policy checks, ACT and streaming suites, signed results",
    long_about = "storcert qualifies a server's drives unattended: it enumerates disks and \
                  controllers, checks their settings against a policy, runs the Aerospike \
                  Certification Tool workload and a streaming suite, and writes a signed \
                  results bundle.\n\nExit status: 0 success/pass, 1 fail, 2 could not run, \
                  3 interrupted.",
    propagate_version = true,
    after_long_help = examples::STORCERT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process; boxing the larger variants buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List disks and storage controllers with identity, firmware, write cache and health
    #[command(after_long_help = examples::INVENTORY)]
    Inventory(InventoryArgs),
    /// Check drives, virtual drives and controllers against a policy
    #[command(after_long_help = examples::CHECK)]
    Check(CheckArgs),
    /// Health snapshots before and after a run, and what degraded in between
    Health(HealthArgs),
    /// Over-provision: discard the device, then a GPT partition leaving spare area
    Provision(ProvisionArgs),
    /// The Aerospike Certification Tool workload: prep, storage, index, analyze, search
    Act(ActArgs),
    /// Sequential write then read at full speed, fio-compatible results; or a filesystem pass
    #[command(after_long_help = examples::STREAM)]
    Stream(StreamArgs),
    /// Make an Ed25519 signing key pair in minisign's format
    Keygen(KeygenArgs),
    /// Create, sign and verify results bundles
    #[command(after_long_help = examples::BUNDLE)]
    Bundle(BundleArgs),
    /// Upload bundles (HTTP PUT) with retries, through a spool that keeps them until confirmed
    #[command(after_long_help = examples::UPLOAD)]
    Upload(UploadArgs),
    /// Run the collector: receives and verifies bundles, stores them, serves the fleet's results
    /// (on a build with the collector; storcert-collect is the same)
    #[cfg(feature = "collector")]
    Collect(collect::CollectArgs),
    /// Run a whole qualification from a profile, unattended and resumable
    #[command(after_long_help = examples::RUN)]
    Run(RunArgs),
    /// Render a bundle's report: self-contained HTML, Markdown or text
    #[command(after_long_help = examples::REPORT)]
    Report(ReportArgs),
    /// ACT runs side by side: a table across loads per drive, and with and without spare area
    #[command(after_long_help = examples::COMPARE)]
    Compare(CompareArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// The boot image's systemd generator: end action and shells from the kernel command line
    #[command(hide = true)]
    Generator(GeneratorArgs),
    /// Print the man page (roff), or write one page per command into a folder
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Print the inventory as JSON (schema in docs/inventory-schema.md)
    #[arg(long)]
    pub json: bool,
    /// Only this device (/dev/sda, a /dev/disk/by-id link, or a kernel name); repeatable
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Vec<String>,
    /// Also list loop, ram, zram, md and dm devices
    #[arg(long)]
    pub all: bool,
    /// Read sysfs and udev only; send no command to any device
    #[arg(long)]
    pub no_probe: bool,
    /// Also write everything the inventory read (files and device replies,
    /// serial numbers included) into FILE, to send in when hardware misreads
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub capture: Option<PathBuf>,
    /// Make the inventory from a capture instead of this machine
    #[arg(long, value_name = "FILE", conflicts_with_all = ["capture", "device", "all", "no_probe"])]
    pub replay: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write storcert.1 and one storcert-COMMAND.1 per subcommand here
    #[arg(long, value_name = "DIR", value_parser = output_path)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ActArgs {
    #[command(subcommand)]
    pub command: ActCommand,
}

#[derive(Debug, Subcommand)]
pub enum ActCommand {
    /// Zero then salt whole devices (ACT's act_prep), at full speed
    #[command(after_long_help = examples::ACT_PREP)]
    Prep(ActPrepArgs),
    /// Run ACT's storage workload from an ACT 6.x config file and/or flags
    #[command(after_long_help = examples::ACT_STORAGE)]
    Storage(ActStorageArgs),
    /// Run ACT's index workload from an ACT 6.x act_index config file
    Index(ActIndexArgs),
    /// Analyze an ACT log as act_latency.py does, with the verdict
    #[command(after_long_help = examples::ACT_ANALYZE)]
    Analyze(ActAnalyzeArgs),
    /// Find the highest load that passes: escalate, bisect, confirm
    #[command(after_long_help = examples::ACT_SEARCH)]
    Search(ActSearchArgs),
}

/// How a run is carried out and where its outputs go.
/// The I/O engine of a workload.
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// I/O engine
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: EngineChoice,
    /// The null engine's latency: BASE[,RATE/s=LATENCY...], e.g.
    /// "200us,5000/s=3ms" (3 ms once more than 5000 requests were issued in
    /// the last second)
    #[arg(long, value_name = "MODEL")]
    pub null_latency: Option<crate::engine::NullLatency>,
}

/// `--engine`'s values: the engine layer's kinds, named for the command
/// line here so that the engine knows nothing of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// io_uring, falling back to threads if the kernel refuses it
    Auto,
    /// io_uring only
    Uring,
    /// a thread pool doing pread/pwrite
    Sync,
    /// no I/O: each request completes after the latency of --null-latency
    /// (checks the scheduler and the verdicts against a drive you define)
    Null,
}

impl From<EngineChoice> for crate::engine::EngineKind {
    fn from(c: EngineChoice) -> Self {
        use crate::engine::EngineKind;
        match c {
            EngineChoice::Auto => EngineKind::Auto,
            EngineChoice::Uring => EngineKind::Uring,
            EngineChoice::Sync => EngineKind::Sync,
            EngineChoice::Null => EngineKind::Null,
        }
    }
}

impl EngineArgs {
    /// The engine chosen.
    pub fn kind(&self) -> crate::engine::EngineKind {
        self.engine.into()
    }

    /// The null engine's model; an error when one is given for a real engine
    /// (where it would silently do nothing).
    pub fn null_model(&self) -> Result<crate::engine::NullLatency, &'static str> {
        match (&self.null_latency, self.engine) {
            (Some(m), EngineChoice::Null) => Ok(m.clone()),
            (Some(_), _) => Err("--null-latency is for --engine null"),
            (None, _) => Ok(Default::default()),
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct ActRunArgs {
    /// Write the ACT log here instead of standard output
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub log: Option<PathBuf>,
    /// Write the run's results (rates, lag, percentiles, errors) as JSON here
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub json: Option<PathBuf>,
    /// Write per-second samples (JSON lines) here
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub timeline: Option<PathBuf>,
    /// Worker threads, each with its own io_uring and its share of the
    /// drives (default: enough for the asked rate, at most the cores; never
    /// more than drives: docs/act.md)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Device errors tolerated before the run stops
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_errors: u64,
    /// Seconds after which an outstanding I/O counts as stuck
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub io_timeout: u64,
    /// Run to the end even once a slice has failed whatever follows (by
    /// default the run stops there, failed, and says why)
    #[arg(long)]
    pub run_to_end: bool,
    #[command(flatten)]
    pub safety: SafetyArgs,
}

/// Every ACT storage setting as a flag; each overrides the config file.
#[derive(Debug, Args, Clone, Default)]
pub struct StorageSettings {
    /// Device or file to test (ACT device-names); repeatable
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Vec<String>,
    /// Load as a multiple of 1x = 2000 reads + 1000 writes per second per device
    #[arg(long, value_name = "Nx")]
    pub load: Option<String>,
    /// Reads per second over all devices, not per device (ACT's read-reqs-per-sec; Nx on D drives: N × D × 2000); overrides --load
    #[arg(long, value_name = "N")]
    pub read_reqs_per_sec: Option<u32>,
    /// Record writes per second over all devices (ACT's write-reqs-per-sec; Nx on D drives: N × D × 1000); with the record and large-block sizes it sets the large-block rates
    #[arg(long, value_name = "N")]
    pub write_reqs_per_sec: Option<u32>,
    /// Test duration (30s, 10m, 24h)
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Report interval (1s)
    #[arg(long, value_name = "TIME")]
    pub report_interval: Option<String>,
    /// Histogram buckets in microseconds instead of milliseconds (ACT's microsecond-histograms)
    #[arg(long)]
    pub microsecond_histograms: bool,
    /// Record size in bytes: the size of each read, rounded up to 512 (ACT's record-bytes; default 1536)
    #[arg(long, value_name = "BYTES")]
    pub record_bytes: Option<u32>,
    /// Draw record sizes evenly from record-bytes up to this (ACT's record-bytes-range-max; 0: every record is record-bytes)
    #[arg(long, value_name = "BYTES")]
    pub record_bytes_range_max: Option<u32>,
    /// Size of each large-block (defrag) read and write in KiB (ACT's large-block-op-kbytes; default 128)
    #[arg(long, value_name = "KB")]
    pub large_block_op_kbytes: Option<u32>,
    /// Model the write load of a node in a cluster with this replication factor: 2 doubles the large-block rates (ACT's replication-factor; default 1)
    #[arg(long, value_name = "N")]
    pub replication_factor: Option<u32>,
    /// Percent of writes that are updates, each reading the record first: raises the read rate by up to the write rate (ACT's update-pct; default 0)
    #[arg(long, value_name = "PCT")]
    pub update_pct: Option<u32>,
    /// Defrag threshold: blocks emptied to this percent are repacked; 50 doubles the large-block rates (ACT's defrag-lwm-pct; default 50)
    #[arg(long, value_name = "PCT")]
    pub defrag_lwm_pct: Option<u32>,
    /// Defrag without its large-block reads, as Aerospike 7's memory storage with device backing (ACT's no-defrag-reads)
    #[arg(long)]
    pub no_defrag_reads: bool,
    /// Write data that compresses to this percent of its size; 100 is random (ACT's compress-pct; default 100)
    #[arg(long, value_name = "PCT")]
    pub compress_pct: Option<u32>,
    /// Open devices without O_DSYNC (ACT's disable-odsync; not with --commit-to-device)
    #[arg(long)]
    pub disable_odsync: bool,
    /// Write each record to the device as it comes, as Aerospike's commit-to-device, instead of whole large blocks (ACT's commit-to-device)
    #[arg(long)]
    pub commit_to_device: bool,
    /// Read each device from end to end, one large block at a time, as Aerospike's tomb raider (ACT's tomb-raider)
    #[arg(long)]
    pub tomb_raider: bool,
    /// Microseconds the tomb raider pauses between large blocks (ACT's tomb-raider-sleep-usec; default 0)
    #[arg(long, value_name = "USEC")]
    pub tomb_raider_sleep_usec: Option<u32>,
    /// Stop when this far behind schedule (ACT's max-lag-sec; 0 = never)
    #[arg(long, value_name = "TIME")]
    pub max_lag: Option<String>,
    /// Size regular files to this many MiB (ACT's file-size-mbytes)
    #[arg(long, value_name = "MIB")]
    pub file_size_mbytes: Option<u32>,
}

#[derive(Debug, Args)]
pub struct ActStorageArgs {
    /// ACT 6.x storage config file (act_storage.conf)
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub settings: StorageSettings,
    #[command(flatten)]
    pub run: ActRunArgs,
}

#[derive(Debug, Args)]
pub struct ActIndexArgs {
    /// ACT 6.x index config file (act_index.conf)
    pub config: PathBuf,
    #[command(flatten)]
    pub run: ActRunArgs,
}

#[derive(Debug, Args)]
pub struct ActPrepArgs {
    /// Devices to prep (all of the device is overwritten)
    #[arg(required = true)]
    pub devices: Vec<PathBuf>,
    /// Write the prep results as JSON here
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub json: Option<PathBuf>,
    /// I/O engine
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: EngineChoice,
    #[command(flatten)]
    pub safety: SafetyArgs,
}

/// act_latency.py's options: -l LOG, -h HIST (repeatable), -t SLICE, -s, -n, -e, -x.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct ActAnalyzeArgs {
    /// The ACT log (or give it with -l)
    pub log_file: Option<PathBuf>,
    /// The ACT log
    #[arg(short = 'l', long = "log", value_name = "LOG")]
    pub log: Option<PathBuf>,
    /// Histogram to analyze (default: reads); repeatable
    #[arg(short = 'h', long = "histogram", value_name = "NAME")]
    pub histogram: Vec<String>,
    /// Slice length in seconds [default: 3600, or the whole run when it is
    /// shorter]
    #[arg(short = 't', long = "slice", value_name = "SECONDS")]
    pub slice: Option<u64>,
    /// First bucket shown
    #[arg(short = 's', long = "start_bucket", default_value_t = 0)]
    pub start_bucket: usize,
    /// Number of buckets shown
    #[arg(short = 'n', long = "num_buckets", default_value_t = 7)]
    pub num_buckets: usize,
    /// Show every n-th bucket
    #[arg(short = 'e', long = "every_nth", default_value_t = 1)]
    pub every_nth: usize,
    /// Show the rate of each slice
    #[arg(short = 'x', long = "extra")]
    pub extra: bool,
    /// Print the tables and verdict as JSON
    #[arg(long)]
    pub json: bool,
    /// Print help
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

#[derive(Debug, Args)]
pub struct ActSearchArgs {
    /// Start from this ACT storage config (its rates and duration are set per trial)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub settings: StorageSettings,
    /// Highest load to try
    #[arg(long, default_value = "60x", value_name = "Nx")]
    pub max: String,
    /// The resolution of the search (fractions allowed: 0.5x)
    #[arg(long, default_value = "1x", value_name = "Nx")]
    pub step: String,
    /// Length of each trial
    #[arg(long, default_value = "10m", value_name = "TIME")]
    pub trial: String,
    /// Length of the confirmation run (default: 6 trials)
    #[arg(long, value_name = "TIME")]
    pub confirm: Option<String>,
    /// Folder for the trials' logs
    #[arg(long, default_value = "act-search", value_name = "DIR", value_parser = output_path)]
    pub out: PathBuf,
    /// Write the search result as JSON here
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub json: Option<PathBuf>,
    /// Run every trial to its end even once it has failed whatever
    /// follows (by default a failing trial stops there)
    #[arg(long)]
    pub run_to_end: bool,
    /// The drives are identical (model, firmware, capacity): try one load
    /// per drive at once, then confirm the load found on every drive
    #[arg(long)]
    pub parallel: bool,
    /// Let a trial (never the confirmation) end early once statistics say
    /// how it ends: at most a 0.1% chance of a trial decided the wrong way
    /// (docs/act.md)
    #[arg(long, conflicts_with = "run_to_end")]
    pub statistical: bool,
    /// Worker threads, each with its own io_uring and its share of the
    /// drives (default: enough for the asked rate, at most the cores; never
    /// more than drives: docs/act.md)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub safety: SafetyArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamFormat {
    /// fio's text summary ("Run status group")
    Text,
    /// storcert's own JSON (docs/stream-schema.md)
    Json,
    /// fio's JSON (--output-format=json), key for key
    FioJson,
    /// fio's json+: fio's JSON with the completion latency bins
    #[value(name = "fio-json+")]
    FioJsonPlus,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    /// Device or file to stream to; repeatable (all run at once)
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Vec<String>,
    /// Bytes per device (K, M, G, T are powers of 1024); default: --percent
    #[arg(long, value_name = "SIZE", conflicts_with = "percent")]
    pub size: Option<String>,
    /// Share of each device to cover
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub percent: Option<u32>,
    /// Block size
    #[arg(long, default_value = "1M", value_name = "SIZE")]
    pub bs: String,
    /// Requests in flight per job
    #[arg(long, default_value_t = 32)]
    pub qd: u32,
    /// Jobs per device, each streaming its own region
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Passes, in order
    #[arg(long, default_value = "write,read", value_name = "PASSES")]
    pub pattern: String,
    /// Write checkable blocks and check every block on the read pass
    #[arg(long)]
    pub verify: bool,
    /// Seed of the verify headers: reuse a write pass's seed to verify its data in a later run
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Through the page cache instead of O_DIRECT
    #[arg(long)]
    pub buffered: bool,
    /// dd's single stream: one job, one request at a time, 1 MiB (unless set), and dd's summary line
    #[arg(long)]
    pub dd: bool,
    /// What standard output gets
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: StreamFormat,
    /// Write the output here instead of standard output
    #[arg(long, value_name = "FILE", value_parser = output_path)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub safety: SafetyArgs,
    /// Filesystem pass in this directory (bonnie++-style) instead of devices
    #[arg(long, value_name = "DIR", conflicts_with = "device")]
    pub fs: Option<PathBuf>,
    /// Size of the filesystem pass's file
    #[arg(long, default_value = "1G", value_name = "SIZE")]
    pub fs_size: String,
    /// Files the filesystem pass creates, stats and deletes
    #[arg(long, default_value_t = 4096)]
    pub files: u32,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The policy (TOML; see docs/policy.example.toml)
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Check this inventory (from `storcert inventory --json`) instead of scanning
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Only these devices; repeatable
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Vec<String>,
    /// Print the findings as JSON
    #[arg(long)]
    pub json: bool,
    /// Change what storcert can change without touching data (write cache,
    /// virtual drive cache policy), verify it, and check again
    #[arg(long, conflicts_with = "inventory")]
    pub fix: bool,
    /// For --fix: the safety gate's overrides, and --dry-run to stop after the plan
    #[command(flatten)]
    pub safety: SafetyArgs,
}

#[derive(Debug, Args)]
pub struct ProvisionArgs {
    /// The device to provision (all data on it is lost)
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: PathBuf,
    /// Share of the device to leave unpartitioned, as "21%" or "21"
    #[arg(long, value_name = "PCT", required_unless_present = "remove")]
    pub spare: Option<String>,
    /// Take the device back to no partition: remove the partition table
    /// storcert wrote (and nothing else's), discarding the whole device
    #[arg(long, conflicts_with_all = ["spare", "factory_spare", "policy"])]
    pub remove: bool,
    /// The drive's factory spare, to report the total (as "12%")
    #[arg(long, value_name = "PCT")]
    pub factory_spare: Option<String>,
    /// Take the factory spare from this policy (factory_spare_pct of the drive's rule)
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Do not discard (TRIM/deallocate) the device first
    #[arg(long)]
    pub no_discard: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub safety: SafetyArgs,
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// Save every drive's health (SMART / NVMe log) to FILE
    #[arg(long, value_name = "FILE", conflicts_with = "diff")]
    pub snapshot: Option<PathBuf>,
    /// Compare two snapshots: what degraded, and the writes in between
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"])]
    pub diff: Vec<PathBuf>,
    /// Drive ratings (rated_dwpd, warranty_years) for the endurance arithmetic
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Only these devices (for --snapshot); repeatable
    #[arg(long, short = 'd', value_name = "DEV")]
    pub device: Vec<String>,
    /// Print the diff as JSON
    #[arg(long)]
    pub json: bool,
}

/// What every command that writes to devices takes: the operator's word on
/// what may be destroyed, and a dry run.
#[derive(Debug, Args, Clone, Default)]
pub struct SafetyArgs {
    /// Allow destroying a device the safety gate would refuse (by serial, WWN or path)
    #[arg(long, value_name = "SERIAL")]
    pub force_destroy: Vec<String>,
    /// Also allow the drives a policy names with destroy = true
    #[arg(long = "destroy-policy", value_name = "FILE")]
    pub destroy_policy: Option<PathBuf>,
    /// Print what would be written, and stop
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where the secret key goes (mode 0600); the public key is written beside it as KEY.pub
    #[arg(short = 's', long, value_name = "FILE", default_value = "storcert.key")]
    pub secret: PathBuf,
    /// Replace existing key files
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    pub command: BundleCommand,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Pack a results folder as a signed .tar.zst (with FILE.minisig and FILE.intoto.json)
    Create(BundleCreateArgs),
    /// Check a bundle's signatures and every file in it; prints who signed what and when
    Verify(BundleVerifyArgs),
}

#[derive(Debug, Args)]
pub struct BundleCreateArgs {
    /// The results folder of a run
    pub dir: PathBuf,
    /// The bundle file to write (.tar.zst)
    #[arg(short, long, value_name = "FILE", value_parser = output_path)]
    pub output: PathBuf,
    /// Secret key to sign with (from `storcert keygen` or `minisign -G -W`)
    #[arg(short, long, value_name = "FILE", required_unless_present = "unsigned")]
    pub key: Option<PathBuf>,
    /// Write the bundle without signatures (it cannot be verified or uploaded to a collector)
    #[arg(long, conflicts_with = "key")]
    pub unsigned: bool,
    /// Also place the signed bundle in this spool folder for `storcert upload --spool`
    #[arg(long, value_name = "DIR", value_parser = output_path)]
    pub spool: Option<PathBuf>,
    /// Print the summary as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BundleVerifyArgs {
    /// The bundle; its signatures are read from FILE.minisig and FILE.intoto.json
    pub file: PathBuf,
    /// The signer's public key (a minisign .pub file, or several concatenated)
    #[arg(short = 'p', long, value_name = "KEY.pub")]
    pub pubkey: PathBuf,
    /// Print the verified facts as JSON
    #[arg(long)]
    pub json: bool,
    /// The name the bundle was signed as, when the file is kept under
    /// another (a collector's store names bundles by digest). Default: the
    /// file's own name; a renamed bundle fails
    #[arg(long = "as", value_name = "NAME")]
    pub signed_as: Option<String>,
    #[command(flatten)]
    pub limits: UnpackLimitArgs,
}

/// What reading one bundle may cost (a decompression bomb stops here).
#[derive(Debug, Clone, Args)]
pub struct UnpackLimitArgs {
    /// The most a bundle may unpack to (K/M/G suffixes)
    #[arg(long, value_name = "SIZE", default_value = "2G")]
    pub max_unpacked: String,
    /// The most it may unpack to per compressed byte, beyond the first 32 MiB
    #[arg(long, value_name = "N", default_value_t = crate::bundle::unpack::MAX_RATIO)]
    pub max_ratio: u64,
    /// The most files a bundle may hold
    #[arg(long, value_name = "N", default_value_t = crate::bundle::unpack::MAX_ENTRIES)]
    pub max_entries: u64,
}

impl UnpackLimitArgs {
    pub fn limits(&self) -> Result<crate::bundle::Limits, String> {
        let max_unpacked = crate::util::size::parse_size(&self.max_unpacked)
            .map_err(|e| format!("--max-unpacked {:?}: {e}", self.max_unpacked))?;
        Ok(crate::bundle::Limits {
            max_unpacked,
            max_ratio: self.max_ratio,
            max_entries: self.max_entries,
            ..Default::default()
        })
    }
}

#[derive(Debug, Args)]
pub struct UploadArgs {
    /// Bundles to upload (their .minisig and .intoto.json travel with them)
    pub files: Vec<PathBuf>,
    /// Where to: a collector or a folder-like PUT target (WebDAV, bucket URL) as
    /// https://host/path/ (the file name is appended), or one presigned URL with a query
    /// (with --minisig-to and --intoto-to, the presigned URLs of its signatures)
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// With a presigned --to: the presigned URL of the bundle's .minisig
    #[arg(long, value_name = "URL", requires = "intoto_to")]
    pub minisig_to: Option<String>,
    /// With a presigned --to: the presigned URL of the bundle's .intoto.json
    #[arg(long, value_name = "URL", requires = "minisig_to")]
    pub intoto_to: Option<String>,
    /// Keep bundles here until the receiver confirmed them: FILEs are placed in
    /// it first, and everything pending in it is sent (oldest first). Default:
    /// storcert/spool on the mounted partition labelled STORCERT, if any
    #[arg(long, value_name = "DIR", value_parser = output_path)]
    pub spool: Option<PathBuf>,
    /// Send the FILEs directly, without a spool
    #[arg(long, conflicts_with = "spool")]
    pub no_spool: bool,
    /// Trust only this CA bundle (PEM) instead of the system's roots
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Accept only a server whose certificate's public key (SubjectPublicKeyInfo) has this
    /// SHA-256, in base64 as curl's --pinnedpubkey takes it; repeatable. Replaces CA checks
    #[arg(long, value_name = "BASE64")]
    pub pin_sha256: Vec<String>,
    /// A file holding a bearer token (also: STORCERT_UPLOAD_TOKEN)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Allow plain http:// (only where the profile says so)
    #[arg(long)]
    pub allow_http: bool,
    /// Give up retrying after this long (the bundle stays in the spool)
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub deadline: String,
    /// Longest wait between retries (backoff doubles from 1 s, with jitter)
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub max_backoff: String,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A profile file, http(s) URL, or built-in name (quick, field-check, burn-in,
    /// qualify). Default: storcert.profile= on the kernel command line, then
    /// profile.toml on the STORCERT partition, then the built-in quick
    #[arg(long, value_name = "FILE|URL|NAME")]
    pub profile: Option<String>,
    /// Where runs keep their results (default: the profile's, the STORCERT
    /// partition's storcert/results, or ./storcert-results)
    #[arg(long, value_name = "DIR", value_parser = output_path)]
    pub results: Option<PathBuf>,
    /// The signing key (default: the profile's, or storcert.key beside the results,
    /// made on first use)
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Plain progress lines even on a terminal
    #[arg(long)]
    pub plain: bool,
    /// Abandon an unfinished earlier run instead of resuming it
    #[arg(long)]
    pub fresh: bool,
    /// Keep DIR/storcert.prom (Prometheus' text format) for node_exporter's
    /// textfile collector, with every heartbeat (profile: textfile)
    #[arg(long, value_name = "DIR", value_parser = output_path)]
    pub textfile: Option<PathBuf>,
    /// Read the kernel command line from this file instead of /proc/cmdline
    #[arg(long, value_name = "FILE", hide = true)]
    pub cmdline: Option<PathBuf>,
    /// Print the resolved profile and stop
    #[arg(long)]
    pub show_profile: bool,
    /// Print what the run would do on this machine, the drives it would
    /// destroy first, and stop: nothing is written
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct GeneratorArgs {
    /// systemd's normal generator folder (then the early and late ones, unused)
    #[arg(value_name = "DIR", num_args = 1..=3, required = true)]
    pub dirs: Vec<PathBuf>,
    /// Read the kernel command line from this file instead of /proc/cmdline
    #[arg(long, value_name = "FILE")]
    pub cmdline: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A bundle (.tar.zst) or a results folder
    pub input: PathBuf,
    /// Where to write (default: standard output)
    #[arg(short, long, value_name = "FILE", value_parser = output_path)]
    pub output: Option<PathBuf>,
    /// The report's format
    #[arg(long, value_enum, default_value = "html")]
    pub format: ReportFormat,
    /// Verify the bundle's signatures with this public key first (without
    /// it the report says NOT VERIFIED)
    #[arg(short = 'p', long, value_name = "KEY.pub")]
    pub pubkey: Option<PathBuf>,
    #[command(flatten)]
    pub limits: UnpackLimitArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Bundles (.tar.zst), results folders or ACT logs (.log, as `act
    /// storage --log` writes them), each one or more ACT runs
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write (default: standard output)
    #[arg(short, long, value_name = "FILE", value_parser = output_path)]
    pub output: Option<PathBuf>,
    /// The tables' format
    #[arg(long, value_enum, default_value = "txt")]
    pub format: CompareFormat,
    /// tables: the worst hour at 1/8/64 ms per load; writeup: ACT's
    /// published write-ups' avg and max rows over every threshold (txt, md)
    #[arg(long, value_enum, default_value = "tables")]
    pub layout: CompareLayout,
    /// Verify each bundle's signatures with this public key first
    #[arg(short = 'p', long, value_name = "KEY.pub")]
    pub pubkey: Option<PathBuf>,
    #[command(flatten)]
    pub limits: UnpackLimitArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareLayout {
    Tables,
    Writeup,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CompareFormat {
    Txt,
    Md,
    Html,
    Json,
    /// One row per run of a drive at a load, for a spreadsheet
    Csv,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ReportFormat {
    Html,
    Md,
    Txt,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag and argument of every command says what it is in
    /// `--help` and the man pages (15 of `act storage`'s said nothing).
    #[test]
    fn every_argument_of_every_command_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "storcert", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}

#[cfg(test)]
mod example_tests {
    use clap::Parser;

    /// Every example parses as the command it shows: an example that
    /// names a flag that is gone fails here, not in a user's shell.
    #[test]
    fn every_example_is_a_command_line_that_parses() {
        use super::examples::*;
        let all = [
            STORCERT,
            INVENTORY,
            CHECK,
            RUN,
            ACT_STORAGE,
            ACT_ANALYZE,
            ACT_SEARCH,
            ACT_PREP,
            STREAM,
            REPORT,
            COMPARE,
            BUNDLE,
            UPLOAD,
        ];
        let mut seen = 0;
        for text in all {
            for line in text.lines().filter(|l| l.starts_with("  storcert ")) {
                // The command ends where its description starts (a run of
                // spaces), or at a pipe or a redirection.
                let command = line.trim_start().split("   ").next().unwrap();
                let command = command.split(['|', '>']).next().unwrap();
                let words: Vec<&str> = command.split_whitespace().collect();
                if let Err(e) = super::Cli::try_parse_from(&words) {
                    panic!("{line:?} does not parse: {e}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 25, "{seen} examples");
    }
}
