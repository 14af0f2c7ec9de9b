//! I/O engines behind one interface: io_uring (the default) and a pool of
//! threads doing pread/pwrite where io_uring is unavailable. An engine
//! knows no workload: it takes requests that carry their own buffer and
//! returns each with its issue and completion times.

pub mod buffer;
pub mod null;
pub mod sync;
pub mod uring;

use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

pub use buffer::{AlignedBuf, BufferPool, BufferPools};
pub use null::NullLatency;

/// One read or write of `len` bytes at `offset`, into or from `buf`.
pub struct Request {
    pub fd: RawFd,
    pub offset: u64,
    pub len: u32,
    pub write: bool,
    pub buf: AlignedBuf,
    /// The caller's own reference, returned with the completion.
    pub tag: u64,
}

#[cfg(test)]
impl Request {
    /// The tests' request: a 4 KiB read at the start of `fd`.
    pub(crate) fn read_4k(fd: RawFd, tag: u64) -> Request {
        Request {
            fd,
            offset: 0,
            len: 4096,
            write: false,
            buf: AlignedBuf::new(4096),
            tag,
        }
    }
}

/// A finished request: the buffer comes back with the times.
pub struct Completion {
    pub tag: u64,
    pub offset: u64,
    pub len: u32,
    pub write: bool,
    /// Bytes transferred, or the negated errno.
    pub result: i64,
    pub buf: AlignedBuf,
    pub issued_at: Instant,
    pub completed_at: Instant,
}

impl Completion {
    /// The error of a failed or short transfer.
    pub fn error(&self) -> Option<io::Error> {
        if self.result < 0 {
            Some(io::Error::from_raw_os_error((-self.result) as i32))
        } else if self.result != self.len as i64 {
            Some(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short transfer: {} of {} bytes", self.result, self.len),
            ))
        } else {
            None
        }
    }
}

/// `Send`: a multi-threaded ACT run gives each worker thread its own.
pub trait Engine: Send {
    fn name(&self) -> &'static str;
    /// Requests in flight plus queued.
    fn in_flight(&self) -> usize;
    /// The most requests the engine holds at once.
    fn capacity(&self) -> usize;
    /// Queues a request; it is issued by the next `submit` or `reap`.
    /// Errors if the engine is at capacity.
    fn push(&mut self, req: Request) -> io::Result<()>;
    /// Issues queued requests now.
    fn submit(&mut self) -> io::Result<()>;
    /// Issues queued requests and collects finished ones into `out`. When
    /// none has finished it waits for one, but not past `until` (None: no
    /// limit while requests are in flight). With nothing in flight it
    /// sleeps until `until`: the workloads' schedulers wake this way. It
    /// may return before `until` with nothing (a timer armed for an
    /// earlier or expected deadline), never after it: callers loop.
    fn reap(&mut self, until: Option<Instant>, out: &mut Vec<Completion>) -> io::Result<()>;
    /// The caller sends requests on `fd` and keeps it open until it calls
    /// `forget(fd)`: an engine may hold the file itself meanwhile (io_uring's
    /// registered files). Registering a number again takes the file behind
    /// it now.
    fn register(&mut self, _fd: RawFd) {}
    /// The drive behind `fd` is done with (its run ended; the descriptor
    /// is closed next and its number may be handed to another drive): an
    /// engine that keeps anything per descriptor lets it go. A pool's
    /// engine outlives its runs.
    fn forget(&mut self, _fd: RawFd) {}
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// io_uring, falling back to threads if the kernel refuses it
    Auto,
    /// io_uring only
    Uring,
    /// a thread pool doing pread/pwrite
    Sync,
    /// no I/O: each request completes after the latency of --null-latency
    /// (checks the scheduler and the verdicts against a drive you define)
    Null,
}

/// Opens an engine holding up to `depth` requests (the null engine with
/// no latency).
pub fn open(kind: EngineKind, depth: u32) -> io::Result<Box<dyn Engine>> {
    open_with(kind, depth, &NullLatency::default())
}

