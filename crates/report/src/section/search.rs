//! Each load search (`act-search` results): its answer, its trials in the
//! order they ran (which drive ran which load where loads ran side by
//! side, and how busy the machine's CPUs were), and the time early
//! decisions saved. The trials' logs are in the ACT section.

use std::fmt::Write;

use crate::markup::{esc, Doc};
use crate::Report;
use storcert_results::act::{SearchResult, Trial};

pub struct Search;

impl super::Section for Search {
    fn html(&self, r: &Report, out: &mut String) {
        if r.searches.is_empty() {
            return;
        }
        out.push_str("<section id=\"search\"><h2>Load search</h2>");
        for (path, s) in &r.searches {
            let _ = write!(out, "<h3><code>{}</code></h3>", esc(path));
            for line in lines(r, path, s) {
                let _ = write!(out, "<p>{}</p>", esc(&line));
            }
            // Words read from the left, figures from the right.
            let header = header(s);
            let class = |h: &str| match TEXT_COLUMNS.contains(&h) {
                true => " class=\"l\"",
                false => "",
            };
            out.push_str("<table><thead><tr>");
            for h in &header {
                let _ = write!(out, "<th{}>{h}</th>", class(h));
            }
            out.push_str("</tr></thead><tbody>");
            for (i, t) in s.trials.iter().take(MAX_TRIALS).enumerate() {
                out.push_str("<tr>");
                for (h, c) in header.iter().zip(cells(s, i, t)) {
                    let _ = write!(out, "<td{}>{}</td>", class(h), esc(&c));
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>");
        }
        out.push_str("</section>");
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        if r.searches.is_empty() {
            return;
        }
        d.heading(2, "Load search");
        for (path, s) in &r.searches {
            let shown = d.o(path);
            let _ = writeln!(d.out, "{shown}:\n");
            for line in lines(r, path, s) {
                let line = d.o(&line);
                let _ = writeln!(d.out, "- {line}");
            }
            d.out.push('\n');
            let header: Vec<String> = header(s).iter().map(|h| h.to_string()).collect();
            d.row(&header);
            d.separator(header.len());
            for (i, t) in s.trials.iter().take(MAX_TRIALS).enumerate() {
                let row: Vec<String> = cells(s, i, t).iter().map(|c| d.o(c)).collect();
                d.row(&row);
            }
            d.out.push('\n');
        }
    }
}

/// The columns of words, not figures.
const TEXT_COLUMNS: [&str; 3] = ["purpose", "drive", "result"];

/// The most trials shown of one search: a search runs tens; a hostile
/// bundle's may list millions.
const MAX_TRIALS: usize = 500;

/// What a reader takes from a search before its trials: the answer (and
/// whether the summary, judging its trials' logs afresh, took it), how it
/// ran, each drive's own answer, the time early decisions saved.
fn lines(r: &Report, path: &str, s: &SearchResult) -> Vec<String> {
    let answer = |l: Option<f64>, confirmed: bool| match (l, confirmed) {
        (Some(l), true) => format!("{l}x, confirmed"),
        (Some(l), false) => format!("{l}x, not confirmed"),
        (None, _) => "no load passed".into(),
    };
    let mut lines = vec![format!(
        "Highest passing load: {}{}",
        answer(s.highest_passing_load, s.confirmed),
        if s.interrupted { " (interrupted)" } else { "" }
    )];
    // The summary names it "act-search (PATH)", PATH under the bundle's
    // results folder.
    let named = |name: &str| {
        name.strip_suffix(')')
            .and_then(|n| n.strip_suffix(path))
            .is_some_and(|n| n.ends_with('(') || n.ends_with('/'))
    };
    if let Some(t) = r.summary.tests.iter().find(|t| named(&t.name)) {
        if t.verdict == storcert_results::Verdict::Fail {
            lines.push(format!(
                "The summary does not take this answer: {}",
                t.detail
            ));
        }
    }
    if s.parallel {
        lines.push(format!(
            "Loads ran side by side on {} identical drives (model, firmware, capacity), one load per \
             drive per round; each drive confirmed on its own, and the answer is the lowest load \
             any confirmed.",
            s.drives.len()
        ));
        let own: Vec<String> = s
            .drives
            .iter()
            .take(MAX_TRIALS)
            .map(|d| {
                format!(
                    "{} {}",
                    d.drive,
                    answer(d.highest_passing_load, d.confirmed)
                )
            })
            .collect();
        lines.push(format!("Each drive's own: {}.", own.join("; ")));
    }
    if let Some(alpha) = s.statistical {
        lines.push(format!(
            "Trials could end early by statistics: at most a {} chance of each, judged on its \
             reads' latency, decided the wrong way (docs/act.md); {}",
            storcert_results::act::chance_text(alpha),
            match s.confirmed {
                true => "the confirmations ran their full length, and the answer rests on them.",
                false => "nothing was confirmed, and no load passed by statistics is an answer.",
            }
        ));
    }
    let (early, saved) = s.saved_by_early_decisions();
    if early > 0 {
        lines.push(format!(
            "{early} trial(s) stopped once their verdict was decided, {} of drive time sooner than planned.",
            storcert_util::units::duration_text(saved)
        ));
    }
    if s.trials.len() > MAX_TRIALS {
        lines.push(format!(
            "The first {MAX_TRIALS} of {} trials are shown.",
            s.trials.len()
        ));
    }
    lines
}

fn header(s: &SearchResult) -> Vec<&'static str> {
    let mut h = vec!["#", "load", "purpose"];
    if s.parallel {
        h.push("drive");
    }
    h.extend([
        "result",
        "max % > 1 ms",
        "max % > 8 ms",
        "max % > 64 ms",
        "ran",
        "CPU busy",
    ]);
    h
}

fn cells(s: &SearchResult, i: usize, t: &Trial) -> Vec<String> {
    let pct = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}"));
    let mut c = vec![
        format!("{}", i + 1),
        format!("{}x", t.load),
        t.purpose.clone(),
    ];
    if s.parallel {
        c.push(t.drive.clone().unwrap_or_default());
    }
    c.extend([
        t.result.clone(),
        pct(t.worst_pct_over_1ms),
        pct(t.worst_pct_over_8ms),
        pct(t.worst_pct_over_64ms),
        match t.planned_s {
            0 => "-".into(),
            planned => format!("{:.0} of {planned} s", t.elapsed_s),
        },
        t.cpu_busy_pct.map_or("-".into(), |c| format!("{c:.0}%")),
    ]);
    c
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use storcert_results::act::{DriveSearch, SearchResult, Trial};
    use storcert_results::Artefact;

