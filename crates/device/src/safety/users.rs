//! Who uses a device, seen from every angle the kernel offers: a mount in
//! any process's mount namespace, active swap, a device stacked on it
//! (md, dm, bcache through `holders/`; loop devices through the file they
//! are backed by, which `holders/` does not show), and the kernel's own
//! exclusive claim, which every mount, swap and stacked driver takes.
//! Each of these is a hard refusal: naming the disk overrides none.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use crate::inventory::{sysfs, Roots};

/// Devices looked at when following stacks: a real stack is a handful; a
/// cycle or a fan (a capture is anyone's) costs no more than this.
const MAX_STACK: usize = 1024;

/// One device of the stack over a target: its kernel name and number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    pub name: String,
    pub devnum: String,
    /// How it sits on the target ("partition of sdb", "loop device backed
    /// by sdb", "held by md0"); empty for the target itself.
    pub how: String,
}

fn devnum_of_name(roots: &Roots, name: &str) -> Option<String> {
    sysfs::opt_attr(roots, &roots.sys.join("class/block").join(name).join("dev"))
}

/// What a loop device is backed by: the backing file's device and inode
/// (its identity, whichever path or namespace opened it), and, where the
/// backing is a block device, that device's number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backing {
    pub file: (u64, u64),
    pub device: Option<String>,
}

/// Every loop device's backing, by kernel name.
fn loop_backings(roots: &Roots) -> BTreeMap<String, Backing> {
    let mut map = BTreeMap::new();
    for name in sysfs::list_dir(roots, &roots.sys.join("block")) {
        if !name.starts_with("loop")
            || !roots.exists(&roots.sys.join("block").join(&name).join("loop"))
        {
            continue;
        }
        let Some(devnum) = devnum_of_name(roots, &name) else {
            continue;
        };
        if let Some(b) = with_node(roots, &name, &devnum, loop_backing).flatten() {
            map.insert(name, b);
        }
    }
    map
}

