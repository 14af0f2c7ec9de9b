//! Broadcom MPI3 controllers (`mpi3mr`: PERC H965i, MegaRAID and HBA
//! 9600) through the driver's bsg node, `/dev/bsg/mpi3mrctlN`, as the
//! kernel's uapi header `scsi_bsg_mpi3mr.h` defines it: SG_IO with a
//! `struct sg_io_v4` whose request is the driver's packet.
//!
//! Two kinds of packet are sent:
//! - driver commands: ADPINFO (the adapter as the driver sees it) and
//!   ALLTGTDEVINFO (every device the firmware reported, hidden RAID
//!   members among them, by handle);
//! - MPT pass-through carrying one MPI3 SCSI IO request (mpi30_init.h) to
//!   a device handle, with the reply frame, the sense and the data read
//!   back in one data-in buffer: how a drive behind the controller is
//!   asked for INQUIRY, VPD, LOG SENSE and ATA PASS-THROUGH.
//!
//! Byte layouts are built and decoded here; the ioctl is one function.
//! Everything sent only reads (`reads_only`).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::sg::{Data, ScsiReply, STATUS_CHECK_CONDITION};
use super::tape::{unexpected, Command, Device, Failure, Reply, Tape};
use super::{ascii_field, le16, le32, need_len, PassthroughError};

const SG_IO: u64 = 0x2285;
const BSG_PROTOCOL_SCSI: u32 = 0;
const BSG_SUB_PROTOCOL_SCSI_TRANSPORT: u32 = 2;

const MPI3MR_DRV_CMD: u8 = 1;
const MPI3MR_MPT_CMD: u8 = 2;
const OPCODE_ADPINFO: u8 = 1;
const OPCODE_ALLTGTDEVINFO: u8 = 4;

const BUFTYPE_DATA_IN: u8 = 3;
const BUFTYPE_MPI_REPLY: u8 = 5;
const BUFTYPE_ERR_RESPONSE: u8 = 6;
const BUFTYPE_MPI_REQUEST: u8 = 0xfe;

const FUNCTION_SCSI_IO: u8 = 0x20;
const SCSIIO_FLAGS_DATADIRECTION_READ: u32 = 0x0008_0000;
/// The SCSI IO request up to its SGL, which the driver writes.
const SCSI_IO_REQUEST_LEN: usize = 0x40;
/// struct mpi3mr_bsg_in_reply_buf: type and padding, then a reply frame
/// (the driver copies at most what the buffer holds).
const REPLY_BUF_LEN: usize = 4 + 128;
const REPLY_TYPE_STATUS: u8 = 1;
const REPLY_TYPE_ADDRESS: u8 = 2;
/// MPI3MR_SENSE_BUF_SZ.
const SENSE_BUF_LEN: usize = 256;

pub const ADPINFO_LEN: usize = 168;
/// The device list is read with room for this many devices at most.
pub const MAX_DEVICES: usize = 1024;
/// Driver timeouts below 60 s are raised to 60 s.
const MPT_TIMEOUT_S: u16 = 60;

/// Whether a bsg exchange only reads: a driver command that reports
/// (ADPINFO, ALLTGTDEVINFO), or an MPT command carrying a SCSI IO request
/// whose CDB `reads_only` allows and which moves no data to the device.
pub fn only_reads(request: &[u8], data_out: &[u8]) -> bool {
    match request.first() {
        Some(&MPI3MR_DRV_CMD) => {
            data_out.is_empty()
                && matches!(
                    request.get(9),
                    Some(&OPCODE_ADPINFO) | Some(&OPCODE_ALLTGTDEVINFO)
                )
        }
        Some(&MPI3MR_MPT_CMD) => {
            data_out.len() == SCSI_IO_REQUEST_LEN
                && data_out[3] == FUNCTION_SCSI_IO
                && le32(data_out, 0x0c) & 0x0004_0000 == 0
                && super::reads_only(&data_out[0x20..0x30])
        }
        _ => false,
    }
}

/// The bsg packet (struct mpi3mr_bsg_packet) for a driver command.
pub fn drv_packet(ioc: u8, opcode: u8) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    p[0] = MPI3MR_DRV_CMD;
    p[8] = ioc;
    p[9] = opcode;
    p
}

