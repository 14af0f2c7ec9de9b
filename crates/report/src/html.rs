//! The HTML report: one page, inline CSS and SVG, nothing fetched.

use std::fmt::Write;
use storcert_results::Verdict;

use super::compare::{headline, Comparison};
use super::plot::{line_chart, Series};
use super::Report;
pub use crate::markup::{esc, verdict};

const STYLE: &str = ".warn{color:#8a4b00;font-weight:bold}code.csv{word-break:break-all}body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
h1{margin-bottom:.2em}h2{border-bottom:2px solid #eee;padding-bottom:.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.chart-figure{margin:0}.legend{list-style:none;\
padding:0;margin:.2em 0 1em;display:flex;flex-wrap:wrap;gap:1.2em;font-size:12px}.swatch{display:inline-block;\
width:16px;height:3px;margin-right:5px;vertical-align:middle}.swatch.limit{background:#999}\
.swatch.mark{background:#ffa000}table.chart-table caption{text-align:left;font-weight:bold}#provenance.unverified{border:3px solid #8a0b0b;color:#8a0b0b;\
font-weight:bold;padding:.4em .6em}#provenance.verified{color:#075e07}.verdict{font-weight:bold;padding:1px 6px;border-radius:3px}\
.v-pass{background:#d7f5d7;color:#075e07}.v-fail{background:#fbd5d5;color:#8a0b0b}\
.v-incomplete,.v-untested,.v-interrupted{background:#eee;color:#555}\
.v-statistical{background:#eef7ee;color:#075e07;border:1px dashed #075e07}\
td.bad{background:#fbd5d5;color:#8a0b0b;font-weight:bold}#banner{font-size:2.2em;padding:.3em .6em;\
border-radius:6px;display:inline-block}#banner.v-pass{background:#d7f5d7}#banner.v-fail{background:#fbd5d5}\
.chart{display:block;margin:.6em 0}code{font-size:12px}#why p.about{font-weight:bold;margin:.6em 0 .1em}\
#why ul{margin-top:.1em}";

/// The report as one self-contained page: the verdict and its reasons
/// first, the comparison and spare area where there are any, then a
/// section per kind of result.
pub fn render(r: &Report) -> String {
    let s = &r.summary;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>storcert report {}</title>\
         <style>{STYLE}</style></head><body>",
        esc(&r.title)
    );
    let _ = write!(
        out,
        "<section id=\"verdict\"><h1>storcert report</h1><p>{}</p>{}<div id=\"banner\" class=\"v-{}\">{}</div>",
        esc(&r.title),
        r.provenance.line().map_or_else(String::new, |l| format!(
            "<p id=\"provenance\" class=\"{}\">{}</p>",
            if r.provenance == super::Provenance::NotVerified {
                "unverified"
            } else {
                "verified"
            },
            esc(&l)
        )),
        esc(s.verdict.as_str()),
        esc(&s.verdict.as_str().to_uppercase())
    );
    first_screen(&mut out, r);
    out.push_str("</section>");

    if super::compare::worth_showing(&r.comparison) {
        comparison(&mut out, &r.comparison, false);
    }
    for section in crate::section::SECTIONS {
        section.html(r, &mut out);
    }
    out.push_str("</body></html>\n");
    out
}

/// One line per drive with its answer, then why, per drive.
fn first_screen(out: &mut String, r: &Report) {
    let f = super::answer::first_screen(&r.summary, &r.comparison);
    if !f.drives.is_empty() {
        out.push_str(
            "<table id=\"answers\"><thead><tr><th class=\"l\">drive</th><th class=\"l\">model, serial</th>\
             <th>verdict</th><th class=\"l\">answer</th></tr></thead><tbody>",
        );
        for l in &f.drives {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&l.device),
                esc(if l.identity.is_empty() { "–" } else { &l.identity }),
                verdict(l.verdict),
                esc(&l.answer)
            );
        }
        out.push_str("</tbody></table>");
    }
    if f.why.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<div id=\"why\"><h3>{}</h3>",
        super::text::why_heading(r.summary.verdict)
    );
    for w in &f.why {
        let _ = write!(out, "<p class=\"about\">{}</p><ul>", esc(w.heading()));
        for reason in &w.reasons {
            let _ = write!(out, "<li>{}</li>", esc(reason));
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
}

/// The comparison across loads and spare area: the headline (where
/// `with_headline`: a report's first screen has it already), a plot of
/// the worst hour's % over 1 ms against load per drive and setting, and
/// the tables. Shown near the top, as it is the answer asked for.
pub fn comparison(out: &mut String, c: &Comparison, with_headline: bool) {
    use super::compare::{load_text, pct, spare_text};
    out.push_str("<section id=\"compare\"><h2>Across loads and spare area</h2>");
    if with_headline {
        out.push_str("<ul>");
        for line in headline(c) {
            let _ = write!(out, "<li>{}</li>", esc(&line));
        }
        out.push_str("</ul>");
    }
    let series: Vec<Series> = c
        .loads
        .iter()
        .map(|t| Series {
            name: storcert_util::text::printable(
                // The drive's name is cut, never the mix that tells two
                // series of one drive apart.
                &format!(
                    "{}, {}{}",
                    storcert_util::text::cut(&t.drive, 60),
                    spare_text(t.spare.as_ref()),
                    t.mix.as_ref().map_or(String::new(), |m| format!(", {m}"))
                ),
                200,
            ),
            points: {
                let mut by_load: Vec<(f64, f64)> = Vec::new();
                for p in &t.rows {
                    let Some(&w) = p.worst_pct.first() else {
                        continue;
                    };
                    match by_load.iter_mut().find(|(l, _)| *l == p.load) {
                        Some(e) => e.1 = e.1.max(w),
                        None => by_load.push((p.load, w)),
                    }
                }
                by_load
            },
        })
        .collect();
    out.push_str(&line_chart(
        "compare-plot",
        "worst hour's % of reads over 1 ms, by load",
        "load (x)",
        "% > 1 ms",
        &series,
        &[],
        &[(5.0, "5% limit (> 1 ms)")],
    ));
    for (i, t) in c.spare.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>ACT {}, {}: with and without spare area</h3><table id=\"compare-spare-{i}\"><thead><tr><th>load</th>",
            esc(&crate::compare::workload_text(&t.workload, t.mix.as_deref())),
            esc(&t.drive)
        );
        for s in &t.settings {
            let _ = write!(
                out,
                "<th>{}: max % &gt; 1 ms</th><th>verdict</th>",
                esc(&spare_text(s.as_ref()))
            );
        }
        out.push_str("</tr></thead><tbody>");
        for r in &t.rows {
            let _ = write!(out, "<tr><td>{}</td>", load_text(r.load));
            for cell in &r.cells {
                match cell {
                    Some(cell) => {
                        let _ = write!(
                            out,
                            "<td>{}</td><td>{}</td>",
                            pct(&cell.worst_pct, 0),
                            verdict(Verdict::of(cell.pass))
                        );
                    }
                    None => out.push_str("<td>not run</td><td>–</td>"),
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("<tr><th>highest passing</th>");
        for h in &t.highest_passing_load {
            let _ = write!(
                out,
                "<th>{}</th><th></th>",
                h.map(load_text).unwrap_or_else(|| "none".into())
            );
        }
        out.push_str("</tr></tbody></table>");
    }
    for (i, t) in c.loads.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>ACT {}, {}, {}</h3><table id=\"compare-loads-{i}\"><thead><tr><th>load</th><th>max % &gt; 1 ms</th>\
             <th>max % &gt; 8 ms</th><th>max % &gt; 64 ms</th><th>verdict</th><th>run</th><th class=\"l\">log</th></tr></thead><tbody>",
            esc(&crate::compare::workload_text(&t.workload, t.mix.as_deref())),
            esc(&t.drive_and_devices()),
            esc(&spare_text(t.spare.as_ref()))
        );
        for p in &t.rows {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><code>{}</code>{}</td></tr>",
                load_text(p.load),
                pct(&p.worst_pct, 0),
                pct(&p.worst_pct, 1),
                pct(&p.worst_pct, 2),
                verdict(Verdict::of(p.pass)),
                super::compare::duration_text(p.seconds),
                esc(&format!("{}: {}", p.source, p.log)),
                p.why
                    .as_ref()
                    .map(|w| format!("<br><small>{}</small>", esc(w)))
                    .unwrap_or_default()
            );
        }
        let _ = write!(
            out,
            "</tbody></table><p>Highest passing load: <b>{}</b> ({}).</p>",
            t.highest_passing_load
                .map(load_text)
                .unwrap_or_else(|| "none".into()),
            if t.highest_passing_load.is_some() {
                "at and below it, every run passed"
            } else {
                "no load passed"
            }
        );
        for n in &t.notes {
            let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
        }
    }
    for l in &c.left_out {
        let _ = write!(out, "<p class=\"note\">left out: {}</p>", esc(l));
    }
    out.push_str("</section>");
}

