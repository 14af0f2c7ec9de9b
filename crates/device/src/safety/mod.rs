//! THE gate every writer goes through before touching a device.
//!
//! Default deny. A block device is written only when one of these holds:
//! - it holds nothing: every byte where a libblkid prober could find a
//!   signature (`signature::HEAD_BYTES` from the start, `TAIL_BYTES` from
//!   the end) is zero;
//! - it holds only storcert's own test data: storcert's mark (`marker`),
//!   written after its last write with a digest of those regions, is there
//!   and the regions still match it, for this drive's serial;
//! - the operator named it by serial or WWN (`--force-destroy`,
//!   `devices.destroy`, a policy's destroy rule); a device with neither
//!   (a loop device) can only be named by its path.
//!
//! Nothing overrides a hard refusal: the running system, and a mount (in
//! any mount namespace), active swap or exclusive claim on the device, a
//! partition of it, or anything stacked on it (`users`). A regular file
//! is refused only when it holds a known signature. The gate only reads;
//! the one thing it hands out, `Cleared`, cannot be made elsewhere.

pub mod marker;
pub mod signature;
pub mod users;

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::inventory::{self, Disk, Roots, ScanOptions};
use crate::policy::PolicyError;
use marker::{Marker, Stamp, State};
use signature::Regions;

/// Who is allowed to be destroyed, by the operator's explicit word.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Serials, WWNs or paths named with --force-destroy, and the serials
    /// and WWNs a policy names with destroy = true.
    pub force_destroy: Vec<String>,
    /// The run writing: its id goes into storcert's mark, and a drive
    /// whose mark says this run was writing it (a resumed run) is its own.
    pub run: Option<String>,
    /// The drives an earlier start of a resumed run tested, by serial (or
    /// by path, for a device with no serial or WWN): its own writes,
    /// which overwrote its mark, are no one else's data.
    pub earlier: Vec<String>,
    /// storcert's own spare-area partition table (one partition, named
    /// "storcert", holding no signature) is the caller's to rewrite: a
    /// run's phases provision and remove it. Commands leave it false, and
    /// are told to test within the partition instead.
    pub own_table: bool,
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
        Ok(Overrides {
            force_destroy,
            run: None,
            earlier: Vec::new(),
            own_table: false,
        })
    }

    /// The same, for the run `id`.
    pub fn for_run(mut self, id: &str) -> Overrides {
        self.run = Some(id.to_string());
        self
    }
}

/// A target the gate let through. Only the gate makes one (its `stamp`
/// field is private), and every writer takes one, so a writer that skips
/// the gate does not compile.
#[derive(Debug, Clone)]
pub struct Cleared {
    pub path: PathBuf,
    pub description: String,
    pub size_bytes: u64,
    pub is_block_device: bool,
    /// What the gate found on it: "nothing", "storcert's test data (run
    /// X)", or what the operator's name overrode.
    pub holds: String,
    /// Why the gate let it through although it would refuse it otherwise.
    pub overridden: Vec<String>,
    /// The device number the gate judged: what the path must still name
    /// when a writer opens it (a link swapped since names another).
    rdev: Option<u64>,
    /// The block device's kernel name: its users are asked again once
    /// a writer holds it.
    name: Option<String>,
    stamp: Option<Stamp>,
}

/// Writing under storcert's mark: made when a writer opens a cleared
/// block device, it marks the device "tested" when dropped, after the
/// writer's last write (best effort: a mark that could not be written
/// leaves the device to be refused next time, the safe way round).
#[derive(Debug)]
pub struct Writing {
    stamp: Option<Stamp>,
}

impl Drop for Writing {
    fn drop(&mut self) {
        if let Some(s) = &self.stamp {
            let _ = s.finish();
        }
    }
}

