//! storcert's mark on a device it writes: a 4 KiB block at offset 0 that
//! names the drive's serial and the run, written before the first write
//! ("writing") and again after the last ("tested", with a digest of every
//! region the gate reads). A later gate that finds a "tested" mark whose
//! digest still matches knows that nothing but storcert has written where
//! a signature could be since, so a drive storcert tested can be tested
//! again without a name, and a drive it did not test cannot.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::signature::Regions;

pub const MAGIC: &[u8; 16] = b"STORCERT-TESTDAT";
pub const BLOCK: usize = 4096;
const VERSION: u32 = 1;
/// Bytes the checksum covers; the checksum follows them.
const BODY: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Written before the first write: a run was (or is) writing.
    Writing = 1,
    /// Written after the last write, with the regions' digest.
    Tested = 2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub state: State,
    pub size: u64,
    pub serial: String,
    pub run: String,
    pub digest: [u8; 32],
}

fn put_text(block: &mut [u8], at: usize, len: usize, text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(len);
    block[at..at + n].copy_from_slice(&bytes[..n]);
}

fn get_text(block: &[u8], at: usize, len: usize) -> String {
    let field = &block[at..at + len];
    let end = field.iter().position(|&b| b == 0).unwrap_or(len);
    String::from_utf8_lossy(&field[..end]).into_owned()
}

impl Marker {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK];
        b[0..16].copy_from_slice(MAGIC);
        b[16..20].copy_from_slice(&VERSION.to_le_bytes());
        b[20..24].copy_from_slice(&(self.state as u32).to_le_bytes());
        b[24..32].copy_from_slice(&self.size.to_le_bytes());
        b[32..64].copy_from_slice(&self.digest);
        put_text(&mut b, 64, 64, &self.run);
        put_text(&mut b, 128, 128, &self.serial);
        let sum = Sha256::digest(&b[..BODY]);
        b[BODY..BODY + 32].copy_from_slice(&sum);
        b
    }

    /// The mark at the head of `head`, when it is whole and its checksum
    /// holds; anything else is no mark.
    pub fn decode(head: &[u8]) -> Option<Marker> {
        let b = head.get(..BLOCK)?;
        if &b[0..16] != MAGIC || u32::from_le_bytes(b[16..20].try_into().ok()?) != VERSION {
            return None;
        }
        if Sha256::digest(&b[..BODY])[..] != b[BODY..BODY + 32] {
            return None;
        }
        if b[BODY + 32..].iter().any(|&x| x != 0) {
            return None;
        }
        let state = match u32::from_le_bytes(b[20..24].try_into().ok()?) {
            1 => State::Writing,
            2 => State::Tested,
            _ => return None,
        };
        Some(Marker {
            state,
            size: u64::from_le_bytes(b[24..32].try_into().ok()?),
            digest: b[32..64].try_into().ok()?,
            run: get_text(b, 64, 64),
            serial: get_text(b, 128, 128),
        })
    }
}

/// The digest of every byte of the regions but the mark's own block, each
/// byte once where head and tail overlap (a device under 5 MiB).
pub fn digest(r: &Regions) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(r.size.to_le_bytes());
    h.update(r.head.get(BLOCK..).unwrap_or(&[]));
    let tail_start = r.size.saturating_sub(r.tail.len() as u64);
    let skip = (r.head.len() as u64).saturating_sub(tail_start) as usize;
    h.update(r.tail.get(skip..).unwrap_or(&[]));
    h.finalize().into()
}

/// Reads a device's head and tail regions: what the gate judges and the
/// mark's digest covers. The page cache is dropped first, so what another
/// open wrote with O_DIRECT is what is read.
pub fn read_regions(f: &File, size: u64) -> io::Result<(Vec<u8>, Vec<u8>)> {
    // SAFETY: advice on an open descriptor; no memory is passed.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    read_window(f, 0, size)
}

