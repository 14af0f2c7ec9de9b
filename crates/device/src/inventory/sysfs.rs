//! Reading sysfs (and the /proc files that go with it) for the block
//! devices, partitions, mounts and holders. Every path is taken relative to
//! a `Roots` and read through it, so tests run against recorded trees and
//! a capture holds every file read.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use super::{capture, Roots};
use storcert_util::text::printable;

/// The most of an attribute kept: the kernel's sysfs attributes are at
/// most a page, so anything longer is a replayed capture's, and would be
/// kept once per device that reads it.
const MAX_ATTR: usize = 4096;

/// Reads one sysfs attribute, trimmed, at most `MAX_ATTR` bytes of it.
pub fn read_attr(roots: &Roots, path: &Path) -> io::Result<String> {
    let mut text = roots.read_to_string(path)?;
    if text.len() > MAX_ATTR {
        let mut at = MAX_ATTR;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    Ok(text.trim().to_string())
}

/// An attribute that could not be read or parsed, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum AttrError {
    #[error("{}: {err}", path.display())]
    Read { path: PathBuf, err: io::Error },
    #[error("{}: cannot parse {text:?}", path.display())]
    Parse { path: PathBuf, text: String },
}

/// Reads and parses one attribute; the error names the file and the text.
pub fn parse_attr<T: std::str::FromStr>(roots: &Roots, path: &Path) -> Result<T, AttrError> {
    let text = read_attr(roots, path).map_err(|err| AttrError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    text.parse().map_err(|_| AttrError::Parse {
        path: path.to_path_buf(),
        text,
    })
}

/// An optional attribute: None when absent or empty.
pub fn opt_attr(roots: &Roots, path: &Path) -> Option<String> {
    read_attr(roots, path).ok().filter(|s| !s.is_empty())
}

/// Names of the entries of a sysfs directory (empty when absent).
pub fn list_dir(roots: &Roots, path: &Path) -> Vec<String> {
    let mut names: Vec<String> = roots.read_dir(path).unwrap_or_default();
    names.sort();
    names
}

/// One block device as sysfs lists it under /sys/block.
#[derive(Debug, Clone)]
pub struct BlockEntry {
    pub name: String,
    /// /sys/block/NAME (a link).
    pub sys_path: PathBuf,
    /// The resolved device path, /sys/devices/...; used to find the
    /// controller and the transport.
    pub device_path: PathBuf,
}

pub fn block_devices(roots: &Roots) -> io::Result<Vec<BlockEntry>> {
    let dir = roots.sys.join("block");
    let mut names = list_dir_checked(roots, &dir)?;
    // Each disk costs a replay tens of questions: walk no more than a
    // real machine has (a capture's listing can be millions).
    if let Some(capture) = roots.replaying() {
        if names.len() > capture::MAX_DISKS {
            capture.cut(format!(
                "capture: {} lists {} block devices; only the first {} were read",
                printable(&dir.display().to_string(), 200),
                names.len(),
                capture::MAX_DISKS
            ));
            names.truncate(capture::MAX_DISKS);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let sys_path = dir.join(&name);
        let device_path = roots
            .canonicalize(&sys_path)
            .unwrap_or_else(|_| sys_path.clone());
        out.push(BlockEntry {
            name,
            sys_path,
            device_path,
        });
    }
    Ok(out)
}

fn list_dir_checked(roots: &Roots, path: &Path) -> io::Result<Vec<String>> {
    let mut names = roots.read_dir(path)?;
    names.sort_by_key(|n| natural_key(n));
    Ok(names)
}

/// Sort key that puts sdb before sdaa and nvme2n1 before nvme10n1: the
/// device family first, then the rest in chunks, letters by length then
/// text, digits by value.
pub fn natural_key(name: &str) -> (String, Vec<(u64, String)>) {
    const FAMILIES: [&str; 12] = [
        "nvme", "mmcblk", "zram", "loop", "xvd", "ram", "dm-", "sd", "vd", "hd", "sr", "md",
    ];
    let family = FAMILIES
        .iter()
        .find(|f| name.starts_with(*f))
        .map(|f| f.to_string())
        .unwrap_or_else(|| name.chars().take_while(|c| !c.is_ascii_digit()).collect());
    let rest = &name[family.len()..];
    let mut chunks = Vec::new();
    let mut current = String::new();
    for c in rest.chars() {
        if !current.is_empty() && current.chars().all(|d| d.is_ascii_digit()) != c.is_ascii_digit()
        {
            chunks.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    let key = chunks
        .into_iter()
        .map(|c| match c.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (c.len() as u64, c),
        })
        .collect();
    (family, key)
}

/// Partitions of a disk: subdirectories that carry a `partition` file.
pub fn partition_names(roots: &Roots, disk_sys: &Path) -> Vec<String> {
    let mut parts: Vec<String> = list_dir(roots, disk_sys)
        .into_iter()
        .filter(|n| roots.exists(&disk_sys.join(n).join("partition")))
        .collect();
    parts.sort_by_key(|n| natural_key(n));
    parts
}

/// Mount points by device number ("8:1"), from mountinfo; a mount whose
/// device number is anonymous (btrfs, major 0) is placed by its source.
pub fn mounts_by_devnum(roots: &Roots) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(text) = roots.read_to_string(&roots.proc.join("self/mountinfo")) else {
        return map;
    };
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() < 10 {
            continue;
        }
        let mut devnum = fields[2].to_string();
        let mountpoint = unescape_octal(fields[4]);
        if devnum.starts_with("0:") {
            let Some(dash) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            match fields
                .get(dash + 2)
                .and_then(|src| devnum_of_path(roots, Path::new(src)))
            {
                Some(d) => devnum = d,
                None => continue,
            }
        }
        map.entry(devnum).or_default().push(mountpoint);
    }
    map
}

/// Device numbers of active swap devices, from /proc/swaps.
pub fn swap_devnums(roots: &Roots) -> BTreeSet<String> {
    let Ok(text) = roots.read_to_string(&roots.proc.join("swaps")) else {
        return BTreeSet::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| devnum_of_path(roots, Path::new(&unescape_octal(p))))
        .collect()
}

pub fn devnum_of_path(roots: &Roots, path: &Path) -> Option<String> {
    let rdev = roots.block_device(path)?;
    Some(format!("{}:{}", libc::major(rdev), libc::minor(rdev)))
}

/// mountinfo escapes space, tab, newline and backslash as \ooo. Anything
/// else after a backslash (never from a kernel, but a capture is anyone's)
/// is kept as it is.
pub fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if let Some(oct) = bytes
                .get(i + 1..i + 4)
                .filter(|o| o.iter().all(|b| (b'0'..=b'7').contains(b)))
            {
                let v = oct.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The kernel name behind a device number, via /sys/dev/block.
pub fn name_of_devnum(roots: &Roots, devnum: &str) -> Option<String> {
    let link = roots
        .read_link(&roots.sys.join("dev/block").join(devnum))
        .ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The disks under a block device: itself if a whole disk, its parent if a
/// partition, and for stacked devices (dm, md) the disks under its slaves.
/// Each device is visited once, at most `MAX_STACK` of them: a cycle or a
/// fan of slaves (a capture is anyone's) costs no more than a real stack.
pub fn underlying_disks(roots: &Roots, name: &str) -> BTreeSet<String> {
    const MAX_STACK: usize = 4096;
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(name) = todo.pop() {
        if seen.len() >= MAX_STACK || !seen.insert(name.clone()) {
            continue;
        }
        let class = roots.sys.join("class/block").join(&name);
        if roots.exists(&class.join("partition")) {
            if let Ok(real) = roots.canonicalize(&class) {
                if let Some(parent) = real.parent().and_then(|p| p.file_name()) {
                    out.insert(parent.to_string_lossy().into_owned());
                }
            }
            continue;
        }
        let slaves = list_dir(roots, &class.join("slaves"));
        if slaves.is_empty() {
            out.insert(name);
        }
        todo.extend(slaves);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_mountinfo_paths() {
        assert_eq!(unescape_octal("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_octal("/plain"), "/plain");
        assert_eq!(unescape_octal("/trail\\04"), "/trail\\04");
        // Not from a kernel: a backslash before a multi-byte character, or
        // before digits that are not octal or overflow a byte.
        assert_eq!(unescape_octal("/mnt/\\abé"), "/mnt/\\abé");
        assert_eq!(unescape_octal("/mnt/\\é"), "/mnt/\\é");
        assert_eq!(unescape_octal("/x\\089"), "/x\\089");
        assert_eq!(unescape_octal("/x\\777"), "/x\\777");
    }

    #[test]
    fn a_cycle_or_fan_of_slaves_is_walked_once_per_device() {
        // dm-0..dm-5, each listing all six as its slaves: the old
        // depth-limited recursion made 6^9 calls.
        let tmp = tempfile::tempdir().unwrap();
        let roots = Roots::under(tmp.path());
        for n in 0..6 {
            let slaves = roots.sys.join(format!("class/block/dm-{n}/slaves"));
            std::fs::create_dir_all(&slaves).unwrap();
            for m in 0..6 {
                std::fs::write(slaves.join(format!("dm-{m}")), b"").unwrap();
            }
        }
        let capture = crate::inventory::capture::Capture::recording();
        let roots = Roots {
            source: crate::inventory::capture::Source::Capturing(capture.clone()),
            ..roots
        };
        assert!(underlying_disks(&roots, "dm-0").is_empty());
        // One listing per device: the walk asked about six devices.
        let archive = capture.to_archive(&roots, &Default::default()).unwrap();
        let replay = crate::inventory::capture::read_archive(&archive).unwrap();
        assert!(underlying_disks(&replay.roots, "dm-3").is_empty());
        assert_eq!(replay.capture.missing().0, 0);
        // A plain stack still resolves to its disks.
        let tmp = tempfile::tempdir().unwrap();
        let roots = Roots::under(tmp.path());
        for (dev, slaves) in [
            ("md0", vec!["sda", "sdb"]),
            ("sda", vec![]),
            ("sdb", vec![]),
        ] {
            let dir = roots.sys.join(format!("class/block/{dev}/slaves"));
            std::fs::create_dir_all(&dir).unwrap();
            for sl in slaves {
                std::fs::write(dir.join(sl), b"").unwrap();
            }
        }
        let disks: Vec<String> = underlying_disks(&roots, "md0").into_iter().collect();
        assert_eq!(disks, ["sda", "sdb"]);
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["sdaa", "sdb", "nvme10n1", "nvme2n1", "sda"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, vec!["nvme2n1", "nvme10n1", "sda", "sdb", "sdaa"]);
    }
}
