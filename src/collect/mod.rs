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

mod admit;
pub mod board;
pub mod fleet;
pub mod heartbeat;
pub mod index;
pub mod store;
mod web;

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
use crate::bundle::contents::{Contents, Holding, ResultsReader};
use crate::bundle::{self, minisign::PublicKey};
use crate::export::{self, DriveRow};
use crate::upload::{H_COLLECTOR, H_ENVELOPE, H_MINISIG, H_SHA256};

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
    pub limits: crate::bundle::Limits,
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
    /// One heartbeat of a run at a time, by a hash of its id: the index
    /// check and the store write of two heartbeats of a run do not cross.
    run_locks: Vec<tokio::sync::Mutex<()>>,
    /// Exports being streamed.
    exports: Arc<tokio::sync::Semaphore>,
}

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

pub use crate::bundle::valid_name;

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
            last_expiry: Mutex::new(None),
            foreign_seen: Mutex::new(HashMap::new()),
            status_stamps: tokio::sync::Mutex::new(HashMap::new()),
            heartbeats: Arc::new(tokio::sync::Semaphore::new(heartbeat::MAX_BODIES)),
            heavy: Arc::new(tokio::sync::Semaphore::new(MAX_HEAVY_READS)),
            boards: Arc::new(tokio::sync::Semaphore::new(MAX_BOARDS)),
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
                .filter(|r| crate::results::heartbeat::valid_run_id(r))
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
                        crate::util::text::printable(&e, 300)
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
                crate::util::text::printable(&format!("{:?}", claim.received_at), 60)
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
        let mut rng = crate::util::random::Rng::from_entropy();
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
        .route("/api/export.csv", get(export_csv))
        .route("/api/export.jsonl", get(export_jsonl))
        .route("/board", get(web::board_page))
        .route("/api/board", get(api_board))
        .route("/static/board.js", get(web::board_script))
        .route("/download/{file}", get(download))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            read_guard,
        ));
    Router::new()
        .merge(reads)
        .route("/upload/{name}", put(receive))
        .route("/heartbeat/{run}", put(heartbeat::receive))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

#[derive(serde::Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    q: String,
}

async fn api_list(State(c): State<Shared>, Query(q): Query<SearchQuery>) -> Response {
    c.fresh().await;
    match c.cfg.index.search(q.q.trim(), 1000) {
        Ok(list) => json_answer(&list),
        Err(e) => internal(e).into_response(),
    }
}

