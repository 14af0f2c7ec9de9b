//! The device layer: opening block devices and talking to them below the
//! filesystem (SG_IO, NVMe admin commands, ATA pass-through, the
//! MegaRAID, CCISS and MPI3 management ioctls); the inventory read from
//! them and sysfs, with the RAID families behind one trait; health
//! snapshots and their diff; the policy and its check and fixes; the
//! safety gate every writer passes; and provisioning. It knows no
//! workload, no engine, no report and no command line.

pub mod blockdev;
pub mod health;
pub mod inventory;
pub mod passthrough;
pub mod policy;
pub mod provision;
pub mod safety;
