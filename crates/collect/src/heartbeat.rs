//! `PUT /heartbeat/RUN`: a running machine's heartbeat, admitted from its
//! head before a byte of its body is read, then recorded for the board.
//!
//! The head decides nearly everything: the token, the rate per address,
//! the run id, and the signature header, checked as far as it can be
//! without the body (a trusted key, its trusted comment's own signature,
//! and that comment naming this run and a seq). The seq is then judged
//! against what the index knows of the run: its owner (a run belongs to
//! the key of its first accepted heartbeat, and to its bundle's signer
//! once stored: another key is refused and counted), the last seq, and
//! the collector's clock (a seq is the sender's milliseconds, so one more
//! than a day ahead is refused: no heartbeat can lock a run out for
//! longer). A run id not seen before uses up one of its key's and its
//! address's new runs a minute. Only then is a body slot taken, one of
//! a few per address, and the body read within a short deadline.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::Result;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::admit::{has_burst, take_burst, ClientSlot};
use super::index::PutStatus;
use super::{board, collector_header, internal, Collector, Refusal, Shared};
use storcert_bundle::minisign;
use storcert_bundle::wire::{H_COLLECTOR, H_MINISIG};
use storcert_results::heartbeat::{self, Heartbeat};

/// How long a heartbeat's body may take to arrive: 64 KiB at most, sent
/// at once by a machine that has it whole.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(2);
/// Heartbeat bodies being read at once, whoever sends them.
pub const MAX_BODIES: usize = 256;
/// Heartbeat bodies being read at once from one address: a rack behind
/// one NAT address sends a few a second, each read in milliseconds.
pub const MAX_BODIES_PER_CLIENT: usize = 16;
/// Heartbeats one address may send at once before its rate applies.
const BURST: f64 = 100.0;
/// Status records of runs not heard from for this long are removed from
/// the index and the store (the board shows running ones for a week).
pub const KEEP_STATUS: Duration = Duration::from_secs(8 * 24 * 3600);

/// What the collector lets heartbeats cost.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Heartbeats per minute from one client address.
    pub rate_per_minute: u32,
    /// New run ids per minute (and at once) from one signing key: a
    /// fleet's power-on wave under one site key.
    pub new_runs_per_key: u32,
    /// New run ids per minute (and at once) from one client address: the
    /// racks behind one NAT address.
    pub new_runs_per_client: u32,
    /// The most runs the board's records hold (each at most a heartbeat,
    /// 64 KiB); a new run beyond is refused until older ones expire.
    pub max_runs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            rate_per_minute: 6000,
            new_runs_per_key: 600,
            new_runs_per_client: 120,
            max_runs: 100_000,
        }
    }
}

/// A heartbeat's head, admitted: who signed it, for which seq.
struct Head {
    minisig: String,
    key_id: String,
    seq: u64,
    /// A run not heard of before.
    new_run: bool,
}

/// The run and seq a heartbeat's trusted comment names.
fn comment_seq(comment: &str, run: &str) -> Option<u64> {
    let rest = comment.strip_prefix("storcert heartbeat ")?;
    let (r, seq) = rest.rsplit_once(' ')?;
    if r != run || seq.starts_with('+') {
        return None;
    }
    seq.parse().ok()
}

fn refuse(status: StatusCode, why: impl Into<String>) -> Response {
    Refusal(status, why.into()).into_response()
}

/// A refusal decided from the head (boxed: a response is large).
type Answer = Box<Response>;

fn refuse_boxed(status: StatusCode, why: impl Into<String>) -> Answer {
    Box::new(refuse(status, why))
}

