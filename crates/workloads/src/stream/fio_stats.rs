//! What fio counts of each job beside its bandwidth, counted the way fio
//! counts it (stat.c, io_u.c), so storcert's fio JSON carries the same
//! figures: completion latencies in fio's log-linear bins (json+), the
//! latency distribution in fio's ns/us/ms buckets, the I/O depth at each
//! submission, and how many I/Os each submit and reap call moved.

pub use storcert_results::stream::FioCounts;

/// fio's FIO_IO_U_PLAT_BITS, _VAL and _NR: 64 linear bins per power of two.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's plat_val_to_idx.
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((PLAT_VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// fio's plat_idx_to_val: the middle of the bin's range.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL as usize) << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx as u64) % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// fio's io_u_mark_depth index: 1, 2, 4, 8, 16, 32, >=64.
fn depth_idx(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's io_u_mark_submit/complete index: 0, 4, 8, 16, 32, 64, >=64.
fn batch_idx(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's io_u_mark_lat_nsec/usec/msec bucket of a value under 1000 (ms
/// also 1000..2000 and beyond): 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000.
fn lat_idx(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

/// Counting as a job runs (bins held dense while counting).
#[derive(Debug, Clone)]
pub struct Counter {
    bins: Vec<u64>,
    lat: [[u64; 12]; 3],
    depth: [u64; 7],
    submit: [u64; 7],
    complete: [u64; 7],
}

impl Default for Counter {
    fn default() -> Counter {
        Counter {
            bins: vec![0; PLAT_NR],
            lat: [[0; 12]; 3],
            depth: [0; 7],
            submit: [0; 7],
            complete: [0; 7],
        }
    }
}

impl Counter {
    /// One completion `ns` after its submission.
    pub fn completed(&mut self, ns: u64) {
        self.bins[plat_val_to_idx(ns)] += 1;
        let (unit, v) = if ns < 1000 {
            (0, ns)
        } else if ns < 1_000_000 {
            (1, ns / 1000)
        } else {
            (2, ns / 1_000_000)
        };
        self.lat[unit][lat_idx(v)] += 1;
    }

    /// One I/O submitted with `depth` now in flight.
    pub fn submitted_at(&mut self, depth: u32) {
        self.depth[depth_idx(depth)] += 1;
    }

    /// A submit call that queued `n` I/Os of this job.
    pub fn submit_call(&mut self, n: u32) {
        if n > 0 {
            self.submit[batch_idx(n)] += 1;
        }
    }

    /// A reap call that completed `n` I/Os of this job.
    pub fn complete_call(&mut self, n: u32) {
        if n > 0 {
            self.complete[batch_idx(n)] += 1;
        }
    }

    pub fn finish(&self) -> FioCounts {
        FioCounts {
            clat_bins: self
                .bins
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            lat_ns: self.lat[0][..10].to_vec(),
            lat_us: self.lat[1][..10].to_vec(),
            lat_ms: self.lat[2].to_vec(),
            depth: self.depth.to_vec(),
            submit: self.submit.to_vec(),
            complete: self.complete.to_vec(),
        }
    }
}

/// fio's default completion latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's calc_clat_percentiles over sparse bins: each percentile's value is
/// the middle of the first bin where the running count reaches it.
pub fn percentiles(bins: &[(u32, u64)]) -> Vec<(f64, u64)> {
    let total: u64 = bins.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut sum = 0u64;
    let mut want = PERCENTILES.iter().peekable();
    for &(idx, count) in bins {
        sum += count;
        while let Some(&&p) = want.peek() {
            if sum as f64 >= p / 100.0 * total as f64 {
                out.push((p, plat_idx_to_val(idx as usize)));
                want.next();
            } else {
                break;
            }
        }
    }
    out
}

/// Each count as a percentage of `total`, at least `floor` where any
/// (fio shows a rare event as its floor, not as 0).
fn shares(map: &[u64], total: u64, floor: f64) -> Vec<f64> {
    map.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let p = c as f64 * 100.0 / total as f64;
            if p < floor && c > 0 {
                floor
            } else {
                p
            }
        })
        .collect()
}

/// fio's stat_calc_dist (I/O depths, batches): floor 0.1.
pub fn dist(map: &[u64], total: u64) -> Vec<f64> {
    shares(map, total, 0.1)
}

/// fio's stat_calc_lat (a share of all I/Os): floor 0.01.
pub fn lat_dist(map: &[u64], total: u64) -> Vec<f64> {
    shares(map, total, 0.01)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_as_fio_makes_them() {
        // Exact below 128, then 64 bins per power of two.
        assert_eq!(plat_val_to_idx(0), 0);
        assert_eq!(plat_val_to_idx(127), 127);
        assert_eq!(plat_idx_to_val(127), 127);
        // 79360 ns, a bin key fio wrote for a real job, is the middle of
        // the bin of the values around it.
        let idx = plat_val_to_idx(79_300);
        assert_eq!(plat_idx_to_val(idx), 79_360);
        for v in [200u64, 4_227_072, 108_032, 1 << 40] {
            let i = plat_val_to_idx(v);
            let mid = plat_idx_to_val(i);
            assert_eq!(plat_val_to_idx(mid), i, "{v}");
        }
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_distributions_and_buckets() {
        let mut c = Counter::default();
        for ns in [500, 1500, 20_000, 20_000, 3_000_000] {
            c.completed(ns);
        }
        let f = c.finish();
        assert_eq!(f.lat_ns[8], 1); // 500 ns: 500..749
        assert_eq!(f.lat_us[0] + f.lat_us[4], 3); // 1 us and 20 us
        assert_eq!(f.lat_ms[1], 1); // 3 ms: 2..3
        let p = percentiles(&f.clat_bins);
        assert_eq!(p.len(), PERCENTILES.len());
        // The 1st percentile is the middle of 500 ns's bin, as fio gives it.
        assert_eq!(p[0].1, plat_idx_to_val(plat_val_to_idx(500)));
        assert!(p.iter().all(|(_, v)| *v >= 500));
        assert_eq!(dist(&[1, 999], 1000), vec![0.1, 99.9]);
        assert_eq!(lat_dist(&[0, 1], 100_000), vec![0.0, 0.01]);
    }
}