impl Cleared {
    /// A regular file: what `check_file` fills in.
    fn new_file(path: &Path, size_bytes: u64) -> Cleared {
        Cleared {
            path: path.to_path_buf(),
            description: format!("file {}", path.display()),
            size_bytes,
            is_block_device: false,
            holds: "nothing yet".into(),
            overridden: Vec::new(),
            rdev: None,
            name: None,
            stamp: None,
        }
    }

    /// Opens the cleared target for a writer: a block device exclusively
    /// (no mount, md or dm can take it while it is written), and only if
    /// the path still names what the gate judged. `flags` as for
    /// `blockdev::open_direct_or_buffered`; returns whether O_DIRECT held.
    pub fn open(
        &self,
        options: &std::fs::OpenOptions,
        flags: i32,
    ) -> std::io::Result<(File, bool)> {
        let flags = if self.is_block_device {
            flags | libc::O_EXCL
        } else {
            flags
        };
        let (f, direct) = crate::blockdev::open_direct_or_buffered(options, &self.path, flags)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EBUSY) => std::io::Error::other(format!(
                    "{} is held by someone else since the safety gate cleared it (a mount, md, \
                     dm or a program): not written",
                    self.path.display()
                )),
                _ => e,
            })?;
        same_device(&f, self.rdev, &self.path)?;
        // Asked again now that the device is held: a mount made since the
        // gate looked, beside or below it (a second loop device over the
        // same file), which O_EXCL on this device does not keep out
        // (found in review). This narrows that window to the writes
        // themselves; it cannot close it.
        if let Some(name) = &self.name {
            let users = users_of(&Roots::default(), name, true);
            if !users.is_empty() {
                return Err(std::io::Error::other(format!(
                    "{} is in use since the safety gate cleared it: {}; not written",
                    self.path.display(),
                    users.join("; ")
                )));
            }
        }
        Ok((f, direct))
    }

    /// Marks the window [offset, offset + size) of the open device `f`
    /// (a partition storcert just made on this cleared disk) as holding
    /// only storcert's data, as its contents stand: the partition then
    /// clears by the same rule as any device.
    pub fn mark_window(&self, f: &File, offset: u64, size: u64) -> std::io::Result<()> {
        match &self.stamp {
            Some(s) => s.finish_window(f, offset, size),
            None => Ok(()),
        }
    }

    /// Marks a cleared block device "writing" before the first write;
    /// the returned value marks it "tested" when dropped. A file takes no
    /// mark.
    pub fn begin_writing(&self) -> std::io::Result<Writing> {
        if let Some(s) = &self.stamp {
            s.begin()?;
        }
        Ok(Writing {
            stamp: self.stamp.clone(),
        })
    }
}

