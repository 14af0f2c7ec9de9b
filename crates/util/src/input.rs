//! Reading small text inputs (configs, policies, profiles, keys, tokens)
//! that a user or a network names: only a regular file, and only up to a
//! size no such input needs to exceed, so naming /dev/zero or a FIFO is a
//! clear error instead of a hang or an exhausted memory.

use std::io::Read;
use std::path::Path;

/// The most any text input may hold.
pub const MAX_TEXT_INPUT: u64 = 4 << 20;

pub fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind};
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = String::new();
    f.take(MAX_TEXT_INPUT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_INPUT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("larger than {} MiB", MAX_TEXT_INPUT >> 20),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn devices_and_huge_files_are_refused() {
        let e = super::read_text(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"));
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(super::MAX_TEXT_INPUT + 10)
            .unwrap();
        assert!(super::read_text(&big)
            .unwrap_err()
            .to_string()
            .contains("larger"));
        assert!(super::read_text(dir.path()).is_err());
    }
}