/// The bsg packet for an MPT command with these buffer entries
/// (type, length), laid in list order in data-out and data-in.
fn mpt_packet(ioc: u8, entries: &[(u8, usize)]) -> Vec<u8> {
    let mut p = vec![0u8; 24 + 8 * entries.len()];
    p[0] = MPI3MR_MPT_CMD;
    p[8] = ioc;
    p[10..12].copy_from_slice(&MPT_TIMEOUT_S.to_le_bytes());
    p[16] = entries.len() as u8;
    for (i, &(kind, len)) in entries.iter().enumerate() {
        let e = 24 + 8 * i;
        p[e] = kind;
        p[e + 4..e + 8].copy_from_slice(&(len as u32).to_le_bytes());
    }
    p
}

/// struct mpi3_scsi_io_request up to its SGL, reading `len` bytes.
pub fn scsi_io_request(handle: u16, cdb: &[u8], len: usize) -> Vec<u8> {
    let mut r = vec![0u8; SCSI_IO_REQUEST_LEN];
    r[3] = FUNCTION_SCSI_IO;
    r[0x0a..0x0c].copy_from_slice(&handle.to_le_bytes());
    let flags = if len > 0 {
        SCSIIO_FLAGS_DATADIRECTION_READ
    } else {
        0
    };
    r[0x0c..0x10].copy_from_slice(&flags.to_le_bytes());
    r[0x14..0x18].copy_from_slice(&(len as u32).to_le_bytes());
    let n = cdb.len().min(16);
    r[0x20..0x20 + n].copy_from_slice(&cdb[..n]);
    r
}

/// The adapter as ADPINFO describes it (struct mpi3mr_bsg_in_adpinfo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterInfo {
    pub pci_device_id: u32,
    pub pci_revision: u32,
    pub pci_subsystem_device: u32,
    pub pci_subsystem_vendor: u32,
    /// "0000:65:00.0".
    pub pci_address: String,
    pub state: u8,
    pub driver_name: String,
    pub driver_version: String,
}

pub fn adapter_state_name(s: u8) -> &'static str {
    match s {
        1 => "operational",
        2 => "fault",
        3 => "in reset",
        4 => "unrecoverable",
        _ => "unknown",
    }
}

pub fn decode_adpinfo(buf: &[u8]) -> Result<AdapterInfo, PassthroughError> {
    need_len("MPI3 ADPINFO", buf, ADPINFO_LEN)?;
    let b = buf[24];
    Ok(AdapterInfo {
        pci_device_id: le32(buf, 8),
        pci_revision: le32(buf, 12),
        pci_subsystem_device: le32(buf, 16),
        pci_subsystem_vendor: le32(buf, 20),
        pci_address: format!(
            "{:04x}:{:02x}:{:02x}.{}",
            le32(buf, 28),
            buf[25],
            b & 0x1f,
            b >> 5
        ),
        state: buf[36],
        driver_name: ascii_field(&buf[92..112]),
        driver_version: ascii_field(&buf[112..144]),
    })
}

/// One device of ALLTGTDEVINFO (struct mpi3mr_device_map_info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetDevice {
    pub handle: u16,
    pub persistent_id: u16,
    /// The SCSI channel and target the kernel sees it at; None for a
    /// device the driver keeps hidden (a RAID member).
    pub exposed_at: Option<(u8, u32)>,
}

/// The device count ALLTGTDEVINFO gives first, and the entries that fit.
pub fn decode_all_targets(buf: &[u8]) -> Result<(usize, Vec<TargetDevice>), PassthroughError> {
    need_len("MPI3 ALLTGTDEVINFO", buf, 2)?;
    let count = usize::from(le16(buf, 0));
    let entries = buf
        .get(8..)
        .unwrap_or(&[])
        .chunks_exact(12)
        .take(count.min(MAX_DEVICES))
        .map(|e| {
            let target = le32(e, 4);
            TargetDevice {
                handle: le16(e, 0),
                persistent_id: le16(e, 2),
                exposed_at: (target != u32::MAX).then_some((e[8], target)),
            }
        })
        .collect();
    Ok((count, entries))
}

/// What one SCSI IO pass-through came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScsiIoResult {
    pub ioc_status: u16,
    pub scsi_status: u8,
    pub sense: Vec<u8>,
    /// Bytes transferred, where a reply frame says.
    pub transfer_count: Option<u32>,
    pub data: Vec<u8>,
}

