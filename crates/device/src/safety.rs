//! THE gate every writer goes through before touching a device.
//!
//! A target is refused when it is, or is on, the running system (a mounted
//! filesystem, active swap, the system disk), and — unless the operator
//! names it for destruction by serial, WWN or path (`--force-destroy`) —
//! when it is the boot medium, carries a partition table, has devices
//! stacked on it (md, dm), or holds a known filesystem or volume signature.
//! The gate only reads.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::inventory::{self, Disk, Roots, ScanOptions};
use crate::policy::PolicyError;

/// Who is allowed to be destroyed, by the operator's explicit word.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Serials, WWNs or paths named with --force-destroy, and the serials
    /// and WWNs a policy names with destroy = true.
    pub force_destroy: Vec<String>,
}

impl Overrides {
    /// --force-destroy words plus the drives `policy` allows destroying
    /// (rules with destroy = true match by exact serial or WWN alone).
    pub fn new(force: &[String], policy: Option<&Path>) -> Result<Overrides, PolicyError> {
        let mut force_destroy = force.to_vec();
        if let Some(p) = policy {
            let policy = crate::policy::Policy::from_file(p)?;
            for rule in policy.drives.iter().filter(|r| r.destroy == Some(true)) {
                force_destroy.extend(rule.matches.serial.iter().cloned());
                force_destroy.extend(rule.matches.wwn.iter().cloned());
            }
        }
        Ok(Overrides { force_destroy })
    }
}

/// A target the gate let through.
#[derive(Debug, Clone)]
pub struct Cleared {
    pub path: PathBuf,
    pub description: String,
    pub size_bytes: u64,
    pub is_block_device: bool,
    /// Why the gate let it through although it would refuse it otherwise.
    pub overridden: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("refusing to write to {path}: {reasons}")]
pub struct Refusal {
    pub path: String,
    pub reasons: String,
}

/// The name storcert gives the one partition it makes.
pub const STORCERT_PARTITION: &str = "storcert";

/// Bytes [start, end) of storcert's spare-area partition when `path`'s GPT
/// holds that partition and no other: a table storcert wrote and nothing
/// else did.
pub fn storcert_partition(path: &Path) -> Option<(u64, u64)> {
    let mut f = File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    let sector = if meta.file_type().is_block_device() {
        u64::from(crate::blockdev::logical_block_size(&f).ok()?)
    } else {
        512
    };
    let gpt = gptman::GPT::read_from(&mut f, sector).ok()?;
    let used: Vec<(u32, &gptman::GPTPartitionEntry)> =
        gpt.iter().filter(|(_, p)| p.is_used()).collect();
    match used.as_slice() {
        [(1, p)] if p.partition_name.as_str() == STORCERT_PARTITION => {
            Some((p.starting_lba * sector, (p.ending_lba + 1) * sector))
        }
        _ => None,
    }
}

/// What storcert's partition on `path` holds now, when that is a known
/// filesystem or volume (it was formatted and put to use since): then it
/// is no test data of storcert's to take away.
pub fn storcert_partition_in_use(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileExt;
    let (start, end) = storcert_partition(path)?;
    let f = File::open(path).ok()?;
    let mut head = vec![0u8; (128 * 1024).min(end - start) as usize];
    let n = f.read_at(&mut head, start).ok()?;
    head.truncate(n);
    detect_signature(&head)
}

/// What to do about a drive that carries storcert's spare partition, in
/// place of the advice to destroy it: that would write over the spare area.
fn spare_partition_hint(path: &Path, listed: Option<&str>) -> String {
    let dev = path.display();
    let test = match listed {
        Some(p) => format!("to test within the spare area's bounds, give its partition /dev/{p}"),
        None => format!(
            "to test within the spare area's bounds, have the kernel list its partition \
             (blockdev --rereadpt {dev}) and give that"
        ),
    };
    format!(
        "it carries storcert's spare-area partition: {test}; to test the whole drive, \
         remove the partition first with storcert provision --remove --device {dev} \
         --force-destroy SERIAL (--force-destroy on a test would write over the spare area)"
    )
}

