//! What a device holds, named in libblkid's words (`TYPE="crypto_LUKS"
//! VERSION="2"`, `PTTYPE="gpt"`), for the gate's refusals and dry runs.
//!
//! This table only names: the gate's decision does not rest on it. A disk
//! is written only when the regions where any libblkid prober looks are
//! all zero, or hold storcert's own verified marker (`marker.rs`), so a
//! signature this table does not know is refused all the same, as "data".
//! The offsets are libblkid's (util-linux, libblkid/src/superblocks and
//! partitions); the corpus test checks each name against `blkid -p`.

/// Bytes from the start and from the end of a device that the gate reads:
/// every place a libblkid prober (util-linux 2.38 to 2.43) looks at a
/// fixed offset lies within them. From the start, the farthest is LUKS2's
/// last secondary header at 4 MiB (read by `blkid -p` in every released
/// version), then VMFS and bcachefs's second superblock at 2 MiB and UDF's
/// anchor at 2 MiB with 4 KiB blocks; from the end, Promise FastTrack's
/// RAID metadata at 3087 sectors (1.51 MiB), bcachefs at 1 MiB and ZFS's
/// back labels within 752 KiB. libblkid widens each read to the device's
/// I/O size (up to 64 KiB), so each bound has room to spare. Probers that
/// follow on-disk pointers past these regions (GPT entries, NTFS's MFT)
/// first need a magic within them, which the gate refuses already.
pub const HEAD_BYTES: u64 = 8 << 20;
pub const TAIL_BYTES: u64 = 2 << 20;

/// A signature found: libblkid's key (TYPE or PTTYPE), its value, and a
/// version where libblkid gives one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub key: &'static str,
    pub kind: &'static str,
    pub version: Option<String>,
    /// Where its magic is, in bytes from the start of the device.
    pub offset: u64,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}=\"{}\"", self.key, self.kind)?;
        if let Some(v) = &self.version {
            write!(f, " VERSION=\"{v}\"")?;
        }
        Ok(())
    }
}

/// The head (the device's first bytes, up to HEAD_BYTES) and tail (its
/// last bytes, up to TAIL_BYTES) of a device of `size` bytes.
pub struct Regions<'a> {
    pub head: &'a [u8],
    pub tail: &'a [u8],
    pub size: u64,
}

impl Regions<'_> {
    fn at(&self, off: u64, magic: &[u8]) -> bool {
        self.bytes(off, magic.len()) == Some(magic)
    }

    /// `len` bytes at absolute offset `off`, from whichever region holds them.
    fn bytes(&self, off: u64, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len as u64)?;
        if end <= self.head.len() as u64 {
            return self.head.get(off as usize..end as usize);
        }
        let tail_start = self.size.checked_sub(self.tail.len() as u64)?;
        if off >= tail_start && end <= self.size {
            let o = (off - tail_start) as usize;
            return self.tail.get(o..o + len);
        }
        None
    }

    fn le16(&self, off: u64) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(off, 2)?.try_into().ok()?))
    }

    fn le32(&self, off: u64) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(off, 4)?.try_into().ok()?))
    }

    /// Offset from the end, where the device is that large.
    fn back_from_end(&self, back: u64) -> Option<u64> {
        self.size.checked_sub(back)
    }

    /// The first non-zero byte of either region, as an absolute offset.
    pub fn first_data(&self) -> Option<u64> {
        if let Some(i) = self.head.iter().position(|&b| b != 0) {
            return Some(i as u64);
        }
        let tail_start = self.size.saturating_sub(self.tail.len() as u64);
        self.tail
            .iter()
            .position(|&b| b != 0)
            .map(|i| tail_start + i as u64)
    }
}

const MD_MAGIC: [u8; 4] = 0xa92b_4efcu32.to_le_bytes();
const BCACHE_MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];

fn found(key: &'static str, kind: &'static str, offset: u64) -> Option<Signature> {
    Some(Signature {
        key,
        kind,
        version: None,
        offset,
    })
}

/// Every signature in the regions this table knows, superblocks first (as
/// `blkid -p` prints TYPE before PTTYPE).
pub fn identify(r: &Regions) -> Vec<Signature> {
    let probers: &[fn(&Regions) -> Option<Signature>] = &[
        luks,
        md,
        raid_end,
        lvm2,
        bcache,
        ext,
        xfs,
        btrfs,
        boot_sector,
        f2fs,
        squashfs,
        erofs,
        nilfs2,
        udf_or_iso9660,
        ceph_bluestore,
        oracleasm,
        swap,
        jfs,
        reiserfs,
        zfs,
        vmfs,
        gpt,
        mac,
        dos,
    ];
    probers.iter().filter_map(|p| p(r)).collect()
}