/// The head and tail regions of the window [offset, offset + size) of
/// `f` (a partition read through its disk).
pub fn read_window(f: &File, offset: u64, size: u64) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let head_len = size.min(super::signature::HEAD_BYTES) as usize;
    let tail_len = size.min(super::signature::TAIL_BYTES) as usize;
    let mut head = vec![0u8; head_len];
    f.read_exact_at(&mut head, offset)?;
    let mut tail = vec![0u8; tail_len];
    f.read_exact_at(&mut tail, offset + size - tail_len as u64)?;
    Ok((head, tail))
}

/// The mark a writer puts on a block device it was cleared for: "writing"
/// when it opens it, "tested" when it is done.
#[derive(Debug, Clone)]
pub struct Stamp {
    rdev: u64,
    path: PathBuf,
    serial: String,
    run: String,
}

impl Stamp {
    pub(super) fn new(rdev: u64, path: &Path, serial: &str, run: &str) -> Stamp {
        Stamp {
            rdev,
            path: path.to_path_buf(),
            serial: serial.to_string(),
            run: run.to_string(),
        }
    }

    fn write(&self, state: State) -> io::Result<()> {
        let f = OpenOptions::new().read(true).write(true).open(&self.path)?;
        // The mark goes only on the device the gate judged, whatever the
        // path names by now.
        super::same_device(&f, Some(self.rdev), &self.path)?;
        let size = crate::blockdev::size_bytes(&f)?;
        let digest = match state {
            State::Writing => [0u8; 32],
            State::Tested => {
                f.sync_all()?;
                let (head, tail) = read_regions(&f, size)?;
                digest(&Regions {
                    head: &head,
                    tail: &tail,
                    size,
                })
            }
        };
        let mark = Marker {
            state,
            size,
            serial: self.serial.clone(),
            run: self.run.clone(),
            digest,
        };
        f.write_all_at(&mark.encode(), 0)?;
        f.sync_all()?;
        // SAFETY: as in read_regions.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        Ok(())
    }

    /// A "tested" mark for the window [offset, offset + size) of `f`, as
    /// the window's own regions stand.
    pub fn finish_window(&self, f: &File, offset: u64, size: u64) -> io::Result<()> {
        super::same_device(f, Some(self.rdev), &self.path)?;
        let (head, tail) = read_window(f, offset, size)?;
        let mark = Marker {
            state: State::Tested,
            size,
            serial: self.serial.clone(),
            run: self.run.clone(),
            digest: digest(&Regions {
                head: &head,
                tail: &tail,
                size,
            }),
        };
        f.write_all_at(&mark.encode(), offset)?;
        f.sync_all()
    }

    /// Before the first write.
    pub fn begin(&self) -> io::Result<()> {
        self.write(State::Writing)
    }

    /// After the last write: the mark that lets the drive be tested again.
    pub fn finish(&self) -> io::Result<()> {
        self.write(State::Tested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_and_a_changed_byte_unmakes_it() {
        let m = Marker {
            state: State::Tested,
            size: 1 << 30,
            serial: "S3F5NX0K".into(),
            run: "20261207T120000Z".into(),
            digest: [7; 32],
        };
        let mut b = m.encode();
        assert_eq!(Marker::decode(&b), Some(m));
        b[130] ^= 1;
        assert_eq!(Marker::decode(&b), None, "serial changed, checksum not");
        let mut b = Marker::decode(
            &Marker {
                state: State::Writing,
                size: 1,
                serial: String::new(),
                run: String::new(),
                digest: [0; 32],
            }
            .encode(),
        )
        .map(|m| m.encode())
        .unwrap();
        b[4000] = 1;
        assert_eq!(Marker::decode(&b), None, "data after the mark in its block");
    }

    #[test]
    fn the_digest_covers_head_and_tail_but_not_the_mark() {
        let head = vec![0u8; 8192];
        let tail = vec![0u8; 4096];
        let d = |h: &[u8], t: &[u8]| {
            digest(&Regions {
                head: h,
                tail: t,
                size: 1 << 20,
            })
        };
        let base = d(&head, &tail);
        let mut h2 = head.clone();
        h2[0] = 9;
        assert_eq!(d(&h2, &tail), base, "the mark's own block");
        h2[4096] = 9;
        assert_ne!(d(&h2, &tail), base);
        let mut t2 = tail.clone();
        t2[4095] = 1;
        assert_ne!(d(&head, &t2), base);
    }
}
