//! The collector: receives signed bundles over HTTP(S), verifies them
//! (signature by a trusted key, envelope, every manifest entry) before
//! storing anything, stores each bundle once under its digest, keeps an
//! SQLite index, and serves the fleet's results as a web page and a JSON
//! API. It knows no hardware: it only reads bundles.
//!
//! Routes: `PUT /upload/NAME.tar.zst` (signatures in the `x-storcert-*`
//! headers, see `upload`), `GET /` and `/bundles/SHA` (pages),
//! `GET /api/bundles?q=` and `/api/bundles/SHA` (JSON),
//! `GET /download/SHA.tar.zst[.minisig|.intoto.json]`. Nothing else of the
//! store is reachable: no listing, no other paths.
//!
//! Its own crate, above the report's and the judge's: the compiler
//! refuses it a device, an engine or the command line, and the image's
//! binary, built without the root's `collector` feature, holds none of it
//! (no HTTP server, SQLite or S3 client).

mod admit;
mod api;
pub mod board;
mod download;
pub mod exports;
pub mod fleet;
pub mod fuzz;
pub mod heartbeat;
pub mod index;
pub mod metrics;
mod pace;
mod receive;
mod serve;
pub mod store;
mod web;

use self::api::*;
use self::download::*;
pub use self::exports::*;
use self::receive::*;
#[cfg(test)]
use self::serve::*;
pub use self::serve::{serve, use_ring};

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use self::admit::{take, Buckets, ClientSlot};
use self::index::{Index, PutStatus, Record};
use self::store::Store;
use storcert_bundle::wire::{H_COLLECTOR, H_ENVELOPE, H_MINISIG, H_SHA256};
use storcert_bundle::{self as bundle, minisign::PublicKey};
use storcert_judge::contents::{Contents, Holding, ResultsReader};
use storcert_report::export::{self, DriveRow};

pub struct Config {
    pub store: Store,
    pub index: Index,
    pub trusted: Vec<PublicKey>,
    pub max_body: u64,
    /// Uploads per minute per client address.
    pub rate_per_minute: u32,
    pub sync_interval: Duration,
    /// The bearer token uploads (and, unless `public_read`, reads) must
    /// carry, if one is set.
    pub token: Option<String>,
    /// Pages, the API and downloads are open to anyone even with a token.
    pub public_read: bool,
    /// Uploads in progress at once; more get 503.
    pub max_uploads: usize,
    /// Uploads in progress at once from one client address.
    pub max_uploads_per_client: usize,
    /// Verifications running at once (each on a core); more wait.
    pub max_verifying: usize,
    /// The longest an upload may take, body and verification included.
    pub request_timeout: Duration,
    /// The longest the body may pause between two chunks.
    pub body_idle_timeout: Duration,
    /// What unpacking one bundle may cost (its budget's CPU time applies
    /// to each verification).
    pub limits: storcert_bundle::Limits,
    /// Where bodies are written while they arrive and are verified.
    pub incoming: PathBuf,
    /// Known failures accepted for a while: shown as waived.
    pub waivers: fleet::Waivers,
    /// A running machine silent this long shows as stalled.
    pub stall_after: Duration,
    /// What heartbeats may cost: their rate, and new runs a minute.
    pub heartbeat: heartbeat::Limits,
    /// An export whose reader takes nothing for this long ends.
    pub export_stall: Duration,
}

