//! NVMe admin commands through NVME_IOCTL_ADMIN_CMD: Identify Controller,
//! Identify Namespace, Get Features (Volatile Write Cache) and the SMART /
//! Health Information log page.

use std::os::fd::AsRawFd;

use super::tape::{unexpected, Command, Device, Failure, Reply};
use super::{ascii_field, hex, ioctl_ptr, le128, le16, le32, le64, need_len, PassthroughError};

/// `struct nvme_passthru_cmd` from <linux/nvme_ioctl.h>.
#[repr(C)]
#[derive(Default)]
struct NvmePassthru {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

/// _IOWR('N', 0x41, struct nvme_admin_cmd)
const NVME_IOCTL_ADMIN_CMD: u64 = 0xC048_4E41;
/// _IO('N', 0x40): the namespace id of a namespace node.
const NVME_IOCTL_ID: u64 = 0x4E40;

const OPC_GET_LOG_PAGE: u8 = 0x02;
const OPC_IDENTIFY: u8 = 0x06;
const OPC_SET_FEATURES: u8 = 0x09;
const OPC_GET_FEATURES: u8 = 0x0a;
pub const FEATURE_VOLATILE_WRITE_CACHE: u8 = 0x06;

/// Identify Controller fields the inventory uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifyController {
    pub pci_vendor: u16,
    pub serial: String,
    pub model: String,
    pub firmware: String,
    /// VWC bit 0: a volatile write cache is present.
    pub volatile_write_cache_present: bool,
    pub vwc_raw: u8,
    /// Total NVM capacity in bytes (0 when the controller does not say).
    pub total_capacity: u128,
    pub namespaces: u32,
    pub warning_temp_k: u16,
    pub critical_temp_k: u16,
}

pub fn decode_identify_controller(buf: &[u8]) -> Result<IdentifyController, PassthroughError> {
    need_len("NVMe Identify Controller", buf, 4096)?;
    Ok(IdentifyController {
        pci_vendor: le16(buf, 0),
        serial: ascii_field(&buf[4..24]),
        model: ascii_field(&buf[24..64]),
        firmware: ascii_field(&buf[64..72]),
        volatile_write_cache_present: buf[525] & 0x01 != 0,
        vwc_raw: buf[525],
        total_capacity: le128(buf, 280),
        namespaces: le32(buf, 516),
        warning_temp_k: le16(buf, 266),
        critical_temp_k: le16(buf, 268),
    })
}

/// Identify Namespace fields the inventory uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifyNamespace {
    pub size_blocks: u64,
    pub capacity_blocks: u64,
    pub lba_size: u32,
    pub metadata_size: u16,
    pub lba_format_index: u8,
    pub nguid: Option<String>,
    pub eui64: Option<String>,
}

pub fn decode_identify_namespace(buf: &[u8]) -> Result<IdentifyNamespace, PassthroughError> {
    const OP: &str = "NVMe Identify Namespace";
    need_len(OP, buf, 4096)?;
    let nlbaf = buf[25];
    let flbas = buf[26];
    let index = (flbas & 0x0f) | ((flbas >> 1) & 0x30);
    if index > nlbaf.max(15) {
        return Err(PassthroughError::malformed(
            OP,
            format!("formatted LBA format {index} beyond the {nlbaf} listed"),
        ));
    }
    let lbaf = le32(buf, 128 + 4 * index as usize);
    let lbads = (lbaf >> 16) & 0xff;
    if !(9..=16).contains(&lbads) {
        return Err(PassthroughError::malformed(
            OP,
            format!("LBA data size 2^{lbads} is not a sector size"),
        ));
    }
    let nonzero = |b: &[u8]| b.iter().any(|&x| x != 0).then(|| format!("0x{}", hex(b)));
    Ok(IdentifyNamespace {
        size_blocks: le64(buf, 0),
        capacity_blocks: le64(buf, 8),
        lba_size: 1 << lbads,
        metadata_size: (lbaf & 0xffff) as u16,
        lba_format_index: index,
        nguid: nonzero(&buf[104..120]),
        eui64: nonzero(&buf[120..128]),
    })
}

