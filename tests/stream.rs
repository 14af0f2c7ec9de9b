//! The streaming suite on loop devices and files: exact coverage, region
//! splitting, verify catching an overwritten block, fio's JSON shape, the
//! filesystem pass, dd mode, and bad input (too large, misaligned bs,
//! write errors, read-only device, Ctrl-C).

mod common;

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::process::Command;
use std::time::Duration;

use common::{failing_loop, json, storcert, Loop, Mount};
use serde_json::Value;

fn run_json(args: &[&str]) -> (std::process::Output, Value) {
    let out = storcert(args);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn both_passes_cover_exactly_the_asked_range_in_regions() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("d.img"), 256 << 20);
    // 40 MiB + 8 KiB over 3 jobs of 1 MiB blocks: regions of 13 MiB, the
    // last one with the 8 KiB tail.
    let size = (40u64 << 20) + 8192;
    let (out, v) = run_json(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        &size.to_string(),
        "--bs",
        "1M",
        "--qd",
        "4",
        "--jobs",
        "3",
        "--verify",
        "--output-format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["passes"].as_array().unwrap().len(), 2);
    for pass in v["passes"].as_array().unwrap() {
        let jobs = pass["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 3);
        let mut next = 0u64;
        for j in jobs {
            assert_eq!(j["offset"].as_u64().unwrap(), next, "gap or overlap");
            assert_eq!(j["bytes"], j["length"]);
            next += j["length"].as_u64().unwrap();
        }
        assert_eq!(next, size);
        assert_eq!(pass["group"]["bytes"].as_u64().unwrap(), size);
        assert_eq!(jobs[0]["length"].as_u64().unwrap(), 13 << 20);
        assert_eq!(jobs[2]["ios"].as_u64().unwrap(), 15);
    }
    let read = &v["passes"][1];
    assert_eq!(read["pass"], "read");
    assert_eq!(
        read["verify"]["blocks_checked"].as_u64().unwrap(),
        3 * 13 + 2
    );
    assert_eq!(read["verify"]["bad_blocks"], 0);
    // The device's own view.
    let disk = &read["disks"][0];
    assert!(disk["read_ios"].as_u64().unwrap() > 0);
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn verify_catches_a_block_overwritten_between_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("v.img");
    let lo = Loop::new(&img, 64 << 20);
    let (out, _) = run_json(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        "16M",
        "--bs",
        "1M",
        "--pattern",
        "write",
        "--verify",
        "--seed",
        "77",
        "--output-format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(lo);
    // Between the passes: block 5 gets block 2's contents (a misdirected
    // write), block 9 one flipped byte, block 12 zeros.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&img)
        .unwrap();
    let mut block2 = vec![0u8; 1 << 20];
    use std::os::unix::fs::FileExt;
    f.read_exact_at(&mut block2, 2 << 20).unwrap();
    f.write_all_at(&block2, 5 << 20).unwrap();
    let mut byte = [0u8];
    f.read_exact_at(&mut byte, (9 << 20) + 777).unwrap();
    f.write_all_at(&[byte[0] ^ 0xff], (9 << 20) + 777).unwrap();
    f.seek(SeekFrom::Start(12 << 20)).unwrap();
    f.write_all(&vec![0u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    let lo = Loop::attach(&img, &["--direct-io=on"]);
    let (out, v) = run_json(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        "16M",
        "--bs",
        "1M",
        "--pattern",
        "read",
        "--verify",
        "--seed",
        "77",
        "--output-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "bad blocks fail the run");
    let verify = &v["passes"][0]["verify"];
    assert_eq!(verify["blocks_checked"], 16);
    assert_eq!(verify["bad_blocks"], 3);
    let bad: Vec<String> = verify["first_bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        bad,
        vec![
            format!(
                "{} offset 5242880: holds the block written for offset 2097152 (misdirected write)",
                lo.dev
            ),
            format!("{} offset 9437184: checksum mismatch (corrupted)", lo.dev),
            format!("{} offset 12582912: no verify header (lost write)", lo.dev),
        ]
    );
}

/// Every key path of a JSON value with the kind of its value
/// ("jobs.write.clat_ns.N" → "int"); the contents of maps keyed by data
/// (percentiles, bins, job and global options) are not paths.
fn paths(v: &Value, prefix: &str, out: &mut BTreeMap<String, &'static str>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(prefix.trim_end_matches('.').to_string(), kind);
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{prefix}{k}");
                if ["percentile", "bins", "job options", "global options"].contains(&k.as_str()) {
                    out.insert(p, "object");
                } else {
                    paths(child, &format!("{p}."), out);
                }
            }
        }
        // Jobs and disks: each entry against the same entry of fio's.
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                paths(child, &format!("{prefix}{i}."), out);
            }
        }
        _ => {}
    }
}

