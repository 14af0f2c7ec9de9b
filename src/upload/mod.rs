//! Uploads: HTTP PUT of signed bundles with retries until the receiver
//! confirms the digest, then (with a spool) the move to `sent/`.
//!
//! Protocol. `--to` is either a folder-like base URL (the bundle's name is
//! appended) or one exact URL with a query string (an S3 presigned URL),
//! which comes with one presigned URL for each signature file.
//! The bundle goes in one PUT whose headers carry its SHA-256 and both
//! signatures (base64), so a storcert collector verifies and stores all of
//! it atomically and answers with the digest it stored, which must match.
//! Any other server (WebDAV, a bucket) gets the two signature files as
//! further PUTs beside the bundle; there a 2xx (and, where the server
//! returns an MD5 ETag, that ETag) is the confirmation. Every PUT is
//! idempotent (same name, same bytes; the collector stores by digest), so
//! a transfer cut at any point and retried ends with exactly one copy.

pub mod drain;
pub mod spool;
pub mod tls;

use crate::util::text::printable;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use md5::Digest as _;

use crate::bundle;

/// Headers of the bundle PUT, shared with the collector.
pub use crate::bundle::wire::{H_COLLECTOR, H_ENVELOPE, H_MINISIG, H_SHA256};

#[derive(Debug, Clone)]
pub struct Options {
    pub to: String,
    pub ca_file: Option<PathBuf>,
    pub pins: Vec<[u8; 32]>,
    pub token: Option<String>,
    pub allow_http: bool,
    pub deadline: Duration,
    pub max_backoff: Duration,
    /// With a presigned `to`: the presigned URLs of the `.minisig` and the
    /// `.intoto.json` (a bucket holding a bundle without its signatures
    /// holds nothing anyone can verify).
    pub signature_urls: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The receiver confirmed the digest; `status` is what it said.
    Confirmed { sha256: String, status: String },
    /// The receiver refused it for good (4xx): retrying cannot help.
    Rejected(String),
    /// A storcert collector refused the bundle itself (unsigned, tampered,
    /// renamed, an unknown key, too large): no receiver will take it, so a
    /// spool sets it aside. A 401, a 404 or a proxy's refusal is about the
    /// way there, and leaves the bundle pending.
    RefusedBundle(String),
    /// Still failing at the deadline: the bundle stays where it was.
    GaveUp(String),
}

/// Progress of one bundle's body, for the caller to show.
pub type ProgressFn = Arc<dyn Fn(&str, u64, u64) + Send + Sync>;

pub struct Client {
    http: reqwest::Client,
    opts: Options,
    base: reqwest::Url,
    /// With a presigned `--to` (one exact URL), the presigned URLs of the
    /// signature files; `None`: a folder-like target or a collector.
    signature_urls: Option<(reqwest::Url, reqwest::Url)>,
}

/// A failed request to retry, its reason without the URL's query (a
/// presigned URL's signature is a credential).
fn retry_without_url(e: reqwest::Error) -> Attempt {
    Attempt::Retry(error_chain(&e.without_url()), None)
}

/// A URL as printed: without its query, which in a presigned URL is a
/// credential ("https://bucket/x.tar.zst?…").
pub fn shown_url(url: &str) -> String {
    match url.split_once('?') {
        Some((before, _)) => format!("{}?…", printable(before, 300)),
        None => printable(url, 300),
    }
}

