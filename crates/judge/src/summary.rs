//! The verdict of a results folder: a fold over its typed artefacts
//! (`Contents`), each judged by its own `judgement()`, then one row per
//! drive and the bundle's verdict.

use storcert_results::act::SearchResult;
use storcert_results::inventory::Inventory;
use storcert_results::run::{Journal, StageState};
use storcert_results::verdict::Judgement;
use storcert_results::{Artefact, Verdict};

use super::contents::Contents;
pub use storcert_results::summary::{DriveVerdict, Machine, Summary, TestVerdict};

pub const SCHEMA_VERSION: u32 = 1;

/// What the summary keeps of each test beside `Summary::tests` (same
/// index): a drive's row shows its own part of a test's detail, and a
/// failure several records tell (an ACT run's JSON, its log, its stage)
/// is said once.
#[derive(Default)]
struct Aside {
    /// `Judgement::per_device`.
    per_device: Vec<(String, String)>,
    /// The file judged, relative to the results (a stage's output names).
    file: Option<String>,
    /// An ACT log: judged by ACT's rule, it says how its run ended too.
    log: bool,
    /// An ACT run's JSON whose outcome its log states as well (it could
    /// not keep up, or was decided; no device errors, which only the JSON
    /// counts).
    outcome_in_log: bool,
    /// An ACT run's JSON (`act-run`).
    run_json: bool,
    /// A failed stage: the files it wrote.
    stage_outputs: Vec<String>,
    /// Another test says this one's failure (it is not a reason again).
    said_elsewhere: bool,
}

type Asides = Vec<Aside>;

fn judge(s: &mut Summary, pd: &mut Asides, name: String, j: Judgement) {
    pd.push(Aside {
        per_device: j.per_device,
        ..Aside::default()
    });
    // A test passes, fails, or measured nothing: anything else a
    // judgement can say (incomplete, interrupted) is not a pass.
    let verdict = match j.verdict {
        Verdict::Pass | Verdict::Untested => j.verdict,
        _ => Verdict::Fail,
    };
    s.tests.push(TestVerdict {
        name,
        verdict,
        detail: j.detail,
        devices: j.devices,
    });
}

/// `judge`, for a test of one file (`log`: an ACT log).
fn judge_file(s: &mut Summary, pd: &mut Asides, name: String, j: Judgement, file: &str, log: bool) {
    judge(s, pd, name, j);
    let aside = pd.last_mut().expect("just judged");
    aside.file = Some(file.to_string());
    aside.log = log;
}

/// Marks the failures another test already says, and only those two:
/// an ACT run's JSON that could not keep up or was decided, where the
/// same stage's log of the same name fails (the log ends with that
/// line); and a failed stage whose own run JSON is in the results and
/// fails (the stage failed on that outcome, which the JSON or its log
/// says). Anything else (device errors, a stage that failed before its
/// run ended, any other kind of file) is said as it was.
fn fold_repeated_failures(s: &Summary, pd: &mut Asides, journal: Option<&Journal>) {
    let failing = |i: usize| s.tests[i].verdict == Verdict::Fail;
    let index_of = |pd: &Asides, file: &str, log: bool| -> Vec<usize> {
        (0..pd.len())
            .filter(|&i| pd[i].log == log && pd[i].file.as_deref() == Some(file))
            .collect()
    };
    let stages: Vec<Vec<String>> = journal
        .map(|j| j.stages.iter().map(|st| st.outputs.clone()).collect())
        .unwrap_or_default();
    for outputs in &stages {
        for json in outputs.iter().filter(|o| o.ends_with(".json")) {
            let log = format!("{}.log", json.trim_end_matches(".json"));
            if !outputs.contains(&log) {
                continue;
            }
            let log_fails = index_of(pd, &log, true).into_iter().any(failing);
            for i in index_of(pd, json, false) {
                pd[i].said_elsewhere |= log_fails && failing(i) && pd[i].outcome_in_log;
            }
        }
    }
    for i in 0..pd.len() {
        let own_run_fails = pd[i]
            .stage_outputs
            .iter()
            .filter(|o| o.ends_with(".json"))
            .any(|json| {
                (0..pd.len()).any(|k| {
                    failing(k) && pd[k].run_json && pd[k].file.as_deref() == Some(json) && {
                        let log = format!("{}.log", json.trim_end_matches(".json"));
                        pd[i].stage_outputs.contains(&log)
                    }
                })
            });
        pd[i].said_elsewhere |= own_run_fails;
    }
}

/// The run's reasons: each failing test's, once.
fn test_reasons(s: &mut Summary, pd: &Asides) {
    let reasons: Vec<String> = s
        .tests
        .iter()
        .zip(pd)
        .filter(|(t, a)| t.verdict == Verdict::Fail && !a.said_elsewhere)
        .map(|(t, _)| format!("{}: {}", t.name, t.detail))
        .collect();
    s.reasons.extend(reasons);
}

fn reach(s: &mut Summary, devices: &[String], load: f64) {
    for d in devices {
        let e = s.loads_reached.entry(d.clone()).or_insert(load);
        *e = e.max(load);
    }
}

/// The devices of a search: those of its trials' logs.
fn search_devices(search: &SearchResult, c: &Contents) -> Vec<String> {
    let mut devices: Vec<String> = Vec::new();
    for t in &search.trials {
        for (log, a) in c.analyses() {
            if same_log(&log, &t.log) {
                for d in &a.devices {
                    if !devices.contains(d) {
                        devices.push(d.clone());
                    }
                }
            }
        }
    }
    devices
}

