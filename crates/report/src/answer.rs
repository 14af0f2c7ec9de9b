//! The report's first screen: the verdict, one line per drive with its
//! answer (the highest ACT load it passed at each spare setting, or why
//! none), then why, per drive, each reason once.

use storcert_judge::summary::names_same;
use storcert_results::summary::{DriveVerdict, Summary};
use storcert_results::Verdict;

use super::compare::{load_text, spare_text, workload_text, Comparison, LoadTable};

/// One drive's line on the first screen.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveLine {
    pub device: String,
    /// "model, serial S1" where the run named them.
    pub identity: String,
    pub verdict: Verdict,
    /// "ACT storage, no spare partition: highest passing load 40x".
    pub answer: String,
}

/// The reasons of one drive, or of the run as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Why {
    /// The drive's device; None for what is no one drive's (typed, so a
    /// drive whose path reads "the run" is not taken for the run).
    pub drive: Option<String>,
    pub reasons: Vec<String>,
}

impl Why {
    /// The group's heading: the drive, or the run as a whole.
    pub fn heading(&self) -> &str {
        self.drive.as_deref().unwrap_or("the run as a whole")
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct FirstScreen {
    pub drives: Vec<DriveLine>,
    pub why: Vec<Why>,
}

/// The first screen of a report on `s`, with `comparison`'s answers.
pub fn first_screen(s: &Summary, comparison: &Comparison) -> FirstScreen {
    let drives = s
        .drives
        .iter()
        .map(|d| DriveLine {
            device: d.device.clone(),
            identity: identity(d),
            verdict: d.verdict,
            answer: answer(d, comparison),
        })
        .collect();
    let mut why: Vec<Why> = s
        .drives
        .iter()
        .filter(|d| !d.reasons.is_empty())
        .map(|d| Why {
            drive: Some(d.device.clone()),
            reasons: once(&d.reasons),
        })
        .collect();
    let run = run_reasons(s);
    if !run.is_empty() {
        why.push(Why {
            drive: None,
            reasons: run,
        });
    }
    FirstScreen { drives, why }
}

fn identity(d: &DriveVerdict) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &d.model {
        parts.push(m.clone());
    }
    if let Some(s) = &d.serial {
        parts.push(format!("serial {s}"));
    }
    parts.join(", ")
}

/// Each string once, in first-said order.
fn once(reasons: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in reasons {
        if !out.contains(r) {
            out.push(r.clone());
        }
    }
    out
}

/// The ACT answer per workload, mix and spare setting this drive ran;
/// else the loads the summary credits it with; else its verdict in words.
fn answer(d: &DriveVerdict, c: &Comparison) -> String {
    let tables: Vec<&LoadTable> = c
        .loads
        .iter()
        .filter(|t| t.devices.iter().any(|x| names_same(&d.device, x)))
        .collect();
    if !tables.is_empty() {
        return tables
            .iter()
            .map(|t| table_answer(t))
            .collect::<Vec<_>>()
            .join("; ");
    }
    if let Some(l) = d.act_load_passed {
        return format!("highest passing ACT load {}", load_text(l));
    }
    match d.verdict {
        Verdict::Pass => "passed every test it ran".into(),
        Verdict::Untested => "no test measured it".into(),
        _ => "failed (see below)".into(),
    }
}

/// "ACT storage, 12% spare: highest passing load 20x", or "no load
/// passed (1x failed)".
fn table_answer(t: &LoadTable) -> String {
    let what = format!(
        "ACT {}, {}",
        workload_text(&t.workload, t.mix.as_deref()),
        spare_text(t.spare.as_ref())
    );
    match t.highest_passing_load {
        Some(l) => format!("{what}: highest passing load {}", load_text(l)),
        None => match t.rows.iter().find(|p| !p.pass) {
            Some(p) => format!("{what}: no load passed ({} failed)", load_text(p.load)),
            None => format!("{what}: no load passed"),
        },
    }
}

/// The summary's reasons that are no drive's: those of a failing test
/// that names no drive (a wide run over all of them, an unreadable file)
/// and those of no test (why the run is incomplete). Matched whole, never
/// by a prefix a file's name could fake: a collision can only repeat a
/// reason, not drop one.
fn run_reasons(s: &Summary) -> Vec<String> {
    let a_drives: Vec<String> = s
        .tests
        .iter()
        .filter(|t| !t.devices.is_empty())
        .map(|t| format!("{}: {}", t.name, t.detail))
        .collect();
    once(
        &s.reasons
            .iter()
            .filter(|r| !a_drives.contains(r))
            .cloned()
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use storcert_results::summary::TestVerdict;

    fn drive(device: &str, verdict: Verdict, reasons: &[&str]) -> DriveVerdict {
        DriveVerdict {
            device: device.into(),
            model: Some("M1".into()),
            serial: Some("S1".into()),
            verdict,
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
            ..DriveVerdict::default()
        }
    }

    fn test(name: &str, devices: &[&str]) -> TestVerdict {
        TestVerdict {
            name: name.into(),
            verdict: Verdict::Fail,
            detail: "d".into(),
            devices: devices.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn reasons_are_grouped_per_drive_once_and_the_rest_are_the_runs() {
        let s = Summary {
            verdict: Verdict::Fail,
            reasons: vec![
                "act-storage 2x (a.log): d".into(),
                "act-storage 2x (w.log) all drives: d".into(),
                "unreadable (x.json): d".into(),
                // A file named to start like a drive's reason is still the
                // run's.
                "act-storage 2x (a.log): d.log) all drives: d".into(),
            ],
            drives: vec![
                drive(
                    "/dev/sda",
                    Verdict::Fail,
                    &["act-storage 2x (a.log): d", "act-storage 2x (a.log): d"],
                ),
                drive("/dev/sdb", Verdict::Pass, &[]),
            ],
            tests: vec![
                test("act-storage 2x (a.log)", &["/dev/sda"]),
                test("act-storage 2x (w.log) all drives", &[]),
                test("act-storage 2x (a.log): d.log) all drives", &[]),
            ],
            ..Summary::default()
        };
        let f = first_screen(&s, &Comparison::default());
        assert_eq!(f.drives.len(), 2);
        assert_eq!(f.drives[0].identity, "M1, serial S1");
        assert_eq!(f.drives[0].answer, "failed (see below)");
        assert_eq!(f.drives[1].answer, "passed every test it ran");
        assert_eq!(
            f.why,
            vec![
                Why {
                    drive: Some("/dev/sda".into()),
                    reasons: vec!["act-storage 2x (a.log): d".into()],
                },
                Why {
                    drive: None,
                    reasons: vec![
                        "act-storage 2x (w.log) all drives: d".into(),
                        "unreadable (x.json): d".into(),
                        "act-storage 2x (a.log): d.log) all drives: d".into(),
                    ],
                },
            ]
        );
    }

    #[test]
    fn a_drive_that_ran_act_is_answered_by_its_highest_passing_load_per_spare_setting() {
        let point = |load: f64, pass: bool| super::super::compare::Point {
            source: String::new(),
            log: String::new(),
            load,
            seconds: 0,
            worst_pct: Vec::new(),
            pass,
            why: None,
            columns: None,
        };
        let table = |spare: Option<f64>, highest: Option<f64>, rows| LoadTable {
            drive: "serial S1".into(),
            model: None,
            devices: vec!["/dev/sda".into()],
            workload: "storage".into(),
            mix: None,
            spare: spare.map(|p| super::super::compare::SpareArea {
                spare_pct: p,
                factory_spare_pct: None,
                total_spare_pct: None,
            }),
            rows,
            highest_passing_load: highest,
            notes: Vec::new(),
        };
        let c = Comparison {
            loads: vec![
                table(
                    None,
                    Some(12.0),
                    vec![point(12.0, true), point(24.0, false)],
                ),
                table(Some(12.0), None, vec![point(1.0, false)]),
            ],
            ..Comparison::default()
        };
        let d = drive("/dev/sda", Verdict::Fail, &["x: y"]);
        assert_eq!(
            answer(&d, &c),
            "ACT storage, no spare partition: highest passing load 12x; \
             ACT storage, 12% spare: no load passed (1x failed)"
        );
    }
}
