//! What every part of the report writes with, the renderers and the
//! sections alike: the HTML escaper and verdict badge, and the text
//! document (Markdown or plain) with its fences. It uses neither.

use std::fmt::Write;

use storcert_results::Verdict;
use storcert_util::text::inline;

/// The pages' one escaper: entities, and a bundle's control and bidi
/// characters shown escaped; cut, as the text formats cut, to
/// `util::text::CELL_CHARS` characters (one 16 MB finding of `&` made an
/// 80 MB page, and a report of 218 MiB).
pub fn esc(s: &str) -> String {
    storcert_util::text::html_escape(&storcert_util::text::cut(
        s,
        storcert_util::text::CELL_CHARS,
    ))
}

/// A verdict as a badge (the pages' `v-*` classes colour it): the
/// report's and the collector's pages show it alike.
pub fn verdict(v: Verdict) -> String {
    let v = v.as_str();
    format!(
        "<span class=\"verdict v-{0}\">{1}</span>",
        esc(v),
        esc(&v.to_uppercase())
    )
}

/// A Markdown code fence longer than any run of backticks in `text`, so
/// the text cannot close it.
pub fn fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The page being written, Markdown or plain text: headings, table rows
/// and inline values in the one dialect.
pub struct Doc {
    pub md: bool,
    pub out: String,
}

impl Doc {
    /// A value from the run or the bundle, inline.
    pub fn o(&self, v: &str) -> String {
        inline(v, self.md)
    }

    pub fn heading(&mut self, level: usize, t: &str) {
        if self.md {
            let _ = write!(self.out, "{} {t}\n\n", "#".repeat(level));
        } else {
            let rule = if level == 1 { "=" } else { "-" }.repeat(t.chars().count());
            let _ = write!(self.out, "{t}\n{rule}\n\n");
        }
    }

    /// A cell is one cell: a '|' or a line break in what a bundle says
    /// cannot add cells or rows.
    pub fn row(&mut self, cells: &[String]) {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| {
                let c = c.replace('\n', "\\n").replace('\r', "\\r");
                if self.md {
                    c.replace('|', "\\|")
                } else {
                    c
                }
            })
            .collect();
        if self.md {
            let _ = writeln!(self.out, "| {} |", cells.join(" | "));
        } else {
            let _ = writeln!(self.out, "  {}", cells.join("  "));
        }
    }

    pub fn separator(&mut self, n: usize) {
        if self.md {
            let _ = writeln!(self.out, "|{}", "---|".repeat(n));
        }
    }
}
