//! Shell-style patterns for policy matches: `*` any run, `?` one
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

#[cfg(test)]
mod tests {
    use super::matches;

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
