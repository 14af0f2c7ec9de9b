//! The analysis of an ACT log, as upstream's analysis/act_latency.py does it
//! (same options, same table, digit for digit), plus the verdict against
//! ACT's pass criteria (`judge`, the same whatever the table shows) and a
//! JSON form of both.

use std::fmt::Write as _;

pub use crate::results::act::{Analysis, Failure, HistTable, SliceRow, Verdict};
use crate::results::act::{DeviceVerdict, LogAnalysis, ANALYSIS_SCHEMA};

/// act_latency.py's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub log: String,
    pub histograms: Vec<String>,
    pub slice: u64,
    pub start_bucket: usize,
    pub num_buckets: usize,
    pub every_nth: usize,
    pub extra: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            log: String::new(),
            histograms: Vec::new(),
            slice: 3600,
            start_bucket: 0,
            num_buckets: 7,
            every_nth: 1,
            extra: false,
        }
    }
}

/// Buckets act_latency.py can read (labels "00" to "16").
const ALL_BUCKETS: usize = 17;
const GAP: &str = "  ";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AnalyzeError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, AnalyzeError> {
    Err(AnalyzeError(msg.into()))
}

/// ACT's hourly slices; a run shorter than an hour is judged as one slice
/// of its whole length (act_latency.py needs a whole slice of data).
pub fn judging_slice(text: &str) -> u64 {
    let last = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("after ")?
                .strip_suffix(" sec:")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    if last > 0 && last < 3600 {
        last
    } else {
        3600
    }
}

/// Loads and devices from an ACT log's configuration echo.
pub fn act_log_setup(text: &str) -> (Vec<String>, Option<f64>) {
    let mut devices = Vec::new();
    let mut names = String::new();
    let mut reads = None;
    let mut count = None;
    for line in text.lines().take(200) {
        if let Some(d) = line.strip_prefix("device-names: ") {
            names = d.trim().to_string();
            devices = d
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
        } else if let Some(r) = line.strip_prefix("read-reqs-per-sec: ") {
            reads = r.trim().parse::<f64>().ok();
        } else if let Some(n) = line.strip_prefix("num-devices: ") {
            count = n.trim().parse::<usize>().ok();
        }
    }
    // One device whose path has a space in it (a scratch file in such a
    // folder), as the header's own count says.
    if count == Some(1) && devices.len() > 1 {
        devices = vec![names];
    }
    let load = reads
        .filter(|_| !devices.is_empty())
        .map(|r| r / 2000.0 / devices.len() as f64);
    (devices, load)
}

/// The one analysis of a finished run's log, made right after the run and
/// saved beside it (`LogAnalysis`): ACT's hourly slices (a shorter run is
/// one slice), microsecond logs shown from the 1.024 ms edge so their
/// columns are the ms-equivalent ones. The verdict does not depend on the
/// displayed columns.
/// `label` names the log in the analysis text, as act_latency.py echoes
/// its argument.
pub fn judge_log(
    data: &[u8],
    log_name: &str,
    label: &str,
    timeline: Option<String>,
) -> Result<LogAnalysis, AnalyzeError> {
    let text = &String::from_utf8_lossy(data);
    let micro = text
        .lines()
        .take(60)
        .any(|l| l.trim() == "microsecond-histograms: yes");
    let opts = Options {
        log: label.to_string(),
        slice: judging_slice(text),
        start_bucket: if micro { 10 } else { 0 },
        ..Options::default()
    };
    let analysis = analyze(text, &opts, label)?;
    let (devices, load) = act_log_setup(text);
    let index = text
        .lines()
        .take(5)
        .any(|l| l.starts_with("Index device IO test"));
    // storcert's banner: "(ACT-compatible log; open-loop ENGINE scheduler",
    // looked for in the whole header (lines in front cannot hide it).
    let engine = text
        .lines()
        .take_while(|l| !l.starts_with("after "))
        .find_map(|l| {
            let rest = l.split_once("open-loop ")?.1;
            Some(rest.split_once(" scheduler")?.0.to_string())
        });
    // Each drive's own share of a storage run over several; a log naming
    // more drives than ACT takes is not a run ACT could make.
    let mut analysis = analysis;
    let mut per_device = Vec::new();
    if devices.len() > crate::act::config::MAX_STORAGE_DEVICES {
        analysis.verdict.pass = false;
        analysis.verdict.problems.push(format!(
            "the log names {} drives, more than ACT's {}",
            devices.len(),
            crate::act::config::MAX_STORAGE_DEVICES
        ));
    } else if !index && devices.len() > 1 && devices.iter().all(|d| d.len() <= 255) {
        let names: Vec<String> = devices.iter().map(|d| format!("{d}-reads")).collect();
        per_device = devices
            .iter()
            .zip(crate::act::judge::judge_histograms(text, &names))
            .map(|(d, verdict)| DeviceVerdict {
                device: d.clone(),
                verdict,
            })
            .collect();
    }
    Ok(LogAnalysis {
        schema_version: ANALYSIS_SCHEMA,
        log: log_name.to_string(),
        log_sha256: crate::util::sha256_hex(data),
        workload: if index { "index" } else { "storage" }.into(),
        devices,
        load,
        timeline,
        engine,
        analysis,
        per_device,
    })
}

