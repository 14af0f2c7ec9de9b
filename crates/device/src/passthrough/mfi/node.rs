//! The MFI transport: DCMD and SCSI pass-through frames carried by the
//! megaraid_sas management ioctl (MEGASAS_IOC_FIRMWARE), the node it is
//! sent on, and a physical drive behind the controller as a SCSI path.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::tape::{unexpected, Command, Device, Failure, Reply, Tape};
use super::super::{ioctl_ptr, PassthroughError};
use super::*;

/// `struct megasas_iocpacket` (packed) from the kernel's megaraid_sas.h.
#[repr(C, packed)]
pub(super) struct IocPacket {
    host_no: u16,
    pad1: u16,
    sgl_off: u32,
    sge_count: u32,
    sense_off: u32,
    sense_len: u32,
    frame: [u8; 128],
    /// struct iovec sgl[MAX_IOCTL_SGE]: (pointer, length) pairs.
    sgl: [[u8; 16]; 16],
}

impl IocPacket {
    /// A packet carrying `frame` to SCSI host `host_no`, with `buf` (if
    /// any) as its one data buffer, the frame's SGL at `sgl_off`; no
    /// sense buffer.
    fn new(host_no: u16, frame: [u8; 128], sgl_off: u32, buf: &mut [u8]) -> IocPacket {
        let mut pkt = IocPacket {
            host_no,
            pad1: 0,
            sgl_off,
            sge_count: u32::from(!buf.is_empty()),
            sense_off: 0,
            sense_len: 0,
            frame,
            sgl: [[0u8; 16]; 16],
        };
        if !buf.is_empty() {
            pkt.sgl[0][..8].copy_from_slice(&(buf.as_mut_ptr() as u64).to_ne_bytes());
            pkt.sgl[0][8..].copy_from_slice(&(buf.len() as u64).to_ne_bytes());
        }
        pkt
    }

    /// MEGASAS_IOC_FIRMWARE with this packet; the firmware's status is
    /// left in the frame.
    ///
    /// # Safety
    /// Every address the packet holds (its iovec, a sense address in its
    /// frame) must stay valid until the call returns.
    unsafe fn send(&mut self, file: &File) -> io::Result<()> {
        // SAFETY: self is the packed megasas_iocpacket the driver reads;
        // the caller keeps what it points at alive.
        unsafe { ioctl_ptr(file.as_raw_fd(), MEGASAS_IOC_FIRMWARE, self) }.map(|_| ())
    }
}

/// _IOWR('M', 1, struct megasas_iocpacket)
pub(super) const MEGASAS_IOC_FIRMWARE: u64 = (3 << 30) | (404 << 16) | (0x4d << 8) | 1;
const MFI_CMD_DCMD: u8 = 0x05;
const MFI_CMD_PD_SCSI_IO: u8 = 0x04;
pub(super) const MFI_FRAME_DIR_NONE: u16 = 0x0000;
pub(super) const MFI_FRAME_DIR_READ: u16 = 0x0010;
pub(super) const MFI_FRAME_DIR_WRITE: u16 = 0x0008;
/// Offset of the scatter-gather list inside a DCMD frame.
const DCMD_SGL_OFFSET: u32 = 0x28;

pub const IOCTL_NODE: &str = "/dev/megaraid_sas_ioctl_node";

/// What the tape calls opening the management node.
pub(super) const OPEN_OP: &str = "open the megaraid_sas management node";

/// An open management node of the megaraid_sas driver.
pub struct MfiNode {
    device: Device,
    /// A node this process made in the temporary directory, removed when
    /// done; the one in /dev stays, as storcli leaves it.
    made: Option<PathBuf>,
}

