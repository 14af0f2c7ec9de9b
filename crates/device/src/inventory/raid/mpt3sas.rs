//! The Fusion-MPT SAS HBA family (`mpt3sas`: Dell HBA330/HBA355, LSI/
//! Broadcom 9300–9500), read from the SCSI host attributes its driver
//! publishes (mpt3sas_ctl.c): the board, its firmware, BIOS, NVDATA and
//! MPI versions, and the host's SAS address. An HBA has no cache and no
//! battery, and its drives are disks the kernel sees (read as any disk).
//! Nothing is sent to the controller.
//!
//! The members of its integrated RAID (IR) volumes, which the driver
//! hides from the block layer (no sd attaches), are still SCSI devices
//! with an sg node: each is asked itself through SG_IO like any disk and
//! listed among the controller's physical drives (not with --no-probe).

use super::{ask_the_drive, host_devices, physical_drive, BatteryReach, Family};
use crate::inventory::model::*;
use crate::inventory::sysfs::opt_attr;
use crate::inventory::Roots;
use crate::passthrough::tape::Device;

pub struct Mpt3sas;

impl Family for Mpt3sas {
    fn battery(&self) -> BatteryReach {
        BatteryReach::NoCache
    }

    fn name(&self) -> &'static str {
        "mpt3sas"
    }

    fn drivers(&self) -> &'static [&'static str] {
        &["mpt3sas"]
    }

    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], _disks: &[Disk], probe: bool) {
        for c in claimed {
            let Some((host, dir, firmware)) = super::host_with_firmware(roots, c, self.name())
            else {
                continue;
            };
            let attr = |name: &str| opt_attr(roots, &dir.join(name));
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
            let physical_drives = if probe {
                hidden_members(roots, host)
            } else {
                Vec::new()
            };
            let product = attr("board_name").unwrap_or_default();
            c.raid = Some(RaidController {
                firmware_components: components,
                physical_drives,
                notes,
                ..RaidController::new(
                    self.key(),
                    dir.display().to_string(),
                    host,
                    product,
                    firmware,
                )
            });
        }
    }
}

/// The disks of the host that have an sg node and no block device: the
/// members the firmware put in a volume, read through their sg node.
fn hidden_members(roots: &Roots, host: u32) -> Vec<PhysicalDrive> {
    host_devices(roots, host)
        .into_iter()
        .filter(|d| d.device_type == Some(0) && d.block.is_none())
        .filter_map(|d| {
            let sg = d.sg.clone()?;
            let target: u32 = d.address.split(':').nth(2)?.parse().ok()?;
            let mut pd = physical_drive(target, 0, 0);
            pd.state = Some(format!(
                "a member of an integrated RAID volume, hidden from the block layer; {sg} at {}",
                d.address
            ));
            pd.sas_address = d.attr(roots, "sas_address");
            let node = roots.dev.join(&sg).display().to_string();
            match Device::open_for_probe(&node, roots.source.tape()) {
                Ok(dev) => ask_the_drive(
                    &mut pd,
                    &crate::passthrough::ReadsOnly(&dev),
                    &format!("mpt3sas {sg}"),
                ),
                Err(e) => pd.errors.push(format!("open {node}: {e}")),
            }
            Some(pd)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::raid::bench::{inquiry, lab_bound_to, opened, roots_answering};
    use crate::inventory::{scan, ScanOptions};
    use crate::passthrough::tape::{Command, Exchange, Reply};

    #[test]
    fn integrated_raid_members_are_read_through_their_sg_nodes() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        let pci = lab_bound_to(&base, "mpt3sas");
        std::fs::write(
            pci.join("host6/scsi_host/host6/version_fw"),
            "16.00.12.00\n",
        )
        .unwrap();
        // A member: a disk with an sg node and no block device.
        let member = pci.join("host6/target6:0:3/6:0:3:0");
        std::fs::create_dir_all(member.join("scsi_generic/sg7")).unwrap();
        std::fs::write(member.join("type"), "0\n").unwrap();
        std::fs::write(member.join("sas_address"), "0x5000c500a1b2c3d5\n").unwrap();
        let node = base.join("dev/sg7").display().to_string();
        let exchanges = vec![
            opened(&node),
            Exchange {
                device: node.clone(),
                op: "INQUIRY".into(),
                command: Command::Scsi {
                    cdb: vec![0x12, 0, 0, 0, 96, 0],
                    data_out: Vec::new(),
                    data_in_len: 96,
                },
                reply: Reply::Scsi {
                    status: 0,
                    host_status: 0,
                    driver_status: 0,
                    sense: Vec::new(),
                    resid: 0,
                    data_in: inquiry("SEAGATE", "ST1200MM0129", "C003"),
                },
            },
        ];
        let (roots, _) = roots_answering(&base, exchanges);
        let inv = scan(&roots, &ScanOptions::default());
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        let r = c.raid.as_ref().unwrap();
        assert_eq!(r.physical_drives.len(), 1, "{:?}", r.physical_drives);
        let pd = &r.physical_drives[0];
        assert_eq!(pd.id, 3);
        assert_eq!(pd.model.as_deref(), Some("ST1200MM0129"));
        assert_eq!(pd.sas_address.as_deref(), Some("0x5000c500a1b2c3d5"));
        assert_eq!(
            pd.interface.as_deref(),
            Some("SAS"),
            "a SAS address, not ATA"
        );
        assert!(pd.state.as_deref().unwrap().contains("sg7 at 6:0:3:0"));
        // The kernel's own disks of the host (sdb, sdc) are not members.
        assert!(inv.disks.iter().any(|d| d.name == "sdb"));
        // Without probing, nothing is sent.
        let inv = scan(
            &Roots::under(&base),
            &ScanOptions {
                no_probe: true,
                ..Default::default()
            },
        );
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        assert!(c.raid.as_ref().unwrap().physical_drives.is_empty());
    }
}
