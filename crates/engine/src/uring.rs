//! The io_uring engine: one ring, requests batched into single submissions,
//! completions reaped with a timed wait so the caller's scheduler wakes on
//! time even when nothing completes.

use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

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
    /// The deadlines of the armed IORING_OP_TIMEOUTs, by timer.
    timer_armed: [Option<Instant>; TIMERS],
    /// Where the kernel reads each timer's expiry at submission.
    timer_ts: [Box<types::Timespec>; TIMERS],
    /// The pace of the caller's deadlines, to arm the next ones ahead.
    pace: Pace,
    fixed: FixedFiles,
}

/// The files the ring holds registered (io_uring's fixed files), by the
/// caller's descriptor: a request on one skips the kernel's look-up of the
/// descriptor, and the count of references to the file that goes with it
/// in a process of several threads, as it is issued and as it completes.
/// Only the caller's `register`ed descriptors, which it keeps open until
/// it `forget`s them: a number closed and handed to another file must not
/// reach the file registered under it.
struct FixedFiles {
    slot_of: HashMap<RawFd, u32>,
    /// Free slots of the kernel's table; none where it has none for us.
    free: Vec<u32>,
}

/// Slots of the registered-file table: a drive each, a 24-drive box's
/// worth and more.
const FIXED_FILES: u32 = 64;

