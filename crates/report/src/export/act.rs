//! ACT's part of a drive's row: the highest load it passed, and the worst
//! hour of each load (and spare area) it ran, from the run's comparison.
//! (The per-load groups come last in a CSV, one group per key the table
//! holds: `csv::Writer`.)

use super::{ActLoad, DriveRow, Parts, WorkloadColumns};
use storcert_judge::summary::DriveVerdict;

pub struct Act;

impl WorkloadColumns for Act {
    fn fill(&self, row: &mut DriveRow, parts: &Parts, d: &DriveVerdict) {
        row.act_load_passed = d.act_load_passed;
        row.act = act_of(&parts.act, &d.device, &d.serial);
    }

    fn columns(&self) -> &'static [&'static str] {
        &["act_load_passed"]
    }

    fn cells(&self, row: &DriveRow) -> Vec<String> {
        vec![super::csv::float(row.act_load_passed)]
    }
}

/// The ACT figures of a drive: the comparison's tables of it (by serial,
/// else by device path), the worst point per load and spare area.
fn act_of(cmp: &crate::compare::Comparison, device: &str, serial: &Option<String>) -> Vec<ActLoad> {
    let by_serial = serial
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| format!("serial {s}"));
    let mut out: Vec<ActLoad> = Vec::new();
    for t in &cmp.loads {
        // A table is named by the drive's serial, else by its path (a
        // spare partition's table by the drive under it); a share of
        // several drives ("a + b") is no one drive's figure.
        let mine = Some(&t.drive) == by_serial.as_ref() || t.drive == device;
        // ACT's own mix only: a load at another mix is another scale.
        if !mine || t.workload != "storage" || t.mix.is_some() {
            continue;
        }
        let spare = t.spare.as_ref().map(|s| s.spare_pct);
        for p in &t.rows {
            let pct = |k: usize| p.worst_pct.get(k).copied().filter(|x| x.is_finite());
            let point = ActLoad {
                load: p.load,
                spare_pct: spare,
                pct_over_1ms: pct(0),
                pct_over_8ms: pct(1),
                pct_over_64ms: pct(2),
                pass: p.pass,
                seconds: p.seconds,
            };
            match out
                .iter_mut()
                .find(|o| o.load == point.load && o.spare_pct == point.spare_pct)
            {
                Some(o) => {
                    let worse = |a: Option<f64>, b: Option<f64>| match (a, b) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                    o.pct_over_1ms = worse(o.pct_over_1ms, point.pct_over_1ms);
                    o.pct_over_8ms = worse(o.pct_over_8ms, point.pct_over_8ms);
                    o.pct_over_64ms = worse(o.pct_over_64ms, point.pct_over_64ms);
                    o.pass &= point.pass;
                    o.seconds = o.seconds.max(point.seconds);
                }
                None => out.push(point),
            }
        }
    }
    out.sort_by(|a, b| {
        a.spare_pct
            .unwrap_or(-1.0)
            .total_cmp(&b.spare_pct.unwrap_or(-1.0))
            .then(a.load.total_cmp(&b.load))
    });
    out
}