fn luks(r: &Regions) -> Option<Signature> {
    // LUKS2 keeps a second header at one of these offsets; libblkid finds
    // a volume by it when the first is gone.
    const SECONDARY: [u64; 9] = [
        0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000,
    ];
    let (off, version) = if r.at(0, b"LUKS\xba\xbe") {
        (0, r.bytes(6, 2)?)
    } else {
        let off = *SECONDARY.iter().find(|&&o| r.at(o, b"SKUL\xba\xbe"))?;
        (off, r.bytes(off + 6, 2)?)
    };
    Some(Signature {
        key: "TYPE",
        kind: "crypto_LUKS",
        version: Some(u16::from_be_bytes([version[0], version[1]]).to_string()),
        offset: off,
    })
}

fn md(r: &Regions) -> Option<Signature> {
    let version = |off: u64, v: &str| {
        Some(Signature {
            key: "TYPE",
            kind: "linux_raid_member",
            version: Some(v.to_string()),
            offset: off,
        })
    };
    if r.at(0, &MD_MAGIC) {
        return version(0, "1.1");
    }
    if r.at(4096, &MD_MAGIC) {
        return version(4096, "1.2");
    }
    // 1.0: 8 KiB before the end, 4 KiB aligned; 0.90: the last 64 KiB
    // aligned block but one.
    let sectors = r.size / 512;
    if sectors >= 16 {
        let off = ((sectors - 16) & !7) * 512;
        if r.at(off, &MD_MAGIC) {
            return version(off, "1.0");
        }
    }
    if r.size >= 128 << 10 {
        let off = (r.size & !0xffff) - 0x10000;
        if r.at(off, &MD_MAGIC) {
            return version(off, "0.90.0");
        }
    }
    None
}

/// Firmware RAID metadata at the end of a disk: SNIA DDF's anchor in the
/// last sector, Intel Matrix (IMSM) in the second last.
fn raid_end(r: &Regions) -> Option<Signature> {
    let last = r.back_from_end(512)?;
    if r.at(last, &[0xde, 0x11, 0xde, 0x11]) {
        return found("TYPE", "ddf_raid_member", last);
    }
    let imsm = r.back_from_end(1024)?;
    if r.at(imsm, b"Intel Raid ISM Cfg Sig. ") {
        return found("TYPE", "isw_raid_member", imsm);
    }
    None
}

fn lvm2(r: &Regions) -> Option<Signature> {
    (0..4u64).find_map(|s| {
        let off = s * 512;
        (r.at(off, b"LABELONE") && r.at(off + 24, b"LVM2 001")).then(|| Signature {
            key: "TYPE",
            kind: "LVM2_member",
            version: Some("LVM2 001".into()),
            offset: off,
        })
    })
}

fn bcache(r: &Regions) -> Option<Signature> {
    r.at(4096 + 24, &BCACHE_MAGIC)
        .then_some(())
        .and_then(|_| found("TYPE", "bcache", 4096 + 24))
}

fn ext(r: &Regions) -> Option<Signature> {
    const SB: u64 = 1024;
    if !r.at(SB + 0x38, &[0x53, 0xef]) {
        return None;
    }
    let compat = r.le32(SB + 0x5c)?;
    let incompat = r.le32(SB + 0x60)?;
    let ro_compat = r.le32(SB + 0x64)?;
    // libblkid's rules: a journal device; ext2 and ext3 by the features
    // they support; ext4 for anything beyond.
    const JOURNAL_DEV: u32 = 0x0008;
    const HAS_JOURNAL: u32 = 0x0004;
    const EXT3_INCOMPAT: u32 = 0x0002 | 0x0004 | 0x0010;
    const EXT3_RO_COMPAT: u32 = 0x0001 | 0x0002 | 0x0004;
    let kind = if incompat & JOURNAL_DEV != 0 {
        "jbd"
    } else if incompat & !EXT3_INCOMPAT != 0 || ro_compat & !EXT3_RO_COMPAT != 0 {
        "ext4"
    } else if compat & HAS_JOURNAL != 0 {
        "ext3"
    } else {
        "ext2"
    };
    // s_rev_level.s_minor_rev_level, as libblkid gives it.
    let version = Some(format!("{}.{}", r.le32(SB + 0x4c)?, r.le16(SB + 0x3e)?));
    Some(Signature {
        key: "TYPE",
        kind,
        version,
        offset: SB + 0x38,
    })
}

fn xfs(r: &Regions) -> Option<Signature> {
    r.at(0, b"XFSB")
        .then_some(())
        .and_then(|_| found("TYPE", "xfs", 0))
}

