//! Linux software RAID (md), and Intel VROC / RST arrays, which are md
//! arrays with IMSM metadata: read from the attributes md publishes under
//! `/sys/block/mdN/md` (drivers/md/md.c), so that policy can check level,
//! state, members, the write-intent bitmap and the write-hole protection
//! (journal or PPL). md is not a PCI controller, so it is not a `Family`:
//! its arrays are listed beside the controllers.

use std::path::Path;

use crate::inventory::model::{MdArray, MdMember};
use crate::inventory::sysfs::{list_dir, opt_attr};
use crate::inventory::Roots;

/// At most this many members are read per array (md allows 384 in 1.x
/// metadata; a sysfs tree with more is not md's).
const MAX_MEMBERS: usize = 512;

/// Every md array of the system, in name order.
pub fn read_arrays(roots: &Roots) -> Vec<MdArray> {
    let block = roots.sys.join("block");
    list_dir(roots, &block)
        .into_iter()
        .filter(|n| is_md_name(n))
        .filter(|n| roots.exists(&block.join(n).join("md")))
        .map(|n| read_array(roots, &block.join(&n), &n))
        .collect()
}

/// "md0", "md127", "md_d0": md's own names (a named array, /dev/md/foo,
/// is still mdN in the kernel).
fn is_md_name(n: &str) -> bool {
    n.strip_prefix("md").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

fn read_array(roots: &Roots, dir: &Path, name: &str) -> MdArray {
    let md = dir.join("md");
    let attr = |f: &str| opt_attr(roots, &md.join(f));
    let mut errors = Vec::new();
    let metadata = attr("metadata_version").unwrap_or_else(|| "none".into());
    // "external:/md127/0": a volume of the container md127; mdadm writes
    // "external:-md127/0" while it blocks the volume (a reshape, a
    // metadata update).
    let container = metadata
        .strip_prefix("external:")
        .and_then(|r| r.strip_prefix('/').or_else(|| r.strip_prefix('-')))
        .and_then(|r| r.split('/').next())
        .filter(|c| is_md_name(c))
        .map(str::to_string);
    let container_imsm = container.as_ref().is_some_and(|c| {
        opt_attr(
            roots,
            &roots.sys.join("block").join(c).join("md/metadata_version"),
        )
        .as_deref()
            == Some("external:imsm")
    });
    let vroc = metadata == "external:imsm" || container_imsm;
    let level = attr("level").unwrap_or_else(|| {
        // A container has no personality, and md prints nothing.
        if metadata.starts_with("external:") && container.is_none() {
            "container".into()
        } else {
            String::new()
        }
    });
    let mut number = |f: &str| -> Option<u64> {
        let v = attr(f)?;
        // raid_disks reads "4 (3)" while reshaping: the first is the new.
        let first = v.split_whitespace().next().unwrap_or("");
        match first.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                errors.push(format!("md/{f}: {v:?} is not a number"));
                None
            }
        }
    };
    let raid_disks = number("raid_disks").and_then(|n| u32::try_from(n).ok());
    let degraded = number("degraded").and_then(|n| u32::try_from(n).ok());
    let chunk_bytes = number("chunk_size").filter(|&c| c > 0);
    let size_bytes = opt_attr(roots, &dir.join("size"))
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(0, |s| s.saturating_mul(512));
    let members = list_dir(roots, &md)
        .into_iter()
        .filter_map(|e| e.strip_prefix("dev-").map(str::to_string))
        .take(MAX_MEMBERS)
        .map(|device| {
            let d = md.join(format!("dev-{device}"));
            MdMember {
                slot: opt_attr(roots, &d.join("slot")).and_then(|s| s.parse().ok()),
                state: opt_attr(roots, &d.join("state"))
                    .map(|s| {
                        s.split(',')
                            .map(str::trim)
                            .filter(|f| !f.is_empty())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
                errors: opt_attr(roots, &d.join("errors")).and_then(|s| s.parse().ok()),
                device,
            }
        })
        .collect();
    MdArray {
        name: name.into(),
        level,
        vroc,
        container,
        metadata,
        state: attr("array_state").unwrap_or_else(|| "unknown".into()),
        raid_disks,
        degraded,
        sync_action: attr("sync_action"),
        bitmap: attr("bitmap/location"),
        consistency_policy: attr("consistency_policy"),
        size_bytes,
        chunk_bytes,
        members,
        errors,
    }
}

/// Why an array needs a look, whatever the policy: missing or failed
/// members, or an array md itself calls broken or inactive.
pub fn trouble(a: &MdArray) -> Option<String> {
    if a.level == "container" {
        return None;
    }
    let faulty: Vec<&str> = a
        .members
        .iter()
        .filter(|m| m.state.iter().any(|s| s == "faulty"))
        .map(|m| m.device.as_str())
        .collect();
    let mut why = Vec::new();
    if let Some(n) = a.degraded.filter(|&n| n > 0) {
        why.push(format!("{n} member(s) missing"));
    }
    if !faulty.is_empty() {
        why.push(format!("faulty: {}", faulty.join(", ")));
    }
    if matches!(a.state.as_str(), "broken" | "inactive") {
        why.push(format!("the array is {}", a.state));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{text}\n")).unwrap();
    }

    /// A VROC RAID 1 volume in its IMSM container, and a native RAID 5
    /// with a journal, as md prints them.
    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for (rel, text) in [
            ("sys/block/md127/md/metadata_version", "external:imsm"),
            ("sys/block/md127/md/level", ""),
            ("sys/block/md127/md/array_state", "inactive"),
            ("sys/block/md127/size", "0"),
            ("sys/block/md127/md/dev-nvme0n1/slot", "none"),
            ("sys/block/md127/md/dev-nvme0n1/state", "external_bbl"),
            ("sys/block/md126/md/metadata_version", "external:/md127/0"),
            ("sys/block/md126/md/level", "raid1"),
            ("sys/block/md126/md/array_state", "active"),
            ("sys/block/md126/md/raid_disks", "2"),
            ("sys/block/md126/md/degraded", "1"),
            ("sys/block/md126/md/sync_action", "idle"),
            ("sys/block/md126/md/consistency_policy", "resync"),
            ("sys/block/md126/md/chunk_size", "0"),
            ("sys/block/md126/size", "1000000"),
            ("sys/block/md126/md/dev-nvme0n1/slot", "0"),
            ("sys/block/md126/md/dev-nvme0n1/state", "in_sync"),
            ("sys/block/md126/md/dev-nvme0n1/errors", "0"),
            ("sys/block/md0/md/metadata_version", "1.2"),
            ("sys/block/md0/md/level", "raid5"),
            ("sys/block/md0/md/array_state", "clean"),
            ("sys/block/md0/md/raid_disks", "4 (3)"),
            ("sys/block/md0/md/degraded", "0"),
            ("sys/block/md0/md/bitmap/location", "none"),
            ("sys/block/md0/md/consistency_policy", "journal"),
            ("sys/block/md0/md/chunk_size", "524288"),
            ("sys/block/md0/size", "2048"),
            ("sys/block/md0/md/dev-sdb/slot", "0"),
            ("sys/block/md0/md/dev-sdb/state", "in_sync,write_mostly"),
            ("sys/block/md0/md/dev-sdc/slot", "none"),
            ("sys/block/md0/md/dev-sdc/state", "faulty"),
            ("sys/block/md0/md/dev-sdd/slot", "none"),
            ("sys/block/md0/md/dev-sdd/state", "journal"),
            ("sys/block/sda/size", "1"),
            ("sys/block/mdx/size", "1"),
        ] {
            write(r, rel, text);
        }
        t
    }

    #[test]
    fn arrays_read_with_vroc_containers_and_members() {
        let t = tree();
        let a = read_arrays(&Roots::under(t.path()));
        let names: Vec<&str> = a.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["md0", "md126", "md127"]);
        let (md0, vol, cont) = (&a[0], &a[1], &a[2]);
        assert_eq!(md0.level, "raid5");
        assert!(!md0.vroc);
        assert_eq!(md0.raid_disks, Some(4));
        assert_eq!(md0.bitmap.as_deref(), Some("none"));
        assert_eq!(md0.consistency_policy.as_deref(), Some("journal"));
        assert_eq!(
            (md0.size_bytes, md0.chunk_bytes),
            (2048 * 512, Some(524288))
        );
        assert_eq!(md0.members.len(), 3);
        assert_eq!(md0.members[0].state, ["in_sync", "write_mostly"]);
        assert_eq!(md0.members[1].slot, None);
        assert_eq!(trouble(md0).as_deref(), Some("faulty: sdc"));

        assert!(vol.vroc && cont.vroc);
        assert_eq!(vol.container.as_deref(), Some("md127"));
        assert_eq!(vol.level, "raid1");
        assert_eq!(vol.chunk_bytes, None);
        assert_eq!(trouble(vol).as_deref(), Some("1 member(s) missing"));
        assert_eq!(cont.level, "container");
        assert_eq!(cont.container, None);
        assert_eq!(trouble(cont), None, "a container is not an array to judge");
        assert!(a.iter().all(|a| a.errors.is_empty()), "{a:#?}");
    }

    #[test]
    fn a_volume_mdadm_has_blocked_keeps_its_container() {
        let t = tree();
        write(
            t.path(),
            "sys/block/md126/md/metadata_version",
            "external:-md127/0",
        );
        let a = read_arrays(&Roots::under(t.path()));
        assert_eq!(a[1].container.as_deref(), Some("md127"));
        assert!(a[1].vroc);
    }

    #[test]
    fn a_garbled_attribute_is_named_not_guessed() {
        let t = tree();
        write(t.path(), "sys/block/md0/md/degraded", "lots");
        let a = read_arrays(&Roots::under(t.path()));
        assert_eq!(a[0].degraded, None);
        assert_eq!(a[0].errors, ["md/degraded: \"lots\" is not a number"]);
    }
}