pub fn ioc_status_name(s: u16) -> &'static str {
    match s {
        0x0000 => "success",
        0x0001 => "invalid function",
        0x0002 => "busy",
        0x0003 => "invalid SGL",
        0x0004 => "internal error",
        0x0006 => "insufficient resources",
        0x0007 => "invalid field",
        0x0008 => "invalid state",
        0x0040 => "recovered error",
        0x0042 => "invalid device handle",
        0x0043 => "device not there",
        0x0044 => "data overrun",
        0x0045 => "data underrun",
        0x0046 => "I/O data error",
        0x0047 => "protocol error",
        0x0048 => "task terminated",
        0x004b => "IOC terminated",
        _ => "unknown",
    }
}

/// The data-in buffer of a SCSI IO pass-through: the reply buffer, the
/// sense buffer, then the data.
pub fn decode_scsi_io(din: &[u8], data_len: usize) -> Result<ScsiIoResult, PassthroughError> {
    const OP: &str = "MPI3 SCSI IO";
    need_len(OP, din, REPLY_BUF_LEN + SENSE_BUF_LEN + data_len)?;
    let reply = &din[..REPLY_BUF_LEN];
    let sense_buf = &din[REPLY_BUF_LEN..REPLY_BUF_LEN + SENSE_BUF_LEN];
    let data = din[REPLY_BUF_LEN + SENSE_BUF_LEN..][..data_len].to_vec();
    match reply[0] {
        // No reply frame: the firmware completed it; the status
        // descriptor holds the IOC status.
        REPLY_TYPE_STATUS => Ok(ScsiIoResult {
            ioc_status: le16(reply, 4) & 0x7fff,
            scsi_status: 0,
            sense: Vec::new(),
            transfer_count: None,
            data,
        }),
        // A whole struct mpi3_scsi_io_reply after the 4-byte header.
        REPLY_TYPE_ADDRESS => {
            let f = &reply[4..];
            let sense_count = (le32(f, 0x18) as usize).min(SENSE_BUF_LEN);
            // MPI3_SCSI_STATE_SENSE_VALID is 0 in the state's low two
            // bits (1 failed, 2 buffer empty, 3 not available).
            let sense_valid = f[0x11] & 0x03 == 0 && sense_count > 0;
            Ok(ScsiIoResult {
                ioc_status: le16(f, 0x0a) & 0x7fff,
                scsi_status: f[0x10],
                sense: if sense_valid {
                    sense_buf[..sense_count].to_vec()
                } else {
                    Vec::new()
                },
                transfer_count: Some(le32(f, 0x14)),
                data,
            })
        }
        t => Err(PassthroughError::malformed(
            OP,
            format!("the driver wrote no reply (reply type {t})"),
        )),
    }
}

/// The management node of one MPI3 controller.
pub struct Mpi3Node {
    device: Device,
    ioc: u8,
}

impl Mpi3Node {
    /// Opens `/dev/bsg/mpi3mrctlN` (N is the controller's id in the
    /// driver, which every packet names).
    pub fn open(path: &str, ioc: u8, tape: Option<&Arc<Tape>>) -> io::Result<Mpi3Node> {
        let device = Device::open_with(path, "open", tape, || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
        })?;
        Ok(Mpi3Node { device, ioc })
    }

    pub fn path(&self) -> &str {
        self.device.path()
    }

    fn send(
        &self,
        op: &'static str,
        request: Vec<u8>,
        data_out: Vec<u8>,
        data_in_len: usize,
    ) -> Result<Vec<u8>, PassthroughError> {
        if !only_reads(&request, &data_out) {
            return Err(PassthroughError::Rejected {
                op,
                detail: "storcert sends an MPI3 controller only commands that read".into(),
            });
        }
        let command = Command::Bsg {
            request: request.clone(),
            data_out: data_out.clone(),
            data_in_len,
        };
        let reply = self.device.exchange(op, command, |file| {
            bsg_ioctl(file, &request, &data_out, data_in_len)
        });
        match reply {
            Reply::Bsg { data_in } => Ok(data_in),
            Reply::Failed(f) => Err(PassthroughError::Ioctl {
                op,
                source: f.to_error(),
            }),
            other => Err(unexpected(op, &other)),
        }
    }

    pub fn adapter_info(&self) -> Result<AdapterInfo, PassthroughError> {
        let din = self.send(
            "MPI3 ADPINFO",
            drv_packet(self.ioc, OPCODE_ADPINFO),
            Vec::new(),
            ADPINFO_LEN,
        )?;
        decode_adpinfo(&din)
    }

    /// Every device the driver knows: the count first, then the list with
    /// room for all of them (bounded).
    pub fn all_targets(&self) -> Result<(usize, Vec<TargetDevice>), PassthroughError> {
        const OP: &str = "MPI3 ALLTGTDEVINFO";
        let packet = drv_packet(self.ioc, OPCODE_ALLTGTDEVINFO);
        let (count, _) = decode_all_targets(&self.send(OP, packet.clone(), Vec::new(), 8)?)?;
        if count == 0 {
            return Ok((0, Vec::new()));
        }
        let room = count.min(MAX_DEVICES);
        let din = self.send(OP, packet, Vec::new(), 8 + 12 * room)?;
        decode_all_targets(&din)
    }

    /// One SCSI command to a device handle, reading at most `len` bytes.
    pub fn scsi_io(
        &self,
        op: &'static str,
        handle: u16,
        cdb: &[u8],
        len: usize,
    ) -> Result<ScsiIoResult, PassthroughError> {
        let (request, data_out, data_in_len) = scsi_io_command(self.ioc, handle, cdb, len);
        let din = self.send(op, request, data_out, data_in_len)?;
        decode_scsi_io(&din, len)
    }
}

