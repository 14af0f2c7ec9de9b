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
    /// zero, as ACT's rand_fill(). The words come from four xorshift128+
    /// generators seeded from this one, in turn: the same generator as
    /// ACT's, with four chains the CPU runs at once instead of one it waits
    /// on (salting every large block at 200x on eight drives is 4.8 GB/s of
    /// random data, half a wide run's CPU with one chain).
    pub fn fill(&mut self, buf: &mut [u8], rand_pct: u32) {
        const INTERVAL: usize = 512;
        const WORDS: usize = INTERVAL / 8;
        let mut lanes = Lanes::from(self);
        let zeros = match rand_pct < 100 {
            true => WORDS * (100 - rand_pct as usize) / 100,
            false => 0,
        };
        let whole = match zeros {
            0 => 0,
            _ => buf.len() / INTERVAL * INTERVAL,
        };
        let (intervals, rest) = buf.split_at_mut(whole);
        for interval in intervals.chunks_exact_mut(INTERVAL) {
            let (zero, random) = interval.split_at_mut(zeros * 8);
            zero.fill(0);
            lanes.fill(random);
        }
        lanes.fill(rest);
    }
}

/// Four generators taking turns, one word each.
struct Lanes([Rng; 4]);

impl Lanes {
    fn from(rng: &mut Rng) -> Lanes {
        let mut lane = || Rng {
            s0: rng.next_u64(),
            s1: rng.next_u64() | 1,
        };
        Lanes([lane(), lane(), lane(), lane()])
    }

    /// Random words into `buf`, whole words only.
    fn fill(&mut self, buf: &mut [u8]) {
        // Each word stored as an array, not copied from a slice: built for
        // size, copy_from_slice was a call to memcpy for every 8 bytes.
        let word = |c: &mut [u8], v: u64| {
            if let Ok(w) = <&mut [u8; 8]>::try_from(c) {
                *w = v.to_ne_bytes();
            }
        };
        let mut groups = buf.chunks_exact_mut(32);
        for g in groups.by_ref() {
            let (a, b) = g.split_at_mut(16);
            let (w0, w1) = a.split_at_mut(8);
            let (w2, w3) = b.split_at_mut(8);
            let [l0, l1, l2, l3] = &mut self.0;
            word(w0, l0.next_u64());
            word(w1, l1.next_u64());
            word(w2, l2.next_u64());
            word(w3, l3.next_u64());
        }
        for w in groups.into_remainder().chunks_exact_mut(8) {
            word(w, self.0[0].next_u64());
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
    fn a_large_block_s_words_are_all_different() {
        // 16,384 words of a 128 KiB block from the four generators: no
        // word twice (a lane repeating another, or a block the last's,
        // would show), and no zero word.
        let mut rng = Rng::seeded(3);
        let mut block = vec![0u8; 128 << 10];
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2 {
            rng.fill(&mut block, 100);
            for w in block.chunks(8) {
                assert!(seen.insert(w.to_vec()), "a word twice");
            }
        }
        assert!(!seen.contains(&vec![0u8; 8]));
        // A length that is no multiple of 32 bytes is filled to its end.
        let mut odd = vec![0u8; 40];
        rng.fill(&mut odd, 100);
        assert!(odd[32..].iter().any(|&b| b != 0));
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
