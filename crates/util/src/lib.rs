//! Helpers every stage shares and none owns: durable writes, sizes, text
//! tables and units for people, and the random source of ACT, stream and
//! provisioning. Nothing here knows a stage or the command line.

pub mod cpu;
pub mod fs;
pub mod glob;
pub mod input;
pub mod random;
pub mod size;
pub mod table;
pub mod text;
pub mod units;

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// A reader that hashes (SHA-256) what passes through it.
pub struct HashingReader<R> {
    inner: R,
    sha: sha2::Sha256,
}

impl<R> HashingReader<R> {
    pub fn new(inner: R) -> HashingReader<R> {
        use sha2::Digest;
        HashingReader {
            inner,
            sha: sha2::Sha256::new(),
        }
    }

    /// Lower-case hex SHA-256 of what was read so far.
    pub fn sha256_hex(&self) -> String {
        use sha2::Digest;
        hex::encode(self.sha.clone().finalize())
    }
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
        Ok(n)
    }
}