async fn api_one(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
    c.fresh().await;
    match c.cfg.index.get(&sha) {
        Ok(Some(r)) => json_answer(&r),
        Ok(None) => Refusal(StatusCode::NOT_FOUND, "no such bundle".into()).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

/// Heavy reads (cohorts, histories, the board) at once.
const MAX_HEAVY_READS: usize = 4;
/// Exports streamed at once, and from one address.
const MAX_EXPORTS: usize = 4;
const MAX_EXPORTS_PER_CLIENT: usize = 2;
/// Board pages made at once.
const MAX_BOARDS: usize = 2;

/// A JSON answer of what machines and bundles said: the same JSON, with
/// every C1, bidi and invisible character inside it escaped (serde
/// escapes only C0), so a reader's terminal shows text, never a control.
fn json_answer<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_string(value) {
        Ok(text) => (
            [(header::CONTENT_TYPE, "application/json")],
            crate::util::text::json_printable(&text),
        )
            .into_response(),
        Err(e) => internal(e.into()).into_response(),
    }
}

/// The most bytes `/api/board` answers: the running and stalled runs
/// come first; how many did not fit is said in `x-storcert-left-out`.
const API_BOARD_BYTES: usize = 16 << 20;

async fn api_board(State(c): State<Shared>) -> Response {
    c.fresh().await;
    let rows = match c.board().await {
        Ok(rows) => rows,
        Err(r) => return r,
    };
    let mut out = b"[".to_vec();
    let mut left_out = 0usize;
    for r in &rows {
        let Ok(j) = serde_json::to_string(r) else {
            continue;
        };
        let j = crate::util::text::json_printable(&j).into_bytes();
        if out.len() + j.len() + 2 > API_BOARD_BYTES {
            left_out += 1;
            continue;
        }
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(&j);
    }
    out.push(b']');
    let mut r = ([(header::CONTENT_TYPE, "application/json")], out).into_response();
    r.headers_mut()
        .insert("x-storcert-left-out", HeaderValue::from(left_out));
    r
}

/// The most rows an API answer or an export holds.
const MAX_EXPORT_ROWS: u64 = 1_000_000;
/// The most rows a JSON history answer holds.
const MAX_API_ROWS: u64 = 5000;

/// A row with the waiver that covers it, as the API gives it.
#[derive(serde::Serialize)]
struct ApiRow {
    #[serde(flatten)]
    row: DriveRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    waived: Option<String>,
}

async fn api_rows(c: Shared, f: index::RowFilter) -> Response {
    c.fresh().await;
    let today = fleet::today();
    let got = c
        .heavy(move |c| {
            let mut out = Vec::new();
            c.cfg.index.rows(&f, MAX_API_ROWS, |row| {
                let waived = c
                    .cfg
                    .waivers
                    .covering(&row, &today)
                    .map(fleet::Waivers::describe);
                out.push(ApiRow { row, waived });
                true
            })?;
            Ok(out)
        })
        .await;
    match got {
        Ok(rows) => json_answer(&rows),
        Err(r) => r,
    }
}

async fn api_machine(State(c): State<Shared>, Path(serial): Path<String>) -> Response {
    api_rows(
        c,
        index::RowFilter {
            machine: Some(serial),
            ..Default::default()
        },
    )
    .await
}

async fn api_drive(State(c): State<Shared>, Path(id): Path<String>) -> Response {
    api_rows(
        c,
        index::RowFilter {
            drive: vec![id],
            ..Default::default()
        },
    )
    .await
}

async fn api_cohorts(State(c): State<Shared>, Query(q): Query<web::CohortQuery>) -> Response {
    c.fresh().await;
    let by_name = q.by.clone().unwrap_or_else(|| "model".into());
    let Some(by) = index::CohortKey::parse(&by_name) else {
        return Refusal(
            StatusCode::BAD_REQUEST,
            format!(
                "by={}: model, firmware, controller or tag",
                crate::util::text::printable(&by_name, 60)
            ),
        )
        .into_response();
    };
    let group = q.group.clone();
    match c
        .heavy(move |c| web::cohorts(c, by, group.as_deref(), false))
        .await
    {
        Ok(cohorts) => json_answer(&cohorts.into_iter().map(|(co, _)| co).collect::<Vec<_>>()),
        Err(r) => r,
    }
}

/// Which rows an export takes: `drive=` (serial or WWN), `machine=`,
/// `by=` with `group=` (a cohort), `since=` (received on or after, an
/// RFC 3339 date or time), `limit=`.
#[derive(serde::Deserialize, Default)]
pub struct ExportQuery {
    pub drive: Option<String>,
    pub machine: Option<String>,
    pub by: Option<String>,
    pub group: Option<String>,
    pub since: Option<String>,
    pub limit: Option<u64>,
}

impl ExportQuery {
    pub fn filter(&self) -> Result<(index::RowFilter, u64), String> {
        let cohort = match (&self.by, &self.group) {
            (Some(by), Some(g)) => Some((
                index::CohortKey::parse(by).ok_or_else(|| {
                    format!(
                        "by={}: model, firmware, controller or tag",
                        crate::util::text::printable(by, 60)
                    )
                })?,
                g.clone(),
            )),
            (None, None) => None,
            _ => return Err("by= and group= go together".into()),
        };
        Ok((
            index::RowFilter {
                drive: self.drive.iter().cloned().collect(),
                machine: self.machine.clone(),
                cohort,
                since: self.since.clone(),
            },
            self.limit.unwrap_or(MAX_EXPORT_ROWS).min(MAX_EXPORT_ROWS),
        ))
    }
}

/// The two export formats.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExportFormat {
    Csv,
    Jsonl,
}

/// Writes the rows `f` takes to `out` in `format`, with their waivers;
/// returns how many.
pub fn write_export(
    index: &Index,
    waivers: &fleet::Waivers,
    f: &index::RowFilter,
    limit: u64,
    format: ExportFormat,
    out: impl std::io::Write,
) -> Result<u64> {
    let today = fleet::today();
    let mut n = 0u64;
    let mut failed: Option<std::io::Error> = None;
    match format {
        ExportFormat::Csv => {
            let mut w = export::csv::Writer::new(out, index.act_keys()?)?;
            index.rows(f, limit, |r| {
                let waived = waivers.covering(&r, &today).map(fleet::Waivers::describe);
                match w.row(&r, waived.as_deref()) {
                    Ok(()) => {
                        n += 1;
                        true
                    }
                    Err(e) => {
                        failed = Some(std::io::Error::other(e));
                        false
                    }
                }
            })?;
            w.finish()?;
        }
        ExportFormat::Jsonl => {
            let mut out = std::io::BufWriter::new(out);
            index.rows(f, limit, |r| {
                let waived = waivers.covering(&r, &today).map(fleet::Waivers::describe);
                match export::jsonl::write_row(&mut out, &r, waived.as_deref()) {
                    Ok(()) => {
                        n += 1;
                        true
                    }
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            })?;
            std::io::Write::flush(&mut out)?;
        }
    }
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(n),
    }
}

