//! The collector's own binary: what `storcert collect` is on a build
//! with the collector, without the rest of storcert's commands. The
//! image's binary is built without it.

use std::process::ExitCode;

use clap::Parser;
use storcert::cli::collect::CollectCli;

fn main() -> ExitCode {
    storcert::commands::collect::run(CollectCli::parse().args)
}
