//! The report as Markdown (tickets) or plain text (terminals).

use std::fmt::Write;

use super::Report;

pub fn markdown(r: &Report) -> String {
    crate::util::text::printable_lines(&render(r, true))
}

/// Plain text: every string from the run or the bundle (device names,
/// serials, reasons) with its control characters escaped.
pub fn plain(r: &Report) -> String {
    crate::util::text::printable_lines(&render(r, false))
}

fn render(r: &Report, md: bool) -> String {
    let s = &r.summary;
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
    let mut out = h(1, &format!("storcert report: {}", r.title));
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
        let _ = writeln!(out, "- {reason}");
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
            let [drive, part, size, spare, factory, total] = super::spare_cells(p);
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
        m.vendor.as_deref().unwrap_or("–"),
        m.product.as_deref().unwrap_or(""),
        m.serial.as_deref().unwrap_or("–"),
        m.hostname.as_deref().unwrap_or("–")
    );
    out += &h(2, "Drives");
    out += &row(&["device", "model", "serial", "verdict", "ACT passed", "why"].map(String::from));
    out += &sep(6);
    for d in &s.drives {
        out += &row(&[
            d.device.clone(),
            d.model.clone().unwrap_or_else(|| "–".into()),
            d.serial.clone().unwrap_or_else(|| "–".into()),
            d.verdict.as_str().to_uppercase(),
            d.act_load_passed
                .map(|l| format!("{l}x"))
                .unwrap_or_else(|| "–".into()),
            d.reasons.join("; "),
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
                f.device,
                if f.machine {
                    " (the machine, not under test)"
                } else {
                    ""
                },
                f.check,
                f.expected,
                f.actual
            );
        }
        out.push('\n');
    }
    for a in &r.act {
        out += &h(
            2,
            &format!(
                "ACT {} {}",
                a.devices.join(", "),
                a.load.map(|l| format!("at {l}x")).unwrap_or_default()
            ),
        );
        let _ = writeln!(out, "{}", if md { "```" } else { "" });
        out += &a.analysis.text;
        out += &a.analysis.verdict_text();
        let _ = writeln!(out, "{}", if md { "```\n" } else { "" });
    }
    for st in &r.streams {
        out += &h(2, &format!("Streaming {}", st.targets.join(", ")));
        for p in &st.passes {
            let _ = writeln!(
                out,
                "- {}: {} at {}/s",
                p.name,
                crate::output::units::decimal_bytes(p.bytes),
                crate::output::units::decimal_bytes(p.aggr_bw_bytes as u64)
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
                c.drive,
                c.what,
                c.before,
                c.after,
                if c.degraded { " (DEGRADED)" } else { "" }
            );
        }
        out.push('\n');
    }
    if !r.notes.is_empty() {
        out += &h(2, "Run notes");
        for n in &r.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}
