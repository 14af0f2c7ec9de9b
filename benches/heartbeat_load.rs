//! Heartbeat load on one or more collectors (scripts/bench/collect-load
//! drives it): N simulated machines each send a signed heartbeat every
//! interval, at a random phase, round-robin over the collectors given;
//! prints the count, errors and latency percentiles, then checks that
//! every collector's board holds every machine at its last acknowledged
//! heartbeat (nothing lost, whichever collector took it).
//!
//! usage: heartbeat_load --key K --machines 1000 --interval 30 --seconds 120
//!            [--token T] [--settle 12] URL [URL ...]
//! (URL: a collector's base, http://127.0.0.1:8420)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use storcert::results::heartbeat::{Heartbeat, Progress, RunState, SCHEMA_VERSION};
use storcert::results::summary::Machine;
use storcert::results::Verdict;

struct Args {
    key: String,
    machines: usize,
    interval: u64,
    seconds: u64,
    token: Option<String>,
    settle: u64,
    urls: Vec<String>,
}

fn args() -> Args {
    let mut a = Args {
        key: String::new(),
        machines: 1000,
        interval: 30,
        seconds: 120,
        token: None,
        settle: 12,
        urls: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("a value after the flag");
        match x.as_str() {
            "--key" => a.key = val(),
            "--machines" => a.machines = val().parse().expect("--machines N"),
            "--interval" => a.interval = val().parse().expect("--interval SECONDS"),
            "--seconds" => a.seconds = val().parse().expect("--seconds SECONDS"),
            "--token" => a.token = Some(val()),
            "--settle" => a.settle = val().parse().expect("--settle SECONDS"),
            // What `cargo bench` passes to a harness-less bench.
            "--bench" => {}
            u => a.urls.push(u.trim_end_matches('/').to_string()),
        }
    }
    if a.key.is_empty() || a.urls.is_empty() {
        // Run bare by `cargo bench`: it needs collectors, which
        // scripts/bench/collect-load starts.
        eprintln!(
            "usage: heartbeat_load --key K [--machines N] [--interval S] [--seconds S] URL... \
             (scripts/bench/collect-load --fleet runs it)"
        );
        std::process::exit(0);
    }
    a
}

fn heartbeat(i: usize, seq: u64, done: u64) -> Heartbeat {
    Heartbeat {
        schema_version: SCHEMA_VERSION,
        run_id: format!("load-SRV-{i:05}"),
        seq,
        sent_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: Machine {
            vendor: Some("Dell Inc.".into()),
            product: Some("PowerEdge R660".into()),
            serial: Some(format!("SRV-{i:05}")),
            uuid: None,
            hostname: Some(format!("rack-{i:05}")),
        },
        profile: "burn-in".into(),
        tag: Some("PO-4471".into()),
        state: RunState::Running,
        stage: Some("act storage 3x nvme0n1".into()),
        stages_done: 4,
        stages_failed: vec![],
        progress: (0..4)
            .map(|d| Progress {
                key: format!("act storage 3x nvme{d}n1"),
                done,
                total: 86_400,
                unit: "s".into(),
                pct_over_1ms: Some(0.4 + d as f64 / 10.0),
            })
            .collect(),
        live_pct_over_1ms: Some(0.7),
        verdict: Verdict::Pass,
        errors: vec![],
        eta_s: Some(86_400 - done),
        interval_s: 30,
        bundle: None,
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p / 100.0).round() as usize]
}

