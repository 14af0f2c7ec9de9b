//! A benchmark helper for scripts/bench/wakeups: N threads share a fixed
//! number of timed sleeps, each sleeping until its next turn on one common
//! schedule (one wake-up every PERIOD_US in all), so the machine sees the
//! same wake-up rate whatever the thread count. It does nothing else, so
//! its CPU time is the cost of the wake-ups themselves.
//!
//! usage: wakeups THREADS PERIOD_US COUNT

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: wakeups THREADS PERIOD_US COUNT"))
        .collect();
    let [threads, period_us, count] = args[..] else {
        eprintln!("usage: wakeups THREADS PERIOD_US COUNT");
        std::process::exit(2);
    };
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
        w.join().expect("a sleeper panicked");
    }
}
