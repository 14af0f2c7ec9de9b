//! fio's JSON output shape (as fio 3.x writes with --output-format=json),
//! with "fio version" replaced by "storcert version", so tools that read
//! fio JSON read storcert's: jobs[] with read/write objects (io_bytes, bw,
//! bw_bytes, iops, runtime, clat_ns with percentiles, ...) and disk_util[].

use serde_json::{json, Map, Value};

use super::super::{JobResult, Pass, StreamResult};

fn empty_dir() -> Value {
    direction(None, 0, 0.0)
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

/// One direction of a job; `group_bw` is its group's aggregate bandwidth
/// (bytes/s), which `bw_agg` is a percentage of.
fn direction(j: Option<&JobResult>, bs: u32, group_bw: f64) -> Value {
    let (bytes, bw_bytes, iops, runtime, ios) = j
        .map(|j| (j.bytes, j.bw_bytes, j.iops, j.runtime_ms, j.ios))
        .unwrap_or((0, 0.0, 0.0, 0, 0));
    // fio's bandwidth samples (KiB/s, one per 500 ms window) and its
    // statistics of them.
    let samples: &[f64] = j.map(|j| j.bw_samples.as_slice()).unwrap_or_default();
    let (min, max, mean, dev) = crate::results::stream::fio_stats(samples);
    let agg = if group_bw > 0.0 && !samples.is_empty() {
        mean * 100.0 / (group_bw / 1024.0)
    } else {
        0.0
    };
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
        "bw_min": min.round() as u64,
        "bw_max": max.round() as u64,
        "bw_agg": agg,
        "bw_mean": mean,
        "bw_dev": dev,
        "bw_samples": samples.len(),
        "iops_min": to_iops(min).round() as u64,
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
                .and_then(|p| p.jobs.get(i).map(|j| (j, p.group.aggr_bw_bytes)))
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
            "read": of(Pass::Read).map(|(j, g)| direction(Some(j), r.bs, g)).unwrap_or_else(empty_dir),
            "write": of(Pass::Write).map(|(j, g)| direction(Some(j), r.bs, g)).unwrap_or_else(empty_dir),
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
