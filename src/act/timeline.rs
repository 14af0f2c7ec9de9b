//! Per-second samples of the run (counts and read latency percentiles), so
//! periodic latency spikes can be seen, and the dominant spike period found.

use super::histogram::{LatencyHistogram, Scale};
pub use crate::results::act::{Second, Spikes};

pub struct Timeline {
    current: u64,
    reads: LatencyHistogram,
    counts: [u64; 4],
    max_lag_ns: u64,
    pub seconds: Vec<Second>,
}

/// What a stream's completion counts as in the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    LargeBlockRead,
    LargeBlockWrite,
    Other,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            current: 0,
            reads: LatencyHistogram::new(Scale::Microseconds),
            counts: [0; 4],
            max_lag_ns: 0,
            seconds: Vec::new(),
        }
    }
}

impl Timeline {
    /// Closes every whole second before `elapsed_s`; returns the closed ones.
    pub fn advance(&mut self, elapsed_s: u64) -> &[Second] {
        let before = self.seconds.len();
        while self.current < elapsed_s {
            let h = &self.reads;
            let us = |ns: u64| ns as f64 / 1000.0;
            let any = h.total() > 0;
            self.seconds.push(Second {
                t: self.current + 1,
                reads: self.counts[0],
                writes: self.counts[1],
                large_block_reads: self.counts[2],
                large_block_writes: self.counts[3],
                read_p50_us: if any { us(h.quantile_ns(0.5)) } else { 0.0 },
                read_p99_us: if any { us(h.quantile_ns(0.99)) } else { 0.0 },
                read_p999_us: if any { us(h.quantile_ns(0.999)) } else { 0.0 },
                read_max_us: if any { us(h.hdr().max()) } else { 0.0 },
                read_pct_over_1ms: h.pct_over_ns(1_000_000),
                read_pct_over_8ms: h.pct_over_ns(8_000_000),
                read_pct_over_64ms: h.pct_over_ns(64_000_000),
                max_lag_ms: self.max_lag_ns as f64 / 1e6,
            });
            self.reads.clear();
            self.counts = [0; 4];
            self.max_lag_ns = 0;
            self.current += 1;
        }
        &self.seconds[before..]
    }

    pub fn record(&mut self, kind: Kind, latency_ns: u64) {
        match kind {
            Kind::Read => {
                self.counts[0] += 1;
                self.reads.record(latency_ns);
            }
            Kind::Write => self.counts[1] += 1,
            Kind::LargeBlockRead => self.counts[2] += 1,
            Kind::LargeBlockWrite => self.counts[3] += 1,
            Kind::Other => {}
        }
    }

    pub fn lag(&mut self, lag_ns: u64) {
        self.max_lag_ns = self.max_lag_ns.max(lag_ns);
    }
}