/// A writer that hands what it is given to an HTTP body, a chunk at a
/// time; a reader that went away ends the export.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>,
    buf: Vec<u8>,
    /// The whole export's deadline.
    until: tokio::time::Instant,
    /// The longest one chunk may wait for the reader: a reader that
    /// takes nothing for this long ends the export and frees its turn.
    stall: Duration,
    /// When the export began and the bytes its reader has taken: past
    /// the first stall, a reader must keep up `MIN_EXPORT_RATE` on
    /// average, so one that takes a chunk just inside each stall cannot
    /// hold its turn to the request timeout.
    started: tokio::time::Instant,
    taken: u64,
    handle: tokio::runtime::Handle,
}

/// The least an export's reader takes a second on average, after the
/// first stall (a reader on any network takes megabytes).
const MIN_EXPORT_RATE: u64 = 64 << 10;

impl ChannelWriter {
    fn new(
        tx: tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>,
        until: tokio::time::Instant,
        stall: Duration,
        handle: tokio::runtime::Handle,
    ) -> ChannelWriter {
        ChannelWriter {
            tx,
            buf: Vec::new(),
            until,
            stall,
            started: tokio::time::Instant::now(),
            taken: 0,
            handle,
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = bytes::Bytes::from(std::mem::take(&mut self.buf));
        let len = chunk.len() as u64;
        let stalled = tokio::time::Instant::now() + self.stall;
        let slow = self.started
            + self.stall
            + Duration::from_secs_f64(self.taken as f64 / MIN_EXPORT_RATE as f64);
        let until = self.until.min(stalled).min(slow);
        let tx = &self.tx;
        let sent = self
            .handle
            .block_on(async { tokio::time::timeout_at(until, tx.send(Ok(chunk))).await });
        match sent {
            Ok(Ok(())) => {
                self.taken += len;
                Ok(())
            }
            Ok(Err(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "reader went away",
            )),
            Err(_) if slow < stalled && slow <= self.until => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the reader took {} bytes in {:?}, less than {} KiB/s",
                    self.taken,
                    slow - self.started,
                    MIN_EXPORT_RATE >> 10
                ),
            )),
            Err(_) if stalled <= self.until => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the reader took nothing for {:?}", self.stall),
            )),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the export took longer than the request timeout",
            )),
        }
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 64 << 10 {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl Drop for ChannelWriter {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

/// Streams an export: rows are read and written as the body goes out,
/// never held whole. Two at once from one address, four in all, each
/// ended when its reader stops taking it.
async fn export(c: Shared, ip: IpAddr, q: ExportQuery, format: ExportFormat) -> Response {
    let (f, limit) = match q.filter() {
        Ok(x) => x,
        Err(e) => return Refusal(StatusCode::BAD_REQUEST, e).into_response(),
    };
    let Some(mine) = ClientSlot::take(&c.export_clients, ip, MAX_EXPORTS_PER_CLIENT) else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_EXPORTS_PER_CLIENT} exports from {ip} in progress; try again"),
        )
        .retry_after("2");
    };
    c.fresh().await;
    let Ok(turn) = c.exports.clone().try_acquire_owned() else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_EXPORTS} exports in progress; try again"),
        )
        .retry_after("2");
    };
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    // Set once every row is handed over: a body that ends without it ends
    // in an error, never as a whole export (the channel is usually full
    // when a stall or the deadline ends it, so no error could be queued).
    let finished = Arc::new(AtomicBool::new(false));
    let done = finished.clone();
    // A reader too slow to take it within the request timeout ends it (and
    // gives back its turn and its read of the index).
    let until = tokio::time::Instant::now() + c.cfg.request_timeout;
    let handle = tokio::runtime::Handle::current();
    let stall = c.cfg.export_stall;
    tokio::task::spawn_blocking(move || {
        let _turns = (turn, mine);
        let out = ChannelWriter::new(tx, until, stall, handle);
        match write_export(&c.cfg.index, &c.cfg.waivers, &f, limit, format, out) {
            Ok(_) => done.store(true, Ordering::SeqCst),
            Err(e) => eprintln!("collect: export: {e:#}"),
        }
    });
    let body = futures_util::stream::unfold(Some(rx), move |rx| {
        let finished = finished.clone();
        async move {
            let mut rx = rx?;
            match rx.recv().await {
                Some(chunk) => Some((chunk, Some(rx))),
                None if finished.load(Ordering::SeqCst) => None,
                None => Some((
                    Err(std::io::Error::other("the export did not finish")),
                    None,
                )),
            }
        }
    });
    let (mime, name) = match format {
        ExportFormat::Csv => ("text/csv; charset=utf-8", "storcert-drives.csv"),
        ExportFormat::Jsonl => ("application/jsonl; charset=utf-8", "storcert-drives.jsonl"),
    };
    (
        [
            (header::CONTENT_TYPE, mime.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

async fn export_csv(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(q): Query<ExportQuery>,
) -> Response {
    export(c, peer.ip(), q, ExportFormat::Csv).await
}

async fn export_jsonl(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(q): Query<ExportQuery>,
) -> Response {
    export(c, peer.ip(), q, ExportFormat::Jsonl).await
}

/// Serves a bundle or a signature, only of a bundle in the index (one
/// that verified here): nothing else in a shared store is reachable.
async fn download(State(c): State<Shared>, Path(file): Path<String>) -> Response {
    let not_found = || Refusal(StatusCode::NOT_FOUND, "no such file".into()).into_response();
    let (sha, kind) = match file.split_once('.') {
        Some((sha, rest)) if is_sha(sha) => (sha, rest),
        _ => return not_found(),
    };
    let (suffix, mime) = match kind {
        "tar.zst" => ("", "application/zstd"),
        "tar.zst.minisig" => (".minisig", "text/plain; charset=utf-8"),
        "tar.zst.intoto.json" => (".intoto.json", "application/json"),
        _ => return not_found(),
    };
    c.fresh().await;
    let record = match c.cfg.index.get(sha) {
        Ok(Some(r)) => r,
        Ok(None) => return not_found(),
        Err(e) => return internal(e).into_response(),
    };
    // The signed name, and only if it is a plain one (it goes into a
    // header): else the digest.
    let name = if valid_name(&record.name) {
        record.name
    } else {
        format!("{sha}.tar.zst")
    };
    let Ok(_turn) = c.downloads.clone().try_acquire_owned() else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_DOWNLOADS} downloads in progress; try again"),
        )
        .retry_after("2");
    };
    let headers = [
        (header::CONTENT_TYPE, mime.to_string()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}{suffix}\""),
        ),
    ];
    let key = format!("{}{suffix}", bundle_key(sha));
    if !suffix.is_empty() {
        return match c.cfg.store.get_small(&key, MAX_SMALL).await {
            Ok(Some(data)) => (headers, data).into_response(),
            Ok(None) => not_found(),
            Err(e) => internal(e).into_response(),
        };
    }
    // The bundle: copied from the store to a private file, checked against
    // its digest (a shared store's object may have been replaced), then
    // streamed from that file, never held whole.
    // (Removed by its guard whatever happens, a client gone mid-copy too.)
    let copy = Incoming {
        path: c.incoming_path(),
    };
    let got = c
        .cfg
        .store
        .get_to_file(&key, &copy.path, c.cfg.max_body)
        .await;
    let opened = tokio::fs::File::open(&copy.path).await;
    drop(copy);
    match (got, opened) {
        (Ok(Some((_, stored))), Ok(file)) if stored == sha => {
            // The slot goes with the body, which must be taken within the
            // request timeout: a reader that stops reading gives it back.
            let until = tokio::time::Instant::now() + c.cfg.request_timeout;
            let body =
                futures_util::stream::unfold((file, _turn), move |(mut f, turn)| async move {
                    use tokio::io::AsyncReadExt;
                    if tokio::time::Instant::now() >= until {
                        // An error, not an end: the body must not look whole.
                        let late = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "download took longer than the request timeout",
                        );
                        return Some((Err(late), (f, turn)));
                    }
                    let mut buf = vec![0u8; 256 << 10];
                    match f.read(&mut buf).await {
                        Ok(0) => None,
                        Ok(n) => {
                            buf.truncate(n);
                            Some((Ok::<_, std::io::Error>(bytes::Bytes::from(buf)), (f, turn)))
                        }
                        Err(e) => Some((Err(e), (f, turn))),
                    }
                });
            (headers, axum::body::Body::from_stream(body)).into_response()
        }
        (Ok(Some(_)), Err(e)) => internal(e.into()).into_response(),
        (Ok(Some(_)), Ok(_)) => internal(anyhow::anyhow!(
            "{sha}: the stored bundle does not match its digest"
        ))
        .into_response(),
        (Ok(None), _) => not_found(),
        (Err(e), _) => internal(e).into_response(),
    }
}

