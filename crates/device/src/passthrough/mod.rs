//! The ioctl layer: SG_IO (SCSI and ATA PASS-THROUGH), the NVMe admin ioctl
//! and MegaRAID MFI frames, plus the byte-level decoders for what devices
//! answer.
//!
//! Each protocol module keeps two halves apart: `decode_*` functions that
//! take the raw reply bytes (pure, covered by recorded fixtures) and small
//! transport functions that issue one command through an ioctl. Nothing in
//! this module writes to a medium: every command issued here reads
//! identification, settings or logs. Nothing here knows about the rest of
//! storcert.

pub mod ata;
pub mod cciss;
pub mod mfi;
pub mod mpi3;
pub mod nvme;
pub mod scsi;
pub mod sg;
pub mod tape;

use std::fmt;

/// Where a SCSI command goes: a device node (SG_IO), or a physical drive
/// behind a RAID controller through its firmware (MegaRAID's
/// MFI_CMD_PD_SCSI_IO). The SCSI and ATA commands are built once and sent
/// down either.
pub trait ScsiPath {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: sg::Data<'_>,
        timeout_ms: u32,
    ) -> Result<sg::ScsiReply, PassthroughError>;

    /// Whether an ATA PASS-THROUGH with CK_COND gets the ATA registers
    /// back (SMART RETURN STATUS needs them). MegaRAID's firmware returns
    /// none (smartctl: "ATA return descriptor not supported by controller
    /// firmware").
    fn returns_ata_registers(&self) -> bool {
        true
    }
}

/// Whether a CDB only reads: INQUIRY, MODE SENSE(10), READ CAPACITY(16),
/// LOG SENSE without
/// saving parameters, and ATA PASS-THROUGH(16) carrying IDENTIFY DEVICE,
/// SMART READ DATA or SMART RETURN STATUS. What storcert sends a drive
/// behind a controller must be one of these.
pub fn reads_only(cdb: &[u8]) -> bool {
    match cdb.first() {
        Some(0x12) | Some(0x5a) => true,
        // READ CAPACITY(16): SERVICE ACTION IN(16), service action 0x10.
        Some(0x9e) => cdb.get(1).is_some_and(|b| b & 0x1f == 0x10),
        Some(0x4d) => cdb.get(1).is_some_and(|b| b & 0x01 == 0),
        Some(0x85) if cdb.len() == 16 => {
            cdb[14] == 0xec || (cdb[14] == 0xb0 && [0xd0, 0xda].contains(&cdb[4]))
        }
        _ => false,
    }
}

/// The data-in buffer of a command to a drive behind a controller, after
/// the rule every such path keeps: a CDB of at most 16 bytes that only
/// reads (`reads_only`), and nothing sent to the drive.
pub(crate) fn read_only_buffer<'a>(
    op: &'static str,
    cdb: &[u8],
    data: sg::Data<'a>,
) -> Result<Option<&'a mut [u8]>, PassthroughError> {
    let refuse = |detail: &str| PassthroughError::Rejected {
        op,
        detail: detail.into(),
    };
    if cdb.len() > 16 || !reads_only(cdb) {
        return Err(refuse(
            "storcert sends a drive behind a controller only commands that read",
        ));
    }
    match data {
        sg::Data::FromDevice(b) => Ok(Some(b)),
        sg::Data::None => Ok(None),
        sg::Data::ToDevice(_) => Err(refuse(
            "storcert sends nothing to a drive behind a controller",
        )),
    }
}

/// A SCSI path that refuses anything but `reads_only` commands with no
/// data to the device: how a drive that is not the run's (a member of a
/// controller's volume, reached through its sg node) is probed.
pub struct ReadsOnly<'a>(pub &'a dyn ScsiPath);

impl ScsiPath for ReadsOnly<'_> {
    fn scsi(
        &self,
        op: &'static str,
        cdb: &[u8],
        data: sg::Data<'_>,
        timeout_ms: u32,
    ) -> Result<sg::ScsiReply, PassthroughError> {
        let data = match read_only_buffer(op, cdb, data)? {
            Some(b) => sg::Data::FromDevice(b),
            None => sg::Data::None,
        };
        self.0.scsi(op, cdb, data, timeout_ms)
    }

    fn returns_ata_registers(&self) -> bool {
        self.0.returns_ata_registers()
    }
}

/// Why a passthrough command did not produce a usable answer.
#[derive(Debug, thiserror::Error)]
pub enum PassthroughError {
    /// The ioctl itself failed (ENOTTY: the driver has no such ioctl;
    /// EPERM/EACCES: not allowed; EINVAL: refused; EIO: transport error).
    #[error("{op}: {source}")]
    Ioctl {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The command reached the device, which rejected it.
    #[error("{op}: {detail}")]
    Rejected { op: &'static str, detail: String },
    /// The device answered, but with fewer or malformed bytes.
    #[error("{op}: malformed reply: {detail}")]
    Malformed { op: &'static str, detail: String },
}

impl PassthroughError {
    pub fn malformed(op: &'static str, detail: impl Into<String>) -> Self {
        PassthroughError::Malformed {
            op,
            detail: detail.into(),
        }
    }

    /// True when the failure says "this path does not exist for this
    /// device" (no such ioctl, or the command is not supported), as
    /// opposed to a device that failed a command it supports.
    pub fn is_unsupported(&self) -> bool {
        match self {
            PassthroughError::Ioctl { source, .. } => matches!(
                tape::errno_of(source),
                Some(libc::ENOTTY) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
            ),
            PassthroughError::Rejected { detail, .. } => {
                detail.contains("ILLEGAL REQUEST")
                    || detail.contains("not supported by the controller")
            }
            PassthroughError::Malformed { .. } => false,
        }
    }
}

/// A fixed-width ASCII field as devices fill them: space or NUL padded.
pub(crate) fn ascii_field(bytes: &[u8]) -> String {
    let text: String = bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                ' '
            }
        })
        .collect();
    // A NUL ends C strings (MFI names); everything after it is padding.
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    text[..end].trim().to_string()
}

pub(crate) fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

pub(crate) fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

pub(crate) fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

pub(crate) fn le128(b: &[u8], off: usize) -> u128 {
    u128::from_le_bytes(b[off..off + 16].try_into().expect("16 bytes"))
}

pub(crate) fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Checks that a reply holds at least `need` bytes before any decoder
/// indexes into it.
pub(crate) fn need_len(op: &'static str, buf: &[u8], need: usize) -> Result<(), PassthroughError> {
    if buf.len() < need {
        return Err(PassthroughError::malformed(
            op,
            format!("{} bytes, need at least {need}", buf.len()),
        ));
    }
    Ok(())
}

/// Lower-case hex of a byte string, as identifiers (WWN, EUI-64) are shown.
pub fn hex(bytes: &[u8]) -> String {
    struct Hex<'a>(&'a [u8]);
    impl fmt::Display for Hex<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            for b in self.0 {
                write!(f, "{b:02x}")?;
            }
            Ok(())
        }
    }
    Hex(bytes).to_string()
}

/// Issues one ioctl whose argument is a pointer to `arg`.
///
/// # Safety
/// `arg` must be the structure the driver expects for `request`, and every
/// pointer inside it must stay valid for the duration of the call.
pub(crate) unsafe fn ioctl_ptr<T>(
    fd: std::os::fd::RawFd,
    request: u64,
    arg: *mut T,
) -> std::io::Result<libc::c_int> {
    // The request parameter is c_ulong on glibc and c_int on musl.
    let rc = libc::ioctl(fd, request as _, arg);
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
