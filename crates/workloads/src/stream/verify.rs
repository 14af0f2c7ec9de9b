//! Verifiable blocks: every block written in a verify pass carries a header
//! (magic, its own offset, the target, the run's seed) and a CRC32 of the
//! whole block, so the read pass can tell lost, misdirected, stale and
//! corrupted writes apart.

use storcert_util::random::Rng;

const MAGIC: &[u8; 8] = b"STCRTVFY";
pub const HEADER: usize = 40;

/// Fills `block` (len bytes, written at `offset` of target `target`).
pub fn fill(block: &mut [u8], offset: u64, target: u32, seed: u64) {
    let mut rng = Rng::seeded(seed ^ offset.rotate_left(17) ^ ((target as u64) << 56));
    rng.fill(&mut block[HEADER..], 100);
    block[..8].copy_from_slice(MAGIC);
    block[8..16].copy_from_slice(&offset.to_le_bytes());
    block[16..24].copy_from_slice(&seed.to_le_bytes());
    block[24..28].copy_from_slice(&target.to_le_bytes());
    let len = block.len() as u32;
    block[28..32].copy_from_slice(&len.to_le_bytes());
    block[32..40].fill(0);
    let crc = crc32fast::hash(block);
    block[32..36].copy_from_slice(&crc.to_le_bytes());
}

/// What a block read back says about its write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// No header: the write never reached the medium (or was zeroed).
    NotWritten,
    /// The header names another offset: the write landed elsewhere.
    Misdirected { written_for: u64 },
    /// The header belongs to another target or an earlier run.
    Stale,
    /// Header right, contents wrong.
    Corrupt,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::NotWritten => write!(f, "no verify header (lost write)"),
            Problem::Misdirected { written_for } => {
                write!(
                    f,
                    "holds the block written for offset {written_for} (misdirected write)"
                )
            }
            Problem::Stale => write!(f, "holds data of another target or run (stale)"),
            Problem::Corrupt => write!(f, "checksum mismatch (corrupted)"),
        }
    }
}

pub fn check(block: &mut [u8], offset: u64, target: u32, seed: u64) -> Option<Problem> {
    if offset == 0 && storcert_device::safety::marker::Marker::decode(block).is_some() {
        return under_the_mark(block, target, seed);
    }
    if block.len() < HEADER || &block[..8] != MAGIC {
        return Some(Problem::NotWritten);
    }
    let at = u64::from_le_bytes(block[8..16].try_into().expect("8 bytes"));
    let their_seed = u64::from_le_bytes(block[16..24].try_into().expect("8 bytes"));
    let their_target = u32::from_le_bytes(block[24..28].try_into().expect("4 bytes"));
    if their_seed != seed || their_target != target {
        return Some(Problem::Stale);
    }
    if at != offset {
        return Some(Problem::Misdirected { written_for: at });
    }
    let stored = u32::from_le_bytes(block[32..36].try_into().expect("4 bytes"));
    block[32..36].fill(0);
    let crc = crc32fast::hash(block);
    block[32..36].copy_from_slice(&stored.to_le_bytes());
    (crc != stored).then_some(Problem::Corrupt)
}

/// The first block of a device storcert marked after writing it (the
/// safety gate's mark, in its first 4 KiB): the rest of the block must
/// be what was written there, which the seed makes again.
fn under_the_mark(block: &[u8], target: u32, seed: u64) -> Option<Problem> {
    let mark = storcert_device::safety::marker::BLOCK;
    let mut expected = vec![0u8; block.len()];
    fill(&mut expected, 0, target, seed);
    (block[mark..] != expected[mark..]).then_some(Problem::Corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_problems_apart() {
        let mut b = vec![0u8; 4096];
        fill(&mut b, 8192, 1, 42);
        assert_eq!(check(&mut b.clone(), 8192, 1, 42), None);
        assert_eq!(
            check(&mut b.clone(), 4096, 1, 42),
            Some(Problem::Misdirected { written_for: 8192 })
        );
        assert_eq!(check(&mut b.clone(), 8192, 2, 42), Some(Problem::Stale));
        assert_eq!(check(&mut b.clone(), 8192, 1, 43), Some(Problem::Stale));
        let mut c = b.clone();
        c[3000] ^= 1;
        assert_eq!(check(&mut c, 8192, 1, 42), Some(Problem::Corrupt));
        assert_eq!(
            check(&mut vec![0u8; 4096], 0, 1, 42),
            Some(Problem::NotWritten)
        );
        // Under storcert's mark, the rest of the first block is checked.
        let mut first = vec![0u8; 8192];
        fill(&mut first, 0, 1, 42);
        let mark = storcert_device::safety::marker::Marker {
            state: storcert_device::safety::marker::State::Tested,
            size: 1 << 20,
            serial: String::new(),
            run: String::new(),
            digest: [0; 32],
        }
        .encode();
        first[..4096].copy_from_slice(&mark);
        assert_eq!(check(&mut first.clone(), 0, 1, 42), None);
        first[5000] ^= 1;
        assert_eq!(check(&mut first, 0, 1, 42), Some(Problem::Corrupt));
        // Different offsets get different contents.
        let mut d = vec![0u8; 4096];
        fill(&mut d, 12288, 1, 42);
        assert_ne!(b[HEADER..], d[HEADER..]);
    }
}