/// Whether the open `f` is the device the gate judged (`rdev`; `None`: a
/// regular file, which must not have become a device since).
pub(crate) fn same_device(f: &File, rdev: Option<u64>, path: &Path) -> std::io::Result<()> {
    let meta = f.metadata()?;
    let now = meta.file_type().is_block_device().then(|| meta.rdev());
    if now != rdev {
        return Err(std::io::Error::other(format!(
            "{} names another device than the one the safety gate cleared (a link changed \
             since?): not written",
            path.display()
        )));
    }
    Ok(())
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
pub fn storcert_partition_in_use(path: &Path) -> Option<String> {
    let (start, end) = storcert_partition(path)?;
    let f = File::open(path).ok()?;
    let len = end - start;
    let (head, tail) = marker::read_window(&f, start, len).ok()?;
    let found = signature::identify(&Regions {
        head: &head,
        tail: &tail,
        size: len,
    });
    (!found.is_empty()).then(|| join(&found))
}

fn join(found: &[signature::Signature]) -> String {
    found
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
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

/// What the regions of a device hold, as the gate judges them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// Every byte where a signature could be is zero.
    Empty,
    /// storcert's mark, verified: the run that tested it.
    Ours(String),
    /// Anything else, said in libblkid's words where storcert knows them.
    Data(String),
}

/// Reads and judges a device's regions. `serial` is the drive's ("" for
/// none); `run` the run now writing, whose own "writing" mark is its own.
pub fn contents(f: &File, size: u64, serial: &str, run: Option<&str>) -> std::io::Result<Contents> {
    let (head, tail) = marker::read_regions(f, size)?;
    let r = Regions {
        head: &head,
        tail: &tail,
        size,
    };
    let found = signature::identify(&r);
    if let Some(m) = Marker::decode(&head) {
        return Ok(judge_mark(&m, &r, &found, serial, run));
    }
    if !found.is_empty() {
        return Ok(Contents::Data(join(&found)));
    }
    Ok(match r.first_data() {
        None => Contents::Empty,
        Some(off) => Contents::Data(format!(
            "data (a non-zero byte at offset {off}, where a signature could be; no signature \
             storcert names: `blkid -p` or `wipefs --no-act` may)"
        )),
    })
}

fn judge_mark(
    m: &Marker,
    r: &Regions,
    found: &[signature::Signature],
    serial: &str,
    run: Option<&str>,
) -> Contents {
    let whose = format!("storcert's test data (run {})", printable(&m.run));
    if !found.is_empty() {
        return Contents::Data(format!(
            "{} over {whose}: written since storcert tested it",
            join(found)
        ));
    }
    if m.serial != serial {
        return Contents::Data(format!(
            "{whose} of another drive (serial {}): a copy, not this drive's own",
            printable(&m.serial)
        ));
    }
    match m.state {
        State::Tested if m.size == r.size && m.digest == marker::digest(r) => Contents::Ours(whose),
        State::Tested => Contents::Data(format!(
            "{whose}, changed since storcert's last write (its mark's digest no longer matches)"
        )),
        State::Writing if run.is_some_and(|id| id == m.run) => {
            Contents::Ours(format!("{whose}, cut short and resumed now"))
        }
        State::Writing => Contents::Data(format!(
            "{whose}, cut short: resume that run, or name the drive to test it anew"
        )),
    }
}

fn printable(s: &str) -> String {
    storcert_util::text::printable(s, 128)
}

/// Why the target may be written although it holds something: the
/// operator named it (a serial, WWN or EUI-64 of the disk; a path names
/// only a file or a device that has neither serial nor WWN, such as a loop
/// device, which has no other name), or an earlier start of the run now
/// resumed wrote it (by the same names).
fn named(overrides: &Overrides, disk: Option<&Disk>, path: &Path) -> Option<String> {
    let p = path.display().to_string();
    let nameless = disk.is_none_or(|d| d.serial.is_none() && d.wwn.is_none());
    let names = |want: &String| {
        (nameless && *want == p)
            || disk.is_some_and(|d| {
                [&d.serial, &d.wwn, &d.eui64, &d.nguid]
                    .iter()
                    .any(|id| id.as_deref() == Some(want.as_str()))
            })
    };
    if let Some(want) = overrides.force_destroy.iter().find(|w| names(w)) {
        return Some(format!("named by --force-destroy {want}"));
    }
    overrides
        .earlier
        .iter()
        .find(|w| names(w))
        .map(|want| format!("{want} is this run's own drive: an earlier start of it wrote it"))
}

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

/// Decides whether `path` may be written to.
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
            let mut c = Cleared::new_file(path, 0);
            c.description = format!("new file {}", path.display());
            return Ok(c);
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

/// A regular file: only a known signature in it stands in the way (a
/// scratch file's earlier random data does not).
fn check_file(path: &Path, len: u64, overrides: &Overrides) -> Result<Cleared, Refusal> {
    let read = File::open(path).and_then(|f| marker::read_regions(&f, len));
    let (head, tail) = read.map_err(|e| {
        refusal(
            path,
            vec![access("read it to look for filesystem signatures", &e)],
        )
    })?;
    let found = signature::identify(&Regions {
        head: &head,
        tail: &tail,
        size: len,
    });
    let mut c = Cleared::new_file(path, len);
    c.holds = "a file's own bytes".into();
    if !found.is_empty() {
        let what = join(&found);
        match named(overrides, None, path) {
            Some(by) => c.overridden.push(format!("it holds {what} ({by})")),
            None => return Err(refusal(path, vec![format!("it holds {what}")])),
        }
    }
    Ok(c)
}

/// The disk a block device is or is on: its kernel name, whether `name`
/// is a partition, and the disk's name.
fn disk_of(roots: &Roots, name: &str) -> (bool, String) {
    let class = roots.sys.join("class/block").join(name);
    let is_partition = class.join("partition").exists();
    let disk_name = if is_partition {
        std::fs::canonicalize(&class)
            .ok()
            .and_then(|p| {
                p.parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| name.to_string())
    } else {
        name.to_string()
    };
    (is_partition, disk_name)
}

/// A block device (a disk or one of its partitions), read through the
/// inventory: who uses it and what it holds.
fn check_block_device(
    path: &Path,
    rdev: u64,
    roots: &Roots,
    overrides: &Overrides,
) -> Result<Cleared, Refusal> {
    let devnum = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    let name = inventory::sysfs::name_of_devnum(roots, &devnum)
        .ok_or_else(|| refusal(path, vec![format!("device {devnum} is not in sysfs")]))?;
    let (is_partition, disk_name) = disk_of(roots, &name);
    let inv = inventory::scan(
        roots,
        &ScanOptions {
            all: true,
            devices: vec![disk_name.clone()],
            no_probe: false,
        },
    );
    let disk = inv.disks.iter().find(|d| d.name == disk_name);
    let mut hard = users_of(roots, &name, false);
    let mut soft = match disk {
        Some(d) => in_use(d, &name, is_partition, &mut hard),
        None => Vec::new(),
    };
    let size = std::fs::read_to_string(roots.sys.join("class/block").join(&name).join("size"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 512;
    let serial = identity(roots, disk, &disk_name);
    let held = File::open(path).and_then(|f| contents(&f, size, &serial, overrides.run.as_deref()));
    let own_table = overrides.own_table
        && !is_partition
        && storcert_partition(path).is_some()
        && storcert_partition_in_use(path).is_none();
    if own_table {
        soft.retain(|r| !r.ends_with("partition(s)"));
    }
    let holds = match held {
        Ok(Contents::Data(_)) if own_table => "storcert's spare-area partition".to_string(),
        Ok(Contents::Empty) => udev_disagrees(roots, &devnum)
            .map(|what| soft.push(format!("it holds {what}")))
            .map_or("nothing".to_string(), |_| "data".into()),
        Ok(Contents::Ours(whose)) => whose,
        Ok(Contents::Data(what)) => {
            soft.push(format!("it holds {what}"));
            what
        }
        Err(e) => {
            hard.push(access("read it to look for filesystem signatures", &e));
            String::new()
        }
    };
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
        holds,
        overridden,
        rdev: Some(rdev),
        name: Some(name.clone()),
        stamp: Some(Stamp::new(
            rdev,
            path,
            &serial,
            overrides.run.as_deref().unwrap_or("storcert"),
        )),
    })
}

/// What storcert's mark names a drive by: its serial or WWN; for a device
/// with neither (a loop device), the identity of what backs it (a loop's
/// file, by device and inode, whatever path attached it) or its number,
/// so a mark copied onto another such device is not taken for its own.
fn identity(roots: &Roots, disk: Option<&Disk>, disk_name: &str) -> String {
    if let Some(id) = disk.and_then(|d| d.serial.clone().or_else(|| d.wwn.clone())) {
        return id;
    }
    match users::backing_of(roots, disk_name) {
        Some(b) => match b.device {
            Some(d) => format!("loop over device {d}"),
            None => format!("loop over file {}:{}", b.file.0, b.file.1),
        },
        None => disk.map_or_else(String::new, |d| format!("device {}", d.major_minor)),
    }
}

/// Every user of the device `name` that nothing overrides: mounts in any
/// namespace, swap and exclusive claims, on it, its partitions and all
/// that is stacked on them.
fn users_of(roots: &Roots, name: &str, held_by_us: bool) -> Vec<String> {
    let around = users::around(roots, name);
    // One walk of every namespace's mount table for all of them.
    let all = around.all();
    let mut hard = users::mounts(roots, &all);
    hard.extend(users::swaps(roots, &all));
    if hard.is_empty() {
        // A device below is held by the target's own driver (dm, loop):
        // only what is above and beside can hold for someone else.
        // Once this process holds the target exclusively, it and its
        // partitions answer EBUSY for that hold: only mounts, swap and the
        // siblings' holds say anything then.
        if !held_by_us {
            hard.extend(users::exclusive_holds(roots, &around.stack));
        }
        hard.extend(users::exclusive_holds(roots, &around.siblings));
    }
    hard
}

/// What udev's record (libblkid's probe when the device last changed)
/// says is on a device whose regions read all zero: something beyond the
/// regions the gate reads, which is refused rather than guessed at.
fn udev_disagrees(roots: &Roots, devnum: &str) -> Option<String> {
    let rec = inventory::udev::record(roots, devnum)?;
    let (key, kind) = match (rec.get("ID_FS_TYPE"), rec.get("ID_PART_TABLE_TYPE")) {
        (Some(t), _) if !t.is_empty() => ("TYPE", t),
        (_, Some(t)) if !t.is_empty() => ("PTTYPE", t),
        _ => return None,
    };
    Some(format!(
        "{key}=\"{}\" by udev's record, though every region storcert reads is zero",
        printable(&kind)
    ))
}

/// What stands in the way of writing to disk `d` (or its partition
/// `name`): hard reasons (the running system) go to `hard`, which nothing
/// overrides; soft ones (the boot medium, partitions, holders, a remote
/// disk) are returned, and naming the disk overrides them.
fn in_use(d: &Disk, name: &str, is_partition: bool, hard: &mut Vec<String>) -> Vec<String> {
    let mut soft = Vec::new();
    if d.system_disk {
        hard.push(format!(
            "{} holds the running system ({})",
            d.name,
            d.role_reasons.join(", ")
        ));
    }
    if d.boot_medium {
        soft.push(format!("{} is the boot medium", d.name));
    }
    if !d.transport.is_local() {
        soft.push(format!(
            "{} is a {} disk, not local to this machine",
            d.name,
            d.transport.as_str()
        ));
    }
    if !is_partition && !d.partitions.is_empty() {
        soft.push(format!(
            "{} has {} partition(s)",
            d.name,
            d.partitions.len()
        ));
    }
    let part = d.partitions.iter().find(|p| p.name == name);
    let holders: Vec<String> = if is_partition {
        part.map(|p| p.holders.clone()).unwrap_or_default()
    } else {
        d.holders.clone()
    };
    if !holders.is_empty() {
        soft.push(format!("in use by {}", holders.join(", ")));
    }
    soft
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
        return Ok(soft.into_iter().map(|r| format!("{r} ({by})")).collect());
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
            match disk.and_then(|d| d.serial.as_deref().or(d.wwn.as_deref())) {
                Some(id) => format!(
                    "name it with --force-destroy {} to allow destroying it (a path does not name a drive)",
                    printable(id)
                ),
                None => "it has no serial or WWN: name it by its path with --force-destroy, or wipe it (wipefs -a) first".into(),
            }
        },
    );
    Err(refusal(path, soft))
}

