//! The report: one self-contained HTML page (inline SVG plots, no external
//! assets), and Markdown or plain text for terminals and tickets. Built
//! from a bundle or a results folder through the same `Report` data, so
//! the report inside every bundle and `storcert report BUNDLE` agree.
//!
//! This crate is the layer people read: the report, `compare`'s tables and
//! the fleet exports. It uses the judge, the bundle's names and the
//! results types; it cannot reach a device, an engine or the command line.

pub mod answer;
pub mod compare;
pub mod export;
pub mod html;
pub mod markup;
pub mod plot;
pub mod section;
pub mod text;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use storcert_judge::act::analyze::Analysis;
use storcert_judge::act::timeline::{spikes_of, Spikes, Thinned};
use storcert_judge::contents::{Contents, Holding};
use storcert_judge::summary::{summarise, Summary};
use storcert_results::policy::Finding;
use storcert_results::provision::ProvisionResult;
use storcert_results::system::SystemIdentity;
use storcert_results::Artefact;

pub struct ActSection {
    pub path: String,
    pub devices: Vec<String>,
    pub load: Option<f64>,
    pub analysis: Analysis,
    /// Per-second samples, when the run kept its timeline: every second
    /// of a short run, neighbouring seconds merged in a long one.
    pub timeline: Thinned,
    pub spikes: Option<Spikes>,
}

pub struct StreamPass {
    pub name: String,
    /// (end of the second, bytes/s): the last, partial second by the
    /// time it covers.
    pub bw_per_second: Vec<(f64, f64)>,
    pub aggr_bw_bytes: f64,
    pub bytes: u64,
}

pub struct StreamSection {
    pub path: String,
    /// How it ran: "1 MiB blocks, one request at a time, O_DIRECT".
    pub how: String,
    pub targets: Vec<String>,
    pub passes: Vec<StreamPass>,
}

/// How a streaming run ran, so a dd-style run and a fio-style run of one
/// profile read apart: block size, requests in flight, jobs, cache. Said
/// as it ran, not labelled: a profile's entry may be named anything.
pub fn stream_how(st: &storcert_results::stream::StreamResult) -> String {
    let bs = storcert_util::units::block_size(st.bs);
    let cache = if st.direct {
        "O_DIRECT"
    } else {
        "through the page cache"
    };
    if st.qd == 1 && st.jobs_per_target == 1 {
        format!("{bs} blocks, one request at a time, {cache}")
    } else {
        format!(
            "{bs} blocks, queue depth {}, {} a drive, {cache}",
            st.qd,
            storcert_util::text::counted(st.jobs_per_target as usize, "job")
        )
    }
}

pub struct HealthChange {
    pub drive: String,
    pub what: String,
    pub before: String,
    pub after: String,
    pub degraded: bool,
}

pub struct EnduranceRow {
    pub drive: String,
    pub drive_writes_per_day: f64,
    pub rated_dwpd: Option<f64>,
    pub years_at_this_rate: Option<f64>,
    pub within_rating: Option<bool>,
}

pub struct Report {
    pub title: String,
    pub summary: Summary,
    pub system: Option<SystemIdentity>,
    pub findings: Vec<Finding>,
    pub act: Vec<ActSection>,
    /// Load searches, by their path (the first `MAX_SHOWN`).
    pub searches: Vec<(String, storcert_results::act::SearchResult)>,
    pub streams: Vec<StreamSection>,
    /// Filesystem passes (bonnie++'s tables), by their path.
    pub filesystem: Vec<(String, storcert_results::stream::FsResult)>,
    pub health: Vec<HealthChange>,
    pub endurance: Vec<EnduranceRow>,
    pub notes: Vec<String>,
    /// The run's ACT logs across loads and spare area.
    pub comparison: compare::Comparison,
    /// The spare area storcert provisioned, per drive.
    pub spare: Vec<ProvisionResult>,
    /// Whether the bundle's signatures were checked.
    pub provenance: Provenance,
    /// Health was read before and after (a health diff is in the results).
    pub health_compared: bool,
    /// The drives whose health the diff compared (none: it measured
    /// nothing, and the report must not say nothing changed).
    pub health_tracked: usize,
    /// Whether the results hold a policy check (`findings` empty then
    /// means none was found, not none was looked for).
    pub policy_checked: bool,
}

