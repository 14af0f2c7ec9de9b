//! The fallback engine: worker threads doing blocking pread/pwrite, for
//! kernels or sandboxes without io_uring. Concurrency equals the number of
//! workers, so the open-loop scheduler still keeps many requests in flight.

use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::{Completion, Engine, Request};

pub struct SyncEngine {
    to_workers: Option<Sender<Request>>,
    from_workers: Receiver<Completion>,
    workers: Vec<JoinHandle<()>>,
    capacity: usize,
    in_flight: usize,
}

impl SyncEngine {
    pub fn new(depth: usize) -> SyncEngine {
        let depth = depth.clamp(1, 1024);
        let (to_workers, requests) = mpsc::channel::<Request>();
        let (done, from_workers) = mpsc::channel::<Completion>();
        let requests = Arc::new(Mutex::new(requests));
        let workers = (0..depth.min(256))
            .map(|_| {
                let requests = Arc::clone(&requests);
                let done = done.clone();
                std::thread::spawn(move || loop {
                    let req = match requests.lock() {
                        Ok(rx) => match rx.recv() {
                            Ok(r) => r,
                            Err(_) => return,
                        },
                        Err(_) => return,
                    };
                    if done.send(execute(req)).is_err() {
                        return;
                    }
                })
            })
            .collect();
        SyncEngine {
            to_workers: Some(to_workers),
            from_workers,
            workers,
            capacity: depth,
            in_flight: 0,
        }
    }
}

fn execute(mut req: Request) -> Completion {
    let issued_at = Instant::now();
    // SAFETY: the buffer holds at least len bytes (callers size it), and
    // the fd is the caller's open file.
    let rc = unsafe {
        if req.write {
            libc::pwrite(
                req.fd,
                req.buf.as_ptr() as *const libc::c_void,
                req.len as usize,
                req.offset as libc::off_t,
            )
        } else {
            libc::pread(
                req.fd,
                req.buf.as_mut_ptr() as *mut libc::c_void,
                req.len as usize,
                req.offset as libc::off_t,
            )
        }
    };
    let result = if rc < 0 {
        -(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        rc as i64
    };
    Completion {
        tag: req.tag,
        offset: req.offset,
        len: req.len,
        write: req.write,
        result,
        buf: req.buf,
        issued_at,
        completed_at: Instant::now(),
    }
}

impl Engine for SyncEngine {
    fn name(&self) -> &'static str {
        "sync"
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn push(&mut self, req: Request) -> io::Result<()> {
        if self.in_flight >= self.capacity {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "engine at capacity",
            ));
        }
        self.to_workers
            .as_ref()
            .expect("workers alive")
            .send(req)
            .map_err(|_| io::Error::other("sync engine workers are gone"))?;
        self.in_flight += 1;
        Ok(())
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, until: Option<Instant>, out: &mut Vec<Completion>) -> io::Result<()> {
        let timeout = until.map(|u| u.saturating_duration_since(Instant::now()));
        let mut got = 0;
        while let Ok(c) = self.from_workers.try_recv() {
            out.push(c);
            got += 1;
        }
        if got == 0 && self.in_flight > 0 {
            let first = match timeout {
                None => self
                    .from_workers
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
                Some(t) => self.from_workers.recv_timeout(t),
            };
            match first {
                Ok(c) => {
                    out.push(c);
                    got += 1;
                    while let Ok(c) = self.from_workers.try_recv() {
                        out.push(c);
                        got += 1;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("sync engine workers are gone"))
                }
            }
        } else if got == 0 {
            if let Some(t) = timeout {
                std::thread::sleep(t);
            }
        }
        self.in_flight -= got;
        Ok(())
    }
}

impl Drop for SyncEngine {
    fn drop(&mut self) {
        // Closing the channel ends the workers once in-flight work is done.
        self.to_workers = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
