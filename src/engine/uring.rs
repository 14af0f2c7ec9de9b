//! The io_uring engine: one ring, requests batched into single submissions,
//! completions reaped with a timed wait so the caller's scheduler wakes on
//! time even when nothing completes.

use std::io;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use super::{Completion, Engine, Request};

struct Slot {
    req: Request,
    issued_at: Option<Instant>,
}

pub struct UringEngine {
    ring: IoUring,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Slots pushed to the submission queue but not yet submitted.
    unsubmitted: Vec<usize>,
    in_flight: usize,
}

/// Whether the running kernel is at least `major.minor` (uname's release).
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

impl UringEngine {
    pub fn new(depth: u32) -> io::Result<UringEngine> {
        let depth = depth.clamp(1, 4096);
        let entries = depth.next_power_of_two();
        // One thread submits and reaps: let the kernel run completion work
        // only when we wait for it (no interrupting IPIs), else
        // cooperatively (5.19), else plainly. DEFER_TASKRUN appeared in
        // 6.1, but there (Debian 12's 6.1.0-57, in the lab) requests punted
        // to io-wq once the device queue is full never complete: hundreds
        // in flight on null_blk or dm-delay stalled for good. It is used
        // from 6.6 on, where that does not happen.
        let defer = kernel_at_least(6, 6);
        let ring = if defer {
            IoUring::builder()
                .setup_clamp()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .build(entries)
        } else {
            Err(io::Error::other("DEFER_TASKRUN not used before Linux 6.6"))
        };
        let ring = ring
            .or_else(|_| {
                IoUring::builder()
                    .setup_clamp()
                    .setup_coop_taskrun()
                    .build(entries)
            })
            .or_else(|_| IoUring::builder().setup_clamp().build(entries))?;
        Ok(UringEngine {
            ring,
            slots: (0..depth).map(|_| None).collect(),
            free: (0..depth as usize).rev().collect(),
            unsubmitted: Vec::new(),
            in_flight: 0,
        })
    }

    /// Marks the queued requests issued now: the kernel sees them at the
    /// next io_uring_enter, which the caller makes straight after.
    fn stamp_issued(&mut self) {
        let now = Instant::now();
        for &i in &self.unsubmitted {
            if let Some(slot) = self.slots[i].as_mut() {
                slot.issued_at = Some(now);
            }
        }
        self.unsubmitted.clear();
    }

    fn harvest(&mut self, out: &mut Vec<Completion>) {
        let now = Instant::now();
        for cqe in self.ring.completion() {
            let index = cqe.user_data() as usize;
            let Some(slot) = self.slots.get_mut(index).and_then(Option::take) else {
                continue;
            };
            self.free.push(index);
            self.in_flight -= 1;
            let req = slot.req;
            out.push(Completion {
                tag: req.tag,
                offset: req.offset,
                len: req.len,
                write: req.write,
                result: cqe.result() as i64,
                buf: req.buf,
                issued_at: slot.issued_at.unwrap_or(now),
                completed_at: now,
            });
        }
    }
}

impl Engine for UringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn push(&mut self, mut req: Request) -> io::Result<()> {
        let Some(index) = self.free.pop() else {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "engine at capacity",
            ));
        };
        let fd = types::Fd(req.fd);
        let entry = if req.write {
            opcode::Write::new(fd, req.buf.as_ptr(), req.len)
                .offset(req.offset)
                .build()
        } else {
            opcode::Read::new(fd, req.buf.as_mut_ptr(), req.len)
                .offset(req.offset)
                .build()
        }
        .user_data(index as u64);
        // The submission queue is as deep as the slot table, so it has room
        // for every slot that is not yet submitted.
        // SAFETY: the buffer lives in the slot until its completion is
        // harvested, and the fd is the caller's open file.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        if pushed.is_err() {
            self.submit()?;
            // SAFETY: as above.
            unsafe { self.ring.submission().push(&entry) }
                .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        }
        self.slots[index] = Some(Slot {
            req,
            issued_at: None,
        });
        self.unsubmitted.push(index);
        self.in_flight += 1;
        Ok(())
    }

    fn submit(&mut self) -> io::Result<()> {
        if self.unsubmitted.is_empty() {
            return Ok(());
        }
        self.stamp_issued();
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // The completion queue is full: the caller reaps next.
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn reap(&mut self, timeout: Option<Duration>, out: &mut Vec<Completion>) -> io::Result<()> {
        let before = out.len();
        self.harvest(out);
        let ready = out.len() > before;
        let wait = match timeout {
            _ if ready => None,
            Some(t) if t.is_zero() => None,
            None if self.in_flight == 0 => None,
            other => Some(other),
        };
        let Some(wait) = wait else {
            return self.submit();
        };
        // Submit what is queued and wait, in one system call.
        self.stamp_issued();
        let result = match wait {
            Some(t) => {
                let ts = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submitter().submit_and_wait(1),
        };
        match result {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        self.harvest(out);
        Ok(())
    }
}
