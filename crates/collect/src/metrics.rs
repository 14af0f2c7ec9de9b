//! `/metrics`: the fleet in Prometheus' text exposition format (0.0.4),
//! behind the same token as every other read.
//!
//! What the index holds (bundles by verdict, drives by model and verdict)
//! is counted there with one query each, never by opening a bundle; runs
//! by state and how long each running run has been silent come from the
//! board's own rows, so /metrics and the board agree. Uploads and
//! heartbeats are counted as they are answered (a counter by outcome, a
//! latency histogram), by the HTTP status of the answer: every refusal
//! already has its own status, so the reasons are a fixed, small set.
//!
//! Label values a bundle or a heartbeat chose (a drive's model, a run's
//! id) are hostile: cut, escaped, and bounded in number (the most common
//! models, the rest as `other`; the longest-silent runs).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{board, heartbeat, Collector, Shared};

/// Models named one by one; the rest are counted as `other`.
pub const MAX_MODELS: usize = 50;
/// Running runs whose silence is named one by one (the longest silent).
pub const MAX_SILENT_RUNS: usize = 100;
/// A label value is cut to this many characters.
const MAX_LABEL: usize = 64;

/// Upper bounds of the latency histograms' buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One route's answers: how many by outcome, and how long they took.
#[derive(Default)]
pub struct Route {
    outcomes: Mutex<BTreeMap<&'static str, u64>>,
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Route {
    /// An answer with `outcome` (`upload_outcome`, `heartbeat_outcome`),
    /// `took` after its request arrived.
    pub fn answered(&self, outcome: &'static str, took: Duration) {
        *self
            .outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(outcome)
            .or_default() += 1;
        // The count first, the buckets after, highest first, and `routes`
        // reads them the other way round (lowest bucket first, the count
        // last): no bucket is ever seen above +Inf, nor above a higher
        // bucket (found in review).
        self.count.fetch_add(1, Ordering::SeqCst);
        self.sum_us
            .fetch_add(took.as_micros() as u64, Ordering::SeqCst);
        let secs = took.as_secs_f64();
        for (b, le) in self.buckets.iter().zip(LATENCY_BUCKETS).rev() {
            if secs <= le {
                b.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn outcomes(&self) -> BTreeMap<&'static str, u64> {
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The routes whose answers are counted.
#[derive(Default)]
pub struct Traffic {
    pub uploads: Route,
    pub heartbeats: Route,
}

/// Every reason a refusal gives, each written from the start (at 0), so
/// the first refusals after a restart are an increase Prometheus sees.
const REFUSALS: [&str; 15] = [
    "bad_request",
    "unauthorised",
    "forbidden",
    "not_found",
    "timeout",
    "conflict",
    "length_required",
    "too_large",
    "unsupported_type",
    "unprocessable",
    "rate_limited",
    "busy",
    "store_full",
    "server_error",
    "other",
];

/// Why an answer refused, from its status.
fn refusal(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthorised",
        403 => "forbidden",
        404 => "not_found",
        408 => "timeout",
        409 => "conflict",
        411 => "length_required",
        413 => "too_large",
        415 => "unsupported_type",
        422 => "unprocessable",
        429 => "rate_limited",
        503 => "busy",
        // --max-runs reached, or the store out of room.
        507 => "store_full",
        500..=599 => "server_error",
        _ => "other",
    }
}

/// An upload's outcome: "stored" (201), "already_stored" (200: the
/// bundle was there, a retry or a replay), or why it was refused.
pub fn upload_outcome(status: StatusCode) -> &'static str {
    match status.as_u16() {
        201 => "stored",
        200..=299 => "already_stored",
        _ => refusal(status),
    }
}

/// A heartbeat's outcome: "accepted", or why it was refused.
pub fn heartbeat_outcome(status: StatusCode) -> &'static str {
    match status.as_u16() {
        200..=299 => "accepted",
        _ => refusal(status),
    }
}

/// What the index and the board say, read for one scrape.
#[derive(Debug, Default, Clone)]
pub struct Fleet {
    /// Stored bundles by verdict.
    pub bundles: Vec<(String, u64)>,
    /// Drives by (model, verdict), the most common models first.
    pub drives: Vec<(String, String, u64)>,
    /// Bundles holding each model: what ranks the models named (one
    /// bundle listing 50 models of its own cannot push the fleet's out).
    pub model_bundles: Vec<(String, u64)>,
    /// Runs on the board by (state: running, stalled, stopped, finished;
    /// verdict so far: pass, fail, untested).
    pub runs: BTreeMap<(&'static str, &'static str), u64>,
    /// Running (or stalled) runs: (run id, seconds since last heard,
    /// stalled by the collector's own rule).
    pub silent: Vec<(String, u64, bool)>,
    /// The index answered, and how long its queries took.
    pub index_up: bool,
    pub index_seconds: f64,
    /// The last read of the store (the sync of other collectors' bundles)
    /// succeeded.
    pub store_up: bool,
}

/// A label value as Prometheus reads it.
fn label(v: &str) -> String {
    storcert_util::text::prometheus_label(v, MAX_LABEL)
}

/// A verdict as a label: one of a fixed set.
pub(crate) fn verdict(v: &str) -> &'static str {
    match v.to_ascii_lowercase().as_str() {
        "pass" => "pass",
        "fail" => "fail",
        "untested" => "untested",
        _ => "other",
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The page: every family with its HELP and TYPE, in a fixed order.
pub fn render(fleet: &Fleet, traffic: &Traffic, started: Instant) -> String {
    let mut out = String::new();
    routes(&mut out, traffic);
    family(
        &mut out,
        "storcert_bundles",
        "gauge",
        "Bundles in the index, by the verdict they carry.",
    );
    // What the index did not answer is left out, not written as 0: a
    // count falling to 0 and back would read as bundles stored (found in
    // review: a false StorcertRunFailed after an index outage).
    if fleet.index_up {
        let mut by_verdict: BTreeMap<&str, u64> =
            ["pass", "fail", "untested"].map(|v| (v, 0)).into();
        for (v, n) in &fleet.bundles {
            *by_verdict.entry(verdict(v)).or_default() += n;
        }
        for (v, n) in &by_verdict {
            let _ = writeln!(out, "storcert_bundles{{verdict=\"{v}\"}} {n}");
        }
    }
    drives(&mut out, fleet);
    family(
        &mut out,
        "storcert_runs",
        "gauge",
        "Runs on the board (the last 24 hours, and running runs of the last week), by state and verdict so far.",
    );
    // The board's rows come from the index too: left out with it.
    let states: &[&str] = match fleet.index_up {
        true => &["running", "stalled", "stopped", "finished"],
        false => &[],
    };
    for &state in states {
        for v in ["pass", "fail", "untested", "other"] {
            let n = fleet.runs.get(&(state, v)).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "storcert_runs{{state=\"{state}\",verdict=\"{v}\"}} {n}"
            );
        }
    }
    family(
        &mut out,
        "storcert_run_last_heard_seconds",
        "gauge",
        "Seconds since a running run's last heartbeat (100 runs: the stalled, most recently stalled first, then the longest silent of the others).",
    );
    let mut silent = fleet.silent.clone();
    // Stalled runs first, the most recently heard first: 100 runs
    // abandoned this week cannot hide a stall that began a minute ago
    // (found in review); then the running, the longest silent first.
    silent.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| match a.2 {
                true => a.1.cmp(&b.1),
                false => b.1.cmp(&a.1),
            })
            .then_with(|| a.0.cmp(&b.0))
    });
    for (run, s, _) in silent.iter().take(MAX_SILENT_RUNS) {
        let _ = writeln!(
            out,
            "storcert_run_last_heard_seconds{{run=\"{}\"}} {s}",
            // Whole (a valid run id is at most 190 plain characters): two
            // runs cut alike would be one series.
            storcert_util::text::prometheus_label(run, 256)
        );
    }
    family(
        &mut out,
        "storcert_index_up",
        "gauge",
        "1 if the index answered this scrape's queries, else 0.",
    );
    let _ = writeln!(out, "storcert_index_up {}", u8::from(fleet.index_up));
    family(
        &mut out,
        "storcert_index_query_seconds",
        "gauge",
        "How long this scrape's index queries took.",
    );
    let _ = writeln!(
        out,
        "storcert_index_query_seconds {:.6}",
        fleet.index_seconds
    );
    family(
        &mut out,
        "storcert_store_up",
        "gauge",
        "1 if the collector's last read of its store succeeded, else 0 (it retries, less often each time).",
    );
    let _ = writeln!(out, "storcert_store_up {}", u8::from(fleet.store_up));
    family(
        &mut out,
        "storcert_collector_uptime_seconds",
        "gauge",
        "Seconds since the collector started.",
    );
    let _ = writeln!(
        out,
        "storcert_collector_uptime_seconds {}",
        started.elapsed().as_secs()
    );
    out
}

