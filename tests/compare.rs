//! `storcert compare` and the report's comparison: the same drive across
//! loads, and with and without spare area, from logs whose latencies the
//! test sets (so the verdicts are known), in folders laid out as `storcert
//! run` writes them.

mod common;

use std::path::Path;

use common::{s, storcert};

/// An ACT storage log of `device` at `load`x: one report after 10 s of
/// 20,000 reads, `slow_per_10k` of each 10,000 in bucket 1 (over 1 ms,
/// under 2 ms) and `very_slow_per_10k` in bucket 4 (over 8 ms).
fn act_log(device: &str, load: f64, slow_per_10k: u64, very_slow_per_10k: u64) -> String {
    let reads = 20_000u64;
    let slow = slow_per_10k * 2;
    let very = very_slow_per_10k * 2;
    format!(
        "\nACT version 6.6\nStorage device IO test\n\nACT-STORAGE CONFIGURATION\n\
         device-names: {device}\nnum-devices: 1\ntest-duration-sec: 10\nreport-interval-sec: 10\n\
         microsecond-histograms: no\nread-reqs-per-sec: {}\nwrite-reqs-per-sec: {}\n\n\
         DERIVED CONFIGURATION\nrecord-stored-bytes: 1536 ... 1536\n\n\
         HISTOGRAM NAMES\nreads\n\nafter 10 sec:\nreads ({reads} total)\n (00: {:010}) (01: {slow:010}) (04: {very:010})\n\n",
        (load * 2000.0) as u64,
        (load * 1000.0) as u64,
        reads - slow - very
    )
}