/// The report a bundle carries (`results/report.html`), read from the
/// stored bundle within the unpacking limits. It was written on the tested
/// machine, so it is served sandboxed: no scripts, no forms, no same-origin
/// access, whatever it holds.
async fn bundle_report(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
    let not_found = |why: &str| Refusal(StatusCode::NOT_FOUND, why.to_string()).into_response();
    c.fresh().await;
    if !is_sha(&sha) || !matches!(c.cfg.index.get(&sha), Ok(Some(_))) {
        return not_found("no such bundle");
    }
    // Counted with the downloads: each makes a copy of the bundle.
    let Ok(_turn) = c.downloads.clone().try_acquire_owned() else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_DOWNLOADS} downloads in progress; try again"),
        )
        .retry_after("2");
    };
    let incoming = Incoming {
        path: c.incoming_path(),
    };
    match c
        .cfg
        .store
        .get_to_file(&bundle_key(&sha), &incoming.path, c.cfg.max_body)
        .await
    {
        Ok(Some((_, stored))) if stored == sha => {}
        Ok(Some(_)) => {
            return internal(anyhow::anyhow!(
                "{sha}: the stored bundle does not match its digest"
            ))
            .into_response()
        }
        Ok(None) => return not_found("no such bundle"),
        Err(e) => return internal(e).into_response(),
    }
    let limits = bundle::Limits {
        max_kept: bundle::unpack::MAX_META,
        ..c.cfg.limits.clone()
    };
    let path = incoming.path.clone();
    let read = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<Vec<u8>>> {
        let file = std::fs::File::open(&path)?;
        let mut u = bundle::unpack::unpack(std::io::BufReader::new(file), &limits, |p| {
            p == "results/report.html"
        })?;
        Ok(u.files.remove("results/report.html"))
    })
    .await;
    match read {
        Ok(Ok(Some(html))) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:",
                ),
            ],
            html,
        )
            .into_response(),
        Ok(Ok(None)) => not_found("this bundle carries no report"),
        Ok(Err(e)) => internal(e).into_response(),
        Err(e) => internal(e.into()).into_response(),
    }
}