pub struct Collector {
    cfg: Config,
    uploads: Arc<tokio::sync::Semaphore>,
    verifying: Arc<tokio::sync::Semaphore>,
    per_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
    buckets: Buckets<IpAddr>,
    /// Failed token attempts, per client address: they use up only these,
    /// so strangers behind a NAT cannot spend its uploads.
    failures: Buckets<IpAddr>,
    last_sync: tokio::sync::Mutex<Option<Instant>>,
    /// After a sync that could not read the store: no other before then.
    sync_backoff: Mutex<Backoff>,
    /// Store records not indexed, by digest: bad ones until their stamp
    /// changes, ones that met a store error until their backoff ends.
    refused_records: tokio::sync::Mutex<HashMap<String, NotIndexed>>,
    /// Downloads being served at once.
    downloads: Arc<tokio::sync::Semaphore>,
    /// Heartbeats per client address.
    beats: Buckets<IpAddr>,
    /// New run ids per client address and per signing key.
    new_runs_by_client: Buckets<IpAddr>,
    new_runs_by_key: Buckets<String>,
    /// Heartbeat bodies being read, per client address.
    heartbeat_clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    /// Exports being streamed, per client address.
    export_clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    /// Downloads and report pages in progress per client address.
    download_clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    /// When status records were last expired.
    last_expiry: Mutex<Option<Instant>>,
    /// Foreign heartbeats refused since the last sync, by run: how many,
    /// the last key.
    foreign_seen: Mutex<HashMap<String, (u64, String)>>,
    /// The stamp of each status record last read from the store.
    status_stamps: tokio::sync::Mutex<HashMap<String, String>>,
    /// Heartbeat bodies being read.
    heartbeats: Arc<tokio::sync::Semaphore>,
    /// Heavy reads running (each on a blocking thread).
    heavy: Arc<tokio::sync::Semaphore>,
    /// Board pages being made.
    boards: Arc<tokio::sync::Semaphore>,
    /// /metrics pages being made: turns of their own, so board readers
    /// cannot keep Prometheus' scrapes answered 503 (found in review).
    metrics: Arc<tokio::sync::Semaphore>,
    /// The fleet the last scrape read, and when (`metrics::scrape_fleet`).
    last_fleet: Mutex<Option<(Instant, Arc<metrics::Fleet>)>>,
    /// One heartbeat of a run at a time, by a hash of its id: the index
    /// check and the store write of two heartbeats of a run do not cross.
    run_locks: Vec<tokio::sync::Mutex<()>>,
    /// Exports being streamed.
    exports: Arc<tokio::sync::Semaphore>,
    /// Report pages being unpacked from their bundles.
    page_unpacks: Arc<tokio::sync::Semaphore>,
    /// Uploads and heartbeats answered, for /metrics.
    traffic: metrics::Traffic,
    started: Instant,
}

/// Report pages unpacked at once; the others wait their turn. Each holds a
/// zstd window of up to 8 MiB while it unpacks: sixteen at once left the
/// collector 54 MiB larger on a busy machine, 25 MB on a quiet one.
pub(crate) const MAX_PAGE_UNPACKS: usize = 2;

type Shared = Arc<Collector>;

/// How long a client may take to send a request's head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest store record or signature file read.
const MAX_SMALL: u64 = 1 << 20;
/// Downloads served at once (each streams from a private copy).
const MAX_DOWNLOADS: usize = 16;
/// Failed token attempts a minute from one address before it gets 429.
const FAILURES_PER_MINUTE: f64 = 30.0;

/// A refusal: status and a one-line reason (the body, as text).
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = (self.0, self.1 + "\n").into_response();
        r.headers_mut().insert(H_COLLECTOR, collector_header());
        r
    }
}

impl Refusal {
    fn retry_after(self, seconds: &'static str) -> Response {
        let mut r = self.into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        r
    }
}

fn collector_header() -> HeaderValue {
    HeaderValue::from_static(concat!("storcert/", env!("CARGO_PKG_VERSION")))
}

