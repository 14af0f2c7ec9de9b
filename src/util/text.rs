//! Text from outside (a server's reply, a device's strings, a bundle's
//! fields) made safe to print: no control characters (escape sequences
//! that repaint a terminal, carriage returns that overwrite a line, bidi
//! overrides that reorder it) and a bounded length.

/// Whether `c` could change how a terminal shows what follows it.
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
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

#[cfg(test)]
mod tests {
    use super::{printable, printable_lines};

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
