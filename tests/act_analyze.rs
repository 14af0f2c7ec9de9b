//! `storcert act analyze` against upstream act_latency.py's own output on
//! the same logs (tests/fixtures/act/analysis), and the verdict at the
//! exact edges of ACT's criteria.

mod common;

use std::path::PathBuf;

use storcert::act::analyze::{analyze, Options};
use storcert::act::histogram::{LatencyHistogram, Scale};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/act")
}

fn options(log: &str, args: &str) -> Options {
    let mut o = Options {
        log: log.to_string(),
        ..Default::default()
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let v = words.get(i + 1).copied().unwrap_or("");
        match words[i] {
            "-t" => o.slice = v.parse().unwrap(),
            "-h" => o.histograms.push(v.to_string()),
            "-s" => o.start_bucket = v.parse().unwrap(),
            "-n" => o.num_buckets = v.parse().unwrap(),
            "-e" => o.every_nth = v.parse().unwrap(),
            "-x" => {
                o.extra = true;
                i += 1;
                continue;
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

#[test]
fn tables_match_act_latency_py_digit_for_digit() {
    let dir = fixtures().join("analysis");
    let mut cases = 0;
    for n in 1.. {
        let Ok(args) = std::fs::read_to_string(dir.join(format!("case-{n}.args"))) else {
            break;
        };
        let (log, opts) = args.trim().split_once('|').unwrap();
        let expected = std::fs::read_to_string(dir.join(format!("case-{n}.expected"))).unwrap();
        let text = std::fs::read_to_string(fixtures().join("logs").join(log)).unwrap();
        let echo = format!("-l {log} {opts}");
        match analyze(&text, &options(log, opts), &echo) {
            // The script's table, and storcert's note after it where a
            // histogram asked for is not in the log.
            Ok(a) => match a.text.strip_prefix(&expected) {
                Some(rest) if rest.starts_with("note: the log has no histogram ") => {}
                _ => assert_eq!(a.text, expected, "case {n}: {log} {opts}"),
            },
            Err(e) => {
                // act_latency.py's error, and storcert's reason after it
                // where the script gives none.
                let last = expected.trim_end().lines().last().unwrap();
                let e = e.to_string();
                assert!(
                    e == last || e.starts_with(&format!("{last}: ")),
                    "case {n}: {log} {opts}: {e}"
                );
            }
        }
        cases += 1;
    }
    assert!(cases >= 18, "only {cases} cases found");
}

/// A log with one histogram "reads" reported hourly, whose hours hold the
/// given counts of (operations under 1 ms, 1-8 ms, 8-64 ms, over 64 ms).
fn synthetic_log(slices: &[[u64; 4]], version: &str) -> String {
    let mut s = format!(
        "\nACT version {version}\nStorage device IO test\n\nACT-STORAGE CONFIGURATION\n\
         device-names: /dev/x\nnum-devices: 1\ntest-duration-sec: {}\nreport-interval-sec: 3600\n\
         microsecond-histograms: no\n\nDERIVED CONFIGURATION\nrecord-stored-bytes: 1536 ... 1536\n\n\
         HISTOGRAM NAMES\nreads\n\n",
        slices.len() * 3600
    );
    let mut h = LatencyHistogram::new(Scale::Milliseconds);
    for (i, slice) in slices.iter().enumerate() {
        for (k, ns) in [500_000u64, 2_000_000, 16_000_000, 100_000_000]
            .iter()
            .enumerate()
        {
            for _ in 0..slice[k] {
                h.record(*ns);
            }
        }
        s.push_str(&format!(
            "after {} sec:\n{}\n",
            (i + 1) * 3600,
            h.dump("reads")
        ));
    }
    s
}

fn verdict_of(slices: &[[u64; 4]]) -> (bool, Vec<String>) {
    let a = analyze(
        &synthetic_log(slices, "6.6"),
        &Options {
            log: "x".into(),
            slice: 1,
            ..Default::default()
        },
        "",
    )
    .unwrap();
    (
        a.verdict.pass,
        a.verdict
            .failures
            .iter()
            .map(|f| format!("{}:{}", f.slice, f.rule))
            .collect(),
    )
}

#[test]
fn verdict_at_the_exact_edges() {
    // 5% over 1 ms fails, 4.99% passes (10000 operations per slice).
    assert!(verdict_of(&[[9501, 499, 0, 0]]).0);
    assert_eq!(
        verdict_of(&[[9500, 500, 0, 0]]),
        (false, vec!["1:> 1 ms must be < 5%".to_string()])
    );
    // 1% over 8 ms.
    assert!(verdict_of(&[[9901, 0, 99, 0]]).0);
    assert_eq!(
        verdict_of(&[[9900, 0, 100, 0]]).1,
        vec!["1:> 8 ms must be < 1%".to_string()]
    );
    // 0.1% over 64 ms (also counts as over 8 and 1 ms).
    assert!(verdict_of(&[[9991, 0, 0, 9]]).0);
    assert_eq!(
        verdict_of(&[[9990, 0, 0, 10]]).1,
        vec!["1:> 64 ms must be < 0.1%".to_string()]
    );
    // Every failing slice is named; passing slices are not.
    let (pass, failures) = verdict_of(&[
        [10000, 0, 0, 0],
        [9000, 1000, 0, 0],
        [10000, 0, 0, 0],
        [9000, 0, 500, 500],
    ]);
    assert!(!pass);
    assert_eq!(
        failures,
        vec![
            "2:> 1 ms must be < 5%",
            "4:> 1 ms must be < 5%",
            "4:> 8 ms must be < 1%",
            "4:> 64 ms must be < 0.1%"
        ]
    );
}

#[test]
fn bad_logs_get_a_clear_error() {
    let other = synthetic_log(&[[1, 0, 0, 0]], "5.3");
    let e = analyze(
        &other,
        &Options {
            log: "old.log".into(),
            slice: 1,
            ..Default::default()
        },
        "",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "old.log ACT version not compatible (version 5.3, need 6.x)"
    );
    let e = analyze(
        "hello\n",
        &Options {
            log: "x.log".into(),
            ..Default::default()
        },
        "",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "x.log ACT version not found");
    // A histogram the log does not have: act_latency.py shows its columns
    // as zeros (a perfect drive), or finds no slice without saying why;
    // storcert says which histograms the log has.
    let a = analyze(
        &synthetic_log(&[[1, 0, 0, 0]], "6.6"),
        &Options {
            log: "x.log".into(),
            slice: 1,
            // "read" is a prefix of "reads": the script shows that one.
            histograms: vec![
                "reads".into(),
                "nonexistent".into(),
                "read".into(),
                "x".into(),
            ],
            ..Default::default()
        },
        "",
    )
    .unwrap();
    assert!(
        a.text.ends_with(
            "note: the log has no histogram \"nonexistent\", \"x\" (it has reads): their columns are zeros\n"
        ),
        "{}",
        a.text
    );
    // Truncated in the middle of a slice: the table shows the whole slices
    // before it, and the verdict fails a log cut short.
    let full = synthetic_log(&[[100, 0, 0, 0], [100, 0, 0, 0], [90, 10, 0, 0]], "6.6");
    let cut = &full[..full.rfind("after 10800 sec:").unwrap() + 18];
    let a = analyze(
        cut,
        &Options {
            log: "x".into(),
            slice: 1,
            ..Default::default()
        },
        "",
    )
    .unwrap();
    assert_eq!(a.histograms[0].slices.len(), 2);
    assert!(!a.verdict.pass);
    assert_eq!(
        a.verdict.problems,
        vec!["the log ends after 7200 s of the test's 10800 s (the run was cut short)"]
    );
    // Garbage counts are an error naming the line, not a panic.
    let bad = full.replace("(00: 0000000100)", "(00: 00000x0100)");
    let e = analyze(
        &bad,
        &Options {
            log: "x".into(),
            slice: 1,
            ..Default::default()
        },
        "",
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("bad bucket count"), "{e}");
    for opts in [
        Options {
            slice: 0,
            ..Default::default()
        },
        Options {
            num_buckets: 0,
            ..Default::default()
        },
        Options {
            start_bucket: 17,
            ..Default::default()
        },
    ] {
        assert!(analyze(&full, &opts, "").is_err());
    }
    // Every prefix of a real log either analyzes or errors; none panics.
    let log = std::fs::read_to_string(fixtures().join("logs/storcert-us-20x.log")).unwrap();
    for cut in (0..log.len()).step_by(97) {
        let _ = analyze(
            &log[..cut],
            &Options {
                log: "x".into(),
                slice: 2,
                ..Default::default()
            },
            "",
        );
    }
}

/// The verdict table (tests/fixtures/act/verdicts): synthetic logs at every
/// edge of ACT's rules, each with upstream act_latency.py's table. The
/// table must match digit for digit; the verdict must be the expected
/// one; and where the log is whole and hourly, the verdict must be what
/// ACT's rule gives on upstream's own max row.
#[test]
fn verdict_table_agrees_with_act_latency_py() {
    // (case, expected failure or problem; "" for a pass)
    let cases = [
        ("pass-4.99pct-over-1ms", ""),
        ("fail-5.00pct-over-1ms", "slice 1: > 1 ms must be < 5%"),
        ("fail-5.01pct-over-1ms", "slice 1: > 1 ms must be < 5%"),
        ("pass-0.99pct-over-8ms", ""),
        ("fail-1.00pct-over-8ms", "slice 1: > 8 ms must be < 1%"),
        ("pass-4.99pct-just-under-8ms", ""),
        ("pass-0.09pct-over-64ms", ""),
        ("fail-0.10pct-over-64ms", "slice 1: > 64 ms must be < 0.1%"),
        ("fail-second-hour", "slice 2: > 1 ms must be < 5%"),
        (
            "fail-empty-hour",
            "slice 2 (3600-7200 s): no reads completed",
        ),
        (
            "fail-cant-keep-up",
            "the run stopped: drive(s) can't keep up - test stopped",
        ),
        (
            "fail-cut-short",
            "the log ends after 3600 s of the test's 10800 s (the run was cut short)",
        ),
        ("pass-slow-large-blocks", ""),
        ("fail-last-half-hour", "slice 2: > 1 ms must be < 5%"),
        ("pass-us-4.99pct-over-1.024ms", ""),
        (
            "fail-us-5.00pct-over-1.024ms",
            "slice 1: > 1 ms must be < 5%",
        ),
    ];
    let dir = fixtures().join("verdicts");
    let on_disk = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("log".as_ref()))
        .count();
    assert_eq!(on_disk, cases.len(), "a log in {dir:?} has no case here");
    for (case, expected) in cases {
        let text = std::fs::read_to_string(dir.join(format!("{case}.log"))).unwrap();
        let upstream = std::fs::read_to_string(dir.join(format!("{case}.upstream"))).unwrap();
        let echo = upstream.lines().next().unwrap();
        let args = echo.strip_prefix("act_latency.py ").unwrap();
        let opts_text = args.split_once(".log").unwrap().1;
        let a = analyze(&text, &options(&format!("{case}.log"), opts_text), args).unwrap();
        assert_eq!(a.text, upstream, "{case}: the table differs from upstream");
        let v = &a.verdict;
        let reasons: Vec<String> = v
            .failures
            .iter()
            .map(|f| format!("slice {}: {}", f.slice, f.rule))
            .chain(v.problems.iter().cloned())
            .collect();
        if expected.is_empty() {
            assert!(v.pass, "{case}: {reasons:?}");
        } else {
            assert!(!v.pass, "{case}");
            assert_eq!(reasons, vec![expected.to_string()], "{case}");
            assert!(v.failures.iter().all(|f| f.histogram == "reads"), "{case}");
        }
        // ACT's rule on upstream's own figures, where upstream's table
        // sees the whole run in hours (the other cases are where storcert
        // deliberately says more than act_latency.py: stalls, stops, cut
        // short, and a last part-hour).
        let whole_hours = !["empty", "cant-keep-up", "cut-short", "last-half-hour"]
            .iter()
            .any(|k| case.contains(k));
        if whole_hours {
            let lines: Vec<&str> = upstream.lines().collect();
            let labels: Vec<&str> = lines
                .iter()
                .find(|l| l.starts_with("slice"))
                .unwrap()
                .split_whitespace()
                .skip(1)
                .collect();
            let max: Vec<f64> = lines
                .iter()
                .find(|l| l.starts_with("  max"))
                .unwrap()
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap())
                .collect();
            let at = |ms: &str, us: &str| {
                let i = labels.iter().position(|l| *l == ms || *l == us).unwrap();
                max[i]
            };
            let upstream_pass =
                at("1", "1024") < 5.0 && at("8", "8192") < 1.0 && at("64", "65536") < 0.1;
            assert_eq!(
                v.pass, upstream_pass,
                "{case}: upstream's max row says otherwise"
            );
        }
    }
}

/// A short run's log with no -t, as users hand them over: cut right after
/// an "after N sec:" line (the run killed while it wrote), or saved with
/// Windows line ends. Each is judged as one slice up to its last whole
/// report (exit 1: cut short fails), or as the same log, never "could not
/// find N seconds of data" with exit 2.
#[test]
fn a_cut_or_windows_saved_short_log_is_still_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string(fixtures().join("logs/storcert-us-20x.log")).unwrap();
    let at = log.find("\nafter 4 sec:\n").unwrap() + "\nafter 4 sec:\n".len();
    let cut = tmp.path().join("cut.log");
    std::fs::write(&cut, &log[..at]).unwrap();
    let out = common::storcert(&["act", "analyze", cut.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("verdict: FAIL (reads, in every slice of 2 s (the whole run)")
            && stdout.contains(
                "  the log ends after 2 s of the test's 24 s (the run was cut short)\nnote: "
            ),
        "{stdout}"
    );

    // Cut inside the report's histograms: the report is not judged (it
    // is half written), the table and the verdict end at the one before.
    let buckets = log[at..].find("\n (").unwrap() + at;
    std::fs::write(&cut, &log[..buckets + 12]).unwrap();
    let out = common::storcert(&["act", "analyze", cut.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("verdict: FAIL (reads, in every slice of 2 s (the whole run)")
            && stdout.contains("  the log ends inside its report after 4 s, which is not judged\n")
            && !stdout.contains("does not add up"),
        "{stdout}"
    );

    let whole = tmp.path().join("whole.log");
    std::fs::write(&whole, &log).unwrap();
    // A whole log whose last blank line was stripped (an editor, a shell's
    // $(...)) is the same log, not one cut short.
    let stripped = tmp.path().join("stripped.log");
    std::fs::write(&stripped, log.trim_end()).unwrap();
    let a = common::storcert(&["act", "analyze", whole.to_str().unwrap()]);
    let b = common::storcert(&["act", "analyze", stripped.to_str().unwrap()]);
    assert_eq!(b.status.code(), a.status.code());
    assert_eq!(
        String::from_utf8_lossy(&b.stdout).replace(stripped.to_str().unwrap(), "LOG"),
        String::from_utf8_lossy(&a.stdout).replace(whole.to_str().unwrap(), "LOG")
    );
    let crlf = tmp.path().join("crlf.log");
    std::fs::write(&crlf, log.replace('\n', "\r\n")).unwrap();
    let a = common::storcert(&["act", "analyze", whole.to_str().unwrap()]);
    let b = common::storcert(&["act", "analyze", crlf.to_str().unwrap()]);
    assert_eq!(b.status.code(), a.status.code());
    let text = |o: &std::process::Output, name: &str| {
        String::from_utf8_lossy(&o.stdout).replace(name, "LOG")
    };
    assert_eq!(
        text(&b, crlf.to_str().unwrap()),
        text(&a, whole.to_str().unwrap())
    );
}
