//! SG_IO: one SCSI command through the Linux generic SCSI ioctl, which
//! works on /dev/sdX nodes of every SCSI-speaking driver (libata, SAS HBAs,
//! RAID controllers, usb-storage/uas). virtio-blk and NVMe answer ENOTTY.

use std::fs::File;
use std::os::fd::AsRawFd;

use super::tape::{unexpected, Command, Device, Failure, Reply};
use super::{ioctl_ptr, PassthroughError};

const SG_IO: u64 = 0x2285;
const SG_DXFER_NONE: i32 = -1;
const SG_DXFER_TO_DEV: i32 = -2;
const SG_DXFER_FROM_DEV: i32 = -3;
const SENSE_LEN: usize = 64;

/// `struct sg_io_hdr` from <scsi/sg.h>.
#[repr(C)]
struct SgIoHdr {
    interface_id: i32,
    dxfer_direction: i32,
    cmd_len: u8,
    mx_sb_len: u8,
    iovec_count: u16,
    dxfer_len: u32,
    dxferp: *mut libc::c_void,
    cmdp: *const u8,
    sbp: *mut u8,
    timeout: u32,
    flags: u32,
    pack_id: i32,
    usr_ptr: *mut libc::c_void,
    status: u8,
    masked_status: u8,
    msg_status: u8,
    sb_len_wr: u8,
    host_status: u16,
    driver_status: u16,
    resid: i32,
    duration: u32,
    info: u32,
}

/// Where the data phase of a command goes.
pub enum Data<'a> {
    None,
    FromDevice(&'a mut [u8]),
    ToDevice(&'a [u8]),
}

/// What came back from one SG_IO call that the kernel accepted.
#[derive(Debug, Clone)]
pub struct ScsiReply {
    /// SCSI status byte (0 GOOD, 2 CHECK CONDITION, 8 BUSY, ...).
    pub status: u8,
    pub host_status: u16,
    pub driver_status: u16,
    pub sense: Vec<u8>,
    /// Bytes of the data buffer that were not transferred.
    pub resid: i32,
}

pub const STATUS_GOOD: u8 = 0x00;
pub const STATUS_CHECK_CONDITION: u8 = 0x02;

impl ScsiReply {
    /// Sense data decoded to key/asc/ascq, if any was returned.
    pub fn sense_summary(&self) -> Option<Sense> {
        Sense::decode(&self.sense)
    }

    /// Turns anything but GOOD (with a clean transport) into an error that
    /// names the command and the decoded sense.
    pub fn check(&self, op: &'static str) -> Result<(), PassthroughError> {
        if self.status == STATUS_GOOD && self.host_status == 0 && (self.driver_status & 0x0f) == 0 {
            return Ok(());
        }
        let mut detail = format!("SCSI status 0x{:02x}", self.status);
        if self.host_status != 0 {
            detail.push_str(&format!(", host status 0x{:x}", self.host_status));
        }
        if let Some(sense) = self.sense_summary() {
            detail.push_str(&format!(", {sense}"));
        }
        Err(PassthroughError::Rejected { op, detail })
    }
}

/// Decoded SCSI sense data (fixed or descriptor format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sense {
    pub key: u8,
    pub asc: u8,
    pub ascq: u8,
    /// Descriptor-format sense carries descriptors (the ATA Status Return
    /// descriptor among them); fixed format has none.
    pub descriptors: Vec<u8>,
}

impl Sense {
    pub fn decode(raw: &[u8]) -> Option<Sense> {
        let code = raw.first()? & 0x7f;
        match code {
            0x70 | 0x71 if raw.len() >= 14 => Some(Sense {
                key: raw[2] & 0x0f,
                asc: raw[12],
                ascq: raw[13],
                descriptors: Vec::new(),
            }),
            0x72 | 0x73 if raw.len() >= 8 => {
                let add_len = raw[7] as usize;
                let end = (8 + add_len).min(raw.len());
                Some(Sense {
                    key: raw[1] & 0x0f,
                    asc: raw[2],
                    ascq: raw[3],
                    descriptors: raw[8..end].to_vec(),
                })
            }
            _ => None,
        }
    }

    /// Finds one descriptor by type in descriptor-format sense.
    pub fn descriptor(&self, kind: u8) -> Option<&[u8]> {
        let d = &self.descriptors;
        let mut i = 0;
        while i + 2 <= d.len() {
            let len = d[i + 1] as usize + 2;
            if i + len > d.len() {
                return None;
            }
            if d[i] == kind {
                return Some(&d[i..i + len]);
            }
            i += len;
        }
        None
    }

    pub fn key_name(&self) -> &'static str {
        match self.key {
            0x0 => "NO SENSE",
            0x1 => "RECOVERED ERROR",
            0x2 => "NOT READY",
            0x3 => "MEDIUM ERROR",
            0x4 => "HARDWARE ERROR",
            0x5 => "ILLEGAL REQUEST",
            0x6 => "UNIT ATTENTION",
            0x7 => "DATA PROTECT",
            0x8 => "BLANK CHECK",
            0x9 => "VENDOR SPECIFIC",
            0xa => "COPY ABORTED",
            0xb => "ABORTED COMMAND",
            0xd => "VOLUME OVERFLOW",
            0xe => "MISCOMPARE",
            _ => "RESERVED",
        }
    }
}

impl std::fmt::Display for Sense {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sense {} (asc 0x{:02x}, ascq 0x{:02x})",
            self.key_name(),
            self.asc,
            self.ascq
        )
    }
}

