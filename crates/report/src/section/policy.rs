//! The policy's findings (`policy`), or why there are none.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::Report;

pub struct Policy;

impl super::Section for Policy {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// The policy's findings, or why there are none.
fn html(out: &mut String, r: &Report) {
    out.push_str("<section id=\"policy\"><h2>Policy findings</h2>");
    if r.findings.is_empty() {
        out.push_str(if r.policy_checked {
            "<p id=\"policy-note\">The policy was checked: nothing found.</p>"
        } else {
            "<p id=\"policy-note\">No policy was checked (the run had no policy stage).</p>"
        });
    } else {
        out.push_str("<table><thead><tr><th class=\"l\">severity</th><th class=\"l\">device</th><th class=\"l\">check</th>\
                      <th class=\"l\">expected</th><th class=\"l\">found</th></tr></thead><tbody>");
        for f in &r.findings {
            let _ = write!(
                out,
                "<tr><td class=\"l{}\">{}</td><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                if f.severity == storcert_results::policy::Severity::Fail { " bad" } else { "" },
                esc(f.severity.as_str()),
                esc(&f.device),
                if f.machine { " <small>(the machine, not under test)</small>" } else { "" },
                esc(&f.check),
                esc(&f.expected),
                esc(&f.actual)
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
}

fn text(d: &mut Doc, r: &Report) {
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
