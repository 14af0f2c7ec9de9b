//! Sizes as fio and ACT users type them ("128G", "4k", "64MiB").

/// A size that could not be read; the message quotes it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0:?} is not a size like 128G, 1M or 4096")]
pub struct SizeError(pub String);

/// "128G", "1M", "4k", "512", "1.5T", "64MiB" → bytes (K/M/G/T: 1024-based,
/// as fio reads them).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
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
        _ => Err(SizeError(text.to_string())),
    }
}

/// The machine's memory from the text of /proc/meminfo ("MemTotal: N kB"),
/// in bytes.
pub fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
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
}
