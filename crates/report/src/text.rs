//! The report as Markdown (tickets) or plain text (terminals).

use std::fmt::Write;

use super::Report;
pub use crate::markup::{fence, Doc};

pub fn markdown(r: &Report) -> String {
    storcert_util::text::printable_lines(&render(r, true))
}

/// Plain text: every string from the run or the bundle (device names,
/// serials, reasons) with its control characters escaped.
pub fn plain(r: &Report) -> String {
    storcert_util::text::printable_lines(&render(r, false))
}

fn render(r: &Report, md: bool) -> String {
    let mut d = Doc {
        md,
        out: String::new(),
    };
    verdict_section(&mut d, r);
    if super::compare::worth_showing(&r.comparison) {
        d.heading(2, "Across loads and spare area");
        d.out += &super::compare::text(&r.comparison, md, false);
    }
    for section in crate::section::SECTIONS {
        section.text(r, &mut d);
    }
    d.out
}

/// The title, where the bundle comes from, the verdict and its reasons.
fn verdict_section(d: &mut Doc, r: &Report) {
    let s = &r.summary;
    let title = d.o(&r.title);
    d.heading(1, &format!("storcert report: {title}"));
    if let Some(line) = r.provenance.line() {
        let line = if d.md { format!("**{line}**") } else { line };
        let _ = writeln!(d.out, "{line}\n");
    }
    let verdict = s.verdict.as_str().to_uppercase();
    let verdict = if d.md {
        format!("**Verdict: {verdict}**")
    } else {
        format!("VERDICT: {verdict}")
    };
    let _ = writeln!(d.out, "{verdict}\n");
    first_screen(d, r);
}

/// One line per drive with its answer, then why, per drive.
fn first_screen(d: &mut Doc, r: &Report) {
    let f = super::answer::first_screen(&r.summary, &r.comparison);
    if !f.drives.is_empty() {
        d.row(&["drive", "model, serial", "verdict", "answer"].map(String::from));
        d.separator(4);
        for l in &f.drives {
            let cells = [
                d.o(&l.device),
                d.o(if l.identity.is_empty() {
                    "–"
                } else {
                    &l.identity
                }),
                l.verdict.as_str().to_uppercase(),
                d.o(&l.answer),
            ];
            d.row(&cells);
        }
        d.out.push('\n');
    }
    if f.why.is_empty() {
        return;
    }
    d.heading(2, why_heading(r.summary.verdict));
    for w in &f.why {
        let about = d.o(w.heading());
        let about = if d.md { format!("**{about}**") } else { about };
        let _ = writeln!(d.out, "{about}:\n");
        for reason in &w.reasons {
            let reason = d.o(reason);
            let _ = writeln!(d.out, "- {reason}");
        }
        d.out.push('\n');
    }
}

/// The heading over the reasons a run did not pass.
pub fn why_heading(v: storcert_results::Verdict) -> &'static str {
    if v == storcert_results::Verdict::Fail {
        "Why it failed"
    } else {
        "Why it is not a pass"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storcert_util::text::inline;

    #[test]
    fn a_bundle_string_adds_no_line_heading_or_fence() {
        let forged = "x\n**Verified: signed by key 324E, every file matches.**\n# all drives PASS";
        assert_eq!(inline(forged, false).lines().count(), 1);
        let md = inline(forged, true);
        assert_eq!(md.lines().count(), 1);
        assert!(md.contains("\\*\\*Verified"), "{md}");
        assert_eq!(inline("<img src=x> < 5%", true), "\\<img src=x> < 5%");
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("plain"), "```");
    }

    #[test]
    fn a_health_stage_that_tracked_no_drive_is_not_said_to_have_seen_no_change() {
        let diff = |drives: &str| {
            let mut files = std::collections::BTreeMap::new();
            files.insert(
                "health-diff.json".to_string(),
                format!(
                    r#"{{"artefact":"health-diff","schema_version":1,"seconds":1,"drives":[{drives}],"unmatched":[],"degraded":false}}"#
                )
                .into_bytes(),
            );
            plain(&crate::Report::build("r", Default::default(), &files))
        };
        let none = diff("");
        assert!(none.contains("no drive's health was tracked"), "{none}");
        assert!(!none.contains("nothing changed"), "{none}");
        let one = diff(
            r#"{"drive":"/dev/sda","changes":[],"degraded":false,"endurance":null,"temperature_c":null}"#,
        );
        assert!(one.contains("nothing changed"), "{one}");
    }
}
