//! Per-second samples of the run (counts and read latency percentiles), so
//! periodic latency spikes can be seen, and the dominant spike period found.

use super::histogram::{LatencyHistogram, Scale};
pub use storcert_results::act::{Second, Spikes};

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

    /// Adds what `part` recorded since it last closed a second (a worker
    /// thread's share of this second) to the second this timeline is in.
    pub fn absorb(&mut self, part: &Timeline) {
        for (c, o) in self.counts.iter_mut().zip(&part.counts) {
            *c += o;
        }
        self.reads.add(&part.reads);
        self.max_lag_ns = self.max_lag_ns.max(part.max_lag_ns);
    }
}

/// The most points a thinned timeline keeps: a ten-minute trial keeps
/// every second, and the report's plots are 760 pixels wide, so more points
/// would add bytes to the page and nothing a reader could see.
pub const POINTS: usize = 600;

/// Adjacent seconds of a timeline merged into one point of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The first second merged (its `t`); the span covers
    /// [first_t - 1, last.t).
    pub first_t: u64,
    /// How many seconds were merged.
    pub seconds: u64,
    /// Each figure's highest second (its `t` the last second's): the worst
    /// second stays visible however many are merged, so a one-second
    /// latency spike in a day-long run is still drawn at its height. The
    /// lowest second is not kept: a dip in latency is nobody's concern.
    pub max: Second,
    /// Each figure summed over the seconds, for the mean (counts saturate).
    sum: Second,
}

impl Span {
    fn of(s: Second) -> Span {
        Span {
            first_t: s.t,
            seconds: 1,
            sum: s.clone(),
            max: s,
        }
    }

    /// The last second merged: where the span is drawn.
    pub fn t(&self) -> u64 {
        self.max.t
    }

    /// Each figure's mean over the seconds merged (counts rounded down).
    pub fn mean(&self) -> Second {
        let n = self.seconds.max(1);
        let f = |v: f64| v / n as f64;
        let s = &self.sum;
        Second {
            t: self.max.t,
            reads: s.reads / n,
            writes: s.writes / n,
            large_block_reads: s.large_block_reads / n,
            large_block_writes: s.large_block_writes / n,
            read_p50_us: f(s.read_p50_us),
            read_p99_us: f(s.read_p99_us),
            read_p999_us: f(s.read_p999_us),
            read_max_us: f(s.read_max_us),
            read_pct_over_1ms: f(s.read_pct_over_1ms),
            read_pct_over_8ms: f(s.read_pct_over_8ms),
            read_pct_over_64ms: f(s.read_pct_over_64ms),
            max_lag_ms: f(s.max_lag_ms),
        }
    }

    /// `next`, the span right after this one, merged into it.
    fn merge(&mut self, next: &Span) {
        let (m, x) = (&mut self.max, &next.max);
        m.t = x.t;
        m.reads = m.reads.max(x.reads);
        m.writes = m.writes.max(x.writes);
        m.large_block_reads = m.large_block_reads.max(x.large_block_reads);
        m.large_block_writes = m.large_block_writes.max(x.large_block_writes);
        // f64::max: a NaN a crafted timeline holds loses to any number.
        m.read_p50_us = m.read_p50_us.max(x.read_p50_us);
        m.read_p99_us = m.read_p99_us.max(x.read_p99_us);
        m.read_p999_us = m.read_p999_us.max(x.read_p999_us);
        m.read_max_us = m.read_max_us.max(x.read_max_us);
        m.read_pct_over_1ms = m.read_pct_over_1ms.max(x.read_pct_over_1ms);
        m.read_pct_over_8ms = m.read_pct_over_8ms.max(x.read_pct_over_8ms);
        m.read_pct_over_64ms = m.read_pct_over_64ms.max(x.read_pct_over_64ms);
        m.max_lag_ms = m.max_lag_ms.max(x.max_lag_ms);
        let (s, y) = (&mut self.sum, &next.sum);
        s.t = y.t;
        s.reads = s.reads.saturating_add(y.reads);
        s.writes = s.writes.saturating_add(y.writes);
        s.large_block_reads = s.large_block_reads.saturating_add(y.large_block_reads);
        s.large_block_writes = s.large_block_writes.saturating_add(y.large_block_writes);
        s.read_p50_us += y.read_p50_us;
        s.read_p99_us += y.read_p99_us;
        s.read_p999_us += y.read_p999_us;
        s.read_max_us += y.read_max_us;
        s.read_pct_over_1ms += y.read_pct_over_1ms;
        s.read_pct_over_8ms += y.read_pct_over_8ms;
        s.read_pct_over_64ms += y.read_pct_over_64ms;
        s.max_lag_ms += y.max_lag_ms;
        self.seconds = self.seconds.saturating_add(next.seconds);
    }
}

/// A timeline read a second at a time into at most `cap` points, however
/// long it is: while it fits, a point is a second; when it would not, each
/// two neighbouring points become one, so every point covers `width`
/// seconds (a power of two; the last may cover fewer), in the file's
/// order. The reader holds the points only, never the seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Thinned {
    cap: usize,
    width: u64,
    seconds: u64,
    points: Vec<Span>,
}

impl Thinned {
    /// At most `cap` points (at least 2; an odd cap is taken one lower, so
    /// that points merge in pairs).
    pub fn new(cap: usize) -> Thinned {
        Thinned {
            cap: cap.max(2) & !1,
            width: 1,
            seconds: 0,
            points: Vec::new(),
        }
    }