/// Known on-disk signatures and where they live.
pub fn detect_signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    if at(1080, &[0x53, 0xef]) {
        return Some("ext2/3/4 filesystem");
    }
    if at(0, b"XFSB") {
        return Some("xfs filesystem");
    }
    if at(65536 + 64, b"_BHRfS_M") {
        return Some("btrfs filesystem");
    }
    if at(3, b"NTFS    ") {
        return Some("ntfs filesystem");
    }
    if at(512, b"EFI PART") {
        return Some("GPT partition table");
    }
    if at(512 + 24, b"LVM2 001") || at(24, b"LVM2 001") {
        return Some("LVM2 physical volume");
    }
    if at(4096, &[0xfc, 0x4e, 0x2b, 0xa9]) || at(0, &[0xfc, 0x4e, 0x2b, 0xa9]) {
        return Some("mdraid member");
    }
    if at(4096 - 10, b"SWAPSPACE2") || at(4096 - 10, b"SWAP-SPACE") {
        return Some("swap area");
    }
    if at(510, &[0x55, 0xaa]) {
        if at(54, b"FAT") || at(82, b"FAT32") {
            return Some("vfat filesystem");
        }
        // An MBR with at least one partition entry in use.
        let used = (0..4).any(|i| head.get(446 + i * 16 + 4).is_some_and(|&t| t != 0));
        if used {
            return Some("MBR partition table");
        }
    }
    None
}

/// Reads the first 128 KiB plus the last 128 KiB (md 0.90/1.0 and the
/// backup GPT live at the end).
fn read_signatures(path: &Path, size: u64) -> std::io::Result<Option<&'static str>> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path)?;
    let mut head = vec![0u8; 128 * 1024];
    let n = read_full(&mut f, &mut head)?;
    head.truncate(n);
    if let Some(sig) = detect_signature(&head) {
        return Ok(Some(sig));
    }
    if size >= 256 * 1024 {
        // md 0.90 superblock: 64 KiB-aligned, 64 KiB before the end.
        let sb = (size & !(64 * 1024 - 1)) - 64 * 1024;
        f.seek(SeekFrom::Start(sb))?;
        let mut magic = [0u8; 4];
        if read_full(&mut f, &mut magic)? == 4 && magic == [0xfc, 0x4e, 0x2b, 0xa9] {
            return Ok(Some("mdraid member (0.90/1.0 superblock)"));
        }
    }
    Ok(None)
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read(&mut buf[done..])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

fn named(overrides: &Overrides, disk: Option<&Disk>, path: &Path) -> Option<String> {
    let p = path.display().to_string();
    overrides.force_destroy.iter().find_map(|want| {
        let hit = *want == p
            || disk.is_some_and(|d| {
                d.serial.as_deref() == Some(want.as_str())
                    || d.wwn.as_deref() == Some(want.as_str())
                    || d.eui64.as_deref() == Some(want.as_str())
            });
        hit.then(|| want.clone())
    })
}

/// Decides whether `path` may be written to.
/// Why a device could not be looked at; "permission denied" says that
/// root is needed, and for what.
fn access(what: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        format!("permission denied: storcert needs root to {what} (run it as root)")
    } else {
        format!("cannot {what}: {e}")
    }
}

fn refusal(path: &Path, reasons: Vec<String>) -> Refusal {
    Refusal {
        path: path.display().to_string(),
        reasons: reasons.join("; "),
    }
}

pub fn check(path: &Path, roots: &Roots, overrides: &Overrides) -> Result<Cleared, Refusal> {
    let refuse = |reasons: Vec<String>| refusal(path, reasons);
    // A name under /dev is a device: a mistyped one must not become a new
    // file in RAM that is then "benchmarked".
    let under_dev = std::path::absolute(path)
        .map(|p| p.starts_with("/dev"))
        .unwrap_or(false);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && under_dev => {
            return Err(refuse(vec![
                "no such device (a name under /dev is never created as a file: check it against `storcert inventory`)".into(),
            ]))
        }
        // A file that does not exist yet holds nothing: writers create it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Cleared {
                path: path.to_path_buf(),
                description: format!("new file {}", path.display()),
                size_bytes: 0,
                is_block_device: false,
                overridden: Vec::new(),
            })
        }
        Err(e) => return Err(refuse(vec![access("inspect it", &e)])),
    };
    if meta.is_file() && under_dev {
        return Err(refuse(vec![
            "a regular file under /dev, not a device (left by a mistyped name? remove it)".into(),
        ]));
    }
    if meta.is_file() {
        return check_file(path, meta.len(), overrides);
    }
    if !meta.file_type().is_block_device() {
        return Err(refuse(vec![
            "it is neither a block device nor a regular file".into(),
        ]));
    }
    check_block_device(path, meta.rdev(), roots, overrides)
}