/// Checks every target; all must pass before anything is written.
pub fn check_all(paths: &[PathBuf], overrides: &Overrides) -> Result<Vec<Cleared>, Refusal> {
    let roots = Roots::default();
    paths.iter().map(|p| check(p, &roots, overrides)).collect()
}

/// The dry-run plan printed before any write: per target, what it holds
/// and why it may be written.
pub fn plan(action: &str, targets: &[Cleared]) -> String {
    let mut s = format!("storcert will {action} on:\n");
    for t in targets {
        s.push_str(&format!("  WRITE {}\n", t.description));
        s.push_str(&format!("    holds {}\n", t.holds));
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

    fn ext4_image(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[1080] = 0x53;
        b[1081] = 0xef;
        b
    }

    #[test]
    fn files_with_a_filesystem_are_refused_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        std::fs::write(&path, ext4_image(1 << 20)).unwrap();
        let roots = Roots::default();
        let err = check(&path, &roots, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("TYPE=\"ext2\""), "{err}");
        let ok = check(
            &path,
            &roots,
            &Overrides {
                force_destroy: vec![path.display().to_string()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ok.overridden.len(), 1);
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        assert!(
            check(&path, &roots, &Overrides::default()).is_ok(),
            "a file's data without a signature is a scratch file's"
        );
        assert!(check(&dir.path().join("new"), &roots, &Overrides::default()).is_ok());
        assert!(check(Path::new("/dev/null"), &roots, &Overrides::default()).is_err());
    }

    fn judge(head: &[u8], tail: &[u8], serial: &str, run: Option<&str>) -> Contents {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let size = 16u64 << 20;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.set_len(size).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(head, 0).unwrap();
        f.write_all_at(tail, size - tail.len() as u64).unwrap();
        contents(&f, size, serial, run).unwrap()
    }

    #[test]
    fn zeros_are_empty_and_any_other_byte_is_data() {
        assert_eq!(judge(&[0; 4096], &[0; 4096], "", None), Contents::Empty);
        let mut tail = [0u8; 4096];
        tail[100] = 1;
        assert!(matches!(
            judge(&[0; 4096], &tail, "", None),
            Contents::Data(d) if d.contains("offset 16773220")
        ));
    }

    /// A mark is storcert's only while the regions match its digest, for
    /// the drive it names; a "writing" mark only for its own run.
    #[test]
    fn storcert_s_mark_clears_only_what_it_describes() {
        let size = 16u64 << 20;
        let mut head = vec![5u8; signature::HEAD_BYTES as usize];
        let tail = vec![6u8; signature::TAIL_BYTES as usize];
        let mark = |state, serial: &str, head: &[u8]| Marker {
            state,
            size,
            serial: serial.into(),
            run: "r1".into(),
            digest: match state {
                State::Tested => marker::digest(&Regions {
                    head,
                    tail: &tail,
                    size,
                }),
                State::Writing => [0; 32],
            },
        };
        let m = mark(State::Tested, "S1", &head).encode();
        head[..4096].copy_from_slice(&m);
        assert!(matches!(judge(&head, &tail, "S1", None), Contents::Ours(_)));
        assert!(
            matches!(judge(&head, &tail, "S2", None), Contents::Data(d) if d.contains("another drive"))
        );
        let mut changed = head.clone();
        changed[1080] = 0x53;
        changed[1081] = 0xef;
        assert!(
            matches!(judge(&changed, &tail, "S1", None), Contents::Data(d) if d.contains("ext"))
        );
        let mut changed = head.clone();
        changed[5000] = 0;
        assert!(
            matches!(judge(&changed, &tail, "S1", None), Contents::Data(d) if d.contains("digest"))
        );
        let m = mark(State::Writing, "S1", &head).encode();
        head[..4096].copy_from_slice(&m);
        assert!(matches!(
            judge(&head, &tail, "S1", Some("r1")),
            Contents::Ours(_)
        ));
        assert!(
            matches!(judge(&head, &tail, "S1", Some("r2")), Contents::Data(d) if d.contains("cut short"))
        );
        assert!(matches!(judge(&head, &tail, "S1", None), Contents::Data(_)));
    }
}