/// The bsg request, data-out and data-in length of one SCSI IO
/// pass-through: data-out is the request frame; data-in is laid out as
/// the reply buffer, the sense buffer, then the data.
pub fn scsi_io_command(ioc: u8, handle: u16, cdb: &[u8], len: usize) -> (Vec<u8>, Vec<u8>, usize) {
    let mut entries = vec![
        (BUFTYPE_MPI_REQUEST, SCSI_IO_REQUEST_LEN),
        (BUFTYPE_MPI_REPLY, REPLY_BUF_LEN),
        (BUFTYPE_ERR_RESPONSE, SENSE_BUF_LEN),
    ];
    if len > 0 {
        entries.push((BUFTYPE_DATA_IN, len));
    }
    (
        mpt_packet(ioc, &entries),
        scsi_io_request(handle, cdb, len),
        REPLY_BUF_LEN + SENSE_BUF_LEN + len,
    )
}

/// The data-in buffer of a SCSI IO that completed without a reply frame
/// (the firmware's usual answer to success), for fixtures.
#[doc(hidden)]
pub fn status_reply(data: &[u8], len: usize) -> Vec<u8> {
    let mut din = vec![0u8; REPLY_BUF_LEN + SENSE_BUF_LEN];
    din[0] = REPLY_TYPE_STATUS;
    din.extend_from_slice(data);
    din.resize(REPLY_BUF_LEN + SENSE_BUF_LEN + len, 0);
    din
}

/// The data-in buffer of a SCSI IO answered with a reply frame: IOC
/// status, SCSI status and sense, for fixtures.
#[doc(hidden)]
pub fn frame_reply(ioc_status: u16, scsi_status: u8, sense: &[u8], len: usize) -> Vec<u8> {
    let mut din = vec![0u8; REPLY_BUF_LEN + SENSE_BUF_LEN + len];
    din[0] = REPLY_TYPE_ADDRESS;
    let f = 4;
    din[f + 0x0a..f + 0x0c].copy_from_slice(&ioc_status.to_le_bytes());
    din[f + 0x10] = scsi_status;
    if sense.is_empty() {
        din[f + 0x11] = 0x03; // sense not available
    } else {
        din[f + 0x18..f + 0x1c].copy_from_slice(&(sense.len() as u32).to_le_bytes());
        din[REPLY_BUF_LEN..REPLY_BUF_LEN + sense.len()].copy_from_slice(sense);
    }
    din
}

/// A drive behind an MPI3 controller, by its device handle: the SCSI
/// commands of a disk probe go to it through the firmware.
pub struct Mpi3Path<'a> {
    pub node: &'a Mpi3Node,
    pub handle: u16,
}

impl super::ScsiPath for Mpi3Path<'_> {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: Data<'_>,
        _timeout_ms: u32,
    ) -> Result<ScsiReply, PassthroughError> {
        let buf = super::read_only_buffer(op, cdb, data)?;
        let len = buf.as_ref().map_or(0, |b| b.len());
        let r = self.node.scsi_io(op, self.handle, cdb, len)?;
        // Data underrun is a short answer, not a failure.
        if r.ioc_status != 0 && r.ioc_status != 0x0045 {
            return Err(PassthroughError::Rejected {
                op,
                detail: format!(
                    "MPI3 IOC status 0x{:04x} ({})",
                    r.ioc_status,
                    ioc_status_name(r.ioc_status)
                ),
            });
        }
        if let Some(buf) = buf {
            buf.copy_from_slice(&r.data[..len]);
        }
        let done = r.transfer_count.map_or(len, |n| (n as usize).min(len));
        Ok(ScsiReply {
            status: r.scsi_status,
            host_status: 0,
            driver_status: 0,
            sense: if r.scsi_status == STATUS_CHECK_CONDITION {
                r.sense
            } else {
                Vec::new()
            },
            resid: (len - done) as i32,
        })
    }
}

