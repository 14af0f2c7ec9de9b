//! The collector's command line: `storcert-collect`, and `storcert
//! collect` on a build that includes the collector.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::UnpackLimitArgs;

/// `storcert-collect`: the collector on its own, as the fleet's server
/// runs it (the image's binary holds no collector).
#[derive(Debug, Parser)]
#[command(
    name = "storcert-collect",
    bin_name = "storcert-collect",
    version,
    about = "The storcert collector: receives and verifies bundles, stores them, serves the fleet's results"
)]
pub struct CollectCli {
    #[command(flatten)]
    pub args: CollectArgs,
}

#[derive(Debug, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct CollectArgs {
    #[command(flatten)]
    pub store: CollectStoreArgs,
    /// Address to listen on
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8420")]
    pub listen: String,
    /// Serve HTTPS with this certificate chain (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Uploads per minute accepted from one client address
    #[arg(long, value_name = "N", default_value_t = 120)]
    pub rate: u32,
    /// A bearer token (a file holding it; also STORCERT_COLLECT_TOKEN) that
    /// every request must carry: uploads and heartbeats, and pages, API and
    /// downloads too unless --public-read. Browsers are asked for it (any user
    /// name, the token as password). Without a token every endpoint is open to
    /// anyone who can reach the collector (heartbeats still need a trusted
    /// key's signature)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve the pages (/, /bundles/SHA, /board, histories, cohorts), the API
    /// (/api/...) and the downloads (/download/...) without the token: they
    /// show serials, host names and whole bundles
    #[arg(long)]
    pub public_read: bool,
    /// Uploads received at once (more are answered 503 and retried)
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_uploads: usize,
    /// Uploads received at once from one client address
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_uploads_per_client: usize,
    /// Bundles verified at once (default: the number of cores)
    #[arg(long, value_name = "N")]
    pub max_verifying: Option<usize>,
    /// The longest one upload may take, body and verification included
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub request_timeout: String,
    /// The longest an upload's body may pause
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub body_idle_timeout: String,
    /// How often to pick up bundles and heartbeats other collectors stored in a
    /// shared store
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub sync_interval: String,
    /// Heartbeats a minute accepted from one client address (a rack behind one
    /// NAT address sends one per machine per progress interval)
    #[arg(long, value_name = "N", default_value_t = 6000)]
    pub heartbeat_rate: u32,
    /// A running machine whose heartbeats stop for this long shows as stalled
    /// (rebooted, hung, or off the network)
    #[arg(long, value_name = "DURATION", default_value = "3m")]
    pub stall_after: String,
    /// Run ids not seen before accepted a minute (and at once) from one signing
    /// key: a fleet's power-on wave under one site key. More get 429 and show
    /// on the board at a later heartbeat
    #[arg(long, value_name = "N", default_value_t = 600)]
    pub new_runs_per_key: u32,
    /// Run ids not seen before accepted a minute (and at once) from one client
    /// address (the racks behind one NAT address)
    #[arg(long, value_name = "N", default_value_t = 120)]
    pub new_runs_per_client: u32,
    /// Runs the board's records hold at most (a run silent for 8 days leaves
    /// them); a new run beyond is refused until older ones expire
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub max_runs: u64,
    /// An export whose reader takes nothing for this long is ended, and so is
    /// one read slower than 64 KiB/s after it (besides --request-timeout for
    /// the whole); a connection whose reader takes nothing of any answer for
    /// this long is dropped
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub export_stall: String,
    #[command(subcommand)]
    pub action: Option<CollectAction>,
}

/// Where the collector's bundles are and whose it trusts: the same for
/// serving and for exporting.
#[derive(Debug, Args)]
pub struct CollectStoreArgs {
    /// Where bundles are stored: a folder, or s3://BUCKET[/PREFIX] (endpoint and
    /// credentials from AWS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)
    #[arg(long, value_name = "URL", default_value = "collector-store")]
    pub store: String,
    /// The SQLite index (default: index.sqlite in the store folder, or in the
    /// current folder for an object store)
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Public keys whose bundles (and heartbeats) are accepted (minisign .pub
    /// files concatenated)
    // An Option that is required: `collect export` takes its own, and the
    // server's is then absent (a plain PathBuf could not be left empty).
    #[arg(long, value_name = "FILE", required = true)]
    pub trusted_keys: Option<PathBuf>,
    /// Largest bundle accepted, bytes (K/M/G suffixes)
    #[arg(long, value_name = "SIZE", default_value = "256M")]
    pub max_body: String,
    /// The CPU time one verification may use
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub verify_cpu: String,
    #[command(flatten)]
    pub limits: UnpackLimitArgs,
    /// Known failures shown as waived, never hidden: a TOML file of [[waiver]]
    /// tables (rule, model, serial, reason, expires; docs/export-schema.md)
    #[arg(long, value_name = "FILE")]
    pub waivers: Option<PathBuf>,
    /// The furthest ahead, in days from today, that a waiver may expire (one
    /// further out is refused at load), so an accepted failure is looked at again
    #[arg(long, value_name = "DAYS", default_value_t = crate::collect::fleet::DEFAULT_MAX_DAYS)]
    pub waiver_max_days: u32,
}

#[derive(Debug, Subcommand)]
pub enum CollectAction {
    /// Write the fleet's drive table (one row per drive per run, the schema of
    /// docs/export-schema.md) from the store, without serving: what
    /// /api/export.csv and /api/export.jsonl give
    Export(CollectExportArgs),
}

#[derive(Debug, Args)]
pub struct CollectExportArgs {
    #[command(flatten)]
    pub store: CollectStoreArgs,
    /// The table's format (docs/export-schema.md)
    #[arg(long, default_value = crate::export::FORMATS[0].name,
          value_parser = clap::builder::PossibleValuesParser::new(
              crate::export::FORMATS.iter().map(|f| f.name)))]
    pub format: String,
    /// Write here (durably, replacing it whole) instead of to standard output
    #[arg(short = 'o', long, value_name = "FILE", value_parser = super::output_path)]
    pub output: Option<PathBuf>,
    /// Only this drive (serial or WWN)
    #[arg(long, value_name = "ID")]
    pub drive: Option<String>,
    /// Only this machine (DMI serial)
    #[arg(long, value_name = "SERIAL")]
    pub machine: Option<String>,
    /// Only one cohort: model, firmware, controller or tag (with --group)
    #[arg(long, value_name = "KEY", requires = "group")]
    pub by: Option<String>,
    /// The cohort's group, as the cohort page names it
    #[arg(long, value_name = "GROUP", requires = "by")]
    pub group: Option<String>,
    /// Only runs received on or after this date or time (RFC 3339, e.g. 2026-11-01)
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many rows
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}