fn internal(e: anyhow::Error) -> Refusal {
    eprintln!("collect: {e:#}");
    Refusal(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal error (see the collector's log)".into(),
    )
}

pub fn bundle_key(sha: &str) -> String {
    format!("bundles/{sha}.tar.zst")
}

fn summary_key(sha: &str) -> String {
    format!("summaries/{sha}.json")
}

pub use storcert_bundle::valid_name;

fn is_sha(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Compares a secret without leaking where it differs or how long it is:
/// both sides are hashed to 32 bytes first.
fn same_secret(given: &[u8], want: &[u8]) -> bool {
    use sha2::Digest;
    let (a, b) = (sha2::Sha256::digest(given), sha2::Sha256::digest(want));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The secret a request carries: `Authorization: Bearer T`, or Basic with
/// T as the password (what a browser sends after the 401's prompt).
fn presented_secret(h: &HeaderMap) -> Option<Vec<u8>> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    if let Some(t) = v.strip_prefix("Bearer ") {
        return Some(t.trim().as_bytes().to_vec());
    }
    let raw = B64.decode(v.strip_prefix("Basic ")?.trim()).ok()?;
    let colon = raw.iter().position(|b| *b == b':')?;
    Some(raw[colon + 1..].to_vec())
}

/// Waits that double after each failure, from 1 s up to 5 minutes.
#[derive(Debug, Default)]
struct Backoff {
    until: Option<Instant>,
    wait: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(1);
    const MOST: Duration = Duration::from_secs(300);

    fn ready(&self) -> bool {
        self.until.is_none_or(|t| Instant::now() >= t)
    }

    fn failed(&mut self) {
        self.wait = (self.wait * 2).clamp(Self::FIRST, Self::MOST);
        self.until = Some(Instant::now() + self.wait);
    }

    fn reset(&mut self) {
        *self = Backoff::default();
    }
}

/// A store record that was not indexed.
#[derive(Debug)]
struct NotIndexed {
    /// Its stamp when it was tried: a changed record is tried again.
    stamp: String,
    /// None for a bad record; a backoff for one that met a store error.
    retry: Option<Backoff>,
    /// How many times it was tried (its failure is logged once).
    tries: u32,
}

impl NotIndexed {
    fn after(was: Option<NotIndexed>, stamp: String, bad: bool) -> NotIndexed {
        let tries = was
            .as_ref()
            .filter(|w| w.stamp == stamp)
            .map_or(0, |w| w.tries);
        let retry = (!bad).then(|| {
            let mut b = was.and_then(|w| w.retry).unwrap_or_default();
            b.failed();
            b
        });
        NotIndexed {
            stamp,
            retry,
            tries: tries + 1,
        }
    }

    fn first_time(&self) -> bool {
        self.tries == 1
    }

    /// Not to be tried now: bad and unchanged, or still backing off.
    fn skip(&self, stamp: &str) -> bool {
        match &self.retry {
            None => self.stamp == stamp,
            Some(b) => !b.ready(),
        }
    }
}

/// What is wrong with a store record itself (not with reading it).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadRecord(String);

/// Sets its flag when dropped: a verification in a blocking thread learns
/// that the request it serves has ended (answered, timed out, or the
/// client went away).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A body being received: removed when dropped.
struct Incoming {
    path: PathBuf,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Collector {
    /// Runs a heavy read (cohorts, histories, the board) on a blocking
    /// thread, `MAX_HEAVY_READS` at once: more are answered 503, so a
    /// reader looping on them cannot take the cores uploads need.
    pub(crate) async fn heavy<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Collector) -> Result<T> + Send + 'static,
    ) -> Result<T, Response> {
        self.blocking(&self.heavy, MAX_HEAVY_READS, f).await
    }

    /// The board's rows, on a blocking thread, two at once (its own turns:
    /// cohort readers cannot stop it refreshing).
    pub(crate) async fn board(self: &Arc<Self>) -> Result<Vec<board::BoardRow>, Response> {
        self.blocking(&self.boards, MAX_BOARDS, heartbeat::board_rows)
            .await
    }

    async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        turns: &Arc<tokio::sync::Semaphore>,
        most: usize,
        f: impl FnOnce(&Collector) -> Result<T> + Send + 'static,
    ) -> Result<T, Response> {
        let Ok(turn) = turns.clone().try_acquire_owned() else {
            return Err(Refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{most} pages being made; try again"),
            )
            .retry_after("2"));
        };
        let c = self.clone();
        // The turn goes with the work, not with the request: a reader that
        // hangs up does not free it while the work still runs.
        match tokio::task::spawn_blocking(move || {
            let _turn = turn;
            f(&c)
        })
        .await
        {
            Ok(Ok(x)) => Ok(x),
            Ok(Err(e)) => Err(internal(e).into_response()),
            Err(e) => Err(internal(e.into()).into_response()),
        }
    }

    pub fn index(&self) -> &Index {
        &self.cfg.index
    }

    pub fn waivers(&self) -> &fleet::Waivers {
        &self.cfg.waivers
    }

    pub fn new(cfg: Config) -> Shared {
        Arc::new(Collector {
            uploads: Arc::new(tokio::sync::Semaphore::new(cfg.max_uploads.max(1))),
            verifying: Arc::new(tokio::sync::Semaphore::new(cfg.max_verifying.max(1))),
            per_client: Arc::new(Mutex::new(HashMap::new())),
            cfg,
            buckets: Buckets::default(),
            failures: Buckets::default(),
            last_sync: tokio::sync::Mutex::new(None),
            sync_backoff: Mutex::new(Backoff::default()),
            refused_records: tokio::sync::Mutex::new(Default::default()),
            downloads: Arc::new(tokio::sync::Semaphore::new(MAX_DOWNLOADS)),
            beats: Buckets::default(),
            new_runs_by_client: Buckets::default(),
            new_runs_by_key: Buckets::default(),
            heartbeat_clients: Arc::new(Mutex::new(HashMap::new())),
            export_clients: Arc::new(Mutex::new(HashMap::new())),
            download_clients: Arc::new(Mutex::new(HashMap::new())),
            last_expiry: Mutex::new(None),
            foreign_seen: Mutex::new(HashMap::new()),
            status_stamps: tokio::sync::Mutex::new(HashMap::new()),
            heartbeats: Arc::new(tokio::sync::Semaphore::new(heartbeat::MAX_BODIES)),
            heavy: Arc::new(tokio::sync::Semaphore::new(MAX_HEAVY_READS)),
            page_unpacks: Arc::new(tokio::sync::Semaphore::new(MAX_PAGE_UNPACKS)),
            traffic: metrics::Traffic::default(),
            started: Instant::now(),
            boards: Arc::new(tokio::sync::Semaphore::new(MAX_BOARDS)),
            metrics: Arc::new(tokio::sync::Semaphore::new(api::MAX_METRICS)),
            last_fleet: Mutex::new(None),
            run_locks: (0..64).map(|_| tokio::sync::Mutex::new(())).collect(),
            exports: Arc::new(tokio::sync::Semaphore::new(MAX_EXPORTS)),
        })
    }

    /// The answer to a request without the token, if one is set and the
    /// request lacks it. A failure is counted against the address's
    /// failure bucket only.
    fn unauthorised(&self, ip: IpAddr, h: &HeaderMap, hint: &str) -> Option<Response> {
        let want = self.cfg.token.as_ref()?;
        if presented_secret(h).is_some_and(|g| same_secret(&g, want.as_bytes())) {
            return None;
        }
        if !take(&self.failures, ip, FAILURES_PER_MINUTE) {
            return Some(
                Refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("too many failed token attempts from {ip}"),
                )
                .retry_after("60"),
            );
        }
        let mut r =
            Refusal(StatusCode::UNAUTHORIZED, format!("no valid token ({hint})")).into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"storcert collector\""),
        );
        Some(r)
    }

    /// One upload slot for `ip`, if it has fewer than its share.
    fn client_slot(&self, ip: IpAddr) -> Option<ClientSlot> {
        ClientSlot::take(&self.per_client, ip, self.cfg.max_uploads_per_client)
    }

    /// Verifies a bundle file within the limits and a deadline, on a
    /// blocking thread, cancelled when the returned future is dropped;
    /// reads its results as they pass and makes its export rows (their
    /// `received_at` is the caller's to fill in).
    async fn verify(
        &self,
        path: PathBuf,
        name: String,
        minisig: String,
        envelope: String,
        deadline: Instant,
    ) -> Result<Result<(bundle::Verified, Vec<DriveRow>), bundle::VerifyError>> {
        let _turn = self.verifying.acquire().await?;
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let mut limits = self.cfg.limits.clone();
        limits.budget.deadline = Some(deadline);
        limits.budget.cancel = Some(cancel);
        let trusted = self.cfg.trusted.clone();
        Ok(tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(&path).map_err(bundle::VerifyError::Io)?;
            // The rows need the JSON results and the logs' verdicts, not
            // the per-second timelines.
            let mut results = ResultsReader::new(Holding {
                seconds: 0,
                timelines: false,
                ..Holding::BUNDLE
            });
            let (v, unpacked) = bundle::verify_keeping(
                file,
                &name,
                &minisig,
                &envelope,
                &trusted,
                &limits,
                |p| p == bundle::SYSTEM,
                &mut results,
            )?;
            let contents = Contents::of_bundle(&unpacked, results);
            let received = export::Received {
                sha256: v.sha256.clone(),
                name: v.signed_name.clone(),
                received_at: String::new(),
                signed_at: v.signed_at.clone(),
            };
            let rows = export::rows(&received, &v.summary, &contents);
            Ok((v, rows))
        })
        .await?)
    }

    /// Imports records other collectors stored in a shared store. A record
    /// is a claim, not a fact (anyone with write access to a shared bucket
    /// can drop one): each is indexed only once its bundle, read back from
    /// the store, verifies, and then from what verified.
    pub async fn sync(&self) -> Result<usize> {
        // One sync at a time: readers that find one running do not queue
        // up behind it (or start more).
        let Ok(mut last) = self.last_sync.try_lock() else {
            return Ok(0);
        };
        *last = Some(Instant::now());
        // After a store error, bundles are looked for again only when the
        // backoff ends (every page view would otherwise try).
        let synced = if self.backoff().ready() {
            let synced = self.sync_records().await;
            match &synced {
                Ok(_) => self.backoff().reset(),
                Err(_) => self.backoff().failed(),
            }
            synced
        } else {
            Ok(0)
        };
        if let Err(e) = self.sync_statuses().await {
            eprintln!("collect: heartbeats in the store: {e:#}");
        }
        heartbeat::flush_foreign(self);
        heartbeat::expire(self).await;
        *last = Some(Instant::now());
        synced
    }

    fn backoff(&self) -> std::sync::MutexGuard<'_, Backoff> {
        self.sync_backoff.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Indexes the bundles other collectors stored (`sync`'s first part).
    async fn sync_records(&self) -> Result<usize> {
        let mut added = 0;
        for (file, stamp) in self.cfg.store.list_stamped("summaries").await? {
            let Some(sha) = file.strip_suffix(".json").filter(|s| is_sha(s)) else {
                continue;
            };
            let skip = self
                .refused_records
                .lock()
                .await
                .get(sha)
                .is_some_and(|n| n.skip(&stamp));
            if skip || self.cfg.index.contains(sha)? {
                continue;
            }
            match self.reverify(sha).await {
                Ok(Some(rec)) => {
                    self.refused_records.lock().await.remove(sha);
                    if self.cfg.index.insert(&rec)? {
                        added += 1;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    // A verdict on the record is remembered until the
                    // record changes: a planted or broken one costs one
                    // verification, not one per page view (an upload of
                    // the real bundle stores it afresh). A store or time
                    // error is tried again, less often each time.
                    let verdict = e.chain().any(|c| {
                        c.is::<BadRecord>()
                            || c.downcast_ref::<bundle::VerifyError>()
                                .is_some_and(|v| !v.is_transient())
                    });
                    let mut refused = self.refused_records.lock().await;
                    let was = refused.remove(sha);
                    let next = NotIndexed::after(was, stamp, verdict);
                    if next.first_time() {
                        eprintln!(
                            "collect: store record {}: not indexed: {e:#}",
                            summary_key(sha)
                        );
                    }
                    refused.insert(sha.to_string(), next);
                }
            }
        }
        Ok(added)
    }

    /// Imports the heartbeats other collectors stored: each status record
    /// that changed since it was last read, its signature checked again.
    async fn sync_statuses(&self) -> Result<()> {
        let listed = self.cfg.store.list_stamped("status").await?;
        let mut stamps = self.status_stamps.lock().await;
        for (file, stamp) in listed {
            let Some(run) = file
                .strip_suffix(".json")
                .filter(|r| storcert_results::heartbeat::valid_run_id(r))
            else {
                continue;
            };
            if stamps.get(run) == Some(&stamp) {
                continue;
            }
            let data = match self
                .cfg
                .store
                .get_small(&board::status_key(run), board::MAX_RECORD)
                .await
            {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => {
                    // Tried again next time: its stamp is not remembered.
                    eprintln!("collect: reading {}: {e:#}", board::status_key(run));
                    continue;
                }
            };
            let checked = serde_json::from_slice::<board::StatusRecord>(&data)
                .map_err(|e| e.to_string())
                .and_then(|rec| {
                    if rec.run_id != run {
                        return Err("for another run".to_string());
                    }
                    board::check(
                        run,
                        rec.heartbeat.as_bytes(),
                        &rec.minisig,
                        &self.cfg.trusted,
                    )
                    .map_err(|e| e.0)
                    .and_then(|(hb, key_id)| {
                        if board::within_lead(hb.seq) {
                            Ok((rec, hb, key_id))
                        } else {
                            Err(format!("seq {} is more than a day ahead", hb.seq))
                        }
                    })
                });
            match checked {
                Ok((mut rec, hb, key_id)) => {
                    // Only the heartbeat is signed: when it arrived is the
                    // other collector's word, and never later than now
                    // (a record dated ahead would keep a dead machine
                    // looking alive).
                    rec.received_ms = rec.received_ms.min(board::now_ms());
                    rec.received_at = humantime::format_rfc3339_seconds(
                        std::time::UNIX_EPOCH + Duration::from_millis(rec.received_ms),
                    )
                    .to_string();
                    rec.key_id = key_id;
                    match self.cfg.index.put_status(&rec, hb.seq, hb.state.as_str()) {
                        // Remembered once in the index (or older than what
                        // is): read again only when it changes.
                        Ok(put) => {
                            if let PutStatus::Foreign(owner) = put {
                                eprintln!(
                                    "collect: store record {}: signed by key {}, but the run \
                                     is {owner}'s: not shown",
                                    board::status_key(run),
                                    rec.key_id
                                );
                            }
                            stamps.insert(run.to_string(), stamp);
                        }
                        Err(e) => eprintln!("collect: indexing {}: {e:#}", board::status_key(run)),
                    }
                }
                Err(e) => {
                    // A bad record costs one check per change, not one
                    // per sync.
                    stamps.insert(run.to_string(), stamp);
                    eprintln!(
                        "collect: store record {}: not shown: {}",
                        board::status_key(run),
                        storcert_util::text::printable(&e, 300)
                    )
                }
            }
        }
        Ok(())
    }

    /// The record of a bundle found in the store, from its verification.
    async fn reverify(&self, sha: &str) -> Result<Option<Record>> {
        let Some(data) = self
            .cfg
            .store
            .get_small(&summary_key(sha), MAX_SMALL)
            .await?
        else {
            return Ok(None);
        };
        #[derive(serde::Deserialize)]
        struct Claim {
            name: String,
            received_at: String,
        }
        let claim: Claim = serde_json::from_slice(&data)
            .map_err(|e| BadRecord(format!("not a collector's record: {e}")))?;
        // When it was received is the storing collector's word: a time, or
        // the record is refused (it is shown, sorted and exported).
        let received = humantime::parse_rfc3339(&claim.received_at).map_err(|_| {
            BadRecord(format!(
                "received_at {} is not an RFC 3339 time",
                storcert_util::text::printable(&format!("{:?}", claim.received_at), 60)
            ))
        })?;
        let claim = Claim {
            received_at: humantime::format_rfc3339_seconds(
                received.min(std::time::SystemTime::now()),
            )
            .to_string(),
            ..claim
        };
        let key = bundle_key(sha);
        let text = |d: Option<bytes::Bytes>, what: &str| -> Result<String> {
            // A record is stored last: one without its parts is broken,
            // not half-stored.
            let d = d.ok_or_else(|| BadRecord(format!("no {what} in the store")))?;
            Ok(String::from_utf8(d.to_vec())
                .map_err(|_| BadRecord(format!("{what}: not UTF-8")))?)
        };
        let minisig = text(
            self.cfg
                .store
                .get_small(&format!("{key}.minisig"), MAX_SMALL)
                .await?,
            "minisig",
        )?;
        let envelope = text(
            self.cfg
                .store
                .get_small(&format!("{key}.intoto.json"), MAX_SMALL)
                .await?,
            "envelope",
        )?;
        let incoming = Incoming {
            path: self.incoming_path(),
        };
        let (size, stored_sha) = self
            .cfg
            .store
            .get_to_file(&key, &incoming.path, self.cfg.max_body)
            .await?
            .ok_or_else(|| BadRecord("no bundle in the store".into()))?;
        if stored_sha != sha {
            return Err(BadRecord(format!("the bundle stored under {sha} is {stored_sha}")).into());
        }
        let (v, rows) = self
            .verify(
                incoming.path.clone(),
                claim.name.clone(),
                minisig,
                envelope,
                Instant::now() + self.cfg.request_timeout,
            )
            .await??;
        if v.sha256 != sha {
            return Err(BadRecord(format!("the bundle stored under {sha} is {}", v.sha256)).into());
        }
        Ok(Some(Record::new(v, claim.received_at, size, rows)))
    }

    fn incoming_path(&self) -> PathBuf {
        let mut rng = storcert_util::random::Rng::from_entropy();
        self.cfg.incoming.join(format!(
            "{:016x}{:016x}.part",
            rng.next_u64(),
            rng.next_u64()
        ))
    }

    /// Syncs before answering a read when the last sync is over a second
    /// old, so a page shows what any collector stored.
    async fn fresh(&self) {
        let stale = match self.last_sync.try_lock() {
            Ok(t) => t.is_none_or(|t| t.elapsed() > Duration::from_secs(1)),
            // A sync is running: the page shows what is indexed now.
            Err(_) => false,
        };
        if stale {
            if let Err(e) = self.sync().await {
                eprintln!("collect: sync: {e:#}");
            }
        }
    }
}

/// Headers every answer carries: no scripts, frames, sniffing or
/// referrers (the pages are plain HTML with inline styles).
async fn security_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
             form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        // A handler's own stricter policy (a sandboxed report) stands.
        if !h.contains_key(&name) {
            h.insert(name, HeaderValue::from_static(value));
        }
    }
    r
}

