//! fio's JSON output (`--output-format=json`, and `json+` with the
//! completion latency bins), key for key as fio 3.33 writes it for the
//! same job file, so fio's own tools (`fio_jsonplus_clat2csv`) and
//! fio-plot read storcert's results.
//!
//! The job file it corresponds to: the `global options` (engine, direct,
//! bs, iodepth, numjobs) and one job per pass and region, each pass its
//! own group (`stonewall`): the write pass, then the read pass. Where
//! storcert differs from fio, the figure is still fio's: the CPU figures
//! are the pass's thread's (its jobs share one thread, fio gives each its
//! own), and there is no submission latency (`slat_ns` has N = 0; `lat_ns`
//! is the completion latency, submission to completion).

use serde_json::{json, Map, Value};

use super::super::fio_stats::{dist, lat_dist, percentiles};
use super::super::{JobResult, Pass, PassResult, StreamResult};

const LAT_KEYS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
const DEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

fn zero_stat() -> Value {
    json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0})
}

fn keyed(keys: &[&str], values: &[f64]) -> Value {
    let mut m = Map::new();
    for (i, k) in keys.iter().enumerate() {
        m.insert(k.to_string(), json!(values.get(i).copied().unwrap_or(0.0)));
    }
    Value::Object(m)
}

/// Completion latency: figures, fio's percentiles (from its bins, in
/// numeric order) and, for json+, the bins that are not empty.
fn clat(j: &JobResult, plus: bool) -> Value {
    let c = &j.clat;
    if c.n == 0 {
        return zero_stat();
    }
    let mut v = json!({"min": c.min_ns, "max": c.max_ns, "mean": c.mean_ns, "stddev": c.stddev_ns, "N": c.n});
    let mut pct = Map::new();
    for (p, ns) in percentiles(&j.fio.clat_bins) {
        pct.insert(format!("{p:.6}"), json!(ns));
    }
    v["percentile"] = Value::Object(pct);
    if plus {
        let mut bins = Map::new();
        for &(idx, count) in &j.fio.clat_bins {
            bins.insert(
                super::super::fio_stats::plat_idx_to_val(idx as usize).to_string(),
                json!(count),
            );
        }
        v["bins"] = Value::Object(bins);
    }
    v
}

/// One direction of a job; `group_bw` is its group's aggregate bandwidth
/// (bytes/s), which `bw_agg` is a percentage of.
fn direction(j: Option<&JobResult>, bs: u32, group_bw: f64, plus: bool) -> Value {
    let Some(j) = j else {
        return json!({
            "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0,
            "total_ios": 0, "short_ios": 0, "drop_ios": 0,
            "slat_ns": zero_stat(), "clat_ns": zero_stat(), "lat_ns": zero_stat(),
            "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
            "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0,
        });
    };
    // fio's bandwidth samples (KiB/s, one per 500 ms window) and its
    // statistics of them.
    let (min, max, mean, dev) = storcert_results::stream::fio_stats(&j.bw_samples);
    let agg = if group_bw > 0.0 && !j.bw_samples.is_empty() {
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
    let mut lat = clat(j, false);
    if let Some(o) = lat.as_object_mut() {
        o.remove("percentile");
    }
    json!({
        "io_bytes": j.bytes,
        "io_kbytes": j.bytes / 1024,
        "bw_bytes": j.bw_bytes.round() as u64,
        "bw": (j.bw_bytes / 1024.0).round() as u64,
        "iops": j.iops,
        "runtime": j.runtime_ms,
        "total_ios": j.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": zero_stat(),
        "clat_ns": clat(j, plus),
        "lat_ns": lat,
        "bw_min": min.round() as u64,
        "bw_max": max.round() as u64,
        "bw_agg": agg,
        "bw_mean": mean,
        "bw_dev": dev,
        "bw_samples": j.bw_samples.len(),
        "iops_min": to_iops(min).round() as u64,
        "iops_max": to_iops(max).round() as u64,
        "iops_mean": to_iops(mean),
        "iops_stddev": to_iops(dev),
        "iops_samples": j.bw_samples.len(),
    })
}

fn pass_name(p: Pass) -> &'static str {
    match p {
        Pass::Write => "write",
        Pass::Read => "read",
    }
}

