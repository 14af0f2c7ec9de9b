//! Broadcom MPI3 controllers (`mpi3mr`: Dell PERC H965i / H760 / H365i,
//! MegaRAID and HBA 9600): the controller's identity and firmware from
//! the SCSI host attributes the driver publishes (mpi3mr_app.c), its
//! state from the driver's bsg node, and the drives the firmware hides
//! from the kernel (RAID members) found by ALLTGTDEVINFO and asked
//! themselves through MPI3 SCSI IO pass-through (`passthrough::mpi3`).
//!
//! As far as the public interface allows, and no further: a virtual
//! drive's level, state and cache policy, and a drive's enclosure and
//! slot, sit behind the firmware's management commands and configuration
//! pages, which storcert does not send; they are listed as unsupported,
//! never guessed.

use super::{ask_the_drive, physical_drive, BatteryReach, Family};
use crate::inventory::model::*;
use crate::inventory::sysfs::{list_dir, opt_attr};
use crate::inventory::Roots;
use crate::passthrough::mpi3::{self, Mpi3Node, Mpi3Path};

pub struct Mpi3mr;

impl Family for Mpi3mr {
    fn battery(&self) -> BatteryReach {
        BatteryReach::Unreadable
    }

    fn name(&self) -> &'static str {
        "mpi3mr"
    }

    fn drivers(&self) -> &'static [&'static str] {
        &["mpi3mr"]
    }
    fn volume_mark(&self) -> Option<super::VolumeMark> {
        Some(super::VolumeMark::RaidLevel)
    }

    fn read(&self, roots: &Roots, claimed: &mut [&mut Controller], _disks: &[Disk], probe: bool) {
        for c in claimed {
            let Some((host, dir, firmware)) = super::host_with_firmware(roots, c, self.name())
            else {
                continue;
            };
            let attr = |name: &str| opt_attr(roots, &dir.join(name));
            let product = c.device_name.clone().unwrap_or_default();
            let mut r = RaidController::new(self.key(), String::new(), host, product, firmware);
            if let Some(state) = attr("adp_state") {
                let name = state.parse().map_or("unknown", mpi3::adapter_state_name);
                r.notes.push(format!("adapter state {state} ({name})"));
            }
            if let Some(depth) = attr("fw_queue_depth") {
                r.notes.push(format!("firmware queue depth {depth}"));
            }
            r.notes.push(
                "virtual drives' level, state and cache policy, and the battery, are behind the firmware's management commands, which are not public: unsupported"
                    .into(),
            );
            match bsg_node(roots, host) {
                Some(_) if !probe => {}
                Some((name, ioc)) => {
                    let path = roots.dev.join("bsg").join(&name).display().to_string();
                    r.node = path.clone();
                    match Mpi3Node::open(&path, ioc, roots.source.tape()) {
                        Ok(node) => read_through_bsg(&node, &mut r),
                        Err(e) => r.errors.push(format!("{path}: {e}")),
                    }
                }
                None => r.errors.push(format!(
                    "no mpi3mrctl bsg node belongs to SCSI host {host}; the drives behind it are not read"
                )),
            }
            if c.firmware.is_none() {
                c.firmware = Some(r.firmware.clone());
                c.firmware_source = Some("sysfs version_fw".into());
            }
            c.raid = Some(r);
        }
    }
}

/// The bsg node of SCSI host `host`: `/sys/class/bsg/mpi3mrctlN` lives
/// under the host's device. N is the controller's id in every packet.
fn bsg_node(roots: &Roots, host: u32) -> Option<(String, u8)> {
    let class = roots.sys.join("class/bsg");
    let want = format!("host{host}");
    list_dir(roots, &class).into_iter().find_map(|name| {
        let ioc: u8 = name.strip_prefix("mpi3mrctl")?.parse().ok()?;
        let real = roots.canonicalize(&class.join(&name)).ok()?;
        real.components()
            .any(|c| c.as_os_str() == want.as_str())
            .then_some((name, ioc))
    })
}

