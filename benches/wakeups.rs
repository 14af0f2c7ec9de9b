//! A benchmark helper for scripts/bench/wakeups: N threads share a fixed
//! number of timed sleeps, each sleeping until its next turn on one common
//! schedule (one wake-up every PERIOD_US in all), so the machine sees the
//! same wake-up rate whatever the thread count. It does nothing else, so
//! its CPU time is the cost of the wake-ups themselves.
//!
//! With AHEAD, one thread takes every turn on that many timers (timerfd),
//! each re-armed for its next turn as it fires, so AHEAD - 1 turns stay
//! armed ahead of the one waited for: what io_uring's timers do in the
//! engine. A timer armed while an earlier one is pending leaves the CPU's
//! timer device as it is; one armed as the earliest reprograms it.
//!
//! usage: wakeups THREADS PERIOD_US COUNT [AHEAD]

use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: wakeups THREADS PERIOD_US COUNT [AHEAD]";

fn main() -> ExitCode {
    // `cargo bench` and `cargo test --benches` run every bench target with
    // their own flags; the figures come from the script, which measures
    // this program's CPU time from outside.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.is_empty() {
        eprintln!("wakeups: run scripts/bench/wakeups, which measures it ({USAGE})");
        return ExitCode::SUCCESS;
    }
    let parsed: Result<Vec<u64>, _> = args.iter().map(|a| a.parse::<u64>()).collect();
    let (threads, period_us, count, ahead) = match parsed.as_deref() {
        Ok(&[threads, period_us, count]) if threads > 0 => (threads, period_us, count, 0),
        Ok(&[1, period_us, count, ahead]) if (1..=64).contains(&ahead) => {
            (1, period_us, count, ahead)
        }
        _ => {
            eprintln!("{USAGE} (AHEAD 1 to 64, with one thread)");
            return ExitCode::from(2);
        }
    };
    if ahead > 0 {
        return match timers_ahead(period_us, count, ahead as usize) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("wakeups: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                // Thread t takes turns t, t + threads, t + 2 × threads, ...
                for turn in (t..count).step_by(threads as usize) {
                    let due = start + Duration::from_micros(period_us * (turn + 1));
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        if w.join().is_err() {
            eprintln!("wakeups: a sleeper panicked");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// One thread waking `count` times, one every `period_us`, on `ahead`
/// timers taken in turn: each is re-armed for its next turn as it fires.
fn timers_ahead(period_us: u64, count: u64, ahead: usize) -> std::io::Result<()> {
    let mut start = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut start) };
    let at = |turn: u64| {
        let ns = start.tv_nsec as u64 + period_us * 1000 * (turn + 1);
        libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: start.tv_sec + (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        }
    };
    let arm = |fd: libc::c_int, turn: u64| {
        // SAFETY: an open timerfd and a valid itimerspec.
        let set = unsafe {
            libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &at(turn), std::ptr::null_mut())
        };
        match set {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    };
    let mut fds = Vec::with_capacity(ahead);
    for turn in 0..ahead as u64 {
        // SAFETY: plain system call; the descriptor is closed at exit.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        arm(fd, turn)?;
        fds.push(fd);
    }
    for turn in 0..count {
        let fd = fds[turn as usize % ahead];
        let mut expirations = 0u64;
        // SAFETY: reads 8 bytes into a u64, as a timerfd gives.
        let got = unsafe { libc::read(fd, (&mut expirations as *mut u64).cast(), 8) };
        if got != 8 {
            return Err(std::io::Error::last_os_error());
        }
        arm(fd, turn + ahead as u64)?;
    }
    Ok(())
}
