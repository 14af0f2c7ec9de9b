//! The live board: heartbeats of running machines, kept in the store (so
//! several collectors sharing a bucket show the same board) and in the
//! index; machines gone silent are flagged as stalled; finished runs link
//! to their bundles.
//!
//! A heartbeat is admitted as an upload is: the token (if set) and a rate
//! per client before the body is read, a small bounded body, and a
//! signature by a trusted key over exactly that body. Its `seq` must be
//! above the last one recorded for the run, so a replayed heartbeat cannot
//! roll the board back. A status record found in a shared store is a claim
//! like any other: its signature is checked again before it is shown.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::index::StatusRow;
use storcert_bundle::minisign::{self, PublicKey};
use storcert_results::heartbeat::{self, Heartbeat, RunState};

/// What the store keeps per run (`status/RUN.json`): the heartbeat as it
/// was signed, its signature, and when it arrived.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatusRecord {
    pub run_id: String,
    pub received_at: String,
    /// Milliseconds since the epoch at receipt (the collector's clock).
    pub received_ms: u64,
    pub key_id: String,
    pub minisig: String,
    /// The heartbeat's JSON, as signed.
    pub heartbeat: String,
}

pub fn status_key(run_id: &str) -> String {
    format!("status/{run_id}.json")
}

/// The bytes a heartbeat may hold beyond what serde writes of it.
const PADDING: usize = 1024;

/// The largest status record read from a store.
pub const MAX_RECORD: u64 = 4 * heartbeat::MAX_BYTES as u64;

/// Why a heartbeat was refused: a client's error, said in one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Checks a heartbeat: signed by a trusted key over these bytes, for this
/// run and this seq (the trusted comment says both), of a schema this
/// build reads, within the bounds. Returns it and the signer's key id.
pub fn check(
    run_id: &str,
    body: &[u8],
    minisig: &str,
    trusted: &[PublicKey],
) -> Result<(Heartbeat, String), Refused> {
    if body.len() > heartbeat::MAX_BYTES {
        return Err(Refused(format!(
            "a heartbeat is at most {} bytes",
            heartbeat::MAX_BYTES
        )));
    }
    let (info, key) = minisign::verify_minisig(body, minisig, trusted)
        .map_err(|e| Refused(format!("heartbeat: {e}")))?;
    #[derive(Deserialize)]
    struct Head {
        schema_version: u32,
    }
    let head: Head = serde_json::from_slice(body)
        .map_err(|e| Refused(format!("heartbeat: not a heartbeat: {e}")))?;
    if head.schema_version > heartbeat::SCHEMA_VERSION {
        return Err(Refused(format!(
            "heartbeat schema {} is newer than this collector reads ({})",
            head.schema_version,
            heartbeat::SCHEMA_VERSION
        )));
    }
    let hb: Heartbeat = serde_json::from_slice(body)
        .map_err(|e| Refused(format!("heartbeat: not a heartbeat: {e}")))?;
    if hb.run_id != run_id {
        return Err(Refused("heartbeat: for another run".into()));
    }
    // The index keeps it as SQLite's signed 64 bits: a larger one would
    // wrap, and lock the run's later heartbeats out.
    if hb.seq > i64::MAX as u64 {
        return Err(Refused("heartbeat: seq out of range".into()));
    }
    if info.trusted_comment != format!("storcert heartbeat {run_id} {}", hb.seq) {
        return Err(Refused(
            "heartbeat: its signature is not of this run's heartbeat".into(),
        ));
    }
    if hb.progress.len() > heartbeat::MAX_ENTRIES
        || hb.stages_failed.len() > heartbeat::MAX_ENTRIES
        || hb.errors.len() > heartbeat::MAX_ERRORS
    {
        return Err(Refused("heartbeat: more entries than a run sends".into()));
    }
    let mut hb = hb;
    // A run cuts its own strings before it signs: one over its bound is
    // forged, and would make a board row of any size.
    if let Some(why) = hb.oversized() {
        return Err(Refused(format!("heartbeat: {why}")));
    }
    // A run sends its heartbeat as serde writes it: one padded with white
    // space is forged, and would be stored at its padded size.
    let written = serde_json::to_vec(&hb).map_or(0, |w| w.len());
    if body.len() > written + PADDING {
        return Err(Refused(format!(
            "heartbeat: {} bytes for {written} bytes of heartbeat",
            body.len()
        )));
    }
    hb.clamp();
    Ok((hb, key.id_hex()))
}

