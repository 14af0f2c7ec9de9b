//! Shell completions and man pages, generated from the clap definition.

use std::process::ExitCode;

use clap::CommandFactory;

use super::exit;
use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: CompletionsArgs) -> ExitCode {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "storcert", &mut std::io::stdout());
    ExitCode::SUCCESS
}

pub fn man(args: ManArgs) -> ExitCode {
    let cmd = Cli::command();
    let result = match &args.out {
        Some(dir) => std::fs::create_dir_all(dir).and_then(|_| clap_mangen::generate_to(cmd, dir)),
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let target = args
                .out
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "standard output".into());
            eprintln!("storcert man: cannot write to {target}: {e}");
            ExitCode::from(exit::COULD_NOT_RUN)
        }
    }
}
