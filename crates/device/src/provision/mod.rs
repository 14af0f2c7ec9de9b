//! Over-provisioning: discard the whole device (so the flash controller
//! knows every block is free), then write a GPT with one partition that
//! leaves the asked share of the device unpartitioned as spare area, have
//! the kernel re-read the table, and check what it now sees.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::blockdev;
pub use storcert_results::provision::{Discard, KernelView, ProvisionResult};

const MIB: u64 = 1 << 20;
/// Discard in ranges of this size, so progress and failures are per range.
const DISCARD_RANGE: u64 = 64 << 30;

/// Linux filesystem data, as the GPT stores it (mixed endian).
const LINUX_DATA: [u8; 16] = [
    0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4,
];

#[derive(Debug, Clone)]
pub struct Spec {
    pub device: PathBuf,
    /// Share of the device left unpartitioned, 0 < spare < 100.
    pub spare_pct: f64,
    /// Spare the drive has from the factory, as the policy states it.
    pub factory_spare_pct: Option<f64>,
    pub discard: bool,
}

/// The partition layout for a device: 1 MiB-aligned start, and an end
/// that leaves `spare_pct` of the device free, rounded down to 1 MiB.
pub fn layout(size: u64, sector: u64, spare_pct: f64) -> Result<(u64, u64)> {
    if !(spare_pct > 0.0 && spare_pct < 100.0) {
        bail!("--spare {spare_pct}% must be more than 0% and less than 100%");
    }
    let start = MIB;
    let wanted_end = ((size as f64) * (1.0 - spare_pct / 100.0)) as u64 / MIB * MIB;
    // The backup GPT takes the last 33 sectors (with 128 entries).
    let last_usable = size.saturating_sub(34 * sector);
    let end = wanted_end.min(last_usable / MIB * MIB);
    if end <= start {
        bail!(
            "the device ({size} bytes) is too small for a GPT and a 1 MiB-aligned partition leaving {spare_pct}% spare"
        );
    }
    Ok((start, end))
}

