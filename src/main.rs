use std::process::ExitCode;

use clap::Parser;
use storcert::cli::{Cli, Command};
use storcert::commands::{self, act, check, docs, health, inventory, provision, stream};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Inventory(args) => inventory::run(args),
        Command::Check(args) => check::run(args),
        Command::Health(args) => health::run(args),
        Command::Provision(args) => provision::run(args),
        Command::Act(args) => act::run(args),
        Command::Stream(args) => stream::run(args),
        Command::Bundle(_) => commands::planned("bundle", 6),
        Command::Upload(_) => commands::planned("upload", 6),
        Command::Collect(_) => commands::planned("collect", 6),
        Command::Run(_) => commands::planned("run", 7),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}
