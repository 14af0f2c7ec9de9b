//! What a run writes and hands back, whether it ran on one thread or
//! several (`workers`): ACT's report blocks and the line saying why it
//! stopped, the progress line's figures, the result, and the check for a
//! run in which most requests never came back.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use super::burst::Burst;
use super::device::Device;
use super::histogram::LatencyHistogram;
use super::runner::RunSpec;
use super::timeline::{self, Timeline};
pub use storcert_results::act::{DeviceResult, HistSummary, Outcome, RunResult, StreamResult};

/// What a worker thread's share hands on at a report: each histogram's
/// ACT buckets (what the log and the decision read), its reads over 1 ms
/// and in all (the progress line's), each stream's (issued, completed).
/// Not the HDR histograms: 33,000 counts each, copied every second, cost a
/// worker its schedule (a 2x run's lag tripled).
pub(super) struct Snapshot {
    pub(super) buckets: Vec<[u64; super::histogram::N_BUCKETS]>,
    pub(super) reads_over_1ms: (u64, u64),
    pub(super) counts: Vec<(u64, u64)>,
}

/// How a run ended: the outcome, its time, its worst lag and its reports.
pub(super) struct Ended {
    pub(super) outcome: Outcome,
    pub(super) elapsed: Duration,
    pub(super) max_lag_ns: u64,
    pub(super) reports: u64,
}

/// Requests a paced stream (its rate and burst) may still complete by
/// `until_ns` (from the start), given (issued, completed) so far; `None`
/// unpaced.
pub(super) fn remaining_of(
    (rate, burst): (f64, Burst),
    (issued, completed): (u64, u64),
    until_ns: u64,
) -> Option<u64> {
    if rate <= 0.0 {
        return None;
    }
    // Bursts 0, 1, … are due at `burst` intervals: every request of the
    // last one due by then (found in review: counted one by one, a run in
    // bursts of 240 could be stopped as failed with up to 238 reads still
    // to come), and of one burst more, as the scheduler's own rounding can
    // put a burst a nanosecond before where this finds it (found in
    // review). An estimate over by a burst delays a decided stop by a few
    // milliseconds; one under could stop a run that might still pass.
    let last_burst = (until_ns as f64 / (burst.size() * 1e9 / rate)).floor() as u64;
    let due = burst.first_of(last_burst.saturating_add(2));
    Some(due.max(issued) - completed)
}

/// One report block: the error lines since the last, "after N sec:", each
/// histogram, a blank line.
pub(super) fn write_block(
    log: &mut dyn Write,
    secs: u64,
    names: &[String],
    hists: &[LatencyHistogram],
    error_lines: &[String],
) -> Result<()> {
    for line in error_lines {
        writeln!(log, "{line}")?;
    }
    writeln!(log, "after {secs} sec:")?;
    for (name, h) in names.iter().zip(hists) {
        log.write_all(h.dump(name).as_bytes())?;
    }
    writeln!(log)?;
    log.flush()?;
    Ok(())
}

/// The `reads` histogram's reads over 1 ms and in all (0, 0 without one).
pub(super) fn reads_over_1ms(spec: &RunSpec, hists: &[LatencyHistogram]) -> (u64, u64) {
    spec.hist_names
        .iter()
        .position(|n| n == "reads")
        .map_or((0, 0), |i| hists[i].over_ns(1_000_000))
}

/// The progress line's reads/s and % of reads over 1 ms, from each
/// stream's completed requests and the reads over 1 ms and in all.
pub(super) fn progress_of(
    spec: &RunSpec,
    completed: &[u64],
    (over, total): (u64, u64),
    elapsed: Duration,
) -> (f64, f64) {
    let elapsed = elapsed.as_secs_f64().max(1e-9);
    let reads = spec
        .streams
        .iter()
        .position(|s| s.label == "reads")
        .map(|i| completed[i]);
    let rate = reads.map(|r| r as f64 / elapsed).unwrap_or(0.0);
    let pct = match total {
        0 => 0.0,
        t => over as f64 * 100.0 / t as f64,
    };
    (rate, pct)
}

