//! The device's own view of a pass, from /proc/diskstats, as fio's "Disk
//! stats" block shows it: I/Os, merges, ticks, time in queue, utilisation.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
pub use storcert_results::stream::DiskUtil;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_ticks: u64,
    pub io_ticks: u64,
    pub in_queue: u64,
}

/// The block device holding `path`: itself if it is one, else the device
/// of the filesystem it lives on.
pub fn device_name(path: &Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let link = std::fs::read_link(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

pub fn parse(text: &str, name: &str) -> Option<Counters> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 14 || f[2] != name {
            return None;
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        Some(Counters {
            read_ios: n(3),
            read_merges: n(4),
            read_ticks: n(6),
            write_ios: n(7),
            write_merges: n(8),
            write_ticks: n(10),
            io_ticks: n(12),
            in_queue: n(13),
        })
    })
}

pub fn read(name: &str) -> Option<Counters> {
    parse(&std::fs::read_to_string("/proc/diskstats").ok()?, name)
}

pub fn delta(name: &str, a: Counters, b: Counters, elapsed_ms: f64) -> DiskUtil {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    let io_ticks = d(a.io_ticks, b.io_ticks);
    DiskUtil {
        name: name.to_string(),
        read_ios: d(a.read_ios, b.read_ios),
        write_ios: d(a.write_ios, b.write_ios),
        read_merges: d(a.read_merges, b.read_merges),
        write_merges: d(a.write_merges, b.write_merges),
        read_ticks: d(a.read_ticks, b.read_ticks),
        write_ticks: d(a.write_ticks, b.write_ticks),
        in_queue: d(a.in_queue, b.in_queue),
        util: if elapsed_ms > 0.0 {
            (io_ticks as f64 * 100.0 / elapsed_ms).min(100.0)
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_subtracts() {
        let a = "   7       0 loop0 100 2 800 50 200 3 1600 70 0 110 120 0 0 0 0\n 254 0 vda 1 1 1 1 1 1 1 1 0 1 1\n";
        let b = "   7       0 loop0 150 2 1200 60 400 5 3200 90 1 610 700 0 0 0 0\n";
        let (ca, cb) = (parse(a, "loop0").unwrap(), parse(b, "loop0").unwrap());
        let u = delta("loop0", ca, cb, 1000.0);
        assert_eq!(
            (u.read_ios, u.write_ios, u.write_merges, u.in_queue),
            (50, 200, 2, 580)
        );
        assert!((u.util - 50.0).abs() < 1e-9);
        assert!(parse(a, "sda").is_none());
    }
}