/// Finds seconds whose value is well above the run's typical level (more
/// than 3 MADs above the median and at least twice it), groups neighbouring
/// seconds into bursts, and names a period when the bursts recur: at least
/// four bursts, three quarters of the gaps between their starts within a
/// tenth (at least 1 s) of the median gap, and that gap at least 5 s (in
/// noise, short gaps agree by chance).
pub fn find_spikes(values: &[(u64, f64)]) -> Spikes {
    let mut sorted: Vec<f64> = values.iter().map(|v| v.1).collect();
    sorted.sort_by(|a, b| a.total_cmp(b));
    if sorted.len() < 10 {
        return Spikes {
            seconds: Vec::new(),
            period_s: None,
            threshold: f64::INFINITY,
        };
    }
    let median = sorted[sorted.len() / 2];
    let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let mad = dev[dev.len() / 2].max(median * 0.05).max(1e-9);
    let threshold = (median + 3.0 * 1.4826 * mad).max(median * 2.0);
    // In order and once each, whatever order a (crafted) timeline has.
    let mut seconds: Vec<u64> = values
        .iter()
        .filter(|v| v.1 > threshold)
        .map(|v| v.0)
        .collect();
    seconds.sort_unstable();
    seconds.dedup();
    // A burst starts at a spike second whose previous second was calm.
    let starts: Vec<u64> = seconds
        .iter()
        .enumerate()
        .filter(|(i, &t)| *i == 0 || seconds[i - 1].saturating_add(1) != t)
        .map(|(_, &t)| t)
        .collect();
    let mut gaps: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let period_s = if gaps.len() >= 3 {
        gaps.sort();
        let m = gaps[gaps.len() / 2];
        let tolerance = (m / 10).max(1);
        let agreeing = gaps.iter().filter(|&&g| g.abs_diff(m) <= tolerance).count();
        (m >= 5 && agreeing * 4 >= gaps.len() * 3).then_some(m)
    } else {
        None
    };
    Spikes {
        seconds,
        period_s,
        threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_period_of_periodic_spikes() {
        let series: Vec<(u64, f64)> = (1..=120)
            .map(|t| {
                (
                    t,
                    if t % 15 == 0 {
                        5000.0
                    } else {
                        300.0 + (t % 7) as f64
                    },
                )
            })
            .collect();
        let s = find_spikes(&series);
        assert_eq!(s.seconds, vec![15, 30, 45, 60, 75, 90, 105, 120]);
        assert_eq!(s.period_s, Some(15));
    }

    #[test]
    fn finds_the_period_of_multi_second_bursts() {
        // Bursts of 2 or 3 s every 30 s (a drive's periodic garbage
        // collection), on a slightly noisy floor.
        let series: Vec<(u64, f64)> = (1..=300)
            .map(|t| {
                let phase = t % 30;
                let len = if (t / 30) % 2 == 0 { 2 } else { 3 };
                let v = if (10..10 + len).contains(&phase) {
                    4000.0
                } else {
                    300.0 + (t * 7 % 11) as f64
                };
                (t, v)
            })
            .collect();
        let s = find_spikes(&series);
        assert!(s.seconds.len() >= 20, "{:?}", s.seconds);
        assert_eq!(s.period_s, Some(30));
    }

    #[test]
    fn a_timeline_out_of_order_is_read_in_order() {
        let mut series: Vec<(u64, f64)> = (1..=120)
            .map(|t| (t, if t % 15 == 0 { 5000.0 } else { 300.0 }))
            .collect();
        series.reverse();
        series.push((u64::MAX, 9000.0));
        series.push((30, 9000.0));
        let s = find_spikes(&series);
        assert_eq!(s.seconds.first(), Some(&15));
        assert_eq!(s.period_s, Some(15));
    }

    #[test]
    fn no_period_in_noise() {
        // Heavy-tailed noise from a fixed generator: spikes at random
        // seconds, which must not be taken for a period.
        for seed in 1..=20u64 {
            let mut x = seed;
            let series: Vec<(u64, f64)> = (1..=600)
                .map(|t| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let u = ((x >> 11) as f64 / (1u64 << 53) as f64).max(1e-12);
                    // Pareto-like: mostly near 300, now and then far above.
                    (t, 300.0 / u.powf(0.7))
                })
                .collect();
            let s = find_spikes(&series);
            assert_eq!(s.period_s, None, "seed {seed}: {:?}", s.seconds);
            // Spikes at three seconds in ten, at random: the gaps are short
            // and agree by chance (an earlier detector saw "3 s" here).
            for p in [0.3, 0.5] {
                let series: Vec<(u64, f64)> = (1..=600)
                    .map(|t| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                        (
                            t,
                            if u < p {
                                5000.0
                            } else {
                                300.0 + (t * 7 % 11) as f64
                            },
                        )
                    })
                    .collect();
                let s = find_spikes(&series);
                assert_eq!(s.period_s, None, "seed {seed}, {p}: {:?}", s.seconds);
            }
        }
    }

    #[test]
    fn no_spikes_in_a_flat_series_and_no_period_in_random_ones() {
        let flat: Vec<(u64, f64)> = (1..=60).map(|t| (t, 300.0 + (t % 3) as f64)).collect();
        assert!(find_spikes(&flat).seconds.is_empty());
        let irregular: Vec<(u64, f64)> = (1..=100)
            .map(|t| {
                (
                    t,
                    if [3, 4, 20, 21, 57, 90].contains(&t) {
                        9000.0
                    } else {
                        300.0
                    },
                )
            })
            .collect();
        let s = find_spikes(&irregular);
        assert_eq!(s.seconds.len(), 6);
        assert_eq!(s.period_s, None);
    }

    #[test]
    fn closes_seconds_with_percentiles() {
        let mut tl = Timeline::default();
        for _ in 0..99 {
            tl.record(Kind::Read, 200_000);
        }
        tl.record(Kind::Read, 9_000_000);
        tl.record(Kind::LargeBlockWrite, 1);
        tl.lag(2_500_000);
        let closed = tl.advance(2).to_vec();
        assert_eq!(closed.len(), 2);
        assert_eq!(closed[0].reads, 100);
        assert_eq!(closed[0].large_block_writes, 1);
        assert!((closed[0].read_pct_over_8ms - 1.0).abs() < 1e-9);
        assert!((closed[0].max_lag_ms - 2.5).abs() < 1e-9);
        assert_eq!(closed[1].reads, 0);
    }
}
