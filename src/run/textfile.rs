//! A running machine in node_exporter: `storcert run --textfile DIR`
//! (`storcert.textfile=DIR`, the profile's `textfile`) keeps
//! `DIR/storcert.prom` in Prometheus' text format, written whole (a
//! temporary, fsync, rename) with every heartbeat: every progress interval
//! and at every stage change, whether or not a collector takes them. It
//! says what the heartbeat says: the run, its stage, its progress, the
//! verdict so far, the live share of reads over 1 ms of each ACT stage,
//! and its errors. node_exporter's textfile collector serves it.

use std::fmt::Write;
use std::path::Path;

use crate::results::heartbeat::{Heartbeat, RunState};
use crate::results::Verdict;

/// The file node_exporter reads (it takes `*.prom` only, so the
/// temporary beside it is never read half-written).
pub const FILE: &str = "storcert.prom";

/// A label value as Prometheus reads it, cut at 128 characters.
fn label(v: &str) -> String {
    crate::util::text::prometheus_label(v, 128)
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The file's text for a heartbeat, sent or not, at `now_s` (Unix time).
pub fn render(hb: &Heartbeat, now_s: u64) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "storcert_run_info",
        "gauge",
        "The run on this machine (1), with its id, profile and tag.",
    );
    let _ = writeln!(
        out,
        "storcert_run_info{{run=\"{}\",profile=\"{}\",tag=\"{}\"}} 1",
        label(&hb.run_id),
        label(&hb.profile),
        label(hb.tag.as_deref().unwrap_or(""))
    );
    family(
        &mut out,
        "storcert_run_state",
        "gauge",
        "1 for the run's state (running, stopped, finished), 0 for the others.",
    );
    for (state, name) in [
        (RunState::Running, "running"),
        (RunState::Stopped, "stopped"),
        (RunState::Finished, "finished"),
    ] {
        let _ = writeln!(
            out,
            "storcert_run_state{{state=\"{name}\"}} {}",
            u8::from(hb.state == state)
        );
    }
    family(
        &mut out,
        "storcert_run_stage",
        "gauge",
        "The stage running now (1); none between stages.",
    );
    if let Some(stage) = &hb.stage {
        let _ = writeln!(out, "storcert_run_stage{{stage=\"{}\"}} 1", label(stage));
    }
    family(
        &mut out,
        "storcert_run_stages_done",
        "gauge",
        "Stages ended so far.",
    );
    let _ = writeln!(out, "storcert_run_stages_done {}", hb.stages_done);
    family(
        &mut out,
        "storcert_run_stages_failed",
        "gauge",
        "Stages failed so far.",
    );
    let _ = writeln!(out, "storcert_run_stages_failed {}", hb.stages_failed.len());
    family(
        &mut out,
        "storcert_run_verdict",
        "gauge",
        "1 for the verdict so far (pass, fail, untested), 0 for the others.",
    );
    for (v, name) in [
        (Verdict::Pass, "pass"),
        (Verdict::Fail, "fail"),
        (Verdict::Untested, "untested"),
    ] {
        let _ = writeln!(
            out,
            "storcert_run_verdict{{verdict=\"{name}\"}} {}",
            u8::from(hb.verdict == v)
        );
    }
    progress(&mut out, hb);
    family(
        &mut out,
        "storcert_run_errors",
        "gauge",
        "Errors the run has reported (the newest are in its heartbeat).",
    );
    let _ = writeln!(out, "storcert_run_errors {}", hb.errors.len());
    family(
        &mut out,
        "storcert_run_eta_seconds",
        "gauge",
        "Seconds the run expects to go on; absent once it is over.",
    );
    if let Some(eta) = hb.eta_s {
        let _ = writeln!(out, "storcert_run_eta_seconds {eta}");
    }
    family(
        &mut out,
        "storcert_run_updated_timestamp_seconds",
        "gauge",
        "When this file was written (Unix time): a machine that hangs stops updating it.",
    );
    let _ = writeln!(out, "storcert_run_updated_timestamp_seconds {now_s}");
    out
}

