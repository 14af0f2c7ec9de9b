//! The identity of the machine a bundle speaks for.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SystemIdentity {
    pub schema_version: u32,
    pub dmi: Dmi,
    pub cpu_model: Option<String>,
    pub cpu_count: usize,
    pub memory_bytes: Option<u64>,
    pub kernel: Option<String>,
    pub hostname: Option<String>,
    pub storcert_version: String,
    /// The bootable image's build id (its build manifest), when booted
    /// from one.
    pub image_build_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Dmi {
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    pub product_serial: Option<String>,
    pub product_uuid: Option<String>,
    pub board_vendor: Option<String>,
    pub board_name: Option<String>,
    pub board_serial: Option<String>,
    pub chassis_serial: Option<String>,
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
    pub bios_date: Option<String>,
}

pub const SCHEMA_VERSION: u32 = 1;

impl SystemIdentity {
    /// The machine as the summary names it.
    pub fn machine(&self) -> crate::summary::Machine {
        crate::summary::Machine {
            vendor: self.dmi.sys_vendor.clone(),
            product: self.dmi.product_name.clone(),
            serial: self.dmi.product_serial.clone(),
            uuid: self.dmi.product_uuid.clone(),
            hostname: self.hostname.clone(),
        }
    }
}

/// The identity of a results folder that recorded none (the results of a
/// standalone `act` or `stream` command): it names no machine. A bundle
/// and a report speak for the machine the results were made on, which
/// whoever packs or reads them later cannot know; only `storcert run`,
/// on that machine, records it (`system.json`).
pub fn unrecorded() -> SystemIdentity {
    SystemIdentity {
        schema_version: SCHEMA_VERSION,
        ..SystemIdentity::default()
    }
}
