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

pub mod index;
pub mod store;
mod web;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use self::index::{Index, Record};
use self::store::Store;
use crate::bundle::{self, minisign::PublicKey};
use crate::upload::{H_COLLECTOR, H_ENVELOPE, H_MINISIG, H_SHA256};

pub struct Config {
    pub store: Store,
    pub index: Index,
    pub trusted: Vec<PublicKey>,
    pub max_body: usize,
    /// Uploads per minute per client address.
    pub rate_per_minute: u32,
    pub sync_interval: Duration,
    /// The bearer token uploads must carry, if one is set.
    pub token: Option<String>,
    /// Uploads in progress at once (each holds its body in memory, so
    /// this times the body limit bounds the memory); more get 503.
    pub max_uploads: usize,
    /// The longest an upload may take, body included (slow clients).
    pub request_timeout: Duration,
}

pub struct Collector {
    cfg: Config,
    uploads: Arc<tokio::sync::Semaphore>,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
    last_sync: tokio::sync::Mutex<Option<Instant>>,
}

type Shared = Arc<Collector>;

/// How long a client may take to send a request's head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A refusal: status and a one-line reason (the body, as text).
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = (self.0, self.1 + "\n").into_response();
        r.headers_mut().insert(H_COLLECTOR, collector_header());
        r
    }
}

fn collector_header() -> HeaderValue {
    HeaderValue::from_static(concat!("storcert/", env!("CARGO_PKG_VERSION")))
}

