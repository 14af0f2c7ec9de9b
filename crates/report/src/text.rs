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

fn render(r: &Report, md: bool) -> String {
    let s = &r.summary;
    let o = |v: &str| inline(v, md);
    let h = |level: usize, t: &str| {
        if md {
            format!("{} {t}\n\n", "#".repeat(level))
        } else {
            format!(
                "{t}\n{}\n\n",
                if level == 1 { "=" } else { "-" }.repeat(t.chars().count())
            )
        }
    };
    // A cell is one cell: a '|' or a line break in what a bundle says
    // cannot add cells or rows.
    let row = |cells: &[String]| {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| {
                let c = c.replace('\n', "\\n").replace('\r', "\\r");
                if md {
                    c.replace('|', "\\|")
                } else {
                    c
                }
            })
            .collect();
        if md {
            format!("| {} |\n", cells.join(" | "))
        } else {
            format!("  {}\n", cells.join("  "))
        }
    };
    let sep = |n: usize| {
        if md {
            format!("|{}\n", "---|".repeat(n))
        } else {
            String::new()
        }
    };
    let mut out = h(1, &format!("storcert report: {}", o(&r.title)));
    if let Some(line) = r.provenance.line() {
        let _ = writeln!(out, "{}\n", if md { format!("**{line}**") } else { line });
    }
    let _ = writeln!(
        out,
        "{}\n",
        if md {
            format!("**Verdict: {}**", s.verdict.as_str().to_uppercase())
        } else {
            format!("VERDICT: {}", s.verdict.as_str().to_uppercase())
        }
    );
    for reason in &s.reasons {
        let _ = writeln!(out, "- {}", o(reason));
    }
    if !s.reasons.is_empty() {
        out.push('\n');
    }
    if super::compare::worth_showing(&r.comparison) {
        out += &h(2, "Across loads and spare area");
        out += &super::compare::text(&r.comparison, md);
    }
    if !r.spare.is_empty() {
        out += &h(2, "Spare area (over-provisioning)");
        for p in &r.spare {
            let [drive, part, size, spare, factory, total] = super::spare_cells(p).map(|c| o(&c));
            let _ = writeln!(
                out,
                "- {drive}: partition {part} of {size}, spare {spare}, factory spare {factory}, total {total}"
            );
        }
        out.push('\n');
    }
    let m = &s.machine;
    let _ = writeln!(
        out,
        "Machine: {} {}, serial {}, host {}\n",
        o(m.vendor.as_deref().unwrap_or("–")),
        o(m.product.as_deref().unwrap_or("")),
        o(m.serial.as_deref().unwrap_or("–")),
        o(m.hostname.as_deref().unwrap_or("–"))
    );
    out += &h(2, "Drives");
    out += &row(&["device", "model", "serial", "verdict", "ACT passed", "why"].map(String::from));
    out += &sep(6);
    for d in &s.drives {
        out += &row(&[
            o(&d.device),
            o(d.model.as_deref().unwrap_or("–")),
            o(d.serial.as_deref().unwrap_or("–")),
            d.verdict.as_str().to_uppercase(),
            d.act_load_passed
                .map(|l| format!("{l}x"))
                .unwrap_or_else(|| "–".into()),
            o(&d.reasons.join("; ")),
        ]);
    }
    out.push('\n');
    if !r.findings.is_empty() {
        out += &h(2, "Policy findings");
        for f in &r.findings {
            let _ = writeln!(
                out,
                "- {} {}{} {}: expected {}, found {}",
                f.severity,
                o(&f.device),
                if f.machine {
                    " (the machine, not under test)"
                } else {
                    ""
                },
                o(&f.check),
                o(&f.expected),
                o(&f.actual)
            );
        }
        out.push('\n');
    }
    for a in &r.act {
        out += &h(
            2,
            &format!(
                "ACT {} {}",
                o(&a.devices.join(", ")),
                a.load.map(|l| format!("at {l}x")).unwrap_or_default()
            ),
        );
        // The analysis as act_latency.py prints it (names from the log
        // inside): in a fence it cannot close.
        let text = a.analysis.text.clone() + &a.analysis.verdict_text();
        let f = if md { fence(&text) } else { String::new() };
        let _ = writeln!(out, "{f}");
        out += &text;
        let _ = writeln!(out, "{f}\n");
    }
    for st in &r.streams {
        out += &h(2, &format!("Streaming {}", o(&st.targets.join(", "))));
        for p in &st.passes {
            let _ = writeln!(
                out,
                "- {}: {} at {}/s",
                o(&p.name),
                storcert_util::units::decimal_bytes(p.bytes),
                storcert_util::units::decimal_bytes(p.aggr_bw_bytes as u64)
            );
        }
        out.push('\n');
    }
    if r.health.is_empty() && r.endurance.is_empty() && r.health_compared {
        out += &h(2, "Health");
        let _ = writeln!(out, "{}\n", r.health_note());
    }
    if !r.health.is_empty() {
        out += &h(2, "Health changes");
        for c in &r.health {
            let _ = writeln!(
                out,
                "- {} {}: {} -> {}{}",
                o(&c.drive),
                o(&c.what),
                o(&c.before),
                o(&c.after),
                if c.degraded { " (DEGRADED)" } else { "" }
            );
        }
        out.push('\n');
    }
    if !r.notes.is_empty() {
        out += &h(2, "Run notes");
        for n in &r.notes {
            let _ = writeln!(out, "- {}", o(n));
        }
    }
    out
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
