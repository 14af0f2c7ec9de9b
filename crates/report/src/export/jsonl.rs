//! The rows as JSON Lines: each row the `DriveRow` object on one line,
//! with `waived` added where a waiver covers its failure.

use std::io::Write;

use super::DriveRow;

pub const FORMAT: super::Format = super::Format {
    name: "jsonl",
    title: "JSON lines",
    mime: "application/jsonl; charset=utf-8",
    begin: |out, _act_keys| {
        Ok(Box::new(Writer {
            out: std::io::BufWriter::new(out),
        }))
    },
};

/// Writes each row as it comes, buffered.
struct Writer<W: Write> {
    out: std::io::BufWriter<W>,
}

impl<W: Write> super::RowWriter for Writer<W> {
    fn row(&mut self, r: &DriveRow, waived: Option<&str>) -> std::io::Result<()> {
        write_row(&mut self.out, r, waived)
    }

    fn finish(mut self: Box<Self>) -> std::io::Result<()> {
        self.out.flush()
    }
}

pub fn write_row(out: &mut impl Write, r: &DriveRow, waived: Option<&str>) -> std::io::Result<()> {
    let mut v = serde_json::to_value(r).map_err(std::io::Error::other)?;
    if let (Some(w), Some(o)) = (waived, v.as_object_mut()) {
        o.insert("waived".into(), serde_json::Value::String(w.to_string()));
    }
    // What a drive said reaches a reader's terminal as text: C1, bidi and
    // invisible characters escaped inside the JSON (the same JSON).
    let line = serde_json::to_string(&v).map_err(std::io::Error::other)?;
    out.write_all(storcert_util::text::json_printable(&line).as_bytes())?;
    out.write_all(b"\n")
}
