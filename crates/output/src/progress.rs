//! Progress for long passes: a bar with rate and ETA on a terminal, plain
//! periodic lines (no control characters) on a serial console or a pipe.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::console::Console;

/// One long pass over bytes (salting a drive, a stream pass, an upload),
/// shown through the console: a bar on a terminal, a plain line every
/// interval elsewhere, and its closing line either way.
pub struct Progress {
    console: Arc<Console>,
    label: String,
    total: u64,
    started: Instant,
}

impl Progress {
    /// Progress over `total` bytes, labelled `label`.
    pub fn bytes(console: &Arc<Console>, label: &str, total: u64) -> Progress {
        Progress {
            console: Arc::clone(console),
            label: label.to_string(),
            total,
            started: Instant::now(),
        }
    }

    pub fn set(&mut self, done: u64) {
        let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        self.console.update(
            &self.label,
            done,
            self.total,
            "B",
            format!("{}/s", super::units::decimal_bytes(rate as u64)),
        );
    }

    /// The pass ended with `done` bytes: its bar goes, its line stays.
    pub fn finish(self, done: u64) {
        self.console
            .say(&line(&self.label, done, self.total, self.started.elapsed()));
    }
}

/// A pass that ends early (an error) takes its bar or line with it, so a
/// run's console does not repeat it until the run ends.
impl Drop for Progress {
    fn drop(&mut self) {
        self.console.end(&self.label);
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
