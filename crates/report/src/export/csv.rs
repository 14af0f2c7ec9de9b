//! The rows as CSV: a header line, then a row per drive per run, in the
//! columns docs/export-schema.md lists: the fixed ones, the health before
//! and after, then one group per ACT load (and spare area) present in the
//! index, named by `ActLoad::key`. The ACT groups come last: a load run for
//! the first time adds columns at the end and moves none.
//!
//! A cell holds what a machine reported (a model, a serial), which a
//! spreadsheet would run as a formula if it began with `=`, `+`, `-`, `@`
//! (or their fullwidth forms, or any of them after leading white space) or
//! a TAB or CR: such text cells get a leading `'` (numbers are written by
//! us and left as they are).

use std::io::Write;

use super::{DriveRow, Smart};

/// The run's and the drive's columns, before each workload's
/// (`super::WORKLOADS`), the health's and the ACT groups.
const RUN: &[&str] = &[
    "schema_version",
    "bundle_sha256",
    "bundle",
    "received_at",
    "signed_at",
    "run_verdict",
    "tag",
    "profile",
    "machine_vendor",
    "machine_product",
    "machine_serial",
    "hostname",
    "device",
    "model",
    "serial",
    "wwn",
    "firmware",
    "capacity_bytes",
    "transport",
    "controller",
    "controller_firmware",
    "slot",
    "verdict",
    "waived",
    "reasons",
];

/// Each ACT group's columns, after its key.
const ACT: &[&str] = &["over_1ms_pct", "over_8ms_pct", "over_64ms_pct", "pass"];

/// The health columns, once with `before_` and once with `after_`.
const SMART: &[&str] = &[
    "overall",
    "temperature_c",
    "power_on_hours",
    "media_errors",
    "reallocated_sectors",
    "pending_sectors",
    "percentage_used",
    "available_spare_pct",
    "host_bytes_written",
];

/// A text cell, made safe for a spreadsheet and a terminal: control and
/// bidi characters escaped (`\u{1b}`), and a leading `'` where a spreadsheet
/// would take it for a formula.
fn text(s: &str) -> String {
    let safe = storcert_util::text::printable(s, usize::MAX);
    if runs_as_formula(s) {
        format!("'{safe}")
    } else {
        safe
    }
}

/// Whether a spreadsheet could take `s` for a formula: it starts with a TAB
/// or CR (which some drop before reading the rest), or its first character
/// after any white space (spaces, NBSP, ideographic space: spreadsheets trim
/// them) is `=`, `+`, `-` or `@`, or a fullwidth or small form of one (which
/// East Asian locales read as the ASCII sign).
fn runs_as_formula(s: &str) -> bool {
    if s.starts_with(['\t', '\r']) {
        return true;
    }
    let first = s.trim_start_matches(char::is_whitespace).chars().next();
    matches!(
        first,
        Some(
            '=' | '+'
                | '-'
                | '@'
                | '\u{ff1d}'
                | '\u{ff0b}'
                | '\u{ff0d}'
                | '\u{ff20}'
                | '\u{fe66}'
                | '\u{fe62}'
                | '\u{fe63}'
                | '\u{fe6b}'
        )
    )
}

fn opt_text(s: &Option<String>) -> String {
    s.as_deref().map(text).unwrap_or_default()
}

fn num<T: ToString>(x: Option<T>) -> String {
    x.map(|x| x.to_string()).unwrap_or_default()
}

/// A float without needless digits; none for NaN or infinite.
pub(super) fn float(x: Option<f64>) -> String {
    match x {
        // + 0.0 turns a -0.0 into 0.0.
        Some(x) if x.is_finite() => format!("{}", (x * 1e4).round() / 1e4 + 0.0),
        _ => String::new(),
    }
}

fn smart_cells(s: &Option<Smart>) -> Vec<String> {
    let Some(s) = s else {
        return vec![String::new(); SMART.len()];
    };
    vec![
        opt_text(&s.overall),
        num(s.temperature_c),
        num(s.power_on_hours),
        num(s.media_errors),
        num(s.reallocated_sectors),
        num(s.pending_sectors),
        num(s.percentage_used),
        num(s.available_spare_pct),
        num(s.host_bytes_written),
    ]
}

