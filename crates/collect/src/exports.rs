//! The drive table's exports (CSV and JSON Lines), streamed as they are
//! read and ended when their reader stops taking them.

use super::pace::Pace;
use super::*;

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
                        storcert_util::text::printable(by, 60)
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

/// Writes the rows `f` takes to `out` in `format`, with their waivers;
/// returns how many.
pub fn write_export(
    index: &Index,
    waivers: &fleet::Waivers,
    f: &index::RowFilter,
    limit: u64,
    format: &export::Format,
    out: impl std::io::Write,
) -> Result<u64> {
    let today = fleet::today();
    let mut n = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let mut w = (format.begin)(Box::new(out), index.act_keys()?)?;
    index.rows(f, limit, |r| {
        let waived = waivers.covering(&r, &today).map(fleet::Waivers::describe);
        match w.row(&r, waived.as_deref()) {
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
    w.finish()?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(n),
    }
}

/// A writer that hands what it is given to an HTTP body, a chunk at a
/// time; a reader that went away ends the export.
pub(super) struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>,
    buf: Vec<u8>,
    /// The whole export's deadline.
    until: tokio::time::Instant,
    /// The longest one chunk may wait for the reader: a reader that
    /// takes nothing for this long ends the export and frees its turn.
    stall: Duration,
    handle: tokio::runtime::Handle,
}

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
            handle,
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = bytes::Bytes::from(std::mem::take(&mut self.buf));
        let stalled = tokio::time::Instant::now() + self.stall;
        let until = self.until.min(stalled);
        let tx = &self.tx;
        let sent = self
            .handle
            .block_on(async { tokio::time::timeout_at(until, tx.send(Ok(chunk))).await });
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "reader went away",
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
pub(super) async fn export(
    c: Shared,
    ip: IpAddr,
    q: ExportQuery,
    format: &'static export::Format,
) -> Response {
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
    let timeout = c.cfg.request_timeout;
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
    // Taken at the pace every slow answer is: a reader that takes a chunk
    // just inside each stall cannot hold its turn to the request timeout.
    let body = super::pace::paced(Box::pin(body), Pace::new(stall, timeout), ());
    let (mime, name) = (format.mime, format!("storcert-drives.{}", format.name));
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

/// The route of each export format: `/api/export.<name>`.
pub(super) fn routes(mut reads: Router<Shared>) -> Router<Shared> {
    for format in export::FORMATS {
        reads = reads.route(
            &format!("/api/export.{}", format.name),
            get(
                move |State(c): State<Shared>,
                      ConnectInfo(peer): ConnectInfo<SocketAddr>,
                      Query(q): Query<ExportQuery>| {
                    export(c, peer.ip(), q, format)
                },
            ),
        );
    }
    reads
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