/// struct loop_info64's first three fields (linux/loop.h): the backing
/// file's st_dev, st_ino and st_rdev, each a __u64, as huge_encode_dev
/// encodes a device number.
fn loop_backing(f: &std::fs::File) -> Option<Backing> {
    const LOOP_GET_STATUS64: u64 = 0x4c05;
    let mut info = [0u8; 232];
    // SAFETY: LOOP_GET_STATUS64 writes one struct loop_info64 (232 bytes).
    unsafe { crate::passthrough::ioctl_ptr(f.as_raw_fd(), LOOP_GET_STATUS64, info.as_mut_ptr()) }
        .ok()?;
    let field = |i: usize| u64::from_ne_bytes(info[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let decode = |d: u64| ((d & 0xfff00) >> 8, (d & 0xff) | ((d >> 12) & 0xfff00));
    let rdev = field(2);
    Some(Backing {
        file: (field(0), field(1)),
        device: (rdev != 0).then(|| {
            let (major, minor) = decode(rdev);
            format!("{major}:{minor}")
        }),
    })
}

/// The loop device `name`'s backing, if it is one.
pub fn backing_of(roots: &Roots, name: &str) -> Option<Backing> {
    if !name.starts_with("loop") {
        return None;
    }
    let devnum = devnum_of_name(roots, name)?;
    with_node(roots, name, &devnum, loop_backing).flatten()
}

/// A node to open device `name` (number `devnum`) by: its /dev node where
/// that node is this very device, else one made for the purpose in a
/// private folder (a machine without udev, a node of another name), which
/// goes when the returned guard does.
fn node_for(roots: &Roots, name: &str, devnum: &str) -> Option<(std::path::PathBuf, NodeGuard)> {
    use std::os::unix::fs::MetadataExt;
    let (major, minor) = devnum.split_once(':')?;
    let rdev = libc::makedev(major.parse().ok()?, minor.parse().ok()?);
    let node = roots.dev.join(name);
    if std::fs::metadata(&node).is_ok_and(|m| m.rdev() == rdev) {
        return Some((node, NodeGuard(None)));
    }
    let mut rng = storcert_util::random::Rng::from_entropy();
    let dir = std::env::temp_dir().join(format!(".storcert-node-{:016x}", rng.next_u64()));
    std::fs::create_dir(&dir).ok()?;
    let guard = NodeGuard(Some(dir.clone()));
    let made = dir.join(name);
    let c = std::ffi::CString::new(made.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a NUL-terminated path, a plain mode and a device number.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, rdev) };
    (rc == 0).then_some((made, guard))
}

/// Removes a node made for a probe.
struct NodeGuard(Option<std::path::PathBuf>);

impl Drop for NodeGuard {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Device `name` opened read-only, through `node_for`.
fn with_node<T>(
    roots: &Roots,
    name: &str,
    devnum: &str,
    probe: impl Fn(&std::fs::File) -> T,
) -> Option<T> {
    let (node, _guard) = node_for(roots, name, devnum)?;
    let f = OpenOptions::new().read(true).open(&node).ok()?;
    Some(probe(&f))
}

/// Whether device `name` is held exclusively: our own O_EXCL open fails
/// with EBUSY. `None`: it could not be looked at.
fn held(roots: &Roots, name: &str, devnum: &str) -> Option<bool> {
    let (node, _guard) = node_for(roots, name, devnum)?;
    match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&node)
    {
        Ok(_) => Some(false),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Some(true),
        Err(_) => None,
    }
}

/// The target, its partitions, and everything stacked on any of them.
fn stack_with(roots: &Roots, name: &str, backings: &BTreeMap<String, Backing>) -> Vec<Member> {
    let mut loops: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (l, b) in backings {
        if let Some(d) = &b.device {
            loops.entry(d.as_str()).or_default().push(l.as_str());
        }
    }
    let mut out: Vec<Member> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![(name.to_string(), String::new())];
    while let Some((n, how)) = todo.pop() {
        if seen.len() >= MAX_STACK || !seen.insert(n.clone()) {
            continue;
        }
        let Some(devnum) = devnum_of_name(roots, &n) else {
            continue;
        };
        let class = roots.sys.join("class/block").join(&n);
        for p in sysfs::list_dir(roots, &class) {
            if roots.exists(&class.join(&p).join("partition")) {
                todo.push((p, format!("partition of {n}")));
            }
        }
        for h in sysfs::list_dir(roots, &class.join("holders")) {
            todo.push((h.clone(), format!("{h} is stacked on {n}")));
        }
        for l in loops.get(devnum.as_str()).into_iter().flatten() {
            todo.push((l.to_string(), format!("loop device {l} is backed by {n}")));
        }
        out.push(Member {
            name: n,
            devnum,
            how,
        });
    }
    out
}

/// What the target sits on, and all that is stacked on that: the device
/// a loop device is backed by, a dm or md device's slaves, each followed
/// down; and every other loop device backed by the same file as a loop
/// target (two loop devices over one image are one disk). A write to the
/// target is a write to these, so a mount on any of them refuses it.
/// A device below is held by the target's own driver, a sibling is not.
pub struct Around {
    /// The target, its partitions and all stacked on them.
    pub stack: Vec<Member>,
    /// What it sits on, and all stacked on that.
    pub below: Vec<Member>,
    /// Other loop devices over its file, and all stacked on them.
    pub siblings: Vec<Member>,
}

impl Around {
    /// Every member once (the first way it was reached names it).
    pub fn all(&self) -> Vec<Member> {
        let mut seen = BTreeSet::new();
        [&self.stack, &self.below, &self.siblings]
            .into_iter()
            .flatten()
            .filter(|m| seen.insert(m.devnum.clone()))
            .cloned()
            .collect()
    }
}

/// The target's stack, what is below it and its siblings, from one read
/// of every loop device's backing.
pub fn around(roots: &Roots, name: &str) -> Around {
    let backings = loop_backings(roots);
    let stack = stack_with(roots, name, &backings);
    let mut below = Vec::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        if seen.len() >= MAX_STACK || !seen.insert(n.clone()) {
            continue;
        }
        let mut lower: Vec<String> = sysfs::list_dir(
            roots,
            &roots.sys.join("class/block").join(&n).join("slaves"),
        );
        if let Some(d) = backings.get(&n).and_then(|b| b.device.as_ref()) {
            lower.extend(sysfs::name_of_devnum(roots, d));
        }
        for l in lower {
            for mut m in stack_with(roots, &l, &backings) {
                if m.how.is_empty() {
                    m.how = format!("{n} sits on it");
                }
                below.push(m);
            }
            todo.push(l);
        }
    }
    let mut siblings = Vec::new();
    if let Some(own) = backings.get(name).filter(|b| b.device.is_none()) {
        for (l, b) in &backings {
            if l != name && b.file == own.file {
                for mut m in stack_with(roots, l, &backings) {
                    if m.how.is_empty() {
                        m.how = format!("loop device backed by {name}'s own file");
                    }
                    siblings.push(m);
                }
            }
        }
    }
    Around {
        stack,
        below,
        siblings,
    }
}