/// The error of parsing a URL (the `url` crate's, which reqwest does not
/// name).
type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// Why `Client::new` could not make a client, naming the option at fault.
/// Each cause is printed in the message and not chained as a `source`, so
/// a `{:#}` chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("--to {to}: {err}")]
    Url { to: String, err: UrlError },
    #[error("--to {to}: plain http is refused unless allowed (--allow-http)")]
    PlainHttp { to: String },
    #[error("--to {to}: unsupported scheme {scheme:?}")]
    Scheme { to: String, scheme: String },
    #[error(
        "--to is one presigned URL (it has a query): give the presigned URLs of the \
         signatures too (--minisig-to, --intoto-to), or the bundle lands unverifiable"
    )]
    PresignedWithoutSignatures,
    #[error("--minisig-to/--intoto-to are for a presigned --to (a URL with a query)")]
    SignatureUrlsWithoutPresigned,
    #[error("--to, --minisig-to and --intoto-to must be three different URLs")]
    SameUrlTwice,
    #[error("--ca-file {}: {err}", path.display())]
    CaFileRead { path: PathBuf, err: std::io::Error },
    #[error("--ca-file {}: {err}", path.display())]
    CaFileCertificates { path: PathBuf, err: reqwest::Error },
    #[error("--ca-file {}: no certificates", path.display())]
    CaFileEmpty { path: PathBuf },
    #[error("HTTP client: {}", error_chain(err))]
    Http { err: reqwest::Error },
}

#[derive(Debug)]
enum Attempt {
    Done(Outcome),
    Retry(String, Option<Duration>),
}

impl Client {
    pub fn new(opts: Options) -> Result<Client, ClientError> {
        // One TLS provider for the whole process (ring): reqwest and the
        // certificate verifier take the process default.
        tls::use_ring();
        let parse = |to: &str| -> Result<reqwest::Url, ClientError> {
            let url = reqwest::Url::parse(to).map_err(|err| ClientError::Url {
                to: shown_url(to),
                err,
            })?;
            match url.scheme() {
                "https" => Ok(url),
                "http" if opts.allow_http => Ok(url),
                "http" => Err(ClientError::PlainHttp { to: shown_url(to) }),
                s => Err(ClientError::Scheme {
                    to: shown_url(to),
                    scheme: s.into(),
                }),
            }
        };
        let url = parse(&opts.to)?;
        let exact = url.query().is_some();
        let signature_urls = match (&opts.signature_urls, exact) {
            // Three objects: a URL given twice would overwrite one.
            (Some((m, e)), true) if m == e || *m == opts.to || *e == opts.to => {
                return Err(ClientError::SameUrlTwice)
            }
            (Some((m, e)), true) => Some((parse(m)?, parse(e)?)),
            (None, false) => None,
            (None, true) => return Err(ClientError::PresignedWithoutSignatures),
            (Some(_), false) => return Err(ClientError::SignatureUrlsWithoutPresigned),
        };
        let base = if exact || url.path().ends_with('/') {
            url
        } else {
            let mut u = url.clone();
            u.set_path(&format!("{}/", url.path()));
            u
        };
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .read_timeout(Duration::from_secs(60))
                .user_agent(concat!("storcert/", env!("CARGO_PKG_VERSION")))
                // No PUT follows a redirect: each answer, a redirect too,
                // reaches `redirect_refused`, the one rule for all of them.
                .redirect(reqwest::redirect::Policy::none())
        };
        let mut b = builder();
        if !opts.pins.is_empty() {
            b = b.tls_backend_preconfigured(tls::pinned_config(opts.pins.clone()));
        } else if let Some(ca) = &opts.ca_file {
            let pem = std::fs::read(ca).map_err(|err| ClientError::CaFileRead {
                path: ca.clone(),
                err,
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|err| {
                ClientError::CaFileCertificates {
                    path: ca.clone(),
                    err,
                }
            })?;
            if certs.is_empty() {
                return Err(ClientError::CaFileEmpty { path: ca.clone() });
            }
            b = b.tls_certs_only(certs);
        }
        let http = match b.build() {
            Ok(c) => c,
            // The system's roots are missing (a minimal boot image without
            // ca-certificates): Mozilla's roots, built in, instead.
            Err(_) if opts.pins.is_empty() && opts.ca_file.is_none() => {
                let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
                    .iter()
                    .filter_map(|c| reqwest::Certificate::from_der(c.as_ref()).ok());
                builder()
                    .tls_certs_only(roots)
                    .build()
                    .map_err(|err| ClientError::Http { err })?
            }
            Err(err) => return Err(ClientError::Http { err }),
        };
        Ok(Client {
            http,
            opts,
            base,
            signature_urls,
        })
    }

