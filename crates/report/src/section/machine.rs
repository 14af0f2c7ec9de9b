//! The machine under test: the summary's identity and the recorded system (`system`).

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::Report;

pub struct Machine;

impl super::Section for Machine {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// The machine: the summary's identity, and the system's where recorded.
fn html(out: &mut String, r: &Report) {
    let s = &r.summary;
    out.push_str("<section id=\"machine\"><h2>Machine</h2><table>");
    let m = &s.machine;
    let mut row = |k: &str, v: Option<String>| {
        let _ = write!(
            out,
            "<tr><th class=\"l\">{k}</th><td class=\"l\">{}</td></tr>",
            esc(v.as_deref().unwrap_or("–"))
        );
    };
    row("vendor", m.vendor.clone());
    row("product", m.product.clone());
    row("serial", m.serial.clone());
    row("UUID", m.uuid.clone());
    row("host", m.hostname.clone());
    if let Some(sys) = &r.system {
        row(
            "BIOS",
            sys.dmi
                .bios_version
                .clone()
                .map(|v| format!("{} {v}", sys.dmi.bios_vendor.clone().unwrap_or_default())),
        );
        row(
            "CPU",
            sys.cpu_model
                .clone()
                .map(|c| format!("{c} ({} threads)", sys.cpu_count)),
        );
        row(
            "memory",
            sys.memory_bytes.map(storcert_util::units::decimal_bytes),
        );
        row("kernel", sys.kernel.clone());
        row("storcert", Some(sys.storcert_version.clone()));
        row("image", sys.image_build_id.clone());
    }
    out.push_str("</table></section>");
}

/// The machine's line.
fn text(d: &mut Doc, r: &Report) {
    let m = &r.summary.machine;
    let machine = format!(
        "Machine: {} {}, serial {}, host {}\n",
        d.o(m.vendor.as_deref().unwrap_or("–")),
        d.o(m.product.as_deref().unwrap_or("")),
        d.o(m.serial.as_deref().unwrap_or("–")),
        d.o(m.hostname.as_deref().unwrap_or("–"))
    );
    let _ = writeln!(d.out, "{machine}");
}