fn btrfs(r: &Regions) -> Option<Signature> {
    let off = 0x10000 + 0x40;
    r.at(off, b"_BHRfS_M")
        .then_some(())
        .and_then(|_| found("TYPE", "btrfs", off))
}

/// Signatures in a boot sector's OEM field or FAT's type fields.
fn boot_sector(r: &Regions) -> Option<Signature> {
    for (magic, kind) in [
        (&b"EXFAT   "[..], "exfat"),
        (b"NTFS    ", "ntfs"),
        (b"-FVE-FS-", "BitLocker"),
    ] {
        if r.at(3, magic) {
            return found("TYPE", kind, 3);
        }
    }
    if !r.at(510, &[0x55, 0xaa]) {
        return None;
    }
    for (off, magic) in [
        (0x52, &b"FAT32   "[..]),
        (0x52, b"MSWIN"),
        (0x36, b"FAT12   "),
        (0x36, b"FAT16   "),
        (0x36, b"FAT     "),
        (0x36, b"MSDOS"),
    ] {
        if r.at(off, magic) {
            let version = &magic[..5];
            return Some(Signature {
                key: "TYPE",
                kind: "vfat",
                version: (version.starts_with(b"FAT") && magic.len() == 8 && magic[3] != b' ')
                    .then(|| String::from_utf8_lossy(&magic[..5]).into_owned()),
                offset: off,
            });
        }
    }
    None
}

fn f2fs(r: &Regions) -> Option<Signature> {
    (r.le32(1024)? == 0xf2f5_2010).then(|| found("TYPE", "f2fs", 1024))?
}

fn squashfs(r: &Regions) -> Option<Signature> {
    if r.at(0, b"hsqs") {
        return found("TYPE", "squashfs", 0);
    }
    if r.at(0, b"sqsh") {
        return found("TYPE", "squashfs3", 0);
    }
    None
}

fn erofs(r: &Regions) -> Option<Signature> {
    (r.le32(1024)? == 0xe0f5_e1e2).then(|| found("TYPE", "erofs", 1024))?
}

fn nilfs2(r: &Regions) -> Option<Signature> {
    if r.le16(1024 + 6)? == 0x3434 {
        return found("TYPE", "nilfs2", 1024 + 6);
    }
    // The secondary superblock: in the last 4 KiB-aligned 4 KiB.
    let sb2 = (r.size / 4096).checked_sub(1)? * 4096;
    (r.le16(sb2 + 6)? == 0x3434).then(|| found("TYPE", "nilfs2", sb2 + 6))?
}

/// ISO 9660 and UDF share the volume recognition area at 32 KiB.
fn udf_or_iso9660(r: &Regions) -> Option<Signature> {
    const VRS: u64 = 0x8000 + 1;
    for step in [2048u64, 4096, 512, 1024] {
        for i in 0..8 {
            let off = VRS + i * step;
            if r.at(off, b"NSR02") || r.at(off, b"NSR03") {
                return found("TYPE", "udf", off);
            }
        }
    }
    if r.at(VRS, b"CD001") {
        return found("TYPE", "iso9660", VRS);
    }
    None
}

fn ceph_bluestore(r: &Regions) -> Option<Signature> {
    r.at(0, b"bluestore block device")
        .then_some(())
        .and_then(|_| found("TYPE", "ceph_bluestore", 0))
}

fn oracleasm(r: &Regions) -> Option<Signature> {
    r.at(32, b"ORCLDISK")
        .then_some(())
        .and_then(|_| found("TYPE", "oracleasm", 32))
}

fn swap(r: &Regions) -> Option<Signature> {
    for page in [4096u64, 8192, 16384, 32768, 65536] {
        let off = page - 10;
        if r.at(off, b"SWAPSPACE2") {
            return Some(Signature {
                key: "TYPE",
                kind: "swap",
                version: Some("1".into()),
                offset: off,
            });
        }
        if r.at(off, b"SWAP-SPACE") {
            return found("TYPE", "swap", off);
        }
        for s in [&b"S1SUSPEND"[..], b"S2SUSPEND", b"ULSUSPEND", b"LINHIB0001"] {
            if r.at(page - 10, s) {
                return found("TYPE", "swsuspend", off);
            }
        }
    }
    None
}

fn jfs(r: &Regions) -> Option<Signature> {
    r.at(0x8000, b"JFS1")
        .then_some(())
        .and_then(|_| found("TYPE", "jfs", 0x8000))
}