/// Where a report's results come from, and whether anyone vouched for them.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Provenance {
    /// A results folder on this machine.
    #[default]
    Results,
    /// A bundle whose signatures were checked against a key given.
    Verified { key_id: String },
    /// A bundle read without checking its signatures: anyone could have
    /// made it, verdict included.
    NotVerified,
}

/// The run's notes, policy findings and health changes a report shows at
/// most, each: a run makes a handful, and a page of a million says nothing
/// more while its copies and its page multiply what a bundle holds.
const MAX_SHOWN: usize = 1000;

/// Adds to `shown` the first of `all` that fit within `MAX_SHOWN`; past
/// them, the note that says how many more `what` there are, and where.
fn show_some<T: Clone>(shown: &mut Vec<T>, all: &[T], what: &str, path: &str) -> Option<String> {
    let room = MAX_SHOWN.saturating_sub(shown.len());
    shown.extend(all.iter().take(room).cloned());
    (all.len() > room).then(|| {
        format!(
            "... and {} more {what}, not shown (see {path})",
            all.len() - room
        )
    })
}

impl Report {
    /// What the health section says when it has no change to show.
    pub fn health_note(&self) -> &'static str {
        if self.health_compared && self.health_tracked == 0 {
            "Health was read before and after the tests, but no drive's health was tracked, so no change could be seen."
        } else if self.health_compared {
            "Health was read before and after the tests: nothing changed."
        } else {
            "No health snapshots were taken (the run had no health stage), so no change could be seen."
        }
    }
}

impl Provenance {
    /// The line a report shows for it, if any.
    pub fn line(&self) -> Option<String> {
        match self {
            Provenance::Results => None,
            Provenance::Verified { key_id } => Some(format!(
                "Verified: signed by key {key_id}, every file matches."
            )),
            Provenance::NotVerified => Some(
                "NOT VERIFIED: this bundle's signatures were not checked \
                 (storcert report -p KEY.pub checks them); anyone could have made it, \
                 its verdict included."
                    .into(),
            ),
        }
    }
}

impl Report {
    /// From files by path (a results folder's, or a bundle's with their
    /// `results/` prefix removed) and their summary.
    pub fn build(title: &str, summary: Summary, files: &BTreeMap<String, Vec<u8>>) -> Report {
        Report::from_contents(title, summary, &Contents::read(files))
    }

