//! A pass-through device, live or played back from tape.
//!
//! Every command goes through `Device::exchange`: live, it is one ioctl on
//! the open node (and, with a recording tape, the command and the raw
//! reply are kept); from a tape, the reply recorded for the same command
//! on the same device is given back. Either way the reply is turned into
//! the caller's result by the same code, so a capture replayed here runs
//! through exactly the decoders a live machine does (`inventory
//! --capture`, `--replay`). Playing back never touches a device.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Bytes as they are written in a capture: lower-case hex.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        hex::decode(text).map_err(serde::de::Error::custom)
    }
}

/// One command as it was sent: everything that decides the reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// Opening the node (read-only, non-blocking; the MFI node read-write).
    Open,
    /// SG_IO: the CDB, the bytes sent, the length asked for.
    Scsi {
        #[serde(with = "hex_bytes")]
        cdb: Vec<u8>,
        #[serde(with = "hex_bytes", default, skip_serializing_if = "Vec::is_empty")]
        data_out: Vec<u8>,
        data_in_len: usize,
    },
    /// NVME_IOCTL_ADMIN_CMD: the submission fields storcert sets.
    NvmeAdmin {
        opcode: u8,
        nsid: u32,
        cdw10: u32,
        cdw11: u32,
        data_len: u32,
    },
    /// NVME_IOCTL_ID.
    NvmeNamespaceId,
    /// MEGASAS_IOC_FIRMWARE carrying one MFI_CMD_PD_SCSI_IO frame: a SCSI
    /// command to a physical drive behind the controller.
    MfiPdScsi {
        host: u16,
        target: u8,
        #[serde(with = "hex_bytes")]
        cdb: Vec<u8>,
        data_in_len: usize,
    },
    /// SG_IO on a bsg node (struct sg_io_v4): the request (the driver's
    /// packet), the bytes sent, the length asked for.
    Bsg {
        #[serde(with = "hex_bytes")]
        request: Vec<u8>,
        #[serde(with = "hex_bytes", default, skip_serializing_if = "Vec::is_empty")]
        data_out: Vec<u8>,
        data_in_len: usize,
    },
    /// CCISS_PASSTHRU: the 8-byte LUN address, the CDB, the transfer's
    /// direction (the XFER_* value) and the length asked for.
    Cciss {
        #[serde(with = "hex_bytes")]
        lun: Vec<u8>,
        #[serde(with = "hex_bytes")]
        cdb: Vec<u8>,
        direction: u8,
        data_in_len: usize,
    },
    /// MEGASAS_IOC_FIRMWARE carrying one DCMD frame.
    MfiDcmd {
        host: u16,
        opcode: u32,
        #[serde(with = "hex_bytes")]
        mbox: Vec<u8>,
        #[serde(with = "hex_bytes", default, skip_serializing_if = "Vec::is_empty")]
        data_out: Vec<u8>,
        data_in_len: usize,
    },
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    /// The open or the ioctl itself failed.
    Failed(Failure),
    Opened,
    Scsi {
        status: u8,
        host_status: u16,
        driver_status: u16,
        #[serde(with = "hex_bytes")]
        sense: Vec<u8>,
        resid: i32,
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
    Nvme {
        /// The ioctl's return: the NVMe status field, 0 for success.
        status: u32,
        /// Completion dword 0.
        result: u32,
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
    NamespaceId {
        nsid: u32,
    },
    Mfi {
        status: u8,
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
    /// A bsg SG_IO's answer: what the driver wrote to the data-in buffer.
    Bsg {
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
    /// CCISS_PASSTHRU's error information and data.
    Cciss {
        command_status: u16,
        scsi_status: u8,
        #[serde(with = "hex_bytes")]
        sense: Vec<u8>,
        residual: u32,
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
    /// A pass-through frame's answer: the firmware's status, the sense
    /// buffer it filled, the data.
    MfiScsi {
        status: u8,
        #[serde(with = "hex_bytes")]
        sense: Vec<u8>,
        #[serde(with = "hex_bytes")]
        data_in: Vec<u8>,
    },
}

/// A failed system call, kept so that it reads the same when replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub errno: Option<i32>,
    /// As the machine's C library wrote it (musl and glibc word errnos
    /// differently: "Not a tty", "Inappropriate ioctl for device").
    pub message: String,
}

/// A failure given back from a capture: its errno, and its words as the
/// capturing machine wrote them.
#[derive(Debug)]
struct Recorded {
    errno: Option<i32>,
    message: String,
}

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Recorded {}

/// The errno of an error, live or given back from a capture.
pub fn errno_of(e: &io::Error) -> Option<i32> {
    e.raw_os_error().or_else(|| {
        e.get_ref()?
            .downcast_ref::<Recorded>()
            .and_then(|r| r.errno)
    })
}

impl Failure {
    pub fn of(e: &io::Error) -> Failure {
        Failure {
            errno: errno_of(e),
            message: e.to_string(),
        }
    }

    /// The error again: of the errno's kind, worded as it was recorded.
    pub fn to_error(&self) -> io::Error {
        let kind = match self.errno {
            Some(n) => io::Error::from_raw_os_error(n).kind(),
            None => io::ErrorKind::Other,
        };
        io::Error::new(
            kind,
            Recorded {
                errno: self.errno,
                message: self.message.clone(),
            },
        )
    }
}

/// One command and its reply, on one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// The node it went to ("/dev/sda", "/dev/megaraid_sas_ioctl_node").
    pub device: String,
    /// What storcert called it ("INQUIRY VPD 0x80"): for the reader only.
    pub op: String,
    pub command: Command,
    pub reply: Reply,
}

/// The exchanges of one run, being recorded or played back.
#[derive(Debug)]
pub struct Tape {
    playing: bool,
    state: Mutex<TapeState>,
}

#[derive(Debug, Default)]
struct TapeState {
    exchanges: Vec<Exchange>,
    /// On playback: the exchanges not yet played, by device and command,
    /// in the order they were recorded (each is played once).
    unplayed: HashMap<(String, Command), VecDeque<usize>>,
    /// Commands asked for on playback that the tape does not hold.
    missing: Missing,
}

/// Questions a playback could not answer: counted, and the first few
/// kept (a hostile capture can make a replay ask millions).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Missing {
    pub count: usize,
    pub first: Vec<String>,
}

impl Missing {
    const KEPT: usize = 20;

    pub fn note(&mut self, what: String) {
        self.count += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(what);
        }
    }
}