/// The SMART / Health Information log page (log id 0x02).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmartLog {
    pub critical_warning: u8,
    pub temperature_k: u16,
    pub available_spare_pct: u8,
    pub available_spare_threshold_pct: u8,
    pub percentage_used: u8,
    /// In units of 1000 × 512 bytes, as the specification counts them.
    pub data_units_read: u128,
    pub data_units_written: u128,
    pub host_read_commands: u128,
    pub host_write_commands: u128,
    pub power_cycles: u128,
    pub power_on_hours: u128,
    pub unsafe_shutdowns: u128,
    pub media_errors: u128,
    pub error_log_entries: u128,
}

pub fn decode_smart_log(buf: &[u8]) -> Result<SmartLog, PassthroughError> {
    need_len("NVMe SMART log", buf, 512)?;
    Ok(SmartLog {
        critical_warning: buf[0],
        temperature_k: le16(buf, 1),
        available_spare_pct: buf[3],
        available_spare_threshold_pct: buf[4],
        percentage_used: buf[5],
        data_units_read: le128(buf, 32),
        data_units_written: le128(buf, 48),
        host_read_commands: le128(buf, 64),
        host_write_commands: le128(buf, 80),
        power_cycles: le128(buf, 112),
        power_on_hours: le128(buf, 128),
        unsafe_shutdowns: le128(buf, 144),
        media_errors: le128(buf, 160),
        error_log_entries: le128(buf, 176),
    })
}

/// The OCP Datacenter NVMe SSD "SMART / Health Information Extended" log
/// (vendor log 0xC0), identified by its GUID; of it storcert reads what
/// the standard log lacks: the bytes written to the media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OcpSmart {
    pub media_bytes_written: u128,
    pub media_bytes_read: u128,
}

/// The log page GUID AFD514C9-7C6F-4F9C-A4F2-BFEA2810AFC5, little endian.
const OCP_SMART_GUID: [u8; 16] = [
    0xc5, 0xaf, 0x10, 0x28, 0xea, 0xbf, 0xf2, 0xa4, 0x9c, 0x4f, 0x6f, 0x7c, 0xc9, 0x14, 0xd5, 0xaf,
];

pub fn decode_ocp_smart(buf: &[u8]) -> Result<OcpSmart, PassthroughError> {
    const OP: &str = "NVMe OCP extended SMART log 0xC0";
    need_len(OP, buf, 512)?;
    if buf[496..512] != OCP_SMART_GUID {
        return Err(PassthroughError::malformed(
            OP,
            "no OCP log GUID (a vendor log of another kind)",
        ));
    }
    Ok(OcpSmart {
        media_bytes_written: le128(buf, 0),
        media_bytes_read: le128(buf, 16),
    })
}

/// Names the bits of the SMART log's critical warning byte.
pub fn critical_warning_names(bits: u8) -> Vec<&'static str> {
    const NAMES: [&str; 6] = [
        "available spare below threshold",
        "temperature outside threshold",
        "NVM subsystem reliability degraded",
        "media placed in read-only mode",
        "volatile memory backup failed",
        "persistent memory region read-only",
    ];
    NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

// --- transport -----------------------------------------------------------

fn admin(
    dev: &Device,
    op: &'static str,
    cmd: &mut NvmePassthru,
    mut buf: Option<&mut [u8]>,
) -> Result<u32, PassthroughError> {
    let command = Command::NvmeAdmin {
        opcode: cmd.opcode,
        nsid: cmd.nsid,
        cdw10: cmd.cdw10,
        cdw11: cmd.cdw11,
        data_len: buf.as_ref().map_or(0, |b| b.len() as u32),
    };
    let reply = dev.exchange(op, command, |file| {
        if let Some(buf) = buf.as_deref_mut() {
            cmd.addr = buf.as_mut_ptr() as u64;
            cmd.data_len = buf.len() as u32;
        }
        cmd.timeout_ms = 10_000;
        // SAFETY: cmd is a correctly laid out nvme_passthru_cmd; its data
        // pointer (if any) refers to a buffer that outlives the call.
        match unsafe { ioctl_ptr(file.as_raw_fd(), NVME_IOCTL_ADMIN_CMD, cmd) } {
            Ok(status) => Reply::Nvme {
                status: status as u32,
                result: cmd.result,
                data_in: buf.as_deref().map(<[u8]>::to_vec).unwrap_or_default(),
            },
            Err(e) => Reply::Failed(Failure::of(&e)),
        }
    });
    let (status, result, data_in) = match reply {
        Reply::Nvme {
            status,
            result,
            data_in,
        } => (status, result, data_in),
        Reply::Failed(f) => {
            return Err(PassthroughError::Ioctl {
                op,
                source: f.to_error(),
            })
        }
        other => return Err(unexpected(op, &other)),
    };
    if let Some(buf) = buf {
        let n = data_in.len().min(buf.len());
        buf[..n].copy_from_slice(&data_in[..n]);
    }
    if status != 0 {
        // Invalid opcode, invalid field, invalid log page: the controller
        // does not have this, as opposed to failing it.
        let unsupported = matches!(status & 0x7ff, 0x001 | 0x002 | 0x109);
        return Err(PassthroughError::Rejected {
            op,
            detail: format!(
                "NVMe status 0x{:04x} (type {}, code 0x{:02x}){}",
                status,
                (status >> 8) & 0x7,
                status & 0xff,
                if unsupported {
                    ", not supported by the controller"
                } else {
                    ""
                }
            ),
        });
    }
    Ok(result)
}