    pub fn push(&mut self, s: Second) {
        self.seconds = self.seconds.saturating_add(1);
        let next = Span::of(s);
        if let Some(last) = self.points.last_mut() {
            if last.seconds < self.width {
                last.merge(&next);
                return;
            }
        }
        if self.points.len() >= self.cap {
            // Every point is whole here (only the last could be short, and
            // it is not): pairs merge into points of twice the width.
            let half = self.points.len() / 2;
            for i in 0..half {
                let mut p = self.points[2 * i].clone();
                p.merge(&self.points[2 * i + 1]);
                self.points[i] = p;
            }
            self.points.truncate(half);
            self.width = self.width.saturating_mul(2);
        }
        self.points.push(next);
    }

    pub fn points(&self) -> &[Span] {
        &self.points
    }

    /// Seconds per point (the last point may cover fewer).
    pub fn width(&self) -> u64 {
        self.width
    }

    /// The seconds read.
    pub fn seconds(&self) -> u64 {
        self.seconds
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

impl Default for Thinned {
    fn default() -> Thinned {
        Thinned::new(POINTS)
    }
}

/// The spikes of a thinned timeline's worst-second series `value`: found
/// among its seconds while a point is a second, else among its points,
/// each span taken as one step (so neighbouring spans over the line are
/// one burst, and a period is a number of spans), and named by the spans'
/// last seconds, the period in seconds.
pub fn spikes_of(t: &Thinned, value: impl Fn(&Second) -> f64) -> Spikes {
    if t.width() == 1 {
        return find_spikes(
            &t.points()
                .iter()
                .map(|p| (p.t(), value(&p.max)))
                .collect::<Vec<_>>(),
        );
    }
    let steps: Vec<(u64, f64)> = t
        .points()
        .iter()
        .enumerate()
        .map(|(i, p)| (i as u64 + 1, value(&p.max)))
        .collect();
    let s = find_spikes(&steps);
    Spikes {
        seconds: s
            .seconds
            .iter()
            .map(|&i| t.points()[i as usize - 1].t())
            .collect(),
        period_s: s.period_s.map(|p| p.saturating_mul(t.width())),
        threshold: s.threshold,
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

    fn second(t: u64, p99: f64) -> Second {
        Second {
            t,
            reads: 2000,
            writes: 1000,
            large_block_reads: 24,
            large_block_writes: 24,
            read_p50_us: 100.0,
            read_p99_us: p99,
            read_p999_us: p99,
            read_max_us: p99,
            read_pct_over_1ms: if p99 > 1000.0 { 2.0 } else { 0.0 },
            read_pct_over_8ms: 0.0,
            read_pct_over_64ms: 0.0,
            max_lag_ms: 0.1,
        }
    }

    #[test]
    fn a_short_timeline_keeps_every_second() {
        let mut t = Thinned::new(POINTS);
        for i in 1..=POINTS as u64 {
            t.push(second(i, 200.0));
        }
        assert_eq!((t.len(), t.width(), t.seconds()), (POINTS, 1, 600));
        assert!(t.points().iter().enumerate().all(|(i, p)| p.seconds == 1
            && p.first_t == i as u64 + 1
            && p.max == second(i as u64 + 1, 200.0)
            && p.mean() == p.max));
    }

    #[test]
    fn a_long_timeline_is_merged_and_its_spike_kept() {
        let mut t = Thinned::new(POINTS);
        for i in 1..=10_000u64 {
            t.push(second(i, if i == 7777 { 9000.0 } else { 200.0 }));
        }
        // 10,000 seconds in 32-second spans: 313 points, the last short.
        assert_eq!((t.width(), t.len(), t.seconds()), (32, 313, 10_000));
        let pts = t.points();
        assert!(pts.windows(2).all(|w| w[1].first_t == w[0].t() + 1));
        assert_eq!(
            (pts[0].first_t, pts[312].t(), pts[312].seconds),
            (1, 10_000, 16)
        );
        assert_eq!(pts.iter().map(|p| p.seconds).sum::<u64>(), 10_000);
        // The spike's span shows it at its height; its mean is diluted.
        let at = pts.iter().position(|p| (p.first_t..=p.t()).contains(&7777));
        let spike = &pts[at.unwrap()];
        assert_eq!(spike.max.read_p99_us, 9000.0);
        assert_eq!(spike.max.read_pct_over_1ms, 2.0);
        assert!((spike.mean().read_p99_us - (200.0 * 31.0 + 9000.0) / 32.0).abs() < 1e-9);
        assert_eq!(spike.mean().reads, 2000);
        assert!(pts.iter().filter(|p| p.max.read_p99_us > 200.0).count() == 1);
    }

    #[test]
    fn spikes_of_a_merged_timeline_are_spans_and_their_period_seconds() {
        // Two days with a slow second every hour: 512-second spans.
        let mut t = Thinned::new(POINTS);
        for i in 1..=172_800u64 {
            t.push(second(i, if i % 3600 == 1800 { 9000.0 } else { 200.0 }));
        }
        assert_eq!(t.width(), 512);
        let s = spikes_of(&t, |s| s.read_p99_us);
        assert_eq!(s.seconds.len(), 48, "{:?}", s.seconds);
        let p = s.period_s.expect("hourly");
        assert!(p.abs_diff(3600) <= 512, "{p}");
        // Each named second ends the span that holds a slow second.
        for (k, end) in s.seconds.iter().enumerate() {
            let slow = k as u64 * 3600 + 1800;
            assert!(slow <= *end && *end < slow + 512, "{k}: {end}");
        }
        // Unmerged, spikes are the seconds themselves.
        let mut short = Thinned::new(POINTS);
        for i in 1..=120u64 {
            short.push(second(i, if i % 15 == 0 { 5000.0 } else { 300.0 }));
        }
        let s = spikes_of(&short, |s| s.read_p99_us);
        assert_eq!(s.seconds, vec![15, 30, 45, 60, 75, 90, 105, 120]);
        assert_eq!(s.period_s, Some(15));
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