impl FixedFiles {
    fn new(ring: &IoUring) -> FixedFiles {
        // From Linux 6.13 each registered file is let go on its own once
        // no request holds it. Before, the kernel let them go in the order
        // they were removed, behind every request issued earlier: one
        // request stuck on a drive kept every drive removed after it open
        // for good, even past the ring's end, and a healthy drive's
        // partitions could then not be re-read or removed (found in
        // review). There descriptors serve.
        let usable =
            kernel_at_least(6, 13) && ring.submitter().register_files_sparse(FIXED_FILES).is_ok();
        FixedFiles {
            slot_of: HashMap::new(),
            free: if usable {
                (0..FIXED_FILES).rev().collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Registers the file behind `fd` in its slot (a new one if it has
    /// none); a refusal leaves `fd` to go by descriptor.
    fn register(&mut self, ring: &mut IoUring, fd: RawFd) {
        let Some(slot) = self.slot_of.remove(&fd).or_else(|| self.free.pop()) else {
            return;
        };
        match ring.submitter().register_files_update(slot, &[fd]) {
            Ok(_) => {
                self.slot_of.insert(fd, slot);
            }
            Err(_) => self.release(ring, slot),
        }
    }

    fn forget(&mut self, ring: &mut IoUring, fd: RawFd) {
        if let Some(slot) = self.slot_of.remove(&fd) {
            self.release(ring, slot);
        }
    }

    /// Empties `slot`: the kernel lets the file go once no request in
    /// flight holds it. The slot is used again only where nothing can
    /// still name it: the kernel looks a request's slot up as it takes the
    /// request from the submission queue, so a request left there (the
    /// completion queue was full) would reach whatever file the slot held
    /// next (found in review). Such a slot, or one the kernel would not
    /// empty, is not used again.
    fn release(&mut self, ring: &mut IoUring, slot: u32) {
        let emptied = ring.submitter().register_files_update(slot, &[-1]).is_ok();
        if emptied && ring.submission().is_empty() {
            self.free.push(slot);
        }
    }
}

/// The ring's own timers: one for the caller's next deadline and, while
/// the caller's deadlines come at a steady pace, the rest armed ahead for
/// the deadlines after it. A kernel timer armed while an earlier one is
/// pending on its CPU leaves the CPU's timer device as it is; one armed as
/// the earliest reprograms it, which in a virtual machine is an exit to
/// the host. One timer at a time costs that on every wake-up, as the
/// wake-up itself re-arms; with the next ones already pending it seldom is
/// the earliest, even as the thread moves between CPUs (timers are kept
/// per CPU). Measured on a 2-vCPU VM, a timer every 500 us
/// (scripts/bench/wakeups): 9.9-11.8 us of CPU per wake-up with one
/// timer, 5.5-5.9 with two, 4.2-4.7 with three.
const TIMERS: usize = 3;

/// user_data of the engine's timers (TIMER_TAG - i for timer i) and of
/// their updates; request slots are small indices and never reach these.
const TIMER_TAG: u64 = u64::MAX;
const TIMER_UPDATE_TAG: u64 = u64::MAX - TIMERS as u64;

/// Deadlines a step apart that differ by no more than this are steady: a
/// schedule's come whole nanoseconds from exact, a deadline of "now plus
/// a bound" usually microseconds off (where two happen to fall within it,
/// a timer armed ahead ends one wait early, which callers loop over).
const STEADY_WITHIN: Duration = Duration::from_nanos(200);

/// The caller's deadlines: the last asked and the step that led to it.
#[derive(Default)]
struct Pace {
    last: Option<Instant>,
    step: Option<Duration>,
    steady: bool,
}

impl Pace {
    /// Takes a deadline asked for; where the last three came at one step,
    /// that step.
    fn steady_step(&mut self, deadline: Instant) -> Option<Duration> {
        if self.last != Some(deadline) {
            let step = self.last.and_then(|l| deadline.checked_duration_since(l));
            self.steady = match (step, self.step) {
                (Some(new), Some(old)) => new.abs_diff(old) <= STEADY_WITHIN,
                _ => false,
            };
            self.step = step;
            self.last = Some(deadline);
        }
        match (self.steady, self.step) {
            (true, Some(step)) if step >= RING_TIMER_FROM => Some(step),
            _ => None,
        }
    }
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

/// The most requests one ring holds in flight: a drive at 600,000 reads/s
/// and 50 ms holds 30,000 (the kernel's completion queue is at most 65,536).
pub const MAX_DEPTH: u32 = 32_768;

impl UringEngine {
    pub fn new(depth: u32) -> io::Result<UringEngine> {
        // Up to MAX_DEPTH in flight; the submission queue holds them and
        // the timers' entries, at most 4,096 (what is queued past it is
        // submitted first), and the completion queue every request in
        // flight and the timers' completions and their updates'.
        let depth = depth.clamp(1, MAX_DEPTH);
        let entries = (depth + TIMERS as u32).min(4096).next_power_of_two();
        let cq = (depth + 2 * TIMERS as u32).next_power_of_two();
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
                .setup_cqsize(cq)
                .build(entries)
        } else {
            Err(io::Error::other("DEFER_TASKRUN not used before Linux 6.6"))
        };
        let ring = ring
            .or_else(|_| {
                IoUring::builder()
                    .setup_clamp()
                    .setup_coop_taskrun()
                    .setup_cqsize(cq)
                    .build(entries)
            })
            .or_else(|_| {
                IoUring::builder()
                    .setup_clamp()
                    .setup_cqsize(cq)
                    .build(entries)
            })?;
        Ok(UringEngine {
            slots: (0..depth).map(|_| None).collect(),
            free: (0..depth as usize).rev().collect(),
            unsubmitted: Vec::new(),
            in_flight: 0,
            timer_armed: [None; TIMERS],
            timer_ts: std::array::from_fn(|_| Box::new(types::Timespec::new())),
            pace: Pace::default(),
            fixed: FixedFiles::new(&ring),
            ring,
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

    /// Whether a timer armed for `deadline` or earlier wakes the caller.
    fn covered(&self, deadline: Instant) -> bool {
        self.timer_armed.iter().flatten().any(|&t| t <= deadline)
    }

    /// Makes sure a wake-up is armed for `deadline` or earlier, and, where
    /// the caller's deadlines come at a steady pace, ones for the deadlines
    /// after it. The timers are requests in the ring, not timeouts of the
    /// wait: they stay armed while completions wake the caller, so a wait
    /// that a completion ends does not start and cancel a kernel timer each
    /// time (each of which reprograms the CPU's timer, a costly exit in a
    /// virtual machine).
    fn arm_for(&mut self, deadline: Instant) -> io::Result<()> {
        if !self.covered(deadline) {
            // A free timer, else the latest (most likely one armed ahead,
            // the cheapest to lose).
            let free = self.timer_armed.iter().position(Option::is_none);
            let latest = (0..TIMERS).max_by_key(|&i| self.timer_armed[i]);
            if let Some(i) = free.or(latest) {
                self.arm_timer(i, deadline)?;
            }
        }
        let Some(step) = self.pace.steady_step(deadline) else {
            return Ok(());
        };
        let mut after = deadline;
        for _ in 1..TIMERS {
            let ahead = after + step;
            let armed = |t: &Option<Instant>| t.is_some_and(|t| t > after && t <= ahead);
            if !self.timer_armed.iter().any(armed) {
                match self.timer_armed.iter().position(Option::is_none) {
                    Some(i) => self.arm_timer(i, ahead)?,
                    None => break,
                }
            }
            after = ahead;
        }
        Ok(())
    }

    /// Arms timer `i` for `deadline`: a new timeout, or an update of the
    /// one it has pending.
    fn arm_timer(&mut self, i: usize, deadline: Instant) -> io::Result<()> {
        // Instant is CLOCK_MONOTONIC, the clock of an absolute timeout.
        // Read it first: the expiry then lies at or after the deadline by
        // the time between the two reads, and never wakes the caller early.
        let ahead = deadline.saturating_duration_since(Instant::now());
        let mut now_ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out-pointer to a timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now_ts) };
        let at = Duration::new(now_ts.tv_sec as u64, now_ts.tv_nsec as u32) + ahead;
        *self.timer_ts[i] = types::Timespec::new()
            .sec(at.as_secs())
            .nsec(at.subsec_nanos());
        let ts: *const types::Timespec = &*self.timer_ts[i];
        let tag = TIMER_TAG - i as u64;
        let entry = if self.timer_armed[i].is_some() {
            // The update's own completion would end the wait at once: skip
            // it on success where the kernel can (5.17); a failure (the
            // timer fired meanwhile) still posts one, and wakes the caller,
            // who re-arms.
            let update = opcode::TimeoutUpdate::new(tag, ts)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(TIMER_UPDATE_TAG);
            if self.ring.params().is_feature_skip_cqe_on_success() {
                update.flags(squeue::Flags::SKIP_SUCCESS)
            } else {
                update
            }
        } else {
            opcode::Timeout::new(ts)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(tag)
        };
        // SAFETY: the timespec is boxed in the engine and read by the
        // kernel when this entry is submitted, before the next arm.
        unsafe { self.queue(&entry) }?;
        self.timer_armed[i] = Some(deadline);
        Ok(())
    }

    /// Puts `entry` on the submission queue. The queue is as deep as the
    /// slot table, but the timer's entries share it: when it is full, what
    /// is queued is submitted first (and stamped issued, as any submission).
    ///
    /// # Safety
    /// What `entry` points to must stay valid until the kernel is done with
    /// it: a request's buffer until its completion, a timespec until the
    /// entry is submitted.
    unsafe fn queue(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the caller's promise.
        if unsafe { self.ring.submission().push(entry) }.is_ok() {
            return Ok(());
        }
        self.submit()?;
        // SAFETY: as above.
        unsafe { self.ring.submission().push(entry) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))
    }

    fn harvest(&mut self, out: &mut Vec<Completion>) {
        let now = Instant::now();
        for cqe in self.ring.completion() {
            match cqe.user_data() {
                TIMER_UPDATE_TAG => continue,
                tag if tag > TIMER_UPDATE_TAG => {
                    self.timer_armed[(TIMER_TAG - tag) as usize] = None;
                    continue;
                }
                _ => {}
            }
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
        macro_rules! read_or_write {
            ($file:expr) => {
                if req.write {
                    opcode::Write::new($file, req.buf.as_ptr(), req.len)
                        .offset(req.offset)
                        .build()
                } else {
                    opcode::Read::new($file, req.buf.as_mut_ptr(), req.len)
                        .offset(req.offset)
                        .build()
                }
            };
        }
        let entry = match self.fixed.slot_of.get(&req.fd) {
            Some(&slot) => read_or_write!(types::Fixed(slot)),
            None => read_or_write!(types::Fd(req.fd)),
        }
        .user_data(index as u64);
        // SAFETY: the buffer lives in the slot until its completion is
        // harvested, and the fd is the caller's open file.
        unsafe { self.queue(&entry) }?;
        self.slots[index] = Some(Slot {
            req,
            issued_at: None,
        });
        self.unsubmitted.push(index);
        self.in_flight += 1;
        Ok(())
    }

    fn register(&mut self, fd: RawFd) {
        self.fixed.register(&mut self.ring, fd);
    }

    fn forget(&mut self, fd: RawFd) {
        // What is queued goes first (timers armed ahead, say), so that the
        // slot can be used again.
        let _ = self.submit();
        self.fixed.forget(&mut self.ring, fd);
    }

    fn submit(&mut self) -> io::Result<()> {
        // Timers' entries count too: a full queue of them alone must go
        // (found in review: a ring one request deep, with timers armed
        // ahead, could not queue its request).
        if self.unsubmitted.is_empty() && self.ring.submission().is_empty() {
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

    fn reap(&mut self, until: Option<Instant>, out: &mut Vec<Completion>) -> io::Result<()> {
        let before = out.len();
        self.harvest(out);
        if out.len() > before {
            return self.submit();
        }
        let now = Instant::now();
        let wait = match until {
            None if self.in_flight == 0 => return self.submit(),
            None => Wait::Completion,
            // Due already, with requests in flight: no wait, but an enter
            // that asks for events all the same. Under DEFER_TASKRUN the
            // kernel posts completions only then, so a caller that is
            // always behind (a full engine, a run at its in-flight limit)
            // would never see one (found in review: one stalled drive
            // stopped every run on its pool's worker).
            Some(t) if t <= now && self.in_flight == 0 => return self.submit(),
            Some(t) if t <= now => return self.poll(out),
            // A timer already armed for this deadline or earlier wakes us.
            Some(t) if self.covered(t) || t - now >= RING_TIMER_FROM => {
                self.arm_for(t)?;
                Wait::Completion
            }
            Some(t) => Wait::Timeout(t - now),
        };
        // Submit what is queued and wait, in one system call.
        self.stamp_issued();
        let result = match wait {
            Wait::Completion => self.ring.submitter().submit_and_wait(1),
            Wait::Timeout(t) => {
                let ts = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
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

/// io_uring_enter's flag that asks for completions (the kernel's uapi
/// IORING_ENTER_GETEVENTS): with no minimum, it runs deferred task work
/// and returns at once.
const ENTER_GETEVENTS: u32 = 1;

impl UringEngine {
    /// Issues what is queued and has the kernel post what has completed,
    /// without waiting or arming a timer, then collects it.
    fn poll(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        self.stamp_issued();
        let to_submit = self.ring.submission().len() as u32;
        // SAFETY: no argument is passed (a null pointer of size 0).
        let entered = unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS, None)
        };
        match entered {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        self.harvest(out);
        Ok(())
    }
}

/// How a reap that found nothing finished waits.
enum Wait {
    /// For a completion (or the armed timer's).
    Completion,
    /// For a completion, at most this long: the wait's own timer.
    Timeout(Duration),
}

/// Waits at least this long arm the ring's timer, which outlives the
/// completions that end the wait early; shorter ones use the wait's own
/// timeout, which costs less to set (measured on a 2-vCPU VM: arming an
/// IORING_OP_TIMEOUT every 25-50 us cost more CPU than the timeouts it
/// saved, while at 500 us between requests it cut the workload's CPU by a
/// quarter).
const RING_TIMER_FROM: Duration = Duration::from_micros(200);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_nearer_deadline_arms_a_free_timer_beside_a_later_one() {
        let mut engine = UringEngine::new(4).unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        engine.arm_timer(0, far).unwrap();
        engine.ring.submit().unwrap();
        let mut out = Vec::new();
        let asked = Instant::now();
        engine
            .reap(Some(asked + Duration::from_millis(20)), &mut out)
            .unwrap();
        let waited = asked.elapsed();
        assert!(
            waited >= Duration::from_millis(20),
            "woke early: {waited:?}"
        );
        assert!(waited < Duration::from_secs(5), "woke late: {waited:?}");
        assert!(out.is_empty());
        assert_eq!(
            engine.timer_armed,
            [Some(far), None, None],
            "the fired timer is seen, the later one stays"
        );
    }

    #[test]
    fn a_completion_leaves_the_timer_armed() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[0u8; 4096]).unwrap();
        let mut engine = UringEngine::new(4).unwrap();
        // Far beyond a 4 KiB read of a cached file, so that only a wait the
        // completion did not end reaches it, even on a busy machine.
        let deadline = Instant::now() + Duration::from_secs(2);
        engine.push(Request::read_4k(file.as_raw_fd(), 7)).unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            engine.reap(Some(deadline), &mut out).unwrap();
            assert!(Instant::now() < deadline, "the read did not wake the wait");
        }
        assert_eq!(out[0].tag, 7);
        assert!(engine.timer_armed.contains(&Some(deadline)));
        // Nothing in flight: the same deadline sleeps on the armed timer.
        out.clear();
        engine.reap(Some(deadline), &mut out).unwrap();
        assert!(Instant::now() >= deadline);
        assert!(out.is_empty());
    }

    #[test]
    fn a_steady_pace_arms_the_next_deadline_ahead() {
        let mut pace = Pace::default();
        let base = Instant::now();
        let at = |ms: u64| base + Duration::from_millis(ms);
        let step = Some(Duration::from_millis(10));
        assert_eq!(pace.steady_step(at(10)), None);
        assert_eq!(pace.steady_step(at(20)), None, "one step is no pace yet");
        assert_eq!(pace.steady_step(at(30)), step);
        assert_eq!(pace.steady_step(at(30)), step, "asked again");
        assert_eq!(pace.steady_step(at(35)), None, "the pace broke");
        assert_eq!(pace.steady_step(at(34)), None, "an earlier deadline");
        // Steps shorter than a ring timer's are waited with the wait's own.
        let mut fast = Pace::default();
        for us in [100, 200, 300] {
            assert_eq!(fast.steady_step(base + Duration::from_micros(us)), None);
        }
    }

    /// An engine `depth` requests deep asked for three deadlines a second
    /// apart, a minute from now: the first armed, and the two after it
    /// ahead. Returns it and the time the deadlines count from.
    fn armed_at_a_steady_pace(depth: u32) -> (UringEngine, Instant) {
        let mut engine = UringEngine::new(depth).unwrap();
        let base = Instant::now() + Duration::from_secs(60);
        let at = |s: u64| base + Duration::from_secs(s);
        for s in 1..=3 {
            engine.arm_for(at(s)).unwrap();
        }
        assert_eq!(engine.timer_armed, [Some(at(1)), Some(at(4)), Some(at(5))]);
        (engine, base)
    }

    #[test]
    fn the_timer_ahead_is_armed_while_the_next_one_is_pending() {
        let (mut engine, base) = armed_at_a_steady_pace(4);
        let at = |s: u64| base + Duration::from_secs(s);
        // Asked again, nothing more is armed.
        engine.arm_for(at(3)).unwrap();
        assert_eq!(engine.timer_armed, [Some(at(1)), Some(at(4)), Some(at(5))]);
        // An earlier deadline takes the latest timer armed ahead, not the
        // next one.
        engine.arm_for(at(0)).unwrap();
        assert_eq!(engine.timer_armed, [Some(at(1)), Some(at(4)), Some(at(0))]);
    }

    #[test]
    fn waits_at_a_steady_pace_wake_at_their_deadlines_once_each() {
        let mut engine = UringEngine::new(4).unwrap();
        let start = Instant::now();
        let mut out = Vec::new();
        let mut early = 0;
        for k in 1..=5u32 {
            let deadline = start + Duration::from_millis(20) * k;
            while Instant::now() < deadline {
                // A machine that stalled past a deadline leaves its timer
                // fired, and that ends the next wait at once, as it should
                // (found in review): only a wait with no such timer counts.
                let stale = engine.timer_armed.iter().flatten().any(|&t| t < deadline);
                engine.reap(Some(deadline), &mut out).unwrap();
                early += (Instant::now() < deadline && !stale) as u32;
            }
        }
        // A timer armed ahead never ends a wait before its own deadline.
        assert_eq!(early, 0);
        assert!(out.is_empty());
    }

    #[test]
    fn a_nearer_deadline_moves_the_latest_of_three_armed_timers() {
        let (mut engine, base) = armed_at_a_steady_pace(4);
        let at = |s: u64| base + Duration::from_secs(s);
        let mut out = Vec::new();
        let asked = Instant::now();
        let near = asked + Duration::from_millis(20);
        while Instant::now() < near {
            engine.reap(Some(near), &mut out).unwrap();
        }
        // The kernel took the update (the timer fired at the new time, and
        // its completion cleared its own slot); the other two stay armed.
        assert!(out.is_empty());
        assert_eq!(engine.timer_armed, [Some(at(1)), Some(at(4)), None]);
    }

    /// The next completion, waited for with no limit.
    fn next_completion(engine: &mut UringEngine) -> Completion {
        let mut out = Vec::new();
        while out.is_empty() {
            engine.reap(None, &mut out).unwrap();
        }
        out.swap_remove(0)
    }

    /// The first byte of `fd`, read through `engine`.
    fn first_byte(engine: &mut UringEngine, fd: RawFd) -> u8 {
        engine.push(Request::read_4k(fd, 1)).unwrap();
        let done = next_completion(engine);
        assert!(done.error().is_none());
        done.buf.as_slice()[0]
    }

    /// A file of 4 KiB of `byte`.
    fn file_of(byte: u8) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[byte; 4096]).unwrap();
        file
    }

    /// Makes `fd` name `other`'s file, as a number closed and handed to
    /// another file would, without the number ever being free (the other
    /// tests' threads open files meanwhile).
    fn renumber(other: &std::fs::File, fd: RawFd) {
        // SAFETY: both are open descriptors of this test.
        assert_eq!(unsafe { libc::dup2(other.as_raw_fd(), fd) }, fd);
    }

    /// An engine with a registered-file table, or None (said) on a kernel
    /// where the engine uses none.
    fn with_fixed_files() -> Option<UringEngine> {
        let engine = UringEngine::new(4).unwrap();
        if engine.fixed.free.is_empty() {
            assert!(!kernel_at_least(6, 13), "Linux 6.13 on refused the table");
            eprintln!("skipped: registered files are used from Linux 6.13 on");
            return None;
        }
        Some(engine)
    }

    #[test]
    fn a_registered_file_is_read_through_its_slot_until_forgotten() {
        let Some(mut engine) = with_fixed_files() else {
            return;
        };
        let (a, b) = (file_of(0xaa), file_of(0xbb));
        let fd = a.as_raw_fd();
        engine.register(fd);
        let slot = engine.fixed.slot_of.get(&fd).copied();
        assert!(slot.is_some(), "the kernel took no registered file");
        assert_eq!(first_byte(&mut engine, fd), 0xaa);
        // Registered again: the same slot.
        engine.register(fd);
        assert_eq!(engine.fixed.slot_of.get(&fd).copied(), slot);
        // Forgotten, its number another file's: read by descriptor, never
        // the file the slot held.
        engine.forget(fd);
        assert!(engine.fixed.slot_of.is_empty());
        renumber(&b, fd);
        assert_eq!(first_byte(&mut engine, fd), 0xbb);
    }

    #[test]
    fn registering_a_number_again_takes_the_file_behind_it_now() {
        let Some(mut engine) = with_fixed_files() else {
            return;
        };
        let (a, b) = (file_of(0xaa), file_of(0xbb));
        let fd = a.as_raw_fd();
        engine.register(fd);
        assert_eq!(first_byte(&mut engine, fd), 0xaa);
        // The number now another file's, a request goes through the slot
        // (which is why a caller must forget or register again)...
        renumber(&b, fd);
        assert_eq!(first_byte(&mut engine, fd), 0xaa);
        // ...and registering it again takes the file behind it now.
        engine.register(fd);
        assert_eq!(first_byte(&mut engine, fd), 0xbb);
    }

    #[test]
    fn a_slot_a_queued_request_names_is_never_used_again() {
        let Some(mut engine) = with_fixed_files() else {
            return;
        };
        let a = file_of(0xaa);
        let fd = a.as_raw_fd();
        engine.register(fd);
        let slot = engine.fixed.slot_of[&fd];
        // Emptied while a request naming it is still in the submission
        // queue (as when the completion queue is full): retired, not
        // handed to the next drive.
        engine.push(Request::read_4k(fd, 3)).unwrap();
        engine.fixed.forget(&mut engine.ring, fd);
        assert!(!engine.fixed.free.contains(&slot));
        next_completion(&mut engine);
        // The engine's own forget sends what is queued first: the request
        // holds its file, and the slot is free again.
        engine.register(fd);
        let again = engine.fixed.slot_of[&fd];
        assert_ne!(again, slot);
        engine.push(Request::read_4k(fd, 4)).unwrap();
        engine.forget(fd);
        assert!(engine.fixed.free.contains(&again));
        let done = next_completion(&mut engine);
        assert!(done.error().is_none());
        assert_eq!(done.buf.as_slice()[0], 0xaa);
    }

    #[test]
    fn a_ring_one_request_deep_takes_its_request_beside_timers_armed_ahead() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[0u8; 4096]).unwrap();
        let (mut engine, _) = armed_at_a_steady_pace(1);
        engine.push(Request::read_4k(file.as_raw_fd(), 9)).unwrap();
        assert_eq!(next_completion(&mut engine).tag, 9);
    }
}
