//! fio's JSON output shape (as fio 3.x writes with --output-format=json),
//! with "fio version" replaced by "storcert version", so tools that read
//! fio JSON read storcert's: jobs[] with read/write objects (io_bytes, bw,
//! bw_bytes, iops, runtime, clat_ns with percentiles, ...) and disk_util[].

use serde_json::{json, Map, Value};

use super::super::{JobResult, Pass, StreamResult};

fn empty_dir() -> Value {
    direction(None, 0)
}

fn latency(j: Option<&JobResult>) -> Value {
    let Some(j) = j else {
        return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    };
    let c = &j.clat;
    let mut pct = Map::new();
    for (p, ns) in &c.percentiles {
        pct.insert(format!("{p:.6}"), json!(ns));
    }
    json!({"min": c.min_ns, "max": c.max_ns, "mean": c.mean_ns, "stddev": c.stddev_ns, "N": c.n, "percentile": pct})
}

fn direction(j: Option<&JobResult>, bs: u32) -> Value {
    let (bytes, bw_bytes, iops, runtime, ios) = j
        .map(|j| (j.bytes, j.bw_bytes, j.iops, j.runtime_ms, j.ios))
        .unwrap_or((0, 0.0, 0.0, 0, 0));
    // Per-second bandwidth samples in KiB/s, as fio's bw_* fields.
    let samples: Vec<f64> = j
        .map(|j| j.bw_per_sec.iter().map(|&b| b as f64 / 1024.0).collect())
        .unwrap_or_default();
    let n = samples.len().max(1) as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let dev = (samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n).sqrt();
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(0.0, f64::max);
    let to_iops = |kib: f64| {
        if bs > 0 {
            kib * 1024.0 / bs as f64
        } else {
            0.0
        }
    };
    json!({
        "io_bytes": bytes,
        "io_kbytes": bytes / 1024,
        "bw_bytes": bw_bytes.round() as u64,
        "bw": (bw_bytes / 1024.0).round() as u64,
        "iops": iops,
        "runtime": runtime,
        "total_ios": ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": latency(j),
        "lat_ns": latency(j),
        "bw_min": if min.is_finite() { min.round() as u64 } else { 0 },
        "bw_max": max.round() as u64,
        "bw_agg": if j.is_some() { 100.0 } else { 0.0 },
        "bw_mean": mean,
        "bw_dev": dev,
        "bw_samples": samples.len(),
        "iops_min": if min.is_finite() { to_iops(min).round() as u64 } else { 0 },
        "iops_max": to_iops(max).round() as u64,
        "iops_mean": to_iops(mean),
        "iops_stddev": to_iops(dev),
        "iops_samples": samples.len(),
    })
}

pub fn render(r: &StreamResult) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    // One fio job per region of a target, holding both passes.
    let first = r.passes.first().map(|p| p.jobs.len()).unwrap_or(0);
    let mut jobs = Vec::new();
    for i in 0..first {
        let of = |pass: Pass| {
            r.passes
                .iter()
                .find(|p| p.pass == pass)
                .and_then(|p| p.jobs.get(i))
        };
        let any = r
            .passes
            .iter()
            .find_map(|p| p.jobs.get(i))
            .expect("index in range");
        let error = if r
            .passes
            .iter()
            .any(|p| p.jobs.get(i).is_some_and(|j| j.error.is_some()))
        {
            5
        } else {
            0
        };
        let target = &r.targets[any.target];
        jobs.push(json!({
            "jobname": any.name,
            "groupid": 0,
            "error": error,
            "job options": {
                "filename": target.path,
                "bs": r.bs.to_string(),
                "iodepth": r.qd.to_string(),
                "rw": r.passes.iter().map(|p| match p.pass { Pass::Write => "write", Pass::Read => "read" }).collect::<Vec<_>>().join(","),
                "size": any.length.to_string(),
                "offset": any.offset.to_string(),
                "direct": if r.direct { "1" } else { "0" },
            },
            "read": of(Pass::Read).map(|j| direction(Some(j), r.bs)).unwrap_or_else(empty_dir),
            "write": of(Pass::Write).map(|j| direction(Some(j), r.bs)).unwrap_or_else(empty_dir),
            "trim": empty_dir(),
            "job_runtime": r.passes.iter().filter_map(|p| p.jobs.get(i)).map(|j| j.runtime_ms).sum::<u64>(),
        }));
    }
    let disk_util: Vec<Value> = r
        .disks()
        .iter()
        .map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
        .collect();
    json!({
        "storcert version": format!("storcert-{}", r.storcert_version),
        "timestamp": now.as_secs(),
        "timestamp_ms": now.as_millis() as u64,
        "time": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "jobs": jobs,
        "disk_util": disk_util,
    })
}
