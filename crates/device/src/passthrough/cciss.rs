//! HPE Smart Array (`hpsa`) and Microchip SmartRAID / SmartHBA
//! (`smartpqi`) controllers through CCISS_PASSTHRU, as the kernel's uapi
//! headers `cciss_ioctl.h` and `cciss_defs.h` define it. Both drivers take
//! the ioctl on any SCSI node of the controller's host.
//!
//! A command goes to an 8-byte LUN address: all zero is the controller
//! itself, which answers BMIC commands (identify controller, subsystem
//! information, cache configuration, identify physical device) and the
//! CISS REPORT LOGICAL / PHYSICAL LUNS lists; a physical drive's address
//! from that list reaches the drive, as `smartctl -d cciss,N` does.
//!
//! The BMIC layouts are those the drivers use (hpsa_cmd.h, smartpqi.h);
//! the cache configuration (BMIC 0xC1) is the one HPE published in
//! cciss_vol_status, the only public definition of it. Everything sent
//! only reads.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;

use super::sg::{Data, ScsiReply};
use super::tape::{unexpected, Command, Device, Failure, Reply, Tape};
use super::{ascii_field, hex, le16, le32, need_len, PassthroughError};

/// _IOWR('B', 11, IOCTL_Command_struct), 88 bytes on 64-bit.
const CCISS_PASSTHRU: u64 = 0xC058_420B;

const TYPE_CMD: u8 = 0;
const ATTR_SIMPLE: u8 = 4;
const XFER_NONE: u8 = 0;
const XFER_READ: u8 = 2;

/// The controller's own address.
pub const CONTROLLER: [u8; 8] = [0; 8];

const BMIC_READ: u8 = 0x26;
pub const BMIC_IDENTIFY_CONTROLLER: u8 = 0x11;
pub const BMIC_IDENTIFY_PHYSICAL_DEVICE: u8 = 0x15;
pub const BMIC_SENSE_SUBSYSTEM_INFORMATION: u8 = 0x66;
pub const BMIC_SENSE_CACHE_CONFIGURATION: u8 = 0xc1;
const CISS_REPORT_LOG: u8 = 0xc2;
const CISS_REPORT_PHYS: u8 = 0xc3;
/// Extended physical format 2: 24-byte entries with WWID and type.
const REPORT_PHYS_EXTENDED: u8 = 0x02;

pub const IDENTIFY_CONTROLLER_LEN: usize = 512;
pub const SUBSYSTEM_INFO_LEN: usize = 512;
pub const CACHE_CONFIG_LEN: usize = 512;
pub const IDENTIFY_PHYSICAL_LEN: usize = 2560;
/// Room for this many LUNs in a report (hpsa asks for 1024 physical).
pub const MAX_LUNS: usize = 1024;

/// Whether a CCISS_PASSTHRU command only reads: no data to the device,
/// and a BMIC read, a REPORT LUNS, or a CDB `reads_only` allows.
pub fn only_reads(cdb: &[u8], direction: u8) -> bool {
    matches!(direction, XFER_NONE | XFER_READ)
        && match cdb.first() {
            Some(&BMIC_READ) => matches!(
                cdb.get(6),
                Some(&BMIC_IDENTIFY_CONTROLLER)
                    | Some(&BMIC_IDENTIFY_PHYSICAL_DEVICE)
                    | Some(&BMIC_SENSE_SUBSYSTEM_INFORMATION)
                    | Some(&BMIC_SENSE_CACHE_CONFIGURATION)
            ),
            Some(&CISS_REPORT_LOG) | Some(&CISS_REPORT_PHYS) => true,
            _ => super::reads_only(cdb),
        }
}

/// A BMIC read of `command` for drive `index` (0 for the controller):
/// the 10-byte CDB hpsa and cciss_vol_status send, the length a
/// big-endian 16-bit byte count at 7–8, the index split over 2 and 9.
pub fn bmic_cdb(command: u8, index: u16, len: u16) -> [u8; 10] {
    let mut c = [0u8; 10];
    c[0] = BMIC_READ;
    c[2] = index as u8;
    c[6] = command;
    c[7..9].copy_from_slice(&len.to_be_bytes());
    c[9] = (index >> 8) as u8;
    c
}