impl MfiNode {
    /// Opens the management node, creating it as storcli does when the
    /// driver is loaded but no node exists (the kernel registers the
    /// character device, udev rules for it are not universal). From a
    /// playing tape, the node the capture opened stands in.
    pub fn open(tape: Option<&Arc<Tape>>) -> io::Result<MfiNode> {
        if let Some(t) = tape.filter(|t| t.is_playing()) {
            let path = t.device_of(OPEN_OP).unwrap_or_else(|| IOCTL_NODE.into());
            let device = Device::open_with(&path, OPEN_OP, tape, || {
                Err(io::Error::other("a playing tape opens nothing"))
            })?;
            return Ok(MfiNode { device, made: None });
        }
        let live = Self::open_live();
        // The tape names the node that was really opened.
        let path = match &live {
            Ok((_, at)) => at.display().to_string(),
            Err(_) => IOCTL_NODE.to_string(),
        };
        let mut made = None;
        let device = Device::open_with(&path, OPEN_OP, tape, || {
            let (file, at) = live?;
            if !at.starts_with("/dev") {
                made = Some(at);
            }
            Ok(file)
        })?;
        Ok(MfiNode { device, made })
    }

    fn open_live() -> io::Result<(File, PathBuf)> {
        let default = Path::new(IOCTL_NODE);
        if default.exists() {
            return Ok((Self::open_at(default)?, default.to_path_buf()));
        }
        let major =
            driver_char_major(&std::fs::read_to_string("/proc/devices")?).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "megaraid_sas_ioctl is not registered in /proc/devices",
                )
            })?;
        let mut last_err = None;
        for dir in [PathBuf::from("/dev"), std::env::temp_dir()] {
            let path = if dir == Path::new("/dev") {
                default.to_path_buf()
            } else {
                dir.join(format!("storcert-megaraid-{}", std::process::id()))
            };
            match mknod_char(&path, major, 0) {
                Ok(()) => return Ok((Self::open_at(&path)?, path)),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.expect("tried at least one directory"))
    }

    fn open_at(path: &Path) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.device.path()
    }

    /// Runs one read DCMD on the controller that is SCSI host `host_no`.
    pub fn dcmd_read(
        &self,
        host_no: u16,
        opcode: u32,
        mbox: &[u8],
        len: usize,
    ) -> Result<Vec<u8>, PassthroughError> {
        self.dcmd(host_no, opcode, mbox, vec![0u8; len], false)
    }

    /// Runs one DCMD that sends `data` to the controller.
    pub fn dcmd_write(
        &self,
        host_no: u16,
        opcode: u32,
        mbox: &[u8],
        data: &[u8],
    ) -> Result<(), PassthroughError> {
        self.dcmd(host_no, opcode, mbox, data.to_vec(), true)
            .map(|_| ())
    }

    fn dcmd(
        &self,
        host_no: u16,
        opcode: u32,
        mbox: &[u8],
        data: Vec<u8>,
        write: bool,
    ) -> Result<Vec<u8>, PassthroughError> {
        let op = dcmd_name(opcode);
        let len = data.len();
        let mbox_len = mbox.len().min(12);
        let command = Command::MfiDcmd {
            host: host_no,
            opcode,
            mbox: mbox[..mbox_len].to_vec(),
            data_out: if write { data.clone() } else { Vec::new() },
            data_in_len: if write { 0 } else { len },
        };
        let reply = self.device.exchange(op, command, |file| {
            dcmd_ioctl(file, host_no, opcode, &mbox[..mbox_len], data, write)
        });
        match reply {
            Reply::Mfi { status: 0, data_in } => {
                let mut buf = data_in;
                buf.resize(len, 0);
                Ok(buf)
            }
            Reply::Mfi { status, .. } => Err(PassthroughError::Rejected {
                op,
                detail: format!("MFI status 0x{status:02x} ({})", status_name(status)),
            }),
            Reply::Failed(f) => Err(PassthroughError::Ioctl {
                op,
                source: f.to_error(),
            }),
            other => Err(unexpected(op, &other)),
        }
    }
}

/// A physical drive behind a MegaRAID controller, reached through the
/// firmware with MFI_CMD_PD_SCSI_IO frames, as `smartctl -d megaraid,N`
/// (and `sat+megaraid,N` for SATA drives, whose ATA PASS-THROUGH the
/// firmware's SATL translates) reaches it. Only commands that read are
/// sent: data flows from the drive.
pub struct PdPath<'a> {
    pub node: &'a MfiNode,
    pub host: u16,
    /// The frame's 8-bit target: the drive's device id. A device id past
    /// 255 cannot be addressed this way.
    pub target: u8,
}

