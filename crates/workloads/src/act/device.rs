//! The devices (or files) a workload runs on: opened as ACT opens them
//! (O_DIRECT, O_DSYNC unless disable-odsync), sized, and with ACT's
//! minimum I/O size discovery and request patterns.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileTypeExt;

use anyhow::{bail, Context, Result};

use storcert_device::safety::{Cleared, Writing};
use storcert_engine::AlignedBuf;

pub struct Device {
    pub name: String,
    file: File,
    /// storcert's mark on a block device: "writing" while open, "tested"
    /// once dropped (after `file` is closed: fields drop in order).
    _writing: Writing,
    pub size_bytes: u64,
    /// Smallest O_DIRECT read that succeeds: 512, 1024, 2048 or 4096.
    pub min_op_bytes: u32,
    pub direct: bool,
    pub errors: DeviceErrors,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct DeviceErrors {
    pub read_errors: u64,
    pub write_errors: u64,
    /// The first errors, with offset and what the kernel said.
    pub first: Vec<String>,
}

impl DeviceErrors {
    pub fn total(&self) -> u64 {
        self.read_errors + self.write_errors
    }
}

impl Device {
    /// Opens the cleared target read-write. `file_size` (ACT's
    /// file-size-mbytes) sizes a regular file, creating it if needed.
    pub fn open(target: &Cleared, dsync: bool, file_size: u64) -> Result<Device> {
        let name = &*target.path.to_string_lossy();
        let mut flags = libc::O_DIRECT;
        if dsync {
            flags |= libc::O_DSYNC;
        }
        let is_block = std::fs::metadata(name)
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false);
        // A file on a filesystem without O_DIRECT (tmpfs) is used buffered,
        // and the results say so.
        let (file, direct) = target
            .open(
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(!is_block && file_size > 0)
                    .truncate(false),
                flags,
            )
            .with_context(|| format!("open {name}"))?;
        let writing = target
            .begin_writing()
            .with_context(|| format!("{name}: write storcert's mark"))?;
        let size_bytes = if is_block {
            storcert_device::blockdev::size_bytes(&file)
                .with_context(|| format!("{name}: size (BLKGETSIZE64)"))?
        } else {
            if file_size > 0 {
                file.set_len(file_size)
                    .with_context(|| format!("{name}: size the file to {file_size} bytes"))?;
            }
            file.metadata()?.len()
        };
        let mut dev = Device {
            name: name.to_string(),
            file,
            _writing: writing,
            size_bytes,
            min_op_bytes: 0,
            direct,
            errors: DeviceErrors::default(),
        };
        dev.min_op_bytes = dev.discover_min_op_bytes()?;
        Ok(dev)
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// ACT's discover_min_op_bytes(): the smallest direct read that works.
    fn discover_min_op_bytes(&self) -> Result<u32> {
        let mut buf = AlignedBuf::new(4096);
        let mut size = 512usize;
        while size <= 4096 {
            // SAFETY: buf holds 4096 bytes.
            let rc =
                unsafe { libc::pread(self.fd(), buf.as_mut_ptr() as *mut libc::c_void, size, 0) };
            if rc == size as isize {
                return Ok(size as u32);
            }
            size <<= 1;
        }
        bail!(
            "{}: read failed at all sizes from 512 to 4096 bytes (is it smaller than 4 KiB?)",
            self.name
        )
    }

    pub fn record_error(&mut self, write: bool, offset: u64, len: u32, err: &std::io::Error) {
        if write {
            self.errors.write_errors += 1;
        } else {
            self.errors.read_errors += 1;
        }
        if self.errors.first.len() < 16 {
            self.errors.first.push(format!(
                "{} of {len} bytes at offset {offset}: {err}",
                if write { "write" } else { "read" }
            ));
        }
    }
}

/// ACT's request pattern of one device for records of a size range:
/// sizes in whole min-op blocks, offsets aligned to min-op and leaving room
/// for the largest request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPattern {
    pub min_bytes: u32,
    pub n_sizes: u32,
    pub step: u32,
    pub n_offsets: u64,
}

impl RecordPattern {
    pub fn new(
        n_large_blocks: u64,
        large_block_bytes: u32,
        min_op: u32,
        stored_bytes: u32,
        stored_bytes_rmx: u32,
    ) -> Option<RecordPattern> {
        let n_min_op_blocks = n_large_blocks * large_block_bytes as u64 / min_op as u64;
        let blocks = stored_bytes.div_ceil(min_op);
        let blocks_rmx = stored_bytes_rmx.div_ceil(min_op);
        let n_offsets = (n_min_op_blocks + 1).checked_sub(blocks_rmx as u64)?;
        (n_offsets > 0).then_some(RecordPattern {
            min_bytes: blocks * min_op,
            n_sizes: blocks_rmx - blocks + 1,
            step: min_op,
            n_offsets,
        })
    }

    pub fn max_bytes(&self) -> u32 {
        self.min_bytes + self.step * (self.n_sizes - 1)
    }

    #[inline]
    pub fn pick(&self, rng: &mut storcert_util::random::Rng) -> (u64, u32) {
        let offset = (rng.next_u64() % self.n_offsets) * self.step as u64;
        let size = if self.n_sizes == 1 {
            self.min_bytes
        } else {
            self.min_bytes + self.step * (rng.next_u32() % self.n_sizes)
        };
        (offset, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_pattern_as_act() {
        // 1 GiB, 128 KiB blocks, 512-byte min op, 1536-byte records.
        let p = RecordPattern::new(8192, 131072, 512, 1536, 1536).unwrap();
        assert_eq!(p.min_bytes, 1536);
        assert_eq!(p.n_sizes, 1);
        assert_eq!(p.n_offsets, 2 * 1024 * 1024 - 3 + 1);
        // 4096-byte min op rounds records up to 4096.
        let p = RecordPattern::new(8192, 131072, 4096, 1536, 3000).unwrap();
        assert_eq!((p.min_bytes, p.n_sizes), (4096, 1));
        let p = RecordPattern::new(8192, 131072, 512, 1536, 4096).unwrap();
        assert_eq!((p.min_bytes, p.n_sizes, p.max_bytes()), (1536, 6, 4096));
        assert!(RecordPattern::new(0, 131072, 512, 1536, 1536).is_none());
    }

    #[test]
    fn opens_a_file_with_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratch");
        let cleared =
            storcert_device::safety::check_all(std::slice::from_ref(&path), &Default::default());
        let dev = Device::open(&cleared.unwrap()[0], true, 8 << 20).unwrap();
        assert_eq!(dev.size_bytes, 8 << 20);
        assert!(dev.min_op_bytes >= 512);
    }
}
