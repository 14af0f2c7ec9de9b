//! Each ACT log judged (`act-analysis`): its slices, failures, and plots of its slices and timeline.

use std::fmt::Write;

use crate::markup::{esc, verdict};
use crate::markup::{fence, Doc};
use crate::plot::{line_chart, Series};
use crate::ActSection;
use crate::Report;
use storcert_judge::act::timeline::Second;
use storcert_results::Verdict;

pub struct Act;

impl super::Section for Act {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// Each ACT log's slices, failures and plots.
fn html(out: &mut String, r: &Report) {
    out.push_str("<section id=\"act\"><h2>ACT</h2>");
    if r.act.is_empty() {
        out.push_str("<p>No ACT run in these results.</p>");
    }
    for (i, a) in r.act.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>{} {} — {}</h3><p><code>{}</code>; ACT {}, {} of {} s. Pass: every slice &lt; 5% &gt; 1 ms, &lt; 1% &gt; 8 ms, &lt; 0.1% &gt; 64 ms.</p>",
            esc(&a.devices.join(", ")),
            a.load.map(|l| format!("at {l}x")).unwrap_or_default(),
            badge(r, a),
            esc(&a.path),
            esc(&a.analysis.act_version),
            storcert_util::text::counted(
                a.analysis.histograms.first().map_or(0, |h| h.slices.len()),
                "slice"
            ),
            a.analysis.slice_seconds
        );
        act_table(out, a, i);
        // What the verdict rests on beside its slices (a log cut short, a
        // run stopped once decided, by statistics too): the text and
        // Markdown reports say it, and a FAIL over passing slices needs it.
        for p in &a.analysis.verdict.problems {
            let _ = write!(out, "<p class=\"failure\">{}</p>", esc(p));
        }
        for f in &a.analysis.verdict.failures {
            let _ = write!(
                out,
                "<p class=\"failure\">slice {} of {}: {:.2}% {}</p>",
                f.slice,
                esc(&f.histogram),
                f.percent,
                esc(&f.rule)
            );
        }
        if let Some(h) = a.analysis.histograms.first() {
            let micro = a.analysis.scale.contains("us") || a.analysis.scale.contains("micro");
            let series: Vec<Series> = h
                .thresholds
                .iter()
                .enumerate()
                .filter_map(|(ci, t)| rule_limit(*t, micro).map(|(_, name)| (ci, name)))
                .map(|(ci, name)| Series {
                    name: format!("% {name}"),
                    points: h
                        .slices
                        .iter()
                        .filter_map(|row| Some((row.slice as f64, *row.overs.get(ci)?)))
                        .collect(),
                })
                .collect();
            out.push_str(&line_chart(
                &format!("act-slices-{i}"),
                &format!("{}: % of reads over 1/8/64 ms per slice", h.name),
                "slice (hour)",
                "% of reads",
                &series,
                &[],
                &[(5.0, "5% limit (> 1 ms)")],
            ));
        }
        if !a.timeline.is_empty() {
            timeline_charts(out, a, i);
        }
    }
    out.push_str("</section>");
}

fn act_table(out: &mut String, a: &ActSection, idx: usize) {
    let micro = a.analysis.scale.contains("us") || a.analysis.scale.contains("micro");
    for (hi, h) in a.analysis.histograms.iter().enumerate() {
        let _ = write!(
            out,
            "<table class=\"act\" id=\"act-{idx}-{hi}\"><thead><tr><th class=\"l\">{}</th>",
            esc(&h.name)
        );
        for t in &h.thresholds {
            let label = if micro {
                format!("{:.3} ms", *t as f64 / 1000.0)
            } else {
                format!("{t} ms")
            };
            let _ = write!(out, "<th>% &gt; {label}</th>");
        }
        out.push_str("<th>rate/s</th></tr></thead><tbody>");
        for row in &h.slices {
            let _ = write!(
                out,
                "<tr><td class=\"l\">slice {} (to {} s)</td>",
                row.slice, row.end_s
            );
            for (i, v) in row.overs.iter().enumerate() {
                let failing = a.analysis.verdict.failures.iter().any(|f| {
                    f.histogram == h.name
                        && f.slice == row.slice
                        && h.thresholds
                            .get(i)
                            .and_then(|t| rule_limit(*t, micro))
                            .is_some_and(|(_, r)| f.rule.starts_with(r))
                });
                let _ = write!(
                    out,
                    "<td{}>{v:.2}</td>",
                    if failing { " class=\"bad\"" } else { "" }
                );
            }
            let _ = write!(out, "<td>{:.1}</td></tr>", row.rate);
        }
        let _ = write!(out, "<tr><td class=\"l\">avg</td>");
        for v in &h.avg {
            let _ = write!(out, "<td>{v:.2}</td>");
        }
        out.push_str("<td></td></tr><tr><td class=\"l\">max</td>");
        for v in &h.max {
            let _ = write!(out, "<td>{v:.2}</td>");
        }
        out.push_str("<td></td></tr></tbody></table>");
    }
}

