//! Downloads of stored bundles and their signatures, and a stored
//! bundle's report page.

use super::*;

/// Serves a bundle or a signature, only of a bundle in the index (one
/// that verified here): nothing else in a shared store is reachable.
pub(super) async fn download(State(c): State<Shared>, Path(file): Path<String>) -> Response {
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
pub(super) async fn bundle_report(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
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