    /// A fold over the typed artefacts.
    pub fn from_contents(title: &str, summary: Summary, c: &Contents) -> Report {
        let mut r = Report {
            title: title.into(),
            summary,
            system: None,
            findings: Vec::new(),
            act: Vec::new(),
            searches: Vec::new(),
            streams: Vec::new(),
            filesystem: Vec::new(),
            health: Vec::new(),
            endurance: Vec::new(),
            notes: Vec::new(),
            comparison: compare::compare(&[(title.to_string(), c)]),
            spare: Vec::new(),
            provenance: Provenance::Results,
            health_compared: false,
            health_tracked: 0,
            policy_checked: false,
        };
        let mut health_not_shown = 0usize;
        for item in &c.items {
            match &item.artefact {
                Artefact::System(sys) => r.system = Some(sys.clone()),
                Artefact::Provision(p) => r.spare.push(p.clone()),
                Artefact::ActSearch(s) if r.searches.len() < MAX_SHOWN => {
                    r.searches.push((item.path.clone(), s.clone()))
                }
                Artefact::Policy(p) => {
                    r.policy_checked = true;
                    let more =
                        show_some(&mut r.findings, &p.findings, "policy findings", &item.path);
                    r.notes.extend(more);
                }
                Artefact::Stream(st) => r.streams.push(StreamSection {
                    path: item.path.clone(),
                    how: stream_how(st),
                    targets: st.targets.iter().map(|t| t.path.clone()).collect(),
                    passes: st
                        .passes
                        .iter()
                        .map(|p| StreamPass {
                            name: p.pass.as_str().into(),
                            bw_per_second: p.bw_per_second(),
                            aggr_bw_bytes: p.group.aggr_bw_bytes,
                            bytes: p.group.bytes,
                        })
                        .collect(),
                }),
                Artefact::StreamFs(f) if r.filesystem.len() < MAX_SHOWN => {
                    r.filesystem.push((item.path.clone(), f.clone()))
                }
                Artefact::HealthDiff(d) => {
                    r.health_compared = true;
                    r.health_tracked += d.drives.len() + d.unmatched.len();
                    for dd in &d.drives {
                        for ch in &dd.changes {
                            if r.health.len() == MAX_SHOWN {
                                health_not_shown += 1;
                                continue;
                            }
                            r.health.push(HealthChange {
                                drive: dd.drive.clone(),
                                what: ch.what.clone(),
                                before: ch.before.clone(),
                                after: ch.after.clone(),
                                degraded: ch.degraded,
                            });
                        }
                        if let Some(e) = &dd.endurance {
                            r.endurance.push(EnduranceRow {
                                drive: dd.drive.clone(),
                                drive_writes_per_day: e.drive_writes_per_day,
                                rated_dwpd: e.rated_dwpd,
                                years_at_this_rate: e.years_at_this_rate,
                                within_rating: e.within_rating,
                            });
                        }
                    }
                }
                Artefact::RunNotes(n) => {
                    // A run writes a handful; a page of a million says
                    // nothing more, and its copy doubled a report's memory.
                    let more = show_some(&mut r.notes, &n.notes, "notes of the run", &item.path);
                    r.notes.extend(more);
                    if n.starts > 1 {
                        r.notes.push(format!(
                            "the run was started {} times (resumed after interruptions)",
                            n.starts
                        ));
                    }
                }
                // Shown below (ACT analyses) or not shown (records).
                _ => {}
            }
        }
        if health_not_shown > 0 {
            r.notes.push(format!(
                "... and {health_not_shown} more health changes, not shown (see the health diff)"
            ));
        }
        // What could not be read is said, never left out quietly.
        for (path, why) in &c.unreadable {
            r.notes.push(format!("{path}: {why}"));
        }
        r.notes
            .extend(c.unnamed_unreadable().map(|more| format!("... {more}")));
        for item in &c.items {
            if let Artefact::ActAnalysis(a) = &item.artefact {
                let timeline = c.timelines.get(&item.path).cloned().unwrap_or_default();
                let spikes =
                    (!timeline.is_empty()).then(|| spikes_of(&timeline, |s| s.read_p99_us));
                let dir = item.path.rfind('/').map_or("", |i| &item.path[..=i]);
                r.act.push(ActSection {
                    path: format!("{dir}{}", a.log),
                    devices: a.devices.clone(),
                    load: a.load,
                    analysis: a.analysis.clone(),
                    timeline,
                    spikes,
                });
            }
        }
        r.act.sort_by(act_section_order);
        r
    }
}

/// ACT sections in the order ACT runs are listed everywhere (numeric
/// load order within a folder and drive).
fn act_section_order(x: &ActSection, y: &ActSection) -> std::cmp::Ordering {
    storcert_judge::summary::act_run_order(
        (&x.path, &x.devices, x.load),
        (&y.path, &y.devices, y.load),
    )
}

/// A provisioned drive's spare area as the report's table shows it: drive,
/// partition, partition size, spare (% and bytes), factory spare, total.
pub fn spare_cells(p: &ProvisionResult) -> [String; 6] {
    let pct = |v: Option<f64>| v.map(|v| format!("{v:.1}%")).unwrap_or_else(|| "–".into());
    [
        p.device.clone(),
        p.kernel
            .as_ref()
            .map_or("not shown by the kernel".into(), |k| k.partition.clone()),
        storcert_util::units::decimal_bytes(p.partition_size_bytes),
        format!(
            "{:.1}% ({})",
            p.spare_pct,
            storcert_util::units::decimal_bytes(p.spare_bytes)
        ),
        pct(p.factory_spare_pct),
        pct(p.total_spare_pct),
    ]
}

/// The typed contents of a results folder, each file read as it passes.
pub fn contents_of_results(dir: &Path) -> Result<Contents> {
    let reads = storcert_judge::contents::read_folder(dir, Holding::UNBOUNDED)?;
    Ok(Contents::from_reads(reads, storcert_bundle::RESULTS_PREFIX))
}