/// Mounts of `members` in every mount namespace: one line each, the first
/// process seen in a namespace naming it.
pub fn mounts(roots: &Roots, members: &[Member]) -> Vec<String> {
    let wanted: BTreeMap<&str, &Member> = members.iter().map(|m| (m.devnum.as_str(), m)).collect();
    let by_node: BTreeMap<String, &Member> = members
        .iter()
        .map(|m| (roots.dev.join(&m.name).display().to_string(), m))
        .collect();
    let own_ns = std::fs::read_link(roots.proc.join("self/ns/mnt")).ok();
    let mut namespaces = BTreeSet::new();
    let mut found = BTreeSet::new();
    let mut pids: Vec<String> = roots
        .read_dir(&roots.proc)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    pids.insert(0, "self".into());
    for pid in pids {
        let dir = roots.proc.join(&pid);
        let ns = std::fs::read_link(dir.join("ns/mnt")).ok();
        if let Some(ns) = &ns {
            if !namespaces.insert(ns.clone()) {
                continue;
            }
        }
        let Ok(text) = roots.read_to_string(&dir.join("mountinfo")) else {
            continue;
        };
        let whose = if ns.is_some() && ns != own_ns {
            format!(" in another mount namespace (process {pid})")
        } else {
            String::new()
        };
        for line in text.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let Some(dash) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            if fields.len() < 5 || dash < 5 {
                continue;
            }
            // btrfs and others mount with an anonymous number: the source
            // names the device.
            let member = wanted.get(fields[2]).copied().or_else(|| {
                fields
                    .get(dash + 2)
                    .and_then(|src| by_node.get(*src).copied())
            });
            if let Some(m) = member {
                found.insert(format!(
                    "{}{} is mounted on {}{whose}",
                    m.name,
                    via(m),
                    storcert_util::text::printable(&sysfs::unescape_octal(fields[4]), 200)
                ));
            }
        }
    }
    found.into_iter().collect()
}

fn via(m: &Member) -> String {
    if m.how.is_empty() {
        String::new()
    } else {
        format!(" ({})", m.how)
    }
}

/// Members in use as swap.
pub fn swaps(roots: &Roots, members: &[Member]) -> Vec<String> {
    let on = sysfs::swap_devnums(roots);
    members
        .iter()
        .filter(|m| on.contains(&m.devnum))
        .map(|m| format!("{}{} is active swap", m.name, via(m)))
        .collect()
}

/// Members the kernel holds for someone exclusively (a mount in any
/// namespace, swap, md, dm, bcache, or a program that opened it with
/// O_EXCL): an exclusive open of our own fails with EBUSY.
pub fn exclusive_holds(roots: &Roots, members: &[Member]) -> Vec<String> {
    members
        .iter()
        .filter(|m| held(roots, &m.name, &m.devnum) == Some(true))
        .map(|m| {
            format!(
                "{}{} is held open exclusively (by a mount in some namespace, swap, a stacked driver or a program)",
                m.name,
                via(m)
            )
        })
        .collect()
}
