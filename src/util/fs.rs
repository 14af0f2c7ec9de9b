//! Durable writes: a result file is whole or absent after a crash or a
//! power cut, never torn, and folders made for it survive too.

use std::io::Write;
use std::path::Path;

/// Writes a result file whole or not at all: a temporary beside it,
/// fsync, rename into place, then fsync of the folder, so a crash or power
/// loss leaves the old file or the new one, never a torn one.
/// A path that exists and is not a regular file (/dev/stdout, a pipe) is
/// written directly, as there is nothing to replace.
pub fn write_durably(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_durably_mode(path, data.as_ref(), 0o644)
}

/// `write_durably` for secrets: the file is 0600 from its creation on.
pub fn write_secret(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_durably_mode(path, data.as_ref(), 0o600)
}

fn write_durably_mode(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, data);
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    // vfat writes a renamed file's new directory entry with size 0 and no
    // first cluster until the file itself is written back: without this
    // second fsync a power cut leaves an empty file under the final name
    // (found by the lab's power-cut test on a STORCERT stick).
    std::fs::File::open(path)?.sync_all()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Creates `dir` and any missing parents so that they survive a power
/// cut: each new folder's parent is fsynced after the folder is made (a
/// fresh folder on vfat is otherwise lost with everything written in it).
pub fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    create_dir_durably(parent)?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    std::fs::File::open(dir)?.sync_all()?;
    std::fs::File::open(parent)?.sync_all()
}

/// A result as pretty JSON through `write_durably`.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    write_durably(path, &(text + "\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_durably_replaces_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_durably(&path, "old\n").unwrap();
        write_json(&path, &serde_json::json!({"load": 3})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"load\": 3\n}\n"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["result.json"]);
        // Not a regular file: written in place, no temporary in /dev.
        write_durably(Path::new("/dev/null"), "x").unwrap();
        assert!(!Path::new("/dev/null.tmp").exists());
        // A folder that does not exist: an error, not a panic.
        assert!(write_durably(&dir.path().join("missing/r.json"), "x").is_err());
        // Folders made durably, parents included; existing ones are fine.
        let deep = dir.path().join("a/b/c");
        create_dir_durably(&deep).unwrap();
        create_dir_durably(&deep).unwrap();
        assert!(deep.is_dir());
    }
}
