//! Downloads of stored bundles and their signatures, and a stored
//! bundle's report page.

use tokio::sync::OwnedSemaphorePermit;

use super::pace::{paced, Pace};
use super::*;

/// Downloads and report pages served at once from one client address.
const MAX_DOWNLOADS_PER_CLIENT: usize = 4;

/// A download's slots: one of all, one of its client's; or the answer
/// that says there is none.
fn download_turn(c: &Shared, ip: IpAddr) -> Result<(OwnedSemaphorePermit, ClientSlot), Busy> {
    let Some(mine) = ClientSlot::take(&c.download_clients, ip, MAX_DOWNLOADS_PER_CLIENT) else {
        return Err(Busy(format!(
            "{MAX_DOWNLOADS_PER_CLIENT} downloads from {} in progress; try again",
            admit::client_of(ip)
        )));
    };
    let Ok(turn) = c.downloads.clone().try_acquire_owned() else {
        return Err(Busy(format!(
            "{MAX_DOWNLOADS} downloads in progress; try again"
        )));
    };
    Ok((turn, mine))
}

/// No download slot: what to say.
struct Busy(String);

impl IntoResponse for Busy {
    fn into_response(self) -> Response {
        Refusal(StatusCode::SERVICE_UNAVAILABLE, self.0).retry_after("2")
    }
}

/// Serves a bundle or a signature, only of a bundle in the index (one
/// that verified here): nothing else in a shared store is reachable.
pub(super) async fn download(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(file): Path<String>,
) -> Response {
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
    let turn = match download_turn(&c, peer.ip()) {
        Ok(t) => t,
        Err(busy) => return busy.into_response(),
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
        (Ok(Some((size, stored))), Ok(file)) if stored == sha => {
            // The slots go with the body, which must be taken at the pace
            // of every slow answer: a reader that stops gives them back.
            let pace = Pace::for_size(c.cfg.export_stall, c.cfg.request_timeout, size);
            let body = paced(file_chunks(file), pace, turn);
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
pub(super) async fn bundle_report(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(sha): Path<String>,
) -> Response {
    let not_found = |why: &str| Refusal(StatusCode::NOT_FOUND, why.to_string()).into_response();
    c.fresh().await;
    if !is_sha(&sha) || !matches!(c.cfg.index.get(&sha), Ok(Some(_))) {
        return not_found("no such bundle");
    }
    // Counted with the downloads: each makes a copy of the bundle, and
    // holds its page until it is taken.
    let turn = match download_turn(&c, peer.ip()) {
        Ok(t) => t,
        Err(busy) => return busy.into_response(),
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
    // The page goes to a private file of its own and is streamed from
    // it: sixteen slow readers of 15 MB pages held 270 MB when each page
    // was held whole until taken. The unpacking owns the copies and the
    // slots: a client gone meanwhile leaves nothing behind when it ends,
    // and nothing unpacks beyond the slots.
    let page = Incoming {
        path: c.incoming_path(),
    };
    let limits = c.cfg.limits.clone();
    // A few at a time, whatever the machine's pace: what each holds while
    // it unpacks does not add up with the readers.
    let Ok(unpacking) = c.page_unpacks.clone().acquire_owned().await else {
        return internal(anyhow::anyhow!("the collector is stopping")).into_response();
    };
    let read = tokio::task::spawn_blocking(move || {
        let _unpacking = unpacking;
        let unpacked = (|| -> anyhow::Result<PageFile> {
            let file = std::fs::File::open(&incoming.path)?;
            let mut out = PageFile::new(&page.path);
            bundle::unpack::unpack_into(
                std::io::BufReader::new(file),
                &limits,
                |_| false,
                &mut out,
            )?;
            Ok(out)
        })();
        drop((incoming, page));
        (unpacked, turn)
    })
    .await;
    match read {
        Ok((
            Ok(PageFile {
                file: Some(file),
                too_large: false,
                ..
            }),
            turn,
        )) => {
            let size = file.metadata().map_or(0, |m| m.len());
            let pace = Pace::for_size(c.cfg.export_stall, c.cfg.request_timeout, size);
            (
                [
                    (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                    (
                        header::CONTENT_SECURITY_POLICY,
                        "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:",
                    ),
                ],
                axum::body::Body::from_stream(paced(
                    file_chunks(tokio::fs::File::from_std(file)),
                    pace,
                    turn,
                )),
            )
                .into_response()
        }
        Ok((
            Ok(PageFile {
                too_large: true, ..
            }),
            _,
        )) => not_found(&format!(
            "this bundle's report is over {} MiB: download the bundle",
            MAX_PAGE >> 20
        )),
        Ok((Ok(_), _)) => not_found("this bundle carries no report"),
        Ok((Err(e), _)) => internal(e).into_response(),
        Err(e) => internal(e.into()).into_response(),
    }
}

/// A file's bytes as a body, a chunk at a time.
fn file_chunks(
    file: tokio::fs::File,
) -> std::pin::Pin<Box<dyn futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send>> {
    Box::pin(futures_util::stream::unfold(file, |mut f| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 256 << 10];
        match f.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(bytes::Bytes::from(buf)), f))
            }
            Err(e) => Some((Err(e), f)),
        }
    }))
}

/// The largest report page served (as a report holds a bundle's
/// metadata: `bundle::unpack::MAX_META`).
const MAX_PAGE: u64 = bundle::unpack::MAX_META;

/// A bundle's report page, written to a private file as it is unpacked
/// (created 0600, never through a link) and opened for reading; one over
/// `MAX_PAGE` is not written past it, and said to be too large.
struct PageFile {
    path: PathBuf,
    file: Option<std::fs::File>,
    too_large: bool,
}

impl PageFile {
    fn new(path: &std::path::Path) -> PageFile {
        PageFile {
            path: path.to_path_buf(),
            file: None,
            too_large: false,
        }
    }
}

impl bundle::unpack::Stream for PageFile {
    fn wants(&self, path: &str) -> bool {
        path == "results/report.html"
    }
    fn read(&mut self, _: &str, data: &mut dyn std::io::Read) -> std::io::Result<()> {
        use std::io::Read;
        let mut out = super::store::create_private_blocking(&self.path)?;
        let copied = std::io::copy(&mut data.take(MAX_PAGE + 1), &mut out)?;
        self.too_large = copied > MAX_PAGE;
        self.file = Some(std::fs::File::open(&self.path)?);
        Ok(())
    }
}
