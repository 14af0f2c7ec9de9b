//! How a bundle travels: the headers of its PUT, which the upload client
//! sets and the collector reads. Named once here so the two cannot drift.

/// The bundle's SHA-256 (lower-case hex).
pub const H_SHA256: &str = "x-storcert-sha256";
/// The bundle's minisign signature (base64).
pub const H_MINISIG: &str = "x-storcert-minisig";
/// The bundle's in-toto envelope (base64).
pub const H_ENVELOPE: &str = "x-storcert-intoto";
/// Set by the collector on its answers.
pub const H_COLLECTOR: &str = "x-storcert-collector";