/// The frame's status for "the drive answered CHECK CONDITION": its
/// sense data is in the sense buffer.
const MFI_STAT_SCSI_DONE_WITH_ERROR: u8 = 0x2d;
/// The sense bytes asked of the kernel (it copies back this many).
const PTHRU_SENSE_LEN: usize = 64;

impl super::super::ScsiPath for PdPath<'_> {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: super::super::sg::Data<'_>,
        timeout_ms: u32,
    ) -> Result<super::super::sg::ScsiReply, PassthroughError> {
        // Only what reads, by construction: a drive behind a controller is
        // probed, never changed.
        let buf = super::super::read_only_buffer(op, cdb, data)?;
        let len = buf.as_ref().map_or(0, |b| b.len());
        let command = Command::MfiPdScsi {
            host: self.host,
            target: self.target,
            cdb: cdb.to_vec(),
            data_in_len: len,
        };
        let reply = self.node.device.exchange(op, command, |file| {
            pd_scsi_ioctl(file, self.host, self.target, cdb, len, timeout_ms)
        });
        match reply {
            Reply::MfiScsi {
                status,
                sense,
                data_in,
            } => {
                if let Some(buf) = buf {
                    let n = data_in.len().min(buf.len());
                    buf[..n].copy_from_slice(&data_in[..n]);
                }
                match status {
                    0 => Ok(super::super::sg::ScsiReply {
                        status: super::super::sg::STATUS_GOOD,
                        host_status: 0,
                        driver_status: 0,
                        sense: Vec::new(),
                        resid: 0,
                    }),
                    // The driver copies back the frame's status, not the
                    // SCSI status: with sense data, it was CHECK
                    // CONDITION; without, it is not known.
                    MFI_STAT_SCSI_DONE_WITH_ERROR
                        if super::super::sg::Sense::decode(&sense).is_some() =>
                    {
                        Ok(super::super::sg::ScsiReply {
                            status: super::super::sg::STATUS_CHECK_CONDITION,
                            host_status: 0,
                            driver_status: 0,
                            sense: sense.into_iter().take(PTHRU_SENSE_LEN).collect(),
                            resid: 0,
                        })
                    }
                    s => Err(PassthroughError::Rejected {
                        op,
                        detail: format!("MFI status 0x{s:02x} ({})", status_name(s)),
                    }),
                }
            }
            Reply::Failed(f) => Err(PassthroughError::Ioctl {
                op,
                source: f.to_error(),
            }),
            other => Err(unexpected(op, &other)),
        }
    }

    fn returns_ata_registers(&self) -> bool {
        false
    }
}

/// MEGASAS_IOC_FIRMWARE with one MFI_CMD_PD_SCSI_IO frame (struct
/// megasas_pass_thru_frame): the CDB at 0x20, the SGL at 0x30, the sense
/// buffer's address at 0x18, where the driver puts its own and copies
/// the sense back to the address given. The driver copies back only the
/// frame's status byte (not the SCSI status, not a residue).
fn pd_scsi_ioctl(
    file: &File,
    host_no: u16,
    target: u8,
    cdb: &[u8],
    len: usize,
    timeout_ms: u32,
) -> Reply {
    const PTHRU_SGL_OFFSET: u32 = 0x30;
    const PTHRU_SENSE_OFFSET: u32 = 0x18;
    let mut buf = vec![0u8; len];
    let mut sense = [0u8; PTHRU_SENSE_LEN];
    let frame = pd_scsi_frame(target, cdb, len, timeout_ms, sense.as_mut_ptr() as u64);
    let mut pkt = IocPacket::new(host_no, frame, PTHRU_SGL_OFFSET, &mut buf);
    pkt.sense_off = PTHRU_SENSE_OFFSET;
    pkt.sense_len = PTHRU_SENSE_LEN as u32;
    // SAFETY: the frame points at `sense` and the iovec at `buf`, both of
    // which outlive the synchronous ioctl.
    if let Err(e) = unsafe { pkt.send(file) } {
        return Reply::Failed(Failure::of(&e));
    }
    Reply::MfiScsi {
        status: pkt.frame[2],
        sense: sense.to_vec(),
        data_in: buf,
    }
}