/// struct sg_io_v4, as include/uapi/linux/bsg.h lays it out.
#[repr(C)]
#[derive(Default)]
struct SgIoV4 {
    guard: i32,
    protocol: u32,
    subprotocol: u32,
    request_len: u32,
    request: u64,
    request_tag: u64,
    request_attr: u32,
    request_priority: u32,
    request_extra: u32,
    max_response_len: u32,
    response: u64,
    dout_iovec_count: u32,
    dout_xfer_len: u32,
    din_iovec_count: u32,
    din_xfer_len: u32,
    dout_xferp: u64,
    din_xferp: u64,
    timeout: u32,
    flags: u32,
    usr_ptr: u64,
    spare_in: u32,
    driver_status: u32,
    transport_status: u32,
    device_status: u32,
    retry_delay: u32,
    info: u32,
    duration: u32,
    response_len: u32,
    din_resid: i32,
    dout_resid: i32,
    generated_tag: u64,
    spare_out: u32,
    padding: u32,
}

const _: () = assert!(std::mem::size_of::<SgIoV4>() == 160);

fn bsg_ioctl(file: &File, request: &[u8], data_out: &[u8], data_in_len: usize) -> Reply {
    let mut request = request.to_vec();
    let mut dout = data_out.to_vec();
    let mut din = vec![0u8; data_in_len];
    let mut response = [0u8; 96];
    let mut hdr = SgIoV4 {
        guard: i32::from(b'Q'),
        protocol: BSG_PROTOCOL_SCSI,
        subprotocol: BSG_SUB_PROTOCOL_SCSI_TRANSPORT,
        request_len: request.len() as u32,
        request: request.as_mut_ptr() as u64,
        max_response_len: response.len() as u32,
        response: response.as_mut_ptr() as u64,
        dout_xfer_len: dout.len() as u32,
        dout_xferp: if dout.is_empty() {
            0
        } else {
            dout.as_mut_ptr() as u64
        },
        din_xfer_len: din.len() as u32,
        din_xferp: if din.is_empty() {
            0
        } else {
            din.as_mut_ptr() as u64
        },
        timeout: u32::from(MPT_TIMEOUT_S) * 1000,
        ..SgIoV4::default()
    };
    // SAFETY: every pointer in `hdr` points at a buffer of the length
    // given beside it, all of which outlive the synchronous ioctl.
    match unsafe { super::ioctl_ptr(file.as_raw_fd(), SG_IO, &mut hdr) } {
        Ok(_) => Reply::Bsg { data_in: din },
        Err(e) => Reply::Failed(Failure::of(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_and_requests_as_the_uapi_header_lays_them() {
        let p = drv_packet(3, OPCODE_ALLTGTDEVINFO);
        assert_eq!((p.len(), p[0], p[8], p[9]), (32, 1, 3, 4));
        let p = mpt_packet(0, &[(BUFTYPE_MPI_REQUEST, 0x40), (BUFTYPE_DATA_IN, 96)]);
        assert_eq!(p.len(), 40);
        assert_eq!((p[0], p[16], p[24], p[32]), (2, 2, 0xfe, 3));
        assert_eq!(le16(&p, 10), 60);
        assert_eq!(le32(&p, 36), 96);
        let r = scsi_io_request(0x1234, &[0x12, 1, 0x80, 0, 0xff, 0], 255);
        assert_eq!((r.len(), r[3]), (0x40, 0x20));
        assert_eq!(le16(&r, 0x0a), 0x1234);
        assert_eq!(le32(&r, 0x0c), 0x0008_0000);
        assert_eq!(le32(&r, 0x14), 255);
        assert_eq!(&r[0x20..0x26], &[0x12, 1, 0x80, 0, 0xff, 0]);
        assert_eq!(le32(&scsi_io_request(1, &[0x00; 6], 0), 0x0c), 0);
        // What is sent only reads.
        assert!(only_reads(&drv_packet(0, OPCODE_ADPINFO), &[]));
        assert!(!only_reads(&drv_packet(0, 2), &[0; 4]), "ADPRESET");
        assert!(only_reads(&p, &r));
        let write = scsi_io_request(1, &[0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0], 0);
        assert!(!only_reads(&p, &write));
        let mut config = r.clone();
        config[3] = 0x10;
        assert!(!only_reads(&p, &config), "only SCSI IO goes through");
    }

    #[test]
    fn device_lists_keep_hidden_members_and_bound_the_count() {
        let mut b = vec![0u8; 8 + 24];
        b[0..2].copy_from_slice(&3u16.to_le_bytes());
        // Exposed at channel 0 target 5; hidden (all ones).
        b[8..10].copy_from_slice(&0x11u16.to_le_bytes());
        b[10..12].copy_from_slice(&7u16.to_le_bytes());
        b[12..16].copy_from_slice(&5u32.to_le_bytes());
        b[20..22].copy_from_slice(&0x12u16.to_le_bytes());
        b[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        b[28] = 0xff;
        let (n, list) = decode_all_targets(&b).unwrap();
        assert_eq!(n, 3, "the driver's count, though only two fit");
        assert_eq!(
            list,
            [
                TargetDevice {
                    handle: 0x11,
                    persistent_id: 7,
                    exposed_at: Some((0, 5))
                },
                TargetDevice {
                    handle: 0x12,
                    persistent_id: 0,
                    exposed_at: None
                }
            ]
        );
        assert!(decode_all_targets(&b[..1]).is_err());
        assert_eq!(decode_all_targets(&b[..2]).unwrap().1, []);
    }

    #[test]
    fn scsi_io_replies_of_both_kinds() {
        let len = 8;
        let mut din = vec![0u8; REPLY_BUF_LEN + SENSE_BUF_LEN + len];
        din[0] = REPLY_TYPE_STATUS;
        din[REPLY_BUF_LEN + SENSE_BUF_LEN..].copy_from_slice(b"ABCDEFGH");
        let r = decode_scsi_io(&din, len).unwrap();
        assert_eq!(
            (r.ioc_status, r.scsi_status, r.transfer_count),
            (0, 0, None)
        );
        assert_eq!(r.data, b"ABCDEFGH");
        // An address reply: CHECK CONDITION with 18 bytes of sense, 4
        // bytes moved, log info flag set on the status.
        din[0] = REPLY_TYPE_ADDRESS;
        let f = 4;
        din[f + 0x0a..f + 0x0c].copy_from_slice(&0x8045u16.to_le_bytes());
        din[f + 0x10] = 2;
        din[f + 0x11] = 0x00; // sense valid
        din[f + 0x14..f + 0x18].copy_from_slice(&4u32.to_le_bytes());
        din[f + 0x18..f + 0x1c].copy_from_slice(&999u32.to_le_bytes());
        din[REPLY_BUF_LEN] = 0x70;
        let r = decode_scsi_io(&din, len).unwrap();
        assert_eq!(r.ioc_status, 0x45);
        assert_eq!(r.scsi_status, 2);
        assert_eq!(
            r.sense.len(),
            SENSE_BUF_LEN,
            "the count is bounded by the buffer"
        );
        assert_eq!(r.transfer_count, Some(4));
        din[0] = 0;
        assert!(decode_scsi_io(&din, len).is_err());
        assert!(decode_scsi_io(&din[..100], len).is_err());
    }

    #[test]
    fn adapter_info_fields() {
        let mut b = vec![0u8; ADPINFO_LEN];
        b[8..12].copy_from_slice(&0x00a5u32.to_le_bytes());
        b[24] = 2 | 1 << 5; // device 2, function 1
        b[25] = 0x65;
        b[36] = 1;
        b[92..98].copy_from_slice(b"mpi3mr");
        b[112..122].copy_from_slice(b"8.12.0.3.5");
        let a = decode_adpinfo(&b).unwrap();
        assert_eq!(a.pci_address, "0000:65:02.1");
        assert_eq!(a.pci_device_id, 0xa5);
        assert_eq!(adapter_state_name(a.state), "operational");
        assert_eq!(
            (a.driver_name.as_str(), a.driver_version.as_str()),
            ("mpi3mr", "8.12.0.3.5")
        );
        assert!(decode_adpinfo(&b[..167]).is_err());
    }
}
