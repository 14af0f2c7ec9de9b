use std::process::ExitCode;

use clap::Parser;
use storcert::cli::{Cli, Command};
use storcert::commands::{
    self, act, bundle, check, collect, compare, docs, health, inventory, provision, report, run,
    stream, upload,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Collect(_) | Command::Upload(_)) {
        commands::die_quietly_on_closed_pipe();
    }
    match cli.command {
        Command::Inventory(args) => inventory::run(args),
        Command::Check(args) => check::run(args),
        Command::Health(args) => health::run(args),
        Command::Provision(args) => provision::run(args),
        Command::Act(args) => act::run(args),
        Command::Stream(args) => stream::run(args),
        Command::Keygen(args) => bundle::keygen(args),
        Command::Bundle(args) => bundle::run(args),
        Command::Upload(args) => upload::run(args),
        Command::Collect(args) => collect::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Completions(args) => docs::completions(args),
        Command::Generator(args) => run::generator(args),
        Command::Man(args) => docs::man(args),
    }
}