/// Where a log's analysis is saved: "act/x.log" → "act/x.analysis.json".
pub fn analysis_path(log: &std::path::Path) -> std::path::PathBuf {
    log.with_extension("analysis.json")
}

/// Python's round(x, 2): the correctly rounded decimal, as a double.
fn round_to(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

struct Lines<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

impl<'a> Lines<'a> {
    /// The next line with its newline, as Python's readline(); "" at EOF.
    fn readline(&mut self) -> &'a str {
        let l = self.lines.get(self.pos).copied().unwrap_or("");
        self.pos += 1;
        l
    }

    fn seek0(&mut self) {
        self.pos = 0;
    }
}

fn split_keep(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

struct Hist {
    name: String,
    pre_pad: String,
    old_total: u64,
    old_values: Vec<u64>,
    /// Operations in the latest slice.
    slice_total: u64,
    overs: Vec<f64>,
    rate: f64,
    avg_rate: f64,
    max_rate: f64,
    avg_overs: Vec<f64>,
    max_overs: Vec<f64>,
    rows: Vec<SliceRow>,
}

fn bucket_value(line: &str, b: usize) -> Result<Option<u64>, AnalyzeError> {
    let pat = format!("({b:02}: ");
    let Some(i) = line.find(&pat) else {
        return Ok(None);
    };
    let rest = &line[i + pat.len()..];
    let Some(end) = rest.find(')') else {
        return Ok(None);
    };
    rest[..end].trim().parse().map(Some).map_err(|_| {
        AnalyzeError(format!(
            "bad bucket count {:?} in line {:?}",
            &rest[..end],
            line.trim_end()
        ))
    })
}

/// Runs the analysis and returns the text act_latency.py would print, the
/// tables as data and the verdict.
pub fn analyze(log_text: &str, opts: &Options, argv_echo: &str) -> Result<Analysis, AnalyzeError> {
    if opts.slice < 1 {
        return err("slice must be more than 0");
    }
    if opts.start_bucket >= ALL_BUCKETS {
        return err(format!(
            "start_bucket must be non-negative and less than {ALL_BUCKETS}"
        ));
    }
    if opts.num_buckets < 1 {
        return err("num_buckets must be more than 0");
    }
    if opts.every_nth < 1 {
        return err("every_nth must be more than 0");
    }
    let mut out = String::new();
    let _ = writeln!(out, "act_latency.py {argv_echo}");
    let mut f = Lines {
        lines: split_keep(log_text),
        pos: 0,
    };

    // Version.
    let mut line = f.readline();
    while !line.is_empty() && !line.starts_with("ACT version") {
        line = f.readline();
    }
    if line.is_empty() {
        return err(format!("{} ACT version not found", opts.log));
    }
    let version = line
        .split(' ')
        .nth(2)
        .map(str::trim)
        .unwrap_or("")
        .to_string();
    let _ = writeln!(out, "{} is ACT version {}\n", opts.log, version);
    let numeric: f64 = version.parse().map_err(|_| {
        AnalyzeError(format!(
            "{} ACT version {version:?} is not a number",
            opts.log
        ))
    })?;
    if !(6.0..7.0).contains(&numeric) {
        return err(format!(
            "{} ACT version not compatible (version {version}, need 6.x)",
            opts.log
        ));
    }

    // Reporting interval.
    line = f.readline();
    while !line.is_empty() && !line.starts_with("report-interval-sec") {
        line = f.readline();
    }
    if line.is_empty() {
        return err("can't find report interval");
    }
    let interval: u64 = line
        .split(' ')
        .nth(1)
        .map(str::trim)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| AnalyzeError(format!("bad report interval line {:?}", line.trim_end())))?;
    if interval < 1 {
        return err("reporting interval must be more than 0");
    }

    // Scale.
    let mut scale_label = " %>(ms)";
    f.seek0();
    line = f.readline();
    while !line.is_empty() && !line.starts_with("microsecond-histograms") {
        line = f.readline();
    }
    if line.is_empty() {
        let _ = writeln!(out, "can't find histograms' scale, assuming milliseconds");
        f.seek0();
    } else if line.split(' ').nth(1).is_some_and(|v| v.starts_with('y')) {
        scale_label = " %>(us)";
    }
    let microseconds = scale_label == " %>(us)";

    let slice_time = opts.slice.div_ceil(interval) * interval;
    if slice_time != opts.slice {
        let _ = writeln!(out, "analyzing time slices of {slice_time} seconds");
    }

    // Echo the configuration.
    f.seek0();
    line = f.readline();
    while !line.is_empty() && !line.ends_with("CONFIGURATION\n") {
        line = f.readline();
    }
    if line.is_empty() {
        return err("can't find configuration");
    }
    let mut histograms = opts.histograms.clone();
    if line.starts_with("ACT-STORAGE") || line.starts_with("ACT-INDEX") {
        if histograms.is_empty() {
            histograms = vec!["reads".into()];
        }
    } else {
        return err("can't recognize configuration");
    }
    let mut l = line.trim();
    while !l.is_empty() {
        let _ = writeln!(out, "{l}");
        l = f.readline().trim();
    }
    let _ = writeln!(out);
    line = f.readline();
    while !line.is_empty() && !line.starts_with("DERIVED CONFIGURATION") {
        line = f.readline();
    }
    if line.is_empty() {
        return err("can't find derived configuration");
    }
    l = line.trim();
    while !l.is_empty() {
        let _ = writeln!(out, "{l}");
        l = f.readline().trim();
    }
    let _ = writeln!(out);

    // Echo the histogram names.
    f.seek0();
    line = f.readline();
    while !line.is_empty() && line != "HISTOGRAM NAMES\n" {
        line = f.readline();
    }
    if line.is_empty() {
        return err("can't find histogram names");
    }
    l = line.trim();
    while !l.is_empty() {
        let _ = writeln!(out, "{l}");
        l = f.readline().trim();
    }
    let _ = writeln!(out);

    // find_max_bucket()
    let mut max_bucket = 0;
    let mut left = opts.num_buckets;
    let mut b = opts.start_bucket;
    while b < ALL_BUCKETS {
        max_bucket = b + 1;
        if left == 1 {
            break;
        }
        left -= 1;
        b += opts.every_nth;
    }
    let display: Vec<usize> = (opts.start_bucket..max_bucket)
        .step_by(opts.every_nth)
        .collect();

    let mut hists: Vec<Hist> = histograms
        .iter()
        .map(|name| Hist {
            name: name.clone(),
            pre_pad: String::new(),
            old_total: 0,
            old_values: vec![0; max_bucket],
            slice_total: 0,
            overs: vec![0.0; max_bucket],
            rate: 0.0,
            avg_rate: 0.0,
            max_rate: 0.0,
            avg_overs: vec![0.0; max_bucket],
            max_overs: vec![0.0; max_bucket],
            rows: Vec::new(),
        })
        .collect();

    // print_table_header()
    let mut labels = String::new();
    let mut underline_t = String::new();
    for &i in &display {
        let _ = write!(labels, "{:>7}", 1u64 << i);
        underline_t.push_str(" ------");
    }
    if opts.extra {
        labels.push_str("       rate");
        underline_t.push_str(" ----------");
    }
    let len_table = labels.len();
    for i in 1..hists.len() {
        let prev = 1 + hists[i - 1].name.len();
        if prev > len_table {
            hists[i].pre_pad = " ".repeat(prev - len_table);
        }
    }
    let mut names_out = " ".repeat(5);
    let mut units_out = " ".repeat(5);
    let mut labels_out = "slice".to_string();
    let mut underline = "-".repeat(5);
    for h in &hists {
        let _ = write!(
            names_out,
            "{GAP} {:<w$}",
            h.name,
            w = len_table.saturating_sub(1)
        );
        let _ = write!(
            units_out,
            "{GAP}{}{:<w$}",
            h.pre_pad,
            scale_label,
            w = len_table
        );
        let _ = write!(labels_out, "{GAP}{}{labels}", h.pre_pad);
        let _ = write!(underline, "{GAP}{}{underline_t}", h.pre_pad);
    }
    let _ = writeln!(out, "{names_out}\n{units_out}\n{labels_out}\n{underline}");

    // print_latency_slices(): read on from where the names ended.
    let mut which_slice = 0usize;
    let mut after_time = slice_time;
    loop {
        let find = format!("after {after_time} ");
        let mut found = false;
        loop {
            let l = f.readline();
            if l.is_empty() {
                break;
            }
            if l.starts_with(&find) {
                found = true;
                break;
            }
        }
        if !found {
            break;
        }
        let mut got_chunk = false;
        let mut line = f.readline();
        while !line.is_empty() && !line.trim().is_empty() {
            match hists.iter().position(|h| line.starts_with(h.name.as_str())) {
                Some(hi) => {
                    line =
                        read_bucket_values(line, &mut f, &mut hists[hi], max_bucket, slice_time)?;
                    got_chunk = true;
                }
                None => line = f.readline(),
            }
        }
        if !got_chunk {
            break;
        }
        which_slice += 1;
        let mut row = format!("{which_slice:>5}");
        for h in hists.iter_mut() {
            row.push_str(GAP);
            row.push_str(&h.pre_pad);
            for &i in &display {
                let _ = write!(row, "{:7.2}", h.overs[i]);
                h.avg_overs[i] += h.overs[i];
                if h.overs[i] > h.max_overs[i] {
                    h.max_overs[i] = h.overs[i];
                }
            }
            if opts.extra {
                let _ = write!(row, "{:11.1}", h.rate);
                h.avg_rate += h.rate;
                if h.rate > h.max_rate {
                    h.max_rate = h.rate;
                }
            }
            h.rows.push(SliceRow {
                slice: which_slice,
                end_s: after_time,
                overs: display.iter().map(|&i| h.overs[i]).collect(),
                rate: h.rate,
                total: h.slice_total,
            });
        }
        let _ = writeln!(out, "{row}");
        after_time += slice_time;
    }
    if which_slice == 0 {
        return err(format!("could not find {slice_time} seconds of data"));
    }

    // print_latency_aggregates()
    for h in hists.iter_mut() {
        if opts.extra {
            h.avg_rate /= which_slice as f64;
        }
        for &i in &display {
            h.avg_overs[i] /= which_slice as f64;
        }
    }
    let _ = writeln!(out, "{underline}");
    for (label, pick_avg) in [("  avg", true), ("  max", false)] {
        let mut row = label.to_string();
        for h in &hists {
            row.push_str(GAP);
            row.push_str(&h.pre_pad);
            for &i in &display {
                let v = if pick_avg {
                    h.avg_overs[i]
                } else {
                    h.max_overs[i]
                };
                let _ = write!(row, "{v:7.2}");
            }
            if opts.extra {
                let _ = write!(
                    row,
                    "{:11.1}",
                    if pick_avg { h.avg_rate } else { h.max_rate }
                );
            }
        }
        let _ = writeln!(out, "{row}");
    }

    let verdict = super::judge::judge(log_text);
    Ok(Analysis {
        log: opts.log.clone(),
        act_version: version,
        scale: if microseconds { "us" } else { "ms" }.into(),
        slice_seconds: slice_time,
        histograms: hists
            .into_iter()
            .map(|h| HistTable {
                name: h.name,
                thresholds: display.iter().map(|&i| 1u64 << i).collect(),
                avg: display.iter().map(|&i| h.avg_overs[i]).collect(),
                max: display.iter().map(|&i| h.max_overs[i]).collect(),
                slices: h.rows,
                avg_rate: h.avg_rate,
                max_rate: h.max_rate,
            })
            .collect(),
        verdict,
        text: out,
    })
}