fn header_text(h: &HeaderMap, name: &str) -> Result<String, Refusal> {
    let v = h.get(name).ok_or_else(|| {
        Refusal(
            StatusCode::BAD_REQUEST,
            format!("unsigned: no {name} header (upload with storcert upload)"),
        )
    })?;
    let raw = B64
        .decode(v.as_bytes())
        .map_err(|e| Refusal(StatusCode::BAD_REQUEST, format!("{name}: not base64: {e}")))?;
    String::from_utf8(raw)
        .map_err(|_| Refusal(StatusCode::BAD_REQUEST, format!("{name}: not UTF-8")))
}

/// `PUT /upload/NAME`: everything that can be decided from the head is,
/// before a byte of the body is read (token, rate, name, signatures,
/// declared length, a slot); the body then streams to a file, and is
/// verified from there with a budget that ends with the request.
async fn receive(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    req: axum::extract::Request,
) -> Response {
    let deadline = Instant::now() + c.cfg.request_timeout;
    let timeout = c.cfg.request_timeout;
    match tokio::time::timeout(timeout, receive_within(&c, peer, name, req, deadline)).await {
        Ok(Ok(r)) => r,
        Ok(Err(r)) => r,
        Err(_) => Refusal(
            StatusCode::REQUEST_TIMEOUT,
            format!("the upload took longer than {} s", timeout.as_secs()),
        )
        .into_response(),
    }
}

