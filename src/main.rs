use std::process::ExitCode;

use clap::Parser;
use storcert::cli::{Cli, Command};
#[cfg(feature = "collector")]
use storcert::commands::collect;
use storcert::commands::{
    self, act, bundle, check, compare, docs, health, inventory, provision, report, run, stream,
    upload,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Standard output redirected into a block device (`> /dev/sdb`) is an
    // output into a device: refused before anything is written there.
    if stdout_is_a_block_device() {
        eprintln!(
            "storcert: standard output is a block device: storcert never writes an output into a device"
        );
        return ExitCode::from(storcert::commands::exit::COULD_NOT_RUN);
    }
    if !matches!(cli.command, Command::Upload(_)) && !is_collect(&cli.command) {
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
        #[cfg(feature = "collector")]
        Command::Collect(args) => collect::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Completions(args) => docs::completions(args),
        Command::Generator(args) => run::generator(args),
        Command::Man(args) => docs::man(args),
    }
}

/// The collector serves: a closed pipe is a client gone, not the end.
fn is_collect(command: &Command) -> bool {
    #[cfg(feature = "collector")]
    if matches!(command, Command::Collect(_)) {
        return true;
    }
    let _ = command;
    false
}

fn stdout_is_a_block_device() -> bool {
    // SAFETY: fstat fills the zeroed struct for descriptor 1, or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstat(1, &mut st) };
    rc == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFBLK
}
