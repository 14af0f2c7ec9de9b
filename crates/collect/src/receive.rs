//! Receiving an upload: the signature headers judged first, then the body
//! read within its bounds, verified, and stored.

use super::*;

pub(super) fn header_text(h: &HeaderMap, name: &str) -> Result<String, Refusal> {
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
pub(super) async fn receive(
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

pub(super) async fn receive_within(
    c: &Shared,
    peer: SocketAddr,
    name: String,
    req: axum::extract::Request,
    deadline: Instant,
) -> Result<Response, Response> {
    let ip = peer.ip();
    let headers = req.headers().clone();
    let head = admit(c, ip, &headers, &name)?;
    // Signatures of a bundle stored already (they are served to readers, so
    // anyone may replay them): answered from the head, the body unread.
    if c.cfg
        .index
        .contains(&head.signed_sha)
        .map_err(|e| internal(e).into_response())?
    {
        return Ok(answer(
            StatusCode::OK,
            serde_json::json!({
                "sha256": head.signed_sha, "status": "already stored"
            }),
        ));
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
    let (sha, size) = receive_body(c, req.into_body(), &incoming.path, head.declared)
        .await
        .map_err(|r| r.into_response())?;
    if let Some(claimed) = headers.get(H_SHA256) {
        if claimed.as_bytes() != sha.as_bytes() {
            return Err(Refusal(
                StatusCode::BAD_REQUEST,
                format!("body's sha256 is {sha}, not the {H_SHA256} given"),
            )
            .into_response());
        }
    }
    // Verify before storing anything, even a bundle already stored: the
    // answer "stored" is only ever given for a verified bundle.
    let (verified, rows) = c
        .verify(
            incoming.path.clone(),
            name.clone(),
            head.minisig.clone(),
            head.envelope.clone(),
            deadline,
        )
        .await
        .map_err(|e| internal(e).into_response())?
        .map_err(verify_refusal)?;
    let verdict = verified.summary.verdict;
    let stored = Received {
        sha: &sha,
        size,
        incoming: &incoming.path,
        head,
    };
    let already = store(c, stored, verified, rows).await?;
    if !already {
        eprintln!("collect: stored {name} ({sha}) from {ip}: {verdict}");
    }
    let (code, status) = match already {
        true => (StatusCode::OK, "already stored"),
        false => (StatusCode::CREATED, "stored"),
    };
    Ok(answer(
        code,
        serde_json::json!({ "sha256": sha, "status": status, "verdict": verdict }),
    ))
}

/// What the head of an upload says, once admitted.
struct Head {
    minisig: String,
    envelope: String,
    declared: u64,
    signed_sha: String,
}

/// Everything that can be decided from the head, before a byte of the
/// body is read: the token, the client's rate, the name, the declared
/// length, and signatures by a trusted key over this very name. A
/// refusal is the answer itself, as receive_within's are.
#[allow(clippy::result_large_err)]
fn admit(c: &Shared, ip: IpAddr, headers: &HeaderMap, name: &str) -> Result<Head, Response> {
    if let Some(r) = c.unauthorised(ip, headers, "upload --token-file") {
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
    if !valid_name(name) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "bad bundle name {}: a plain NAME.tar.zst is expected",
                storcert_util::text::printable(&format!("{name:?}"), 220)
            ),
        ));
    }
    let minisig = header_text(headers, H_MINISIG).map_err(IntoResponse::into_response)?;
    let envelope = header_text(headers, H_ENVELOPE).map_err(IntoResponse::into_response)?;
    let Some(declared) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return Err(refuse(
            StatusCode::LENGTH_REQUIRED,
            "a Content-Length is required".into(),
        ));
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
        bundle::check_signatures(&minisig, &envelope, &c.cfg.trusted).map_err(|e| rejected(&e))?;
    if signed_name != name {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "rejected: signed as {}, but uploaded as {name:?}",
                storcert_util::text::printable(&format!("{signed_name:?}"), 220)
            ),
        ));
    }
    Ok(Head {
        minisig,
        envelope,
        declared,
        signed_sha,
    })
}

/// A collector's answer: JSON, with the header that says a collector gave
/// it (the upload client trusts a digest only from one).
fn answer(code: StatusCode, body: serde_json::Value) -> Response {
    let mut r = (code, Json(body)).into_response();
    r.headers_mut().insert(H_COLLECTOR, collector_header());
    r
}

/// A bundle that did not verify. Out of time or cancelled is no verdict on
/// the bundle: the client retries, and a spool does not set it aside.
fn verify_refusal(e: bundle::VerifyError) -> Response {
    if e.is_transient() {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("could not verify it now: {e}"),
        )
        .retry_after("5");
    }
    rejected(&e)
}

/// A bundle or its signatures refused: by a key not trusted (403), or as
/// not what they claim to be (422).
fn rejected(e: &bundle::VerifyError) -> Response {
    let status = if e.is_untrusted_key() {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    Refusal(status, format!("rejected: {e}")).into_response()
}

/// A verified upload, waiting in its incoming file.
struct Received<'a> {
    sha: &'a str,
    size: u64,
    incoming: &'a std::path::Path,
    head: Head,
}

/// Stores a verified bundle, its signatures and its record (the record
/// last: its presence means the bundle is whole), unless it is stored
/// already, here or by another collector sharing the store (its record is
/// indexed once it verifies from the store; a planted record without a
/// bundle that verifies is overwritten with this one). Whether it was.
async fn store(
    c: &Shared,
    r: Received<'_>,
    verified: bundle::Verified,
    rows: Vec<DriveRow>,
) -> Result<bool, Response> {
    let sha = r.sha;
    let mut already = c
        .cfg
        .index
        .contains(sha)
        .map_err(|e| internal(e).into_response())?;
    if !already
        && c.cfg
            .store
            .exists(&summary_key(sha))
            .await
            .map_err(|e| internal(e).into_response())?
    {
        if let Err(e) = c.sync().await {
            eprintln!("collect: sync: {e:#}");
        }
        already = c
            .cfg
            .index
            .contains(sha)
            .map_err(|e| internal(e).into_response())?;
    }
    if already {
        return Ok(true);
    }
    let key = bundle_key(sha);
    let stored = async {
        c.cfg
            .store
            .put(&format!("{key}.minisig"), r.head.minisig.into())
            .await?;
        c.cfg
            .store
            .put(&format!("{key}.intoto.json"), r.head.envelope.into())
            .await?;
        c.cfg.store.put_file(&key, r.incoming).await?;
        let record = Record::new(
            verified,
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            r.size,
            rows,
        );
        let text = serde_json::to_vec_pretty(&record)?;
        c.cfg.store.put(&summary_key(sha), text.into()).await?;
        c.cfg.index.insert(&record)?;
        anyhow::Ok(())
    };
    stored.await.map_err(|e| internal(e).into_response())?;
    Ok(false)
}

/// The slowest average a body may arrive at, beyond its idle allowance:
/// a byte every 29 s must not hold a slot for the whole request timeout.
pub(super) const MIN_BODY_RATE: u64 = 64 << 10;

/// Writes a body to `path` as it arrives: at most `declared` bytes, each
/// chunk within the idle timeout, and at any moment no later than the
/// idle timeout plus what has arrived at `MIN_BODY_RATE`. Returns its
/// SHA-256 and size.
pub(super) async fn receive_body(
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
