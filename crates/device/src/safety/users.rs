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
use std::path::Path;

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

/// Loop devices backed by each device number: LOOP_GET_STATUS64's
/// lo_rdevice, which holds the backing file's device number whatever
/// mount namespace its path was opened in.
fn loops_by_backing(roots: &Roots) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in sysfs::list_dir(roots, &roots.sys.join("block")) {
        if !name.starts_with("loop")
            || !roots.exists(&roots.sys.join("block").join(&name).join("loop"))
        {
            continue;
        }
        if let Some(devnum) = loop_backing_devnum(&roots.dev.join(&name)) {
            map.entry(devnum).or_default().push(name);
        }
    }
    map
}

/// struct loop_info64's first three fields (linux/loop.h): the backing
/// file's st_dev, st_ino and st_rdev, each a __u64.
fn loop_backing_devnum(node: &Path) -> Option<String> {
    const LOOP_GET_STATUS64: u64 = 0x4c05;
    let f = OpenOptions::new().read(true).open(node).ok()?;
    let mut info = [0u8; 232];
    // SAFETY: LOOP_GET_STATUS64 writes one struct loop_info64 (232 bytes).
    unsafe { crate::passthrough::ioctl_ptr(f.as_raw_fd(), LOOP_GET_STATUS64, info.as_mut_ptr()) }
        .ok()?;
    let rdev = u64::from_ne_bytes(info[16..24].try_into().ok()?);
    // huge_encode_dev: minor's low byte, major, then minor's high bits.
    let (major, minor) = (
        (rdev & 0xfff00) >> 8,
        (rdev & 0xff) | ((rdev >> 12) & 0xfff00),
    );
    (rdev != 0).then(|| format!("{major}:{minor}"))
}

/// The target, its partitions, and everything stacked on any of them.
pub fn stack(roots: &Roots, name: &str) -> Vec<Member> {
    let loops = loops_by_backing(roots);
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
        for l in loops.get(&devnum).into_iter().flatten() {
            todo.push((l.clone(), format!("loop device {l} is backed by {n}")));
        }
        out.push(Member {
            name: n,
            devnum,
            how,
        });
    }
    out
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
        .filter(|m| {
            let node = roots.dev.join(&m.name);
            match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_EXCL)
                .open(&node)
            {
                Ok(_) => false,
                Err(e) => e.raw_os_error() == Some(libc::EBUSY),
            }
        })
        .map(|m| {
            format!(
                "{}{} is held open exclusively (by a mount in some namespace, swap, a stacked driver or a program)",
                m.name,
                via(m)
            )
        })
        .collect()
}