/// Everything decided from the head, in order; a refusal is the answer.
fn admit_head(c: &Collector, ip: IpAddr, run: &str, headers: &HeaderMap) -> Result<Head, Answer> {
    let limits = &c.cfg.heartbeat;
    if let Some(r) = c.unauthorised(ip, headers, "heartbeats need the upload token") {
        return Err(Box::new(r));
    }
    if !take_burst(&c.beats, ip, limits.rate_per_minute.max(1) as f64, BURST) {
        return Err(Box::new(
            Refusal(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "more than {} heartbeats a minute from {ip}",
                    limits.rate_per_minute
                ),
            )
            .retry_after("5"),
        ));
    }
    if !heartbeat::valid_run_id(run) {
        return Err(refuse_boxed(
            StatusCode::BAD_REQUEST,
            format!(
                "bad run id {}",
                storcert_util::text::printable(&format!("{run:?}"), 220)
            ),
        ));
    }
    match headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        None => {
            return Err(refuse_boxed(
                StatusCode::LENGTH_REQUIRED,
                "a Content-Length is required",
            ))
        }
        Some(n) if n > heartbeat::MAX_BYTES as u64 => {
            return Err(refuse_boxed(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a heartbeat is at most {} bytes", heartbeat::MAX_BYTES),
            ))
        }
        Some(_) => {}
    }
    let minisig =
        super::header_text(headers, H_MINISIG).map_err(|r| Box::new(r.into_response()))?;
    // A trusted key made these lines, and says which run and seq: a
    // stranger, or a junk header, costs one small check and no slot.
    let (key, comment) = minisign::signer_and_comment(&minisig, &c.cfg.trusted)
        .map_err(|e| refuse_boxed(StatusCode::FORBIDDEN, format!("heartbeat: {e}")))?;
    let seq = comment_seq(&comment, run).ok_or_else(|| {
        refuse_boxed(
            StatusCode::FORBIDDEN,
            "heartbeat: its signature is not of this run's heartbeat",
        )
    })?;
    let key_id = key.id_hex();
    let new_run = judge_seq(c, ip, run, &key_id, seq)?;
    Ok(Head {
        minisig,
        key_id,
        seq,
        new_run,
    })
}

/// The seq against the clock and what the index knows of the run: true
/// for a run not heard of, which takes one of its address's new runs a
/// minute now, and one of its key's once it is recorded (a head replayed
/// with a bad body cannot spend the fleet key's), within the records'
/// quota.
fn judge_seq(c: &Collector, ip: IpAddr, run: &str, key_id: &str, seq: u64) -> Result<bool, Answer> {
    if !board::within_lead(seq) || seq > i64::MAX as u64 {
        return Err(refuse_boxed(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "heartbeat: seq {seq} is more than a day ahead of this collector's clock \
                 (a seq counts the sender's milliseconds: is the machine's clock right?)"
            ),
        ));
    }
    let owner = c
        .cfg
        .index
        .run_owner(run)
        .map_err(|e| Box::new(internal(e).into_response()))?;
    if let Some(k) = owner.key.filter(|k| k != key_id) {
        return Err(Box::new(foreign(c, run, key_id, &k)));
    }
    if let Some(seen) = owner.seq {
        if seen >= seq {
            return Err(Box::new(stale(seq, seen)));
        }
        return Ok(false);
    }
    let l = &c.cfg.heartbeat;
    let per_client = l.new_runs_per_client.max(1) as f64;
    let per_key = l.new_runs_per_key.max(1) as f64;
    if !has_burst(&c.new_runs_by_key, key_id.to_string(), per_key, per_key)
        || !take_burst(&c.new_runs_by_client, ip, per_client, per_client)
    {
        return Err(Box::new(
            Refusal(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many new runs: at most {} a minute from one address and {} from one \
                     key",
                    l.new_runs_per_client, l.new_runs_per_key
                ),
            )
            .retry_after("30"),
        ));
    }
    let held = c
        .cfg
        .index
        .status_count()
        .map_err(|e| Box::new(internal(e).into_response()))?;
    if held >= l.max_runs {
        eprintln!("collect: the board holds {held} runs (--max-runs): a new run is refused");
        return Err(Box::new(
            Refusal(
                StatusCode::INSUFFICIENT_STORAGE,
                format!(
                    "the board holds {held} runs, its most (--max-runs); older ones expire \
                     after {} days",
                    KEEP_STATUS.as_secs() / 86_400
                ),
            )
            .retry_after("3600"),
        ));
    }
    Ok(true)
}

fn stale(seq: u64, seen: u64) -> Response {
    refuse(
        StatusCode::CONFLICT,
        format!("stale: seq {seq} is not above {seen}"),
    )
}

/// A heartbeat signed by a key the run does not belong to: refused, and
/// counted against the run (the board shows it). Counted in memory and
/// written to the index at the next sync, and said in the log once per
/// run per sync: a key holder sending them at the full rate costs
/// neither a disk write nor a log line each.
fn foreign(c: &Collector, run: &str, key_id: &str, owner: &str) -> Response {
    let mut seen = c.foreign_seen.lock().unwrap_or_else(|p| p.into_inner());
    let first = !seen.contains_key(run);
    if first && seen.len() < MAX_FOREIGN_RUNS {
        seen.insert(run.to_string(), (0, String::new()));
    }
    if let Some((n, last)) = seen.get_mut(run) {
        *n += 1;
        *last = key_id.to_string();
    }
    drop(seen);
    if first {
        eprintln!(
            "collect: heartbeat for {run} signed by key {key_id}, but it is {owner}'s: refused \
             (counted on the board)"
        );
    }
    foreign_refusal(run, owner)
}