/// read_bucket_values(): parses one histogram's dump at `line`, returns the
/// first line after it, and updates the slice figures.
fn read_bucket_values<'a>(
    line: &'a str,
    f: &mut Lines<'a>,
    h: &mut Hist,
    max_bucket: usize,
    slice_time: u64,
) -> Result<&'a str, AnalyzeError> {
    let open = line.find('(').map(|i| i + 1).unwrap_or(0);
    let close = line.find(" total)").unwrap_or(line.len());
    let total: u64 = line
        .get(open..close)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            AnalyzeError(format!("bad histogram total in line {:?}", line.trim_end()))
        })?;
    let mut values = vec![0u64; max_bucket];
    let mut line = f.readline();
    let mut b_min = 0;
    loop {
        let mut found = 0;
        for (b, v) in values.iter_mut().enumerate().skip(b_min) {
            if let Some(x) = bucket_value(line, b)? {
                found += 1;
                *v = x;
            }
        }
        if found == 0 {
            break;
        }
        line = f.readline();
        b_min += found;
    }
    let slice_total = total.wrapping_sub(h.old_total);
    let slice_values: Vec<u64> = values
        .iter()
        .zip(&h.old_values)
        .map(|(a, b)| a.wrapping_sub(*b))
        .collect();
    h.old_total = total;
    h.old_values = values;
    h.slice_total = slice_total;

    h.overs = vec![0.0; max_bucket];
    if slice_total != 0 {
        let mut delta = 0u64;
        for (over_pct, v) in h.overs.iter_mut().zip(&slice_values) {
            delta = delta.wrapping_add(*v);
            let over = slice_total as i128 - delta as i128;
            *over_pct = round_to(over as f64 * 100.0 / slice_total as f64, 2);
        }
    }
    h.rate = round_to(slice_total as f64 / slice_time as f64, 1);
    Ok(line)
}

