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

/// "128G", "1M", "4k", "512", "1.5T", "64MiB" → bytes (K/M/G/T: 1024-based,
/// as fio reads them).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_end_matches("ib").trim_end_matches('b');
    let (num, mult) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1u64 << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        Some('t') => (&body[..body.len() - 1], 1 << 40),
        _ => (body, 1),
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v * (mult as f64) < 1.8e19 => {
            Ok((v * mult as f64) as u64)
        }
        _ => Err(format!("{text:?} is not a size like 128G, 1M or 4096")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128G").unwrap(), 128 << 30);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn decimal_units() {
        assert_eq!(decimal_bytes(512), "512 B");
        assert_eq!(decimal_bytes(480_103_981_056), "480.1 GB");
        assert_eq!(decimal_bytes(1_000_000), "1.0 MB");
        assert_eq!(decimal_bytes(3_840_000_000_000), "3.8 TB");
    }
}