fn read_through_bsg(node: &Mpi3Node, r: &mut RaidController) {
    match node.adapter_info() {
        Ok(a) => {
            if a.state != 1 {
                r.errors.push(format!(
                    "the driver reports the adapter {} (state {})",
                    mpi3::adapter_state_name(a.state),
                    a.state
                ));
            }
            if !a.driver_version.is_empty() {
                r.notes
                    .push(format!("driver {} {}", a.driver_name, a.driver_version));
            }
        }
        Err(e) => r.errors.push(e.to_string()),
    }
    let (count, devices) = match node.all_targets() {
        Ok(d) => d,
        Err(e) => {
            r.errors.push(e.to_string());
            return;
        }
    };
    if count > devices.len() {
        r.notes.push(format!(
            "the firmware reports {count} devices; the first {} were read",
            devices.len()
        ));
    }
    let exposed = devices.iter().filter(|d| d.exposed_at.is_some()).count();
    if exposed > 0 {
        r.notes.push(format!(
            "{exposed} device(s) the kernel sees, read as its disks"
        ));
    }
    for d in devices.iter().filter(|d| d.exposed_at.is_none()) {
        let mut pd = physical_drive(u32::from(d.persistent_id), 0, 0);
        pd.state = Some(format!(
            "hidden by the firmware (a RAID member); handle 0x{:04x}",
            d.handle
        ));
        pd.probes.push(Probe {
            probe: "MPI3 device page 0 (enclosure, slot, interface)".into(),
            outcome: "unsupported".into(),
            detail: Some(
                "configuration pages are not read; enclosure and slot are shown as 0".into(),
            ),
        });
        let path = Mpi3Path {
            node,
            handle: d.handle,
        };
        ask_the_drive(&mut pd, &path, &format!("mpi3mr handle 0x{:04x}", d.handle));
        r.physical_drives.push(pd);
    }
}

#[cfg(test)]
mod tests {
    //! A PERC H965i made of the qemu lab's sysfs tree (its controller
    //! bound to mpi3mr) and bsg replies built from scsi_bsg_mpi3mr.h and
    //! mpi30_init.h, played through the capture's tape.
    use super::*;
    use crate::inventory::raid::bench::{inquiry, lab_bound_to, opened, roots_answering, write};
    use crate::inventory::{scan, ScanOptions};
    use crate::passthrough::mpi3::*;
    use crate::passthrough::tape::{Command, Exchange, Reply};
    use std::path::Path;

    fn tree(base: &Path) {
        let pci = lab_bound_to(base, "mpi3mr");
        let host = pci.join("host6/scsi_host/host6");
        write(&host.join("version_fw"), "8.8.1.0.00000-00003");
        write(&host.join("adp_state"), "1");
        write(&host.join("fw_queue_depth"), "8192");
        std::fs::create_dir_all(pci.join("host6/bsg/mpi3mrctl0")).unwrap();
        std::fs::create_dir_all(base.join("sys/class/bsg")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:03.0/host6/bsg/mpi3mrctl0",
            base.join("sys/class/bsg/mpi3mrctl0"),
        )
        .unwrap();
    }

    fn bsg(node: &str, request: Vec<u8>, data_out: Vec<u8>, len: usize, din: Vec<u8>) -> Exchange {
        Exchange {
            device: node.into(),
            op: "fixture".into(),
            command: Command::Bsg {
                request,
                data_out,
                data_in_len: len,
            },
            reply: Reply::Bsg { data_in: din },
        }
    }

    fn exchanges(node: &str) -> Vec<Exchange> {
        let mut x = vec![opened(node)];
        let mut adp = vec![0u8; ADPINFO_LEN];
        adp[36] = 1;
        adp[92..98].copy_from_slice(b"mpi3mr");
        adp[112..122].copy_from_slice(b"8.12.0.3.5");
        x.push(bsg(node, drv_packet(0, 1), Vec::new(), ADPINFO_LEN, adp));
        // Three devices: the two virtual drives the kernel sees (channel
        // 2, targets 0 and 1) and one hidden member, handle 0x21.
        let mut head = vec![0u8; 8];
        head[0] = 3;
        x.push(bsg(node, drv_packet(0, 4), Vec::new(), 8, head.clone()));
        let mut list = head;
        for (handle, pid, target, bus) in [
            (0x11u16, 1u16, 0u32, 2u8),
            (0x12, 2, 1, 2),
            (0x21, 5, u32::MAX, 0xff),
        ] {
            let mut e = [0u8; 12];
            e[0..2].copy_from_slice(&handle.to_le_bytes());
            e[2..4].copy_from_slice(&pid.to_le_bytes());
            e[4..8].copy_from_slice(&target.to_le_bytes());
            e[8] = bus;
            list.extend_from_slice(&e);
        }
        x.push(bsg(node, drv_packet(0, 4), Vec::new(), 8 + 36, list));
        // The hidden drive: INQUIRY and serial answered without a reply
        // frame; MODE SENSE refused (CHECK CONDITION, ILLEGAL REQUEST).
        let scsi = |cdb: &[u8], len: usize, din: Vec<u8>| {
            let (req, dout, n) = scsi_io_command(0, 0x21, cdb, len);
            bsg(node, req, dout, n, din)
        };
        x.push(scsi(
            &[0x12, 0, 0, 0, 96, 0],
            96,
            status_reply(&inquiry("SEAGATE", "ST1200MM0129", "C003"), 96),
        ));
        let mut vpd = vec![0, 0x80, 0, 8];
        vpd.extend_from_slice(b"WFK0MPI3");
        x.push(scsi(
            &[0x12, 1, 0x80, 1, 0, 0],
            256,
            status_reply(&vpd, 256),
        ));
        let sense = [0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x24, 0];
        x.push(scsi(
            &[0x5a, 0x08, 0x08, 0, 0, 0, 0, 0x00, 0xfc, 0],
            0xfc,
            frame_reply(0, 2, &sense, 0xfc),
        ));
        let mut cap = vec![0u8; 32];
        cap[..8].copy_from_slice(&(2_344_225_967u64).to_be_bytes());
        cap[8..12].copy_from_slice(&512u32.to_be_bytes());
        let mut rc16 = [0u8; 16];
        rc16[0] = 0x9e;
        rc16[1] = 0x10;
        rc16[13] = 32;
        x.push(scsi(&rc16, 32, status_reply(&cap, 32)));
        // A device that went away between the list and the question.
        x.push(scsi(
            &[0x4d, 0, 0x6f, 0, 0, 0, 0, 0x01, 0x00, 0],
            256,
            frame_reply(0x43, 0, &[], 256),
        ));
        x
    }

