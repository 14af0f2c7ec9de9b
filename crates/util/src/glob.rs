//! Shell-style patterns (policy matches, driver lists, waivers): `*` any run, `?` one
//! character, everything else literal; case-insensitive, whole string.

pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    // Iterative matching with backtracking to the last star.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// `matches` for a pattern of at most 127 characters, in time linear in
/// both lengths (None for a longer pattern): the pattern's positions are
/// the bits of one word, and each character of `text` moves them all at
/// once. modules.alias holds tens of thousands of patterns, and where it
/// comes from a capture (anyone's file), no line may cost more than its
/// length.
pub fn matches_short(pattern: &str, text: &str) -> Option<bool> {
    let p = pattern.as_bytes();
    if p.len() > 127 {
        return None;
    }
    let bit = |i: usize| 1u128 << i;
    let (mut star, mut any) = (0u128, 0u128);
    // Literal positions by byte, lower-cased; only the bytes of `text`
    // are asked for, so the table is built from the pattern alone.
    let mut literal: Vec<(u8, u128)> = Vec::new();
    for (i, &c) in p.iter().enumerate() {
        match c {
            b'*' => star |= bit(i),
            b'?' => any |= bit(i),
            _ => {
                let c = c.to_ascii_lowercase();
                match literal.iter_mut().find(|(l, _)| *l == c) {
                    Some((_, m)) => *m |= bit(i),
                    None => literal.push((c, bit(i))),
                }
            }
        }
    }
    // A star at i lets i+1 be reached without a character (and a run of
    // stars all of them).
    let close = |mut d: u128| loop {
        let next = d | ((d & star) << 1);
        if next == d {
            return d;
        }
        d = next;
    };
    let mut state = close(bit(0));
    for c in text.bytes() {
        let c = c.to_ascii_lowercase();
        let lit = literal.iter().find(|(l, _)| *l == c).map_or(0, |(_, m)| *m);
        state = close((state & star) | ((state & (lit | any)) << 1));
        if state == 0 {
            return Some(false);
        }
    }
    Some(state & bit(p.len()) != 0)
}

#[cfg(test)]
mod tests {
    use super::{matches, matches_short};

    #[test]
    fn the_linear_match_agrees_with_the_plain_one() {
        let cases = [
            ("SAMSUNG MZ7KM*", "SAMSUNG MZ7KM480HAHP-00005"),
            ("samsung*", "SAMSUNG MZ7"),
            ("*", ""),
            ("", ""),
            ("", "x"),
            ("a?c", "abc"),
            ("a?c", "abbc"),
            ("*MZ*00005", "SAMSUNG MZ7KM480HAHP-00005"),
            ("MZ7*", "SAMSUNG MZ7"),
            ("**a**", "xay"),
            ("*a*b*c", "aXbYc"),
            ("*a*b*c", "aXbYcZ"),
            (
                "pci:v00001000d000000A5sv*sd*bc*sc*i*",
                "pci:v00001000d000000A5sv00001028sd00002200bc01sc04i00",
            ),
            (
                "pci:v*d*sv*sd*bc01sc08i02*",
                "pci:v0000144Dd0000A824sv0000144Dsd0000A801bc01sc08i02",
            ),
            (
                "pci:v*d*sv*sd*bc01sc08i02*",
                "pci:v0000144Dd0000A824sv0000144Dsd0000A801bc01sc04i00",
            ),
            ("?", ""),
            ("a*", "A"),
        ];
        for (p, t) in cases {
            assert_eq!(matches_short(p, t), Some(matches(p, t)), "{p:?} {t:?}");
        }
        // The worst case of backtracking: linear here.
        let text = "a".repeat(120);
        let pattern = format!("{}b", "*a".repeat(60));
        assert_eq!(matches_short(&pattern, &text), Some(false));
        assert_eq!(matches_short(&"*".repeat(128), "x"), None);
        assert_eq!(matches_short(&"*".repeat(127), "x"), Some(true));
    }

    #[test]
    fn globs() {
        assert!(matches("SAMSUNG MZ7KM*", "SAMSUNG MZ7KM480HAHP-00005"));
        assert!(matches("samsung*", "SAMSUNG MZ7"));
        assert!(matches("*", ""));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "abbc"));
        assert!(matches("*MZ*00005", "SAMSUNG MZ7KM480HAHP-00005"));
        assert!(!matches("MZ7*", "SAMSUNG MZ7"));
        assert!(matches("0000:00:03.0", "0000:00:03.0"));
        assert!(!matches("", "x"));
    }
}