/// A page of its own for `storcert compare --format html`.
pub fn comparison_page(c: &Comparison) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>storcert compare</title>\
         <style>{STYLE}</style></head><body><h1>storcert compare</h1><p>{}</p>",
        esc(&c.sources.join(", "))
    );
    comparison(&mut out, c, true);
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// The points of the first polyline drawn after `id`'s grid (the
    /// first series: circles come first, then the line).
    fn series_points(html: &str, id: &str) -> Vec<(f64, f64)> {
        let svg = &html[html
            .find(&format!("<svg id=\"{id}\""))
            .expect("chart present")..];
        let svg = &svg[..svg.find("</svg>").unwrap()];
        // The thick (width 2) polylines are the data; thin ones the mesh.
        let line = svg
            .split("<polyline")
            .skip(1)
            .find(|p| p.contains("stroke-width=\"2\""))
            .expect("a data line");
        let pts = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        pts.split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn the_timeline_plot_draws_the_run_s_seconds() {
        let log = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/storcert-us-20x.log"
        ))
        .unwrap();
        // A known timeline: p99 of 0.2 ms, one second of 9 ms at t = 4.
        let mut tl = String::new();
        for t in 1..=8u64 {
            let p99 = if t == 4 { 9000.0 } else { 200.0 };
            tl += &format!(
                "{{\"t\":{t},\"reads\":100,\"writes\":50,\"large_block_reads\":1,\"large_block_writes\":1,\
                 \"read_p50_us\":100.0,\"read_p99_us\":{p99},\"read_p999_us\":{p99},\"read_max_us\":{p99},\
                 \"read_pct_over_1ms\":0.0,\"read_pct_over_8ms\":0.0,\"read_pct_over_64ms\":0.0,\"max_lag_ms\":0.1}}\n"
            );
        }
        let files: BTreeMap<String, Vec<u8>> = [
            ("act/d-20x.log".to_string(), log),
            ("act/d-20x.timeline.jsonl".to_string(), tl.into_bytes()),
        ]
        .into();
        let summary = storcert_judge::summary::Summary::default();
        let r = Report::build("t", summary, &files);
        assert_eq!(r.act.len(), 1);
        assert_eq!(r.act[0].timeline.len(), 8);
        let html = render(&r);
        let pts = series_points(&html, "act-timeline-0");
        assert_eq!(pts.len(), 8, "{pts:?}");
        // x grows with t; the highest point (smallest SVG y) is t = 4.
        assert!(pts.windows(2).all(|w| w[1].0 > w[0].0));
        let top = pts
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .unwrap()
            .0;
        assert_eq!(top, 3);
        let flat: Vec<f64> = pts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 3)
            .map(|(_, p)| p.1)
            .collect();
        assert!(
            flat.windows(2).all(|w| (w[0] - w[1]).abs() < 0.5),
            "the other seconds are level"
        );
        // The per-slice chart and the ACT table are there, failing cells
        // (none here) unmarked.
        // One slice: a table of its figures, not a lone dot.
        assert!(html.contains("<table id=\"act-slices-0\" class=\"chart-table\">"));
        assert!(html.contains("<table class=\"act\""));
        assert!(!html.contains("class=\"bad\""));
    }

    #[test]
    fn failing_act_cells_are_marked() {
        let log = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/storcert-ms-2dev.log"
        ))
        .unwrap();
        let files: BTreeMap<String, Vec<u8>> = [("act/x.log".to_string(), log)].into();
        let r = Report::build("t", storcert_judge::summary::Summary::default(), &files);
        assert!(!r.act[0].analysis.verdict.pass);
        let html = render(&r);
        // 30.80% > 1 ms, 28.70% > 8 ms, 12.97% > 64 ms: all three rules.
        for v in ["30.80", "28.70", "12.97"] {
            assert!(html.contains(&format!("<td class=\"bad\">{v}</td>")), "{v}");
        }
        assert!(html.contains("<td>") && !html.contains("class=\"bad\">0.00"));
    }
}