/// Each stage's progress (a share of its time or bytes) and, for ACT, its
/// live share of reads over 1 ms.
fn progress(out: &mut String, hb: &Heartbeat) {
    family(
        out,
        "storcert_run_progress_ratio",
        "gauge",
        "Each stage's progress, 0 to 1, by its key (\"act 10x /dev/sdb\").",
    );
    for p in &hb.progress {
        let ratio = match p.total {
            0 => 0.0,
            t => (p.done as f64 / t as f64).min(1.0),
        };
        let _ = writeln!(
            out,
            "storcert_run_progress_ratio{{key=\"{}\"}} {ratio:.4}",
            label(&p.key)
        );
    }
    family(
        out,
        "storcert_run_reads_over_1ms_percent",
        "gauge",
        "An ACT stage's live share of reads over 1 ms (ACT allows under 5 in every hour).",
    );
    for p in &hb.progress {
        if let Some(pct) = p.pct_over_1ms.filter(|x| x.is_finite()) {
            let _ = writeln!(
                out,
                "storcert_run_reads_over_1ms_percent{{key=\"{}\"}} {pct:.4}",
                label(&p.key)
            );
        }
    }
}

/// Writes the file whole into `dir`, always as a new file renamed into
/// place: something other than a file where the file goes (a FIFO or a
/// link someone made) is replaced, never written into or through (a
/// write into a FIFO never returns, and would silence the heartbeats too;
/// found in review, twice: a check before the write left a race).
pub fn write(dir: &Path, hb: &Heartbeat) -> std::io::Result<()> {
    let path = dir.join(FILE);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        return Err(std::io::Error::other(format!(
            "{} is a folder",
            path.display()
        )));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    crate::util::fs::replace_durably(&path, render(hb, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::heartbeat::Progress;

    #[test]
    fn the_file_says_what_the_heartbeat_says_with_hostile_text_escaped() {
        let hb = Heartbeat {
            schema_version: crate::results::heartbeat::SCHEMA_VERSION,
            seq: 1,
            sent_at: "2026-12-03T00:00:00Z".into(),
            machine: Default::default(),
            tag: None,
            live_pct_over_1ms: Some(0.42),
            errors: vec![],
            interval_s: 10,
            bundle: None,
            run_id: "storcert-S1-burn-in".into(),
            profile: "burn\"in\n# TYPE x counter".into(),
            state: RunState::Running,
            stage: Some("act 10x /dev/sdb".into()),
            stages_done: 3,
            stages_failed: vec!["health".into()],
            progress: vec![Progress {
                key: "act 10x /dev/sdb".into(),
                done: 30,
                total: 120,
                unit: "s".into(),
                pct_over_1ms: Some(0.42),
            }],
            verdict: Verdict::Fail,
            eta_s: Some(90),
        };
        let text = render(&hb, 1_796_000_000);
        for line in [
            "storcert_run_info{run=\"storcert-S1-burn-in\",profile=\"burn\\\"in\\n# TYPE x counter\",tag=\"\"} 1",
            "storcert_run_state{state=\"running\"} 1",
            "storcert_run_state{state=\"finished\"} 0",
            "storcert_run_stage{stage=\"act 10x /dev/sdb\"} 1",
            "storcert_run_stages_failed 1",
            "storcert_run_verdict{verdict=\"fail\"} 1",
            "storcert_run_progress_ratio{key=\"act 10x /dev/sdb\"} 0.2500",
            "storcert_run_reads_over_1ms_percent{key=\"act 10x /dev/sdb\"} 0.4200",
            "storcert_run_eta_seconds 90",
            "storcert_run_updated_timestamp_seconds 1796000000",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        // The profile's line break did not start a line of its own.
        assert_eq!(
            text.lines().filter(|l| l.starts_with("# TYPE x")).count(),
            0
        );
    }

    #[test]
    fn a_fifo_or_link_where_the_file_goes_is_replaced_not_written_into() {
        // (A write into the FIFO would block this test for good.)
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let hb: Heartbeat = serde_json::from_str(HEARTBEAT).unwrap();
        write(dir.path(), &hb).unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.is_file(), "{m:?}");
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("storcert_run_info{"));
        // A link planted there is replaced; what it pointed to is untouched.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write(dir.path(), &hb).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A folder there is an error, said once by the caller.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = write(dir.path(), &hb).unwrap_err().to_string();
        assert!(e.contains("is a folder"), "{e}");
    }

    const HEARTBEAT: &str = r#"{"schema_version":1,"run_id":"r","seq":1,"sent_at":"2026-12-03T00:00:00Z",
        "machine":{},"profile":"p","tag":null,"state":"running","stage":null,"stages_done":0,
        "stages_failed":[],"progress":[],"live_pct_over_1ms":null,"verdict":"untested",
        "errors":[],"eta_s":null,"interval_s":10,"bundle":null}"#;
}
