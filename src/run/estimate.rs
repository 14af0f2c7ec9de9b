//! How long a run will take, said before it starts (the dry run and the
//! run's first lines): the timed stages as the profile gives them (ACT
//! loads, the search's worst case, a stream burn-in's duration) and the
//! stages bound by the drive's size (ACT prep, stream passes and loops,
//! the filesystem pass) at an assumed sequential rate, since the drive's
//! own is what the run measures.

use super::profile::Profile;
use super::Target;
use crate::inventory::Inventory;
use crate::output::units::decimal_bytes;

/// The sequential rate assumed for the stages bound by size: a SATA SSD's
/// (NVMe drives are several times faster, disks slower).
pub const ASSUMED_BYTES_PER_SEC: u64 = 500_000_000;

/// Bytes one drive's size-bound stages move, by part ("prep", "stream"),
/// as each workload counts its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SizeBound {
    parts: Vec<(&'static str, u64)>,
}

impl SizeBound {
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |t, (_, b)| t.saturating_add(*b))
    }

    /// The bytes of one part; 0 where no workload moves any.
    #[cfg(test)]
    pub fn part(&self, name: &str) -> u64 {
        self.parts
            .iter()
            .filter(|(n, _)| *n == name)
            .fold(0u64, |t, (_, b)| t.saturating_add(*b))
    }

    /// What moves what, as "prep 8.0 GB, stream 2.2 GB".
    fn parts(&self) -> String {
        self.parts
            .iter()
            .filter(|(_, b)| *b > 0)
            .map(|(what, b)| format!("{what} {}", decimal_bytes(*b)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The bytes a drive of `drive_bytes` moves in the profile's size-bound
/// stages.
pub fn size_bound(p: &Profile, drive_bytes: u64) -> SizeBound {
    SizeBound {
        parts: super::workload::WORKLOADS
            .iter()
            .flat_map(|w| w.size_bound(p, drive_bytes))
            .collect(),
    }
}

/// A drive's size: a scratch file's, or the inventory's for the disk.
pub fn drive_bytes(t: &Target, inv: &Inventory) -> Option<u64> {
    if t.file_size > 0 {
        return Some(t.file_size);
    }
    inv.disks
        .iter()
        .find(|d| d.dev_path == t.disk)
        .map(|d| d.capacity_bytes)
        .filter(|b| *b > 0)
}

/// The lines that say how long the run takes: the timed stages, the
/// size-bound ones for the largest drive (drives run side by side), the
/// sum, and whether it fits the profile's time budget.
pub fn text(p: &Profile, targets: &[Target], inv: &Inventory) -> Vec<String> {
    let secs = |s: u64| humantime::format_duration(std::time::Duration::from_secs(s)).to_string();
    let timed = p.plan.timed_seconds();
    let mut lines = vec![format!("timed stages: {}", secs(timed))];
    let sizes: Vec<Option<u64>> = targets.iter().map(|t| drive_bytes(t, inv)).collect();
    let largest = sizes.iter().flatten().max().copied().unwrap_or(0);
    let bound = size_bound(p, largest);
    let moving = bound.total().div_ceil(ASSUMED_BYTES_PER_SEC);
    if bound.total() > 0 {
        lines.push(format!(
            "stages bound by size: {} on the largest drive, about {} at an assumed {} MB/s (NVMe is faster, disks slower)",
            bound.parts(),
            secs(moving),
            ASSUMED_BYTES_PER_SEC / 1_000_000
        ));
    }
    if sizes.iter().any(Option::is_none) && size_bound(p, 1 << 40).total() > 0 {
        lines.push("  (a drive of unknown size is not counted)".into());
    }
    let total = timed + moving;
    lines.push(format!("in all: about {}", secs(total)));
    if let Some(budget) = p.plan.time_budget {
        if total > budget.as_secs() {
            lines.push(format!(
                "  more than the time budget ({}): stages not started in time are skipped",
                secs(budget.as_secs())
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(toml: &str) -> Profile {
        Profile::parse(toml, "test.toml").unwrap()
    }

    #[test]
    fn prep_stream_loops_and_the_filesystem_pass_are_counted() {
        let p = profile(
            "name = \"x\"\n[devices]\nselect = \"all\"\n\
             [[phase]]\nspare_pct = 0\nprep = true\nstorage = [{ load = \"1x\", duration = \"1h\" }]\n\
             [[phase]]\nspare_pct = 20\nprep = true\nstorage = [{ load = \"1x\", duration = \"1h\" }]\n\
             [stream]\npercent = 50\nloops = 2\n",
        );
        let b = size_bound(&p, 1_000_000_000_000);
        // 2 x 1 TB, then 2 x 800 GB.
        assert_eq!(b.part("prep"), 3_600_000_000_000);
        // Half the drive, written and read, twice.
        assert_eq!(b.part("stream"), 2_000_000_000_000);
        assert_eq!(b.part("filesystem pass"), 0);
    }

    /// The filesystem pass moves its one file four times (write, rewrite's
    /// read and write, read), however many small files it makes: a 16 GiB
    /// file with 1024 files was estimated at 35 TB.
    #[test]
    fn the_filesystem_pass_counts_its_file_not_its_small_files() {
        let p = profile(
            "name = \"x\"\n[devices]\nselect = \"all\"\n\
             [stream]\npattern = []\nfs_dir = \"/mnt/v\"\nfs_size = \"16G\"\nfs_files = 1024\n",
        );
        let b = size_bound(&p, 1 << 40);
        assert_eq!(
            (b.part("stream"), b.part("filesystem pass")),
            (0, 4 * (16 << 30))
        );
    }

    #[test]
    fn a_stream_bounded_by_time_is_a_timed_stage() {
        let p = profile("name = \"x\"\n[devices]\nselect = \"all\"\n[stream]\nduration = \"2h\"\n");
        assert_eq!(size_bound(&p, 1 << 40).part("stream"), 0);
        assert_eq!(p.plan.timed_seconds(), 7200);
    }
}
