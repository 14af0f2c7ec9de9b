//! The spool: where a signed bundle waits until a receiver has confirmed
//! its digest. `pending/` holds what is still to be sent, `sent/` what was
//! confirmed (kept, as the local copy of record). Every file arrives by
//! temporary + fsync + rename, signatures before their bundle, so a
//! bundle present in `pending/` always has both signatures; a torn
//! temporary left by a power cut is removed when the spool is opened.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bundle;
use crate::util::fs::write_durably;

pub const BUNDLE_SUFFIX: &str = ".tar.zst";
/// The filesystem label of the USB stick's results partition.
pub const RESULTS_LABEL: &str = "STORCERT";

/// udev's by-label link of the results partition (present once udev has
/// read a filesystem labelled STORCERT, mounted or not).
pub fn results_label_link(roots: &crate::inventory::Roots) -> PathBuf {
    roots.dev.join("disk/by-label").join(RESULTS_LABEL)
}

/// Where the results partition (the filesystem labelled STORCERT, found
/// through udev's by-label link) is mounted, if it is.
pub fn results_partition(roots: &crate::inventory::Roots) -> Option<PathBuf> {
    use crate::inventory::sysfs;
    let devnum = sysfs::devnum_of_path(roots, &results_label_link(roots))?;
    sysfs::mounts_by_devnum(roots)
        .get(&devnum)?
        .first()
        .map(PathBuf::from)
}

/// The spool on the results partition, when the machine has one mounted:
/// bundles then survive a reboot and leave with the stick.
pub fn default_dir() -> Option<PathBuf> {
    results_partition(&crate::inventory::Roots::default()).map(|m| m.join("storcert/spool"))
}

/// How old a signature without its bundle must be to count as left
/// behind (younger, another process may be spooling it right now).
const ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// `name` is a signature file in `dir` whose bundle is not there.
fn orphan_signature(dir: &Path, name: &str) -> bool {
    let bundle = name
        .strip_suffix(".minisig")
        .or_else(|| name.strip_suffix(".intoto.json"));
    bundle.is_some_and(|b| b.ends_with(BUNDLE_SUFFIX) && !dir.join(b).exists())
}

pub struct Spool {
    pub dir: PathBuf,
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("{}", dir.display()))
}

fn sync_file(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("{}", path.display()))
}