fn write(path: &Path, data: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

/// The drive under test as `storcert run` records it: on `path` (the
/// partition storcert made, or the drive), serial S1.
fn targets(dir: &Path, path: &str) {
    write(
        &dir.join("targets.json"),
        &serde_json::json!({
            "artefact": "targets", "schema_version": 1,
            "targets": [{"path": path, "disk": "/dev/sdx", "label": "sdx",
                "serial": "S1", "model": "M", "file_size": 0}]
        })
        .to_string(),
    );
}

/// A run without spare area: 1x 1%, 2x 4%, 3x 7% over 1 ms.
fn without_spare(dir: &Path) {
    targets(dir, "/dev/sdx");
    without_spare_logs(dir);
}

fn without_spare_logs(dir: &Path) {
    for (load, slow) in [(1.0, 100), (2.0, 400), (3.0, 700)] {
        write(
            &dir.join(format!("act/sdx-{load}x.log")),
            &act_log("/dev/sdx", load, slow, 0),
        );
    }
}

/// A run on a 12% spare partition: 1x–3x under 5%, 4x 6% over 1 ms and
/// 2% over 8 ms.
fn with_spare(dir: &Path) {
    targets(dir, "/dev/sdx1");
    with_spare_logs(dir);
}

fn with_spare_logs(dir: &Path) {
    write(
        &dir.join("provision/sdx.json"),
        &serde_json::json!({
            "artefact": "provision", "schema_version": 1, "device": "/dev/sdx",
            "size_bytes": 1_000_000_000u64, "sector_size": 512, "discard": null,
            "partition_start_bytes": 1_048_576, "partition_end_bytes": 880_000_000,
            "partition_size_bytes": 878_951_424, "spare_bytes": 120_000_000,
            "spare_pct": 12.0, "factory_spare_pct": 7.0, "total_spare_pct": 19.0,
            "kernel": {"partition": "sdx1", "start_bytes": 1_048_576, "size_bytes": 878_951_424},
            "notes": []
        })
        .to_string(),
    );
    for (load, slow, very) in [(1.0, 50, 0), (2.0, 100, 0), (3.0, 300, 0), (4.0, 600, 200)] {
        write(
            &dir.join(format!("act/sdx1-{load}x.log")),
            &act_log("/dev/sdx1", load, slow, very),
        );
    }
}

#[test]
fn compare_tables_loads_and_spare_area_of_one_drive() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("no-op"), tmp.path().join("op12"));
    without_spare(&a);
    with_spare(&b);

    let out = storcert(&["compare", s(&a), s(&b)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "serial S1 (storage): highest passing load 2x with no spare partition, \
             3x with 12% spare (total 19%)"
        ),
        "{text}"
    );
    // The cross-load table, in the write-ups' layout.
    let row = |load: &str| {
        text.lines()
            .find(|l| l.starts_with(load) && l.contains("sdx1-"))
            .unwrap_or_else(|| panic!("no {load} row in\n{text}"))
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("3x"), ["3x", "3.00", "0.00", "0.00", "PASS"]);
    assert_eq!(row("4x"), ["4x", "8.00", "2.00", "0.00", "FAIL"]);
    // The side-by-side table: 3x fails without spare area, passes with it;
    // 4x was run only with it.
    let side = |load: &str| {
        text.lines()
            .find(|l| l.starts_with(load) && !l.contains("sdx"))
            .unwrap_or_else(|| panic!("no {load} row in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(side("3x"), "3x 7.00 FAIL 3.00 PASS");
    assert_eq!(side("4x"), "4x not run – 8.00 FAIL");
    assert!(text.contains("highest passing  2x"), "{text}");

    // JSON, for tools: the same answer.
    let out = storcert(&["compare", "--format", "json", s(&a), s(&b)]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spare = &j["spare"][0];
    assert_eq!(spare["drive"], "serial S1");
    assert_eq!(spare["highest_passing_load"], serde_json::json!([2.0, 3.0]));
    assert_eq!(spare["settings"][1]["total_spare_pct"], 19.0);
    assert_eq!(j["loads"].as_array().unwrap().len(), 2);

    // HTML: the tables and the plot of % over 1 ms against load.
    let out = storcert(&["compare", "--format", "html", s(&a), s(&b)]);
    let html = String::from_utf8_lossy(&out.stdout);
    for id in ["compare-plot", "compare-spare-0", "compare-loads-1"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
}

#[test]
fn the_report_of_a_run_answers_the_highest_passing_load_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("op12");
    with_spare(&dir);
    for format in ["txt", "html"] {
        let out = storcert(&["report", "--format", format, s(&dir)]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let answer = text
            .find("highest passing load 3x")
            .unwrap_or_else(|| panic!("{format}: no answer in\n{text}"));
        // Before the machine and drive tables: on the first screen.
        assert!(answer < text.find("Machine").unwrap(), "{format}");
        // The spare area of the drive, with the factory spare and total.
        assert!(text.contains("12.0%") && text.contains("7.0%") && text.contains("19.0%"));
    }
}

#[test]
fn a_pass_above_a_failure_is_not_a_higher_passing_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    targets(&dir, "/dev/sdx");
    for (load, slow) in [(1.0, 100), (2.0, 600), (3.0, 100)] {
        write(
            &dir.join(format!("act/sdx-{load}x.log")),
            &act_log("/dev/sdx", load, slow, 0),
        );
    }
    let out = storcert(&["compare", s(&dir)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("highest passing load: 1x"), "{text}");
    assert!(
        text.contains("note: 3x passed above a failing 2x"),
        "{text}"
    );
    assert!(
        text.contains("2x (act/sdx-2x.log) failed: reads slice 1: 6.00% > 1 ms"),
        "{text}"
    );
}

#[test]
fn compare_refuses_inputs_without_act_and_escapes_what_runs_say() {
    let tmp = tempfile::tempdir().unwrap();
    let out = storcert(&["compare", s(tmp.path())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no ACT log"));
    let out = storcert(&["compare", s(&tmp.path().join("missing"))]);
    assert_eq!(out.status.code(), Some(2));

    // A device name with a terminal escape reaches no terminal raw.
    let dir = tmp.path().join("r");
    write(
        &dir.join("act/x.log"),
        &act_log("/dev/sd\u{1b}[2Jx", 1.0, 0, 0),
    );
    let out = storcert(&["compare", s(&dir)]);
    assert!(out.status.success());
    assert!(!out.stdout.contains(&0x1b));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\\u{1b}[2J"));
}

#[test]
fn a_run_in_phases_compares_its_phases() {
    // One run, as a profile with phases writes it: phase 1 on the whole
    // drive, phase 2 on a 12% spare partition of the same drive.
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    targets(&run, "/dev/sdx");
    without_spare_logs(&run.join("phase-1"));
    with_spare_logs(&run.join("phase-2"));
    let out = storcert(&["report", "--format", "txt", s(&run)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "ACT storage, no spare partition: highest passing load 2x; \
             ACT storage, 12% spare (total 19%): highest passing load 3x"
        ),
        "{text}"
    );
    // The spare area of phase 2 is not given to phase 1's logs, though
    // they ran on the same drive.
    let j: serde_json::Value =
        serde_json::from_slice(&storcert(&["compare", "--format", "json", s(&run)]).stdout)
            .unwrap();
    let spares: Vec<(String, serde_json::Value)> = j["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["rows"][0]["log"].as_str().unwrap().to_string(),
                t["spare"].clone(),
            )
        })
        .collect();
    assert_eq!(spares.len(), 2, "{j:#}");
    assert!(
        spares[0].0.starts_with("phase-1/") && spares[0].1.is_null(),
        "{spares:?}"
    );
    assert!(spares[1].0.starts_with("phase-2/") && spares[1].1["spare_pct"] == 12.0);
}

/// A storage run over two drives (a profile's `wide` mode): /dev/sda has
/// no slow reads, /dev/sdb 8% over 1 ms. Over both, 4%: ACT's rule passes
/// the run, but /dev/sdb fails on its own share.
fn wide_log() -> String {
    wide_log_with(0, 800)
}

/// The same with `slow_a` and `slow_b` of each drive's 10,000 reads over
/// 1 ms.
fn wide_log_with(slow_a: u64, slow_b: u64) -> String {
    let per = 10_000u64;
    format!(
        "\nACT version 6.6\nStorage device IO test\n\nACT-STORAGE CONFIGURATION\n\
         device-names: /dev/sda,/dev/sdb\nnum-devices: 2\ntest-duration-sec: 10\nreport-interval-sec: 10\n\
         microsecond-histograms: no\nread-reqs-per-sec: 4000\nwrite-reqs-per-sec: 2000\n\n\
         DERIVED CONFIGURATION\nrecord-stored-bytes: 1536 ... 1536\n\n\
         HISTOGRAM NAMES\nreads\n/dev/sda-reads\n/dev/sdb-reads\n\nafter 10 sec:\n\
         reads ({} total)\n (00: {:010}) (01: {:010})\n\
         /dev/sda-reads ({per} total)\n (00: {:010}) (01: {slow_a:010})\n\
         /dev/sdb-reads ({per} total)\n (00: {:010}) (01: {slow_b:010})\n\n",
        2 * per,
        2 * per - slow_a - slow_b,
        slow_a + slow_b,
        per - slow_a,
        per - slow_b
    )
}

#[test]
fn a_run_over_several_drives_judges_each_drive_on_its_own_share() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wide");
    write(&dir.join("act/wide-1x.log"), &wide_log());
    let r = storcert::report::for_results(&dir).unwrap();
    let s = &r.summary;
    let verdict = |dev: &str| {
        s.drives
            .iter()
            .find(|d| d.device == dev)
            .unwrap_or_else(|| panic!("no {dev} in {:?}", s.drives))
            .verdict
    };
    assert_eq!(verdict("/dev/sda"), storcert::results::Verdict::Pass);
    assert_eq!(verdict("/dev/sdb"), storcert::results::Verdict::Fail);
    assert_eq!(s.verdict, storcert::results::Verdict::Fail);
    let names: Vec<(&str, bool)> = s
        .tests
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.verdict == storcert::results::Verdict::Pass,
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("act-storage 1x (results/act/wide-1x.log) /dev/sda", true),
            ("act-storage 1x (results/act/wide-1x.log) /dev/sdb", false),
            ("act-storage 1x (results/act/wide-1x.log) all drives", true),
        ]
    );
    let b = s.drives.iter().find(|d| d.device == "/dev/sdb").unwrap();
    assert!(
        b.reasons[0].contains("/dev/sdb-reads slice 1: 8.00% > 1 ms must be < 5%"),
        "{:?}",
        b.reasons
    );
    assert_eq!(
        s.drives
            .iter()
            .find(|d| d.device == "/dev/sda")
            .unwrap()
            .act_load_passed,
        Some(1.0)
    );
    // 3% and 9%: 6% over both fails ACT's rule, and with it /dev/sda,
    // whose own 3% would pass (in upstream ACT's logs a drive's own
    // histogram is its raw latency, without the queueing `reads` has).
    write(&dir.join("act/wide-1x.log"), &wide_log_with(300, 900));
    let s = storcert::report::for_results(&dir).unwrap().summary;
    let a = s.drives.iter().find(|d| d.device == "/dev/sda").unwrap();
    assert_eq!(a.verdict, storcert::results::Verdict::Fail);
    assert!(
        a.reasons[0].contains("the run over all drives: reads slice 1: 6.00% > 1 ms"),
        "{:?}",
        a.reasons
    );
    assert_eq!(a.act_load_passed, None);
}

#[test]
fn a_search_counts_by_its_confirmation_not_its_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    targets(&dir, "/dev/sdx");
    let trial = |n: u32, load: f64, purpose: &str| {
        serde_json::json!({"load": load, "purpose": purpose, "result": "passing",
            "worst_pct_over_1ms": 0.0, "worst_pct_over_8ms": 0.0, "worst_pct_over_64ms": 0.0,
            "max_lag_ms": 0.0, "log": format!("act/search-sdx/trial-{n:02}-{load}x.log")})
    };
    write(
        &dir.join("act/search-sdx.json"),
        &serde_json::json!({"artefact": "act-search", "schema_version": 2,
            "highest_passing_load": 2.0, "confirmed": true, "reached_max": true,
            "max_load": 2.0, "step": 1.0, "interrupted": false,
            "trials": [trial(1, 1.0, "escalate"), trial(2, 2.0, "escalate"), trial(3, 2.0, "confirm")]})
        .to_string(),
    );
    for (n, load) in [(1, 1.0), (2, 2.0), (3, 2.0)] {
        write(
            &dir.join(format!("act/search-sdx/trial-{n:02}-{load}x.log")),
            &act_log("/dev/sdx", load, 100, 0),
        );
    }
    // And a log the null engine made: it measured no drive.
    let null = act_log("/dev/sdx", 4.0, 0, 0).replace(
        "Storage device IO test\n",
        "Storage device IO test\n(ACT-compatible log; open-loop null scheduler)\n",
    );
    write(&dir.join("act/sdx-4x.log"), &null);
    let j: serde_json::Value =
        serde_json::from_slice(&storcert(&["compare", "--format", "json", s(&dir)]).stdout)
            .unwrap();
    let rows = j["loads"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{j:#}");
    assert!(rows[0]["log"]
        .as_str()
        .unwrap()
        .ends_with("trial-03-2x.log"));
    assert_eq!(rows[0]["seconds"], 10);
    let left = j["left_out"].to_string();
    assert!(left.contains("2 search trial log(s)"), "{left}");
    assert!(
        left.contains("sdx-4x.log: made by the null engine"),
        "{left}"
    );
}

#[test]
fn the_text_report_escapes_what_a_run_says() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    with_spare(&dir);
    // A provisioning record and a drive from a hostile bundle.
    let p = dir.join("provision/sdx.json");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "\"/dev/sdx\"",
        "\"/dev/sdx\\u001b]0;owned\\u0007\\u001b[2J\"",
    );
    std::fs::write(&p, text).unwrap();
    for format in ["txt", "md"] {
        let out = storcert(&["report", "--format", format, s(&dir)]);
        assert!(out.status.success());
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "{format}"
        );
        // Shown escaped (in Markdown its backslash and bracket escaped too).
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        let want = if format == "md" {
            "\\\\u{1b}\\]0;owned"
        } else {
            "\\u{1b}]0;owned"
        };
        assert!(shown.contains(want), "{format}: {shown}");
    }
    // A drive name that would add cells (and a fake PASS) to its row.
    let t = dir.join("targets.json");
    let text = std::fs::read_to_string(&t).unwrap().replace(
        "\"path\":\"/dev/sdx1\"",
        "\"path\":\"/dev/sdz | PASS | 9x |\\n| x\"",
    );
    std::fs::write(&t, text).unwrap();
    let md = storcert(&["report", "--format", "md", s(&dir)]);
    let md = String::from_utf8_lossy(&md.stdout);
    let row = md
        .lines()
        .find(|l| l.starts_with("| /dev/sdz"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        row.starts_with("| /dev/sdz \\| PASS \\| 9x \\|\\\\u{a}\\| x |"),
        "{row}"
    );
}

#[test]
fn a_drive_under_test_that_no_run_measured_keeps_the_bundle_from_passing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let targets: Vec<serde_json::Value> = ["sdx", "sdy"]
        .iter()
        .map(|d| {
            serde_json::json!({"path": format!("/dev/{d}"), "disk": format!("/dev/{d}"),
                "label": d, "serial": null, "model": null, "file_size": 0})
        })
        .collect();
    write(
        &dir.join("targets.json"),
        &serde_json::json!({"artefact": "targets", "schema_version": 1, "targets": targets})
            .to_string(),
    );
    write(&dir.join("act/sdx-1x.log"), &act_log("/dev/sdx", 1.0, 0, 0));
    let s = storcert::report::for_results(&dir).unwrap().summary;
    assert_eq!(
        s.verdict,
        storcert::results::Verdict::Incomplete,
        "{:?}",
        s.reasons
    );
    assert!(
        s.reasons
            .contains(&"/dev/sdy: under test, but no test measured it".to_string()),
        "{:?}",
        s.reasons
    );
    // Both measured: a pass.
    write(&dir.join("act/sdy-1x.log"), &act_log("/dev/sdy", 1.0, 0, 0));
    let s = storcert::report::for_results(&dir).unwrap().summary;
    assert_eq!(
        s.verdict,
        storcert::results::Verdict::Pass,
        "{:?}",
        s.reasons
    );
}

