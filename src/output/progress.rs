//! Progress for long passes: a bar with rate and ETA on a terminal, plain
//! periodic lines (no control characters) on a serial console or a pipe.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    started: Instant,
    last_line: Instant,
    last_done: u64,
    every: Duration,
}

/// Set once by `storcert run --plain` (the boot image's unit): a serial
/// console is a terminal to the process but a log to whoever reads it, so
/// every pass then prints plain lines, like the run's own console.
static PLAIN: AtomicBool = AtomicBool::new(false);

/// Plain lines from now on, even on a terminal.
pub fn force_plain() {
    PLAIN.store(true, Ordering::Relaxed);
}

/// Several bars drawn together on a terminal (one per device); nothing
/// otherwise.
pub fn multi() -> Option<MultiProgress> {
    (std::io::stderr().is_terminal() && !PLAIN.load(Ordering::Relaxed))
        .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

impl Progress {
    /// Progress over `total` bytes, labelled `label`.
    pub fn bytes(label: &str, total: u64) -> Progress {
        Self::bytes_in(multi().as_ref(), label, total)
    }

    /// The same, as one of several bars of `multi`.
    pub fn bytes_in(multi: Option<&MultiProgress>, label: &str, total: u64) -> Progress {
        let bar = multi.map(|m| {
            let bar = m.add(ProgressBar::new(total));
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_message(label.to_string());
            bar
        });
        Progress {
            bar,
            label: label.to_string(),
            total,
            started: Instant::now(),
            last_line: Instant::now(),
            last_done: 0,
            every: Duration::from_secs(10),
        }
    }

    pub fn set(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        let since = self.last_line.elapsed();
        if since >= self.every {
            // The plain line shows the rate of the last interval (current),
            // and an ETA from it.
            let current = done.saturating_sub(self.last_done) as f64 / since.as_secs_f64();
            self.last_line = Instant::now();
            self.last_done = done;
            eprintln!("{}", line_at(&self.label, done, self.total, current));
        }
    }

    pub fn finish(self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        eprintln!(
            "{}",
            line(&self.label, done, self.total, self.started.elapsed())
        );
    }
}

/// "salting /dev/sdb: 12.0 GB of 480.1 GB (2.5%), 1.2 GB/s, ETA 6m 30s",
/// at the average rate since the start.
pub fn line(label: &str, done: u64, total: u64, elapsed: Duration) -> String {
    line_at(
        label,
        done,
        total,
        done as f64 / elapsed.as_secs_f64().max(1e-9),
    )
}

/// The same line at a given rate (bytes per second).
pub fn line_at(label: &str, done: u64, total: u64, rate: f64) -> String {
    let pct = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    let eta = if rate > 0.0 && done < total {
        let secs = ((total - done) as f64 / rate) as u64;
        format!(
            ", ETA {}",
            humantime::format_duration(Duration::from_secs(secs))
        )
    } else {
        String::new()
    };
    format!(
        "{label}: {} of {} ({pct:.1}%), {}/s{eta}",
        super::units::decimal_bytes(done),
        super::units::decimal_bytes(total),
        super::units::decimal_bytes(rate as u64)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_line_has_rate_and_eta() {
        let l = super::line(
            "salting x",
            1_000_000_000,
            4_000_000_000,
            std::time::Duration::from_secs(2),
        );
        assert_eq!(l, "salting x: 1.0 GB of 4.0 GB (25.0%), 500.0 MB/s, ETA 6s");
        assert!(!l.chars().any(|c| c.is_control()));
    }
}