fn job(r: &StreamResult, group: usize, p: &PassResult, j: &JobResult, plus: bool) -> Value {
    let name = pass_name(p.pass);
    let jobname = format!("{name}-{}", j.name);
    let target = &r.targets[j.target];
    let f = &j.fio;
    let ios: u64 = f.depth.iter().sum();
    let lats = j.ios;
    let (usr, sys, cpu) = match &p.cpu {
        Some(c) if j.runtime_ms > 0 => (
            c.usr_ms as f64 * 100.0 / j.runtime_ms as f64,
            c.sys_ms as f64 * 100.0 / j.runtime_ms as f64,
            c.clone(),
        ),
        Some(c) => (0.0, 0.0, c.clone()),
        None => (0.0, 0.0, Default::default()),
    };
    let dir = |d: Pass| {
        (p.pass == d).then_some(j).map_or_else(
            || direction(None, r.bs, 0.0, plus),
            |j| direction(Some(j), r.bs, p.group.aggr_bw_bytes, plus),
        )
    };
    json!({
        "jobname": jobname,
        "groupid": group,
        "error": if j.error.is_some() { libc::EIO } else { 0 },
        "eta": 0,
        "elapsed": j.runtime_ms.div_ceil(1000),
        "job options": {
            "name": jobname,
            "filename": target.path,
            "rw": name,
            "offset": j.offset.to_string(),
            "size": j.length.to_string(),
        },
        "read": dir(Pass::Read),
        "write": dir(Pass::Write),
        "trim": direction(None, r.bs, 0.0, plus),
        "sync": {"total_ios": 0, "lat_ns": zero_stat()},
        "job_runtime": j.runtime_ms,
        "usr_cpu": usr,
        "sys_cpu": sys,
        "ctx": cpu.ctx,
        "majf": cpu.majf,
        "minf": cpu.minf,
        "iodepth_level": keyed(&DEPTH_KEYS, &dist(&f.depth, ios)),
        "iodepth_submit": keyed(&BATCH_KEYS, &dist(&f.submit, f.submit.iter().sum())),
        "iodepth_complete": keyed(&BATCH_KEYS, &dist(&f.complete, f.complete.iter().sum())),
        "latency_ns": keyed(&LAT_KEYS, &lat_dist(&f.lat_ns, lats)),
        "latency_us": keyed(&LAT_KEYS, &lat_dist(&f.lat_us, lats)),
        "latency_ms": keyed(
            &[&LAT_KEYS[..], &["2000", ">=2000"]].concat(),
            &lat_dist(&f.lat_ms, lats)
        ),
        "latency_depth": r.qd,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    })
}

/// The fio JSON document; `plus`: json+ (with the latency bins).
pub fn render(r: &StreamResult, plus: bool) -> Value {
    let now = std::time::SystemTime::now();
    let since = now
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut jobs = Vec::new();
    for (group, p) in r.passes.iter().enumerate() {
        for j in &p.jobs {
            jobs.push(job(r, group, p, j, plus));
        }
    }
    let disk_util: Vec<Value> = r
        .disks()
        .iter()
        .map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
        .collect();
    json!({
        "fio version": format!("storcert-{}", r.storcert_version),
        "timestamp": since.as_secs(),
        "timestamp_ms": since.as_millis() as u64,
        "time": humantime::format_rfc3339_seconds(now).to_string(),
        "global options": {
            "ioengine": if r.engine == "io_uring" { "io_uring" } else { "psync" },
            "direct": if r.direct { "1" } else { "0" },
            "bs": r.bs.to_string(),
            "iodepth": r.qd.to_string(),
            "numjobs": r.jobs_per_target.to_string(),
        },
        "jobs": jobs,
        "disk_util": disk_util,
    })
}