pub const FORMAT: super::Format = super::Format {
    name: "csv",
    title: "CSV",
    mime: "text/csv; charset=utf-8",
    begin: |out, act_keys| {
        let w = Writer::new(out, act_keys).map_err(std::io::Error::other)?;
        Ok(Box::new(w))
    },
};

/// Writes rows as CSV, the ACT groups given up front (a streamed export
/// cannot add columns once its header is out).
pub struct Writer<W: Write> {
    out: csv::Writer<W>,
    act_keys: Vec<String>,
}

impl<W: Write> Writer<W> {
    /// Writes the header: the fixed columns, the health before and after,
    /// a group per ACT key.
    pub fn new(out: W, act_keys: Vec<String>) -> csv::Result<Writer<W>> {
        let mut out = csv::Writer::from_writer(out);
        let mut header: Vec<String> = RUN.iter().map(|s| s.to_string()).collect();
        for w in super::WORKLOADS {
            header.extend(w.columns().iter().map(|c| c.to_string()));
        }
        for when in ["before", "after"] {
            header.extend(SMART.iter().map(|c| format!("smart_{when}_{c}")));
        }
        for k in &act_keys {
            header.extend(ACT.iter().map(|c| format!("{k}_{c}")));
        }
        out.write_record(&header)?;
        Ok(Writer { out, act_keys })
    }

