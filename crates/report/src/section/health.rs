//! What changed in the drives' health (`health-diff`), and the endurance projection.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::Report;

pub struct Health;

impl super::Section for Health {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// What changed in the drives' health, and the endurance projection.
fn html(out: &mut String, r: &Report) {
    out.push_str("<section id=\"health\"><h2>Health</h2>");
    if r.health.is_empty() && r.endurance.is_empty() {
        let _ = write!(out, "<p id=\"health-note\">{}</p>", esc(r.health_note()));
    }
    if !r.health.is_empty() {
        out.push_str("<table><thead><tr><th class=\"l\">drive</th><th class=\"l\">what</th><th>before</th><th>after</th></tr></thead><tbody>");
        for c in &r.health {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td{}>{}</td></tr>",
                esc(&c.drive),
                esc(&c.what),
                esc(&c.before),
                if c.degraded { " class=\"bad\"" } else { "" },
                esc(&c.after)
            );
        }
        out.push_str("</tbody></table>");
    }
    if !r.endurance.is_empty() {
        out.push_str("<h3>Endurance projection</h3><table><thead><tr><th class=\"l\">drive</th><th>drive writes/day at this rate</th><th>rated DWPD</th><th>years at this rate</th><th>within rating</th></tr></thead><tbody>");
        for e in &r.endurance {
            let _ =
                write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.drive),
                e.drive_writes_per_day,
                e.rated_dwpd.map(|v| format!("{v}")).unwrap_or_else(|| "–".into()),
                e.years_at_this_rate.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into()),
                e.within_rating.map(|v| if v { "yes" } else { "NO" }).unwrap_or("–")
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
}

fn text(d: &mut Doc, r: &Report) {
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
