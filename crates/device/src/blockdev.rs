//! The block layer's own ioctls on an open block device (linux/fs.h):
//! size, logical sector size, the read-only flag, discard and partition
//! re-read. Every stage that opens a disk asks through here, so each
//! request number and argument layout is written once.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::passthrough::ioctl_ptr;

const BLKROGET: u64 = 0x125e;
const BLKRRPART: u64 = 0x125f;
const BLKSSZGET: u64 = 0x1268;
const BLKDISCARD: u64 = 0x1277;
const BLKGETSIZE64: u64 = 0x8008_1272;

/// Capacity in bytes (BLKGETSIZE64).
pub fn size_bytes(f: &File) -> io::Result<u64> {
    let mut size = 0u64;
    // SAFETY: BLKGETSIZE64 writes one u64.
    unsafe { ioctl_ptr(f.as_raw_fd(), BLKGETSIZE64, &mut size) }?;
    Ok(size)
}

/// Logical sector size in bytes (BLKSSZGET).
pub fn logical_block_size(f: &File) -> io::Result<u32> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    unsafe { ioctl_ptr(f.as_raw_fd(), BLKSSZGET, &mut size) }?;
    Ok(size.max(0) as u32)
}

/// Whether the kernel marks the device read-only (BLKROGET).
pub fn read_only(f: &File) -> io::Result<bool> {
    let mut ro: libc::c_int = 0;
    // SAFETY: BLKROGET writes one int.
    unsafe { ioctl_ptr(f.as_raw_fd(), BLKROGET, &mut ro) }?;
    Ok(ro != 0)
}

/// Discards `len` bytes at `offset` (BLKDISCARD).
pub fn discard(f: &File, offset: u64, len: u64) -> io::Result<()> {
    let mut range = [offset, len];
    // SAFETY: BLKDISCARD reads two u64 (start, length).
    unsafe { ioctl_ptr(f.as_raw_fd(), BLKDISCARD, range.as_mut_ptr()) }?;
    Ok(())
}

/// Asks the kernel to re-read the partition table (BLKRRPART).
pub fn reread_partitions(f: &File) -> io::Result<()> {
    // SAFETY: BLKRRPART takes no argument.
    unsafe { ioctl_ptr::<u8>(f.as_raw_fd(), BLKRRPART, std::ptr::null_mut()) }?;
    Ok(())
}

/// Opens `path` with `options` and `flags`. Where `flags` ask for O_DIRECT
/// and `path` is a file on a filesystem that refuses it with EINVAL (ramfs;
/// tmpfs before Linux 6.6, such as the boot image's /var/lib), it is opened
/// again without O_DIRECT. Returns the file and whether O_DIRECT held.
/// Only the safety gate's `Cleared::open` opens for writing through it:
/// outside this crate a device is opened for writing by that alone.
pub(crate) fn open_direct_or_buffered(
    options: &OpenOptions,
    path: impl AsRef<Path>,
    flags: i32,
) -> io::Result<(File, bool)> {
    let path = path.as_ref();
    let direct = flags & libc::O_DIRECT != 0;
    match options.clone().custom_flags(flags).open(path) {
        Ok(f) => Ok((f, direct)),
        Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) && !is_block_device(path) => {
            let f = options
                .clone()
                .custom_flags(flags & !libc::O_DIRECT)
                .open(path)?;
            Ok((f, false))
        }
        Err(e) => Err(e),
    }
}

/// `path` opened for reading only, O_DIRECT where `flags` ask for it and
/// the filesystem takes it: what a read pass needs, and no gate.
pub fn open_for_reading(path: impl AsRef<Path>, flags: i32) -> io::Result<(File, bool)> {
    open_direct_or_buffered(OpenOptions::new().read(true), path, flags)
}

fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false)
}