/// The namespace id of a namespace block node (/dev/nvme0n1 → 1).
pub fn namespace_id(dev: &Device) -> Result<u32, PassthroughError> {
    const OP: &str = "NVMe namespace id";
    let reply = dev.exchange(OP, Command::NvmeNamespaceId, |file| {
        // SAFETY: NVME_IOCTL_ID takes no argument.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), NVME_IOCTL_ID as _) };
        if rc < 0 {
            Reply::Failed(Failure::of(&std::io::Error::last_os_error()))
        } else {
            Reply::NamespaceId { nsid: rc as u32 }
        }
    });
    match reply {
        Reply::NamespaceId { nsid } => Ok(nsid),
        Reply::Failed(f) => Err(PassthroughError::Ioctl {
            op: OP,
            source: f.to_error(),
        }),
        other => Err(unexpected(OP, &other)),
    }
}

pub fn identify_controller(dev: &Device) -> Result<Vec<u8>, PassthroughError> {
    let mut buf = vec![0u8; 4096];
    let mut cmd = NvmePassthru {
        opcode: OPC_IDENTIFY,
        cdw10: 1,
        ..Default::default()
    };
    admin(dev, "NVMe Identify Controller", &mut cmd, Some(&mut buf))?;
    Ok(buf)
}

pub fn identify_namespace(dev: &Device, nsid: u32) -> Result<Vec<u8>, PassthroughError> {
    let mut buf = vec![0u8; 4096];
    let mut cmd = NvmePassthru {
        opcode: OPC_IDENTIFY,
        nsid,
        cdw10: 0,
        ..Default::default()
    };
    admin(dev, "NVMe Identify Namespace", &mut cmd, Some(&mut buf))?;
    Ok(buf)
}

/// Get Features, current value; returns completion dword 0.
pub fn get_feature(dev: &Device, fid: u8) -> Result<u32, PassthroughError> {
    let mut cmd = NvmePassthru {
        opcode: OPC_GET_FEATURES,
        cdw10: fid as u32,
        ..Default::default()
    };
    admin(dev, "NVMe Get Features", &mut cmd, None)
}

/// Set Features (not saved across power cycles); returns dword 0.
pub fn set_feature(dev: &Device, fid: u8, value: u32) -> Result<u32, PassthroughError> {
    let mut cmd = NvmePassthru {
        opcode: OPC_SET_FEATURES,
        cdw10: fid as u32,
        cdw11: value,
        ..Default::default()
    };
    admin(dev, "NVMe Set Features", &mut cmd, None)
}

pub fn smart_log(dev: &Device) -> Result<Vec<u8>, PassthroughError> {
    log_page(dev, "NVMe SMART log", 0x02)
}

pub fn ocp_smart_log(dev: &Device) -> Result<Vec<u8>, PassthroughError> {
    log_page(dev, "NVMe OCP extended SMART log 0xC0", 0xc0)
}