fn internal(e: anyhow::Error) -> Refusal {
    eprintln!("collect: {e:#}");
    Refusal(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"))
}

pub fn bundle_key(sha: &str) -> String {
    format!("bundles/{sha}.tar.zst")
}

fn summary_key(sha: &str) -> String {
    format!("summaries/{sha}.json")
}

/// An upload's name: a plain file name ending in .tar.zst, nothing that
/// could name a path.
fn valid_name(name: &str) -> bool {
    name.len() <= 200
        && name.ends_with(".tar.zst")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
}

fn is_sha(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Collector {
    pub fn new(cfg: Config) -> Shared {
        Arc::new(Collector {
            uploads: Arc::new(tokio::sync::Semaphore::new(cfg.max_uploads.max(1))),
            cfg,
            buckets: Mutex::new(HashMap::new()),
            last_sync: tokio::sync::Mutex::new(None),
        })
    }

    /// Token bucket per client address: `rate` per minute, bursts of the
    /// same size.
    fn admit(&self, ip: IpAddr) -> bool {
        let cap = self.cfg.rate_per_minute.max(1) as f64;
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if b.len() > 100_000 {
            b.retain(|_, (_, t)| now.duration_since(*t) < Duration::from_secs(60));
        }
        let (tokens, at) = b.entry(ip).or_insert((cap, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * cap / 60.0).min(cap);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Imports records other collectors stored in a shared store.
    pub async fn sync(&self) -> Result<usize> {
        let mut added = 0;
        for file in self.cfg.store.list("summaries").await? {
            let Some(sha) = file.strip_suffix(".json").filter(|s| is_sha(s)) else {
                continue;
            };
            if self.cfg.index.contains(sha)? {
                continue;
            }
            if let Some(data) = self.cfg.store.get(&summary_key(sha)).await? {
                let rec: Record = serde_json::from_slice(&data)
                    .with_context(|| format!("store record {}", summary_key(sha)))?;
                if rec.sha256 == sha && self.cfg.index.insert(&rec)? {
                    added += 1;
                }
            }
        }
        *self.last_sync.lock().await = Some(Instant::now());
        Ok(added)
    }

    /// Syncs before answering a read when the last sync is over a second
    /// old, so a page shows what any collector stored.
    async fn fresh(&self) {
        let stale = self
            .last_sync
            .lock()
            .await
            .is_none_or(|t| t.elapsed() > Duration::from_secs(1));
        if stale {
            if let Err(e) = self.sync().await {
                eprintln!("collect: sync: {e:#}");
            }
        }
    }
}

pub fn router(state: Shared) -> Router {
    let max_body = state.cfg.max_body;
    Router::new()
        .route("/", get(web::fleet_page))
        .route("/bundles/{sha}", get(web::bundle_page))
        .route("/api/bundles", get(api_list))
        .route("/api/bundles/{sha}", get(api_one))
        .route("/download/{file}", get(download))
        .route(
            "/upload/{name}",
            put(receive).layer(DefaultBodyLimit::max(max_body)).layer(
                axum::middleware::from_fn_with_state(state.clone(), upload_guard),
            ),
        )
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
        Ok(list) => Json(list).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

async fn api_one(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
    c.fresh().await;
    match c.cfg.index.get(&sha) {
        Ok(Some(r)) => Json(r).into_response(),
        Ok(None) => Refusal(StatusCode::NOT_FOUND, "no such bundle".into()).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

async fn download(State(c): State<Shared>, Path(file): Path<String>) -> Response {
    let (sha, kind) = match file.split_once('.') {
        Some((sha, rest)) if is_sha(sha) => (sha, rest),
        _ => return Refusal(StatusCode::NOT_FOUND, "no such file".into()).into_response(),
    };
    let (suffix, mime) = match kind {
        "tar.zst" => ("", "application/zstd"),
        "tar.zst.minisig" => (".minisig", "text/plain"),
        "tar.zst.intoto.json" => (".intoto.json", "application/json"),
        _ => return Refusal(StatusCode::NOT_FOUND, "no such file".into()).into_response(),
    };
    let name = c
        .cfg
        .index
        .get(sha)
        .ok()
        .flatten()
        .map_or_else(|| format!("{sha}.tar.zst"), |r| r.name);
    match c
        .cfg
        .store
        .get(&format!("{}{suffix}", bundle_key(sha)))
        .await
    {
        Ok(Some(data)) => (
            [
                (header::CONTENT_TYPE, mime.to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}{suffix}\""),
                ),
            ],
            data,
        )
            .into_response(),
        Ok(None) => Refusal(StatusCode::NOT_FOUND, "no such file".into()).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

/// Before an upload's body is read: a free upload slot (else 503 with
/// Retry-After, which clients retry) and a deadline for the whole request
/// (else 408), so slow or stalled clients cannot hold memory or slots.
async fn upload_guard(
    State(c): State<Shared>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Ok(_slot) = c.uploads.clone().try_acquire_owned() else {
        let mut r = Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{} uploads in progress; try again", c.cfg.max_uploads),
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        return r;
    };
    match tokio::time::timeout(c.cfg.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => Refusal(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the upload took longer than {} s",
                c.cfg.request_timeout.as_secs()
            ),
        )
        .into_response(),
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

async fn receive(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    if !c.admit(peer.ip()) {
        let mut r = Refusal(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "more than {} uploads a minute from {}",
                c.cfg.rate_per_minute,
                peer.ip()
            ),
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return Ok(r);
    }
    if let Some(want) = &c.cfg.token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        // Compared in constant time: the token is a secret.
        let ok = given.is_some_and(|g| {
            g.len() == want.len()
                && g.bytes()
                    .zip(want.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        });
        if !ok {
            return Err(Refusal(
                StatusCode::UNAUTHORIZED,
                "no valid bearer token (upload --token-file)".into(),
            ));
        }
    }
    if !valid_name(&name) {
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("bad bundle name {name:?}: a plain NAME.tar.zst is expected"),
        ));
    }
    let minisig = header_text(&headers, H_MINISIG)?;
    let envelope = header_text(&headers, H_ENVELOPE)?;
    let sha = bundle::sha256_hex(&body);
    if let Some(claimed) = headers.get(H_SHA256) {
        if claimed.as_bytes() != sha.as_bytes() {
            return Err(Refusal(
                StatusCode::BAD_REQUEST,
                format!("body's sha256 is {sha}, not the {H_SHA256} given"),
            ));
        }
    }
    let already = c
        .cfg
        .store
        .exists(&summary_key(&sha))
        .await
        .map_err(internal)?;
    // Verify before storing anything, even a bundle already stored: the
    // answer "stored" is only ever given for a verified bundle.
    let trusted = c.cfg.trusted.clone();
    let (body2, ms, env) = (body.clone(), minisig.clone(), envelope.clone());
    let verified = tokio::task::spawn_blocking(move || bundle::verify(&body2, &ms, &env, &trusted))
        .await
        .map_err(|e| internal(e.into()))?
        .map_err(|e| {
            let status = if e.is_untrusted_key() {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            Refusal(status, format!("rejected: {e}"))
        })?;
    let status = if already {
        "already stored"
    } else {
        let key = bundle_key(&sha);
        c.cfg
            .store
            .put(&format!("{key}.minisig"), minisig.into())
            .await
            .map_err(internal)?;
        c.cfg
            .store
            .put(&format!("{key}.intoto.json"), envelope.into())
            .await
            .map_err(internal)?;
        c.cfg
            .store
            .put(&key, body.clone())
            .await
            .map_err(internal)?;
        let record = Record {
            sha256: sha.clone(),
            name: name.clone(),
            received_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            signed_at: verified.signed_at.clone(),
            key_id: verified.key_id.clone(),
            size: body.len() as u64,
            summary: verified.summary.clone(),
        };
        let text = serde_json::to_vec_pretty(&record).map_err(|e| internal(e.into()))?;
        // The record last: its presence means the bundle is whole.
        c.cfg
            .store
            .put(&summary_key(&sha), text.into())
            .await
            .map_err(internal)?;
        c.cfg.index.insert(&record).map_err(internal)?;
        eprintln!(
            "collect: stored {name} ({sha}) from {}: {}",
            peer.ip(),
            verified.summary.verdict
        );
        "stored"
    };
    if already {
        // Index a record another collector stored.
        let _ = c.sync().await;
    }
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
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
            Some(
                axum_server::tls_rustls::RustlsConfig::from_pem_file(&cert, &key)
                    .await
                    .with_context(|| {
                        format!(
                            "--tls-cert {} / --tls-key {}",
                            cert.display(),
                            key.display()
                        )
                    })?,
            )
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
    // Both on hyper-util's server, with a bound on reading the request
    // head (slow-loris clients are dropped after it).
    match tls_config {
        Some(config) => {
            let mut server = axum_server::tls_rustls::from_tcp_rustls(listener, config)?;
            server
                .http_builder()
                .http1()
                .header_read_timeout(HEADER_READ_TIMEOUT);
            server.serve(app).await?;
        }
        None => {
            let mut server = axum_server::from_tcp(listener)?;
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
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(is_sha(&"a".repeat(64)));
        assert!(!is_sha(&"A".repeat(64)));
        assert!(!is_sha("../../etc/passwd"));
    }
}
