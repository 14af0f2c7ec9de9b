//! Units as storage people read them: capacities in decimal units, the way
//! drives are sold ("480.1 GB"), with the exact byte count kept in JSON.

pub fn decimal_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A block size as it is given ("1 MiB", "128 KiB", "1536 bytes"): binary,
/// as `bs=` options are.
pub fn block_size(bs: u32) -> String {
    match bs {
        b if b != 0 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b != 0 && b % 1024 == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_units() {
        assert_eq!(decimal_bytes(512), "512 B");
        assert_eq!(decimal_bytes(480_103_981_056), "480.1 GB");
        assert_eq!(decimal_bytes(1_000_000), "1.0 MB");
        assert_eq!(decimal_bytes(3_840_000_000_000), "3.8 TB");
        assert_eq!(block_size(1 << 20), "1 MiB");
        assert_eq!(block_size(128 << 10), "128 KiB");
        assert_eq!(block_size(1536), "1536 bytes");
        assert_eq!(block_size(0), "0 bytes");
    }
}

/// A span of seconds for people: "36 s", "12 min 5 s", "3 h 20 min".
pub fn duration_text(secs: f64) -> String {
    let s = if secs.is_finite() {
        secs.max(0.0).round() as u64
    } else {
        0
    };
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod duration_tests {
    #[test]
    fn spans_read_in_their_largest_units() {
        use super::duration_text as d;
        assert_eq!(
            [d(0.4), d(36.0), d(725.0), d(12_000.0), d(-5.0), d(f64::NAN)],
            ["0 s", "36 s", "12 min 5 s", "3 h 20 min", "0 s", "0 s"]
        );
    }
}