impl Tape {
    /// An empty tape that records what live devices answer.
    pub fn recording() -> Arc<Tape> {
        Arc::new(Tape {
            playing: false,
            state: Mutex::default(),
        })
    }

    /// A tape that answers from `exchanges` instead of devices.
    pub fn playing(exchanges: Vec<Exchange>) -> Arc<Tape> {
        let mut unplayed: HashMap<(String, Command), VecDeque<usize>> = HashMap::new();
        for (i, x) in exchanges.iter().enumerate() {
            unplayed
                .entry((x.device.clone(), x.command.clone()))
                .or_default()
                .push_back(i);
        }
        Arc::new(Tape {
            playing: true,
            state: Mutex::new(TapeState {
                exchanges,
                unplayed,
                ..TapeState::default()
            }),
        })
    }

    pub fn is_playing(&self) -> bool {
        self.playing
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TapeState> {
        // A panic elsewhere while holding it leaves plain data behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The exchanges recorded so far.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.state().exchanges.clone()
    }

    /// The commands playback was asked for and did not hold.
    pub fn missing(&self) -> Missing {
        self.state().missing.clone()
    }

    /// The device of the first open recorded as `op`.
    pub fn device_of(&self, op: &str) -> Option<String> {
        self.state()
            .exchanges
            .iter()
            .find(|x| x.op == op && x.command == Command::Open)
            .map(|x| x.device.clone())
    }

    fn record(&self, exchange: Exchange) {
        self.state().exchanges.push(exchange);
    }

    /// The first unplayed reply to `command` on `device`. A command the
    /// tape does not hold fails as the ioctl would for a node that has
    /// no such command, and is counted as missing.
    fn play(&self, device: &str, op: &str, command: &Command) -> Reply {
        let mut st = self.state();
        let next = st
            .unplayed
            .get_mut(&(device.to_string(), command.clone()))
            .and_then(VecDeque::pop_front);
        match next {
            Some(i) => st.exchanges[i].reply.clone(),
            None => {
                st.missing.note(format!("{device}: {op}"));
                Reply::Failed(Failure {
                    errno: Some(libc::ENODATA),
                    message: "the capture holds no reply to this command".into(),
                })
            }
        }
    }
}

/// An open device node for pass-through commands, or its stand-in on a
/// tape being played.
#[derive(Debug)]
pub struct Device {
    path: String,
    /// None when playing a tape.
    file: Option<File>,
    tape: Option<Arc<Tape>>,
}

impl Device {
    /// Opens a node for probing: read-only, and non-blocking so that an
    /// empty removable drive does not hang the scan.
    pub fn open_for_probe(path: &str, tape: Option<&Arc<Tape>>) -> io::Result<Device> {
        Self::open_with(path, "open", tape, || {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
        })
    }

