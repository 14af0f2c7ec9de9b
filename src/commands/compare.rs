//! `storcert compare`: ACT runs side by side, from results folders and
//! bundles.

use std::process::ExitCode;

use super::exit;
use super::report::{open, Opened};
use crate::bundle::contents::{Contents, Holding};
use crate::cli::{CompareArgs, CompareFormat};
use crate::report::{self, compare};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert compare: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn run(a: CompareArgs) -> ExitCode {
    // One run's contents at a time: what the comparison keeps of each is
    // its points, so inputs add no more than their points to what is held.
    let mut comparer = compare::Comparer::default();
    // A comparison plots no timeline: none is held, however many runs.
    let holding = Holding {
        timelines: false,
        ..Holding::BUNDLE
    };
    for input in &a.inputs {
        let contents: Contents = match open(input, a.pubkey.as_deref(), &a.limits, holding) {
            Ok(Opened::Results(dir)) => match report::contents_of_results(&dir) {
                Ok(c) => c,
                Err(e) => return fail(format!("{}: {e:#}", dir.display())),
            },
            Ok(Opened::Bundle { contents, .. }) => *contents,
            Err(r) => {
                eprintln!(
                    "storcert compare: {}",
                    crate::util::text::printable(&r.message, 1000)
                );
                return ExitCode::from(r.status);
            }
        };
        // A run's results that could not be read are named: the
        // comparison is of what could.
        for (path, why) in &contents.unreadable {
            eprintln!(
                "storcert compare: {}: {}: {}",
                input.display(),
                crate::util::text::printable(path, 200),
                crate::util::text::printable(why, 300)
            );
        }
        if let Some(more) = contents.unnamed_unreadable() {
            eprintln!("storcert compare: {}: {more}", input.display());
        }
        comparer.add(&input.display().to_string(), &contents);
    }
    let c = comparer.finish();
    if c.loads.is_empty() {
        return fail("no ACT log in these inputs");
    }
    let text = match a.format {
        CompareFormat::Txt => compare::text(&c, false),
        CompareFormat::Md => compare::text(&c, true),
        CompareFormat::Html => report::html::comparison_page(&c),
        CompareFormat::Json => {
            serde_json::to_string_pretty(&c).expect("a comparison serialises") + "\n"
        }
    };
    super::emit("compare", a.output.as_deref(), &text)
}