/// The answer to a heartbeat of a key the run does not belong to.
fn foreign_refusal(run: &str, owner: &str) -> Response {
    refuse(
        StatusCode::FORBIDDEN,
        format!("heartbeat: run {run} belongs to another key ({owner})"),
    )
}

/// The runs whose foreign heartbeats are counted between two syncs.
const MAX_FOREIGN_RUNS: usize = 10_000;

/// Writes the foreign heartbeats counted since the last sync to the index.
pub fn flush_foreign(c: &Collector) {
    let seen = std::mem::take(&mut *c.foreign_seen.lock().unwrap_or_else(|p| p.into_inner()));
    for (run, (n, key)) in seen {
        if let Err(e) = c.cfg.index.add_foreign(&run, &key, n) {
            eprintln!("collect: counting foreign heartbeats for {run}: {e:#}");
        }
    }
}

/// The refusal of a foreign heartbeat the index counted already.
fn refused_as_foreign(run: &str, key_id: &str, owner: &str) -> Response {
    eprintln!("collect: heartbeat for {run} signed by key {key_id}, but it is {owner}'s: refused");
    foreign_refusal(run, owner)
}

/// `PUT /heartbeat/RUN`: admitted from the head, then a small body read
/// within a short deadline and checked; recorded in the index and then
/// the store (for every collector sharing it) when its key owns the run
/// and its seq is above the last.
pub async fn receive(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(run): Path<String>,
    req: axum::extract::Request,
) -> Response {
    let ip = peer.ip();
    let head = match admit_head(&c, ip, &run, req.headers()) {
        Ok(h) => h,
        Err(r) => return *r,
    };
    let Some(_mine) = ClientSlot::take(&c.heartbeat_clients, ip, MAX_BODIES_PER_CLIENT) else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_BODIES_PER_CLIENT} heartbeats from {ip} in progress; try again"),
        )
        .retry_after("5");
    };
    let Ok(_slot) = c.heartbeats.clone().try_acquire_owned() else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_BODIES} heartbeats in progress; try again"),
        )
        .retry_after("5");
    };
    let body = match tokio::time::timeout(
        BODY_TIMEOUT,
        axum::body::to_bytes(req.into_body(), heartbeat::MAX_BYTES),
    )
    .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return refuse(StatusCode::BAD_REQUEST, format!("reading the body: {e}")),
        Err(_) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                "the heartbeat's body took too long",
            )
        }
    };
    let (hb, key_id) = match board::check(&run, &body, &head.minisig, &c.cfg.trusted) {
        Ok(x) => x,
        Err(e) => return refuse(StatusCode::FORBIDDEN, e.0),
    };
    if hb.seq != head.seq || key_id != head.key_id {
        return refuse(StatusCode::FORBIDDEN, "heartbeat: head and body disagree");
    }
    let recorded = record(&c, &run, hb, key_id, head.minisig, &body).await;
    if head.new_run && recorded.status() == StatusCode::OK {
        let per_key = c.cfg.heartbeat.new_runs_per_key.max(1) as f64;
        take_burst(&c.new_runs_by_key, head.key_id, per_key, per_key);
    }
    recorded
}

/// Records an admitted heartbeat: the store's record first (another
/// collector sharing it may have taken a newer one, or one of the run's
/// owner this index has not synced), then the index, conditionally, and
/// only a winner is written to the store.
async fn record(
    c: &Collector,
    run: &str,
    hb: Heartbeat,
    key_id: String,
    minisig: String,
    body: &[u8],
) -> Response {
    // One heartbeat of a run at a time from here to the store: an older
    // one can neither win the index after a newer one nor overwrite it in
    // the store.
    let lane = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        run.hash(&mut h);
        (h.finish() % c.run_locks.len() as u64) as usize
    };
    let _lane = c.run_locks[lane].lock().await;
    match c
        .cfg
        .store
        .get_small(&board::status_key(run), board::MAX_RECORD)
        .await
    {
        Ok(Some(data)) => {
            // A record in a shared store is a claim: only one that
            // verifies (a trusted key's heartbeat of this run, its seq
            // within the clock's lead) has a say.
            if let Some((stored_key, seen)) = board::verified_record(run, &data, &c.cfg.trusted) {
                if stored_key != key_id {
                    return foreign(c, run, &key_id, &stored_key);
                }
                if seen >= hb.seq {
                    return stale(hb.seq, seen);
                }
            }
        }
        Ok(None) => {}
        Err(e) => return internal(e).into_response(),
    }
    let now = std::time::SystemTime::now();
    let rec = board::StatusRecord {
        run_id: run.to_string(),
        received_at: humantime::format_rfc3339_seconds(now).to_string(),
        received_ms: board::now_ms(),
        key_id,
        minisig,
        heartbeat: String::from_utf8_lossy(body).into_owned(),
    };
    let stored = async {
        match c.cfg.index.put_status(&rec, hb.seq, hb.state.as_str())? {
            PutStatus::Recorded => {}
            other => return Ok(other),
        }
        let text = serde_json::to_vec(&rec)?;
        c.cfg
            .store
            .put(&board::status_key(run), text.into())
            .await?;
        anyhow::Ok(PutStatus::Recorded)
    };
    match stored.await {
        Ok(PutStatus::Recorded) => {
            let mut r =
                Json(serde_json::json!({ "status": "recorded", "seq": hb.seq })).into_response();
            r.headers_mut().insert(H_COLLECTOR, collector_header());
            r
        }
        Ok(PutStatus::Stale(seen)) => stale(hb.seq, seen),
        Ok(PutStatus::Foreign(owner)) => refused_as_foreign(run, &rec.key_id, &owner),
        Err(e) => internal(e).into_response(),
    }
}

