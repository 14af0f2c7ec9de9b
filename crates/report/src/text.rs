//! The report as Markdown (tickets) or plain text (terminals).

use std::fmt::Write;

use super::Report;
use storcert_util::text::inline;

pub fn markdown(r: &Report) -> String {
    storcert_util::text::printable_lines(&render(r, true))
}

/// Plain text: every string from the run or the bundle (device names,
/// serials, reasons) with its control characters escaped.
pub fn plain(r: &Report) -> String {
    storcert_util::text::printable_lines(&render(r, false))
}

/// A Markdown code fence longer than any run of backticks in `text`, so
/// the text cannot close it.
fn fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The page being written, Markdown or plain text: headings, table rows
/// and inline values in the one dialect.
struct Doc {
    md: bool,
    out: String,
}

impl Doc {
    /// A value from the run or the bundle, inline.
    fn o(&self, v: &str) -> String {
        inline(v, self.md)
    }

    fn heading(&mut self, level: usize, t: &str) {
        if self.md {
            let _ = write!(self.out, "{} {t}\n\n", "#".repeat(level));
        } else {
            let rule = if level == 1 { "=" } else { "-" }.repeat(t.chars().count());
            let _ = write!(self.out, "{t}\n{rule}\n\n");
        }
    }

    /// A cell is one cell: a '|' or a line break in what a bundle says
    /// cannot add cells or rows.
    fn row(&mut self, cells: &[String]) {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| {
                let c = c.replace('\n', "\\n").replace('\r', "\\r");
                if self.md {
                    c.replace('|', "\\|")
                } else {
                    c
                }
            })
            .collect();
        if self.md {
            let _ = writeln!(self.out, "| {} |", cells.join(" | "));
        } else {
            let _ = writeln!(self.out, "  {}", cells.join("  "));
        }
    }

    fn separator(&mut self, n: usize) {
        if self.md {
            let _ = writeln!(self.out, "|{}", "---|".repeat(n));
        }
    }
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
    spare_section(&mut d, r);
    drives_section(&mut d, r);
    findings_section(&mut d, r);
    act_sections(&mut d, r);
    stream_sections(&mut d, r);
    filesystem_sections(&mut d, r);
    health_section(&mut d, r);
    if !r.notes.is_empty() {
        d.heading(2, "Run notes");
        for n in &r.notes {
            let n = d.o(n);
            let _ = writeln!(d.out, "- {n}");
        }
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

fn spare_section(d: &mut Doc, r: &Report) {
    if r.spare.is_empty() {
        return;
    }
    d.heading(2, "Spare area (over-provisioning)");
    for p in &r.spare {
        let [drive, part, size, spare, factory, total] = super::spare_cells(p).map(|c| d.o(&c));
        let _ = writeln!(
            d.out,
            "- {drive}: partition {part} of {size}, spare {spare}, factory spare {factory}, total {total}"
        );
    }
    d.out.push('\n');
}

/// The machine's line, then one row per drive.
fn drives_section(d: &mut Doc, r: &Report) {
    let s = &r.summary;
    let m = &s.machine;
    let machine = format!(
        "Machine: {} {}, serial {}, host {}\n",
        d.o(m.vendor.as_deref().unwrap_or("–")),
        d.o(m.product.as_deref().unwrap_or("")),
        d.o(m.serial.as_deref().unwrap_or("–")),
        d.o(m.hostname.as_deref().unwrap_or("–"))
    );
    let _ = writeln!(d.out, "{machine}");
    d.heading(2, "Drives");
    d.row(&["device", "model", "serial", "verdict", "ACT passed"].map(String::from));
    d.separator(5);
    for drive in &s.drives {
        let cells = [
            d.o(&drive.device),
            d.o(drive.model.as_deref().unwrap_or("–")),
            d.o(drive.serial.as_deref().unwrap_or("–")),
            drive.verdict.as_str().to_uppercase(),
            drive
                .act_load_passed
                .map(|l| format!("{l}x"))
                .unwrap_or_else(|| "–".into()),
        ];
        d.row(&cells);
    }
    d.out.push('\n');
}

fn findings_section(d: &mut Doc, r: &Report) {
    if r.findings.is_empty() {
        return;
    }
    d.heading(2, "Policy findings");
    for f in &r.findings {
        let line = format!(
            "- {} {}{} {}: expected {}, found {}",
            f.severity,
            d.o(&f.device),
            if f.machine {
                " (the machine, not under test)"
            } else {
                ""
            },
            d.o(&f.check),
            d.o(&f.expected),
            d.o(&f.actual)
        );
        let _ = writeln!(d.out, "{line}");
    }
    d.out.push('\n');
}

fn act_sections(d: &mut Doc, r: &Report) {
    for a in &r.act {
        let title = format!(
            "ACT {} {}",
            d.o(&a.devices.join(", ")),
            a.load.map(|l| format!("at {l}x")).unwrap_or_default()
        );
        d.heading(2, &title);
        // The analysis as act_latency.py prints it (names from the log
        // inside): in a fence it cannot close.
        let text = a.analysis.text.clone() + &a.analysis.verdict_text();
        let f = if d.md { fence(&text) } else { String::new() };
        let _ = writeln!(d.out, "{f}");
        d.out += &text;
        let _ = writeln!(d.out, "{f}\n");
    }
}

fn stream_sections(d: &mut Doc, r: &Report) {
    for st in &r.streams {
        let title = format!("Streaming {}", d.o(&st.targets.join(", ")));
        d.heading(2, &title);
        let _ = writeln!(
            d.out,
            "How it ran: {}, from {}.\n",
            d.o(&st.how),
            d.o(&st.path)
        );
        for p in &st.passes {
            let line = format!(
                "- {}: {} at {}/s",
                d.o(&p.name),
                storcert_util::units::decimal_bytes(p.bytes),
                storcert_util::units::decimal_bytes(p.aggr_bw_bytes as u64)
            );
            let _ = writeln!(d.out, "{line}");
        }
        d.out.push('\n');
    }
}

/// Each filesystem pass: its tables as `stream --fs` prints them, and its
/// bonnie++ CSV line.
fn filesystem_sections(d: &mut Doc, r: &Report) {
    for (path, f) in &r.filesystem {
        let title = format!("Filesystem pass in {}", d.o(&f.dir));
        d.heading(2, &title);
        let _ = writeln!(d.out, "From {}.\n", d.o(path));
        if let Some(w) = f.page_cache_warning() {
            let _ = writeln!(d.out, "Warning: {w}\n");
        }
        let text = storcert_util::text::printable_lines(&fs_tables(f));
        let fence = if d.md { fence(&text) } else { String::new() };
        let _ = writeln!(d.out, "{fence}\n{text}{fence}\n");
    }
}

/// bonnie++'s two tables and its CSV line, in words.
fn fs_tables(f: &storcert_results::stream::FsResult) -> String {
    let mut s = String::new();
    for m in f.data.iter().chain(&f.metadata) {
        let _ = writeln!(
            s,
            "{:<20} {:>16} {:>11} us",
            m.test,
            m.rate_text(),
            m.max_latency_us
        );
    }
    let _ = writeln!(s, "\nbonnie++ CSV: {}", f.bonnie_csv());
    s
}

fn health_section(d: &mut Doc, r: &Report) {
    if r.health.is_empty() && r.endurance.is_empty() && r.health_compared {
        d.heading(2, "Health");
        let _ = writeln!(d.out, "{}\n", r.health_note());
    }
    if r.health.is_empty() {
        return;
    }
    d.heading(2, "Health changes");
    for c in &r.health {
        let line = format!(
            "- {} {}: {} -> {}{}",
            d.o(&c.drive),
            d.o(&c.what),
            d.o(&c.before),
            d.o(&c.after),
            if c.degraded { " (DEGRADED)" } else { "" }
        );
        let _ = writeln!(d.out, "{line}");
    }
    d.out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

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