    /// One exact (presigned) URL, not a folder: known by its signature
    /// URLs, which `new` requires with it.
    fn presigned(&self) -> bool {
        self.signature_urls.is_some()
    }

    fn url_for(&self, name: &str) -> reqwest::Url {
        if self.presigned() {
            self.base.clone()
        } else {
            self.base
                .join(&url_escape(name))
                .unwrap_or_else(|_| self.base.clone())
        }
    }

    /// Uploads one bundle (with its signature files beside it), retrying
    /// with exponential backoff and jitter until confirmed, refused, or
    /// `deadline` (an instant shared by every bundle of one command).
    pub async fn upload(
        &self,
        path: &Path,
        deadline: Instant,
        progress: Option<ProgressFn>,
    ) -> Outcome {
        let name = match path.file_name().and_then(|n| n.to_str()) {
            Some(n) => n.to_string(),
            None => return Outcome::Rejected(format!("{}: not a file name", path.display())),
        };
        let read = |p: PathBuf| std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()));
        let files = read(path.to_path_buf()).and_then(|b| {
            Ok((
                b,
                read(bundle::minisig_path(path))?,
                read(bundle::envelope_path(path))?,
            ))
        });
        let (bytes, minisig, envelope) = match files {
            Ok(f) => f,
            Err(e) => return Outcome::Rejected(e),
        };
        let bytes = bytes::Bytes::from(bytes);
        let sha256 = bundle::sha256_hex(&bytes);
        let mut delay = Duration::from_secs(1);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            // The deadline bounds every attempt too: a server that trickles
            // its answer a byte at a time cannot hold an unattended run.
            let left = deadline.saturating_duration_since(Instant::now());
            let result = tokio::time::timeout(
                left,
                self.attempt(
                    &name,
                    &bytes,
                    &sha256,
                    &minisig,
                    &envelope,
                    progress.clone(),
                ),
            )
            .await;
            let (why, hint) = match result {
                Err(_) => {
                    return Outcome::GaveUp(format!(
                        "{name}: attempt {attempt}: no answer before the deadline"
                    ))
                }
                Ok(Attempt::Done(o)) => return o,
                Ok(Attempt::Retry(why, hint)) => (why, hint),
            };
            // Equal jitter: half the backoff fixed, half random, so a rack
            // of machines that lost the network together does not return
            // in lockstep. A server's Retry-After lengthens the wait, never
            // shortens it below the backoff ("0" made a tight loop), and
            // keeps a tenth of jitter so a fleet told the same still spreads.
            let jittered = delay / 2 + delay.mul_f64(rand::random::<f64>() / 2.0);
            let wait = match hint {
                Some(h) if h > jittered => h + h.mul_f64(rand::random::<f64>() / 10.0),
                _ => jittered,
            }
            .min(self.opts.max_backoff);
            if Instant::now() + wait >= deadline {
                return Outcome::GaveUp(format!(
                    "{name}: attempt {attempt}: {why}; deadline reached"
                ));
            }
            eprintln!(
                "upload {name}: attempt {attempt}: {why}; retrying in {:.1} s",
                wait.as_secs_f64()
            );
            tokio::time::sleep(wait).await;
            delay = (delay * 2).min(self.opts.max_backoff);
        }
    }

    fn put(&self, url: reqwest::Url) -> reqwest::RequestBuilder {
        let mut r = self.http.put(url);
        // A presigned URL carries its own authority, and may name any
        // host: the token is for the collector, never sent there.
        if let Some(t) = self.opts.token.as_ref().filter(|_| !self.presigned()) {
            r = r.bearer_auth(t);
        }
        r
    }

    /// Where this target takes heartbeats: a storcert collector's
    /// `…/upload/` becomes `…/heartbeat/RUN`. None for any other target (a
    /// bucket or WebDAV would store them as files).
    pub fn heartbeat_url(&self, run_id: &str) -> Option<reqwest::Url> {
        if self.presigned() {
            return None;
        }
        let path = self.base.path().strip_suffix("upload/")?;
        if !path.ends_with('/') {
            return None;
        }
        let mut u = self.base.clone();
        u.set_path(&format!("{path}heartbeat/{}", url_escape(run_id)));
        u.set_query(None);
        Some(u)
    }

    /// Sends one heartbeat (its JSON, signed): a single try within
    /// `timeout`, never retried (the next one follows). Err: why it was
    /// not taken, printable.
    pub async fn heartbeat(
        &self,
        url: reqwest::Url,
        body: Vec<u8>,
        minisig: &str,
        timeout: Duration,
    ) -> Result<(), String> {
        let req = self
            .put(url)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(H_MINISIG, B64.encode(minisig))
            .body(body);
        match req.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => {
                if let Some(why) = redirect_refused(&r) {
                    return Err(why);
                }
                let status = r.status();
                let why = reason_of(&read_capped(r).await);
                Err(format!("HTTP {}: {why}", status.as_u16()))
            }
            Err(e) => Err(error_chain(&e.without_url())),
        }
    }

    /// PUTs the two signature files; `None` once both are stored.
    async fn put_signatures(&self, name: &str, minisig: &[u8], envelope: &[u8]) -> Option<Attempt> {
        let urls = match &self.signature_urls {
            Some((m, e)) => [m.clone(), e.clone()],
            None => [".minisig", ".intoto.json"].map(|x| self.url_for(&format!("{name}{x}"))),
        };
        for (url, data) in urls.into_iter().zip([minisig, envelope]) {
            match self.put(url).body(data.to_vec()).send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => return Some(classify_failure(r).await),
                Err(e) => return Some(retry_without_url(e)),
            }
        }
        None
    }

    async fn attempt(
        &self,
        name: &str,
        bytes: &bytes::Bytes,
        sha256: &str,
        minisig: &[u8],
        envelope: &[u8],
        progress: Option<ProgressFn>,
    ) -> Attempt {
        // A presigned target gets the signatures first: a bundle is never
        // left in a bucket without them because a signature's URL failed.
        if self.presigned() {
            if let Some(failed) = self.put_signatures(name, minisig, envelope).await {
                return failed;
            }
        }
        let total = bytes.len() as u64;
        let chunks: Vec<bytes::Bytes> = (0..bytes.len())
            .step_by(256 << 10)
            .map(|i| bytes.slice(i..bytes.len().min(i + (256 << 10))))
            .collect();
        let label = name.to_string();
        let mut sent = 0u64;
        let body = futures_util::stream::iter(chunks.into_iter().map(move |c| {
            sent += c.len() as u64;
            if let Some(p) = &progress {
                p(&label, sent, total);
            }
            Ok::<_, std::io::Error>(c)
        }));
        let req = self
            .put(self.url_for(name))
            .header(reqwest::header::CONTENT_TYPE, "application/zstd")
            .header(reqwest::header::CONTENT_LENGTH, total)
            .header(H_SHA256, sha256)
            .header(H_MINISIG, B64.encode(minisig))
            .header(H_ENVELOPE, B64.encode(envelope))
            .body(reqwest::Body::wrap_stream(body));
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return retry_without_url(e),
        };
        let status = resp.status();
        if !status.is_success() {
            return classify_failure(resp).await;
        }
        if resp.headers().contains_key(H_COLLECTOR) {
            #[derive(serde::Deserialize)]
            struct Stored {
                sha256: String,
                status: String,
            }
            return match serde_json::from_slice::<Stored>(&read_capped(resp).await) {
                Ok(s) if s.sha256 == sha256 => Attempt::Done(Outcome::Confirmed {
                    sha256: s.sha256,
                    status: printable(&s.status, 80),
                }),
                Ok(s) => Attempt::Retry(
                    format!(
                        "collector stored digest {}, not {sha256}",
                        printable(&s.sha256, 80)
                    ),
                    None,
                ),
                Err(e) => Attempt::Retry(format!("collector's answer: {e}"), None),
            };
        }
        // A plain PUT target: an MD5 ETag (S3's for a single PUT) must match.
        if let Some(etag) = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
        {
            let etag = etag.trim_matches('"');
            if etag.len() == 32 && etag.bytes().all(|b| b.is_ascii_hexdigit()) {
                let md5 = hex::encode(md5::Md5::digest(bytes));
                if !etag.eq_ignore_ascii_case(&md5) {
                    return Attempt::Retry(
                        format!("server's ETag {etag} is not the MD5 {md5}"),
                        None,
                    );
                }
            }
        }
        if !self.presigned() {
            if let Some(failed) = self.put_signatures(name, minisig, envelope).await {
                return failed;
            }
        }
        Attempt::Done(Outcome::Confirmed {
            sha256: sha256.to_string(),
            status: format!("accepted ({status})"),
        })
    }
}

