//! Whether drives may be searched side by side (`act search --parallel`):
//! separate drives, identical as they identify themselves. Each trial's
//! load is one drive's; two names for one drive, or two files on one
//! filesystem, would add their loads up on one device and the answer
//! would be wrong.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::util::text::printable;

/// What one named drive is.
enum Drive {
    /// A block device: the kernel name of its disk (a partition's is its
    /// disk's).
    Disk(String),
    /// A regular file, there or to be made: its filesystem, its inode
    /// where it is there, its path, its size.
    File {
        fs: u64,
        inode: Option<u64>,
        path: PathBuf,
        bytes: u64,
    },
}

/// Refuses fewer than two drives, one drive named twice, files on one
/// filesystem (unless no I/O is done: the null engine), and drives not
/// alike: the model, firmware and capacity the inventory reads (a drive
/// whose model or firmware is unknown cannot be known to be alike), or
/// for files one size (`file_size` where the run sets it).
pub fn check(names: &[String], file_size: u64, null_engine: bool) -> Result<(), String> {
    if names.len() < 2 {
        return Err("a search side by side needs two drives or more".into());
    }
    let drives: Vec<Drive> = names
        .iter()
        .map(|n| what(n, file_size).map_err(|e| format!("{}: {e}", printable(n, 200))))
        .collect::<Result<_, _>>()?;
    for (i, a) in drives.iter().enumerate() {
        for (j, b) in drives.iter().enumerate().skip(i + 1) {
            if let Some(why) = shared(a, b, null_engine) {
                return Err(format!(
                    "{} and {} {why}",
                    printable(&names[i], 200),
                    printable(&names[j], 200)
                ));
            }
        }
    }
    let inv = drives.iter().any(|d| matches!(d, Drive::Disk(_))).then(|| {
        crate::inventory::scan(
            &crate::inventory::Roots::default(),
            &crate::inventory::ScanOptions {
                all: true,
                ..Default::default()
            },
        )
    });
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, d) in names.iter().zip(&drives) {
        let kind = match d {
            Drive::File { bytes, .. } => format!("a regular file of {bytes} bytes"),
            Drive::Disk(disk) => inv
                .iter()
                .flat_map(|i| &i.disks)
                .find(|x| &x.name == disk)
                .ok_or("not in the inventory")
                .and_then(|x| {
                    x.likeness()
                        .ok_or("its model or firmware is unknown, so it cannot be known to be alike the others")
                })
                .map_err(|e| format!("{}: {e}", printable(name, 200)))?,
        };
        kinds.entry(kind).or_default().push(printable(name, 200));
    }
    if kinds.len() > 1 {
        let groups: Vec<String> = kinds
            .iter()
            .map(|(kind, ds)| format!("{} ({})", ds.join(", "), printable(kind, 200)))
            .collect();
        return Err(format!(
            "the drives are not alike: {}; search each group on its own",
            groups.join("; ")
        ));
    }
    Ok(())
}

/// Why two drives are not two separate drives, if they are not.
fn shared(a: &Drive, b: &Drive, null_engine: bool) -> Option<&'static str> {
    match (a, b) {
        (Drive::Disk(x), Drive::Disk(y)) if x == y => Some("are the same drive"),
        (
            Drive::File {
                fs: f,
                inode: Some(i),
                ..
            },
            Drive::File {
                fs: g,
                inode: Some(j),
                ..
            },
        ) if (f, i) == (g, j) => Some("are the same file"),
        (Drive::File { path: p, .. }, Drive::File { path: q, .. }) if p == q => {
            Some("are the same file")
        }
        (Drive::File { fs: f, .. }, Drive::File { fs: g, .. }) if f == g && !null_engine => Some(
            "are files on one filesystem: their loads would add up on one device \
             (side by side needs separate drives; the null engine does no I/O)",
        ),
        _ => None,
    }
}

/// What a name is: a block device's disk, or a regular file (one that is
/// not there yet is made at `file_size`).
fn what(name: &str, file_size: u64) -> Result<Drive, String> {
    let path = Path::new(name);
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => disk_of(m.rdev()).map(Drive::Disk),
        Ok(m) if m.is_file() => Ok(Drive::File {
            fs: m.dev(),
            inode: Some(m.ino()),
            path: std::fs::canonicalize(path).map_err(|e| e.to_string())?,
            bytes: if file_size > 0 { file_size } else { m.len() },
        }),
        Ok(_) => Err("neither a block device nor a regular file".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && file_size > 0 => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let dir = std::fs::canonicalize(parent).map_err(|e| format!("its folder: {e}"))?;
            let fs = std::fs::metadata(&dir).map_err(|e| e.to_string())?.dev();
            Ok(Drive::File {
                fs,
                inode: None,
                path: dir.join(path.file_name().ok_or("no file name")?),
                bytes: file_size,
            })
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The kernel name of the disk a block device (by its device number) is,
/// or is a partition of, by the inventory's own sysfs reading.
fn disk_of(rdev: u64) -> Result<String, String> {
    use crate::inventory::sysfs::{name_of_devnum, underlying_disks};
    let roots = crate::inventory::Roots::default();
    let devnum = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    let name = name_of_devnum(&roots, &devnum)
        .ok_or_else(|| format!("block device {devnum} is not in sysfs"))?;
    let class = roots.sys.join("class/block").join(&name);
    if !roots.exists(&class.join("partition")) {
        return Ok(name);
    }
    underlying_disks(&roots, &name)
        .into_iter()
        .next()
        .ok_or_else(|| "its disk has no name in sysfs".into())
}
