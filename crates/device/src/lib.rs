//! The device layer's lowest part: opening block devices and talking to
//! them below the filesystem (SG_IO, NVMe admin commands, ATA
//! pass-through, the MegaRAID, CCISS and MPI3 management ioctls). It knows
//! no stage, no policy and no workload.

pub mod blockdev;
pub mod passthrough;
