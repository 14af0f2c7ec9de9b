//! Search trials decided by statistics (`act search --statistical`).
//!
//! A trial's reads are taken as draws, each over a rule's latency with
//! some fixed chance p; ACT's rule asks whether p is under the limit
//! (5% over 1 ms, 1% over 8 ms, 0.1% over 64 ms). After each report, with
//! k of n reads over a limit so far, the bound used is Chernoff's in its
//! relative-entropy form: for k/n above the limit,
//! P(X ≥ k | n, limit) ≤ exp(−n·D(k/n ‖ limit)), and for k/n below it,
//! P(X ≤ k | n, limit) ≤ the same. It bounds the exact binomial tail (the
//! one-sided Clopper–Pearson test's p-value) from above, so a decision it
//! takes the exact test would take too, at the same level: it is the more
//! cautious of the two, and needs no special functions to stay exact at
//! the tens of millions of reads an hour at 300x holds.
//!
//! A trial fails early once, for some rule, the reads over its limit are
//! too many to come by chance at a share under it; it passes early (no
//! sooner than a quarter of its length, in its last slice) once, for
//! every rule, they are too few to come by chance at a share at or over
//! it, counting every read still in flight as over every limit. Each such
//! test is run at α′ = α / (3 × histograms × reports), so that over the
//! whole trial (its every report, rule and judged histogram: a union
//! bound) the chance of an early decision the wrong way is at most α,
//! 0.1% by default. What this cannot see: a drive's latency is not a
//! series of independent draws (garbage collection comes in bursts, a
//! cache fills), so the bound holds for the model, not the drive; the
//! answer still rests on the confirmation, which always runs its full
//! length.

/// The chance of a wrong early decision over a whole trial that
/// `--statistical` allows: 0.1% (99.9% confidence).
pub const ALPHA: f64 = 0.001;

/// A trial may pass early after this share of its length (so that what
/// comes on slowly, a cache filling, has time to show).
pub const PASS_AFTER: f64 = 0.25;

/// ln of the Chernoff bound on the binomial tail on k's side of p:
/// P(X ≥ k | n, p) where k/n > p, P(X ≤ k | n, p) where k/n < p. 0 (a
/// bound of 1, nothing known) where k/n is p or n is 0.
pub fn ln_tail_bound(k: u64, n: u64, p: f64) -> f64 {
    if n == 0 || !(0.0..1.0).contains(&p) || p == 0.0 {
        return 0.0;
    }
    let q = (k.min(n) as f64) / n as f64;
    -(n as f64) * relative_entropy(q, p)
}

/// D(q ‖ p) for Bernoulli draws, with 0·ln 0 = 0.
fn relative_entropy(q: f64, p: f64) -> f64 {
    let term = |a: f64, b: f64| if a == 0.0 { 0.0 } else { a * (a / b).ln() };
    (term(q, p) + term(1.0 - q, 1.0 - p)).max(0.0)
}

/// The statistical tests of one trial: their level, and from when it may
/// pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// ln α′, each test's own level (α shared over every test).
    pub ln_level: f64,
    /// The report after which a pass may be decided (ns from the start).
    pub pass_after_ns: u64,
}

impl Sampling {
    /// `alpha` over `histograms` judged histograms, three rules each, at
    /// each of `reports` reports of a run `end_ns` long.
    pub fn new(alpha: f64, histograms: usize, reports: u64, end_ns: u64) -> Sampling {
        let tests = 3.0 * histograms.max(1) as f64 * reports.max(1) as f64;
        Sampling {
            ln_level: (alpha / tests).ln(),
            pass_after_ns: (end_ns as f64 * PASS_AFTER) as u64,
        }
    }

    /// Whether k over a limit of n reads is too many for a share under
    /// `limit` (the slice is failing).
    pub fn fails(&self, k: u64, n: u64, limit: f64) -> bool {
        n > 0 && k as f64 >= limit * n as f64 && ln_tail_bound(k, n, limit) < self.ln_level
    }

    /// Whether k over a limit of n reads is too few for a share at or
    /// over `limit` (the slice is passing).
    pub fn passes(&self, k: u64, n: u64, limit: f64) -> bool {
        n > 0 && (k as f64) < limit * n as f64 && ln_tail_bound(k, n, limit) < self.ln_level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ln of the exact binomial tail on k's side of n·p (small n only).
    fn ln_exact_tail(k: u64, n: u64, p: f64) -> f64 {
        let ln_choose =
            |n: u64, i: u64| -> f64 { (1..=i).map(|j| ((n - i + j) as f64 / j as f64).ln()).sum() };
        let side: Vec<u64> = if k as f64 > p * n as f64 {
            (k..=n).collect()
        } else {
            (0..=k).collect()
        };
        let terms: Vec<f64> = side
            .into_iter()
            .map(|i| ln_choose(n, i) + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln())
            .collect();
        let top = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln()
    }

    #[test]
    fn the_bound_is_never_below_the_exact_tail_on_either_side() {
        for n in [10u64, 100, 1000, 3000] {
            for p in [0.05, 0.01, 0.001] {
                for k in (0..=n).step_by((n / 50).max(1) as usize) {
                    let exact = ln_exact_tail(k, n, p);
                    let bound = ln_tail_bound(k, n, p);
                    assert!(
                        bound >= exact - 1e-9,
                        "n {n} k {k} p {p}: {bound} < {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_bound_is_close_enough_to_decide_at_real_counts() {
        // 7% of 20,000 reads over 1 ms, at a share of 5%: the exact tail
        // is e^-78.6, the bound e^-75.3 (a factor of 27, where the test's
        // level is e^-12 or less).
        let b = ln_tail_bound(1400, 20_000, 0.05);
        assert!((-75.4..-75.2).contains(&b), "{b}");
        // 4% of 20,000 on the other side: exact e^-25.2, bound e^-22.5.
        let b = ln_tail_bound(800, 20_000, 0.05);
        assert!((-22.6..-22.4).contains(&b), "{b}");
        // Exactly at the limit nothing is known.
        assert_eq!(ln_tail_bound(1000, 20_000, 0.05), 0.0);
        assert_eq!(ln_tail_bound(0, 0, 0.05), 0.0);
    }

    #[test]
    fn the_level_is_shared_over_every_test_of_the_trial() {
        // 60 reports, one histogram, three rules: 180 tests at 0.1%.
        let s = Sampling::new(ALPHA, 1, 60, 60_000_000_000);
        assert!((s.ln_level - (0.001f64 / 180.0).ln()).abs() < 1e-12);
        assert_eq!(s.pass_after_ns, 15_000_000_000);
        // No read over 64 ms in 10,000 is not yet enough to pass 0.1%
        // (it would come by chance at 0.1% e^-10 of the time), 20,000 is.
        assert!(!s.passes(0, 10_000, 0.001));
        assert!(s.passes(0, 20_000, 0.001));
        assert!(s.fails(700, 10_000, 0.05));
        assert!(!s.fails(520, 10_000, 0.05));
        assert!(!s.passes(520, 10_000, 0.05) && !s.fails(480, 10_000, 0.05));
    }
}