/// storcert's fio JSON against fio's own (Debian's fio 3.33) for the same
/// job on the same device: every key fio writes, with the same type, in
/// fio's order of percentiles; then fio's own JSON tool and fio-plot read
/// it.
#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn fio_json_is_fios_key_for_key_and_fios_tools_read_it() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("f.img"), 64 << 20);
    let (out, ours) = run_json(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        "8M",
        "--bs",
        "1M",
        "--qd",
        "4",
        "--output-format",
        "fio-json+",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // fio itself on the same device: a write job, then a read job in the
    // next group, as storcert's two passes.
    let fio = Command::new("fio")
        .args([
            "--ioengine=io_uring",
            "--direct=1",
            "--bs=1M",
            "--iodepth=4",
            "--size=8M",
            "--output-format=json+",
            "--name=write",
            "--rw=write",
        ])
        .arg(format!("--filename={}", lo.dev))
        .args(["--name=read", "--rw=read", "--stonewall"])
        .arg(format!("--filename={}", lo.dev))
        .output()
        .expect("fio (scripts/setup installs it)");
    let theirs = fio_output(&fio);
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    paths(&ours, "", &mut a);
    paths(&theirs, "", &mut b);
    let missing: Vec<&String> = b.keys().filter(|k| !a.contains_key(*k)).collect();
    assert!(
        missing.is_empty(),
        "keys fio writes and storcert lacks: {missing:?}"
    );
    let retyped: Vec<String> = b
        .iter()
        .filter(|(k, t)| a[*k] != **t)
        .map(|(k, t)| format!("{k}: fio {t}, storcert {}", a[k]))
        .collect();
    assert!(retyped.is_empty(), "{retyped:#?}");
    // One job per pass, each its own group, as fio's stonewall.
    assert_eq!(ours["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(ours["jobs"][1]["groupid"], 1);
    assert_eq!(ours["jobs"][0]["job options"]["rw"], "write");
    assert_eq!(ours["disk_util"].as_array().unwrap().len(), 1);
    // Percentiles in numeric order, as fio writes them.
    let order: Vec<f64> = ours["jobs"][0]["write"]["clat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    let w = &ours["jobs"][0]["write"];
    assert_eq!(w["io_bytes"].as_u64().unwrap(), 8 << 20);
    assert_eq!(
        ours["jobs"][1]["read"]["io_bytes"].as_u64().unwrap(),
        8 << 20
    );
    let bins: u64 = w["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(bins, 8);
    // fio's own json+ tool: a CSV with a row per bin.
    let json = tmp.path().join("ours.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&ours).unwrap()).unwrap();
    let csv = tmp.path().join("clat");
    let o = Command::new("fio_jsonplus_clat2csv")
        .arg(&json)
        .arg(&csv)
        .output()
        .expect("fio_jsonplus_clat2csv (Debian's fio package)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = std::fs::read_to_string(tmp.path().join("clat_job0")).unwrap();
    assert!(rows.lines().count() > 1, "{rows}");
    // fio-plot (PyPI): a latency histogram of the write job.
    let plots = tmp.path().join("plots");
    std::fs::create_dir_all(&plots).unwrap();
    std::fs::copy(&json, plots.join("ours.json")).unwrap();
    let png = tmp.path().join("hist.png");
    let o = Command::new("fio-plot")
        .env("MPLBACKEND", "Agg")
        .args([
            "-i",
            plots.to_str().unwrap(),
            "-T",
            "storcert",
            "-H",
            "-r",
            "write",
        ])
        .args(["-d", "4", "-n", "1", "-o", png.to_str().unwrap()])
        .output()
        .expect("fio-plot (scripts/setup installs it)");
    assert!(
        o.status.success() && std::fs::metadata(&png).is_ok_and(|m| m.len() > 10_000),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn text_output_has_fios_run_status_block_and_dd_mode_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("t.img");
    let out = storcert(&["stream", "--device", file.to_str().unwrap(), "--size", "8M"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Run status group 0 (all jobs):\n  WRITE: bw="),
        "{text}"
    );
    assert!(text.contains("\n   READ: bw="));
    assert!(text.contains(", io=8192KiB (8389kB), run="), "{text}");
    let out = storcert(&[
        "stream",
        "--device",
        file.to_str().unwrap(),
        "--size",
        "8M",
        "--dd",
        "--buffered",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    // Each pass says which it is, as the dd command it equals, then dd's
    // own line (two bare "copied" lines left the reader to guess).
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines[0],
        format!("write: as dd if=/dev/zero of={} bs=1048576", file.display())
    );
    assert!(
        lines[1].starts_with("8388608 bytes (8.4 MB, 8.0 MiB) copied, "),
        "{text}"
    );
    assert_eq!(
        lines[2],
        format!("read: as dd if={} of=/dev/null bs=1048576", file.display())
    );
    assert!(lines[3].starts_with("8388608 bytes (8.4 MB, 8.0 MiB) copied, "));
}

#[test]
fn filesystem_pass_reports_both_tables_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = |more: &[&str]| {
        let dir = tmp.path().to_str().unwrap();
        let mut args = vec!["stream", "--fs", dir, "--fs-size", "32M"];
        args.extend(more);
        storcert(&args)
    };
    let out = pass(&["--files", "300", "--output-format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tests: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["test"].as_str().unwrap())
        .collect();
    assert_eq!(
        tests,
        vec!["block write", "rewrite", "block read", "random seeks"]
    );
    let meta: Vec<&str> = v["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["test"].as_str().unwrap())
        .collect();
    assert_eq!(meta.len(), 6);
    assert!(meta.contains(&"random delete"));
    assert!(v["data"][0]["per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "left files behind"
    );
    // As text: the tables, then bonnie++'s CSV line last (48 columns);
    // a 32 MiB file is under twice any test machine's memory, and it is
    // said before the pass and in its output.
    let out = pass(&["--files", "1024"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("1.98,1.98,"), "{text}");
    assert_eq!(last.split(',').count(), 48, "{last}");
    assert_eq!(last.split(',').nth(5), Some("32M"), "{last}");
    assert_eq!(last.split(',').nth(19), Some("1"), "{last}");
    assert!(
        text.contains("warning: the file (32 MiB) is smaller than twice"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("storcert stream: warning: the file (32 MiB)"),
        "{err}"
    );
    let out = storcert(&["stream", "--fs", "/nonexistent-dir"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn bad_input_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("b.img"), 32 << 20);
    let err = |out: std::process::Output| {
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8(out.stderr)
            .unwrap()
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        err(storcert(&["stream", "--device", &lo.dev, "--size", "64M"])),
        format!(
            "storcert stream: --size 67108864 is larger than {} (33554432 bytes)",
            lo.dev
        )
    );
    // A 4096-byte-sector device takes no 6 KiB blocks.
    let img4k = tmp.path().join("4k.img");
    std::fs::File::create(&img4k)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let lo4k = Loop::attach(&img4k, &["--direct-io=on", "--sector-size", "4096"]);
    assert_eq!(
        err(storcert(&[
            "stream", "--device", &lo4k.dev, "--bs", "6k", "--size", "1M"
        ])),
        format!(
            "storcert stream: --bs 6144 is not a multiple of {}'s logical sector size (4096 bytes)",
            lo4k.dev
        )
    );
    assert!(err(storcert(&[
        "stream",
        "--device",
        &lo.dev,
        "--pattern",
        "write,trim"
    ]))
    .contains("unknown pass \"trim\""));
    assert!(err(storcert(&["stream", "--device", &lo.dev, "--bs", "huge"])).contains("--bs"));
    // A read-only device: writing is refused with the reason, reading works.
    let ro_img = tmp.path().join("ro.img");
    std::fs::File::create(&ro_img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let ro = Loop::attach(&ro_img, &["-r"]);
    assert!(err(storcert(&["stream", "--device", &ro.dev])).contains("is read-only"));
    let out = storcert(&[
        "stream",
        "--device",
        &ro.dev,
        "--pattern",
        "read",
        "--size",
        "4M",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn a_write_error_midway_stops_the_pass_and_says_how_much_was_done() {
    let tmp = tempfile::tempdir().unwrap();
    let (_fs, lo) = failing_loop(tmp.path());
    let (out, v) = run_json(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        "128M",
        "--bs",
        "1M",
        "--output-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let passes = v["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 1, "no read pass after a failed write pass");
    let job = &passes[0]["jobs"][0];
    let e = job["error"].as_str().unwrap();
    assert!(
        e.starts_with(&format!("{} write at offset ", lo.dev)),
        "{e}"
    );
    assert!(e.contains("bytes done)"), "{e}");
    let done = job["bytes"].as_u64().unwrap();
    assert!(done > 0 && done < 128 << 20, "{done}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("No space left on device"));
}

#[test]
fn ctrl_c_still_prints_valid_partial_json() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.img");
    // Buffered, one request at a time, small blocks: slow enough to stop.
    let child = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args([
            "stream",
            "--device",
            file.to_str().unwrap(),
            "--size",
            "4G",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--output-format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Interrupted once its write pass is under way (the handler is set
    // before any I/O): its file has blocks.
    common::wait_for("the stream's first writes", 60, || {
        std::fs::metadata(&file).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.blocks() > 0
        })
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).expect("valid JSON after Ctrl-C");
    assert_eq!(v["passes"][0]["interrupted"], true);
    let done = v["passes"][0]["group"]["bytes"].as_u64().unwrap();
    assert!(done > 0 && done < 4 << 30);
    let _ = json; // (shared helper, used by other test files)
}

/// docs/stream-schema.md, written down as types that refuse any field the
/// document does not name: the output must parse into them.
mod documented {
    // Fields mirror the document; parsing into them is the check.
    #![allow(dead_code)]
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Stream {
        pub artefact: String,
        pub schema_version: u32,
        pub seed: u64,
        pub storcert_version: String,
        pub engine: String,
        pub bs: u32,
        pub qd: u32,
        pub jobs_per_target: u32,
        pub direct: bool,
        pub targets: Vec<Target>,
        pub passes: Vec<Pass>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Target {
        pub path: String,
        pub device: Option<String>,
        pub size_bytes: u64,
        pub tested_bytes: u64,
        pub logical_sector_size: u32,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Pass {
        pub pass: String,
        pub jobs: Vec<Job>,
        pub group: Group,
        pub disks: Vec<DiskUtil>,
        pub verify: Option<Verify>,
        pub bw_timeline: Vec<u64>,
        pub elapsed_ms: u64,
        pub cpu: Option<Cpu>,
        pub interrupted: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Cpu {
        pub usr_ms: u64,
        pub sys_ms: u64,
        pub ctx: u64,
        pub majf: u64,
        pub minf: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Fio {
        pub clat_bins: Vec<(u32, u64)>,
        pub lat_ns: Vec<u64>,
        pub lat_us: Vec<u64>,
        pub lat_ms: Vec<u64>,
        pub depth: Vec<u64>,
        pub submit: Vec<u64>,
        pub complete: Vec<u64>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Job {
        pub name: String,
        pub target: usize,
        pub offset: u64,
        pub length: u64,
        pub bytes: u64,
        pub ios: u64,
        pub runtime_ms: u64,
        pub runtime_ns: u64,
        pub bw_bytes: f64,
        pub iops: f64,
        pub clat: Latency,
        pub bw_per_sec: Vec<u64>,
        pub bw_samples: Vec<f64>,
        pub fio: Fio,
        pub error: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Latency {
        pub n: u64,
        pub min_ns: u64,
        pub max_ns: u64,
        pub mean_ns: f64,
        pub stddev_ns: f64,
        pub percentiles: Vec<(f64, u64)>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Group {
        pub bytes: u64,
        pub aggr_bw_bytes: f64,
        pub min_bw_bytes: f64,
        pub max_bw_bytes: f64,
        pub min_runtime_ms: u64,
        pub max_runtime_ms: u64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DiskUtil {
        pub name: String,
        pub read_ios: u64,
        pub write_ios: u64,
        pub read_merges: u64,
        pub write_merges: u64,
        pub read_ticks: u64,
        pub write_ticks: u64,
        pub in_queue: u64,
        pub util: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Verify {
        pub blocks_checked: u64,
        pub bad_blocks: u64,
        pub first_bad: Vec<String>,
    }
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn own_json_matches_the_documented_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("s.img"), 64 << 20);
    let out = storcert(&[
        "stream",
        "--device",
        &lo.dev,
        "--size",
        "8M",
        "--jobs",
        "2",
        "--verify",
        "--output-format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: documented::Stream =
        serde_json::from_slice(&out.stdout).expect("output follows docs/stream-schema.md");
    assert_eq!(doc.artefact, "stream");
    assert_eq!(doc.schema_version, 1);
    assert_eq!(doc.passes.len(), 2);
    assert_eq!(doc.passes[1].pass, "read");
    let clat = &doc.passes[0].jobs[0].clat;
    assert_eq!(clat.percentiles.len(), 17);
    assert!(clat.min_ns <= clat.max_ns && clat.n > 0);
    assert!(doc.passes[1].verify.as_ref().unwrap().bad_blocks == 0);
    let fio = &doc.passes[0].jobs[0].fio;
    assert_eq!(fio.lat_ns.len() + fio.lat_us.len() + fio.lat_ms.len(), 32);
    assert_eq!(fio.depth.iter().sum::<u64>(), doc.passes[0].jobs[0].ios);
    assert_eq!(
        fio.clat_bins.iter().map(|b| b.1).sum::<u64>(),
        doc.passes[0].jobs[0].ios
    );
    assert!(fio.submit.len() == 7 && fio.complete.len() == 7);
    assert!(doc.passes[0].elapsed_ms > 0 && doc.passes[0].cpu.is_some());
    assert!(doc.passes[0].verify.is_none());
}

#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn a_file_where_o_direct_is_refused_is_streamed_buffered_and_says_so() {
    // Some filesystems refuse O_DIRECT with EINVAL: ramfs always, tmpfs
    // before Linux 6.6 (the boot image's /var/lib is one). The pass still
    // runs, through the page cache, and the results record it.
    let tmp = tempfile::tempdir().unwrap();
    let fs = Mount::ramfs(&tmp.path().join("fs"));
    let file = fs.0.join("scratch.img");
    let (out, v) = run_json(&[
        "stream",
        "--device",
        file.to_str().unwrap(),
        "--size",
        "8M",
        "--verify",
        "--output-format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["direct"], false, "{v}");
    assert_eq!(v["passes"][1]["verify"]["bad_blocks"], 0, "{v}");
}

/// The per-second figures as fio computes them, checked against fio's own
/// on one job: fio runs a rate-limited write on a loop device and logs
/// every I/O's completion; storcert's windows and statistics, fed those
/// completions, give fio's bw_min, bw_max, bw_mean and bw_dev (to the
/// millisecond of fio's log and a window edge's one I/O) and its sample
/// count. The rate is far below the device's, so a busy machine changes
/// the completions both sides read, not the agreement.
#[test]
#[ignore = "needs root: loop devices; scripts/test runs it"]
fn bandwidth_statistics_are_fios_on_fios_own_completions() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("f.img"), 64 << 20);
    let log = tmp.path().join("w");
    let fio = Command::new("fio")
        .args([
            "--name=w",
            "--rw=write",
            "--direct=1",
            "--bs=64k",
            "--size=40M",
            "--rate=10m",
            "--log_avg_msec=0",
            "--output-format=json",
        ])
        .arg(format!("--filename={}", lo.dev))
        .arg(format!("--write_lat_log={}", log.display()))
        .output()
        .expect("fio (scripts/setup installs it)");
    let theirs = fio_output(&fio);
    let w = &theirs["jobs"][0]["write"];
    // "time (ms), latency, direction, block size, offset[, priority]",
    // one line per I/O, timed from the job's start.
    let clat = std::fs::read_to_string(tmp.path().join("w_clat.1.log")).unwrap();
    let mut windows = Vec::new();
    let mut done_at = Vec::new();
    for line in clat.lines() {
        let f: Vec<u64> = line.split(',').map(|x| x.trim().parse().unwrap()).collect();
        storcert::stream::add_to_window(&mut windows, Duration::from_millis(f[0]), f[3]);
        done_at.push(f[0]);
    }
    assert_eq!(done_at.len(), 640, "one line per I/O");
    let runtime = Duration::from_millis(w["runtime"].as_u64().unwrap());
    let samples = storcert::stream::bw_samples(&windows, runtime);
    let (min, max, mean, dev) = storcert::results::stream::fio_stats(&samples);
    let fio = |k: &str| w[k].as_f64().unwrap();
    // fio times its samples from a helper thread and divides by the time
    // that really passed; storcert cuts the log on a fixed grid. Where the
    // completions came steadily the two agree to an I/O at each window
    // edge (80 I/Os of 64 KiB a window at 10 MiB/s). Where a busy machine
    // held fio back, the completions bunch up and the two grids may each
    // catch a different bunch: the test allows what the log itself shows,
    // the spread between the fullest and the emptiest half second.
    let one_io = 64.0 / 0.5;
    let unsteady = one_io * half_second_spread(&done_at) as f64;
    println!(
        "fio: min {} max {} mean {:.1} dev {:.1} n {}; storcert on fio's completions: \
         min {min:.0} max {max:.0} mean {mean:.1} dev {dev:.1} n {}; completions unsteady by \
         {unsteady} KiB/s",
        fio("bw_min"),
        fio("bw_max"),
        fio("bw_mean"),
        fio("bw_dev"),
        fio("bw_samples"),
        samples.len()
    );
    let edges = 2.0 * one_io + unsteady;
    assert!((fio("bw_samples") - samples.len() as f64).abs() <= 1.0);
    assert!(
        (fio("bw_mean") - mean).abs() <= one_io + unsteady / samples.len() as f64,
        "mean {mean}"
    );
    assert!((fio("bw_min") - min).abs() <= edges, "min {min}");
    assert!((fio("bw_max") - max).abs() <= edges, "max {max}");
    assert!((fio("bw_dev") - dev).abs() <= edges, "dev {dev}");
}

/// How many more I/Os the fullest half second of a run completed than the
/// emptiest, over every half second that starts at a completion and ends
/// before the last: 0 or 1 where the completions came steadily.
fn half_second_spread(done_at_ms: &[u64]) -> usize {
    let mut sorted = done_at_ms.to_vec();
    sorted.sort_unstable();
    let last = *sorted.last().unwrap();
    let (mut fewest, mut most) = (usize::MAX, 0);
    let mut end = 0;
    for (start, &t) in sorted.iter().enumerate() {
        if t + 500 > last {
            break;
        }
        while end < sorted.len() && sorted[end] < t + 500 {
            end += 1;
        }
        fewest = fewest.min(end - start);
        most = most.max(end - start);
    }
    most.saturating_sub(fewest)
}

/// fio's JSON output, once fio succeeded.
fn fio_output(fio: &std::process::Output) -> Value {
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    serde_json::from_slice(&fio.stdout).unwrap()
}
