//! Each filesystem pass (`stream-fs`): bonnie++'s tables and CSV line.

use std::fmt::Write;

use crate::markup::esc;
use crate::markup::{fence, Doc};
use crate::Report;

pub struct Filesystem;

impl super::Section for Filesystem {
    fn html(&self, r: &Report, out: &mut String) {
        html(out, r);
    }

    fn text(&self, r: &Report, d: &mut Doc) {
        text(d, r);
    }
}

/// Each filesystem pass: bonnie++'s two tables, its CSV line, and whether
/// its file was too small to get past the page cache.
fn html(out: &mut String, r: &Report) {
    if r.filesystem.is_empty() {
        return;
    }
    out.push_str("<section id=\"filesystem\"><h2>Filesystem pass</h2>");
    for (path, f) in &r.filesystem {
        let _ = write!(
            out,
            "<p>in <code>{}</code>: a {} file in {} chunks, {} files (<code>{}</code>){}</p>",
            esc(&f.dir),
            storcert_util::units::decimal_bytes(f.file_size),
            storcert_util::units::decimal_bytes(f.chunk as u64),
            f.files,
            esc(path),
            if f.interrupted {
                "; interrupted: the figures cover what was done"
            } else {
                ""
            }
        );
        if let Some(w) = f.page_cache_warning() {
            let _ = write!(out, "<p class=\"warn\">Warning: {}</p>", esc(&w));
        }
        out.push_str("<table><thead><tr><th class=\"l\">test</th><th>rate</th><th>max latency</th></tr></thead><tbody>");
        for m in f.data.iter().chain(&f.metadata) {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{} µs</td></tr>",
                esc(&m.test),
                esc(&m.rate_text()),
                m.max_latency_us
            );
        }
        let _ = write!(
            out,
            "</tbody></table><p>bonnie++ CSV: <code class=\"csv\">{}</code></p>",
            esc(&f.bonnie_csv())
        );
    }
    out.push_str("</section>");
}

/// Each filesystem pass: its tables as `stream --fs` prints them, and its
/// bonnie++ CSV line.
fn text(d: &mut Doc, r: &Report) {
    for (path, f) in &r.filesystem {
        let title = format!("Filesystem pass in {}", d.o(&f.dir));
        d.heading(2, &title);
        let _ = writeln!(d.out, "From {}.\n", d.o(path));
        if let Some(w) = f.page_cache_warning() {
            let _ = writeln!(d.out, "Warning: {w}\n");
        }
        let text = storcert_util::text::printable_lines(&fs_tables(f));
        let fence = if d.md { fence(&text) } else { String::new() };
        let _ = writeln!(d.out, "{fence}\n{text}{fence}\n");
    }
}

/// bonnie++'s two tables and its CSV line, in words.
fn fs_tables(f: &storcert_results::stream::FsResult) -> String {
    let mut s = String::new();
    for m in f.data.iter().chain(&f.metadata) {
        let _ = writeln!(
            s,
            "{:<20} {:>16} {:>11} us",
            m.test,
            m.rate_text(),
            m.max_latency_us
        );
    }
    let _ = writeln!(s, "\nbonnie++ CSV: {}", f.bonnie_csv());
    s
}
