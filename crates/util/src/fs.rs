//! Durable writes: a result file is whole or absent after a crash or a
//! power cut, never torn, and folders made for it survive too.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Why `path` is no place for an output, if it is not: a block or
/// character device (wherever its node or a link to it is), or anything
/// else under /dev, is never written or replaced by a report, log or
/// bundle. The exceptions: the caller's own standard output or error
/// (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`) where that is not a block
/// device (how a shell user asks for a stream), and /dev/null.
pub fn output_problem(path: &Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).ok();
    if meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device())
    {
        return Some(format!(
            "{shown} is a block device: storcert never writes an output into a device"
        ));
    }
    if own_stream(path) || is_null(path, meta.as_ref()) {
        return None;
    }
    if meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_char_device())
    {
        return Some(format!(
            "{shown} is a character device: storcert never writes an output into a device"
        ));
    }
    // Where the path lands once every link and `..` is followed: its
    // folder's real path (a link to /dev is /dev).
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let real = std::fs::canonicalize(&absolute).ok().or_else(|| {
        let parent = std::fs::canonicalize(absolute.parent()?).ok()?;
        Some(parent.join(absolute.file_name()?))
    });
    if absolute.starts_with("/dev") || real.is_some_and(|r| r.starts_with("/dev")) {
        return Some(format!(
            "{shown} is under /dev: outputs go to files and folders, never among devices"
        ));
    }
    None
}

/// /dev/null itself (character device 1:3): the one device an output may
/// go to, as it writes nowhere; how a user says "no log" (`--log
/// /dev/null`).
fn is_null(path: &Path, meta: Option<&std::fs::Metadata>) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    path == Path::new("/dev/null")
        && meta.is_some_and(|m| m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3))
}

/// The caller's own standard output or error, by the names a shell user
/// gives them: written where they point, never replaced.
pub fn own_stream(path: &Path) -> bool {
    matches!(path.to_str(), Some("/dev/stdout" | "/dev/stderr"))
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/")
}

fn refuse_device(path: &Path) -> std::io::Result<()> {
    match output_problem(path) {
        Some(why) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why)),
        None => Ok(()),
    }
}

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

/// A new file beside `path`, named `.NAME.RANDOM.tmp`, created
/// `O_CREAT|O_EXCL|O_NOFOLLOW` with `mode` from its first byte: a link or
/// file someone planted under a predictable name is never opened through.
pub fn create_temporary(path: &Path, mode: u32) -> std::io::Result<(std::fs::File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut rng = crate::random::Rng::from_entropy();
    loop {
        let tmp = path.with_file_name(format!(".{name}.{:016x}.tmp", rng.next_u64()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(mode)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

fn write_durably_mode(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    write_durably_as(path, mode, |f| f.write_all(data))
}

/// `write_durably` of what `write` writes as it goes (an export too large
/// to hold): into a temporary file beside `path`, synced, then renamed.
pub fn write_durably_with<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
) -> std::io::Result<T> {
    write_durably_as(path, 0o644, write)
}

fn write_durably_as<T>(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
) -> std::io::Result<T> {
    refuse_device(path)?;
    // The caller's own standard output: appended to where it points (a
    // pipe, a terminal, a file the shell opened), never renamed over.
    if own_stream(path) {
        let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
        return write(&mut f);
    }
    // A device or pipe the caller named (/dev/stdout): written in place,
    // opened without following a link (one swapped in since is refused).
    // Never a secret: that goes only to a new file of its own.
    if mode == 0o644
        && std::fs::symlink_metadata(path)
            .is_ok_and(|m| !m.is_file() && !m.is_dir() && !m.file_type().is_symlink())
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        return write(&mut f);
    }
    replace_with(path, mode, write)
}

/// `write_durably` that always puts a new file at `path` (a temporary
/// beside it, synced, renamed over), never writes into what is there: a
/// FIFO or device someone made where a file of ours goes is replaced,
/// not opened (a write into a FIFO nobody reads never returns; found in
/// review of the node_exporter textfile).
pub fn replace_durably(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    replace_with(path, 0o644, |f| f.write_all(data.as_ref()))
}

fn replace_with<T>(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
) -> std::io::Result<T> {
    refuse_device(path)?;
    let (mut f, tmp) = create_temporary(path, mode)?;
    let written = write(&mut f).and_then(|t| {
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(t)
    });
    let t = match written {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    drop(f);
    // vfat writes a renamed file's new directory entry with size 0 and no
    // first cluster until the file itself is written back: without this
    // second fsync a power cut leaves an empty file under the final name
    // (found by the lab's power-cut test on a STORCERT stick).
    open_nofollow(path)?.sync_all()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()?;
    Ok(t)
}

/// Opens `path` for reading if it is a regular file: not through a final
/// link, and never waiting (a FIFO put in its place opens at once and is
/// refused, as is anything else not a regular file).
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Opens `path` for reading without following a final link, and without
/// waiting: a FIFO swapped in since the rename opens at once (and its
/// fsync fails) instead of blocking until someone writes to it.
fn open_nofollow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
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
        assert!(!std::fs::read_dir("/dev").unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".null.")));
        // A folder that does not exist: an error, not a panic.
        assert!(write_durably(&dir.path().join("missing/r.json"), "x").is_err());
        // Folders made durably, parents included; existing ones are fine.
        let deep = dir.path().join("a/b/c");
        create_dir_durably(&deep).unwrap();
        create_dir_durably(&deep).unwrap();
        assert!(deep.is_dir());
    }

    #[test]
    fn a_planted_link_is_neither_followed_nor_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // A link at the final name, and at the old predictable temporary.
        let out = dir.path().join("report.html");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("report.html.tmp")).unwrap();
        write_durably(&out, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        // A secret is 0600 whatever the umask.
        let key = dir.path().join("k");
        write_secret(&key, "s").unwrap();
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
