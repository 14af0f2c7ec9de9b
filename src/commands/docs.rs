//! Shell completions and man pages, generated from the clap definition.

use std::process::ExitCode;

use std::io::Write;

use clap::CommandFactory;

use super::exit;
use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: CompletionsArgs) -> ExitCode {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "storcert", &mut std::io::stdout());
    ExitCode::SUCCESS
}

pub fn man(args: ManArgs) -> ExitCode {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let result = match &args.out {
        Some(dir) => std::fs::create_dir_all(dir).and_then(|_| pages_to(&cmd, dir)),
        None => page(&cmd).and_then(|p| std::io::stdout().write_all(&p)),
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

/// One page per command, as clap_mangen's `generate_to` names them
/// (storcert.1, storcert-act-storage.1, ...).
fn pages_to(cmd: &clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages_to(sub, dir)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    std::fs::write(dir.join(man.get_filename()), page(cmd)?)
}

/// A command's man page, its examples (the end of its long help) under
/// EXAMPLES, unfilled so each stays on its line, where clap_mangen calls
/// that section EXTRA and fills it as prose.
fn page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    let text = String::from_utf8_lossy(&out).into_owned();
    const EXTRA: &str = "\n.SH EXTRA\nExamples:\n";
    let Some(at) = text.find(EXTRA) else {
        return Ok(text.into_bytes());
    };
    let (head, rest) = text.split_at(at);
    let rest = &rest[EXTRA.len()..];
    let end = rest.find("\n.SH ").map_or(rest.len(), |i| i + 1);
    let (examples, tail) = rest.split_at(end);
    Ok(format!("{head}\n.SH EXAMPLES\n.nf\n{examples}.fi\n{tail}").into_bytes())
}