fn reiserfs(r: &Regions) -> Option<Signature> {
    for base in [0x10000u64, 0x2000] {
        let off = base + 52;
        if r.at(off, b"ReIsErFs") || r.at(off, b"ReIsEr2Fs") || r.at(off, b"ReIsEr3Fs") {
            return found("TYPE", "reiserfs", off);
        }
        if r.at(off, b"ReIsEr4") {
            return found("TYPE", "reiser4", off);
        }
    }
    None
}

/// ZFS: four 256 KiB labels, two at the start and two at the end, each
/// with an uberblock array from 128 KiB in.
fn zfs(r: &Regions) -> Option<Signature> {
    const UBERBLOCK: u32 = 0x00ba_b10c;
    let aligned = r.size & !((256 << 10) - 1);
    let labels = [
        Some(0),
        Some(256 << 10),
        aligned.checked_sub(512 << 10),
        aligned.checked_sub(256 << 10),
    ];
    labels.into_iter().flatten().find_map(|label| {
        (0..128u64).find_map(|i| {
            let off = label + (128 << 10) + i * 1024;
            (r.le32(off) == Some(UBERBLOCK)).then(|| found("TYPE", "zfs_member", off))?
        })
    })
}

fn vmfs(r: &Regions) -> Option<Signature> {
    let off = 0x10_0000;
    if r.at(off, &[0x0d, 0xd0, 0x01, 0xc0]) {
        return found("TYPE", "VMFS_volume_member", off);
    }
    let off = 0x20_0000;
    r.at(off, &[0x5e, 0xf1, 0xab, 0x2f])
        .then(|| found("TYPE", "VMFS", off))?
}

fn gpt(r: &Regions) -> Option<Signature> {
    for off in [512u64, 4096] {
        if r.at(off, b"EFI PART") {
            return found("PTTYPE", "gpt", off);
        }
    }
    // Only the backup header left, in the last sector.
    for back in [512u64, 4096] {
        let off = r.back_from_end(back)?;
        if r.at(off, b"EFI PART") {
            return found("PTTYPE", "gpt", off);
        }
    }
    None
}

fn mac(r: &Regions) -> Option<Signature> {
    (r.at(0, b"ER") && r.at(512, b"PM"))
        .then_some(())
        .and_then(|_| found("PTTYPE", "mac", 0))
}

/// An MBR: the boot signature and at least one partition entry in use
/// (and none of the boot-sector filesystems above, which also end so).
fn dos(r: &Regions) -> Option<Signature> {
    if !r.at(510, &[0x55, 0xaa]) || boot_sector(r).is_some() {
        return None;
    }
    let types: Vec<u8> = (0..4)
        .filter_map(|i| r.bytes(446 + i * 16 + 4, 1).map(|t| t[0]))
        .collect();
    // A protective MBR (type 0xee) is GPT's own, which libblkid reports
    // as the GPT alone.
    if types.contains(&0xee) && gpt(r).is_some() {
        return None;
    }
    types
        .iter()
        .any(|&t| t != 0)
        .then(|| found("PTTYPE", "dos", 510))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(head: &[u8], tail: &[u8], size: u64) -> Vec<String> {
        identify(&Regions { head, tail, size })
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn each_offset_names_its_signature() {
        let size = 8 << 20;
        let zeros = vec![0u8; 64 << 10];
        let mut head = vec![0u8; 128 << 10];
        assert!(names(&head, &zeros, size).is_empty());
        head[0..6].copy_from_slice(b"LUKS\xba\xbe");
        head[7] = 2;
        assert_eq!(
            names(&head, &zeros, size),
            ["TYPE=\"crypto_LUKS\" VERSION=\"2\""]
        );
        let mut head = vec![0u8; 128 << 10];
        head[0x4000..0x4006].copy_from_slice(b"SKUL\xba\xbe");
        head[0x4007] = 2;
        assert_eq!(
            names(&head, &zeros, size),
            ["TYPE=\"crypto_LUKS\" VERSION=\"2\""],
            "the secondary header alone"
        );
        let head = vec![0u8; 128 << 10];
        let mut tail = vec![0u8; 64 << 10];
        let n = tail.len();
        tail[n - 512..n - 508].copy_from_slice(&[0xde, 0x11, 0xde, 0x11]);
        assert_eq!(names(&head, &tail, size), ["TYPE=\"ddf_raid_member\""]);
    }

    #[test]
    fn data_anywhere_in_the_regions_is_found() {
        let head = vec![0u8; 4096];
        let mut tail = vec![0u8; 4096];
        tail[4095] = 1;
        let r = Regions {
            head: &head,
            tail: &tail,
            size: 1 << 20,
        };
        assert_eq!(r.first_data(), Some((1 << 20) - 1));
        assert!(identify(&r).is_empty(), "data, but no signature");
    }
}