#[tokio::main]
async fn main() {
    let a = args();
    // The process's TLS provider, as storcert's own clients install it.
    storcert::upload::tls::use_ring();
    let key =
        Arc::new(storcert::bundle::keys::read_secret_key(std::path::Path::new(&a.key)).unwrap());
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    // Machine → its last acknowledged seq.
    let acked = Arc::new(Mutex::new(BTreeMap::<usize, u64>::new()));
    let start = Instant::now();
    let end = start + Duration::from_secs(a.seconds);
    let base_seq = storcert::collect::board::now_ms();
    let mut tasks = Vec::new();
    for i in 0..a.machines {
        let (http, key, latencies, errors, acked) = (
            http.clone(),
            key.clone(),
            latencies.clone(),
            errors.clone(),
            acked.clone(),
        );
        let url = format!("{}/heartbeat/load-SRV-{i:05}", a.urls[i % a.urls.len()]);
        let token = a.token.clone();
        let interval = Duration::from_secs(a.interval);
        // Machines boot over the first interval, not in lockstep.
        let phase = interval.mul_f64(i as f64 / a.machines as f64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(phase).await;
            let mut seq = base_seq;
            let mut next = Instant::now();
            while next < end {
                seq += 1;
                let hb = heartbeat(i, seq, start.elapsed().as_secs());
                let body = serde_json::to_vec(&hb).unwrap();
                let sig =
                    key.sign_minisig(&body, &format!("storcert heartbeat {} {seq}", hb.run_id));
                let mut req = http
                    .put(&url)
                    .header("content-type", "application/json")
                    .header(
                        "x-storcert-minisig",
                        base64::engine::general_purpose::STANDARD.encode(sig),
                    )
                    .body(body);
                if let Some(t) = &token {
                    req = req.bearer_auth(t);
                }
                let t0 = Instant::now();
                match req.send().await {
                    Ok(r) if r.status().is_success() => {
                        let ms = t0.elapsed().as_secs_f64() * 1000.0;
                        latencies.lock().unwrap().push(ms);
                        acked.lock().unwrap().insert(i, seq);
                    }
                    Ok(r) => {
                        *errors
                            .lock()
                            .unwrap()
                            .entry(format!("HTTP {}", r.status().as_u16()))
                            .or_default() += 1
                    }
                    Err(e) => *errors.lock().unwrap().entry(e.to_string()).or_default() += 1,
                }
                next += interval;
                tokio::time::sleep_until(next.into()).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut l = latencies.lock().unwrap().clone();
    l.sort_by(f64::total_cmp);
    let errors = errors.lock().unwrap().clone();
    println!(
        "heartbeats:  {} machines every {} s for {} s, {} to {} collector(s): {} acknowledged, {} refused or failed {:?}",
        a.machines,
        a.interval,
        a.seconds,
        l.len() + errors.values().sum::<u64>() as usize,
        a.urls.len(),
        l.len(),
        errors.values().sum::<u64>(),
        errors
    );
    println!(
        "latency ms:  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        pct(&l, 50.0),
        pct(&l, 90.0),
        pct(&l, 99.0),
        pct(&l, 100.0)
    );
    // Every board shows every machine at its last acknowledged heartbeat
    // (a collector sharing the store picks up the others' within its sync
    // interval).
    tokio::time::sleep(Duration::from_secs(a.settle)).await;
    let acked = acked.lock().unwrap().clone();
    let mut lost = 0;
    for u in &a.urls {
        let mut req = http.get(format!("{u}/api/board"));
        if let Some(t) = &a.token {
            req = req.bearer_auth(t);
        }
        let rows: Vec<serde_json::Value> = req.send().await.unwrap().json().await.unwrap();
        let seen: BTreeMap<String, u64> = rows
            .iter()
            .map(|r| {
                (
                    r["heartbeat"]["run_id"].as_str().unwrap_or("").to_string(),
                    r["heartbeat"]["seq"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        let missing = acked
            .iter()
            .filter(|(i, seq)| seen.get(&format!("load-SRV-{i:05}")) != Some(seq))
            .count();
        lost += missing;
        println!(
            "board {u}: {} of {} machines at their last acknowledged heartbeat",
            acked.len() - missing,
            acked.len()
        );
    }
    if lost > 0 || !errors.is_empty() {
        std::process::exit(1);
    }
}