/// The MFI_CMD_PD_SCSI_IO frame reading `len` bytes from `target`, with
/// the sense buffer at `sense_addr`. The timeout is the firmware's, in
/// seconds (the driver itself waits for the frame without one).
pub(super) fn pd_scsi_frame(
    target: u8,
    cdb: &[u8],
    len: usize,
    timeout_ms: u32,
    sense_addr: u64,
) -> [u8; 128] {
    let mut f = [0u8; 128];
    f[0] = MFI_CMD_PD_SCSI_IO;
    f[1] = PTHRU_SENSE_LEN as u8;
    f[2] = 0xff; // cmd_status: overwritten by the firmware
    f[4] = target;
    f[5] = 0; // lun
    let cdb_len = cdb.len().min(16);
    f[6] = cdb_len as u8;
    f[7] = u8::from(len > 0); // sge_count
    let dir = if len > 0 {
        MFI_FRAME_DIR_READ
    } else {
        MFI_FRAME_DIR_NONE
    };
    f[16..18].copy_from_slice(&dir.to_le_bytes());
    let seconds = u16::try_from(timeout_ms.div_ceil(1000)).unwrap_or(u16::MAX);
    f[18..20].copy_from_slice(&seconds.to_le_bytes());
    f[20..24].copy_from_slice(&(len as u32).to_le_bytes());
    f[24..32].copy_from_slice(&sense_addr.to_ne_bytes());
    f[32..32 + cdb_len].copy_from_slice(&cdb[..cdb_len]);
    f
}

/// MEGASAS_IOC_FIRMWARE with one DCMD frame and one data buffer.
fn dcmd_ioctl(
    file: &File,
    host_no: u16,
    opcode: u32,
    mbox: &[u8],
    mut buf: Vec<u8>,
    write: bool,
) -> Reply {
    let len = buf.len();
    let mut f = [0u8; 128];
    f[0] = MFI_CMD_DCMD;
    f[2] = 0xff; // cmd_status: overwritten by the firmware
    f[7] = 1; // sge_count
    let dir = if write {
        MFI_FRAME_DIR_WRITE
    } else {
        MFI_FRAME_DIR_READ
    };
    f[16..18].copy_from_slice(&dir.to_le_bytes());
    f[20..24].copy_from_slice(&(len as u32).to_le_bytes());
    f[24..28].copy_from_slice(&opcode.to_le_bytes());
    f[28..28 + mbox.len()].copy_from_slice(mbox);
    let mut pkt = IocPacket::new(host_no, f, DCMD_SGL_OFFSET, &mut buf);
    // SAFETY: the one iovec points at `buf`, which outlives the
    // synchronous ioctl.
    if let Err(e) = unsafe { pkt.send(file) } {
        return Reply::Failed(Failure::of(&e));
    }
    Reply::Mfi {
        status: pkt.frame[2],
        data_in: if write { Vec::new() } else { buf },
    }
}

impl Drop for MfiNode {
    fn drop(&mut self) {
        if let Some(path) = &self.made {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Finds the character major of megaraid_sas_ioctl in /proc/devices.
pub fn driver_char_major(proc_devices: &str) -> Option<u32> {
    let mut in_char = false;
    for line in proc_devices.lines() {
        let line = line.trim();
        if line.starts_with("Character devices") {
            in_char = true;
            continue;
        }
        if line.starts_with("Block devices") {
            in_char = false;
            continue;
        }
        if !in_char {
            continue;
        }
        let mut parts = line.split_whitespace();
        if let (Some(major), Some("megaraid_sas_ioctl")) = (parts.next(), parts.next()) {
            return major.parse().ok();
        }
    }
    None
}

fn mknod_char(path: &Path, major: u32, minor: u32) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let dev = libc::makedev(major, minor);
    // SAFETY: c is a valid NUL-terminated path.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, dev) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