fn random_guid() -> [u8; 16] {
    let mut rng = storcert_util::random::Rng::from_entropy();
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    g[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    g[7] = (g[7] & 0x0f) | 0x40; // version 4
    g[8] = (g[8] & 0x3f) | 0x80; // variant
    g
}

fn discard(f: &File, size: u64) -> Discard {
    let mut d = Discard {
        ranges: 0,
        bytes: 0,
        error: None,
    };
    let mut off = 0u64;
    while off < size {
        let len = (size - off).min(DISCARD_RANGE);
        match blockdev::discard(f, off, len) {
            Ok(_) => {
                d.ranges += 1;
                d.bytes += len;
            }
            Err(e) => {
                d.error = Some(format!("discard at offset {off}: {e}"));
                break;
            }
        }
        off += len;
    }
    d
}

/// The partition the kernel lists for `disk`, from sysfs.
fn kernel_view(disk: &str) -> Option<KernelView> {
    let dir = Path::new("/sys/block").join(disk);
    for entry in std::fs::read_dir(&dir).ok()?.flatten() {
        let p = entry.path();
        let number = std::fs::read_to_string(p.join("partition")).unwrap_or_default();
        if number.trim() == "1" {
            let num = |f: &str| -> Option<u64> {
                std::fs::read_to_string(p.join(f)).ok()?.trim().parse().ok()
            };
            return Some(KernelView {
                partition: entry.file_name().to_string_lossy().into_owned(),
                start_bytes: num("start")? * 512,
                size_bytes: num("size")? * 512,
            });
        }
    }
    None
}

/// The first partition the kernel lists on `device` ("vdb1"), if any: what
/// a removal waits to see go.
pub fn listed_partition(device: &Path) -> Option<String> {
    let disk = device.canonicalize().ok()?;
    kernel_view(&disk.file_name()?.to_string_lossy()).map(|k| k.partition)
}

/// Where later stages run on a device storcert provisioned: its partition
/// (the GPT's first entry, named "storcert", as the kernel lists it), or
/// None when the device carries no such table or the kernel lists no
/// partition for it.
pub fn provisioned_partition(device: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(device).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let (start, end) = crate::safety::storcert_partition(device)?;
    let disk = device
        .canonicalize()
        .ok()?
        .file_name()?
        .to_string_lossy()
        .into_owned();
    let k = kernel_view(&disk)?;
    // The kernel's view of this very table: an older partition still
    // listed after a new table was written (its re-read refused while
    // the drive was busy) has the same start but not the same end.
    (k.start_bytes == start && k.size_bytes == end - start)
        .then(|| Path::new("/dev").join(k.partition))
}

/// Provisions `spec.device`, which the safety gate cleared as `target`.
pub fn provision(target: &crate::safety::Cleared, spec: &Spec) -> Result<ProvisionResult> {
    let path = &spec.device;
    if target.path != *path {
        bail!(
            "{}: the safety gate cleared {}, not this device",
            path.display(),
            target.path.display()
        );
    }
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    let is_block = meta.file_type().is_block_device();
    // O_EXCL on a block device: refused while anything (a mount, md, dm)
    // holds it.
    let (mut f, _) = target
        .open(OpenOptions::new().read(true).write(true), 0)
        .with_context(|| format!("open {} exclusively", path.display()))?;
    let (size, sector) = if is_block {
        (
            blockdev::size_bytes(&f)?,
            u64::from(blockdev::logical_block_size(&f)?),
        )
    } else {
        (meta.len(), 512)
    };
    let (start, end) = layout(size, sector, spec.spare_pct)?;
    let mut notes = Vec::new();
    let disc = if spec.discard {
        if is_block {
            Some(discard(&f, size))
        } else {
            notes.push("a regular file: discard is not issued".into());
            None
        }
    } else {
        None
    };

    let mut gpt = gptman::GPT::new_from(&mut f, sector, random_guid())
        .map_err(|e| anyhow::anyhow!("build the GPT: {e}"))?;
    gpt.align = MIB / sector;
    gpt[1] = gptman::GPTPartitionEntry {
        partition_type_guid: LINUX_DATA,
        unique_partition_guid: random_guid(),
        starting_lba: start / sector,
        ending_lba: end / sector - 1,
        attribute_bits: 0,
        partition_name: crate::safety::STORCERT_PARTITION.into(),
    };
    gptman::GPT::write_protective_mbr_into(&mut f, sector)
        .map_err(|e| anyhow::anyhow!("write the protective MBR: {e}"))?;
    gpt.write_into(&mut f)
        .map_err(|e| anyhow::anyhow!("write the GPT: {e}"))?;
    f.sync_all().context("fsync")?;
    // The partition holds what the disk held, which the gate cleared:
    // marked storcert's, so later stages' gate clears it by its mark.
    target
        .mark_window(&f, start, end - start)
        .context("mark the partition as storcert's")?;

    let mut kernel = None;
    if is_block {
        let name = path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        if let Err(e) = blockdev::reread_partitions(&f) {
            notes.push(format!(
                "the kernel did not re-read the partition table: {e}"
            ));
        } else {
            kernel = kernel_view(&name);
            match &kernel {
                Some(k) if k.start_bytes == start && k.size_bytes == end - start => {}
                Some(k) => bail!(
                    "the kernel sees {} at {}+{} bytes, not the {}+{} written",
                    k.partition,
                    k.start_bytes,
                    k.size_bytes,
                    start,
                    end - start
                ),
                None => notes.push("the kernel lists no partition after re-reading".into()),
            }
        }
    }
    let spare = size - end;
    let spare_pct = spare as f64 * 100.0 / size as f64;
    Ok(ProvisionResult {
        schema_version: storcert_results::provision::SCHEMA_VERSION,
        device: path.display().to_string(),
        size_bytes: size,
        sector_size: sector,
        discard: disc,
        partition_start_bytes: start,
        partition_end_bytes: end,
        partition_size_bytes: end - start,
        spare_bytes: spare,
        spare_pct,
        factory_spare_pct: spec.factory_spare_pct,
        total_spare_pct: spec.factory_spare_pct.map(|f| f + spare_pct),
        kernel,
        notes,
    })
}

/// What taking storcert's partition away did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Removed {
    pub device: String,
    pub discard: Option<Discard>,
    /// Partitions the kernel still lists after re-reading (none expected).
    pub kernel_partitions: Vec<String>,
    pub notes: Vec<String>,
}