/// The limit of ACT's rule at this column's edge (ms, or µs ×1024), if any.
fn rule_limit(threshold: u64, micro: bool) -> Option<(f64, &'static str)> {
    let ms = if micro { threshold / 1024 } else { threshold };
    if micro && threshold % 1024 != 0 {
        return None;
    }
    match ms {
        1 => Some((5.0, "> 1 ms")),
        8 => Some((1.0, "> 8 ms")),
        64 => Some((0.1, "> 64 ms")),
        _ => None,
    }
}

/// An ACT run's timeline as two plots (read p99, and the share of reads
/// over 1 ms) with its spikes marked: every second of a short run; in a
/// long one each point is a span of neighbouring seconds, drawn at its
/// worst second (so a one-second spike shows at its height however long
/// the run) with the span's mean beside it.
fn timeline_charts(out: &mut String, a: &ActSection, i: usize) {
    let tl = &a.timeline;
    let width = tl.width();
    let series = |name: &str, f: fn(&Second) -> f64| -> Vec<Series> {
        let worst = tl.points().iter().map(|p| (p.t() as f64, f(&p.max)));
        if width == 1 {
            return vec![Series {
                name: name.into(),
                points: worst.collect(),
            }];
        }
        let mean = tl.points().iter().map(|p| (p.t() as f64, f(&p.mean())));
        vec![
            Series {
                name: format!("{name}, worst second"),
                points: worst.collect(),
            },
            Series {
                name: format!("{name}, mean"),
                points: mean.collect(),
            },
        ]
    };
    let per = if width == 1 {
        "per second".to_string()
    } else {
        format!(
            "per {width} s ({} seconds in {} points)",
            tl.seconds(),
            tl.len()
        )
    };
    let marks: Vec<f64> = a
        .spikes
        .as_ref()
        .map(|s| s.seconds.iter().map(|&t| t as f64).collect())
        .unwrap_or_default();
    // One unit per axis: the p99 in ms, the share over 1 ms in %.
    out.push_str(&line_chart(
        &format!("act-timeline-{i}"),
        &format!("read latency p99 {per}; spikes marked"),
        "seconds",
        "p99 (ms)",
        &series("read p99", |s| s.read_p99_us / 1000.0),
        &marks,
        &[],
    ));
    out.push_str(&line_chart(
        &format!("act-timeline-over-{i}"),
        &format!("reads over 1 ms {per}; spikes marked"),
        "seconds",
        "% of reads",
        &series("% of reads > 1 ms", |s| s.read_pct_over_1ms),
        &marks,
        &[(5.0, "5% (the hourly limit)")],
    ));
    if let Some(sp) = &a.spikes {
        let _ = write!(
            out,
            "<p class=\"spikes\">{} spike {}{}</p>",
            sp.seconds.len(),
            if width == 1 {
                "second(s)".to_string()
            } else {
                format!("span(s) of {width} s")
            },
            sp.period_s
                .map(|p| format!(", recurring every {p} s"))
                .unwrap_or_default()
        );
    }
}

/// The log's verdict on ACT's rule, but for a search trial that passed by
/// statistics: its log, cut short once statistics put every rule under
/// its limit, fails ACT's rule as a log, yet the trial steered the search
/// as a pass. FAIL there read as a failed trial.
fn badge(r: &Report, a: &ActSection) -> String {
    match passed_by_statistics(r, a) {
        true => "<span class=\"verdict v-statistical\" title=\"a pass for the search's steps, not on ACT's rule: the log is cut short\">PASSING BY STATISTICS</span>".into(),
        false => verdict(Verdict::of(a.analysis.verdict.pass)),
    }
}

/// Whether `a` is the log of a search trial passing by statistics: a
/// search's trials are in the folder named after its JSON (the search
/// names each log by the path it was written to; the bundle, by its own),
/// so a run's phases, each with a search of the same drive, never match
/// each other's (found in review).
fn passed_by_statistics(r: &Report, a: &ActSection) -> bool {
    r.searches.iter().any(|(path, s)| {
        let Some(dir) = path.strip_suffix(".json") else {
            return false;
        };
        s.trials.iter().any(|t| {
            t.result == storcert_results::act::PASSING_BY_STATISTICS
                && t.log.rsplit('/').next().is_some_and(|file| {
                    a.path.strip_prefix(dir).and_then(|p| p.strip_prefix('/')) == Some(file)
                })
        })
    })
}

fn text(d: &mut Doc, r: &Report) {
    for a in &r.act {
        let title = format!(
            "ACT {} {}",
            d.o(&a.devices.join(", ")),
            a.load.map(|l| format!("at {l}x")).unwrap_or_default()
        );
        d.heading(2, &title);
        if passed_by_statistics(r, a) {
            d.out += "A search trial passing by statistics: a pass for the search's steps, not on ACT's rule (its log is cut short, so the verdict below is FAIL).\n\n";
        }
        // The analysis as act_latency.py prints it (names from the log
        // inside): in a fence it cannot close.
        let text = a.analysis.text.clone() + &a.analysis.verdict_text();
        let f = if d.md { fence(&text) } else { String::new() };
        let _ = writeln!(d.out, "{f}");
        d.out += &text;
        let _ = writeln!(d.out, "{f}\n");
    }
}