/// REPORT LOGICAL/PHYSICAL LUNS with room for `len` bytes.
pub fn report_cdb(physical: bool, len: u32) -> [u8; 12] {
    let mut c = [0u8; 12];
    c[0] = if physical {
        CISS_REPORT_PHYS
    } else {
        CISS_REPORT_LOG
    };
    c[1] = if physical { REPORT_PHYS_EXTENDED } else { 0 };
    c[6..10].copy_from_slice(&len.to_be_bytes());
    c
}

/// What the controller answers to BMIC identify controller, with the
/// serial number from sense subsystem information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerIdentity {
    pub logical_drives: u16,
    /// "7.00-0" (short version and build) or the long version.
    pub firmware: String,
    pub rom_firmware: String,
    pub vendor: String,
    pub product: String,
    /// The controller's memory, MiB, where it says (0: not said).
    pub memory_mb: u16,
}

pub fn decode_identify_controller(b: &[u8]) -> Result<ControllerIdentity, PassthroughError> {
    need_len("BMIC IDENTIFY CONTROLLER", b, 357)?;
    let short = ascii_field(&b[5..9]);
    let build = le16(b, 190);
    // extra_controller_flags bit 29: the long version string is valid.
    let firmware = if le32(b, 286) & 0x2000_0000 != 0 {
        ascii_field(&b[325..357])
    } else {
        format!("{short}-{build}")
    };
    let count8 = u16::from(b[0]);
    let extended = le16(b, 154);
    Ok(ControllerIdentity {
        // Controllers with more than 255 report the extended count.
        logical_drives: if count8 == 0xff { extended } else { count8 },
        firmware,
        rom_firmware: ascii_field(&b[9..13]),
        vendor: ascii_field(&b[200..208]),
        product: ascii_field(&b[208..224]),
        memory_mb: le16(b, 143),
    })
}

/// The controller's serial number (sense subsystem information: 16
/// bytes at 44 for smartpqi, 32 for hpsa; NUL- or space-padded).
pub fn decode_subsystem_serial(b: &[u8]) -> Result<String, PassthroughError> {
    need_len("BMIC SENSE SUBSYSTEM INFORMATION", b, 60)?;
    Ok(ascii_field(&b[44..b.len().min(76)]))
}

/// BMIC sense cache configuration (cciss_vol_status's
/// struct bmic_cache_configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// disable_flag is 0: a cache is configured.
    pub configured: bool,
    pub read_cache_mb: u16,
    pub write_cache_mb: u16,
    pub status: u32,
    pub disable_code: u16,
    pub battery_count: u16,
    pub failed_battery_map: u16,
    pub percent_read: u8,
    pub percent_write: u8,
    pub default_percent_write: u8,
}

impl CacheConfig {
    pub fn enabled(&self) -> bool {
        self.configured && self.status & 1 != 0 && !self.write_cache_disabled()
    }

    /// A flash-backed cache's capacitor, or a battery, is fitted.
    pub fn backup_fitted(&self) -> bool {
        self.battery_count > 0 || self.status & (1 << 16) != 0
    }

    /// The write cache as configured (the default ratio gives it memory).
    pub fn configured_write_back(&self) -> bool {
        self.default_percent_write > 0
    }

    /// The write cache as it runs.
    pub fn running_write_back(&self) -> bool {
        self.enabled() && self.percent_write > 0 && self.write_cache_mb > 0
    }

    /// The posted-write cache is off for now or for good.
    pub fn write_cache_disabled(&self) -> bool {
        self.status & 0b110 != 0
    }

    /// The battery or capacitor: fitted, none failed, no hardware fault
    /// of its enable, and not the reason the write cache is off.
    pub fn backup_healthy(&self) -> bool {
        let power_reason = self.write_cache_disabled() && matches!(self.disable_code, 1 | 7 | 12);
        self.backup_fitted()
            && self.failed_battery_map == 0
            && self.status & (1 << 14 | 1 << 15) == 0
            && !power_reason
    }

