//! Heartbeats: while a run works, a small signed status goes to every
//! storcert collector among its upload targets, every progress interval
//! and at every stage change, for the collector's live board.
//!
//! Best-effort by design: they are sent from a thread of their own, one
//! try each with a short timeout, never retried and never waited for by a
//! stage; a collector that is down costs the run nothing but a line in its
//! notes. The signed bundle stays the record.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bundle::minisign::SecretKey;
use crate::output::console::Console;
use crate::results::heartbeat::{
    Heartbeat, Progress, RunState, MAX_ENTRIES, MAX_ERRORS, MAX_TEXT, SCHEMA_VERSION,
};
use crate::results::summary::Machine;
use crate::results::Verdict;
use crate::upload::Client;

/// How long one heartbeat may take to one collector.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// What the run has done so far, as its stages report it.
#[derive(Debug, Default)]
pub struct Live {
    inner: Mutex<LiveState>,
}

#[derive(Debug, Default, Clone)]
struct LiveState {
    stage: Option<String>,
    stages_done: u32,
    failed: Vec<String>,
    errors: Vec<String>,
    tested: bool,
    state: Option<RunState>,
    bundle: Option<String>,
    verdict: Option<Verdict>,
}

impl Live {
    fn with(&self, f: impl FnOnce(&mut LiveState)) {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub fn stage_started(&self, id: &str) {
        self.with(|s| s.stage = Some(id.to_string()));
    }

    /// A stage ended; `failed`: with why.
    pub fn stage_ended(&self, id: &str, failed: Option<&str>) {
        self.with(|s| {
            s.stage = None;
            s.stages_done += 1;
            if !id.starts_with("policy") && !id.starts_with("health") {
                s.tested = true;
            }
            if let Some(why) = failed {
                s.failed.push(id.to_string());
                push_error(&mut s.errors, &format!("{id}: {why}"));
            }
        });
    }

    pub fn error(&self, text: &str) {
        self.with(|s| push_error(&mut s.errors, text));
    }

    /// The run is over: its bundle made (with its verdict), or stopped.
    pub fn ended(&self, bundle: Option<(String, Verdict)>) {
        self.with(|s| {
            s.stage = None;
            match bundle {
                Some((name, v)) => {
                    s.state = Some(RunState::Finished);
                    s.bundle = Some(name);
                    s.verdict = Some(v);
                }
                // A run that ended with its bundle stays finished.
                None => {
                    s.state.get_or_insert(RunState::Stopped);
                }
            }
        });
    }

    fn snapshot(&self) -> LiveState {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The newest errors, each printable and at most `MAX_TEXT` bytes and an
/// ellipsis (a device's message is anyone's text, and a heartbeat has a
/// size a collector takes).
fn push_error(errors: &mut Vec<String>, text: &str) {
    let shown = crate::util::text::printable(text, MAX_TEXT);
    let mut cut = String::new();
    for c in shown.chars() {
        if cut.len() + c.len_utf8() > MAX_TEXT {
            cut.push('…');
            break;
        }
        cut.push(c);
    }
    errors.push(cut);
    if errors.len() > MAX_ERRORS {
        errors.remove(0);
    }
}

/// What every heartbeat of one run says alike.
pub struct RunInfo {
    pub run_id: String,
    pub machine: Machine,
    pub profile: String,
    pub tag: Option<String>,
    pub interval: Duration,
    /// Seconds of the profile's timed stages, for the ETA.
    pub timed_seconds: u64,
    /// Where the last seq sent is kept: a resumed run goes on above it
    /// even if the clock was set back in between.
    pub seq_file: std::path::PathBuf,
}

enum Msg {
    /// Something changed: send now.
    Kick,
    /// The run is over: send the last one, then stop.
    Last,
}

/// The heartbeat thread of a run.
pub struct Beacon {
    tx: Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Beacon {
    /// Starts sending to `targets` (name shown, client, heartbeat URL) and
    /// writing each heartbeat into the textfile folder (`textfile`), if
    /// given. None with neither.
    pub fn start(
        (targets, textfile): (Vec<(String, Client, reqwest::Url)>, Option<PathBuf>),
        key: SecretKey,
        info: RunInfo,
        live: Arc<Live>,
        console: Arc<Console>,
    ) -> Option<Beacon> {
        if targets.is_empty() && textfile.is_none() {
            return None;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let to = To { targets, textfile };
        let thread = std::thread::Builder::new()
            .name("heartbeat".into())
            .spawn(move || send_loop(rx, to, key, info, live, console))
            .ok()?;
        Some(Beacon {
            tx,
            thread: Some(thread),
        })
    }

    /// Sends one now (a stage started or ended).
    pub fn kick(&self) {
        let _ = self.tx.send(Msg::Kick);
    }

    /// Sends the last one and waits for it, at most the send timeout.
    pub fn finish(mut self) {
        let _ = self.tx.send(Msg::Last);
        if let Some(t) = self.thread.take() {
            let until = Instant::now() + SEND_TIMEOUT + Duration::from_secs(1);
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

fn heartbeat(
    info: &RunInfo,
    live: &LiveState,
    progress: Vec<Progress>,
    seq: u64,
    started: Instant,
) -> Heartbeat {
    let live_pct = progress
        .iter()
        .filter_map(|p| p.pct_over_1ms)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let state = live.state.unwrap_or(RunState::Running);
    let eta_s = (state == RunState::Running).then(|| {
        let by_plan = info
            .timed_seconds
            .saturating_sub(started.elapsed().as_secs());
        let by_progress = progress
            .iter()
            .filter(|p| p.unit == "s")
            .map(|p| p.total.saturating_sub(p.done))
            .max()
            .unwrap_or(0);
        by_plan.max(by_progress)
    });
    let verdict = match live.verdict {
        Some(v) => v,
        None if !live.failed.is_empty() => Verdict::Fail,
        None if live.tested => Verdict::Pass,
        None => Verdict::Untested,
    };
    let mut hb = Heartbeat {
        schema_version: SCHEMA_VERSION,
        run_id: info.run_id.clone(),
        seq,
        sent_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: info.machine.clone(),
        profile: info.profile.clone(),
        tag: info.tag.clone(),
        state,
        stage: live.stage.clone(),
        stages_done: live.stages_done,
        stages_failed: live.failed.iter().take(MAX_ENTRIES).cloned().collect(),
        progress: progress.into_iter().take(MAX_ENTRIES).collect(),
        live_pct_over_1ms: live_pct,
        verdict,
        errors: live.errors.clone(),
        eta_s,
        interval_s: info.interval.as_secs().max(1),
        bundle: live.bundle.clone(),
    };
    // Within every bound a collector holds it to: an odd DMI string is
    // cut here, not refused there.
    hb.fit();
    hb
}

/// Where heartbeats go: collectors, and node_exporter's textfile folder.
struct To {
    targets: Vec<(String, Client, reqwest::Url)>,
    textfile: Option<PathBuf>,
}

fn send_loop(
    rx: Receiver<Msg>,
    To { targets, textfile }: To,
    key: SecretKey,
    info: RunInfo,
    live: Arc<Live>,
    console: Arc<Console>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let started = Instant::now();
    // Counts up across resumes too: a new start begins above the last one
    // sent (kept in the results folder) and above the clock.
    let saved = std::fs::read_to_string(&info.seq_file)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut seq = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .max(saved);
    // Each target's failure is said once, until it answers again.
    let mut failing = vec![false; targets.len()];
    let mut textfile_failing = false;
    let mut last = false;
    while !last {
        match rx.recv_timeout(info.interval.max(Duration::from_secs(1))) {
            Ok(Msg::Kick) | Err(RecvTimeoutError::Timeout) => {}
            Ok(Msg::Last) => last = true,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        // Kicks that queued while a send was slow are one heartbeat; the
        // last one is never left behind them.
        while let Ok(m) = rx.try_recv() {
            if let Msg::Last = m {
                last = true;
            }
        }
        seq += 1;
        let _ = std::fs::write(&info.seq_file, seq.to_string());
        let hb = heartbeat(&info, &live.snapshot(), console.live(), seq, started);
        if let Some(dir) = &textfile {
            if let Err(e) = super::textfile::write(dir, &hb) {
                if !textfile_failing {
                    console.say(&format!(
                        "textfile {}: {e} (best-effort: the run goes on)",
                        crate::util::text::printable(&dir.display().to_string(), 300)
                    ));
                }
                textfile_failing = true;
            } else {
                textfile_failing = false;
            }
        }
        if targets.is_empty() {
            continue;
        }
        let Ok(body) = serde_json::to_vec(&hb) else {
            continue;
        };
        let minisig = key.sign_minisig(&body, &format!("storcert heartbeat {} {seq}", info.run_id));
        let sends = targets.iter().map(|(_, client, url)| {
            client.heartbeat(url.clone(), body.clone(), &minisig, SEND_TIMEOUT)
        });
        let results = rt.block_on(futures_util::future::join_all(sends));
        for ((r, (name, _, _)), was) in results.iter().zip(&targets).zip(failing.iter_mut()) {
            match r {
                Err(why) if !*was => {
                    *was = true;
                    console.say(&format!(
                        "heartbeat to {name}: {} (best-effort: the run goes on)",
                        crate::util::text::printable(why, 300)
                    ));
                }
                Ok(()) => *was = false,
                Err(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            run_id: "storcert-S1-burn-in-20261201T000000Z".into(),
            machine: Machine::default(),
            profile: "burn-in".into(),
            tag: Some("PO-1".into()),
            interval: Duration::from_secs(10),
            timed_seconds: 3600,
            seq_file: std::path::PathBuf::from("/nonexistent/seq"),
        }
    }

    #[test]
    fn the_verdict_so_far_and_the_eta_follow_the_stages() {
        let live = Live::default();
        let started = Instant::now();
        let hb = heartbeat(&info(), &live.snapshot(), vec![], 1, started);
        assert_eq!(
            (hb.state, hb.verdict),
            (RunState::Running, Verdict::Untested)
        );
        assert_eq!(hb.eta_s, Some(3600));
        live.stage_started("policy");
        live.stage_ended("policy", None);
        live.stage_started("act storage 3x nvme0n1");
        let progress = vec![Progress {
            key: "act storage 3x nvme0n1".into(),
            done: 100,
            total: 7200,
            unit: "s".into(),
            pct_over_1ms: Some(0.4),
        }];
        let hb = heartbeat(&info(), &live.snapshot(), progress, 2, started);
        assert_eq!(hb.stage.as_deref(), Some("act storage 3x nvme0n1"));
        // The drive's own progress outlasts the plan's guess.
        assert_eq!(hb.eta_s, Some(7100));
        assert_eq!(hb.live_pct_over_1ms, Some(0.4));
        live.stage_ended("act storage 3x nvme0n1", None);
        assert_eq!(
            heartbeat(&info(), &live.snapshot(), vec![], 3, started).verdict,
            Verdict::Pass
        );
        live.stage_ended("stream", Some(&"x\u{1b}[2J".repeat(200)));
        let hb = heartbeat(&info(), &live.snapshot(), vec![], 4, started);
        assert_eq!(hb.verdict, Verdict::Fail);
        assert_eq!(hb.stages_failed, ["stream"]);
        // A device's words are bounded and printable.
        assert!(hb.errors[0].len() <= MAX_TEXT + 3 && !hb.errors[0].contains('\u{1b}'));
        live.ended(Some(("b.tar.zst".into(), Verdict::Fail)));
        let hb = heartbeat(&info(), &live.snapshot(), vec![], 5, started);
        assert_eq!((hb.state, hb.eta_s), (RunState::Finished, None));
        assert_eq!(hb.bundle.as_deref(), Some("b.tar.zst"));
    }
}