/// A stage that failed outright (no result file to judge) fails the run;
/// its note says why.
fn failed_stages(s: &mut Summary, pd: &mut Asides, j: &Journal, targets: &[String]) {
    for st in j.stages.iter().filter(|st| st.state == StageState::Failed) {
        let devices = match &st.devices {
            Some(devices) => devices.clone(),
            // A journal of an older storcert: a stage of one drive ends
            // with the drive's label.
            None => targets
                .iter()
                .filter(|t| st.id.ends_with(t.rsplit('/').next().unwrap_or(t)))
                .cloned()
                .collect(),
        };
        let note = if st.note.is_empty() {
            "failed".to_string()
        } else {
            st.note.clone()
        };
        judge(
            s,
            pd,
            format!("stage {}", st.id),
            Judgement {
                per_device: Vec::new(),
                verdict: Verdict::Fail,
                detail: note,
                devices,
            },
        );
        pd.last_mut().expect("just judged").stage_outputs = st.outputs.clone();
    }
}

/// The summary of `c` for `machine`.
pub fn summarise(machine: Machine, c: &Contents) -> Summary {
    let mut s = Summary {
        schema_version: SCHEMA_VERSION,
        machine,
        configuration: c.configuration.clone(),
        ..Summary::default()
    };
    let mut pd = Asides::new();
    let run = judge_items(&mut s, &mut pd, c);
    judge_searches(&mut s, &mut pd, c);
    judge_act_logs(&mut s, &mut pd, c);
    judge_unreadable(&mut s, &mut pd, c);
    if let Some(j) = run.journal {
        failed_stages(
            &mut s,
            &mut pd,
            j,
            run.targets.as_deref().unwrap_or_default(),
        );
    }
    fold_repeated_failures(&s, &mut pd, run.journal);
    test_reasons(&mut s, &pd);
    s.drives = drive_verdicts(&s, &pd, run.inventory, run.targets.as_deref());
    s.verdict = overall_verdict(&mut s, &run);
    s
}

/// What a run's own records say: its inventory, the drives it set out to
/// test, its journal.
struct RunRecords<'c> {
    inventory: Option<&'c Inventory>,
    targets: Option<Vec<String>>,
    journal: Option<&'c Journal>,
}

/// Judges every artefact that is a test on its own, and keeps the run's
/// records (one of each: a second is a failure, not guessed between).
fn judge_items<'c>(s: &mut Summary, pd: &mut Asides, c: &'c Contents) -> RunRecords<'c> {
    let mut inventory = None;
    let mut targets: Option<Vec<String>> = None;
    let mut journal = None;
    let mut seen = std::collections::BTreeSet::new();
    for item in &c.items {
        let path = &format!("{}{}", c.prefix, item.path);
        match &item.artefact {
            // Judged after the others, with the logs of its trials.
            Artefact::ActSearch(_) => {}
            // One run has one of each: a second one is not guessed between.
            Artefact::Inventory(_) | Artefact::Targets(_) | Artefact::Journal(_)
                if !seen.insert(item.artefact.kind()) =>
            {
                judge(
                    s,
                    pd,
                    format!("duplicate ({path})"),
                    Judgement {
                        per_device: Vec::new(),
                        verdict: Verdict::Fail,
                        detail: format!("a second {} in the results", item.artefact.kind()),
                        devices: Vec::new(),
                    },
                );
            }
            Artefact::Inventory(inv) => inventory = Some(inv),
            Artefact::Targets(t) => {
                targets = Some(t.targets.iter().map(|t| t.path.clone()).collect())
            }
            Artefact::Journal(j) => journal = Some(j),
            // Every other kind that is a test on its own says so itself.
            other => {
                if let Some((name, j)) = other.judgement() {
                    judge_file(s, pd, format!("{name} ({path})"), j, &item.path, false);
                    if let Artefact::ActRun(r) = other {
                        use storcert_results::act::Outcome;
                        let aside = pd.last_mut().expect("just judged");
                        aside.run_json = true;
                        aside.outcome_in_log = matches!(
                            r.outcome,
                            Outcome::CouldNotKeepUp { .. } | Outcome::Decided { .. }
                        ) && r.device_errors().is_empty();
                    }
                }
            }
        }
    }
    RunRecords {
        inventory,
        targets,
        journal,
    }
}

/// Each ACT search, judged with the logs of its trials.
fn judge_searches(s: &mut Summary, pd: &mut Asides, c: &Contents) {
    for item in &c.items {
        if let Artefact::ActSearch(r) = &item.artefact {
            let devices = search_devices(r, c);
            // A search on the null engine (storcert's own test) qualifies
            // no drive.
            let null = c.analyses().any(|(log, a)| {
                a.engine.as_deref() == Some(storcert_results::act::NULL_ENGINE)
                    && r.trials.iter().any(|t| same_log(&log, &t.log))
            });
            let broken = search_claims(r, c);
            let j = if null {
                storcert_results::act::null_engine_judgement(devices)
            } else if let Some(why) = &broken {
                Judgement {
                    verdict: Verdict::Fail,
                    detail: why.clone(),
                    devices,
                    per_device: Vec::new(),
                }
            } else {
                r.judgement(devices)
            };
            if let (Some(l), false, None) = (r.highest_passing_load, null, &broken) {
                reach(s, &j.devices, l);
            }
            judge(s, pd, format!("act-search ({}{})", c.prefix, item.path), j);
        }
    }
}