    /// The status bits and the disable reason in words (cciss_vol_status's).
    pub fn state(&self) -> String {
        const BITS: [(u32, &str); 14] = [
            (1, "write cache temporarily disabled"),
            (2, "write cache permanently disabled"),
            (3, "valid data found on reset"),
            (4, "possible data loss on last reset"),
            (8, "unflushed dirty data"),
            (9, "dirty data limit reached"),
            (10, "excessive ECC errors"),
            (11, "non-power data loss"),
            (12, "auto-reconfigured on last reset"),
            (13, "redundant controller data flushed on reset"),
            (14, "battery enable hardware problem"),
            (15, "backup module incompatible (CPLD/BBWC)"),
            (16, "flash-backed cache present"),
            (30, "permanent disable condition"),
        ];
        let mut words: Vec<String> = BITS
            .iter()
            .filter(|(bit, _)| self.status & (1 << bit) != 0)
            .map(|(_, w)| w.to_string())
            .collect();
        if self.failed_battery_map != 0 {
            words.push(format!("failed batteries {:#06x}", self.failed_battery_map));
        }
        if self.write_cache_disabled() {
            words.push(format!("because {}", disable_reason(self.disable_code)));
        }
        format!(
            "cache {}; ratio {}% read / {}% write{}",
            if !self.configured {
                "not configured"
            } else if self.enabled() {
                "enabled"
            } else {
                "disabled"
            },
            self.percent_read,
            self.percent_write,
            if words.is_empty() {
                String::new()
            } else {
                format!("; {}", words.join(", "))
            }
        )
    }
}

/// Why the write cache is off, shortened from cciss_vol_status's words
/// for each disable code (14 and 15 are unused there).
fn disable_reason(code: u16) -> String {
    let w = match code {
        0 => "the signature in the posted-write memory does not match the drives' configuration",
        1 => "fewer than 75% of the battery packs are at a sufficient voltage",
        2 => "posted writes were disabled by the user",
        3 => "the controller lacks the resources (a rebuild, for example)",
        4 => "the array accelerator board is not attached",
        5 => "the accelerator memory is in use by an expand",
        6 => "the accelerator memory is in use by a snapshot",
        7 => "the redundant controller's batteries are not charged enough",
        8 => "the cache sizes of the redundant controllers differ",
        9 => "the other controller found a cache failure",
        10 => "a RAID ADG volume's enabler is missing",
        11 => "an SA 6400 EM controller is the boot controller",
        12 => "the flash-backed cache's capacitor charge is low",
        13 => "the flash-backed cache's flash is being erased",
        16 => "the mirror compare at reset failed (possible data loss)",
        17 => "an unrecoverable error reading the cache (data loss)",
        18 => "data could not be written to the cache memory",
        19 => "the configuration changed but the cache configuration was not updated",
        _ => return format!("disable code {code} (not a documented one)"),
    };
    format!("disable code {code}: {w}")
}

pub fn decode_cache_config(b: &[u8]) -> Result<CacheConfig, PassthroughError> {
    need_len("BMIC SENSE CACHE CONFIGURATION", b, 228)?;
    Ok(CacheConfig {
        configured: b[8] == 0,
        read_cache_mb: le16(b, 4),
        write_cache_mb: le16(b, 6),
        status: le32(b, 32),
        disable_code: le16(b, 36),
        battery_count: le16(b, 40),
        failed_battery_map: le16(b, 208),
        percent_read: b[224],
        percent_write: b[225],
        default_percent_write: b[227],
    })
}

/// One entry of REPORT PHYSICAL LUNS, extended format 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalLun {
    pub lun: [u8; 8],
    pub wwid: u64,
    pub device_type: u8,
    pub device_flags: u8,
}

impl PhysicalLun {
    /// The drive's number in BMIC commands (hpsa_cmd.h
    /// GET_BMIC_DRIVE_NUMBER and bus), None where the address has none.
    pub fn bmic_index(&self) -> Option<u16> {
        let bus = u16::from(self.lun[7] & 0x3f).checked_sub(1)?;
        let index = bus << 8 | u16::from(self.lun[6]);
        (index != 0xff00).then_some(index)
    }

    /// A disk: SATA, SAS or NVMe, not an expander, enclosure or the
    /// controller, and not flagged as no disk.
    pub fn is_drive(&self) -> bool {
        matches!(self.device_type, 1 | 2 | 9) && self.device_flags & 0x01 == 0
    }

