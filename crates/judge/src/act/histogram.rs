//! Latency histograms: ACT's power-of-two buckets, exact, for the log that
//! act_latency.py reads, beside an HDR histogram for percentiles.
//!
//! ACT buckets a latency by the most significant bit of the latency in
//! whole milliseconds (or microseconds): bucket 0 holds 0 to 0.999 ms,
//! bucket 1 1 to 1.999, bucket 2 2 to 3.999, bucket k 2^(k-1) to 2^k - ε.
//! The counts are cumulative over the run and dumped in ACT's format.

use std::fmt::Write as _;

use hdrhistogram::Histogram as Hdr;

pub const N_BUCKETS: usize = 65;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Scale {
    Milliseconds,
    Microseconds,
}

impl Scale {
    pub fn divisor_ns(self) -> u64 {
        match self {
            Scale::Milliseconds => 1_000_000,
            Scale::Microseconds => 1_000,
        }
    }
}

/// ACT's bucket of a latency: 0 for 0, else the position (1-based) of the
/// most significant bit of the latency in whole units.
pub fn bucket_of(delta_ns: u64, scale: Scale) -> usize {
    let units = delta_ns / scale.divisor_ns();
    if units == 0 {
        0
    } else {
        64 - units.leading_zeros() as usize
    }
}

#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    pub scale: Scale,
    counts: [u64; N_BUCKETS],
    hdr: Hdr<u64>,
}

impl LatencyHistogram {
    pub fn new(scale: Scale) -> Self {
        LatencyHistogram {
            scale,
            counts: [0; N_BUCKETS],
            // 1 ns to 1 hour at 3 significant digits; longer values are
            // clamped to an hour (the ACT buckets still count them exactly).
            hdr: Hdr::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid HDR bounds"),
        }
    }

    pub fn record(&mut self, delta_ns: u64) {
        self.counts[bucket_of(delta_ns, self.scale)] += 1;
        self.hdr.saturating_record(delta_ns.max(1));
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn counts(&self) -> &[u64; N_BUCKETS] {
        &self.counts
    }

    pub fn hdr(&self) -> &Hdr<u64> {
        &self.hdr
    }

    /// Latency at a quantile (0..=1), in nanoseconds.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        self.hdr.value_at_quantile(q)
    }

    /// Percentage of samples above `threshold_ns` (from the HDR histogram).
    pub fn pct_over_ns(&self, threshold_ns: u64) -> f64 {
        match self.over_ns(threshold_ns) {
            (_, 0) => 0.0,
            (over, total) => over as f64 * 100.0 / total as f64,
        }
    }

    /// Adds `other`'s samples (a worker thread's share of the same run;
    /// both have the same scale and bounds).
    pub fn add(&mut self, other: &LatencyHistogram) {
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        // Same bounds on both sides: the add cannot fail.
        let _ = self.hdr.add(&other.hdr);
    }

    /// A histogram of ACT's buckets alone, its HDR samples empty (so its
    /// quantiles and `pct_over_ns` say nothing): the run's view at a report
    /// of a run on worker threads, which dumps and decides on the buckets
    /// only. Each worker hands on its 65 counts, not its HDR's 33,000.
    pub fn set_buckets(&mut self, counts: &[u64; N_BUCKETS]) {
        self.hdr.reset();
        self.counts = *counts;
    }

    /// The samples over `threshold_ns` and in all, from the HDR histogram
    /// (a worker's part of the run's `pct_over_ns`).
    pub fn over_ns(&self, threshold_ns: u64) -> (u64, u64) {
        let total = self.hdr.len();
        let at_or_below = self.hdr.count_between(0, threshold_ns);
        (total - at_or_below.min(total), total)
    }

    pub fn clear(&mut self) {
        self.counts = [0; N_BUCKETS];
        self.hdr.reset();
    }

    /// ACT's histogram_dump(): "TAG (N total)" then up to four non-zero
    /// buckets per line as " (BB: CCCCCCCCCC)".
    pub fn dump(&self, tag: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{tag} ({} total)", self.total());
        let mut line = String::new();
        let mut printed = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let _ = write!(line, " ({i:02}: {c:010})");
            printed += 1;
            if printed % 4 == 0 {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
        }
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_match_act() {
        let ms = Scale::Milliseconds;
        assert_eq!(bucket_of(0, ms), 0);
        assert_eq!(bucket_of(999_999, ms), 0);
        assert_eq!(bucket_of(1_000_000, ms), 1);
        assert_eq!(bucket_of(1_999_999, ms), 1);
        assert_eq!(bucket_of(2_000_000, ms), 2);
        assert_eq!(bucket_of(3_999_999, ms), 2);
        assert_eq!(bucket_of(4_000_000, ms), 3);
        assert_eq!(bucket_of(64_000_000, ms), 7);
        assert_eq!(bucket_of(u64::MAX, ms), 45);
        assert_eq!(bucket_of(1_000, Scale::Microseconds), 1);
        assert_eq!(bucket_of(u64::MAX, Scale::Microseconds), 55);
    }

    #[test]
    fn dump_matches_act_format() {
        let mut h = LatencyHistogram::new(Scale::Milliseconds);
        for _ in 0..5 {
            h.record(100_000);
        }
        h.record(1_500_000);
        h.record(5_000_000);
        h.record(9_000_000);
        h.record(70_000_000);
        assert_eq!(
            h.dump("reads"),
            "reads (9 total)\n (00: 0000000005) (01: 0000000001) (03: 0000000001) (04: 0000000001)\n (07: 0000000001)\n"
        );
        assert_eq!(
            LatencyHistogram::new(Scale::Milliseconds).dump("x"),
            "x (0 total)\n"
        );
    }

    #[test]
    fn percentiles_and_overs() {
        let mut h = LatencyHistogram::new(Scale::Microseconds);
        for i in 1..=1000u64 {
            h.record(i * 10_000); // 10 µs .. 10 ms
        }
        let p50 = h.quantile_ns(0.5);
        assert!((4_990_000..=5_010_000).contains(&p50), "{p50}");
        let over = h.pct_over_ns(8_000_000);
        assert!((19.8..=20.2).contains(&over), "{over}");
    }
}
