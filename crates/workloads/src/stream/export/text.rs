//! fio's human summary: per-job lines, then "Run status group" and "Disk
//! stats" blocks, so people comparing with fio read the same shape.

use std::fmt::Write as _;

use super::super::{Pass, PassResult, StreamResult};
use super::fio_units;

fn direction(p: Pass) -> (&'static str, &'static str) {
    match p {
        Pass::Write => ("write", "WRITE"),
        Pass::Read => ("read", " READ"),
    }
}

pub fn render(r: &StreamResult) -> String {
    let mut s = String::new();
    for pass in &r.passes {
        let (lower, _) = direction(pass.pass);
        for j in &pass.jobs {
            let err = if j.error.is_some() { 5 } else { 0 };
            let _ = writeln!(
                s,
                "{}: (groupid=0, jobs=1): err={err:>2}: pass={lower}",
                j.name
            );
            let _ = writeln!(
                s,
                "  {lower}: IOPS={:.0}, BW={} ({})({}/{}msec)",
                j.iops,
                fio_units(j.bw_bytes, true, "B/s"),
                fio_units(j.bw_bytes, false, "B/s"),
                fio_units(j.bytes as f64, true, "B"),
                j.runtime_ms
            );
            let us = |ns: f64| ns / 1000.0;
            let c = &j.clat;
            let _ = writeln!(
                s,
                "    clat (usec): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
                us(c.min_ns as f64),
                us(c.max_ns as f64),
                us(c.mean_ns),
                us(c.stddev_ns)
            );
            let _ = writeln!(s, "     clat percentiles (usec):");
            for row in c.percentiles.chunks(4) {
                let cells: Vec<String> = row
                    .iter()
                    .map(|(p, ns)| format!("{p:5.2}th=[{:>6}]", ns / 1000))
                    .collect();
                let _ = writeln!(s, "     | {}", cells.join(", "));
            }
            if let Some(e) = &j.error {
                let _ = writeln!(s, "  error: {e}");
            }
        }
    }
    let _ = writeln!(s, "\nRun status group 0 (all jobs):");
    for pass in &r.passes {
        let _ = writeln!(s, "{}", group_line(pass));
    }
    let disks = r.disks();
    if !disks.is_empty() {
        let _ = writeln!(s, "\nDisk stats (read/write):");
        // One line per device, over the passes, as fio does.
        for d in &disks {
            let _ = writeln!(
                s,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    for pass in &r.passes {
        if let Some(v) = &pass.verify {
            let _ = writeln!(
                s,
                "\nverify: {} blocks checked, {} bad",
                v.blocks_checked, v.bad_blocks
            );
            for b in &v.first_bad {
                let _ = writeln!(s, "  {b}");
            }
        }
        if pass.interrupted {
            let _ = writeln!(
                s,
                "\n{} pass interrupted: the figures cover what was done",
                direction(pass.pass).0
            );
        }
    }
    s
}

/// "  WRITE: bw=1585MiB/s (1661MB/s), 1585MiB/s-1585MiB/s (1661MB/s-1661MB/s), io=128GiB (137GB), run=82712-82712msec"
pub fn group_line(p: &PassResult) -> String {
    let g = &p.group;
    let (_, upper) = direction(p.pass);
    let min = if g.min_bw_bytes.is_finite() {
        g.min_bw_bytes
    } else {
        0.0
    };
    format!(
        "  {upper}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
        fio_units(g.aggr_bw_bytes, true, "B/s"),
        fio_units(g.aggr_bw_bytes, false, "B/s"),
        fio_units(min, true, "B/s"),
        fio_units(g.max_bw_bytes, true, "B/s"),
        fio_units(min, false, "B/s"),
        fio_units(g.max_bw_bytes, false, "B/s"),
        fio_units(g.bytes as f64, true, "B"),
        fio_units(g.bytes as f64, false, "B"),
        g.min_runtime_ms,
        g.max_runtime_ms
    )
}

/// dd mode's summary: per pass, the dd command it is the equal of, then
/// dd's own closing line, so the write and the read are told apart and
/// each "copied" line still reads as dd's.
pub fn dd_summary(r: &StreamResult) -> String {
    let targets: Vec<&str> = r.targets.iter().map(|t| t.path.as_str()).collect();
    let bs = r.bs;
    let flag = |io: &str| {
        if r.direct {
            format!(" {io}flag=direct")
        } else {
            String::new()
        }
    };
    let mut out = String::new();
    for p in &r.passes {
        for t in &targets {
            let t = storcert_util::text::printable(t, 200);
            out += &match p.pass {
                Pass::Write => format!("write: as dd if=/dev/zero of={t} bs={bs}{}\n", flag("o")),
                Pass::Read => format!("read: as dd if={t} of=/dev/null bs={bs}{}\n", flag("i")),
            };
        }
        out += &dd_line(p);
        out.push('\n');
    }
    out
}

/// dd's closing line: "134217728 bytes (134 MB, 128 MiB) copied, 0.0881 s, 1.5 GB/s".
pub fn dd_line(p: &PassResult) -> String {
    let g = &p.group;
    let secs = g.max_runtime_ms as f64 / 1000.0;
    let rate = if secs > 0.0 {
        g.bytes as f64 / secs
    } else {
        0.0
    };
    let short = |v: f64, base: f64, units: [&str; 5]| {
        let mut v = v;
        let mut u = 0;
        while v >= base && u < 4 {
            v /= base;
            u += 1;
        }
        if v >= 10.0 {
            format!("{v:.0} {}", units[u])
        } else {
            format!("{v:.1} {}", units[u])
        }
    };
    format!(
        "{} bytes ({}, {}) copied, {:.4} s, {}/s",
        g.bytes,
        short(g.bytes as f64, 1000.0, ["B", "kB", "MB", "GB", "TB"]),
        short(g.bytes as f64, 1024.0, ["B", "KiB", "MiB", "GiB", "TiB"]),
        secs,
        short(rate, 1000.0, ["B", "kB", "MB", "GB", "TB"])
    )
}
