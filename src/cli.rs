//! The command line: one clap definition from which help, shell
//! completions and the man page are all generated.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "storcert",
    version,
    about = "Storage qualification: inventory, policy checks, ACT and streaming suites, signed results",
    long_about = "storcert qualifies a server's drives unattended: it enumerates disks and \
                  controllers, checks their settings against a policy, runs the Aerospike \
                  Certification Tool workload and a streaming suite, and writes a signed \
                  results bundle.\n\nExit status: 0 success/pass, 1 fail, 2 could not run, \
                  3 interrupted.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List disks and storage controllers with identity, firmware, write cache and health
    Inventory(InventoryArgs),
    /// Check drive and controller settings against a policy (planned: issue 5)
    Check(PlannedArgs),
    /// Provision spare area with a GPT partition (planned: issue 5)
    Provision(PlannedArgs),
    /// Run the Aerospike Certification Tool workload (planned: issue 3)
    Act(PlannedArgs),
    /// Run the sequential streaming suite (planned: issue 4)
    Stream(PlannedArgs),
    /// Create and verify signed results bundles (planned: issue 6)
    Bundle(PlannedArgs),
    /// Upload results bundles (planned: issue 6)
    Upload(PlannedArgs),
    /// Run the collector that receives bundles (planned: issue 6)
    Collect(PlannedArgs),
    /// Run a whole qualification from a profile (planned: issue 7)
    Run(PlannedArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
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
    /// Save every raw passthrough reply into DIR (for fixtures and support cases)
    #[arg(long, value_name = "DIR", hide = true)]
    pub record_raw: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PlannedArgs {
    /// Arguments of the planned command
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write storcert.1 and one storcert-COMMAND.1 per subcommand here
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}