    pub fn interface(&self) -> &'static str {
        match self.device_type {
            1 => "SATA",
            2 => "SAS",
            9 => "NVMe",
            _ => "other",
        }
    }

    /// The address a pass-through command to the drive carries: the
    /// report's, with the addressing-mode bits cleared (as smartctl).
    pub fn passthrough_lun(&self) -> [u8; 8] {
        let mut l = self.lun;
        l[3] &= 0x3f;
        l
    }
}

/// Parses the 8-byte header (a big-endian list length in bytes, and the
/// format flag) and yields the entries the list length and buffer hold.
fn report_entries<'a>(
    op: &'static str,
    b: &'a [u8],
    entry_len: usize,
    format: u8,
) -> Result<impl Iterator<Item = &'a [u8]>, PassthroughError> {
    need_len(op, b, 8)?;
    let list = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if b[4] & 0x0f != format {
        return Err(PassthroughError::malformed(
            op,
            format!("format 0x{:02x}, asked for 0x{format:02x}", b[4]),
        ));
    }
    let body = &b[8..];
    let n = (list / entry_len).min(body.len() / entry_len).min(MAX_LUNS);
    Ok(body.chunks_exact(entry_len).take(n))
}

pub fn decode_physical_luns(b: &[u8]) -> Result<Vec<PhysicalLun>, PassthroughError> {
    let entries = report_entries("CISS REPORT PHYSICAL LUNS", b, 24, REPORT_PHYS_EXTENDED)?;
    Ok(entries
        .map(|e| PhysicalLun {
            lun: e[..8].try_into().expect("8 bytes"),
            wwid: u64::from_be_bytes(e[8..16].try_into().expect("8 bytes")),
            device_type: e[16],
            device_flags: e[17],
        })
        .collect())
}

/// The logical volumes' addresses, and each one's volume number.
pub fn decode_logical_luns(b: &[u8]) -> Result<Vec<([u8; 8], u32)>, PassthroughError> {
    let entries = report_entries("CISS REPORT LOGICAL LUNS", b, 8, 0)?;
    Ok(entries
        .map(|e| {
            let lun: [u8; 8] = e.try_into().expect("8 bytes");
            (lun, le32(&lun, 0) & 0x3fff_ffff)
        })
        .collect())
}

/// BMIC identify physical device (struct bmic_identify_physical_device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalIdentity {
    pub block_size: u16,
    pub blocks: u64,
    /// The model field's first 8 bytes (smartpqi copies them as the
    /// vendor, the rest as the model).
    pub vendor: String,
    pub model: String,
    pub serial: String,
    pub firmware: String,
    /// "1I": the port, where 'E' second means external.
    pub connector: String,
    pub box_on_bus: u8,
    pub bay: u8,
    pub device_type: u8,
    pub temperature_c: Option<u8>,
    pub max_temperature_c: Option<u8>,
    /// Valid where the drive reports wear (the "gas gauge").
    pub power_on_hours: Option<u16>,
    pub percent_endurance_used: Option<u16>,
}

pub fn decode_identify_physical(b: &[u8]) -> Result<PhysicalIdentity, PassthroughError> {
    need_len("BMIC IDENTIFY PHYSICAL DEVICE", b, 1862)?;
    let big = u64::from_le_bytes(b[122..130].try_into().expect("8 bytes"));
    let gauge = le16(b, 1222) & (1 << 10) != 0;
    let temp = |v: u8| (v != 0 && v != 0xff).then_some(v);
    Ok(PhysicalIdentity {
        block_size: le16(b, 2),
        blocks: if big != 0 { big } else { u64::from(le32(b, 4)) },
        vendor: ascii_field(&b[12..20]),
        model: ascii_field(&b[20..52]),
        serial: ascii_field(&b[52..92]),
        firmware: ascii_field(&b[92..100]),
        connector: ascii_field(&b[112..114]),
        box_on_bus: b[114],
        bay: b[115],
        device_type: b[120],
        temperature_c: temp(b[1792]),
        max_temperature_c: temp(b[1794]),
        power_on_hours: gauge.then(|| le16(b, 1858)),
        percent_endurance_used: gauge.then(|| le16(b, 1860)),
    })
}

