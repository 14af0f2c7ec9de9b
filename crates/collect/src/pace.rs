//! Answers a slow reader cannot hold: a body that must be taken at an
//! average of `MIN_RATE` after its first stall, and within the request
//! timeout, holding its slots only while it goes out. A reader that takes
//! nothing at all is the connection's (`serve`'s write stall); one that
//! takes a little just often enough is this one's. Each connection's send
//! buffer is small (`SEND_BUFFER`), so what was handed to the socket is
//! within a few hundred KiB of what the reader took.

use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;

/// The least a slow answer's reader takes a second on average, after
/// the first stall (a reader on any network takes megabytes).
pub(super) const MIN_RATE: u64 = 64 << 10;

/// Each connection's send buffer, bytes (the kernel doubles it): small
/// enough that the bytes handed to the socket are close to those read,
/// large enough for a datacentre link's bandwidth-delay product.
pub(super) const SEND_BUFFER: usize = 256 << 10;

/// How a body must be taken: after `stall` of the reader's time, at
/// `MIN_RATE` on average, and whole before `until`.
#[derive(Clone, Copy)]
pub(super) struct Pace {
    pub stall: Duration,
    pub until: tokio::time::Instant,
}

impl Pace {
    pub fn new(stall: Duration, timeout: Duration) -> Pace {
        Pace {
            stall,
            until: tokio::time::Instant::now() + timeout,
        }
    }

    /// For a body of `size` bytes: the request timeout, or as long as a
    /// reader at `MIN_RATE` takes after its stall, if longer. A large
    /// bundle taken at a steady pace is never cut for its size (a
    /// 256 MiB bundle at 200 KiB/s takes 22 minutes).
    pub fn for_size(stall: Duration, timeout: Duration, size: u64) -> Pace {
        let at_pace = stall + Duration::from_secs(size.div_ceil(MIN_RATE));
        Pace::new(stall, timeout.max(at_pace))
    }

    /// Why a reader that has taken `taken` bytes in `waited` of its own
    /// time (the time the body waited for it, never the server's time
    /// making the next chunk) is too slow, if it is.
    pub fn behind(&self, taken: u64, waited: Duration) -> Option<String> {
        if tokio::time::Instant::now() >= self.until {
            return Some("the answer took longer than the request timeout".into());
        }
        let owed = waited.saturating_sub(self.stall).as_secs_f64() * MIN_RATE as f64;
        (taken as f64 + 1.0 < owed).then(|| {
            format!(
                "the reader took {taken} bytes in {:.0?}, less than {} KiB/s",
                waited,
                MIN_RATE >> 10
            )
        })
    }
}

/// A paced body between chunks: the bytes taken, the reader's time, and
/// when the last chunk was handed over.
struct Taking<S, H> {
    chunks: S,
    taken: u64,
    waited: Duration,
    handed: tokio::time::Instant,
    _held: H,
}

/// `chunks` as a body taken at `pace`, holding `held` (its slots) until it
/// ends. A reader behind gets an error, never an end: the answer must not
/// look whole.
pub(super) fn paced<S, H>(
    chunks: S,
    pace: Pace,
    held: H,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Send + Unpin + 'static,
    H: Send + 'static,
{
    use futures_util::StreamExt;
    let start = Taking {
        chunks,
        taken: 0,
        waited: Duration::ZERO,
        handed: tokio::time::Instant::now(),
        _held: held,
    };
    futures_util::stream::unfold(Some(start), move |state| async move {
        let mut t = state?;
        t.waited += t.handed.elapsed();
        if let Some(why) = pace.behind(t.taken, t.waited) {
            eprintln!("collect: answer cut: {why}");
            let e = std::io::Error::new(std::io::ErrorKind::TimedOut, why);
            return Some((Err(e), None));
        }
        match t.chunks.next().await? {
            Ok(b) => {
                t.taken += b.len() as u64;
                t.handed = tokio::time::Instant::now();
                Some((Ok(b), Some(t)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// `data` in chunks a slow reader is measured by.
    fn chunked(data: Vec<u8>) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
        let data = Bytes::from(data);
        let chunks: Vec<_> = (0..data.len())
            .step_by(64 << 10)
            .map(|at| Ok(data.slice(at..(at + (64 << 10)).min(data.len()))))
            .collect();
        futures_util::stream::iter(chunks)
    }

    #[test]
    fn a_large_body_taken_at_a_steady_pace_outlasts_the_request_timeout() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (stall, timeout, size) =
                (Duration::from_secs(10), Duration::from_secs(600), 256 << 20);
            let before = tokio::time::Instant::now();
            let pace = Pace::for_size(stall, timeout, size);
            let by_timeout = Pace::new(stall, timeout);
            // 200 KiB/s takes the whole bundle in 1,311 s: never behind,
            // and within its deadline, where the request timeout alone
            // would have cut it at 600 s.
            assert!(by_timeout.until < before + Duration::from_secs(601));
            assert!(pace.until >= before + Duration::from_secs(1311));
            for second in 1..=1311u64 {
                let taken = (second * (200 << 10)).min(size);
                let waited = Duration::from_secs(second);
                assert_eq!(pace.behind(taken, waited), None, "cut at {second} s");
            }
            // At the pace itself, 64 KiB/s, it ends before its deadline.
            assert!(pace.until >= before + stall + Duration::from_secs(size / MIN_RATE));
            // A reader below the pace is still cut.
            assert!(pace.behind(1 << 20, Duration::from_secs(100)).is_some());
            // A small body keeps the request timeout.
            let small = Pace::for_size(stall, timeout, 1 << 20);
            assert!(small.until < before + Duration::from_secs(601));
        });
    }

    #[test]
    fn a_body_taken_below_the_rate_ends_in_an_error_and_gives_back_its_slots() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let held = std::sync::Arc::new(());
            // 16 KiB each half second, past a stall of one second: 32 KiB/s.
            let pace = Pace::new(Duration::from_secs(1), Duration::from_secs(600));
            let mut body = Box::pin(paced(chunked(vec![0u8; 4 << 20]), pace, held.clone()));
            let (mut taken, mut ended) = (0usize, None);
            while let Some(item) = body.next().await {
                match item {
                    Ok(b) => taken += b.len(),
                    Err(e) => {
                        ended = Some(e);
                        break;
                    }
                }
                // The first chunk is 64 KiB; read on at a quarter of it.
                tokio::time::sleep(Duration::from_millis(2000)).await;
            }
            let e = ended.expect("a trickle was never cut");
            assert!(e.to_string().contains("less than 64 KiB/s"), "{e}");
            assert!(taken < 1 << 20, "{taken}");
            drop(body);
            assert_eq!(std::sync::Arc::strong_count(&held), 1, "slots still held");
            // Taken at once, the same body goes out whole.
            let pace = Pace::new(Duration::from_secs(1), Duration::from_secs(600));
            let body = paced(chunked(vec![0u8; 4 << 20]), pace, ());
            let all: Vec<_> = body.collect().await;
            assert!(all.iter().all(|c| c.is_ok()));
            assert_eq!(
                all.iter().map(|c| c.as_ref().unwrap().len()).sum::<usize>(),
                4 << 20
            );
        });
    }
}
