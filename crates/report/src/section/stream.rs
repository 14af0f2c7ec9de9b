//! Each streaming run (`stream`): its passes and their bandwidth.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::Doc;
use crate::plot::{line_chart, Series};
use crate::Report;

pub struct Stream;

impl super::Section for Stream {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// Each streaming run's passes and bandwidth per second.
fn html(out: &mut String, r: &Report) {
    out.push_str("<section id=\"stream\"><h2>Streaming</h2>");
    if r.streams.is_empty() {
        out.push_str("<p>No streaming run in these results.</p>");
    }
    for (i, st) in r.streams.iter().enumerate() {
        let _ = write!(out, "<p>{}: {} (<code>{}</code>)</p><table><thead><tr><th class=\"l\">pass</th><th>bytes</th><th>aggregate bandwidth</th></tr></thead><tbody>", esc(&st.targets.join(", ")), esc(&st.how), esc(&st.path));
        for p in &st.passes {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}/s</td></tr>",
                esc(&p.name),
                storcert_util::units::decimal_bytes(p.bytes),
                storcert_util::units::decimal_bytes(p.aggr_bw_bytes as u64)
            );
        }
        out.push_str("</tbody></table>");
        let series: Vec<Series> = st
            .passes
            .iter()
            .map(|p| Series {
                name: p.name.clone(),
                points: p.bw_per_second.iter().map(|(s, b)| (*s, b / 1e6)).collect(),
            })
            .collect();
        out.push_str(&line_chart(
            &format!("stream-bw-{i}"),
            "bandwidth per second",
            "seconds",
            "MB/s",
            &series,
            &[],
            &[],
        ));
    }
    out.push_str("</section>");
}

fn text(d: &mut Doc, r: &Report) {
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