/// The order ACT runs are listed in, everywhere: by folder (a phase, a
/// search), then drives, then load in numeric order (1x before 10x, which
/// their file names sort the other way), then name. Each is (path,
/// drives, load).
pub fn act_run_order(
    (x, x_devices, x_load): (&str, &[String], Option<f64>),
    (y, y_devices, y_load): (&str, &[String], Option<f64>),
) -> std::cmp::Ordering {
    let folder = |p: &str| p.rfind('/').map_or("", |i| &p[..i]).to_string();
    let load = |l: Option<f64>| l.unwrap_or(f64::INFINITY);
    folder(x)
        .cmp(&folder(y))
        .then_with(|| x_devices.cmp(y_devices))
        .then_with(|| load(x_load).total_cmp(&load(y_load)))
        .then_with(|| x.cmp(y))
}

/// The ACT logs in [`act_run_order`]: the order their tests and reasons
/// are listed in.
fn analyses_in_load_order(c: &Contents) -> Vec<(String, &storcert_results::act::LogAnalysis)> {
    let mut logs: Vec<_> = c.analyses().collect();
    logs.sort_by(|(x, a), (y, b)| act_run_order((x, &a.devices, a.load), (y, &b.devices, b.load)));
    logs
}

/// Each ACT log that is not a search's trial: a run over several drives
/// judges each drive on its own share.
fn judge_act_logs(s: &mut Summary, pd: &mut Asides, c: &Contents) {
    // A search's trial logs are its own business (failing the loads above
    // the highest passing one is how a search works).
    let owned: Vec<&str> = c
        .items
        .iter()
        .filter_map(|i| match &i.artefact {
            Artefact::ActSearch(r) => Some(r),
            _ => None,
        })
        .flat_map(|r| r.trials.iter().map(|t| t.log.as_str()))
        .collect();
    for (log, a) in analyses_in_load_order(c) {
        // Only a trial's own log (named as storcert names trials) is the
        // search's business; any other log is judged on its own.
        if is_trial_log(&log) && owned.iter().any(|o| same_log(&log, o)) {
            continue;
        }
        let kind = if a.workload == "index" {
            "act-index"
        } else {
            "act-storage"
        };
        let name = format!("{kind} {} ({}{log})", a.load_text(), c.prefix);
        let mut j = a.judgement();
        if !a.per_device.is_empty() && j.verdict != Verdict::Untested {
            // A run over several drives: each drive is judged on its own
            // share, and ACT's rule over all of them is the run's (it
            // fails the bundle, not one drive).
            for d in &a.per_device {
                let own = if a.engine.as_deref() == Some(storcert_results::act::NULL_ENGINE) {
                    storcert_results::act::null_engine_judgement(vec![d.device.clone()])
                } else {
                    a.share_judgement(d)
                };
                if let (Verdict::Pass, Some(l), true) = (own.verdict, a.load, a.standard_mix()) {
                    reach(s, &own.devices, l);
                }
                judge_file(s, pd, format!("{name} {}", d.device), own, &log, true);
            }
            j.devices = Vec::new();
            judge_file(s, pd, format!("{name} all drives"), j, &log, true);
            continue;
        }
        // A load at another read/write mix is on another scale.
        if let (Verdict::Pass, Some(l), true) = (j.verdict, a.load, a.standard_mix()) {
            reach(s, &j.devices, l);
        }
        judge_file(s, pd, name, j, &log, true);
    }
}

/// The unreadable files named one by one, then how many more: every one
/// fails the run.
fn judge_unreadable(s: &mut Summary, pd: &mut Asides, c: &Contents) {
    let more = (c.more_unreadable > 0).then(|| {
        (
            format!("{} more files", c.more_unreadable),
            format!(
                "not named one by one: the first {} are",
                crate::contents::NAMED_UNREADABLE
            ),
        )
    });
    let named = c
        .unreadable
        .iter()
        .map(|(path, why)| (format!("{}{path}", c.prefix), why.clone()));
    for (what, why) in named.chain(more) {
        judge(
            s,
            pd,
            format!("unreadable ({what})"),
            Judgement {
                per_device: Vec::new(),
                verdict: Verdict::Fail,
                detail: why,
                devices: Vec::new(),
            },
        );
    }
}

/// Each drive's verdict: the inventory's drives (or else every device a
/// test named), less those the run did not set out to test.
fn drive_verdicts(
    s: &Summary,
    pd: &Asides,
    inventory: Option<&Inventory>,
    targets: Option<&[String]>,
) -> Vec<DriveVerdict> {
    let mut drives: Vec<DriveVerdict> = match inventory {
        Some(inv) => inv
            .disks
            .iter()
            .map(|d| DriveVerdict {
                device: d.dev_path.clone(),
                model: d.model.clone(),
                serial: d.serial.clone(),
                wwn: d.wwn.clone(),
                firmware: d.firmware.clone(),
                ..DriveVerdict::default()
            })
            .collect(),
        None => Vec::new(),
    };
    // A run names what it tested: the other disks of the machine are
    // not part of its verdict.
    if let Some(targets) = targets {
        drives.retain(|d| targets.iter().any(|t| names_same(&d.device, t)));
        for t in targets {
            if !drives.iter().any(|d| names_same(&d.device, t)) {
                drives.push(DriveVerdict {
                    device: t.clone(),
                    ..DriveVerdict::default()
                });
            }
        }
    }
    for t in &s.tests {
        for dev in &t.devices {
            if !drives.iter().any(|d| names_same(&d.device, dev)) {
                drives.push(DriveVerdict {
                    device: dev.clone(),
                    ..DriveVerdict::default()
                });
            }
        }
    }
    for d in &mut drives {
        let mine: Vec<(usize, &TestVerdict)> = s
            .tests
            .iter()
            .enumerate()
            .filter(|(_, t)| t.measured() && t.devices.iter().any(|x| names_same(&d.device, x)))
            .collect();
        // A test's own words for this drive where it has them, else its
        // whole detail; each failure once (all of them where every one is
        // said by a test of other drives).
        let failing: Vec<&(usize, &TestVerdict)> = mine
            .iter()
            .filter(|(_, t)| t.verdict != Verdict::Pass)
            .collect();
        let own_say: Vec<&&(usize, &TestVerdict)> = failing
            .iter()
            .filter(|(i, _)| !pd[*i].said_elsewhere)
            .collect();
        let said = if own_say.is_empty() {
            failing.iter().collect()
        } else {
            own_say
        };
        d.reasons = said
            .into_iter()
            .map(|(i, t)| {
                let own: Vec<&str> = pd[*i]
                    .per_device
                    .iter()
                    .filter(|(dev, _)| names_same(&d.device, dev))
                    .map(|(_, why)| why.as_str())
                    .collect();
                if own.is_empty() {
                    format!("{}: {}", t.name, t.detail)
                } else {
                    format!("{}: {}", t.name, own.join("; "))
                }
            })
            .collect();
        d.verdict = if mine.is_empty() {
            Verdict::Untested
        } else if failing.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        d.act_load_passed = s
            .loads_reached
            .iter()
            .find(|(k, _)| names_same(&d.device, k))
            .map(|(_, v)| *v);
    }
    drives
}