/// A regular file: only a filesystem in it stands in the way.
fn check_file(path: &Path, len: u64, overrides: &Overrides) -> Result<Cleared, Refusal> {
    let sig = read_signatures(path, len).map_err(|e| {
        refusal(
            path,
            vec![access("read it to look for filesystem signatures", &e)],
        )
    })?;
    let mut overridden = Vec::new();
    if let Some(sig) = sig {
        match named(overrides, None, path) {
            Some(by) => overridden.push(format!("holds a {sig} (named by --force-destroy {by})")),
            None => return Err(refusal(path, vec![format!("it holds a {sig}")])),
        }
    }
    Ok(Cleared {
        path: path.to_path_buf(),
        description: format!("file {}", path.display()),
        size_bytes: len,
        is_block_device: false,
        overridden,
    })
}

/// A block device (a disk or one of its partitions), read through the
/// inventory: what it holds and who uses it.
fn check_block_device(
    path: &Path,
    rdev: u64,
    roots: &Roots,
    overrides: &Overrides,
) -> Result<Cleared, Refusal> {
    let devnum = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    let name = inventory::sysfs::name_of_devnum(roots, &devnum)
        .ok_or_else(|| refusal(path, vec![format!("device {devnum} is not in sysfs")]))?;
    let class = roots.sys.join("class/block").join(&name);
    let is_partition = class.join("partition").exists();
    let disk_name = if is_partition {
        std::fs::canonicalize(&class)
            .ok()
            .and_then(|p| {
                p.parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| name.clone())
    } else {
        name.clone()
    };
    let inv = inventory::scan(
        roots,
        &ScanOptions {
            all: true,
            devices: vec![disk_name.clone()],
            no_probe: false,
        },
    );
    let disk = inv.disks.iter().find(|d| d.name == disk_name);
    let (mut hard, mut soft) = match disk {
        Some(d) => in_use(d, &name, is_partition),
        None => (Vec::new(), Vec::new()),
    };
    let size = std::fs::read_to_string(class.join("size"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 512;
    match read_signatures(path, size) {
        Ok(Some(sig)) => soft.push(format!("it holds a {sig}")),
        Ok(None) => {}
        Err(e) => hard.push(access("read it to look for filesystem signatures", &e)),
    }
    if !hard.is_empty() {
        hard.extend(soft);
        return Err(refusal(path, hard));
    }
    let overridden = overridden_or_refused(path, disk, is_partition, soft, overrides)?;
    let description = match disk {
        Some(d) => format!(
            "{} ({} {}, serial {}, {} bytes)",
            path.display(),
            d.transport.as_str(),
            d.model.as_deref().unwrap_or("?"),
            d.serial.as_deref().unwrap_or("?"),
            size
        ),
        None => format!("{} ({size} bytes)", path.display()),
    };
    Ok(Cleared {
        path: path.to_path_buf(),
        description,
        size_bytes: size,
        is_block_device: true,
        overridden,
    })
}

/// What stands in the way of writing to disk `d` (or its partition
/// `name`): hard reasons (the running system, a mount), which nothing
/// overrides, and soft ones (the boot medium, partitions, holders), which
/// naming the disk with --force-destroy does.
fn in_use(d: &Disk, name: &str, is_partition: bool) -> (Vec<String>, Vec<String>) {
    let mut hard = Vec::new();
    let mut soft = Vec::new();
    if d.system_disk {
        hard.push(format!(
            "{} holds the running system ({})",
            d.name,
            d.role_reasons.join(", ")
        ));
    }
    let part = d.partitions.iter().find(|p| p.name == name);
    let mounts: Vec<String> = if is_partition {
        part.map(|p| p.mountpoints.clone()).unwrap_or_default()
    } else {
        d.mountpoints
            .iter()
            .chain(d.partitions.iter().flat_map(|p| p.mountpoints.iter()))
            .cloned()
            .collect()
    };
    if !mounts.is_empty() {
        hard.push(format!("mounted on {}", mounts.join(", ")));
    }
    if d.boot_medium {
        soft.push(format!("{} is the boot medium", d.name));
    }
    if !is_partition && !d.partitions.is_empty() {
        soft.push(format!(
            "{} has {} partition(s)",
            d.name,
            d.partitions.len()
        ));
    }
    let holders: Vec<String> = if is_partition {
        part.map(|p| p.holders.clone()).unwrap_or_default()
    } else {
        d.holders.clone()
    };
    if !holders.is_empty() {
        soft.push(format!("in use by {}", holders.join(", ")));
    }
    (hard, soft)
}

/// The soft reasons, each overridden when --force-destroy names the disk;
/// otherwise the refusal, with what to do about it.
fn overridden_or_refused(
    path: &Path,
    disk: Option<&Disk>,
    is_partition: bool,
    mut soft: Vec<String>,
    overrides: &Overrides,
) -> Result<Vec<String>, Refusal> {
    if soft.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(by) = named(overrides, disk, path) {
        return Ok(soft
            .into_iter()
            .map(|r| format!("{r} (named by --force-destroy {by})"))
            .collect());
    }
    let listed = disk.and_then(|d| match d.partitions.as_slice() {
        [p] => Some(p.name.as_str()),
        _ => None,
    });
    soft.push(
        if !is_partition
            && storcert_partition(path).is_some()
            && storcert_partition_in_use(path).is_none()
        {
            spare_partition_hint(path, listed)
        } else {
            "name it with --force-destroy SERIAL to allow destroying it".into()
        },
    );
    Err(refusal(path, soft))
}

/// Checks every target; all must pass before anything is written.
pub fn check_all(paths: &[PathBuf], overrides: &Overrides) -> Result<Vec<Cleared>, Refusal> {
    let roots = Roots::default();
    paths.iter().map(|p| check(p, &roots, overrides)).collect()
}

/// The dry-run plan printed before any write.
pub fn plan(action: &str, targets: &[Cleared]) -> String {
    let mut s = format!("storcert will {action} on:\n");
    for t in targets {
        s.push_str(&format!("  WRITE {}\n", t.description));
        for o in &t.overridden {
            s.push_str(&format!("    allowed although {o}\n"));
        }
    }
    s.push_str("Data on these targets will be overwritten.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_signatures() {
        let mut b = vec![0u8; 128 * 1024];
        assert_eq!(detect_signature(&b), None);
        b[1080] = 0x53;
        b[1081] = 0xef;
        assert_eq!(detect_signature(&b), Some("ext2/3/4 filesystem"));
        let mut b = vec![0u8; 128 * 1024];
        b[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(detect_signature(&b), Some("GPT partition table"));
        let mut b = vec![0u8; 128 * 1024];
        b[4086..4096].copy_from_slice(b"SWAPSPACE2");
        assert_eq!(detect_signature(&b), Some("swap area"));
        let mut b = vec![0u8; 128 * 1024];
        b[510] = 0x55;
        b[511] = 0xaa;
        assert_eq!(
            detect_signature(&b),
            None,
            "boot signature alone, no partitions"
        );
        b[446 + 4] = 0x83;
        assert_eq!(detect_signature(&b), Some("MBR partition table"));
        b[82..87].copy_from_slice(b"FAT32");
        assert_eq!(detect_signature(&b), Some("vfat filesystem"));
        let mut b = vec![0u8; 128 * 1024];
        b[536..544].copy_from_slice(b"LVM2 001");
        assert_eq!(detect_signature(&b), Some("LVM2 physical volume"));
        let mut b = vec![0u8; 128 * 1024];
        b[4096..4100].copy_from_slice(&[0xfc, 0x4e, 0x2b, 0xa9]);
        assert_eq!(detect_signature(&b), Some("mdraid member"));
        let mut b = vec![0u8; 128 * 1024];
        b[0..4].copy_from_slice(b"XFSB");
        assert_eq!(detect_signature(&b), Some("xfs filesystem"));
        // Short reads are fine.
        assert_eq!(detect_signature(&[1, 2, 3]), None);
    }

    #[test]
    fn files_with_a_filesystem_are_refused_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        let mut b = vec![0u8; 1 << 20];
        b[1080] = 0x53;
        b[1081] = 0xef;
        std::fs::write(&path, &b).unwrap();
        let roots = Roots::default();
        let err = check(&path, &roots, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("ext2/3/4"), "{err}");
        let ok = check(
            &path,
            &roots,
            &Overrides {
                force_destroy: vec![path.display().to_string()],
            },
        )
        .unwrap();
        assert_eq!(ok.overridden.len(), 1);
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        assert!(check(&path, &roots, &Overrides::default()).is_ok());
        assert!(check(&dir.path().join("new"), &roots, &Overrides::default()).is_ok());
        assert!(check(Path::new("/dev/null"), &roots, &Overrides::default()).is_err());
    }
}