    /// One row; `waived` is the waiver that covers its failure, if any.
    pub fn row(&mut self, r: &DriveRow, waived: Option<&str>) -> csv::Result<()> {
        let mut cells = vec![
            r.schema_version.to_string(),
            r.bundle_sha256.clone(),
            text(&r.bundle),
            text(&r.received_at),
            text(&r.signed_at),
            r.run_verdict.as_str().to_string(),
            opt_text(&r.tag),
            opt_text(&r.profile),
            opt_text(&r.machine_vendor),
            opt_text(&r.machine_product),
            opt_text(&r.machine_serial),
            opt_text(&r.hostname),
            text(&r.device),
            opt_text(&r.model),
            opt_text(&r.serial),
            opt_text(&r.wwn),
            opt_text(&r.firmware),
            num(r.capacity_bytes),
            opt_text(&r.transport),
            opt_text(&r.controller),
            opt_text(&r.controller_firmware),
            opt_text(&r.slot),
            r.verdict.as_str().to_string(),
            waived.map(text).unwrap_or_default(),
            text(&r.reasons.join("; ")),
        ];
        for w in super::WORKLOADS {
            cells.extend(w.cells(r));
        }
        cells.extend(smart_cells(&r.smart_before));
        cells.extend(smart_cells(&r.smart_after));
        for k in &self.act_keys {
            match r.act.iter().find(|a| &a.key() == k) {
                Some(a) => cells.extend([
                    float(a.pct_over_1ms),
                    float(a.pct_over_8ms),
                    float(a.pct_over_64ms),
                    crate::compare::verdict_word(a.pass).to_lowercase(),
                ]),
                None => cells.extend(std::iter::repeat_n(String::new(), ACT.len())),
            }
        }
        self.out.write_record(&cells)
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        self.out
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl<W: Write> super::RowWriter for Writer<W> {
    fn row(&mut self, r: &DriveRow, waived: Option<&str>) -> std::io::Result<()> {
        Writer::row(self, r, waived).map_err(std::io::Error::other)
    }

    fn finish(self: Box<Self>) -> std::io::Result<()> {
        Writer::finish(*self).map(drop)
    }
}

/// `compare --format csv`'s columns: one row per drive, mix and spare
/// setting per run at a load, as a spreadsheet takes it.
const COMPARE: &[&str] = &[
    "drive",
    "model",
    "serial",
    "devices",
    "workload",
    "mix",
    "spare_pct",
    "total_spare_pct",
    "load",
    "hours",
    "over_1ms_pct",
    "over_8ms_pct",
    "over_64ms_pct",
    "verdict",
    "why",
    "source",
    "log",
];

/// A comparison as CSV (`compare --format csv`), its text cells made safe
/// as the export's are.
pub fn comparison(c: &crate::compare::Comparison) -> csv::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(COMPARE)?;
    for t in &c.loads {
        // One drive's serial; a share of several ("serial a + serial b")
        // names none.
        let serial = t
            .drive
            .strip_prefix("serial ")
            .filter(|_| !t.drive.contains(" + "))
            .map(str::to_string);
        for p in &t.rows {
            let pct = |k: usize| float(p.worst_pct.get(k).copied());
            w.write_record([
                text(&t.drive),
                opt_text(&t.model),
                opt_text(&serial),
                text(&t.devices.join(" ")),
                text(&t.workload),
                opt_text(&t.mix),
                float(t.spare.as_ref().map(|s| s.spare_pct)),
                float(t.spare.as_ref().and_then(|s| s.total_spare_pct)),
                float(Some(p.load)),
                float(Some(p.seconds as f64 / 3600.0)),
                pct(0),
                pct(1),
                pct(2),
                crate::compare::verdict_word(p.pass).to_lowercase(),
                opt_text(&p.why),
                text(&p.source),
                text(&p.log),
            ])?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::ActLoad;

    #[test]
    fn hostile_text_cannot_become_a_formula_or_break_a_row() {
        let row = DriveRow {
            schema_version: 1,
            device: "/dev/sdb".into(),
            model: Some("=HYPERLINK(\"http://x\",\"y\")".into()),
            serial: Some("+1\n-2".into()),
            firmware: Some("@SUM(A1)".into()),
            hostname: Some("a,\"b\"".into()),
            act: vec![ActLoad {
                load: 3.0,
                pct_over_1ms: Some(-0.0),
                ..ActLoad::default()
            }],
            ..DriveRow::default()
        };
        assert_eq!(row.act[0].key(), "act_3x");
        let mut w = Writer::new(Vec::new(), vec![row.act[0].key()]).unwrap();
        w.row(&row, Some("-waived")).unwrap();
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        let mut r = ::csv::Reader::from_reader(out.as_bytes());
        let h = r.headers().unwrap().clone();
        let workloads: usize = crate::export::WORKLOADS
            .iter()
            .map(|w| w.columns().len())
            .sum();
        assert_eq!(h.len(), RUN.len() + workloads + ACT.len() + 2 * SMART.len());
        // The workloads' columns where docs/export-schema.md has them:
        // after the drive's reasons, before the health.
        let at = h.iter().position(|c| c == "reasons").unwrap();
        assert_eq!(
            h.iter().skip(at + 1).take(4).collect::<Vec<_>>(),
            [
                "act_load_passed",
                "stream_write_bytes_per_s",
                "stream_read_bytes_per_s",
                "smart_before_overall"
            ]
        );
        let rec = r.records().next().unwrap().unwrap();
        let cell = |name: &str| rec[h.iter().position(|c| c == name).unwrap()].to_string();
        assert_eq!(cell("model"), "'=HYPERLINK(\"http://x\",\"y\")");
        assert_eq!(cell("serial"), "'+1\\u{a}-2");
        assert_eq!(cell("firmware"), "'@SUM(A1)");
        assert_eq!(cell("hostname"), "a,\"b\"");
        assert_eq!(cell("waived"), "'-waived");
        // A number of ours keeps its sign and stays a number.
        assert_eq!(cell("act_3x_over_1ms_pct"), "0");
        assert_eq!(r.records().count(), 0);
    }

    #[test]
    fn a_formula_after_white_space_or_in_fullwidth_is_defused() {
        for (cell, want) in [
            ("=1+1", "'=1+1"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\u{ff1d}HYPERLINK(\"x\")", "'\u{ff1d}HYPERLINK(\"x\")"),
            ("\u{ff0b}1", "'\u{ff0b}1"),
            ("\u{ff0d}1", "'\u{ff0d}1"),
            ("\u{ff20}SUM(A1)", "'\u{ff20}SUM(A1)"),
            (" =1+1", "' =1+1"),
            ("   @x", "'   @x"),
            ("\u{a0}=1+1", "'\u{a0}=1+1"),
            ("\u{3000}\u{ff1d}1", "'\u{3000}\u{ff1d}1"),
            ("\u{2003}-1", "'\u{2003}-1"),
            // Escaped to text, and marked all the same.
            ("\t=1", "'\\u{9}=1"),
            ("\r=1", "'\\u{d}=1"),
            ("\tx", "'\\u{9}x"),
            ("\rx", "'\\u{d}x"),
            ("\n=1", "'\\u{a}=1"),
            // Not formulas.
            ("SSD =1", "SSD =1"),
            ("  Micron 7450", "  Micron 7450"),
            ("", ""),
            ("   ", "   "),
        ] {
            assert_eq!(text(cell), want, "{cell:?}");
        }
    }
}
