//! A plain aligned text table: columns padded to their widest cell, no
//! colour or box drawing, so the same text reads on a TTY, a serial
//! console and in a ticket. Cells hold devices' strings (a drive's model,
//! a capture being replayed): each is made printable as it is added.

use crate::text::printable;

/// The longest cell or line shown; a device string longer than this is
/// cut (with "…").
const MAX_CELL: usize = 200;
const MAX_LINE: usize = 1000;

#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Row>,
}

#[derive(Debug)]
enum Row {
    Cells(Vec<String>),
    /// A line of its own (a group heading), not aligned with the columns.
    Line(String),
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(Row::Cells(
            cells.iter().map(|c| printable(c, MAX_CELL)).collect(),
        ));
    }

    pub fn line(&mut self, text: String) {
        self.rows.push(Row::Line(printable(&text, MAX_LINE)));
    }

    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            if let Row::Cells(cells) = row {
                for (i, c) in cells.iter().enumerate() {
                    if i < widths.len() {
                        widths[i] = widths[i].max(c.chars().count());
                    }
                }
            }
        }
        let fmt_cells = |cells: &[String]| {
            let mut line = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    line.push_str(c);
                } else {
                    let pad = widths.get(i).copied().unwrap_or(0);
                    line.push_str(&format!("{c:<pad$}  "));
                }
            }
            line.trim_end().to_string()
        };
        let mut out = fmt_cells(&self.header);
        out.push('\n');
        for row in &self.rows {
            match row {
                Row::Cells(cells) => out.push_str(&fmt_cells(cells)),
                Row::Line(text) => out.push_str(text),
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_and_keeps_lines() {
        let mut t = Table::new(&["A", "BB", "C"]);
        t.line("group one".into());
        t.row(vec!["xxx".into(), "y".into(), "z".into()]);
        t.row(vec!["x".into(), "yyyy".into(), "".into()]);
        assert_eq!(
            t.render(),
            "A    BB    C\ngroup one\nxxx  y     z\nx    yyyy\n"
        );
    }

    #[test]
    fn device_strings_are_printed_as_text_never_as_control_sequences() {
        let mut t = Table::new(&["MODEL", "SERIAL"]);
        t.line("ctrl \u{1b}]0;owned\u{7}".into());
        t.row(vec!["SSD\u{1b}[2J".into(), "S\rN\u{202e}".into()]);
        let out = t.render();
        assert!(
            !out.chars()
                .any(|c| c == '\u{1b}' || c == '\r' || c == '\u{202e}'),
            "{out:?}"
        );
        assert!(out.contains("SSD\\u{1b}[2J"), "{out}");
    }
}
