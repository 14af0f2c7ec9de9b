//! The Fusion-MPT SAS HBA family (`mpt3sas`: Dell HBA330/HBA355, LSI/
//! Broadcom 9300–9500), read from the SCSI host attributes its driver
//! publishes (mpt3sas_ctl.c): the board, its firmware, BIOS, NVDATA and
//! MPI versions, and the host's SAS address. An HBA has no cache and no
//! battery, and its drives are disks the kernel sees (read as any disk).
//! Nothing is sent to the controller.
//!
//! Not read yet: the members of its integrated RAID volumes, which the
//! driver hides from the block layer (they are reachable as sg devices).

use super::Family;
use crate::inventory::model::*;
use crate::inventory::sysfs::opt_attr;
use crate::inventory::Roots;

pub struct Mpt3sas;

impl Family for Mpt3sas {
    fn name(&self) -> &'static str {
        "mpt3sas"
    }

    fn claims(&self, c: &Controller) -> bool {
        c.driver.as_deref() == Some("mpt3sas")
    }

    fn sends_commands(&self) -> bool {
        false
    }

    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], _disks: &[Disk]) {
        for c in claimed {
            // One SCSI host per HBA.
            let Some(&host) = c.scsi_hosts.first() else {
                c.errors
                    .push("mpt3sas: the controller has no SCSI host to read".into());
                continue;
            };
            let dir = roots.sys.join(format!("class/scsi_host/host{host}"));
            let attr = |name: &str| opt_attr(roots, &dir.join(name));
            let Some(firmware) = attr("version_fw") else {
                c.errors.push(format!(
                    "mpt3sas: SCSI host {host} has no version_fw (not this driver's host?)"
                ));
                continue;
            };
            let components = [
                ("BIOS", "version_bios"),
                ("NVDATA", "version_nvdata_persistent"),
                ("MPI", "version_mpi"),
                ("product", "version_product"),
            ]
            .into_iter()
            .filter_map(|(name, file)| {
                attr(file).map(|version| FirmwareComponent {
                    name: name.into(),
                    version,
                    build_date: String::new(),
                    build_time: String::new(),
                })
            })
            .collect();
            let mut notes = Vec::new();
            if let Some(sas) = attr("host_sas_address") {
                notes.push(format!("host SAS address {sas}"));
            }
            if let Some(n) = attr("ioc_reset_count").filter(|n| n != "0") {
                notes.push(format!(
                    "the controller was reset {n} times since the driver loaded"
                ));
            }
            c.raid = Some(RaidController {
                family: self.name().into(),
                node: dir.display().to_string(),
                scsi_host: host,
                product: attr("board_name").unwrap_or_default(),
                serial_number: String::new(),
                firmware,
                firmware_components: components,
                cache_mb: 0,
                battery: None,
                virtual_drives: Vec::new(),
                physical_drives: Vec::new(),
                notes,
                errors: Vec::new(),
            });
        }
    }
}