fn log_page(dev: &Device, op: &'static str, lid: u8) -> Result<Vec<u8>, PassthroughError> {
    let mut buf = vec![0u8; 512];
    let dwords = (buf.len() / 4 - 1) as u32;
    let mut cmd = NvmePassthru {
        opcode: OPC_GET_LOG_PAGE,
        nsid: 0xffff_ffff,
        cdw10: (dwords << 16) | lid as u32,
        ..Default::default()
    };
    admin(dev, op, &mut cmd, Some(&mut buf))?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passthru_struct_matches_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<NvmePassthru>(), 72);
        // _IOWR('N', 0x41, 72 bytes)
        assert_eq!(
            NVME_IOCTL_ADMIN_CMD,
            (3 << 30) | (72 << 16) | (0x4e << 8) | 0x41
        );
    }

    #[test]
    fn decodes_identify_controller() {
        let mut b = vec![0u8; 4096];
        b[0..2].copy_from_slice(&0x144du16.to_le_bytes());
        b[4..24].copy_from_slice(b"S3EWNX0K123456      ");
        b[24..64].copy_from_slice(format!("{:<40}", "SAMSUNG MZQLW960HMJP-00003").as_bytes());
        b[64..72].copy_from_slice(b"CXV8501Q");
        b[525] = 0x07;
        b[516..520].copy_from_slice(&1u32.to_le_bytes());
        let id = decode_identify_controller(&b).unwrap();
        assert_eq!(id.serial, "S3EWNX0K123456");
        assert_eq!(id.model, "SAMSUNG MZQLW960HMJP-00003");
        assert_eq!(id.firmware, "CXV8501Q");
        assert!(id.volatile_write_cache_present);
        assert_eq!(id.namespaces, 1);
        assert!(decode_identify_controller(&b[..1000]).is_err());
    }

    #[test]
    fn decodes_identify_namespace() {
        let mut b = vec![0u8; 4096];
        b[0..8].copy_from_slice(&2_000_000u64.to_le_bytes());
        b[25] = 1; // two formats
        b[26] = 1; // formatted with format 1
        b[128..132].copy_from_slice(&(9u32 << 16).to_le_bytes());
        b[132..136].copy_from_slice(&(12u32 << 16).to_le_bytes());
        b[120..128].copy_from_slice(&[0x00, 0x25, 0x38, 0x5b, 0x71, 0xb0, 0x12, 0x34]);
        let ns = decode_identify_namespace(&b).unwrap();
        assert_eq!(ns.size_blocks, 2_000_000);
        assert_eq!(ns.lba_size, 4096);
        assert_eq!(ns.lba_format_index, 1);
        assert_eq!(ns.eui64.as_deref(), Some("0x0025385b71b01234"));
        assert_eq!(ns.nguid, None);
        b[132..136].copy_from_slice(&(30u32 << 16).to_le_bytes());
        assert!(decode_identify_namespace(&b).is_err());
    }

    #[test]
    fn decodes_the_ocp_log_only_with_its_guid() {
        let mut b = vec![0u8; 512];
        b[0..16].copy_from_slice(&7_000_000_000_000u128.to_le_bytes());
        b[16..32].copy_from_slice(&5u128.to_le_bytes());
        assert!(decode_ocp_smart(&b).is_err(), "no GUID, no OCP log");
        b[496..512].copy_from_slice(&OCP_SMART_GUID);
        let o = decode_ocp_smart(&b).unwrap();
        assert_eq!(o.media_bytes_written, 7_000_000_000_000);
        assert_eq!(o.media_bytes_read, 5);
        assert!(decode_ocp_smart(&b[..100]).is_err());
    }

    #[test]
    fn decodes_smart_log() {
        let mut b = vec![0u8; 512];
        b[0] = 0x05;
        b[1..3].copy_from_slice(&310u16.to_le_bytes());
        b[3] = 100;
        b[4] = 10;
        b[5] = 3;
        b[48..64].copy_from_slice(&123_456u128.to_le_bytes());
        b[128..144].copy_from_slice(&9_000u128.to_le_bytes());
        b[160..176].copy_from_slice(&2u128.to_le_bytes());
        let log = decode_smart_log(&b).unwrap();
        assert_eq!(log.critical_warning, 5);
        assert_eq!(log.temperature_k, 310);
        assert_eq!(log.data_units_written, 123_456);
        assert_eq!(log.power_on_hours, 9_000);
        assert_eq!(log.media_errors, 2);
        assert_eq!(
            critical_warning_names(log.critical_warning),
            vec![
                "available spare below threshold",
                "NVM subsystem reliability degraded"
            ]
        );
    }
}