/// The signer's key id and the seq of a status record read from a
/// store, if it verifies: a trusted key's heartbeat of `run`, its seq no
/// more than a day ahead of this collector's clock. A planted record has
/// no say.
pub fn verified_record(run: &str, data: &[u8], trusted: &[PublicKey]) -> Option<(String, u64)> {
    let rec = serde_json::from_slice::<StatusRecord>(data).ok()?;
    if rec.run_id != run {
        return None;
    }
    let (hb, key_id) = check(run, rec.heartbeat.as_bytes(), &rec.minisig, trusted).ok()?;
    within_lead(hb.seq).then_some((key_id, hb.seq))
}

/// A seq (the sender's milliseconds) at most `SEQ_LEAD_MS` ahead of this
/// collector's clock.
pub fn within_lead(seq: u64) -> bool {
    seq <= now_ms().saturating_add(SEQ_LEAD_MS)
}

/// How far ahead of this collector's clock a seq may be: a machine whose
/// clock keeps local time is at most 14 h ahead. A holder of the run's key
/// can lock its later heartbeats out for this long at most.
pub const SEQ_LEAD_MS: u64 = 24 * 3600 * 1000;

/// How a run shows on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shown {
    Running,
    /// Running, but silent for longer than the stall allowance.
    Stalled,
    Finished,
    Stopped,
}

impl Shown {
    pub fn as_str(self) -> &'static str {
        match self {
            Shown::Running => "running",
            Shown::Stalled => "stalled",
            Shown::Finished => "finished",
            Shown::Stopped => "stopped",
        }
    }
}

/// A row of the board.
#[derive(Debug, Clone, Serialize)]
pub struct BoardRow {
    pub shown: Shown,
    /// Seconds since its last heartbeat arrived.
    pub silent_s: u64,
    pub received_at: String,
    /// The bundle, once a collector stored it.
    pub bundle_sha256: Option<String>,
    /// The stored bundle's reasons (its machine and verdict stand in the
    /// heartbeat's place).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Heartbeats of another key refused for this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign: Option<Foreign>,
    pub heartbeat: Heartbeat,
}

/// Heartbeats for a run signed by a key it does not belong to.
#[derive(Debug, Clone, Serialize)]
pub struct Foreign {
    pub refused: u64,
    pub last_key: String,
}

/// The most reasons of a stored bundle a board row carries.
const MAX_REASONS: usize = 5;

impl BoardRow {
    /// A run's row from its last heartbeat and what the index holds of
    /// it: once its bundle is stored, the bundle's machine, verdict and
    /// reasons, never the heartbeat's (a heartbeat is a machine's word
    /// while it runs; the verified bundle is the record).
    pub fn new(
        mut hb: Heartbeat,
        s: StatusRow,
        silent: Duration,
        stall_after: Duration,
    ) -> BoardRow {
        let stored = s.bundle.is_some();
        let mut reasons = Vec::new();
        if let Some(b) = &s.bundle {
            hb.machine = b.machine.clone();
            hb.verdict = b.verdict;
            hb.fit();
            reasons = b
                .reasons
                .iter()
                .take(MAX_REASONS)
                .map(|r| storcert_util::text::printable(r, heartbeat::MAX_TEXT))
                .collect();
        }
        BoardRow {
            shown: shown(&hb, silent, stall_after, stored),
            silent_s: silent.as_secs(),
            received_at: s.record.received_at,
            bundle_sha256: s.bundle.map(|b| b.sha256),
            reasons,
            foreign: s
                .foreign
                .map(|(refused, last_key)| Foreign { refused, last_key }),
            heartbeat: hb,
        }
    }
}

