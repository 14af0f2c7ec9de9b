//! One row a drive (the summary over `targets` and `inventory`): identity, verdict, the highest ACT load passed.

use std::fmt::Write;

use crate::markup::Doc;
use crate::markup::{esc, verdict};
use crate::Report;

pub struct Drives;

impl super::Section for Drives {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// One row a drive: identity, verdict, the highest ACT load passed, why.
fn html(out: &mut String, r: &Report) {
    let s = &r.summary;
    out.push_str("<section id=\"drives\"><h2>Drives</h2><table><thead><tr><th class=\"l\">device</th><th class=\"l\">model</th>\
                  <th class=\"l\">serial</th><th class=\"l\">WWN</th><th class=\"l\">firmware</th><th>verdict</th>\
                  <th>ACT passed</th></tr></thead><tbody>");
    for d in &s.drives {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\"><code>{}</code></td>\
             <td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.device),
            esc(d.model.as_deref().unwrap_or("–")),
            esc(d.serial.as_deref().unwrap_or("–")),
            esc(d.wwn.as_deref().unwrap_or("–")),
            esc(d.firmware.as_deref().unwrap_or("–")),
            verdict(d.verdict),
            d.act_load_passed.map(|l| format!("{l}x")).unwrap_or_else(|| "–".into()),
        );
    }
    out.push_str("</tbody></table></section>");
}

/// One row per drive.
fn text(d: &mut Doc, r: &Report) {
    let s = &r.summary;
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