/// Drives by model and verdict: the most common models named, the rest
/// summed as `other`.
fn drives(out: &mut String, fleet: &Fleet) {
    family(
        out,
        "storcert_drives",
        "gauge",
        "Drives in the index's bundles, by model (the 50 in most bundles) and verdict.",
    );
    let named = ranked_models(fleet);
    // The rest in a family of their own: a model that calls itself
    // "other" is not the sum of the others (found in review).
    let mut rows: BTreeMap<(String, &str), u64> = BTreeMap::new();
    let mut others: BTreeMap<&str, u64> = BTreeMap::new();
    for (model, v, n) in &fleet.drives {
        match named.contains(&model.as_str()) {
            true => *rows.entry((label(model), verdict(v))).or_default() += n,
            false => *others.entry(verdict(v)).or_default() += n,
        }
    }
    for ((model, v), n) in rows {
        let _ = writeln!(
            out,
            "storcert_drives{{model=\"{model}\",verdict=\"{v}\"}} {n}"
        );
    }
    // Each family's lines together, as the text format asks (found in
    // review: this HELP came between the other's TYPE and samples).
    family(
        out,
        "storcert_drives_other_models",
        "gauge",
        "Drives in the index's bundles of the models storcert_drives does not name, by verdict.",
    );
    for (v, n) in others {
        let _ = writeln!(out, "storcert_drives_other_models{{verdict=\"{v}\"}} {n}");
    }
}