async fn receive_within(
    c: &Shared,
    peer: SocketAddr,
    name: String,
    req: axum::extract::Request,
    deadline: Instant,
) -> Result<Response, Response> {
    let ip = peer.ip();
    let headers = req.headers().clone();
    if let Some(r) = c.unauthorised(ip, &headers, "upload --token-file") {
        return Err(r);
    }
    if !take(&c.buckets, ip, c.cfg.rate_per_minute.max(1) as f64) {
        return Err(Refusal(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "more than {} uploads a minute from {ip}",
                c.cfg.rate_per_minute
            ),
        )
        .retry_after("5"));
    }
    let refuse = |code, why: String| Refusal(code, why).into_response();
    if !valid_name(&name) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "bad bundle name {}: a plain NAME.tar.zst is expected",
                crate::util::text::printable(&format!("{name:?}"), 220)
            ),
        ));
    }
    let minisig = header_text(&headers, H_MINISIG).map_err(IntoResponse::into_response)?;
    let envelope = header_text(&headers, H_ENVELOPE).map_err(IntoResponse::into_response)?;
    let declared = match headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(n) => n,
        None => {
            return Err(refuse(
                StatusCode::LENGTH_REQUIRED,
                "a Content-Length is required".into(),
            ))
        }
    };
    if declared > c.cfg.max_body {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "{declared} bytes is more than --max-body {}",
                c.cfg.max_body
            ),
        ));
    }
    // Signed by a trusted key, as far as the headers can show, before the
    // body is read: a stranger's upload costs one small check.
    let (signed_name, signed_sha) =
        match bundle::check_signatures(&minisig, &envelope, &c.cfg.trusted) {
            Ok(s) => s,
            Err(e) => {
                let status = if e.is_untrusted_key() {
                    StatusCode::FORBIDDEN
                } else {
                    StatusCode::UNPROCESSABLE_ENTITY
                };
                return Err(refuse(status, format!("rejected: {e}")));
            }
        };
    if signed_name != name {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "rejected: signed as {}, but uploaded as {name:?}",
                crate::util::text::printable(&format!("{signed_name:?}"), 220)
            ),
        ));
    }
    // Signatures of a bundle stored already (they are served to readers, so
    // anyone may replay them): answered from the head, the body unread.
    if c.cfg
        .index
        .contains(&signed_sha)
        .map_err(|e| internal(e).into_response())?
    {
        let mut r = (
            StatusCode::OK,
            Json(serde_json::json!({ "sha256": signed_sha, "status": "already stored" })),
        )
            .into_response();
        r.headers_mut().insert(H_COLLECTOR, collector_header());
        return Ok(r);
    }
    let Some(_client_slot) = c.client_slot(ip) else {
        return Err(Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} uploads from {ip} in progress; try again",
                c.cfg.max_uploads_per_client
            ),
        )
        .retry_after("2"));
    };
    let Ok(_slot) = c.uploads.clone().try_acquire_owned() else {
        return Err(Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{} uploads in progress; try again", c.cfg.max_uploads),
        )
        .retry_after("2"));
    };
    // The body, to a file, no more than declared, none of it in memory
    // beyond one chunk; a pause longer than the idle timeout ends it.
    let incoming = Incoming {
        path: c.incoming_path(),
    };
    let (sha, size) = receive_body(c, req.into_body(), &incoming.path, declared)
        .await
        .map_err(|r| r.into_response())?;
    if let Some(claimed) = headers.get(H_SHA256) {
        if claimed.as_bytes() != sha.as_bytes() {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("body's sha256 is {sha}, not the {H_SHA256} given"),
            ));
        }
    }
    // Verify before storing anything, even a bundle already stored: the
    // answer "stored" is only ever given for a verified bundle.
    let (verified, rows) = c
        .verify(
            incoming.path.clone(),
            name.clone(),
            minisig.clone(),
            envelope.clone(),
            deadline,
        )
        .await
        .map_err(|e| internal(e).into_response())?
        .map_err(|e| {
            // Out of time or cancelled is no verdict on the bundle: the
            // client retries, and a spool does not set it aside.
            if e.is_transient() {
                return Refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("could not verify it now: {e}"),
                )
                .retry_after("5");
            }
            let status = if e.is_untrusted_key() {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            refuse(status, format!("rejected: {e}"))
        })?;
    // Stored already, here or by another collector sharing the store (its
    // record is indexed once it verifies from the store; a planted record
    // without a bundle that verifies is overwritten with this one).
    let mut already = c
        .cfg
        .index
        .contains(&sha)
        .map_err(|e| internal(e).into_response())?;
    if !already
        && c.cfg
            .store
            .exists(&summary_key(&sha))
            .await
            .map_err(|e| internal(e).into_response())?
    {
        if let Err(e) = c.sync().await {
            eprintln!("collect: sync: {e:#}");
        }
        already = c
            .cfg
            .index
            .contains(&sha)
            .map_err(|e| internal(e).into_response())?;
    }
    let status = if already {
        "already stored"
    } else {
        let key = bundle_key(&sha);
        let stored = async {
            c.cfg
                .store
                .put(&format!("{key}.minisig"), minisig.into())
                .await?;
            c.cfg
                .store
                .put(&format!("{key}.intoto.json"), envelope.into())
                .await?;
            c.cfg.store.put_file(&key, &incoming.path).await?;
            let record = Record::new(
                verified.clone(),
                humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
                size,
                rows,
            );
            let text = serde_json::to_vec_pretty(&record)?;
            // The record last: its presence means the bundle is whole.
            c.cfg.store.put(&summary_key(&sha), text.into()).await?;
            c.cfg.index.insert(&record)?;
            anyhow::Ok(())
        };
        stored.await.map_err(|e| internal(e).into_response())?;
        eprintln!(
            "collect: stored {name} ({sha}) from {ip}: {}",
            verified.summary.verdict
        );
        "stored"
    };
    let code = if already {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut r = (
        code,
        Json(serde_json::json!({ "sha256": sha, "status": status, "verdict": verified.summary.verdict })),
    )
        .into_response();
    r.headers_mut().insert(H_COLLECTOR, collector_header());
    Ok(r)
}

/// The slowest average a body may arrive at, beyond its idle allowance:
/// a byte every 29 s must not hold a slot for the whole request timeout.
const MIN_BODY_RATE: u64 = 64 << 10;

