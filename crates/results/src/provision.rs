//! What provisioning did to a drive: discard, the partition, the spare
//! area, and what the kernel shows.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Discard {
    pub ranges: u64,
    pub bytes: u64,
    /// Why the device refused discard (not fatal).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelView {
    pub partition: String,
    pub start_bytes: u64,
    pub size_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProvisionResult {
    /// `SCHEMA_VERSION`; 0 in files written before artefacts carried one.
    #[serde(default)]
    pub schema_version: u32,
    pub device: String,
    pub size_bytes: u64,
    pub sector_size: u64,
    pub discard: Option<Discard>,
    pub partition_start_bytes: u64,
    /// First byte after the partition.
    pub partition_end_bytes: u64,
    pub partition_size_bytes: u64,
    /// Unpartitioned bytes after the partition.
    pub spare_bytes: u64,
    pub spare_pct: f64,
    pub factory_spare_pct: Option<f64>,
    /// Factory spare plus provisioned spare, as vendors add them up.
    pub total_spare_pct: Option<f64>,
    /// What the kernel sees after re-reading the table (None: it cannot
    /// re-read this device's table).
    pub kernel: Option<KernelView>,
    pub notes: Vec<String>,
}

pub const SCHEMA_VERSION: u32 = 1;