/// Standalone `act storage --log` files compare as runs do, and
/// `--format csv` gives a spreadsheet a row per run (issue: compare the
/// logs people already have).
#[test]
fn standalone_logs_compare_and_give_a_spreadsheet_s_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (tmp.path().join("sdx-1x.log"), tmp.path().join("sdx-2x.log"));
    write(&one, &act_log("/dev/sdx", 1.0, 100, 0));
    write(&two, &act_log("/dev/sdx", 2.0, 600, 0));
    let out = storcert(&["compare", s(&one), s(&two), "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[0].starts_with("drive,model,serial,devices,workload,mix,"),
        "{csv}"
    );
    assert!(
        lines[1].starts_with("/dev/sdx,,,/dev/sdx,storage,,,,1,"),
        "{csv}"
    );
    assert!(lines[1].contains(",pass,"), "{csv}");
    assert!(
        lines[2].starts_with("/dev/sdx,,,/dev/sdx,storage,,,,2,"),
        "{csv}"
    );
    assert!(
        lines[2].contains(",6,0,0,fail,") && lines[2].ends_with(",sdx-2x.log"),
        "{csv}"
    );
    // The write-ups' layout: each load's avg and max over all seven
    // thresholds.
    let out = storcert(&["compare", s(&one), s(&two), "--layout", "writeup"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let head = text.lines().find(|l| l.starts_with("load")).unwrap();
    let cols: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(
        cols[1..],
        ["%>1ms", "%>2ms", "%>4ms", "%>8ms", "%>16ms", "%>32ms", "%>64ms", "verdict", "run"],
        "{text}"
    );
    let row = |load: &str, what: &str| {
        text.lines()
            .find(|l| l.split_whitespace().take(2).eq([load, what]))
            .unwrap_or_else(|| panic!("{load} {what}: {text}"))
            .split_whitespace()
            .skip(2)
            .take(7)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("2x", "max"),
        ["6.00", "0.00", "0.00", "0.00", "0.00", "0.00", "0.00"]
    );
    assert_eq!(
        row("1x", "avg"),
        ["1.00", "0.00", "0.00", "0.00", "0.00", "0.00", "0.00"]
    );
    // Under each table, as in the default layout: why a run failed.
    assert!(
        text.contains("2x (sdx-2x.log) failed: reads slice 1: 6.00% > 1 ms"),
        "{text}"
    );
    let out = storcert(&[
        "compare",
        s(&one),
        "--layout",
        "writeup",
        "--format",
        "html",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A file that is neither a log nor a bundle is refused, by name.
    let junk = tmp.path().join("junk.log");
    write(&junk, "not ACT at all\n");
    // Beside good ones too: never dropped without a word.
    let out = storcert(&["compare", s(&one), s(&junk)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("junk.log: neither an ACT log"), "{err}");
}

/// A drive with no serial, run without and then with spare area: the
/// runs are one drive, matched through the provisioning record, even
/// when that record has no kernel view (the kernel listed the partition
/// only once asked again, after provisioning looked).
#[test]
fn a_drive_without_a_serial_is_one_drive_with_and_without_spare_area() {
    let tmp = tempfile::tempdir().unwrap();
    for (disk, part) in [
        ("/dev/sdx", "/dev/sdx1"),
        ("/dev/nvme0n1", "/dev/nvme0n1p1"),
    ] {
        let (a, b) = (
            tmp.path().join(format!("{}-no-op", &disk[5..])),
            tmp.path().join(format!("{}-op12", &disk[5..])),
        );
        for (load, slow) in [(1.0, 100), (2.0, 400), (3.0, 700)] {
            write(
                &a.join(format!("act/d-{load}x.log")),
                &act_log(disk, load, slow, 0),
            );
        }
        write(
            &b.join("provision/d.json"),
            &serde_json::json!({
                "artefact": "provision", "schema_version": 1, "device": disk,
                "size_bytes": 1_000_000_000u64, "sector_size": 512, "discard": null,
                "partition_start_bytes": 1_048_576, "partition_end_bytes": 880_000_000,
                "partition_size_bytes": 878_951_424, "spare_bytes": 120_000_000,
                "spare_pct": 12.0, "factory_spare_pct": null, "total_spare_pct": null,
                "kernel": null, "notes": ["the kernel lists no partition after re-reading"]
            })
            .to_string(),
        );
        for (load, slow) in [(1.0, 50), (2.0, 100), (3.0, 300), (4.0, 600)] {
            write(
                &b.join(format!("act/d1-{load}x.log")),
                &act_log(part, load, slow, 0),
            );
        }
        let out = storcert(&["compare", s(&a), s(&b)]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains(&format!(
                "{disk} (storage): highest passing load 2x with no spare partition, 3x with 12% spare"
            )),
            "{text}"
        );
        assert!(!text.contains(&format!("{part} (storage)")), "{text}");
    }
}