/// The models `storcert_drives` names: those in the most bundles, then
/// with the most drives; none while the index is down.
fn ranked_models(fleet: &Fleet) -> Vec<&str> {
    if !fleet.index_up {
        return Vec::new();
    }
    let mut totals: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (model, _, n) in &fleet.drives {
        totals.entry(model).or_default().1 += n;
    }
    for (model, n) in &fleet.model_bundles {
        if let Some(t) = totals.get_mut(model.as_str()) {
            t.0 = *n;
        }
    }
    let mut ranked: Vec<(&str, (u64, u64))> = totals.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked.into_iter().take(MAX_MODELS).map(|r| r.0).collect()
}

/// The counters and latency histograms of uploads and heartbeats.
fn routes(out: &mut String, t: &Traffic) {
    let uploaded: &[&'static str] = &["stored", "already_stored"];
    for (route, name, what, successes) in [
        (&t.uploads, "uploads", "bundle uploads", uploaded),
        (&t.heartbeats, "heartbeats", "heartbeats", &["accepted"]),
    ] {
        let total = format!("storcert_{name}_total");
        family(
            out,
            &total,
            "counter",
            &format!(
                "Answered {what} (PUTs), by outcome: {}, or the reason refused.",
                successes.join(" or ")
            ),
        );
        let mut outcomes = route.outcomes();
        for o in successes.iter().chain(&REFUSALS) {
            outcomes.entry(o).or_default();
        }
        for (o, n) in outcomes {
            let _ = writeln!(out, "{total}{{outcome=\"{o}\"}} {n}");
        }
        let hist = format!("storcert_{name}_duration_seconds");
        family(
            out,
            &hist,
            "histogram",
            &format!("Time from a request's arrival to its answer, for {what}."),
        );
        for (b, le) in route.buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(
                out,
                "{hist}_bucket{{le=\"{le}\"}} {}",
                b.load(Ordering::SeqCst)
            );
        }
        let count = route.count.load(Ordering::SeqCst);
        let _ = writeln!(out, "{hist}_bucket{{le=\"+Inf\"}} {count}");
        let sum = route.sum_us.load(Ordering::SeqCst) as f64 / 1e6;
        let _ = writeln!(out, "{hist}_sum {sum:.6}");
        let _ = writeln!(out, "{hist}_count {count}");
    }
}

