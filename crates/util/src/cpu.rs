//! How busy the machine's CPUs were over a stretch of time, from the
//! kernel's own counters (/proc/stat): a search trial says it beside its
//! result, so a host that could not keep up is not mistaken for a drive
//! that could not.

/// The kernel's CPU time counters (all cores) at one moment, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    busy: u64,
    total: u64,
}

impl CpuTimes {
    /// Now; none where /proc/stat cannot be read (not Linux, no /proc).
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        CpuTimes::parse(stat.lines().next()?)
    }

    /// The "cpu" line: user nice system idle iowait irq softirq steal …;
    /// idle and iowait are not busy.
    fn parse(line: &str) -> Option<CpuTimes> {
        let mut fields = line.split_whitespace();
        if fields.next()? != "cpu" {
            return None;
        }
        let ticks: Vec<u64> = fields
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if ticks.len() < 4 {
            return None;
        }
        let total = ticks.iter().fold(0u64, |t, v| t.saturating_add(*v));
        let idle = ticks[3].saturating_add(ticks.get(4).copied().unwrap_or(0));
        Some(CpuTimes {
            busy: total.saturating_sub(idle),
            total,
        })
    }

    /// The busy share since `earlier`, in percent; none over no ticks.
    pub fn busy_pct_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let busy = self.busy.checked_sub(earlier.busy)?;
        (total > 0).then(|| (busy as f64 * 100.0 / total as f64).min(100.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_share_leaves_out_idle_and_iowait() {
        let a = CpuTimes::parse("cpu  100 0 100 700 100 0 0 0 0 0").unwrap();
        let b = CpuTimes::parse("cpu  400 0 200 900 100 0 0 0 0 0").unwrap();
        // 400 busy ticks of 600.
        let pct = b.busy_pct_since(&a).unwrap();
        assert!((pct - 66.666).abs() < 0.001, "{pct}");
        // No ticks between, or counters that went back: no share.
        assert_eq!(a.busy_pct_since(&a), None);
        assert_eq!(a.busy_pct_since(&b), None);
        for bad in ["", "cpu0 1 2 3 4", "cpu 1 2 x 4", "cpu 1 2"] {
            assert_eq!(CpuTimes::parse(bad), None, "{bad:?}");
        }
        assert!(CpuTimes::now().is_some());
    }
}