/// The run's result from its streams' counts, histograms and timeline.
pub(super) fn build_result(
    spec: &RunSpec,
    ended: Ended,
    (counts, hists): (&[(u64, u64)], &[LatencyHistogram]),
    timeline: Timeline,
    (devices, engine): (&[Device], &str),
) -> RunResult {
    let secs = ended.elapsed.as_secs_f64().max(1e-9);
    let read_series: Vec<(u64, f64)> = timeline
        .seconds
        .iter()
        .map(|s| (s.t, s.read_p99_us))
        .collect();
    RunResult {
        schema_version: storcert_results::act::RUN_SCHEMA,
        outcome: ended.outcome,
        engine: engine.to_string(),
        elapsed_s: ended.elapsed.as_secs_f64(),
        max_lag_ms: ended.max_lag_ns as f64 / 1e6,
        reports: ended.reports,
        streams: spec
            .streams
            .iter()
            .zip(counts)
            .map(|(s, &(issued, completed))| StreamResult {
                label: s.label.clone(),
                device: s.device.map(|d| devices[d].name.clone()),
                asked_per_sec: s.rate,
                issued,
                completed,
                achieved_per_sec: issued as f64 / secs,
            })
            .collect(),
        histograms: spec
            .hist_names
            .iter()
            .zip(hists)
            .map(|(name, h)| summarize(name, h))
            .collect(),
        devices: devices
            .iter()
            .map(|d| DeviceResult {
                name: d.name.clone(),
                size_bytes: d.size_bytes,
                min_op_bytes: d.min_op_bytes,
                direct_io: d.direct,
                read_errors: d.errors.read_errors,
                write_errors: d.errors.write_errors,
                first_errors: d.errors.first.clone(),
            })
            .collect(),
        read_spikes: timeline::find_spikes(&read_series),
        timeline: timeline.seconds,
    }
}

/// A run in which requests went out on time but most never came back
/// (a device stalling every I/O for seconds) has empty histograms and
/// would pass act_latency.py's rules; ACT never sees this because it only
/// watches the issue lag. Fewer than half the requests a stream should
/// have completed is "could not keep up".
pub(super) fn starved(spec: &RunSpec, completed: &[u64], elapsed: Duration) -> Option<Outcome> {
    let secs = elapsed.as_secs_f64();
    let (s, done) = spec.streams.iter().zip(completed).find(|(s, &done)| {
        let expected = s.rate * secs;
        expected >= 10.0 && (done as f64) < expected / 2.0
    })?;
    Some(Outcome::CouldNotKeepUp {
        stream: format!("{} ({} of {:.0} completed)", s.label, done, s.rate * secs),
    })
}

/// Why the run stopped, in ACT's words where ACT has them.
pub(super) fn write_outcome(log: &mut dyn Write, outcome: &Outcome, spec: &RunSpec) -> Result<()> {
    match outcome {
        Outcome::CouldNotKeepUp { stream } => {
            writeln!(log, "ERROR: {stream} can't keep up")?;
            writeln!(log, "drive(s) can't keep up - test stopped")?;
        }
        Outcome::DeviceErrors { errors } => {
            writeln!(
                log,
                "ERROR: {errors} device errors, more than the limit of {} - test stopped",
                spec.max_errors
            )?;
        }
        Outcome::StuckIo { device, seconds } => {
            writeln!(
                log,
                "ERROR: an I/O on {device} did not complete in {seconds} s - test stopped"
            )?;
        }
        // A trial passing by statistics is cut short too: as a log on its
        // own it is not an ACT pass.
        Outcome::Decided { seconds, reason } | Outcome::PassingByStatistics { seconds, reason } => {
            writeln!(log, "decided after {seconds} sec: {reason} - test stopped")?;
        }
        _ => {}
    }
    Ok(())
}

pub fn summarize(name: &str, h: &LatencyHistogram) -> HistSummary {
    let us = |ns: u64| ns as f64 / 1000.0;
    let any = h.total() > 0;
    HistSummary {
        name: name.to_string(),
        total: h.total(),
        p50_us: if any { us(h.quantile_ns(0.5)) } else { 0.0 },
        p99_us: if any { us(h.quantile_ns(0.99)) } else { 0.0 },
        p999_us: if any { us(h.quantile_ns(0.999)) } else { 0.0 },
        max_us: if any { us(h.hdr().max()) } else { 0.0 },
        pct_over_1ms: h.pct_over_ns(1_000_000),
        pct_over_8ms: h.pct_over_ns(8_000_000),
        pct_over_64ms: h.pct_over_ns(64_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reads_still_to_come_count_every_request_of_a_burst_already_due() {
        let ms = 1_000_000;
        // Even at 2000/s: requests 0, 1 and 2 due by 1 ms, one more for
        // rounding, less what completed.
        assert_eq!(remaining_of((2000.0, Burst::EVEN), (3, 1), ms), Some(3));
        // In bursts of 10 every 5 ms: all ten of the first by 1 ms, twenty
        // by 5 ms, and a burst more for rounding.
        let ten = Burst::new(10, 1).unwrap();
        assert_eq!(remaining_of((2000.0, ten), (3, 1), ms), Some(19));
        assert_eq!(remaining_of((2000.0, ten), (10, 10), 5 * ms), Some(20));
        // Issued past the schedule counts what was issued; unpaced: none.
        assert_eq!(remaining_of((2000.0, ten), (40, 0), ms), Some(40));
        assert_eq!(remaining_of((0.0, ten), (3, 1), ms), None);
    }
}