/// The error information the firmware filled (ErrorInfo_struct).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CissResult {
    pub command_status: u16,
    pub scsi_status: u8,
    pub sense: Vec<u8>,
    pub residual: u32,
    pub data: Vec<u8>,
}

pub fn command_status_name(s: u16) -> &'static str {
    match s {
        0 => "success",
        1 => "target status",
        2 => "data underrun",
        3 => "data overrun",
        4 => "invalid",
        5 => "protocol error",
        6 => "hardware error",
        7 => "connection lost",
        8 => "aborted",
        9 => "abort failed",
        0xa => "unsolicited abort",
        0xb => "timeout",
        0xc => "unabortable",
        0xffff => "controller lockup",
        _ => "unknown",
    }
}

/// A node of the controller's SCSI host, for CCISS_PASSTHRU.
pub struct CcissNode {
    device: Device,
}

impl CcissNode {
    /// Opens a node of the controller's host. An sg node must be opened
    /// read-write: sg refuses an ioctl it does not know on a read-only
    /// file (EPERM). A block node is opened read-only: sd passes the
    /// ioctl on whatever the mode, and a block device closed after a write
    /// open is probed again by udev.
    pub fn open(path: &str, tape: Option<&Arc<Tape>>) -> io::Result<CcissNode> {
        let sg = std::path::Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("sg"));
        let device = Device::open_with(path, "open", tape, || {
            OpenOptions::new()
                .read(true)
                .write(sg)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
        })?;
        Ok(CcissNode { device })
    }

    pub fn path(&self) -> &str {
        self.device.path()
    }

    /// One command to `lun`, reading at most `len` bytes (none: no data).
    pub fn send(
        &self,
        op: &'static str,
        lun: [u8; 8],
        cdb: &[u8],
        len: usize,
    ) -> Result<CissResult, PassthroughError> {
        if cdb.len() > 16 || len > usize::from(u16::MAX) {
            return Err(PassthroughError::Rejected {
                op,
                detail: "a CDB over 16 bytes or a transfer over 64 KiB does not fit CCISS_PASSTHRU"
                    .into(),
            });
        }
        let direction = if len > 0 { XFER_READ } else { XFER_NONE };
        if !only_reads(cdb, direction) {
            return Err(PassthroughError::Rejected {
                op,
                detail: "storcert sends a Smart Array only commands that read".into(),
            });
        }
        let command = Command::Cciss {
            lun: lun.to_vec(),
            cdb: cdb.to_vec(),
            direction,
            data_in_len: len,
        };
        let reply = self.device.exchange(op, command, |file| {
            passthru_ioctl(file, lun, cdb, direction, len)
        });
        match reply {
            Reply::Cciss {
                command_status,
                scsi_status,
                sense,
                residual,
                data_in,
            } => Ok(CissResult {
                command_status,
                scsi_status,
                sense: sense.into_iter().take(32).collect(),
                residual,
                data: data_in,
            }),
            Reply::Failed(f) => Err(PassthroughError::Ioctl {
                op,
                source: f.to_error(),
            }),
            other => Err(unexpected(op, &other)),
        }
    }

    /// A command to the controller whose data is the answer: success or
    /// underrun, and GOOD status, else the firmware's reason.
    pub fn read(
        &self,
        op: &'static str,
        lun: [u8; 8],
        cdb: &[u8],
        len: usize,
    ) -> Result<Vec<u8>, PassthroughError> {
        let r = self.send(op, lun, cdb, len)?;
        if !matches!(r.command_status, 0 | 2) || r.scsi_status != 0 {
            return Err(rejected(op, &r));
        }
        Ok(r.data)
    }

    pub fn bmic(
        &self,
        op: &'static str,
        command: u8,
        index: u16,
        len: usize,
    ) -> Result<Vec<u8>, PassthroughError> {
        self.read(op, CONTROLLER, &bmic_cdb(command, index, len as u16), len)
    }

    /// REPORT PHYSICAL (extended, 24-byte entries) or LOGICAL LUNS, with
    /// room for `MAX_LUNS` entries.
    fn report(&self, physical: bool) -> Result<Vec<u8>, PassthroughError> {
        let (op, entry) = if physical {
            ("CISS REPORT PHYSICAL LUNS", 24)
        } else {
            ("CISS REPORT LOGICAL LUNS", 8)
        };
        let len = 8 + entry * MAX_LUNS;
        self.read(op, CONTROLLER, &report_cdb(physical, len as u32), len)
    }

    pub fn physical_luns(&self) -> Result<Vec<PhysicalLun>, PassthroughError> {
        decode_physical_luns(&self.report(true)?)
    }

    pub fn logical_luns(&self) -> Result<Vec<([u8; 8], u32)>, PassthroughError> {
        decode_logical_luns(&self.report(false)?)
    }
}

