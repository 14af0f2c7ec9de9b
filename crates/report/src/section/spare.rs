//! The spare area storcert provisioned (`provision` results): its partition, the factory spare and their total, per drive.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::Report;

pub struct Spare;

impl super::Section for Spare {
    fn html(&self, r: &Report, out: &mut String) {
        if !r.spare.is_empty() {
            html(out, &r.spare);
        }
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// The spare area of every provisioned drive: storcert's partition, the
/// factory spare the policy named, and their total.
fn html(out: &mut String, spare: &[storcert_results::provision::ProvisionResult]) {
    out.push_str(
        "<section id=\"spare\"><h2>Spare area (over-provisioning)</h2><table><thead><tr>\
         <th class=\"l\">drive</th><th class=\"l\">partition</th><th>partition size</th><th>spare</th>\
         <th>factory spare</th><th>total spare</th></tr></thead><tbody>",
    );
    for p in spare {
        let [drive, part, size, spare, factory, total] = crate::spare_cells(p);
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{size}</td><td>{spare}</td><td>{factory}</td><td>{total}</td></tr>",
            esc(&drive),
            esc(&part),
        );
    }
    out.push_str("</tbody></table></section>");
}

fn text(d: &mut Doc, r: &Report) {
    if r.spare.is_empty() {
        return;
    }
    d.heading(2, "Spare area (over-provisioning)");
    for p in &r.spare {
        let [drive, part, size, spare, factory, total] = crate::spare_cells(p).map(|c| d.o(&c));
        let _ = writeln!(
            d.out,
            "- {drive}: partition {part} of {size}, spare {spare}, factory spare {factory}, total {total}"
        );
    }
    d.out.push('\n');
}
