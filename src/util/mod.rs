//! Helpers every stage shares and none owns: durable writes, sizes, and
//! the random source of ACT, stream and provisioning. Nothing here knows a
//! stage or the command line.

pub mod fs;
pub mod random;
pub mod size;
pub mod text;

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}