fn rejected(op: &'static str, r: &CissResult) -> PassthroughError {
    let sense = super::sg::Sense::decode(&r.sense)
        .map(|s| format!(", sense {s}"))
        .unwrap_or_default();
    PassthroughError::Rejected {
        op,
        detail: format!(
            "CISS command status {} ({}), SCSI status 0x{:02x}{sense}",
            r.command_status,
            command_status_name(r.command_status),
            r.scsi_status
        ),
    }
}

/// A physical drive behind the controller, by its LUN address: the SCSI
/// (and, through the controller's SAT layer, ATA) commands of a disk
/// probe go to it.
pub struct CcissPath<'a> {
    pub node: &'a CcissNode,
    pub lun: [u8; 8],
}

impl super::ScsiPath for CcissPath<'_> {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: Data<'_>,
        _timeout_ms: u32,
    ) -> Result<ScsiReply, PassthroughError> {
        let buf = super::read_only_buffer(op, cdb, data)?;
        let len = buf.as_ref().map_or(0, |b| b.len());
        let r = self.node.send(op, self.lun, cdb, len)?;
        // smartpqi reports CHECK CONDITION with command status 0 or 1;
        // the SCSI status is what tells.
        if !matches!(r.command_status, 0..=2) {
            return Err(rejected(op, &r));
        }
        if let Some(buf) = buf {
            let n = r.data.len().min(buf.len());
            buf[..n].copy_from_slice(&r.data[..n]);
        }
        Ok(ScsiReply {
            status: r.scsi_status,
            host_status: 0,
            driver_status: 0,
            sense: r.sense,
            resid: i32::try_from(r.residual.min(len as u32)).unwrap_or(0),
        })
    }
}

/// IOCTL_Command_struct (not packed: the buffer pointer is 8-aligned).
#[repr(C)]
struct IoctlCommand {
    lun: [u8; 8],
    cdb_len: u8,
    type_attr_dir: u8,
    timeout: u16,
    cdb: [u8; 16],
    error_info: [u8; 48],
    buf_size: u16,
    buf: *mut u8,
}

const _: () = assert!(std::mem::size_of::<IoctlCommand>() == 88);

fn passthru_ioctl(file: &File, lun: [u8; 8], cdb: &[u8], direction: u8, len: usize) -> Reply {
    let mut buf = vec![0u8; len.max(1)];
    let mut c = IoctlCommand {
        lun,
        cdb_len: cdb.len() as u8,
        type_attr_dir: direction << 6 | ATTR_SIMPLE << 3 | TYPE_CMD,
        timeout: 0,
        cdb: [0; 16],
        error_info: [0; 48],
        buf_size: len as u16,
        buf: if len > 0 {
            buf.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        },
    };
    c.cdb[..cdb.len()].copy_from_slice(cdb);
    // SAFETY: `buf` holds `buf_size` bytes and outlives the synchronous
    // ioctl; the structure is the one the drivers copy in and out.
    if let Err(e) = unsafe { super::ioctl_ptr(file.as_raw_fd(), CCISS_PASSTHRU, &mut c) } {
        return Reply::Failed(Failure::of(&e));
    }
    let e = &c.error_info;
    let sense_len = usize::from(e[1]).min(32);
    buf.truncate(len);
    Reply::Cciss {
        command_status: le16(e, 2),
        scsi_status: e[0],
        sense: e[16..16 + sense_len].to_vec(),
        residual: le32(e, 4),
        data_in: buf,
    }
}

/// A WWID as the model keeps WWNs ("0x" and 16 hex digits).
pub fn wwid_hex(w: u64) -> Option<String> {
    (w != 0).then(|| format!("0x{}", hex(&w.to_be_bytes())))
}

