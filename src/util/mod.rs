//! Helpers every stage shares and none owns: durable writes, sizes, and
//! the random source of ACT, stream and provisioning. Nothing here knows a
//! stage or the command line.

pub mod fs;
pub mod random;
pub mod size;