/// The machine the results recorded (`system.json`), else an unrecorded
/// machine's: never the machine this happens to run on.
pub fn recorded_system(c: &Contents) -> SystemIdentity {
    c.items
        .iter()
        .find_map(|i| match &i.artefact {
            Artefact::System(s) if i.path == storcert_bundle::SYSTEM => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_else(storcert_results::system::unrecorded)
}

/// The report of results already judged (`c`), under the title `title`.
pub fn of_contents(title: &str, c: &Contents) -> Report {
    let summary = summarise(recorded_system(c).machine(), c);
    Report::from_contents(title, summary, c)
}

/// The report of a results folder (as the bundle will judge it).
pub fn for_results(dir: &Path) -> Result<Report> {
    let contents = contents_of_results(dir)?;
    Ok(of_contents(&title_of(dir), &contents))
}

/// A results folder's report's title: the folder's name.
pub fn title_of(dir: &Path) -> String {
    dir.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("results")
        .to_string()
}

/// The report of a bundle: its summary and contents.
/// `verified_by`: the key that signed it, if its signatures were checked.
pub fn for_bundle(
    name: &str,
    summary: Summary,
    contents: &Contents,
    verified_by: Option<String>,
) -> Report {
    let mut r = Report::from_contents(name, summary, contents);
    r.provenance = match verified_by {
        Some(key_id) => Provenance::Verified { key_id },
        None => Provenance::NotVerified,
    };
    r
}

/// Writes report.html and report.md into a results folder (before it is
/// bundled, so every bundle carries its report); returns the first
/// screen.
pub fn write_for_results(dir: &Path, r: &Report) -> Result<answer::FirstScreen> {
    storcert_util::fs::write_durably(&dir.join("report.html"), html::render(r))?;
    storcert_util::fs::write_durably(&dir.join("report.md"), text::markdown(r))?;
    Ok(answer::first_screen(&r.summary, &r.comparison))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use storcert_judge::act::analyze;
    use storcert_results::Artefact;

    fn log(name: &str) -> Vec<u8> {
        let logs = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/act/logs/"
        );
        std::fs::read(format!("{logs}{name}")).unwrap()
    }

    #[test]
    fn a_crafted_analysis_renders_without_panicking() {
        let pass = log("storcert-us-20x.log");
        let mut a = analyze::judge_log(&pass, "a.log", "a.log", None).unwrap();
        let h = &mut a.analysis.histograms[0];
        h.slices[0].overs.truncate(1);
        h.slices[0].overs[0] = f64::NAN;
        h.thresholds.push(99);
        a.analysis
            .verdict
            .failures
            .push(storcert_results::act::Failure {
                histogram: h.name.clone(),
                slice: h.slices[0].slice,
                rule: "> 1 ms must be < 5%".into(),
                percent: f64::INFINITY,
            });
        let files: BTreeMap<String, Vec<u8>> = [
            ("a.log".to_string(), pass.clone()),
            ("a.analysis.json".to_string(), Artefact::from(a).to_json()),
            ("a.timeline.jsonl".to_string(), b"{\"t\":5}\n".to_vec()),
        ]
        .into();
        let r = crate::Report::build("t", Default::default(), &files);
        assert_eq!(r.act.len(), 1);
        crate::html::render(&r);
        crate::text::markdown(&r);
        let spikes = storcert_judge::act::timeline::find_spikes(
            &(0..30u64)
                .map(|i| (30 - i, if i % 5 == 0 { 90.0 } else { 1.0 }))
                .collect::<Vec<_>>(),
        );
        assert!(spikes.period_s.is_none_or(|p| p < 30));
    }

    /// A verdict's problems (a run stopped once decided, a log cut short)
    /// are in the page as in the text, escaped: without them a trial
    /// passed by statistics read FAIL over slices that all pass.
    #[test]
    fn a_verdict_s_problems_are_on_the_page() {
        let mut stopped = log("storcert-us-20x.log");
        stopped.extend_from_slice(
            b"decided after 24 sec: slice 1 passes by statistics <script>x</script> - test stopped\n",
        );
        let a = analyze::judge_log(&stopped, "a.log", "a.log", None).unwrap();
        assert!(!a.analysis.verdict.pass);
        let pass = stopped;
        let files: BTreeMap<String, Vec<u8>> = [
            ("a.log".to_string(), pass.clone()),
            ("a.analysis.json".to_string(), Artefact::from(a).to_json()),
        ]
        .into();
        let r = crate::Report::build("t", Default::default(), &files);
        let page = crate::html::render(&r);
        assert!(
            page.contains(
                "<p class=\"failure\">the run stopped: decided after 24 sec: slice 1 passes by \
                 statistics &lt;script&gt;x&lt;/script&gt; - test stopped</p>"
            ),
            "{page}"
        );
        assert!(!page.contains("<script>x"));
        assert!(crate::text::markdown(&r).contains("passes by statistics"));
    }

    /// A search trial passing by statistics is badged so, not FAIL, though
    /// its log, cut short, fails ACT's rule; any other log keeps its own.
    #[test]
    fn a_trial_passing_by_statistics_is_badged_so() {
        let mut stopped = log("storcert-us-20x.log");
        stopped.extend_from_slice(
            b"decided after 24 sec: slice 1 passes by statistics - test stopped\n",
        );
        // The search's two trials, and a second phase's search of the same
        // drive, whose first trial's log ends the same as the first's.
        let logs = [
            "phase-1/act/search-x/trial-01-1x.log",
            "phase-1/act/search-x/trial-02-1x.log",
            "phase-2/act/search-x/trial-01-1x.log",
        ];
        let mut files = BTreeMap::new();
        for path in logs {
            let name = path.rsplit('/').next().unwrap();
            let a = analyze::judge_log(&stopped, name, name, None).unwrap();
            files.insert(path.to_string(), stopped.clone());
            let analysis = path.replace(".log", ".analysis.json");
            files.insert(analysis, Artefact::from(a).to_json());
        }
        let mut r = crate::Report::build("t", Default::default(), &files);
        assert_eq!(r.act.len(), 3);
        let trial = |n: u32, result: &str| storcert_results::act::Trial {
            load: 1.0,
            result: result.into(),
            // Where the run wrote it, not the bundle's path.
            log: format!("/var/lib/storcert/runs/r1/act/search-x/trial-0{n}-1x.log"),
            ..Default::default()
        };
        r.searches.push((
            "phase-1/act/search-x.json".into(),
            storcert_results::act::SearchResult {
                trials: vec![
                    trial(1, storcert_results::act::PASSING_BY_STATISTICS),
                    trial(2, "stable at increased latency"),
                ],
                ..Default::default()
            },
        ));
        let page = crate::html::render(&r);
        let badge =
            ">PASSING BY STATISTICS</span></h3><p><code>phase-1/act/search-x/trial-01-1x.log";
        assert_eq!(page.matches(badge).count(), 1, "{page}");
        assert_eq!(page.matches(">PASSING BY STATISTICS<").count(), 1, "{page}");
        let fail = "<span class=\"verdict v-fail\">FAIL</span>";
        assert_eq!(page.matches(fail).count(), 2, "{page}");
        let text = crate::text::markdown(&r);
        let said = "A search trial passing by statistics";
        assert_eq!(text.matches(said).count(), 1, "{text}");
    }

    /// 1x, 2x, 10x: never 10x before 1x as the file names sort.
    #[test]
    fn act_sections_come_in_numeric_order_of_load() {
        let pass = String::from_utf8(log("storcert-us-20x.log")).unwrap();
        let at = |load: u32| {
            pass.replace(
                "read-reqs-per-sec: 40000",
                &format!("read-reqs-per-sec: {}", 2000 * load),
            )
            .replace(
                "write-reqs-per-sec: 20000",
                &format!("write-reqs-per-sec: {}", 1000 * load),
            )
            .into_bytes()
        };
        let files: BTreeMap<String, Vec<u8>> = [10, 1, 2]
            .map(|l| (format!("act/d-{l}x.log"), at(l)))
            .into();
        let r = crate::Report::build("t", Default::default(), &files);
        let loads: Vec<Option<f64>> = r.act.iter().map(|a| a.load).collect();
        assert_eq!(loads, [Some(1.0), Some(2.0), Some(10.0)]);
        let md = crate::text::markdown(&r);
        let (one, ten) = (md.find("d-1x.log").unwrap(), md.find("d-10x.log").unwrap());
        assert!(one < ten, "{md}");
        // The summary lists its tests (and so its reasons) the same way.
        let summary = storcert_judge::summary::summarise(
            Default::default(),
            &storcert_judge::contents::Contents::read(&files),
        );
        let tests: Vec<&str> = summary.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            tests,
            [
                "act-storage 1x (act/d-1x.log)",
                "act-storage 2x (act/d-2x.log)",
                "act-storage 10x (act/d-10x.log)"
            ]
        );
    }
}