/// Takes `device` back to no partition: only where its table is storcert's
/// own (one partition, named "storcert"), which holds nothing but test
/// data. Discards the whole device (the spare area is given back to the
/// drive's own use), then zeroes the protective MBR and both GPTs (the
/// regions the safety gate reads) so no table, and nothing that would
/// stop the gate clearing the drive again, is left to find.
pub fn remove(target: &crate::safety::Cleared, discard_first: bool) -> Result<Removed> {
    let device = target.path.as_path();
    if let Some(sig) = crate::safety::storcert_partition_in_use(device) {
        bail!(
            "storcert's partition on {} now holds {sig}: it was put to use since, it is no \
             test data; storcert does not remove it",
            device.display()
        );
    }
    if crate::safety::storcert_partition(device).is_none() {
        bail!(
            "{} carries no storcert partition table (one partition named \"{}\"): \
             nothing of storcert's to remove",
            device.display(),
            crate::safety::STORCERT_PARTITION
        );
    }
    let meta = std::fs::metadata(device).with_context(|| format!("{}", device.display()))?;
    let is_block = meta.file_type().is_block_device();
    let (f, _) = target
        .open(OpenOptions::new().read(true).write(true), 0)
        .with_context(|| format!("open {} exclusively", device.display()))?;
    let size = if is_block {
        blockdev::size_bytes(&f)?
    } else {
        meta.len()
    };
    let mut notes = Vec::new();
    let disc = (discard_first && is_block).then(|| discard(&f, size));
    use crate::safety::signature::{HEAD_BYTES, TAIL_BYTES};
    let head = vec![0u8; HEAD_BYTES.min(size) as usize];
    let tail = vec![0u8; TAIL_BYTES.min(size) as usize];
    for (zeros, at) in [(&head, 0), (&tail, size - tail.len() as u64)] {
        f.write_all_at(zeros, at)
            .with_context(|| format!("zero {} at byte {at}", device.display()))?;
    }
    f.sync_all().context("fsync")?;
    let mut kernel_partitions = Vec::new();
    if is_block {
        match blockdev::reread_partitions(&f) {
            Err(e) => notes.push(format!(
                "the kernel did not re-read the partition table: {e}"
            )),
            Ok(()) => {
                let name = device
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_default();
                kernel_partitions = kernel_view(&name)
                    .map(|k| k.partition)
                    .into_iter()
                    .collect();
            }
        }
    }
    Ok(Removed {
        device: device.display().to_string(),
        discard: disc,
        kernel_partitions,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_leaves_the_spare_at_the_end() {
        let (s, e) = layout(1 << 30, 512, 21.0).unwrap();
        assert_eq!(s, MIB);
        assert_eq!(e, ((1u64 << 30) as f64 * 0.79) as u64 / MIB * MIB);
        assert_eq!(e % MIB, 0);
        assert!(layout(1 << 30, 512, 0.0).is_err());
        assert!(layout(1 << 30, 512, 100.0).is_err());
        assert!(
            layout(2 * MIB, 512, 10.0).is_err(),
            "no room for a partition"
        );
        // A tiny spare is capped by the backup GPT.
        let (_, e) = layout(8 * MIB, 4096, 0.001).unwrap();
        assert_eq!(e, 7 * MIB);
    }
}