impl Analysis {
    /// The verdict as people read it, printed after the table.
    pub fn verdict_text(&self) -> String {
        let mut s = String::new();
        let v = &self.verdict;
        let _ = writeln!(
            s,
            "\nverdict: {} ({})",
            if v.pass { "PASS" } else { "FAIL" },
            v.criteria
        );
        if let Some(n) = &v.note {
            let _ = writeln!(s, "note: {n}");
        }
        for p in &v.problems {
            let _ = writeln!(s, "  {p}");
        }
        for f in &v.failures {
            let _ = writeln!(
                s,
                "  slice {} of {}: {:.2}% {} (rule: {})",
                f.slice,
                f.histogram,
                f.percent,
                f.rule.split(" must").next().unwrap_or(""),
                f.rule
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::act_log_setup;

    #[test]
    fn a_device_path_with_a_space_is_one_device_as_the_header_counts() {
        let head = "device-names: /home/u/My Tests/storcert-scratch.img\nnum-devices: 1\n\
                    read-reqs-per-sec: 2000\n";
        let (devices, load) = act_log_setup(head);
        assert_eq!(devices, ["/home/u/My Tests/storcert-scratch.img"]);
        assert_eq!(load, Some(1.0));
        let two = "device-names: /dev/sda /dev/sdb\nnum-devices: 2\nread-reqs-per-sec: 4000\n";
        assert_eq!(
            act_log_setup(two),
            (
                vec!["/dev/sda".to_string(), "/dev/sdb".to_string()],
                Some(1.0)
            )
        );
    }
}