/// How far back the board shows finished and stopped runs.
const BOARD_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// The most runs the board shows (running ones first).
pub const BOARD_ROWS: u32 = 5000;

/// The board's rows: runs heard from in the last day, and running ones
/// (stalled, perhaps) heard from in the last week; stalled first, then
/// running, stopped and finished, the most recently heard first. A run
/// whose bundle is stored shows the bundle's machine and verdict.
pub fn board_rows(c: &Collector) -> Result<Vec<board::BoardRow>> {
    flush_foreign(c);
    let now = board::now_ms();
    let since = now.saturating_sub(BOARD_WINDOW.as_millis() as u64);
    let running_since = now.saturating_sub(7 * BOARD_WINDOW.as_millis() as u64);
    let mut rows = Vec::new();
    c.cfg
        .index
        .statuses(since, running_since, BOARD_ROWS, |mut s| {
            let heartbeat = std::mem::take(&mut s.record.heartbeat);
            let Ok(mut hb) = serde_json::from_str::<Heartbeat>(&heartbeat) else {
                return;
            };
            hb.clamp();
            let silent = Duration::from_millis(now.saturating_sub(s.record.received_ms));
            rows.push(board::BoardRow::new(hb, s, silent, c.cfg.stall_after));
        })?;
    let rank = |s: board::Shown| match s {
        board::Shown::Stalled => 0,
        board::Shown::Running => 1,
        board::Shown::Stopped => 2,
        board::Shown::Finished => 3,
    };
    rows.sort_by(|a, b| {
        rank(a.shown)
            .cmp(&rank(b.shown))
            .then(a.silent_s.cmp(&b.silent_s))
            .then(a.heartbeat.run_id.cmp(&b.heartbeat.run_id))
    });
    Ok(rows)
}

/// Removes status records of runs silent for longer than `KEEP_STATUS`,
/// from the index and the store; at most once an hour.
pub async fn expire(c: &Collector) {
    {
        let mut last = c.last_expiry.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_secs(3600)) {
            return;
        }
        *last = Some(Instant::now());
    }
    let before = board::now_ms().saturating_sub(KEEP_STATUS.as_millis() as u64);
    let gone = match c.cfg.index.expire_statuses(before) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("collect: expiring heartbeats: {e:#}");
            return;
        }
    };
    for run in &gone {
        if let Err(e) = c.cfg.store.delete(&board::status_key(run)).await {
            eprintln!("collect: expiring {}: {e:#}", board::status_key(run));
        }
    }
    let mut stamps = c.status_stamps.lock().await;
    for run in &gone {
        stamps.remove(run);
    }
    if !gone.is_empty() {
        eprintln!(
            "collect: {} run(s) silent for over {} days left the board's records",
            gone.len(),
            KEEP_STATUS.as_secs() / 86_400
        );
    }
}

#[cfg(test)]
mod tests {
    use super::comment_seq;

    #[test]
    fn the_comment_names_this_run_and_a_plain_seq() {
        assert_eq!(
            comment_seq("storcert heartbeat run-1 42", "run-1"),
            Some(42)
        );
        assert_eq!(comment_seq("storcert heartbeat run-1 42", "run-2"), None);
        assert_eq!(comment_seq("storcert heartbeat run-1 +42", "run-1"), None);
        assert_eq!(comment_seq("storcert heartbeat run-1 x", "run-1"), None);
        assert_eq!(comment_seq("timestamp:1 file:run-1.tar.zst", "run-1"), None);
        assert_eq!(
            comment_seq("storcert heartbeat run-1 99999999999999999999", "run-1"),
            None
        );
    }
}
