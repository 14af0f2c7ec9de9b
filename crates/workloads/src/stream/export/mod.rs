//! The streaming suite's results in each output format: fio's text
//! summary, fio's JSON shape, and storcert's own JSON (the serialized
//! `StreamResult`, schema in docs/stream-schema.md).

pub mod fio_json;
pub mod text;

/// fio's num2str: the value in the largest unit that keeps at most four
/// integer digits, with three significant digits below 100.
pub fn fio_units(value: f64, binary: bool, suffix: &str) -> String {
    let (base, units): (f64, [&str; 6]) = if binary {
        (1024.0, ["", "Ki", "Mi", "Gi", "Ti", "Pi"])
    } else {
        (1000.0, ["", "k", "M", "G", "T", "P"])
    };
    let mut v = value;
    let mut u = 0;
    while v >= 10_000.0 && u < units.len() - 1 {
        v /= base;
        u += 1;
    }
    // fio moves up a unit once a value passes 1000 of it only when that
    // keeps 3 digits; values under 10000 stay as they are.
    let digits = if v >= 100.0 || u == 0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.digits$}");
    format!("{s}{}{suffix}", units[u])
}

#[cfg(test)]
mod tests {
    use super::fio_units;

    #[test]
    fn like_fio() {
        assert_eq!(fio_units(928.0 * 1048576.0, true, "B/s"), "928MiB/s");
        assert_eq!(fio_units(973.0e6, false, "B/s"), "973MB/s");
        assert_eq!(fio_units(64.0 * 1048576.0, true, "B"), "64.0MiB");
        assert_eq!(fio_units(67.1e6, false, "B"), "67.1MB");
        assert_eq!(fio_units(1585.0 * 1048576.0, true, "B/s"), "1585MiB/s");
        assert_eq!(fio_units(9.77 * 1048576.0, true, "B/s"), "9.77MiB/s");
        assert_eq!(fio_units(8388608.0, true, "B"), "8192KiB");
        assert_eq!(fio_units(0.0, true, "B"), "0B");
    }
}
