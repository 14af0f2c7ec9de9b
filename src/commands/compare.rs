//! `storcert compare`: ACT runs side by side, from results folders,
//! bundles and standalone ACT logs.

use std::path::Path;
use std::process::ExitCode;

use super::exit;
use super::report::{open, Opened};

use crate::bundle::contents::{Contents, FileReader, Holding};
use crate::cli::{CompareArgs, CompareFormat, CompareLayout};
use crate::report::{self, compare};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert compare: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

/// A file that is no bundle (no zstd frame at its start): a standalone
/// ACT log (`act storage --log FILE`), whatever it is named.
fn is_log(input: &Path) -> bool {
    use std::io::Read;
    const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    if !input.is_file() {
        return false;
    }
    let mut head = [0u8; 4];
    match std::fs::File::open(input).and_then(|mut f| f.read_exact(&mut head)) {
        Ok(()) => head != ZSTD,
        // Shorter than a frame's magic: no bundle either.
        Err(e) => e.kind() == std::io::ErrorKind::UnexpectedEof,
    }
}

/// One ACT log as a run's contents, judged as it is read (a day's log of
/// many drives is large: never held whole).
fn log_contents(path: &Path, mut holding: Holding) -> std::io::Result<Contents> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut file = std::fs::File::open(path)?;
    let read = FileReader::read_from(&name, &mut file, &mut holding)?;
    Ok(Contents::from_reads([(name, read)].into(), ""))
}

pub fn run(a: CompareArgs) -> ExitCode {
    if a.layout == CompareLayout::Writeup
        && !matches!(a.format, CompareFormat::Txt | CompareFormat::Md)
    {
        return fail("--layout writeup is text: --format txt or md");
    }
    // One run's contents at a time: what the comparison keeps of each is
    // its points, so inputs add no more than their points to what is held.
    let mut comparer = compare::Comparer::default();
    // A comparison plots no timeline: none is held, however many runs.
    let holding = Holding {
        timelines: false,
        ..Holding::BUNDLE
    };
    for input in &a.inputs {
        // A path is the user's, but its bytes may not be: shown printable.
        let shown = crate::util::text::printable(&input.display().to_string(), 300);
        let contents: Contents = if is_log(input) {
            match log_contents(input, holding) {
                Ok(c) if c.analyses().next().is_some() => c,
                Ok(c) => {
                    let why = c.unreadable.first().map_or(
                        "neither an ACT log (no \"ACT version\" line) nor a bundle".to_string(),
                        |(_, why)| crate::util::text::printable(why, 300),
                    );
                    return fail(format!("{shown}: {why}"));
                }
                Err(e) => return fail(format!("{shown}: {e}")),
            }
        } else {
            match open(input, a.pubkey.as_deref(), &a.limits, holding) {
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
            }
        };
        // A run's results that could not be read are named: the
        // comparison is of what could.
        for (path, why) in &contents.unreadable {
            eprintln!(
                "storcert compare: {shown}: {}: {}",
                crate::util::text::printable(path, 200),
                crate::util::text::printable(why, 300)
            );
        }
        if let Some(more) = contents.unnamed_unreadable() {
            eprintln!("storcert compare: {shown}: {more}");
        }
        comparer.add(&input.display().to_string(), &contents);
    }
    let c = comparer.finish();
    if c.loads.is_empty() {
        return fail("no ACT log in these inputs");
    }
    let text = match (a.layout, a.format) {
        (CompareLayout::Writeup, CompareFormat::Txt) => compare::writeup(&c, false),
        (CompareLayout::Writeup, CompareFormat::Md) => compare::writeup(&c, true),
        (CompareLayout::Writeup, _) => return fail("--layout writeup is text: --format txt or md"),
        (_, CompareFormat::Txt) => compare::text(&c, false, true),
        (_, CompareFormat::Md) => compare::text(&c, true, true),
        (_, CompareFormat::Html) => report::html::comparison_page(&c),
        (_, CompareFormat::Json) => {
            serde_json::to_string_pretty(&c).expect("a comparison serialises") + "\n"
        }
        (_, CompareFormat::Csv) => match crate::export::csv::comparison(&c) {
            Ok(t) => t,
            Err(e) => return fail(format!("CSV: {e}")),
        },
    };
    super::emit("compare", a.output.as_deref(), &text)
}