/// The most of a server's answer read: enough for a reason or a JSON
/// receipt; a 400 MB error body is not read into memory.
const MAX_REPLY: usize = 8 << 10;

async fn read_capped(mut resp: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = MAX_REPLY - out.len();
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= MAX_REPLY {
            break;
        }
    }
    out
}

/// A server's reason, printable: S3's XML error gives its Code and
/// Message; anything else its first non-blank line.
fn reason_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let tag = |t: &str| {
        let (_, rest) = text.split_once(&format!("<{t}>"))?;
        let (value, _) = rest.split_once(&format!("</{t}>"))?;
        Some(value.trim().to_string())
    };
    let reason = match (tag("Code"), tag("Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c,
        _ => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("<?xml"))
            .unwrap_or("")
            .to_string(),
    };
    printable(&reason, 200)
}

/// The redirect policy of every PUT, the bundle's and its two signature
/// files' alike (and a heartbeat's): none is followed, and a redirect is
/// a final refusal naming where it pointed (its origin only: a Location may
/// carry a presigned query). A signature file's body could be sent again
/// where the bundle's streamed body could not, so following redirects let
/// the `.minisig` and `.intoto.json` go to another origin, or from https to
/// plain http, where the bundle did not; a presigned URL is good for its
/// own object only, and a collector does not redirect. Some(why) for a
/// redirect.
fn redirect_refused(resp: &reqwest::Response) -> Option<String> {
    let status = resp.status();
    if !status.is_redirection() {
        return None;
    }
    let from = resp.url();
    let to = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .and_then(|l| from.join(l).ok());
    let why = match to {
        Some(to) if from.scheme() == "https" && to.scheme() != "https" => {
            "refusing a redirect from https to plain http".to_string()
        }
        Some(to) if to.origin() != from.origin() => format!(
            "refusing a redirect to another origin ({})",
            printable(&to.origin().ascii_serialization(), 200)
        ),
        _ => "refusing a redirect".to_string(),
    };
    Some(format!(
        "HTTP {status}: {why}: a PUT goes only to the URL it was given"
    ))
}

/// 408, 429 and 5xx are worth retrying; any other 4xx is final, and so
/// is a redirect.
async fn classify_failure(resp: reqwest::Response) -> Attempt {
    if let Some(why) = redirect_refused(&resp) {
        return Attempt::Done(Outcome::Rejected(why));
    }
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let from_collector = resp.headers().contains_key(H_COLLECTOR);
    let reason = reason_of(&read_capped(resp).await);
    let what = format!(
        "HTTP {status}{}",
        if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        }
    );
    if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
        Attempt::Retry(what, retry_after)
    } else {
        match status.as_u16() {
            400 | 403 | 413 | 422 if from_collector => Attempt::Done(Outcome::RefusedBundle(what)),
            _ => Attempt::Done(Outcome::Rejected(what)),
        }
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s += &format!(": {t}");
        }
        src = inner.source();
    }
    s
}

fn url_escape(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