/// Issues one SCSI command. An `Err` means the kernel refused the ioctl
/// (ENOTTY for nodes that are not SCSI, EPERM without CAP_SYS_RAWIO);
/// device-side failures come back as a reply with a non-GOOD status.
pub fn sg_io(
    dev: &Device,
    op: &'static str,
    cdb: &[u8],
    mut data: Data<'_>,
    timeout_ms: u32,
) -> Result<ScsiReply, PassthroughError> {
    let command = Command::Scsi {
        cdb: cdb.to_vec(),
        data_out: match &data {
            Data::ToDevice(buf) => buf.to_vec(),
            _ => Vec::new(),
        },
        data_in_len: match &data {
            Data::FromDevice(buf) => buf.len(),
            _ => 0,
        },
    };
    let reply = dev.exchange(op, command, |file| {
        sg_io_ioctl(file, cdb, &mut data, timeout_ms)
    });
    match reply {
        Reply::Scsi {
            status,
            host_status,
            driver_status,
            sense,
            resid,
            data_in,
        } => {
            if let Data::FromDevice(buf) = data {
                let n = data_in.len().min(buf.len());
                buf[..n].copy_from_slice(&data_in[..n]);
            }
            Ok(ScsiReply {
                status,
                host_status,
                driver_status,
                sense: sense.into_iter().take(SENSE_LEN).collect(),
                resid,
            })
        }
        Reply::Failed(f) => Err(PassthroughError::Ioctl {
            op,
            source: f.to_error(),
        }),
        other => Err(unexpected(op, &other)),
    }
}

impl super::ScsiPath for Device {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: Data<'_>,
        timeout_ms: u32,
    ) -> Result<ScsiReply, PassthroughError> {
        sg_io(self, op, cdb, data, timeout_ms)
    }
}

/// The SG_IO ioctl itself, on a live node.
fn sg_io_ioctl(file: &File, cdb: &[u8], data: &mut Data<'_>, timeout_ms: u32) -> Reply {
    let mut sense = [0u8; SENSE_LEN];
    let (direction, ptr, len) = match data {
        Data::None => (SG_DXFER_NONE, std::ptr::null_mut(), 0),
        Data::FromDevice(buf) => (
            SG_DXFER_FROM_DEV,
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
        ),
        Data::ToDevice(buf) => (
            SG_DXFER_TO_DEV,
            buf.as_ptr() as *mut libc::c_void,
            buf.len(),
        ),
    };
    let mut hdr = SgIoHdr {
        interface_id: b'S' as i32,
        dxfer_direction: direction,
        cmd_len: cdb.len() as u8,
        mx_sb_len: SENSE_LEN as u8,
        iovec_count: 0,
        dxfer_len: len as u32,
        dxferp: ptr,
        cmdp: cdb.as_ptr(),
        sbp: sense.as_mut_ptr(),
        timeout: timeout_ms,
        flags: 0,
        pack_id: 0,
        usr_ptr: std::ptr::null_mut(),
        status: 0,
        masked_status: 0,
        msg_status: 0,
        sb_len_wr: 0,
        host_status: 0,
        driver_status: 0,
        resid: 0,
        duration: 0,
        info: 0,
    };
    // SAFETY: hdr is a correctly laid out sg_io_hdr whose pointers (cdb,
    // data buffer, sense buffer) outlive the synchronous ioctl.
    if let Err(e) = unsafe { ioctl_ptr(file.as_raw_fd(), SG_IO, &mut hdr) } {
        return Reply::Failed(Failure::of(&e));
    }
    let sense_len = (hdr.sb_len_wr as usize).min(SENSE_LEN);
    Reply::Scsi {
        status: hdr.status,
        host_status: hdr.host_status,
        driver_status: hdr.driver_status,
        sense: sense[..sense_len].to_vec(),
        resid: hdr.resid,
        data_in: match data {
            Data::FromDevice(buf) => buf.to_vec(),
            _ => Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_fixed_sense() {
        // ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE (what qemu's
        // megasas answers to ATA PASS-THROUGH).
        let mut raw = [0u8; 18];
        raw[0] = 0x70;
        raw[2] = 0x05;
        raw[7] = 10;
        raw[12] = 0x20;
        let s = Sense::decode(&raw).unwrap();
        assert_eq!((s.key, s.asc, s.ascq), (5, 0x20, 0));
        assert_eq!(s.to_string(), "sense ILLEGAL REQUEST (asc 0x20, ascq 0x00)");
    }

    #[test]
    fn decodes_descriptor_sense_and_finds_ata_return() {
        let raw = [
            0x72, 0x01, 0x00, 0x1d, 0, 0, 0, 14, // header, add len 14
            0x09, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x4f, 0x00, 0xc2, 0x00, 0x50,
        ];
        let s = Sense::decode(&raw).unwrap();
        assert_eq!(s.key, 1);
        let d = s.descriptor(0x09).unwrap();
        assert_eq!(d.len(), 14);
        assert_eq!(d[9], 0x4f);
        assert!(s.descriptor(0x02).is_none());
    }

    #[test]
    fn rejects_truncated_sense() {
        assert!(Sense::decode(&[0x70, 0, 5]).is_none());
        assert!(Sense::decode(&[]).is_none());
        // A descriptor whose length runs past the end is not returned.
        let s = Sense::decode(&[0x72, 0, 0, 0, 0, 0, 0, 4, 0x09, 0x0c, 0, 0]).unwrap();
        assert!(s.descriptor(0x09).is_none());
    }

    #[test]
    fn check_reports_status_and_sense() {
        let reply = ScsiReply {
            status: STATUS_CHECK_CONDITION,
            host_status: 0,
            driver_status: 0x08,
            sense: vec![0x70, 0, 0x04, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x44, 0],
            resid: 0,
        };
        let err = reply.check("TEST UNIT READY").unwrap_err().to_string();
        assert_eq!(
            err,
            "TEST UNIT READY: SCSI status 0x02, sense HARDWARE ERROR (asc 0x44, ascq 0x00)"
        );
    }
}