impl Spool {
    pub fn open(dir: &Path) -> Result<Spool> {
        for sub in ["pending", "sent"] {
            crate::util::fs::create_dir_durably(&dir.join(sub))
                .with_context(|| format!("{}", dir.join(sub).display()))?;
        }
        let spool = Spool {
            dir: dir.to_path_buf(),
        };
        for entry in std::fs::read_dir(spool.pending_dir())? {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let why = if name.ends_with(".tmp") {
                "torn by an interrupted write"
            } else if orphan_signature(&spool.pending_dir(), &name)
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > ORPHAN_AGE))
            {
                // Signatures go in first: one whose bundle never followed
                // (a full disk, a power cut) is left by a write that ended.
                "a signature whose bundle never arrived"
            } else {
                continue;
            };
            eprintln!("spool: removing {} ({why})", path.display());
            std::fs::remove_file(&path).with_context(|| format!("{}", path.display()))?;
        }
        Ok(spool)
    }

    pub fn pending_dir(&self) -> PathBuf {
        self.dir.join("pending")
    }

    pub fn sent_dir(&self) -> PathBuf {
        self.dir.join("sent")
    }

    /// Copies a signed bundle into `pending/` (a no-op when the same bytes
    /// are already there). Returns its path in the spool.
    pub fn put(&self, bundle_path: &Path) -> Result<PathBuf> {
        let name = bundle_path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| n.ends_with(BUNDLE_SUFFIX))
            .with_context(|| format!("{}: not a {BUNDLE_SUFFIX} file", bundle_path.display()))?;
        // A name a collector would refuse would stay pending for ever.
        if !bundle::valid_name(name) {
            anyhow::bail!(
                "{}: a bundle's name is letters, digits and ._-+ only, \
                 up to 200 bytes, not starting with a dot (a collector refuses others)",
                crate::util::text::printable(&bundle_path.display().to_string(), 300)
            );
        }
        let dest = self.pending_dir().join(name);
        let bytes =
            std::fs::read(bundle_path).with_context(|| format!("{}", bundle_path.display()))?;
        if std::fs::read(&dest).is_ok_and(|b| b == bytes) {
            return Ok(dest);
        }
        for (src, dst) in [
            (
                bundle::minisig_path(bundle_path),
                bundle::minisig_path(&dest),
            ),
            (
                bundle::envelope_path(bundle_path),
                bundle::envelope_path(&dest),
            ),
        ] {
            let data = std::fs::read(&src).with_context(|| {
                format!("{}: a spooled bundle needs its signature", src.display())
            })?;
            write_durably(&dst, data).with_context(|| format!("{}", dst.display()))?;
        }
        write_durably(&dest, bytes).with_context(|| format!("{}", dest.display()))?;
        Ok(dest)
    }

    /// Bundles waiting to be sent, oldest first.
    pub fn pending(&self) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(self.pending_dir())? {
            let entry = entry?;
            let path = entry.path();
            if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(BUNDLE_SUFFIX))
            {
                let modified = entry.metadata()?.modified()?;
                found.push((modified, path));
            }
        }
        found.sort();
        Ok(found.into_iter().map(|(_, p)| p).collect())
    }

    pub fn refused_dir(&self) -> PathBuf {
        self.dir.join("refused")
    }

    /// Moves a bundle a receiver refused for good to `refused/`, with the
    /// reason beside it (`NAME.refused.txt`): it is kept, but no longer
    /// sent, so it does not fail every later upload.
    pub fn refuse(&self, pending: &Path, why: &str) -> Result<PathBuf> {
        crate::util::fs::create_dir_durably(&self.refused_dir())
            .with_context(|| format!("{}", self.refused_dir().display()))?;
        let dest = self.move_out(pending, &self.refused_dir())?;
        let mut reason = dest.clone().into_os_string();
        reason.push(".refused.txt");
        write_durably(Path::new(&reason), format!("{why}\n"))
            .with_context(|| format!("{}", Path::new(&reason).display()))?;
        Ok(dest)
    }

    /// Moves a confirmed bundle to `sent/`.
    pub fn confirm(&self, pending: &Path) -> Result<PathBuf> {
        self.move_out(pending, &self.sent_dir())
    }

    /// Moves a bundle and its signatures out of `pending/`: the bundle
    /// first, so `pending/` never holds a bundle without its signatures.
    fn move_out(&self, pending: &Path, to: &Path) -> Result<PathBuf> {
        let name = pending.file_name().context("bundle path has no name")?;
        let dest = to.join(name);
        std::fs::rename(pending, &dest).with_context(|| format!("{}", pending.display()))?;
        // A renamed file is fsynced again: vfat writes its new entry's
        // size and first cluster only then (see write_durably).
        sync_file(&dest)?;
        for (src, dst) in [
            (bundle::minisig_path(pending), bundle::minisig_path(&dest)),
            (bundle::envelope_path(pending), bundle::envelope_path(&dest)),
        ] {
            if src.exists() {
                std::fs::rename(&src, &dst).with_context(|| format!("{}", src.display()))?;
                sync_file(&dst)?;
            }
        }
        sync_dir(to)?;
        sync_dir(&self.pending_dir())?;
        Ok(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bundle(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::write(bundle::minisig_path(&p), "sig").unwrap();
        std::fs::write(bundle::envelope_path(&p), "env").unwrap();
        p
    }

    #[test]
    fn finds_the_mounted_results_partition_by_label() {
        use std::os::unix::fs::MetadataExt;
        // Any block device node will do for the link's target.
        let Some(dev) = ["/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"]
            .into_iter()
            .find(|d| std::path::Path::new(d).exists())
        else {
            return;
        };
        let rdev = std::fs::metadata(dev).unwrap().rdev();
        let root = tempfile::tempdir().unwrap();
        let roots = crate::inventory::Roots::under(root.path());
        std::fs::create_dir_all(roots.dev.join("disk/by-label")).unwrap();
        std::fs::create_dir_all(roots.proc.join("self")).unwrap();
        assert_eq!(results_partition(&roots), None, "no label, no partition");
        std::os::unix::fs::symlink(dev, roots.dev.join("disk/by-label/STORCERT")).unwrap();
        assert_eq!(results_partition(&roots), None, "labelled but not mounted");
        let line = format!(
            "36 25 {}:{} / /run/storcert\\040results rw,relatime shared:1 - vfat {dev} rw\n",
            libc::major(rdev),
            libc::minor(rdev)
        );
        std::fs::write(roots.proc.join("self/mountinfo"), line).unwrap();
        assert_eq!(
            results_partition(&roots),
            Some(PathBuf::from("/run/storcert results"))
        );
    }

    #[test]
    fn put_pending_confirm_and_torn_cleanup() {
        let src = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        let a = fake_bundle(src.path(), "a.tar.zst", b"one");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = fake_bundle(src.path(), "b.tar.zst", b"two");
        let pa = spool.put(&a).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        spool.put(&b).unwrap();
        spool.put(&a).unwrap(); // same bytes again: nothing changes
        let names: Vec<_> = spool
            .pending()
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.tar.zst", "b.tar.zst"]);
        spool.confirm(&pa).unwrap();
        assert_eq!(spool.pending().unwrap().len(), 1);
        assert!(dir.path().join("sent/a.tar.zst.minisig").exists());
        // A torn temporary from a power cut is removed on open.
        std::fs::write(spool.pending_dir().join("c.tar.zst.tmp"), "torn").unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert!(!spool.pending_dir().join("c.tar.zst.tmp").exists());
        // A bundle without signatures is refused.
        let lone = src.path().join("lone.tar.zst");
        std::fs::write(&lone, "x").unwrap();
        let e = spool.put(&lone).unwrap_err();
        assert!(format!("{e:#}").contains("signature"), "{e:#}");
    }

    #[test]
    fn orphans_bad_names_and_refusals_do_not_stay_pending() {
        let src = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        // Signatures whose bundle never came (a full disk): removed once
        // old; a young one may be a put in progress and stays.
        let pending = spool.pending_dir();
        for name in [
            "gone.tar.zst.minisig",
            "gone.tar.zst.intoto.json",
            "young.tar.zst.minisig",
        ] {
            std::fs::write(pending.join(name), "sig").unwrap();
        }
        let old = std::time::SystemTime::now() - 2 * ORPHAN_AGE;
        for name in ["gone.tar.zst.minisig", "gone.tar.zst.intoto.json"] {
            std::fs::File::options()
                .write(true)
                .open(pending.join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let spool = Spool::open(dir.path()).unwrap();
        let left: Vec<_> = std::fs::read_dir(&pending)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["young.tar.zst.minisig"]);
        // A name a collector refuses is refused here, not kept pending.
        let bad = fake_bundle(src.path(), "run 1.tar.zst", b"x");
        let e = spool.put(&bad).unwrap_err();
        assert!(
            format!("{e:#}").contains("a collector refuses others"),
            "{e:#}"
        );
        assert!(spool.pending().unwrap().is_empty());
        // A bundle refused for good is set aside with its reason.
        let a = spool
            .put(&fake_bundle(src.path(), "a.tar.zst", b"one"))
            .unwrap();
        let moved = spool.refuse(&a, "HTTP 422: rejected").unwrap();
        assert!(spool.pending().unwrap().is_empty());
        assert!(moved.exists() && bundle::minisig_path(&moved).exists());
        let why =
            std::fs::read_to_string(dir.path().join("refused/a.tar.zst.refused.txt")).unwrap();
        assert_eq!(why, "HTTP 422: rejected\n");
    }
}