/// Reads need the token too, unless the collector was started with
/// `--public-read`.
async fn read_guard(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !c.cfg.public_read {
        if let Some(r) = c.unauthorised(
            peer.ip(),
            req.headers(),
            "reads need the token, or --public-read",
        ) {
            return r;
        }
    }
    next.run(req).await
}

pub fn router(state: Shared) -> Router {
    let reads = Router::new()
        .route("/", get(web::fleet_page))
        .route("/bundles/{sha}", get(web::bundle_page))
        .route("/bundles/{sha}/report", get(bundle_report))
        .route("/api/bundles", get(api_list))
        .route("/api/bundles/{sha}", get(api_one))
        .route("/machines/{serial}", get(web::machine_page))
        .route("/drives/{id}", get(web::drive_page))
        .route("/cohorts", get(web::cohorts_page))
        .route("/api/machines/{serial}", get(api_machine))
        .route("/api/drives/{id}", get(api_drive))
        .route("/api/cohorts", get(api_cohorts))
        .route("/board", get(web::board_page))
        .route("/api/board", get(api_board))
        .route("/static/board.js", get(web::board_script))
        .route("/download/{file}", get(download))
        .route("/metrics", get(api_metrics));
    let reads = exports::routes(reads).layer(axum::middleware::from_fn_with_state(
        state.clone(),
        read_guard,
    ));
    Router::new()
        .merge(reads)
        .route(
            "/upload/{name}",
            put(receive).route_layer(axum::middleware::from_fn_with_state(
                (state.clone(), metrics::Counted::Uploads),
                metrics::count_answers,
            )),
        )
        .route(
            "/heartbeat/{run}",
            put(heartbeat::receive).route_layer(axum::middleware::from_fn_with_state(
                (state.clone(), metrics::Counted::Heartbeats),
                metrics::count_answers,
            )),
        )
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_be_paths_are_refused() {
        assert!(valid_name("storcert-7XYZ-20261130.tar.zst"));
        for bad in [
            "../x.tar.zst",
            "a/b.tar.zst",
            ".hidden.tar.zst",
            "x.tar",
            "x .tar.zst",
            "..tar.zst",
            "x\".tar.zst",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(is_sha(&"a".repeat(64)));
        assert!(!is_sha(&"A".repeat(64)));
        assert!(!is_sha("../../etc/passwd"));
    }

    #[test]
    fn only_an_open_collector_beyond_this_host_is_warned_about() {
        let at = |a: &str| a.parse::<SocketAddr>().unwrap();
        assert!(open_warning(None, false, at("0.0.0.0:8420")).is_some());
        assert!(open_warning(None, false, at("[::]:8420")).is_some());
        assert!(open_warning(None, false, at("10.1.2.3:8420")).is_some());
        assert!(open_warning(None, false, at("127.0.0.1:8420")).is_none());
        assert!(open_warning(None, true, at("[::1]:8420")).is_none());
        assert!(open_warning(Some("t"), false, at("0.0.0.0:8420")).is_none());
        let w = open_warning(Some("t"), true, at("0.0.0.0:8420")).unwrap();
        assert!(w.contains("--public-read"), "{w}");
    }

    #[test]
    fn a_bad_record_waits_for_a_change_and_a_store_error_backs_off() {
        let bad = NotIndexed::after(None, "s1".into(), true);
        assert!(bad.first_time());
        assert!(bad.skip("s1"));
        assert!(!bad.skip("s2"));
        let again = NotIndexed::after(Some(bad), "s1".into(), true);
        assert!(!again.first_time());
        // A store error: skipped until its backoff ends, whatever its
        // stamp; each failure doubles the wait, up to five minutes.
        let err = NotIndexed::after(None, "s1".into(), false);
        assert!(err.skip("s1") && err.skip("s2"));
        let w1 = err.retry.as_ref().unwrap().wait;
        let err = NotIndexed::after(Some(err), "s1".into(), false);
        assert_eq!(err.retry.as_ref().unwrap().wait, w1 * 2);
        let mut b = Backoff::default();
        assert!(b.ready());
        for _ in 0..20 {
            b.failed();
        }
        assert_eq!(b.wait, Backoff::MOST);
        assert!(!b.ready());
        b.reset();
        assert!(b.ready());
    }

    #[test]
    fn secrets_compare_whole_and_any_length() {
        assert!(same_secret(b"token", b"token"));
        assert!(!same_secret(b"toke", b"token"));
        assert!(!same_secret(b"", b"token"));
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(presented_secret(&h).unwrap(), b"abc");
        // Basic, as a browser sends it: any user, the token as password.
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {}", B64.encode("me:abc"))).unwrap(),
        );
        assert_eq!(presented_secret(&h).unwrap(), b"abc");
    }
}
