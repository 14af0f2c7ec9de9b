//! ACT's random numbers and buffer salting: xorshift128+, and rand_fill()
//! that zeroes (100 - compress-pct)% of every 512-byte interval so the
//! data compresses as configured.

pub struct Rng {
    s0: u64,
    s1: u64,
}

impl Rng {
    pub fn seeded(seed: u64) -> Rng {
        // splitmix64 to spread any seed over both words (never all zero).
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        };
        let s0 = next();
        let s1 = next() | 1;
        Rng { s0, s1 }
    }

    /// Seeded from the clock and the process id, as ACT seeds from time.
    pub fn from_entropy() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::seeded(t ^ ((std::process::id() as u64) << 32))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut s1 = self.s0;
        let s0 = self.s1;
        self.s0 = s0;
        s1 ^= s1 << 23;
        self.s1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        self.s1.wrapping_add(s0)
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }

    /// Fills `buf` (a multiple of 8 bytes) with random words; for each whole
    /// 512-byte interval only `rand_pct`% of the words are random, the rest
    /// zero, as ACT's rand_fill().
    pub fn fill(&mut self, buf: &mut [u8], rand_pct: u32) {
        const INTERVAL: usize = 512;
        const WORDS: usize = INTERVAL / 8;
        let intervals = if rand_pct < 100 {
            buf.len() / INTERVAL
        } else {
            0
        };
        let zeros = WORDS * (100 - rand_pct.min(100) as usize) / 100;
        let mut chunks = buf.chunks_exact_mut(8);
        for _ in 0..intervals {
            for (k, c) in chunks.by_ref().take(WORDS).enumerate() {
                let v = if k < zeros { 0 } else { self.next_u64() };
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        for c in chunks {
            let v = self.next_u64();
            c.copy_from_slice(&v.to_ne_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compress_pct_zeroes_its_share() {
        let mut rng = Rng::seeded(7);
        let mut buf = vec![0xffu8; 4096];
        rng.fill(&mut buf, 25);
        // 48 of every 64 words are zero.
        for interval in buf.chunks(512) {
            assert!(interval[..48 * 8].iter().all(|&b| b == 0));
            assert!(interval[48 * 8..].iter().any(|&b| b != 0));
        }
        let mut full = vec![0u8; 1536];
        rng.fill(&mut full, 100);
        assert!(full.chunks(8).filter(|w| w.iter().all(|&b| b == 0)).count() < 2);
    }

    #[test]
    fn streams_differ_by_seed() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::seeded(1);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::seeded(2);
                move |_| r.next_u64()
            })
            .collect();
        assert_ne!(a, b);
    }
}
