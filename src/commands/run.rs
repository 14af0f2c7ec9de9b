//! `storcert run`: resolves the profile, runs it, prints the banner (on
//! standard output; its progress goes to standard error).

use std::path::Path;
use std::process::ExitCode;

use super::{exit, stop_flag};
use crate::cli::{GeneratorArgs, RunArgs};
use crate::output::console;
use crate::run::{self, source};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert run: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

/// The kernel command line's text, from the file `--cmdline` names or
/// /proc/cmdline; empty if unreadable (then nothing on it applies).
fn cmdline_text(path: Option<&Path>) -> String {
    std::fs::read_to_string(path.unwrap_or(Path::new("/proc/cmdline"))).unwrap_or_default()
}

pub fn run(a: RunArgs) -> ExitCode {
    let cmdline = match source::Cmdline::parse(&cmdline_text(a.cmdline.as_deref())) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let partition = run::boot::results_partition();
    // The whole profile is validated here, before any device is touched.
    let mut resolved = match source::resolve(
        a.profile.as_deref(),
        &cmdline,
        partition.as_deref(),
        std::path::Path::new(crate::bundle::system::IMAGE_BUILD_ID).exists(),
    ) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if let Some(dir) = &a.textfile {
        resolved.profile.textfile = Some(dir.clone());
    }
    if a.show_profile {
        println!("# {}", resolved.source);
        print!("{}", toml::to_string(&resolved.profile).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let opts = run::Options {
        profile: resolved.profile,
        source: resolved.source,
        results_root: a.results.clone(),
        key: a.key.clone(),
        plain: a.plain,
        fresh: a.fresh,
    };
    if a.dry_run {
        return match run::plan::dry_run(&opts) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(format!("{e:#}")),
        };
    }
    let ending = match run::run(&opts, stop_flag()) {
        Ok(e) => e,
        Err(e) => return fail(format!("{e:#}")),
    };
    let mut lines = vec![format!(
        "verdict {}",
        ending.verdict.as_str().to_uppercase()
    )];
    lines.extend(ending.answers.iter().cloned());
    lines.extend(ending.reasons.iter().map(|r| format!("- {r}")));
    if let (Some(b), Some(sha)) = (&ending.bundle, &ending.bundle_sha256) {
        lines.push(format!("bundle {}", b.display()));
        lines.push(format!("sha256 {sha}"));
    }
    for to in &ending.delivered_to {
        lines.push(format!("delivered to {to}"));
    }
    lines.push(format!("results {}", ending.run_dir.display()));
    lines.push(format!(
        "report {}",
        ending.run_dir.join("report.html").display()
    ));
    // The answer on standard output, the progress that led to it on
    // standard error: `storcert run | tee verdict.txt` keeps the answer.
    print!("{}", console::banner(ending.verdict, &lines));
    if ending.done_action != "none" {
        eprintln!(
            "storcert.done={}: the image's unit acts on the exit status",
            ending.done_action
        );
    }
    ExitCode::from(exit::of(ending.verdict))
}

/// `storcert generator DIR…`: systemd runs it at boot (and at every daemon
/// reload); what it cannot read it says on stderr (the kernel log) and
/// falls back to the defaults, since a generator must not stop a boot.
pub fn generator(a: GeneratorArgs) -> ExitCode {
    match run::boot::generate(&cmdline_text(a.cmdline.as_deref()), &a.dirs[0]) {
        Ok(notes) => {
            for n in notes {
                eprintln!("storcert generator: {n}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("storcert generator: {e:#}");
            ExitCode::from(exit::COULD_NOT_RUN)
        }
    }
}
