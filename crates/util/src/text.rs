//! Text from outside (a server's reply, a device's strings, a bundle's
//! fields) made safe to print: no control characters (escape sequences
//! that repaint a terminal, carriage returns that overwrite a line, bidi
//! overrides that reorder it) and a bounded length.

/// Whether `c` could change how a terminal shows what follows it.
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Bidi marks, embeddings, overrides and isolates; line and
            // paragraph separators; zero-width characters; the BOM.
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
                // The rest of Unicode's invisible format characters: the
                // soft hyphen, Mongolian vowel separator, interlinear
                // annotation marks, tag characters; and variation
                // selectors. Two strings that differ only in these would
                // look the same.
                | '\u{00ad}'
                | '\u{180b}'..='\u{180f}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
                | '\u{e0100}'..='\u{e01ef}'
        )
}

/// JSON text with every unprintable character inside it written as a
/// `\uXXXX` escape: the same JSON to a parser, plain text to a terminal
/// (serde_json escapes only C0 controls; C1 ones, DEL and bidi controls
/// from a device string would pass).
pub fn json_printable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_unprintable(c) && !matches!(c, '\n' | '\t' | '\r') {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The characters of one value a report shows (a table cell, a reason, a
/// note), in every format: past them, "…".
pub const CELL_CHARS: usize = 500;

/// "1 check", "2 checks": a count and its noun, singular for one.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `s` cut to `max_chars` characters (then "…"); `s` itself when shorter.
pub fn cut(s: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => std::borrow::Cow::Owned(format!("{}…", &s[..at])),
        None => std::borrow::Cow::Borrowed(s),
    }
}

/// `s` with each unprintable character written as `\u{..}`, cut to
/// `max_chars` characters (then "…").
pub fn printable(s: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == max_chars {
            out.push('…');
            break;
        }
        if is_unprintable(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// A whole text (a report, a table) with every unprintable character but
/// its line breaks and tabs written as `\u{..}`: what a run or a bundle
/// said reaches a terminal as text, never as a control sequence.
pub fn printable_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_unprintable(c) && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// One string from the run or the bundle, on one line: its control
/// characters (line breaks included) escaped, and in Markdown the
/// characters that start emphasis, code, links, images or a tag escaped
/// so it can add no line, heading or formatting of its own.
pub fn inline(v: &str, md: bool) -> String {
    let v = printable(v, CELL_CHARS);
    if !md {
        return v;
    }
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        // '<' only where it would open a tag or comment ("< 5%" stays).
        let tag = c == '<'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || "/!?".contains(*n));
        // ('|' only matters in a table cell, where the table escapes it.)
        if tag || "\\`*_[]!".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text for an HTML page, the one escaper of every page storcert makes
/// (the report, `compare`, the collector's pages): `& < > " '` as entities,
/// so it is safe in element content and in a quoted attribute; and every
/// unprintable character (C0 and C1 controls, DEL, bidi controls and
/// isolates, zero-width characters) written as `\u{..}`, as the text
/// formats write it. A visible escape rather than U+FFFD: the reader sees
/// that a bundle held an escape sequence or a bidi override, and which, and
/// two different strings do not look alike. A page is often read on a
/// terminal (piped, `cat`, `less -R`), where a raw ESC would repaint it;
/// in a browser a bidi override would reorder what the page says. Line
/// breaks and tabs are kept: white space to a browser, harmless to a
/// terminal.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if is_unprintable(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// A label value as Prometheus' text format reads it: cut at `max_chars`
/// characters, `\`, `"` and line breaks escaped, other control characters
/// dropped (a value a bundle or a heartbeat chose can start no line or
/// series of its own).
pub fn prometheus_label(v: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for c in v.chars().take(max_chars) {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{html_escape, json_printable, printable, printable_lines};

    #[test]
    fn html_text_is_escaped_and_loses_its_controls() {
        assert_eq!(
            html_escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        let hostile = "a\u{1b}]0;TITLE\u{7}\u{9b}2J\u{202e}b\r\u{2066}\u{200e}\u{61c}\u{7f}c\n\td";
        let safe = html_escape(hostile);
        assert_eq!(
            safe,
            "a\\u{1b}]0;TITLE\\u{7}\\u{9b}2J\\u{202e}b\\u{d}\\u{2066}\\u{200e}\\u{61c}\\u{7f}c\n\td"
        );
        assert!(safe
            .chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\t'));
        // Every bidi control of Unicode's list, C0 and C1 alike.
        for c in ('\u{202a}'..='\u{202e}')
            .chain('\u{2066}'..='\u{2069}')
            .chain(['\u{200e}', '\u{200f}', '\u{61c}'])
            .chain('\u{0}'..='\u{8}')
            .chain('\u{80}'..='\u{9f}')
        {
            assert!(!html_escape(&format!("x{c}y")).contains(c), "{c:?}");
        }
        assert_eq!(html_escape("é ü – 漢字"), "é ü – 漢字");
    }

    #[test]
    fn json_stays_the_same_json_and_becomes_plain_text() {
        let value = serde_json::json!({
            "model": "SSD\u{9b}2J\u{7f}\u{202e}x\u{2028}\u{1F600}",
            "list": ["a\nb"]
        });
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_printable(&text);
        assert!(
            safe.chars().all(|c| !c.is_control() || c == '\n'),
            "{safe:?}"
        );
        assert!(!safe.contains('\u{202e}') && !safe.contains('\u{2028}'));
        assert!(
            safe.contains("\\u009b") && safe.contains("\\u202e"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        // Printable text is left alone.
        assert_eq!(json_printable("{\"a\": \"é ü\"}"), "{\"a\": \"é ü\"}");
        assert_eq!(
            printable("a\u{061c}b\u{200b}c\u{feff}", 40),
            "a\\u{61c}b\\u{200b}c\\u{feff}"
        );
    }

    #[test]
    fn a_text_keeps_its_lines_and_loses_its_controls() {
        assert_eq!(
            printable_lines("a\tb\nc\u{1b}[2J\r\u{202e}d\n"),
            "a\tb\nc\\u{1b}[2J\\u{d}\\u{202e}d\n"
        );
    }

    #[test]
    fn escapes_and_bounds() {
        assert_eq!(printable("plain words", 80), "plain words");
        assert_eq!(
            printable("\u{1b}[2Jverdict: PASS\r\u{7}", 80),
            "\\u{1b}[2Jverdict: PASS\\u{d}\\u{7}"
        );
        assert_eq!(printable("a\u{202e}b\u{9b}c", 80), "a\\u{202e}b\\u{9b}c");
        assert_eq!(printable("abcdef", 3), "abc…");
        assert!(!printable(&"\u{1b}".repeat(10_000), 100).contains('\u{1b}'));
    }
}