/// The run's verdict, and the reasons it is incomplete.
fn overall_verdict(s: &mut Summary, run: &RunRecords) -> Verdict {
    let targets = &run.targets;
    // A drive the run set out to test that no test measured, where ACT or
    // streaming measured the others: the run cannot pass on them. (A run
    // of policy and health alone judges what it tracked, not workloads.)
    let drive_tests = s.tests.iter().any(|t| {
        t.measured()
            && !t.devices.is_empty()
            && (t.name.starts_with("act-")
                || (t.name.starts_with("stream") && !t.name.starts_with("stream-fs")))
    });
    let untested: Vec<String> = if targets.is_some() && drive_tests {
        s.drives
            .iter()
            .filter(|d| d.verdict == Verdict::Untested)
            .map(|d| d.device.clone())
            .collect()
    } else {
        Vec::new()
    };
    if s.tests.iter().any(|t| t.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if targets.as_ref().is_some_and(|t| t.is_empty()) {
        // A run that found no drive to test (all behind a controller
        // without a driver) passes nothing, whatever else it checked.
        s.reasons.push("the run had no drive to test".into());
        Verdict::Incomplete
    } else if run.journal.is_some() && targets.is_none() {
        // A run names its drives before it tests any: one that did not
        // stopped before (or its folder lost the file).
        s.reasons
            .push("the run recorded no drives under test (no targets.json)".into());
        Verdict::Incomplete
    } else if !s.tests.iter().any(|t| t.measured()) {
        s.reasons.push("no test results in the bundle".into());
        Verdict::Incomplete
    } else if !untested.is_empty() {
        s.reasons.push(format!(
            "{}: under test, but no test measured it",
            untested.join(", ")
        ));
        Verdict::Incomplete
    } else {
        Verdict::Pass
    }
}

/// "trial-03-2x.log", "trial-12-1.5x.log": a search's trial, as `act
/// search` names them.
pub fn is_trial_log(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some(rest) = name.strip_prefix("trial-") else {
        return false;
    };
    let Some((n, load)) = rest.split_once('-') else {
        return false;
    };
    !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && load
            .strip_suffix("x.log")
            .is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// What a search says, checked against its trials' logs, judged afresh:
/// every trial it counts as passing must pass, every trial log must be in
/// the results, and its highest passing load must be a trial that passed.
/// None when the search holds.
fn search_claims(r: &SearchResult, c: &Contents) -> Option<String> {
    let fresh = |t: &storcert_results::act::Trial| {
        c.analyses()
            .find(|(log, _)| is_trial_log(log) && same_log(log, &t.log))
            .map(|(_, a)| (a.analysis.verdict.pass, a.load, a.standard_mix()))
    };
    for (i, t) in r.trials.iter().enumerate() {
        if t.result == "interrupted" {
            continue;
        }
        let got = fresh(t);
        // A load is a load on ACT's scale only at ACT's mix, and only the
        // one its log ran: a passing trial (what a claim rests on) is held
        // to both.
        if let (Some((_, load, standard)), "passing") = (got, t.result.as_str()) {
            if !standard {
                return Some(format!(
                    "trial {} ({}x): its log runs another read/write mix than ACT's",
                    i + 1,
                    t.load
                ));
            }
            // Rates are whole requests a second: a load is its log's to
            // within one read a second.
            if load.is_none_or(|l| (l - t.load).abs() > 1.0 / 2000.0) {
                return Some(format!(
                    "trial {} is counted at {}x, but its log runs at {}",
                    i + 1,
                    t.load,
                    load.map_or("no load".into(), |l| format!("{l}x"))
                ));
            }
        }
        // A trial passing by statistics rests on no claim (its log is cut
        // short, and an answer needs a whole log), but it steered the
        // search: its log must hold no slice over ACT's limits.
        if t.result == storcert_results::act::PASSING_BY_STATISTICS && t.purpose == "confirm" {
            return Some(format!(
                "trial {} ({}x) is a confirmation counted as passing by statistics, which a confirmation never is",
                i + 1,
                t.load
            ));
        }
        if t.result == storcert_results::act::PASSING_BY_STATISTICS && over_limits(t, c) {
            return Some(format!(
                "trial {} ({}x) is counted as passing by statistics, but its log is over ACT's limits",
                i + 1,
                t.load
            ));
        }
        match got.map(|g| g.0) {
            None => {
                return Some(format!(
                    "trial {} ({}x): its log {} is not in the results",
                    i + 1,
                    t.load,
                    storcert_util::text::printable(&t.log, 120)
                ))
            }
            Some(false) if t.result == "passing" => {
                return Some(format!(
                    "trial {} ({}x) is counted as passing, but its log fails ACT's rule",
                    i + 1,
                    t.load
                ))
            }
            _ => {}
        }
    }
    if let Some(l) = r.highest_passing_load {
        // Borne by a trial that ran its full length at that load, at ACT's
        // mix, whose log passes (found in review: a result other than
        // "passing" skipped the load check above, so a log at 1x could
        // bear a claim of 8x).
        let borne = r.trials.iter().any(|t| {
            t.load == l
                && t.result == "passing"
                && (!r.confirmed || t.purpose == "confirm")
                && fresh(t).is_some_and(|(pass, load, standard)| {
                    pass && standard && load.is_some_and(|x| (x - l).abs() <= 1.0 / 2000.0)
                })
        });
        if !borne {
            return Some(format!(
                "the highest passing load {l}x is not a trial whose log passes"
            ));
        }
        if r.parallel && r.confirmed {
            return unconfirmed_drive(r, c, l);
        }
    }
    None
}

/// Whether a trial's log holds a slice over ACT's limits.
fn over_limits(t: &storcert_results::act::Trial, c: &Contents) -> bool {
    c.analyses().any(|(log, a)| {
        is_trial_log(&log) && same_log(&log, &t.log) && !a.analysis.verdict.failures.is_empty()
    })
}

/// A search side by side claims every drive confirmed the load on its
/// own: the first of its drives (those of its trials' logs) without a
/// passing confirmation of its own (a log over that drive alone) at the
/// load or above, and why.
fn unconfirmed_drive(r: &SearchResult, c: &Contents, load: f64) -> Option<String> {
    let own_pass = |device: &str| {
        r.trials
            .iter()
            .filter(|t| t.purpose == "confirm" && t.load >= load)
            .any(|t| {
                c.analyses().any(|(log, a)| {
                    is_trial_log(&log)
                        && same_log(&log, &t.log)
                        && a.analysis.verdict.pass
                        && a.devices == [device]
                })
            })
    };
    search_devices(r, c)
        .into_iter()
        .find(|d| !own_pass(d))
        .map(|d| {
            format!(
                "{}: no confirmation of its own at {load}x or above passes, \
                 though the search side by side says every drive confirmed it",
                storcert_util::text::printable(&d, 120)
            )
        })
}

/// A log in the bundle ("results/act/search-sdb/trial-2.log") and the path
/// a search recorded for it: the same when their last two components agree.
pub fn same_log(in_bundle: &str, recorded: &str) -> bool {
    fn tail(p: &str) -> Vec<&str> {
        p.rsplit('/').take(2).collect()
    }
    tail(in_bundle) == tail(recorded)
}

/// Whether `dev` is the drive `drive` or a partition on it: "/dev/sda" and
/// "sda" name the same drive, and a run that provisioned spare area tests
/// "/dev/sda1" or "/dev/nvme0n1p1", whose results are the drive's.
pub fn names_same(drive: &str, dev: &str) -> bool {
    let drive = drive.strip_prefix("/dev/").unwrap_or(drive);
    let dev = dev.strip_prefix("/dev/").unwrap_or(dev);
    let Some(rest) = dev.strip_prefix(drive) else {
        return false;
    };
    // The kernel puts a 'p' between a name ending in a digit and the number.
    let number = if drive.ends_with(|c: char| c.is_ascii_digit()) {
        rest.strip_prefix('p').unwrap_or("x")
    } else {
        rest
    };
    rest.is_empty() || (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod partition_tests {
    use super::names_same;

    #[test]
    fn a_partition_names_its_drive() {
        assert!(names_same("/dev/sda", "sda"));
        assert!(names_same("/dev/sda", "/dev/sda1"));
        assert!(names_same("/dev/nvme0n1", "/dev/nvme0n1p1"));
        assert!(names_same("vda", "/dev/vda12"));
        assert!(!names_same("/dev/sda", "/dev/sdab"));
        assert!(!names_same("/dev/nvme0n1", "/dev/nvme0n11"));
        assert!(!names_same("/dev/nvme0n1", "/dev/nvme0n1p"));
        assert!(!names_same("/dev/sda1", "/dev/sda"));
    }
}

#[cfg(test)]
mod scope_tests {
    use std::collections::BTreeMap;

    use super::*;
    use storcert_results::health::Diff;
    use storcert_results::policy::{Finding, Report, Severity};
    use storcert_results::run::{Target, Targets, TARGETS_SCHEMA};

    fn finding(disk: Option<&str>, device: &str, severity: Severity, machine: bool) -> Finding {
        Finding {
            severity,
            rule: "drive[0]".into(),
            device: device.into(),
            disk: disk.map(String::from),
            machine,
            check: "firmware".into(),
            expected: "B".into(),
            actual: "A".into(),
            fix: None,
            action: None,
        }
    }

    fn summary_of(findings: Vec<Finding>, health_drives: usize) -> Summary {
        let policy = Report {
            schema_version: storcert_results::policy::SCHEMA_VERSION,
            checks: 9,
            pass: !findings.iter().any(|f| f.severity == Severity::Fail),
            findings,
        };
        let diff: Diff = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "seconds": 60, "unmatched": [], "degraded": false,
            "drives": (0..health_drives).map(|_| serde_json::json!({
                "drive": "/dev/sda", "changes": [], "degraded": false,
                "endurance": null, "temperature_c": null
            })).collect::<Vec<_>>()
        }))
        .unwrap();
        summary_of_files(vec![
            ("policy.json", Artefact::from(policy).to_json()),
            ("health-diff.json", Artefact::from(diff).to_json()),
        ])
    }

    /// The summary of `files` beside a targets.json naming /dev/sda and
    /// /dev/sdc as the drives under test.
    fn summary_of_files(mut files: Vec<(&str, Vec<u8>)>) -> Summary {
        let targets = Targets {
            schema_version: TARGETS_SCHEMA,
            targets: ["/dev/sda", "/dev/sdc"]
                .iter()
                .map(|d| Target {
                    path: d.to_string(),
                    disk: d.to_string(),
                    label: d[5..].to_string(),
                    serial: None,
                    model: None,
                    file_size: 0,
                    likeness: None,
                })
                .collect(),
        };
        files.push(("targets.json", Artefact::from(targets).to_json()));
        let files: BTreeMap<String, Vec<u8>> =
            files.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let c = Contents::read_in(&files, "");
        assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
        summarise(Machine::default(), &c)
    }

    #[test]
    fn a_run_with_no_drive_to_test_never_passes() {
        // All drives behind a controller without a driver: the finding is
        // a warning (field-check), the policy check passes, no stage ran.
        let reach = reach_pass();
        let none = Targets {
            schema_version: TARGETS_SCHEMA,
            targets: Vec::new(),
        };
        let files: BTreeMap<String, Vec<u8>> = [
            ("policy.json", Artefact::from(reach.clone()).to_json()),
            ("targets.json", Artefact::from(none).to_json()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let s = summarise(Machine::default(), &Contents::read_in(&files, ""));
        assert_eq!(s.verdict, Verdict::Incomplete, "{s:#?}");
        assert!(s
            .reasons
            .iter()
            .any(|r| r == "the run had no drive to test"));
        // Where the finding fails (qualify, burn-in), it is a fail.
        let mut failing = reach;
        failing.findings[0].severity = Severity::Fail;
        failing.pass = false;
        let files: BTreeMap<String, Vec<u8>> = files
            .into_iter()
            .map(|(k, v)| {
                if k == "policy.json" {
                    (k, Artefact::from(failing.clone()).to_json())
                } else {
                    (k, v)
                }
            })
            .collect();
        let s = summarise(Machine::default(), &Contents::read_in(&files, ""));
        assert_eq!(s.verdict, Verdict::Fail, "{s:#?}");

        // A run's folder without its targets.json (a run cut short, or
        // from before the run wrote one first): never a pass either.
        let journal = storcert_results::run::Journal {
            schema_version: 1,
            profile_name: "p".into(),
            profile_digest: "d".into(),
            profile_source: "s".into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            finished_at: None,
            starts: 1,
            stages: Vec::new(),
            path: Default::default(),
        };
        let warn_only: BTreeMap<String, Vec<u8>> = [
            ("policy.json", Artefact::from(reach_pass()).to_json()),
            ("journal.json", Artefact::from(journal).to_json()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let s = summarise(Machine::default(), &Contents::read_in(&warn_only, ""));
        assert_eq!(s.verdict, Verdict::Incomplete, "{s:#?}");
        assert!(s.reasons.iter().any(|r| r.contains("no targets.json")));
    }

    /// An ACT run on /dev/sdz with `outcome` and `read_errors`, as its
    /// JSON says it.
    fn run_json(
        outcome: storcert_results::act::Outcome,
        read_errors: u64,
    ) -> storcert_results::act::RunResult {
        use storcert_results::act::{DeviceResult, RunResult, Spikes};
        RunResult {
            schema_version: storcert_results::act::RUN_SCHEMA,
            outcome,
            engine: "io_uring".into(),
            elapsed_s: 3600.0,
            max_lag_ms: 10_000.0,
            reports: 1,
            streams: Vec::new(),
            histograms: Vec::new(),
            devices: vec![DeviceResult {
                name: "/dev/sdz".into(),
                size_bytes: 1 << 30,
                min_op_bytes: 512,
                direct_io: true,
                read_errors,
                write_errors: 0,
                first_errors: Vec::new(),
            }],
            read_spikes: Spikes {
                seconds: Vec::new(),
                period_s: None,
                threshold: 0.0,
            },
            timeline: Vec::new(),
        }
    }

    /// A stage that failed with `note`, on `devices` as the journal names
    /// them (`None`: a journal from before stages named them).
    fn failed_stage(
        id: &str,
        note: &str,
        devices: Option<Vec<String>>,
    ) -> storcert_results::run::StageRecord {
        storcert_results::run::StageRecord {
            id: id.into(),
            state: StageState::Failed,
            destructive: true,
            attempts: 1,
            started_at: String::new(),
            finished_at: None,
            interrupted_seconds: 0,
            seconds_done: 0,
            note: note.into(),
            outputs: Vec::new(),
            devices,
        }
    }

    fn journal_of(stages: Vec<storcert_results::run::StageRecord>) -> Journal {
        Journal {
            schema_version: 1,
            profile_name: "p".into(),
            profile_digest: "d".into(),
            profile_source: "s".into(),
            started_at: String::new(),
            finished_at: None,
            starts: 1,
            stages,
            path: Default::default(),
        }
    }

    /// The records of one ACT stage on /dev/sdz: its JSON (if written),
    /// its log, and the stage, failed with `note`; where `outputs`, the
    /// journal names the two files as the stage's.
    fn act_stage(
        json: Option<storcert_results::act::RunResult>,
        log: &[u8],
        note: &str,
        outputs: bool,
    ) -> Summary {
        let mut stage = failed_stage("act 1x sdz", note, None);
        if outputs {
            stage.outputs = vec!["act/sdz-1x.log".into(), "act/sdz-1x.json".into()];
        }
        let journal = journal_of(vec![stage]);
        let targets = storcert_results::run::Targets {
            schema_version: storcert_results::run::TARGETS_SCHEMA,
            targets: vec![storcert_results::run::Target {
                path: "/dev/sdz".into(),
                disk: "/dev/sdz".into(),
                label: "sdz".into(),
                serial: None,
                model: None,
                file_size: 0,
                likeness: None,
            }],
        };
        let mut files: BTreeMap<String, Vec<u8>> = [
            ("act/sdz-1x.log", log.to_vec()),
            ("journal.json", Artefact::from(journal).to_json()),
            ("targets.json", Artefact::from(targets).to_json()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(run) = json {
            files.insert("act/sdz-1x.json".into(), Artefact::from(run).to_json());
        }
        let c = Contents::read_in(&files, "");
        assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
        summarise(Machine::default(), &c)
    }

    /// A stage names the drive it ran on: its failure is that drive's,
    /// whatever its name says; a stage of the run as a whole is no
    /// drive's even where its name ends like one. (A journal without the
    /// names: by the label, `act_stage` above.)
    #[test]
    fn a_failed_stage_is_the_drive_s_it_names() {
        let journal = journal_of(vec![
            failed_stage("provision", "broke", Some(vec!["/dev/sdz".into()])),
            failed_stage("stream sdy", "broke", Some(Vec::new())),
        ]);
        let target = |d: &str| storcert_results::run::Target {
            path: d.into(),
            disk: d.into(),
            label: d.trim_start_matches("/dev/").into(),
            serial: None,
            model: None,
            file_size: 0,
            likeness: None,
        };
        let targets = storcert_results::run::Targets {
            schema_version: storcert_results::run::TARGETS_SCHEMA,
            targets: vec![target("/dev/sdy"), target("/dev/sdz")],
        };
        let files: BTreeMap<String, Vec<u8>> = [
            (
                "journal.json".to_string(),
                Artefact::from(journal).to_json(),
            ),
            (
                "targets.json".to_string(),
                Artefact::from(targets).to_json(),
            ),
        ]
        .into();
        let s = summarise(Machine::default(), &Contents::read(&files));
        let test = |name: &str| s.tests.iter().find(|t| t.name == name).unwrap();
        assert_eq!(test("stage provision").devices, ["/dev/sdz"]);
        assert!(test("stage stream sdy").devices.is_empty());
    }

    fn could_not_keep_up(outputs: bool) -> Summary {
        let run = run_json(
            storcert_results::act::Outcome::CouldNotKeepUp {
                stream: "large block writes".into(),
            },
            0,
        );
        let log = include_bytes!("../../../tests/fixtures/act/verdicts/fail-cant-keep-up.log");
        act_stage(
            Some(run),
            log,
            "large block writes could not keep up",
            outputs,
        )
    }

    #[test]
    fn what_only_one_record_says_is_never_folded_away() {
        // The engine failed mid-run: no JSON, a log cut short, and the
        // stage's note the only word on why.
        let cut = include_bytes!("../../../tests/fixtures/act/verdicts/fail-cut-short.log");
        let s = act_stage(None, cut, "io_uring_enter: Cannot allocate memory", true);
        assert!(
            s.reasons
                .iter()
                .any(|r| r.contains("Cannot allocate memory")),
            "{:?}",
            s.reasons
        );
        // Read errors the JSON counts, beside a log that fails on latency
        // alone: both are said.
        let slow = include_bytes!("../../../tests/fixtures/act/verdicts/fail-5.01pct-over-1ms.log");
        let errors = run_json(storcert_results::act::Outcome::Completed, 7);
        let s = act_stage(
            Some(errors),
            slow,
            "/dev/sdz: 7 read and 0 write errors",
            true,
        );
        assert!(
            s.reasons
                .iter()
                .any(|r| r.contains("7 read and 0 write errors")),
            "{:?}",
            s.reasons
        );
        assert!(
            s.reasons.iter().any(|r| r.contains("5.01% > 1 ms")),
            "{:?}",
            s.reasons
        );
        assert!(s.drives[0].reasons.iter().any(|r| r.contains("7 read")));
        // Stopped by device errors: the run's own record names the drive
        // and its errors, as the stage's line (folded behind it) did; it
        // said "device-errors" alone (found by the lab's unplug test).
        let stopped = run_json(
            storcert_results::act::Outcome::DeviceErrors { errors: 101 },
            101,
        );
        let s = act_stage(
            Some(stopped),
            cut,
            "stopped after 101 device errors: /dev/sdz: 101 read and 0 write errors",
            true,
        );
        assert!(
            s.reasons.iter().any(|r| r.contains(
                "stopped after 101 device errors: /dev/sdz: 101 read and 0 write errors"
            )),
            "{:?}",
            s.reasons
        );
    }

    #[test]
    fn a_failure_its_json_log_and_stage_all_tell_is_said_once() {
        let s = could_not_keep_up(true);
        assert_eq!(s.verdict, Verdict::Fail);
        // Every record is still a failed test...
        let failed: Vec<&str> = s
            .tests
            .iter()
            .filter(|t| t.verdict == Verdict::Fail)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(failed.len(), 3, "{failed:?}");
        // ...but the log's judgement, which says how the run ended, is the
        // one reason, for the run and for the drive.
        assert_eq!(s.reasons.len(), 1, "{:?}", s.reasons);
        assert!(
            s.reasons[0].starts_with("act-storage 1x (act/sdz-1x.log)"),
            "{:?}",
            s.reasons
        );
        assert!(s.reasons[0].contains("can't keep up"), "{:?}", s.reasons);
        assert_eq!(s.drives[0].verdict, Verdict::Fail);
        assert_eq!(s.drives[0].reasons, s.reasons);

        // A journal from before stages named their files: nothing links
        // the three, so each says its own.
        let old = could_not_keep_up(false);
        assert_eq!(old.verdict, Verdict::Fail);
        assert_eq!(old.reasons.len(), 3, "{:?}", old.reasons);
    }

    fn reach_pass() -> Report {
        Report {
            schema_version: storcert_results::policy::SCHEMA_VERSION,
            checks: 1,
            pass: true,
            findings: vec![finding(
                None,
                "0000:00:05.0 (SAS4116)",
                Severity::Warn,
                true,
            )],
        }
    }

    #[test]
    fn each_drive_row_names_its_own_findings_once() {
        let s = summary_of(
            vec![
                finding(Some("/dev/sda"), "sda (M S1)", Severity::Fail, false),
                finding(Some("/dev/sdc"), "sdc (M S3)", Severity::Fail, false),
                // Another disk and a controller: the machine's, warnings.
                finding(Some("/dev/sdb"), "sdb (M S2)", Severity::Warn, true),
                finding(None, "0000:01:00.0 (PERC)", Severity::Warn, true),
            ],
            1,
        );
        assert_eq!(s.verdict, Verdict::Fail);
        let rows: Vec<&str> = s.drives.iter().map(|d| d.device.as_str()).collect();
        // One row per drive under test: not one per finding's label, and
        // none for the machine's other disk.
        assert_eq!(rows, vec!["/dev/sda", "/dev/sdc"]);
        let sda = &s.drives[0];
        assert_eq!(sda.reasons.len(), 1, "{:?}", sda.reasons);
        assert!(sda.reasons[0].contains("sda (M S1)"), "{:?}", sda.reasons);
        assert!(!sda.reasons[0].contains("sdc"), "{:?}", sda.reasons);
    }

    #[test]
    fn a_health_failure_lands_on_its_drive_s_row() {
        // A diff in which sda degraded and sdc went away.
        let diff: Diff = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "seconds": 60, "degraded": true,
            "unmatched": ["sdc (S3): only before (the drive went away)"],
            "drives": [{"drive": "sda (M S1)", "degraded": true, "endurance": null,
                "temperature_c": null, "changes": [{"what": "media errors", "before": "0",
                "after": "4", "degraded": true}]}]
        }))
        .unwrap();
        let s = summary_of_files(vec![("health-diff.json", Artefact::from(diff).to_json())]);
        let rows: Vec<(&str, Verdict)> = s
            .drives
            .iter()
            .map(|d| (d.device.as_str(), d.verdict))
            .collect();
        assert_eq!(
            rows,
            [("/dev/sda", Verdict::Fail), ("/dev/sdc", Verdict::Fail)],
            "{s:#?}"
        );
        assert!(
            s.drives[0].reasons[0].contains("media errors: 0 -> 4"),
            "{:?}",
            s.drives[0].reasons
        );
        assert!(
            s.drives[1].reasons[0].contains("went away"),
            "{:?}",
            s.drives[1].reasons
        );
    }

    #[test]
    fn machine_findings_warn_and_an_empty_health_stage_is_not_measured() {
        let s = summary_of(
            vec![
                finding(Some("/dev/sdb"), "sdb (M S2)", Severity::Warn, true),
                finding(None, "0000:01:00.0 (PERC)", Severity::Warn, true),
            ],
            0,
        );
        let health = s
            .tests
            .iter()
            .find(|t| t.name.starts_with("health"))
            .unwrap();
        assert_eq!(health.verdict, Verdict::Untested, "{health:?}");
        assert!(health.detail.contains("not measured"));
        let policy = s
            .tests
            .iter()
            .find(|t| t.name.starts_with("policy"))
            .unwrap();
        assert!(
            policy.verdict == Verdict::Pass
                && policy.detail.contains("2 finding(s) about the machine")
        );
        // The policy passed; the health stage measured nothing: a pass,
        // with no drive judged on health.
        assert_eq!(s.verdict, Verdict::Pass, "{:?}", s.reasons);
        assert!(s.reasons.is_empty());
        // A clean policy beside it: a pass, judged by the policy alone.
        let only = summary_of(Vec::new(), 0);
        assert_eq!(only.verdict, Verdict::Pass);
        // A summary with the field omitted (measured) still reads.
        let t: TestVerdict =
            serde_json::from_str(r#"{"name":"x","pass":true,"detail":"","devices":[]}"#).unwrap();
        assert_eq!(t.verdict, Verdict::Pass);
        let t: TestVerdict = serde_json::from_str(
            r#"{"name":"x","pass":false,"detail":"","devices":[],"measured":true}"#,
        )
        .unwrap();
        assert_eq!(t.verdict, Verdict::Fail);
        let json = serde_json::to_string(&health).unwrap();
        assert!(json.contains("\"measured\":false"), "{json}");
    }
}
