//! The alert rules shipped in contrib/prometheus/, checked and unit-tested
//! by Prometheus' own promtool (Debian's `prometheus` package, which
//! scripts/setup installs): each alert fires on the series meant to fire
//! it, with its labels and words, and stays silent on the others.

use std::process::Command;

mod common;
use common::wait_for;

fn promtool(args: &[&str]) -> (bool, String) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/prometheus"))
        .output()
        .expect("promtool (Debian's prometheus package: scripts/setup installs it)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_shipped_alert_rules_are_valid_and_fire_as_their_tests_say() {
    let (ok, text) = promtool(&["check", "rules", "storcert-rules.yml"]);
    assert!(ok && text.contains("SUCCESS: 8 rules found"), "{text}");
    let (ok, text) = promtool(&["test", "rules", "storcert-rules.test.yml"]);
    assert!(ok && text.contains("SUCCESS"), "{text}");
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A GET's body, or None while nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.starts_with("HTTP/1.1 200").then_some(out)
}

/// `storcert run --textfile DIR` on a scratch file keeps DIR/storcert.prom
/// up to date; Debian's node_exporter, reading that folder, serves its
/// series while the run goes on, and the file ends saying the run
/// finished. The file passes `promtool check metrics` with no lint.
#[test]
fn a_running_machine_shows_in_node_exporter_through_its_textfile() {
    let t = tempfile::tempdir().unwrap();
    let textfile = t.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    let profile = t.path().join("p.toml");
    std::fs::write(
        &profile,
        "name = \"textfile\"\nprogress_interval = \"1s\"\n[devices]\nscratch = \"64M\"\n\
         [act]\nrun_to_end = true\nstorage = [{ load = \"1x\", duration = \"10s\" }]\n",
    )
    .unwrap();
    // run_to_end: a scratch file that fails 1x on a busy machine would
    // otherwise end its run once decided, before node_exporter scrapes.
    let run = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args(["run", "--profile", profile.to_str().unwrap()])
        .args(["--results", t.path().join("results").to_str().unwrap()])
        .args(["--key", t.path().join("k.key").to_str().unwrap()])
        .args(["--cmdline", "/dev/null", "--plain"])
        .args(["--textfile", textfile.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let file = textfile.join("storcert.prom");
    let read = || std::fs::read_to_string(&file).unwrap_or_default();
    wait_for("a running run's textfile", 120, || {
        read().contains("storcert_run_stage{stage=\"act")
    });
    let port = free_port();
    let mut exporter = Command::new("prometheus-node-exporter")
        .args(["--collector.disable-defaults", "--collector.textfile"])
        .arg(format!(
            "--collector.textfile.directory={}",
            textfile.display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prometheus-node-exporter (Debian's package: scripts/setup installs it)");
    let mut page = String::new();
    wait_for("node_exporter's /metrics", 60, || {
        page = get(port, "/metrics").unwrap_or_default();
        page.contains("storcert_run_state{state=\"running\"} 1")
            && page.contains("storcert_run_progress_ratio{key=\"act 1x")
    });
    let _ = exporter.kill();
    let _ = exporter.wait();
    assert!(
        page.contains("storcert_run_info{profile=\"textfile\",run=\"storcert-"),
        "{page}"
    );
    assert!(
        page.contains("storcert_run_progress_ratio{key=\"act 1x"),
        "{page}"
    );
    // The textfile collector read it without error.
    assert!(page.contains("node_textfile_scrape_error 0"), "{page}");
    let (ok, lint) = check_metrics(&read());
    assert!(ok && lint.is_empty(), "{lint}\n{}", read());
    let out = run.wait_with_output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = read();
    assert!(
        last.contains("storcert_run_state{state=\"finished\"} 1"),
        "{last}"
    );
    assert!(
        !last
            .lines()
            .any(|l| l.starts_with("storcert_run_eta_seconds ")),
        "{last}"
    );
}

/// `promtool check metrics` on a page: whether it passed, and its lint.
fn check_metrics(page: &str) -> (bool, String) {
    use std::io::Write;
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool");
    p.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

const MAAS_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/maas/50-storcert-act");

/// The script's metadata read as MAAS reads it (its ScriptForm): the
/// first line a shebang, the YAML between the "Start/End MAAS 1.0 script
/// metadata" markers, each line's text after its first '#', parsed by
/// PyYAML's safe_load (Debian's python3-yaml); printed as JSON.
fn maas_metadata(script: &str) -> serde_json::Value {
    let parse = r##"
import json, re, sys, yaml
lines = open(sys.argv[1]).read().splitlines()
assert lines[0].startswith("#!/"), "Must start with shebang."
delim = re.compile(r"\s*#\s*-+\s*(Start|End) MAAS (?P<version>\d+\.\d+) script metadata\s+-+", re.I)
found, text = None, ""
for line in lines[1:]:
    m = delim.search(line)
    if m is not None:
        if found is None and m.group("version") == "1.0":
            found = "1.0"
            continue
        elif found == m.group("version"):
            break
    elif found is not None and line.strip() != "":
        assert "#" in line, 'Missing "#" on YAML line.'
        text += line.split("#", 1)[1] + "\n"
print(json.dumps(yaml.safe_load(text)))
"##;
    let out = Command::new("python3")
        .args(["-c", parse, script])
        .output()
        .expect("python3 with PyYAML (python3-yaml: scripts/setup installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_maas_script_s_metadata_parses_as_maas_parses_it() {
    let m = maas_metadata(MAAS_SCRIPT);
    assert_eq!(m["name"], "storcert-act");
    assert_eq!(m["script_type"], "testing");
    assert_eq!(m["hardware_type"], "storage");
    assert_eq!(m["parallel"], "instance");
    assert_eq!(m["destructive"], true);
    assert_eq!(m["timeout"], "02:00:00");
    // MAAS passes the disk as --storage={path}, the others as their
    // argument_format says.
    assert_eq!(m["parameters"]["storage"]["type"], "storage");
    assert_eq!(m["parameters"]["load"]["argument_format"], "--load={input}");
    // Each result a dictionary with a title, as MAAS' form requires.
    let results = m["results"].as_object().unwrap();
    assert!(results.len() >= 6);
    for (key, r) in results {
        assert!(r["title"].is_string(), "{key}: {r}");
    }
}

/// The script on a loop device, as MAAS runs it (its arguments and
/// $RESULT_PATH): the results file holds MAAS' status and every result
/// the metadata declares, and its exit status agrees.
#[test]
fn the_maas_script_tests_a_loop_device_and_writes_the_results_maas_reads() {
    let t = tempfile::tempdir().unwrap();
    let disk = common::Loop::new(&t.path().join("disk.img"), 256 << 20);
    let result_path = t.path().join("result.yaml");
    let out = Command::new(MAAS_SCRIPT)
        .arg(format!("--storage={}", disk.dev))
        .args(["--load=1x", "--duration=4s"])
        .env("RESULT_PATH", &result_path)
        .env("STORCERT", env!("CARGO_BIN_EXE_storcert"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    // The verdict is the loop device's latency on this machine at the
    // moment: either is a working test; the two must agree.
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
    let passed = code == 0;
    assert_eq!(r["status"], if passed { "passed" } else { "failed" }, "{r}");
    assert_eq!(
        r["results"]["verdict"],
        if passed { "pass" } else { "fail" },
        "{r}"
    );
    assert_eq!(r["results"]["load"], 1.0, "{r}");
    for key in [
        "pct_over_1ms",
        "pct_over_8ms",
        "pct_over_64ms",
        "max_lag_ms",
    ] {
        assert!(r["results"][key].is_number(), "{key}: {r}");
    }
    assert!(passed || r["results"]["reason"].is_string(), "{r}");
    let declared = maas_metadata(MAAS_SCRIPT);
    for key in r["results"].as_object().unwrap().keys() {
        assert!(
            declared["results"].get(key).is_some(),
            "{key} is not declared"
        );
    }
    assert!(
        said.contains(&format!("ACT {}", if passed { "pass" } else { "fail" })),
        "{said}"
    );

    // No storcert to run: failed, and the reason says so.
    let out = Command::new(MAAS_SCRIPT)
        .arg(format!("--storage={}", disk.dev))
        .env("RESULT_PATH", &result_path)
        .env("STORCERT", "/nonexistent/storcert")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
    assert_eq!(r["status"], "failed", "{r}");
    let why = r["results"]["reason"].as_str().unwrap();
    assert!(why.contains("cannot run storcert"), "{why}");
}

/// Arguments MAAS would never pass are refused before anything runs, and
/// the refusal is in the results MAAS reads: a second --storage (MAAS
/// splits a parameter's value on spaces, so a load of "3x
/// --storage=/dev/sda" would add one), an abbreviation, a value that is no
/// load, duration or device (found in review: the last --storage won,
/// and storcert wiped a disk MAAS had not named).
#[test]
fn the_maas_script_refuses_arguments_maas_would_not_pass() {
    let t = tempfile::tempdir().unwrap();
    let fake = t.path().join("storcert");
    let ran = t.path().join("ran");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", ran.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let result_path = t.path().join("result.yaml");
    for (args, why) in [
        (
            &["--storage=/dev/sdb", "--load=3x", "--storage=/dev/sda"][..],
            "--storage given 2 times",
        ),
        (&["--stor=/dev/sda"], "required: --storage"),
        (&["--storage=/dev/sdb", "--load=3x;reboot"], "is no load"),
        (
            &["--storage=/dev/sdb", "--duration=1h", "--duration=9h"],
            "--duration given 2 times",
        ),
        (
            &["--storage=/dev/sdb", "--duration=forever"],
            "is no duration",
        ),
        (&["--storage=sda"], "is no device under /dev"),
        (&["--storage=/dev/sdb", "extra"], "unrecognized arguments"),
        // argparse's help exits 0: MAAS would read a pass, nothing run.
        (
            &["--storage=/dev/sdb", "--load=3x", "-h"],
            "unrecognized arguments",
        ),
        (&["--storage=/dev/sdb", "--help"], "unrecognized arguments"),
    ] {
        let out = Command::new(MAAS_SCRIPT)
            .args(args)
            .env("RESULT_PATH", &result_path)
            .env("STORCERT", &fake)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
        assert_eq!(r["status"], "failed", "{args:?}: {r}");
        assert_eq!(r["results"]["verdict"], "error", "{args:?}: {r}");
        let reason = r["results"]["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{args:?}: {reason}");
        assert!(!ran.exists(), "{args:?} ran storcert");
    }
    // What MAAS does pass runs, on the disk it names and no other.
    let out = Command::new(MAAS_SCRIPT)
        .args(["--storage=/dev/sdb", "--load=1.5x", "--duration=30m"])
        .env("RESULT_PATH", &result_path)
        .env("STORCERT", &fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let said = std::fs::read_to_string(&ran).unwrap();
    assert!(
        said.starts_with("act storage -d /dev/sdb --load 1.5x --duration 30m "),
        "{said}"
    );
    assert!(
        said.trim_end().ends_with("--force-destroy /dev/sdb"),
        "{said}"
    );
    assert!(!said.contains("/dev/sda"), "{said}");
}
