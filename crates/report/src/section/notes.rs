//! The run's notes (`run-notes`): what happened on the way, of this
//! start and earlier ones.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::Report;

pub struct Notes;

impl super::Section for Notes {
    fn html(&self, r: &Report, out: &mut String) {
        if r.notes.is_empty() {
            return;
        }
        out.push_str("<section id=\"run-notes\"><h2>Run notes</h2><ul id=\"notes\">");
        for n in &r.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul></section>");
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        if r.notes.is_empty() {
            return;
        }
        d.heading(2, "Run notes");
        for n in &r.notes {
            let n = d.o(n);
            let _ = writeln!(d.out, "- {n}");
        }
    }
}