    fn page(s: SearchResult) -> (String, String) {
        let files: BTreeMap<String, Vec<u8>> =
            [("act/search-x.json".to_string(), Artefact::from(s).to_json())].into();
        let r = crate::Report::build("t", Default::default(), &files);
        (crate::html::render(&r), crate::text::markdown(&r))
    }

    fn trial(load: f64, drive: Option<&str>) -> Trial {
        Trial {
            load,
            purpose: "escalate".into(),
            result: "passing".into(),
            log: "act/search-x/trial-01-1x.log".into(),
            drive: drive.map(String::from),
            planned_s: 60,
            elapsed_s: 12.0,
            cpu_busy_pct: Some(37.4),
            decided: true,
            ..Default::default()
        }
    }

    #[test]
    fn side_by_side_says_which_drive_ran_which_load_and_escapes_what_the_bundle_says() {
        let hostile = "<img src=x onerror=alert(1)>|\nrow";
        let (html, md) = page(SearchResult {
            highest_passing_load: Some(1.0),
            confirmed: true,
            parallel: true,
            trials: vec![trial(1.0, Some(hostile)), trial(2.0, Some("/dev/sdc"))],
            drives: vec![DriveSearch {
                drive: hostile.into(),
                highest_passing_load: Some(1.0),
                confirmed: true,
            }],
            ..Default::default()
        });
        assert!(
            html.contains("Loads ran side by side on 1 identical drives"),
            "{html}"
        );
        assert!(html.contains("<td class=\"l\">/dev/sdc</td>"), "{html}");
        assert!(html.contains("<td>12 of 60 s</td><td>37%</td>"), "{html}");
        assert!(html.contains(
            "2 trial(s) stopped once their verdict was decided, 1 min 36 s of drive time sooner"
        ));
        assert!(!html.contains("<img src=x"), "{html}");
        // A '|' or a line break in a drive's name adds no cell or row.
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| 1 |")).collect();
        assert_eq!(rows.len(), 1, "{md}");
        assert_eq!(rows[0].matches(" | ").count(), 9, "{}", rows[0]);
    }

    #[test]
    fn a_search_on_one_drive_has_no_drive_column_and_a_long_one_is_cut() {
        let many: Vec<Trial> = (0..super::MAX_TRIALS + 7)
            .map(|_| trial(1.0, None))
            .collect();
        let (html, _) = page(SearchResult {
            trials: many,
            ..Default::default()
        });
        assert!(!html.contains("<th class=\"l\">drive</th>"), "{html}");
        assert!(html.contains("Highest passing load: no load passed"));
        assert!(html.contains(&format!(
            "The first {} of {} trials are shown.",
            super::MAX_TRIALS,
            super::MAX_TRIALS + 7
        )));
        assert_eq!(
            html.matches("<td>escalate").count() + html.matches("<td class=\"l\">escalate").count(),
            super::MAX_TRIALS
        );
    }

    #[test]
    fn statistical_trials_are_named_as_such_with_their_chance_of_error() {
        let mut early = trial(1.0, None);
        early.result = storcert_results::act::PASSING_BY_STATISTICS.into();
        let (html, md) = page(SearchResult {
            statistical: Some(0.001),
            trials: vec![early],
            ..Default::default()
        });
        for page in [&html, &md] {
            assert!(
                page.contains(
                    "Trials could end early by statistics: at most a 0.1% chance of each"
                ),
                "{page}"
            );
            assert!(
                page.contains(
                    "nothing was confirmed, and no load passed by statistics is an answer"
                ),
                "{page}"
            );
            assert!(page.contains("passing by statistics"), "{page}");
        }
        let (html, _) = page(SearchResult::default());
        assert!(!html.contains("by statistics"), "{html}");
    }
}