/// Writes a body to `path` as it arrives: at most `declared` bytes, each
/// chunk within the idle timeout, and at any moment no later than the
/// idle timeout plus what has arrived at `MIN_BODY_RATE`. Returns its
/// SHA-256 and size.
async fn receive_body(
    c: &Shared,
    body: axum::body::Body,
    path: &std::path::Path,
    declared: u64,
) -> Result<(String, u64), Refusal> {
    use futures_util::StreamExt;
    use sha2::Digest;
    use tokio::io::AsyncWriteExt;
    let mut file = store::create_private(path)
        .await
        .map_err(|e| internal(anyhow::anyhow!("{}: {e}", path.display())))?;
    let mut stream = body.into_data_stream();
    let mut sha = sha2::Sha256::new();
    let mut size = 0u64;
    let started = tokio::time::Instant::now();
    loop {
        // Time earned by what has arrived: a trickle earns almost none,
        // whatever length it declared.
        let by = started
            + c.cfg.body_idle_timeout
            + Duration::from_secs_f64(size as f64 / MIN_BODY_RATE as f64);
        let wait = c
            .cfg
            .body_idle_timeout
            .min(by.saturating_duration_since(tokio::time::Instant::now()));
        let chunk = match tokio::time::timeout(wait, stream.next()).await {
            Err(_) if tokio::time::Instant::now() >= by => {
                return Err(Refusal(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the body came slower than {} KiB/s", MIN_BODY_RATE >> 10),
                ))
            }
            Err(_) => {
                return Err(Refusal(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the body paused for more than {} s",
                        c.cfg.body_idle_timeout.as_secs()
                    ),
                ))
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(Refusal(
                    StatusCode::BAD_REQUEST,
                    format!("reading the body: {e}"),
                ))
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        size += chunk.len() as u64;
        if size > declared {
            return Err(Refusal(
                StatusCode::BAD_REQUEST,
                format!("the body is longer than its Content-Length {declared}"),
            ));
        }
        sha.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| internal(anyhow::anyhow!("{}: {e}", path.display())))?;
    }
    if size != declared {
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("the body ended at {size} of its Content-Length {declared} bytes"),
        ));
    }
    file.flush()
        .await
        .map_err(|e| internal(anyhow::anyhow!("{}: {e}", path.display())))?;
    Ok((hex::encode(sha.finalize()), size))
}

/// The TLS server's configuration: the certificate chain and key, and
/// HTTP/1.1 as the only protocol offered (the server speaks no HTTP/2; a
/// client that negotiated h2 would be cut off).
fn tls_server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .context("certificate")?
        .collect::<Result<Vec<_>, _>>()
        .context("certificate")?;
    let key = PrivateKeyDer::from_pem_file(key).context("key")?;
    let mut cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Drops a connection that sends nothing within `HEADER_READ_TIMEOUT` of
/// being accepted (hyper's head timeout starts at the first byte, so an
/// idle socket would otherwise be held for ever), and one whose reader
/// takes nothing of an answer for `write_stall`: hyper has no write
/// timeout, so a client that never reads would hold its connection and
/// the answer queued for it (an export's last chunks) until it closed.
#[derive(Clone, Copy)]
struct FirstByte {
    write_stall: Duration,
}

/// A connection as the server holds it: a write that makes no progress
/// for the stall fails, and hyper drops the connection.
type Connection = std::pin::Pin<Box<tokio_io_timeout::TimeoutStream<tokio::net::TcpStream>>>;

impl<S: Send + 'static> axum_server::accept::Accept<tokio::net::TcpStream, S> for FirstByte {
    type Stream = Connection;
    type Service = S;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<(Self::Stream, S)>> + Send>,
    >;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        let write_stall = self.write_stall;
        Box::pin(async move {
            // A peek, not readable(): tokio takes a new socket as readable
            // until a read says otherwise.
            let mut first = [0u8; 1];
            match tokio::time::timeout(HEADER_READ_TIMEOUT, stream.peek(&mut first)).await {
                Ok(Ok(_)) => {
                    let mut held = tokio_io_timeout::TimeoutStream::new(stream);
                    held.set_write_timeout(Some(write_stall));
                    Ok((Box::pin(held), service))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no request within the head timeout",
                )),
            }
        })
    }
}