    /// Opens a node with `open` (live) or from the tape, which calls the
    /// open `op`.
    pub fn open_with(
        path: &str,
        op: &str,
        tape: Option<&Arc<Tape>>,
        open: impl FnOnce() -> io::Result<File>,
    ) -> io::Result<Device> {
        let mut file = None;
        let reply = Self::run(path, op, Command::Open, tape, || match open() {
            Ok(f) => {
                file = Some(f);
                Reply::Opened
            }
            Err(e) => Reply::Failed(Failure::of(&e)),
        });
        match reply {
            Reply::Opened => Ok(Device {
                path: path.to_string(),
                file,
                tape: tape.cloned(),
            }),
            Reply::Failed(f) => Err(f.to_error()),
            other => Err(io::Error::other(format!(
                "the capture holds a reply of another kind ({}) for an open",
                other.kind()
            ))),
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sends one command: `live` issues it on the open node and says what
    /// came back.
    pub(crate) fn exchange(
        &self,
        op: &str,
        command: Command,
        live: impl FnOnce(&File) -> Reply,
    ) -> Reply {
        let file = self.file.as_ref();
        Self::run(&self.path, op, command, self.tape.as_ref(), || {
            live(file.expect("a device off a playing tape is never live"))
        })
    }

    fn run(
        path: &str,
        op: &str,
        command: Command,
        tape: Option<&Arc<Tape>>,
        live: impl FnOnce() -> Reply,
    ) -> Reply {
        match tape {
            Some(t) if t.playing => t.play(path, op, &command),
            Some(t) => {
                let reply = live();
                t.record(Exchange {
                    device: path.to_string(),
                    op: op.to_string(),
                    command,
                    reply: reply.clone(),
                });
                reply
            }
            None => live(),
        }
    }
}

/// The reply a command of one kind must have; anything else (a capture
/// edited by hand) is malformed.
pub(crate) fn unexpected(op: &'static str, reply: &Reply) -> super::PassthroughError {
    super::PassthroughError::malformed(
        op,
        format!(
            "the capture holds a reply of another kind ({})",
            reply.kind()
        ),
    )
}

impl Reply {
    /// The reply's kind, as capture.json names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Failed(_) => "failed",
            Reply::Opened => "opened",
            Reply::Scsi { .. } => "scsi",
            Reply::Nvme { .. } => "nvme",
            Reply::NamespaceId { .. } => "namespace_id",
            Reply::Mfi { .. } => "mfi",
            Reply::MfiScsi { .. } => "mfi_scsi",
            Reply::Bsg { .. } => "bsg",
            Reply::Cciss { .. } => "cciss",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plays_each_recorded_reply_once_and_counts_the_missing() {
        let cmd = Command::Scsi {
            cdb: vec![0x12, 0, 0, 0, 96, 0],
            data_out: Vec::new(),
            data_in_len: 96,
        };
        let reply = Reply::Scsi {
            status: 0,
            host_status: 0,
            driver_status: 0,
            sense: Vec::new(),
            resid: 0,
            data_in: vec![1, 2, 3],
        };
        let tape = Tape::playing(vec![
            Exchange {
                device: "/dev/sda".into(),
                op: "open".into(),
                command: Command::Open,
                reply: Reply::Opened,
            },
            Exchange {
                device: "/dev/sda".into(),
                op: "INQUIRY".into(),
                command: cmd.clone(),
                reply: reply.clone(),
            },
        ]);
        let dev = Device::open_for_probe("/dev/sda", Some(&tape)).unwrap();
        assert_eq!(
            dev.exchange("INQUIRY", cmd.clone(), |_| unreachable!()),
            reply
        );
        // Asked again: the tape has no second answer.
        assert!(matches!(
            dev.exchange("INQUIRY", cmd, |_| unreachable!()),
            Reply::Failed(_)
        ));
        // Another device was never opened in the capture.
        let err = Device::open_for_probe("/dev/sdb", Some(&tape)).unwrap_err();
        assert_eq!(errno_of(&err), Some(libc::ENODATA));
        assert_eq!(
            tape.missing(),
            Missing {
                count: 2,
                first: vec!["/dev/sda: INQUIRY".to_string(), "/dev/sdb: open".into()]
            }
        );
    }

    #[test]
    fn a_failure_reads_the_same_when_replayed() {
        let e = io::Error::from_raw_os_error(libc::EACCES);
        let f = Failure::of(&e);
        let again = f.to_error();
        assert_eq!(again.to_string(), e.to_string());
        assert_eq!(again.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(errno_of(&again), Some(libc::EACCES));
        assert_eq!(Failure::of(&again), f, "recorded twice, the same");
        // Another C library's words for the errno are kept, not this one's.
        let musl = Failure {
            errno: Some(libc::ENOTTY),
            message: "Not a tty (os error 25)".into(),
        };
        assert_eq!(musl.to_error().to_string(), "Not a tty (os error 25)");
        assert_eq!(errno_of(&musl.to_error()), Some(libc::ENOTTY));
        let custom = io::Error::other("not registered");
        assert_eq!(
            Failure::of(&custom).to_error().to_string(),
            "not registered"
        );
    }

    #[test]
    fn exchanges_round_trip_through_json() {
        let x = Exchange {
            device: "/dev/megaraid_sas_ioctl_node".into(),
            op: "MFI DCMD CTRL_GET_INFO".into(),
            command: Command::MfiDcmd {
                host: 6,
                opcode: 0x0101_0000,
                mbox: vec![0; 12],
                data_out: Vec::new(),
                data_in_len: 2048,
            },
            reply: Reply::Mfi {
                status: 0,
                data_in: vec![0xab; 4],
            },
        };
        let text = serde_json::to_string(&x).unwrap();
        assert!(text.contains("\"data_in\":\"abababab\""), "{text}");
        assert_eq!(serde_json::from_str::<Exchange>(&text).unwrap(), x);
    }
}