    #[test]
    fn a_perc_h965i_through_its_bsg_node() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        tree(&base);
        let node = base.join("dev/bsg/mpi3mrctl0").display().to_string();
        let (roots, capture) = roots_answering(&base, exchanges(&node));
        let inv = scan(&roots, &ScanOptions::default());
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        let r = c.raid.as_ref().expect("read by the mpi3mr family");
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.family, "mpi3mr");
        assert_eq!(r.node, node);
        assert_eq!(r.firmware, "8.8.1.0.00000-00003");
        assert_eq!(c.firmware.as_deref(), Some("8.8.1.0.00000-00003"));
        assert!(
            r.notes
                .contains(&"adapter state 1 (operational)".to_string()),
            "{:?}",
            r.notes
        );
        assert!(r
            .notes
            .contains(&"2 device(s) the kernel sees, read as its disks".to_string()));
        assert!(r
            .notes
            .iter()
            .any(|n| n.ends_with("not public: unsupported")));
        assert!(r.battery.is_none() && r.virtual_drives.is_empty());
        assert_eq!(r.physical_drives.len(), 1, "only the hidden member");
        let pd = &r.physical_drives[0];
        assert_eq!(pd.id, 5, "the firmware's persistent id");
        assert_eq!(pd.model.as_deref(), Some("ST1200MM0129"));
        assert_eq!(pd.serial.as_deref(), Some("WFK0MPI3"));
        assert_eq!(
            pd.raw_size_bytes,
            Some(2_344_225_968 * 512),
            "READ CAPACITY(16)"
        );
        let outcome = |name: &str| {
            pd.probes
                .iter()
                .find(|p| p.probe == name)
                .map(|p| (p.outcome.as_str(), p.detail.clone().unwrap_or_default()))
        };
        assert_eq!(
            outcome("MPI3 device page 0 (enclosure, slot, interface)")
                .unwrap()
                .0,
            "unsupported"
        );
        assert_eq!(
            outcome("SCSI MODE SENSE(10) caching page").unwrap().0,
            "unsupported"
        );
        let (o, detail) = outcome("SCSI LOG SENSE 0x2f (informational exceptions)").unwrap();
        assert_eq!(o, "failed");
        assert!(
            detail.contains("MPI3 IOC status 0x0043 (device not there)"),
            "{detail}"
        );
        // Everything sent only reads.
        for x in capture.exchanges() {
            if let Command::Bsg {
                request, data_out, ..
            } = &x.command
            {
                assert!(only_reads(request, data_out), "{x:?}");
            }
        }
    }

    #[test]
    fn without_its_bsg_node_the_controller_is_still_read_from_sysfs() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("lab");
        tree(&base);
        std::fs::remove_file(base.join("sys/class/bsg/mpi3mrctl0")).unwrap();
        let inv = scan(&Roots::under(&base), &ScanOptions::default());
        let c = inv
            .controllers
            .iter()
            .find(|c| c.pci_address == "0000:00:03.0")
            .unwrap();
        let r = c.raid.as_ref().unwrap();
        assert_eq!(r.firmware, "8.8.1.0.00000-00003");
        assert_eq!(
            r.errors,
            ["no mpi3mrctl bsg node belongs to SCSI host 6; the drives behind it are not read"]
        );
    }
}
