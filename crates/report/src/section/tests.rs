//! Every test of the summary, with its verdict and detail.

use std::fmt::Write;

use crate::markup::{esc, verdict};
use crate::Report;

pub struct Tests;

impl super::Section for Tests {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }
}

/// Every test of the summary, then the run's notes.
fn html(out: &mut String, r: &Report) {
    let s = &r.summary;
    out.push_str("<section id=\"tests\"><h2>Every test</h2><table><thead><tr><th class=\"l\">test</th><th>result</th><th class=\"l\">detail</th></tr></thead><tbody>");
    for t in &s.tests {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&t.name),
            verdict(t.verdict),
            esc(&t.detail)
        );
    }
    out.push_str("</tbody></table>");
    out.push_str("</section>");
}