/// The big-endian list length a report's header gives (for a fixture).
#[doc(hidden)]
pub fn report_header(list_bytes: u32, format: u8) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&list_bytes.to_be_bytes());
    h[4] = format;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdbs_as_the_drivers_build_them() {
        assert_eq!(
            bmic_cdb(BMIC_IDENTIFY_PHYSICAL_DEVICE, 0x0105, 2560),
            [0x26, 0, 0x05, 0, 0, 0, 0x15, 0x0a, 0x00, 0x01]
        );
        let r = report_cdb(true, 0x6008);
        assert_eq!(&r[..2], &[0xc3, 0x02]);
        assert_eq!(&r[6..10], &[0, 0, 0x60, 0x08]);
        assert_eq!(report_cdb(false, 8)[..2], [0xc2, 0]);
        // The type byte: Direction in the top two bits.
        assert_eq!(XFER_READ << 6 | ATTR_SIMPLE << 3 | TYPE_CMD, 0xa0);
        assert_eq!(XFER_NONE << 6 | ATTR_SIMPLE << 3 | TYPE_CMD, 0x20);
        // What is sent only reads; a BMIC write or data out never passes.
        assert!(only_reads(
            &bmic_cdb(BMIC_IDENTIFY_CONTROLLER, 0, 512),
            XFER_READ
        ));
        assert!(only_reads(&report_cdb(true, 8), XFER_READ));
        let mut write = bmic_cdb(0xc2, 0, 0);
        write[0] = 0x27;
        assert!(!only_reads(&write, XFER_NONE));
        assert!(!only_reads(&[0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0], XFER_READ));
        assert!(!only_reads(&[0x12, 0, 0, 0, 96, 0], 1));
        assert!(
            !only_reads(&[0x12, 0, 0, 0, 96, 0], 3),
            "a reserved direction"
        );
        // A BMIC read of anything but the four storcert asks.
        assert!(!only_reads(&bmic_cdb(0xc2, 0, 0), XFER_READ));
    }

    #[test]
    fn physical_luns_give_index_type_and_address() {
        let mut b = report_header(48, 2).to_vec();
        // Drive: bus 1 (lun[7] 0x01 + 1), index 5, masked mode bits.
        let mut e = [0u8; 24];
        e[..8].copy_from_slice(&[0, 0, 0, 0xc0, 0, 0, 5, 1]);
        e[8..16].copy_from_slice(&0x5000_c500_1234_5678u64.to_be_bytes());
        e[16] = 1;
        b.extend_from_slice(&e);
        // An enclosure, and a third entry the length does not cover.
        let mut s = [0u8; 24];
        s[16] = 6;
        b.extend_from_slice(&s);
        b.extend_from_slice(&e);
        let luns = decode_physical_luns(&b).unwrap();
        assert_eq!(luns.len(), 2);
        assert_eq!(luns[0].bmic_index(), Some(5));
        assert!(luns[0].is_drive() && !luns[1].is_drive());
        assert_eq!(luns[0].interface(), "SATA");
        assert_eq!(luns[0].passthrough_lun(), [0, 0, 0, 0, 0, 0, 5, 1]);
        assert_eq!(
            wwid_hex(luns[0].wwid).as_deref(),
            Some("0x5000c50012345678")
        );
        assert_eq!(luns[1].bmic_index(), None, "bus 0 gives no index");
        // A reply in another format than asked is not read as this one.
        b[4] = 0;
        assert!(decode_physical_luns(&b).is_err());
        assert!(decode_physical_luns(&b[..7]).is_err());
    }

    #[test]
    fn identify_controller_short_and_long_firmware() {
        let mut b = vec![0u8; IDENTIFY_CONTROLLER_LEN];
        b[0] = 2;
        b[5..9].copy_from_slice(b"7.00");
        b[190..192].copy_from_slice(&13u16.to_le_bytes());
        b[200..203].copy_from_slice(b"HPE");
        b[208..218].copy_from_slice(b"P408i-a SR");
        b[143..145].copy_from_slice(&2048u16.to_le_bytes());
        let c = decode_identify_controller(&b).unwrap();
        assert_eq!(c.firmware, "7.00-13");
        assert_eq!((c.logical_drives, c.memory_mb), (2, 2048));
        assert_eq!(
            (c.vendor.as_str(), c.product.as_str()),
            ("HPE", "P408i-a SR")
        );
        b[286..290].copy_from_slice(&0x2000_0000u32.to_le_bytes());
        b[325..334].copy_from_slice(b"5.61.1231");
        assert_eq!(
            decode_identify_controller(&b).unwrap().firmware,
            "5.61.1231"
        );
        b[0] = 0xff;
        b[154..156].copy_from_slice(&300u16.to_le_bytes());
        assert_eq!(decode_identify_controller(&b).unwrap().logical_drives, 300);
        assert!(decode_identify_controller(&b[..356]).is_err());
    }

    #[test]
    fn cache_configuration_says_when_write_back_fell_back() {
        let mut b = vec![0u8; CACHE_CONFIG_LEN];
        b[6..8].copy_from_slice(&1638u16.to_le_bytes());
        b[32..36].copy_from_slice(&(1u32 | 1 << 16).to_le_bytes());
        b[224] = 10;
        b[225] = 90;
        b[227] = 90;
        let c = decode_cache_config(&b).unwrap();
        assert!(c.enabled() && c.backup_fitted());
        assert!(c.configured_write_back() && c.running_write_back());
        assert!(c.backup_healthy());
        assert_eq!(
            c.state(),
            "cache enabled; ratio 10% read / 90% write; flash-backed cache present"
        );
        // Temporarily disabled: the capacitor is low.
        b[32..36].copy_from_slice(&(1u32 | 1 << 1 | 1 << 16).to_le_bytes());
        b[36..38].copy_from_slice(&12u16.to_le_bytes());
        let c = decode_cache_config(&b).unwrap();
        assert!(c.configured_write_back() && !c.running_write_back());
        assert!(!c.backup_healthy(), "the capacitor is why the cache is off");
        assert_eq!(
            c.state(),
            "cache disabled; ratio 10% read / 90% write; write cache temporarily disabled, flash-backed cache present, because disable code 12: the flash-backed cache's capacitor charge is low"
        );
        // Disabled by the user: the capacitor is fine.
        b[36..38].copy_from_slice(&2u16.to_le_bytes());
        assert!(decode_cache_config(&b).unwrap().backup_healthy());
        // No cache configured at all.
        b[8] = 1;
        assert!(decode_cache_config(&b)
            .unwrap()
            .state()
            .starts_with("cache not configured"));
        assert!(decode_cache_config(&b[..227]).is_err());
    }

    #[test]
    fn identify_physical_device_fields() {
        let mut b = vec![0u8; IDENTIFY_PHYSICAL_LEN];
        b[2..4].copy_from_slice(&512u16.to_le_bytes());
        b[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        b[122..130].copy_from_slice(&937_703_088u64.to_le_bytes());
        b[12..27].copy_from_slice(b"ATA     MZ7LM48");
        b[52..60].copy_from_slice(b"S2TSNX0H");
        b[92..96].copy_from_slice(b"HXT7");
        b[112..114].copy_from_slice(b"1I");
        b[114] = 1;
        b[115] = 3;
        b[120] = 1;
        b[1792] = 31;
        b[1794] = 45;
        let p = decode_identify_physical(&b).unwrap();
        assert_eq!(p.blocks, 937_703_088);
        assert_eq!(
            (p.vendor.as_str(), p.model.as_str(), p.serial.as_str()),
            ("ATA", "MZ7LM48", "S2TSNX0H")
        );
        assert_eq!((p.connector.as_str(), p.box_on_bus, p.bay), ("1I", 1, 3));
        assert_eq!((p.temperature_c, p.max_temperature_c), (Some(31), Some(45)));
        assert_eq!(
            p.percent_endurance_used, None,
            "no gas gauge: no wear figure"
        );
        b[1222..1224].copy_from_slice(&(1u16 << 10).to_le_bytes());
        b[1860..1862].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(
            decode_identify_physical(&b).unwrap().percent_endurance_used,
            Some(4)
        );
        assert!(decode_identify_physical(&b[..1861]).is_err());
    }
}
