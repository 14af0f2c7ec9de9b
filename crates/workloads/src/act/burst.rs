//! How many of a paced stream's requests fall due together. ACT's service
//! threads each issue their k-th request at the same instant, so its load
//! comes `service-threads` requests at a time; a stream that shares such a
//! burst (reads beside commit writes, a worker's part of a run's reads)
//! holds a part of it that need not be whole. Kept as an exact ratio, so
//! every part's bursts fall at the run's instants, never drifting apart.

/// `num / den` requests due at each instant, the instants `num / den`
/// requests' intervals apart: request k belongs to burst ⌊k · den / num⌋.
/// 1/1 paces evenly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    num: u64,
    den: u64,
}

impl Burst {
    pub const EVEN: Burst = Burst { num: 1, den: 1 };

    /// `num / den` requests at a time; None for a zero.
    pub fn new(num: u64, den: u64) -> Option<Burst> {
        Burst::reduced(u128::from(num), u128::from(den))
    }

    /// This burst's part `part / whole` (a worker's share of the drives),
    /// due at the same instants; the whole burst for a part of nothing.
    pub fn part(self, part: u64, whole: u64) -> Burst {
        let num = u128::from(self.num) * u128::from(part);
        let den = u128::from(self.den) * u128::from(whole);
        Burst::reduced(num, den).unwrap_or(self)
    }

    /// `num / den` in lowest terms; None for a zero, or terms past u64.
    fn reduced(num: u128, den: u128) -> Option<Burst> {
        if num == 0 || den == 0 {
            return None;
        }
        let g = gcd(num, den);
        Some(Burst {
            num: u64::try_from(num / g).ok()?,
            den: u64::try_from(den / g).ok()?,
        })
    }

    /// Requests a burst holds, on average.
    pub fn size(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// The burst request `k` belongs to.
    pub fn of(self, k: u64) -> u64 {
        (u128::from(k) * u128::from(self.den) / u128::from(self.num)) as u64
    }

    /// The first request of burst `b`: ⌈b · num / den⌉.
    pub fn first_of(self, b: u64) -> u64 {
        (u128::from(b) * u128::from(self.num)).div_ceil(u128::from(self.den)) as u64
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_bursts_hold_their_requests_and_parts_keep_the_instants() {
        let ten = Burst::new(10, 1).unwrap();
        assert_eq!((0..25).map(|k| ten.of(k)).max(), Some(2));
        assert_eq!([ten.of(9), ten.of(10), ten.first_of(1)], [0, 1, 10]);
        assert_eq!(Burst::new(0, 1), None);
        // A third of 10: bursts of 4, 3 and 3 requests, 10 in 3 bursts.
        let third = ten.part(1, 3);
        assert_eq!(third, Burst::new(10, 3).unwrap());
        let sizes: Vec<u64> = (0..3)
            .map(|b| third.first_of(b + 1) - third.first_of(b))
            .collect();
        assert_eq!(sizes, [4, 3, 3]);
        assert_eq!(third.of(3), 0);
        assert_eq!(third.of(4), 1);
        // Half a request a burst: one every other instant.
        let half = Burst::new(1, 2).unwrap();
        assert_eq!((0..4).map(|k| half.of(k)).collect::<Vec<_>>(), [0, 2, 4, 6]);
        assert_eq!(Burst::EVEN.of(7), 7);
        assert_eq!(Burst::EVEN.first_of(7), 7);
    }
}