/// How a run with `hb`, last heard `silent` ago, shows: finished once its
/// bundle is stored (whatever its last heartbeat said: that one may be
/// lost), stalled when running and silent too long.
pub fn shown(hb: &Heartbeat, silent: Duration, stall_after: Duration, stored: bool) -> Shown {
    if stored {
        return Shown::Finished;
    }
    match hb.state {
        RunState::Finished => Shown::Finished,
        RunState::Stopped => Shown::Stopped,
        RunState::Running if silent > stall_after => Shown::Stalled,
        RunState::Running => Shown::Running,
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storcert_bundle::minisign::SecretKey;
    use storcert_results::summary::Machine;
    use storcert_results::Verdict;

    fn hb(run: &str, seq: u64) -> Heartbeat {
        Heartbeat {
            schema_version: 1,
            run_id: run.into(),
            seq,
            sent_at: "2026-12-01T00:00:00Z".into(),
            machine: Machine::default(),
            profile: "burn-in".into(),
            tag: None,
            state: RunState::Running,
            stage: Some("act storage 3x nvme0n1".into()),
            stages_done: 2,
            stages_failed: vec![],
            progress: vec![],
            live_pct_over_1ms: Some(0.5),
            verdict: Verdict::Pass,
            errors: vec![],
            eta_s: Some(60),
            interval_s: 10,
            bundle: None,
        }
    }

    fn signed(key: &SecretKey, h: &Heartbeat, comment: &str) -> (Vec<u8>, String) {
        let body = serde_json::to_vec(h).unwrap();
        let sig = key.sign_minisig(&body, comment);
        (body, sig)
    }

    #[test]
    fn only_a_trusted_key_s_heartbeat_for_this_run_and_seq_is_taken() {
        let key = SecretKey::generate();
        let trusted = [key.public()];
        let h = hb("run-1", 7);
        let (body, sig) = signed(&key, &h, "storcert heartbeat run-1 7");
        let (got, id) = check("run-1", &body, &sig, &trusted).unwrap();
        assert_eq!(got, h);
        assert_eq!(id, key.public().id_hex());
        // Another run's path, another key, a changed byte, a signature of
        // another seq, a bundle's signature: all refused.
        assert!(check("run-2", &body, &sig, &trusted).is_err());
        let stranger = SecretKey::generate();
        let (b2, s2) = signed(&stranger, &h, "storcert heartbeat run-1 7");
        assert!(check("run-1", &b2, &s2, &trusted).is_err());
        let mut changed = body.clone();
        let at = changed.iter().position(|b| *b == b'7').unwrap();
        changed[at] = b'8';
        assert!(check("run-1", &changed, &sig, &trusted).is_err());
        let (b3, s3) = signed(&key, &h, "storcert heartbeat run-1 6");
        assert!(check("run-1", &b3, &s3, &trusted).is_err());
        let (b4, s4) = signed(&key, &h, "timestamp:1 file:run-1.tar.zst hashed");
        assert!(check("run-1", &b4, &s4, &trusted).is_err());
        // Newer schemas, too many entries, too large: refused.
        let mut newer = serde_json::to_value(&h).unwrap();
        newer["schema_version"] = 2.into();
        let b5 = serde_json::to_vec(&newer).unwrap();
        let s5 = key.sign_minisig(&b5, "storcert heartbeat run-1 7");
        let e = check("run-1", &b5, &s5, &trusted).unwrap_err().0;
        assert!(e.contains("newer"), "{e}");
        let mut many = h.clone();
        many.errors = vec!["x".into(); heartbeat::MAX_ERRORS + 1];
        let (b6, s6) = signed(&key, &many, "storcert heartbeat run-1 7");
        assert!(check("run-1", &b6, &s6, &trusted).is_err());
        let mut huge = h.clone();
        huge.seq = 1 << 63;
        let (b8, s8) = signed(
            &key,
            &huge,
            &format!("storcert heartbeat run-1 {}", 1u64 << 63),
        );
        assert!(check("run-1", &b8, &s8, &trusted).is_err());
        let big = vec![b' '; heartbeat::MAX_BYTES + 1];
        let s7 = key.sign_minisig(&big, "storcert heartbeat run-1 7");
        assert!(check("run-1", &big, &s7, &trusted).is_err());
    }

    #[test]
    fn silence_stalls_a_running_machine_and_a_stored_bundle_finishes_it() {
        let h = hb("r", 1);
        let stall = Duration::from_secs(180);
        assert_eq!(
            shown(&h, Duration::from_secs(10), stall, false),
            Shown::Running
        );
        assert_eq!(
            shown(&h, Duration::from_secs(181), stall, false),
            Shown::Stalled
        );
        assert_eq!(
            shown(&h, Duration::from_secs(999), stall, true),
            Shown::Finished
        );
        let mut done = h.clone();
        done.state = RunState::Finished;
        assert_eq!(
            shown(&done, Duration::from_secs(999), stall, false),
            Shown::Finished
        );
        done.state = RunState::Stopped;
        assert_eq!(
            shown(&done, Duration::from_secs(999), stall, false),
            Shown::Stopped
        );
    }
}