/// What to say at start about a collector reachable beyond this host
/// with no token: every read route (the export of every serial and host
/// name included) and every upload is open to whoever reaches it.
fn open_warning(token: Option<&str>, public_read: bool, addr: SocketAddr) -> Option<String> {
    if addr.ip().is_loopback() {
        return None;
    }
    match (token, public_read) {
        (None, _) => Some(format!(
            "collect: warning: listening on {addr} with no --token-file: every page, the API, \
             the exports (every serial and host name) and uploads are open to anyone who can \
             reach it"
        )),
        (Some(_), true) => Some(format!(
            "collect: warning: listening on {addr} with --public-read: every page, the API and \
             the exports (every serial and host name) are open to anyone who can reach it"
        )),
        (Some(_), false) => None,
    }
}

/// Serves until the process is stopped. Prints the bound address first
/// (a listen port of 0 picks a free one).
pub async fn serve(
    state: Shared,
    listen: &str,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> Result<()> {
    let listener =
        std::net::TcpListener::bind(listen).with_context(|| format!("--listen {listen}"))?;
    let addr = listener.local_addr()?;
    match state.sync().await {
        Ok(n) if n > 0 => eprintln!("collect: indexed {n} bundle(s) found in the store"),
        Ok(_) => {}
        Err(e) => eprintln!("collect: sync: {e:#}"),
    }
    let interval = state.cfg.sync_interval;
    let bg = state.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = bg.sync().await {
                eprintln!("collect: sync: {e:#}");
            }
        }
    });
    // The certificate is loaded before the address is announced, so a
    // bad one is an error at start, not a listener that fails handshakes.
    let tls_config = match tls {
        Some((cert, key)) => {
            crate::upload::tls::use_ring();
            let what = || {
                format!(
                    "--tls-cert {} / --tls-key {}",
                    cert.display(),
                    key.display()
                )
            };
            Some(axum_server::tls_rustls::RustlsConfig::from_config(
                Arc::new(tls_server_config(&cert, &key).with_context(what)?),
            ))
        }
        None => None,
    };
    let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };
    eprintln!(
        "collect: listening on {scheme}://{addr}/ (store: {}, {} trusted key(s))",
        state.cfg.store.describe(),
        state.cfg.trusted.len()
    );
    if let Some(w) = open_warning(state.cfg.token.as_deref(), state.cfg.public_read, addr) {
        eprintln!("{w}");
    }
    // Both on hyper-util's server, HTTP/1 only, with a bound on the first
    // byte of a connection (an idle socket is dropped), on reading each
    // request head (slow-loris clients are dropped after it) and on a
    // reader that stops taking an answer.
    let accept = FirstByte {
        write_stall: state.cfg.export_stall,
    };
    match tls_config {
        Some(config) => {
            let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(config).acceptor(accept);
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(acceptor)
                .http1_only();
            server
                .http_builder()
                .http1()
                .header_read_timeout(HEADER_READ_TIMEOUT);
            server.serve(app).await?;
        }
        None => {
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(accept)
                .http1_only();
            server
                .http_builder()
                .http1()
                .header_read_timeout(HEADER_READ_TIMEOUT);
            server.serve(app).await?;
        }
    }
    Ok(())
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
    fn an_export_whose_reader_takes_nothing_ends_after_the_stall() {
        use std::io::Write;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // A reader that never reads: the channel holds one chunk.
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let now = rt.block_on(async { tokio::time::Instant::now() });
        let mut w = ChannelWriter::new(
            tx,
            now + Duration::from_secs(600),
            Duration::from_millis(50),
            rt.handle().clone(),
        );
        let chunk = vec![b'x'; 64 << 10];
        w.write_all(&chunk).unwrap();
        let e = w.write_all(&chunk).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("took nothing for"), "{e}");
    }

    #[test]
    fn an_export_whose_reader_trickles_ends_once_below_the_rate() {
        use std::io::Write;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // A reader that takes 16 KiB each half second, well inside the
        // stall: 32 KiB/s, half the floor.
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        rt.spawn(async move {
            while rx.recv().await.is_some() {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        let now = rt.block_on(async { tokio::time::Instant::now() });
        let mut w = ChannelWriter::new(
            tx,
            now + Duration::from_secs(600),
            Duration::from_secs(2),
            rt.handle().clone(),
        );
        let chunk = vec![b'x'; 16 << 10];
        let e = loop {
            if let Err(e) = w.write_all(&chunk).and_then(|_| w.flush()) {
                break e;
            }
            assert!(w.taken < 1 << 20, "a trickle took {} bytes", w.taken);
        };
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("less than 64 KiB/s"), "{e}");
        // A reader that keeps up is never cut: 16 KiB at once, 10 MiB.
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        rt.spawn(async move { while rx.recv().await.is_some() {} });
        let mut w = ChannelWriter::new(
            tx,
            now + Duration::from_secs(600),
            Duration::from_secs(2),
            rt.handle().clone(),
        );
        for _ in 0..640 {
            w.write_all(&chunk).and_then(|_| w.flush()).unwrap();
        }
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
