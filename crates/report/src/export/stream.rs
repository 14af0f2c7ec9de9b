//! The streaming suite's part of a drive's row: the bandwidth of its
//! sequential write and read passes.

use super::{DriveRow, Parts, WorkloadColumns};
use storcert_judge::summary::DriveVerdict;
use storcert_results::stream::{Pass, StreamResult};

pub struct Stream;

impl WorkloadColumns for Stream {
    fn fill(&self, row: &mut DriveRow, parts: &Parts, d: &DriveVerdict) {
        let bw = |pass| stream_bw(&parts.streams, &parts.disks, &d.device, pass);
        row.stream_write_bytes_per_s = bw(Pass::Write);
        row.stream_read_bytes_per_s = bw(Pass::Read);
    }

    fn columns(&self) -> &'static [&'static str] {
        &["stream_write_bytes_per_s", "stream_read_bytes_per_s"]
    }

    fn cells(&self, row: &DriveRow) -> Vec<String> {
        vec![
            super::csv::float(row.stream_write_bytes_per_s),
            super::csv::float(row.stream_read_bytes_per_s),
        ]
    }
}

/// The lowest bandwidth of a pass over `device` across the stream runs:
/// a target is the drive, or a partition of it the run made (as the
/// run's targets say). A pass that moved nothing counts, as 0.
fn stream_bw(
    streams: &[&StreamResult],
    disks: &std::collections::BTreeMap<String, String>,
    device: &str,
    pass: Pass,
) -> Option<f64> {
    let mut lowest: Option<f64> = None;
    for s in streams {
        let Some(target) = s.targets.iter().position(|t| {
            t.path == device || disks.get(&t.path).map(String::as_str) == Some(device)
        }) else {
            continue;
        };
        for p in s.passes.iter().filter(|p| p.pass == pass && !p.interrupted) {
            let jobs: Vec<f64> = p
                .jobs
                .iter()
                .filter(|j| j.target == target)
                .map(|j| j.bw_bytes)
                .collect();
            if !jobs.is_empty() {
                let bw: f64 = jobs.iter().sum();
                lowest = Some(lowest.map_or(bw, |l| l.min(bw)));
            }
        }
    }
    lowest
}
