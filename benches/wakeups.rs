//! A benchmark helper for scripts/bench/wakeups: N threads share a fixed
//! number of timed sleeps, each sleeping until its next turn on one common
//! schedule (one wake-up every PERIOD_US in all), so the machine sees the
//! same wake-up rate whatever the thread count. It does nothing else, so
//! its CPU time is the cost of the wake-ups themselves.
//!
//! usage: wakeups THREADS PERIOD_US COUNT

use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: wakeups THREADS PERIOD_US COUNT";

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
    let (threads, period_us, count) = match parsed.as_deref() {
        Ok(&[threads, period_us, count]) => (threads, period_us, count),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
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
        if w.join().is_err() {
            eprintln!("wakeups: a sleeper panicked");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