/// Opens an engine; `null` is the latency the null engine models.
pub fn open_with(kind: EngineKind, depth: u32, null: &NullLatency) -> io::Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Null => Ok(Box::new(null::NullEngine::new(
            depth as usize,
            null.clone(),
        ))),
        EngineKind::Uring => Ok(Box::new(uring::UringEngine::new(depth)?)),
        EngineKind::Sync => Ok(Box::new(sync::SyncEngine::new(depth as usize))),
        EngineKind::Auto => match uring::UringEngine::new(depth) {
            Ok(e) => Ok(Box::new(e)),
            Err(_) => Ok(Box::new(sync::SyncEngine::new(depth as usize))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    fn roundtrip(kind: EngineKind) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![0u8; 1 << 20]).unwrap();
        let mut engine = open(kind, 8).unwrap();
        let fd = file.as_raw_fd();
        let mut buf = AlignedBuf::new(4096);
        buf.as_mut_slice().fill(0xab);
        engine
            .push(Request {
                fd,
                offset: 8192,
                len: 4096,
                write: true,
                buf,
                tag: 1,
            })
            .unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            engine
                .reap(Some(Instant::now() + Duration::from_secs(5)), &mut out)
                .unwrap();
        }
        assert_eq!(out[0].tag, 1);
        assert!(out[0].error().is_none());
        assert!(out[0].completed_at >= out[0].issued_at);
        for tag in 0..4u64 {
            let buf = AlignedBuf::new(4096);
            engine
                .push(Request {
                    fd,
                    offset: 8192 * tag,
                    len: 4096,
                    write: false,
                    buf,
                    tag: 10 + tag,
                })
                .unwrap();
        }
        assert_eq!(engine.in_flight(), 4);
        let mut got = Vec::new();
        while got.len() < 4 {
            engine
                .reap(Some(Instant::now() + Duration::from_secs(5)), &mut got)
                .unwrap();
        }
        let one = got.iter().find(|c| c.tag == 11).unwrap();
        assert!(one.buf.as_slice().iter().all(|&b| b == 0xab));
        let zero = got.iter().find(|c| c.tag == 10).unwrap();
        assert!(zero.buf.as_slice().iter().all(|&b| b == 0));
        assert_eq!(engine.in_flight(), 0);
        // Reading past the end is a short transfer, reported as an error.
        engine
            .push(Request {
                fd,
                offset: (1 << 20) - 512,
                len: 4096,
                write: false,
                buf: AlignedBuf::new(4096),
                tag: 99,
            })
            .unwrap();
        let mut got = Vec::new();
        while got.is_empty() {
            engine
                .reap(Some(Instant::now() + Duration::from_secs(5)), &mut got)
                .unwrap();
        }
        assert!(got[0].error().is_some());
        // A timeout with nothing in flight returns without completions.
        let mut none = Vec::new();
        let asked = Instant::now();
        engine
            .reap(Some(asked + Duration::from_millis(5)), &mut none)
            .unwrap();
        assert!(none.is_empty());
        assert!(asked.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn uring_roundtrip() {
        roundtrip(EngineKind::Uring);
    }

    /// A caller that is always behind asks with a time already past, and
    /// still gets its completions: under DEFER_TASKRUN (Linux 6.6 on) the
    /// kernel posts them only to an enter that asks for events (found in
    /// review: a pool worker whose run was at its in-flight limit saw none,
    /// and every run on it fell behind).
    #[test]
    fn completions_come_to_a_caller_that_never_waits() {
        // Direct I/O, so the read completes from the device's interrupt
        // (task work), not inline as a page-cache read does; in the crate's
        // folder, which is on a disk (a tmpfs /tmp refuses O_DIRECT).
        use std::os::unix::fs::OpenOptionsExt;
        let named = tempfile::NamedTempFile::new_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        named.as_file().write_all(&vec![0u8; 1 << 16]).unwrap();
        named.as_file().sync_all().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(named.path())
            .unwrap();
        let mut engine = open(EngineKind::Uring, 8).unwrap();
        engine.push(Request::read_4k(file.as_raw_fd(), 7)).unwrap();
        let mut out = Vec::new();
        let give_up = Instant::now() + Duration::from_secs(20);
        while out.is_empty() && Instant::now() < give_up {
            let past = Instant::now() - Duration::from_millis(1);
            engine.reap(Some(past), &mut out).unwrap();
        }
        assert_eq!(out.len(), 1, "no completion without a wait");
        assert_eq!(out[0].tag, 7);
    }

    #[test]
    fn sync_roundtrip() {
        roundtrip(EngineKind::Sync);
    }

    #[test]
    fn capacity_is_enforced() {
        let file = tempfile::tempfile().unwrap();
        let mut engine = open(EngineKind::Sync, 1).unwrap();
        let req = |tag| Request {
            fd: file.as_raw_fd(),
            offset: 0,
            len: 512,
            write: true,
            buf: AlignedBuf::new(512),
            tag,
        };
        engine.push(req(1)).unwrap();
        assert!(engine.push(req(2)).is_err());
    }
}