/// The route whose answers a layer counts for /metrics.
#[derive(Clone, Copy)]
pub(crate) enum Counted {
    Uploads,
    Heartbeats,
}

/// An answer's status and time, counted for /metrics (a route layer: a
/// GET to /upload/, answered 405 by the method router, is not an upload;
/// found in review).
pub(crate) async fn count_answers(
    State((c, counted)): State<(Shared, Counted)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let arrived = Instant::now();
    let r = next.run(req).await;
    let took = arrived.elapsed();
    match counted {
        Counted::Uploads => c.traffic.uploads.answered(upload_outcome(r.status()), took),
        Counted::Heartbeats => c
            .traffic
            .heartbeats
            .answered(heartbeat_outcome(r.status()), took),
    }
    r
}

/// A fleet read this recently is served again: a Prometheus pair, or a
/// reader in a loop, costs one read of the index a second, not one each.
const FLEET_FRESH: Duration = Duration::from_secs(1);

/// How long a scrape waits for the scrape before it to finish.
const SCRAPE_WAIT: Duration = Duration::from_secs(10);

impl Collector {
    /// The fleet for a scrape: the last one's if it is under a second
    /// old, else read afresh, one at a time. A scrape waits its turn rather
    /// than being refused: two scrapers at once got 503s, each a gap in
    /// every series (found in review).
    pub(crate) async fn scrape_fleet(self: &Arc<Self>) -> Result<Arc<Fleet>, Response> {
        if let Some(f) = self.recent_fleet() {
            return Ok(f);
        }
        let turn = tokio::time::timeout(SCRAPE_WAIT, self.metrics.clone().acquire_owned()).await;
        let Ok(Ok(turn)) = turn else {
            return Err(crate::Refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "a /metrics page is being made; try again".into(),
            )
            .retry_after("2"));
        };
        // Made while this one waited.
        if let Some(f) = self.recent_fleet() {
            return Ok(f);
        }
        let c = self.clone();
        let fleet = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            Arc::new(c.fleet_metrics())
        })
        .await
        .map_err(|e| crate::internal(e.into()).into_response())?;
        *self.last_fleet.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), fleet.clone()));
        Ok(fleet)
    }

    fn recent_fleet(&self) -> Option<Arc<Fleet>> {
        let last = self.last_fleet.lock().unwrap_or_else(|p| p.into_inner());
        last.as_ref()
            .filter(|(at, _)| at.elapsed() < FLEET_FRESH)
            .map(|(_, f)| f.clone())
    }

    /// What /metrics shows: the index's counts and the board's runs.
    pub(crate) fn fleet_metrics(&self) -> Fleet {
        let asked = Instant::now();
        let counted = self.cfg.index.metric_counts();
        let index_seconds = asked.elapsed().as_secs_f64();
        let mut fleet = Fleet {
            index_up: counted.is_ok(),
            index_seconds,
            // A failed read of the store backs the sync off until one
            // succeeds again.
            store_up: self.backoff().until.is_none(),
            ..Default::default()
        };
        if let Ok((bundles, drives, models)) = counted {
            (fleet.bundles, fleet.drives, fleet.model_bundles) = (bundles, drives, models);
        }
        // The board reads the same index: where it fails, the page still
        // answers, saying the index is down (found in review: a 500 with
        // no page, so StorcertCollectorIndexDown could never fire).
        let Ok(rows) = heartbeat::board_rows(self) else {
            fleet.index_up = false;
            return fleet;
        };
        for row in rows {
            let verdict = verdict(row.heartbeat.verdict.as_str());
            *fleet.runs.entry((row.shown.as_str(), verdict)).or_default() += 1;
            let stalled = row.shown == board::Shown::Stalled;
            if stalled || row.shown == board::Shown::Running {
                fleet
                    .silent
                    .push((row.heartbeat.run_id, row.silent_s, stalled));
            }
        }
        fleet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_labels_are_escaped_cut_and_bounded() {
        let fleet = Fleet {
            drives: (0..60)
                .map(|i| {
                    (
                        format!("M{i:02}\"}} evil{{x=\"\n"),
                        "pass".to_string(),
                        100 - i,
                    )
                })
                .chain([("A".repeat(500), "PWNED".into(), 1)])
                .collect(),
            silent: (0..150).map(|i| (format!("run-{i}\\"), i, false)).collect(),
            index_up: true,
            ..Fleet::default()
        };
        let page = render(&fleet, &Traffic::default(), Instant::now());
        // 50 models named, the other 11 summed apart: 10 passes of the
        // 60 and the long one's verdict, which is no verdict.
        let drives: Vec<&str> = page
            .lines()
            .filter(|l| l.starts_with("storcert_drives{"))
            .collect();
        assert_eq!(drives.len(), 50, "{page}");
        assert!(
            page.contains(
                "storcert_drives{model=\"M00\\\"} evil{x=\\\"\\n\",verdict=\"pass\"} 100"
            ),
            "{page}"
        );
        assert!(
            page.contains("storcert_drives_other_models{verdict=\"pass\"} "),
            "{page}"
        );
        assert!(
            page.contains("storcert_drives_other_models{verdict=\"other\"} 1"),
            "{page}"
        );
        assert!(!page.contains(&"A".repeat(65)));
        let runs: Vec<&str> = page
            .lines()
            .filter(|l| l.starts_with("storcert_run_last_heard_seconds{"))
            .collect();
        assert_eq!(runs.len(), MAX_SILENT_RUNS);
        assert_eq!(
            runs[0],
            "storcert_run_last_heard_seconds{run=\"run-149\\\\\"} 149"
        );
    }

    #[test]
    fn a_new_stall_and_the_fleet_s_models_are_named_whatever_floods_them() {
        // 100 runs stalled for days, one stalled a minute ago, one running:
        // the new stall is named first, the running one not at all.
        let mut silent: Vec<(String, u64, bool)> = (0..100)
            .map(|i| (format!("old-{i:03}"), 500_000 + i, true))
            .collect();
        silent.push(("new".into(), 960, true));
        silent.push(("busy".into(), 5, false));
        // One bundle listing 50 models of its own, three drives each; the
        // fleet's model in 10 bundles, one drive each.
        let mut drives: Vec<(String, String, u64)> = (0..50)
            .map(|i| (format!("JUNK-{i:02}"), "pass".to_string(), 3))
            .collect();
        drives.push(("KIOXIA".into(), "fail".into(), 10));
        let mut model_bundles: Vec<(String, u64)> =
            (0..50).map(|i| (format!("JUNK-{i:02}"), 1)).collect();
        model_bundles.push(("KIOXIA".into(), 10));
        let fleet = Fleet {
            silent,
            drives,
            model_bundles,
            index_up: true,
            ..Fleet::default()
        };
        let page = render(&fleet, &Traffic::default(), Instant::now());
        let runs: Vec<&str> = page
            .lines()
            .filter(|l| l.starts_with("storcert_run_last_heard_seconds{"))
            .collect();
        assert_eq!(runs.len(), MAX_SILENT_RUNS);
        assert_eq!(runs[0], "storcert_run_last_heard_seconds{run=\"new\"} 960");
        assert!(!page.contains("run=\"busy\""), "{page}");
        assert!(
            page.lines()
                .any(|l| l == "storcert_drives{model=\"KIOXIA\",verdict=\"fail\"} 10"),
            "{page}"
        );
        assert!(
            page.lines()
                .any(|l| l == "storcert_drives_other_models{verdict=\"pass\"} 3"),
            "{page}"
        );
        // Each family's HELP, TYPE and samples together.
        let at = |l: &str| page.find(l).unwrap();
        assert!(
            at("storcert_drives{model=") < at("# HELP storcert_drives_other_models"),
            "{page}"
        );
    }

    #[test]
    fn answers_are_counted_by_outcome_and_latency() {
        let t = Traffic::default();
        let up = |s: StatusCode, took| t.uploads.answered(upload_outcome(s), took);
        up(StatusCode::CREATED, Duration::from_millis(20));
        up(StatusCode::PAYLOAD_TOO_LARGE, Duration::from_millis(2));
        up(StatusCode::IM_A_TEAPOT, Duration::from_secs(60));
        up(StatusCode::OK, Duration::from_secs(60));
        let page = render(&Fleet::default(), &t, Instant::now());
        for line in [
            "storcert_uploads_total{outcome=\"stored\"} 1",
            "storcert_uploads_total{outcome=\"already_stored\"} 1",
            "storcert_uploads_total{outcome=\"too_large\"} 1",
            "storcert_uploads_total{outcome=\"other\"} 1",
            "storcert_uploads_duration_seconds_bucket{le=\"0.005\"} 1",
            "storcert_uploads_duration_seconds_bucket{le=\"0.025\"} 2",
            "storcert_uploads_duration_seconds_bucket{le=\"30\"} 2",
            "storcert_uploads_duration_seconds_bucket{le=\"+Inf\"} 4",
            "storcert_uploads_duration_seconds_count 4",
            "storcert_heartbeats_total{outcome=\"accepted\"} 0",
            "storcert_uploads_total{outcome=\"forbidden\"} 0",
            "storcert_index_up 0",
        ] {
            assert!(page.lines().any(|l| l == line), "{line}\n{page}");
        }
        // Every family has its HELP and TYPE.
        let families = page.lines().filter(|l| l.starts_with("# TYPE ")).count();
        assert_eq!(
            page.lines().filter(|l| l.starts_with("# HELP ")).count(),
            families
        );
        assert_eq!(families, 13);
    }

    #[test]
    fn what_the_index_did_not_answer_is_left_out_not_zero() {
        let down = Fleet {
            bundles: vec![("pass".into(), 5)],
            drives: vec![("M".into(), "fail".into(), 2)],
            ..Fleet::default()
        };
        let page = render(&down, &Traffic::default(), Instant::now());
        assert!(
            !page.lines().any(|l| l.starts_with("storcert_bundles{")),
            "{page}"
        );
        assert!(
            !page.lines().any(|l| l.starts_with("storcert_drives{")),
            "{page}"
        );
        assert!(
            !page.lines().any(|l| l.starts_with("storcert_runs{")),
            "{page}"
        );
        assert!(page.lines().any(|l| l == "storcert_index_up 0"), "{page}");
        let up = Fleet {
            index_up: true,
            ..down
        };
        let page = render(&up, &Traffic::default(), Instant::now());
        assert!(
            page.lines()
                .any(|l| l == "storcert_bundles{verdict=\"pass\"} 5"),
            "{page}"
        );
        // A long run id stays whole: two runs are two series.
        let runs = Fleet {
            silent: vec![
                ("r".repeat(100) + "1", 1, false),
                ("r".repeat(100) + "2", 2, false),
            ],
            ..Fleet::default()
        };
        let page = render(&runs, &Traffic::default(), Instant::now());
        assert_eq!(page.matches(&"r".repeat(100)).count(), 2, "{page}");
        assert!(
            page.contains(&format!("{}2\"}} 2", "r".repeat(100))),
            "{page}"
        );
    }
}
