//! MegaRAID MFI: DCMD frames through the megaraid_sas management ioctl
//! (MEGASAS_IOC_FIRMWARE on /dev/megaraid_sas_ioctl_node), as storcli does,
//! and decoders for the replies (controller info, logical and physical
//! drive lists and details, the configuration).
//!
//! Structure layouts follow the kernel's megaraid_sas.h and the MFI
//! firmware interface (mfireg.h as carried by FreeBSD and qemu).

use super::{ascii_field, le16, le32, le64, need_len, PassthroughError};

pub const DCMD_CTRL_GET_INFO: u32 = 0x0101_0000;
pub const DCMD_PD_GET_LIST: u32 = 0x0201_0000;
pub const DCMD_PD_GET_INFO: u32 = 0x0202_0000;
pub const DCMD_LD_GET_LIST: u32 = 0x0301_0000;
pub const DCMD_LD_GET_INFO: u32 = 0x0302_0000;
pub const DCMD_LD_SET_PROP: u32 = 0x0304_0000;
pub const DCMD_CFG_READ: u32 = 0x0401_0000;
pub const DCMD_BBU_GET_STATUS: u32 = 0x0501_0000;

pub const CTRL_INFO_LEN: usize = 0x800;
pub const LD_LIST_LEN: usize = 8 + 64 * 16;
pub const LD_INFO_LEN: usize = 384;
pub const PD_LIST_LEN: usize = 8 + 256 * 24;
pub const PD_INFO_LEN: usize = 512;
pub const CFG_READ_LEN: usize = 4096;
pub const BBU_STATUS_LEN: usize = 64;

const LD_CONFIG_LEN: usize = 256;
const ARRAY_LEN: usize = 288;
const CFG_HEADER_LEN: usize = 32;

pub fn dcmd_name(opcode: u32) -> &'static str {
    match opcode {
        DCMD_CTRL_GET_INFO => "MFI CTRL_GET_INFO",
        DCMD_PD_GET_LIST => "MFI PD_GET_LIST",
        DCMD_PD_GET_INFO => "MFI PD_GET_INFO",
        DCMD_LD_GET_LIST => "MFI LD_GET_LIST",
        DCMD_LD_GET_INFO => "MFI LD_GET_INFO",
        DCMD_CFG_READ => "MFI CFG_READ",
        DCMD_LD_SET_PROP => "MFI LD_SET_PROP",
        _ => "MFI DCMD",
    }
}

/// MFI command status names for the codes a DCMD read can return.
pub fn status_name(status: u8) -> &'static str {
    match status {
        0x00 => "ok",
        0x01 => "invalid command",
        0x02 => "invalid DCMD",
        0x03 => "invalid parameter",
        0x0c => "device not found",
        0x20 => "memory not available",
        0x21 => "hardware error",
        0x22 => "no hardware present",
        0x23 => "not found",
        0x2d => "SCSI done with error",
        0x2e => "SCSI I/O failed",
        0x32 => "wrong state",
        0xff => "invalid status",
        _ => "unknown status",
    }
}

// --- decoders ------------------------------------------------------------

/// One firmware component from CTRL_GET_INFO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirmwareComponent {
    pub name: String,
    pub version: String,
    pub build_date: String,
    pub build_time: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtrlInfo {
    pub pci_vendor: u16,
    pub pci_device: u16,
    pub pci_subvendor: u16,
    pub pci_subdevice: u16,
    pub product_name: String,
    pub serial_number: String,
    pub package_version: String,
    pub components: Vec<FirmwareComponent>,
    pub bbu_present: bool,
    pub memory_size_mb: u16,
    pub lds_present: u16,
    pub lds_degraded: u16,
    pub lds_offline: u16,
    pub pds_present: u16,
    pub pds_pred_failure: u16,
    pub pds_failed: u16,
}

pub fn decode_ctrl_info(buf: &[u8]) -> Result<CtrlInfo, PassthroughError> {
    need_len("MFI CTRL_GET_INFO", buf, 0x6a0)?;
    let count = (le32(buf, 180) as usize).min(8);
    let components = (0..count)
        .map(|i| {
            let c = 184 + 72 * i;
            FirmwareComponent {
                name: ascii_field(&buf[c..c + 8]),
                version: ascii_field(&buf[c + 8..c + 40]),
                build_date: ascii_field(&buf[c + 40..c + 56]),
                build_time: ascii_field(&buf[c + 56..c + 72]),
            }
        })
        .collect();
    Ok(CtrlInfo {
        pci_vendor: le16(buf, 0),
        pci_device: le16(buf, 2),
        pci_subvendor: le16(buf, 4),
        pci_subdevice: le16(buf, 6),
        product_name: ascii_field(&buf[1344..1424]),
        serial_number: ascii_field(&buf[1424..1456]),
        package_version: ascii_field(&buf[1600..1696]),
        components,
        bbu_present: le32(buf, 1456) & 0x01 != 0,
        memory_size_mb: le16(buf, 1488),
        lds_present: le16(buf, 1472),
        lds_degraded: le16(buf, 1474),
        lds_offline: le16(buf, 1476),
        pds_present: le16(buf, 1478),
        pds_pred_failure: le16(buf, 1482),
        pds_failed: le16(buf, 1484),
    })
}

/// BBU_GET_STATUS (struct mfi_bbu_status of the public MFI definitions):
/// the battery or CacheVault and the firmware's state flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BbuStatus {
    /// 0 none, 1 iBBU, 2 BBU; later firmware uses higher numbers for
    /// CacheVault modules.
    pub battery_type: u8,
    pub voltage_mv: u16,
    pub temperature_c: u16,
    pub fw_status: u32,
    /// A BBU's own state-of-health bit (type 2 only).
    pub state_of_health_good: Option<bool>,
}

impl BbuStatus {
    const FLAGS: [&'static str; 13] = [
        "pack missing",
        "voltage low",
        "temperature high",
        "charging",
        "discharging",
        "learn cycle requested",
        "learn cycle active",
        "learn cycle failed",
        "learn cycle timed out",
        "I2C errors",
        "replace pack",
        "capacity low",
        "learn required",
    ];
    /// The flags that leave a cache unprotected (MFI_BBU_STATE_BAD_IBBU
    /// and _BAD_BBU): an iBBU is also unprotected while it discharges or
    /// learns.
    const BAD_IBBU: u32 = 1 | 1 << 1 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 10 | 1 << 11;
    const BAD_BBU: u32 = 1 | 1 << 10 | 1 << 11;

    pub fn present(&self) -> bool {
        self.battery_type != 0 && self.fw_status & 1 == 0
    }

    pub fn healthy(&self) -> bool {
        let bad = if self.battery_type == 1 {
            Self::BAD_IBBU
        } else {
            Self::BAD_BBU
        };
        self.present() && self.fw_status & bad == 0 && self.state_of_health_good != Some(false)
    }

    /// The state flags in words, "normal" when none is set.
    pub fn state(&self) -> String {
        let mut words: Vec<String> = Self::FLAGS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.fw_status & (1 << i) != 0)
            .map(|(_, w)| w.to_string())
            .collect();
        let unknown = self.fw_status & !((1 << Self::FLAGS.len()) - 1);
        if unknown != 0 {
            words.push(format!("flags {unknown:#x}"));
        }
        if self.state_of_health_good == Some(false) {
            words.push("state of health bad".into());
        }
        if words.is_empty() {
            "normal".into()
        } else {
            words.join(", ")
        }
    }
}

pub fn decode_bbu_status(buf: &[u8]) -> Result<BbuStatus, PassthroughError> {
    need_len("MFI BBU_GET_STATUS", buf, BBU_STATUS_LEN)?;
    let battery_type = buf[0];
    Ok(BbuStatus {
        battery_type,
        voltage_mv: le16(buf, 2),
        temperature_c: le16(buf, 6),
        fw_status: le32(buf, 8),
        // detail.bbu.is_SOH_good, after five 16-bit words.
        state_of_health_good: (battery_type == 2).then(|| buf[32 + 10] != 0),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdListEntry {
    pub target_id: u8,
    pub state: u8,
    pub size_blocks: u64,
}

pub fn decode_ld_list(buf: &[u8]) -> Result<Vec<LdListEntry>, PassthroughError> {
    const OP: &str = "MFI LD_GET_LIST";
    need_len(OP, buf, 8)?;
    let count = le32(buf, 0) as usize;
    if count > 64 || 8 + count * 16 > buf.len() {
        return Err(PassthroughError::malformed(
            OP,
            format!("{count} logical drives do not fit in {} bytes", buf.len()),
        ));
    }
    Ok((0..count)
        .map(|i| {
            let e = 8 + 16 * i;
            LdListEntry {
                target_id: buf[e],
                state: buf[e + 4],
                size_blocks: le64(buf, e + 8),
            }
        })
        .collect())
}

/// A logical drive's cache policy byte (MR_LD_CACHE_* bits), decoded into
/// the words storcli and perccli print ("WT NORA Direct").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy(pub u8);

impl CachePolicy {
    pub const WRITE_BACK: u8 = 0x01;
    pub const WRITE_ADAPTIVE: u8 = 0x02;
    pub const READ_AHEAD: u8 = 0x04;
    pub const READ_ADAPTIVE: u8 = 0x08;
    pub const WRITE_CACHE_BAD_BBU: u8 = 0x10;
    pub const ALLOW_WRITE_CACHE: u8 = 0x20;
    pub const ALLOW_READ_CACHE: u8 = 0x40;

    /// WT, WB, or AWB (write back even with a bad battery).
    pub fn write(self) -> &'static str {
        if self.0 & Self::WRITE_BACK == 0 {
            "WT"
        } else if self.0 & Self::WRITE_CACHE_BAD_BBU != 0 {
            "AWB"
        } else {
            "WB"
        }
    }

    /// NORA, RA, or ADRA (adaptive read ahead).
    pub fn read(self) -> &'static str {
        if self.0 & (Self::READ_AHEAD | Self::READ_ADAPTIVE) == 0 {
            "NORA"
        } else if self.0 & Self::READ_ADAPTIVE != 0 {
            "ADRA"
        } else {
            "RA"
        }
    }

    /// Direct or Cached I/O (whether the controller cache holds I/O data).
    pub fn io(self) -> &'static str {
        match self.0 & (Self::ALLOW_READ_CACHE | Self::ALLOW_WRITE_CACHE) {
            0 => "Direct",
            x if x == Self::ALLOW_READ_CACHE | Self::ALLOW_WRITE_CACHE => "Cached",
            Self::ALLOW_READ_CACHE => "Cached-reads",
            _ => "Cached-writes",
        }
    }

    pub fn summary(self) -> String {
        format!("{} {} {}", self.write(), self.read(), self.io())
    }
}

pub fn disk_cache_policy_name(v: u8) -> &'static str {
    match v {
        0 => "Default",
        1 => "Enabled",
        2 => "Disabled",
        _ => "Unknown",
    }
}

pub fn ld_state_name(v: u8) -> &'static str {
    match v {
        0 => "Offline",
        1 => "Partially Degraded",
        2 => "Degraded",
        3 => "Optimal",
        _ => "Unknown",
    }
}

pub fn pd_state_name(v: u16) -> &'static str {
    match v {
        0x00 => "Unconfigured Good",
        0x01 => "Unconfigured Bad",
        0x02 => "Hot Spare",
        0x10 => "Offline",
        0x11 => "Failed",
        0x14 => "Rebuild",
        0x18 => "Online",
        0x20 => "Copyback",
        0x40 => "JBOD",
        _ => "Unknown",
    }
}

/// The part of a logical drive's configuration that LD_GET_INFO and
/// CFG_READ both carry (struct mfi_ld_config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdConfig {
    pub target_id: u8,
    pub name: String,
    pub default_cache_policy: CachePolicy,
    pub current_cache_policy: CachePolicy,
    pub access_policy: u8,
    pub disk_cache_policy: u8,
    pub primary_raid_level: u8,
    pub secondary_raid_level: u8,
    /// Strip size as 2^n × 512 bytes.
    pub stripe_size_exp: u8,
    pub num_drives: u8,
    pub span_depth: u8,
    pub state: u8,
}

impl LdConfig {
    /// RAID level as people write it: RAID0/1/5/6, RAID10/50/60 when spanned.
    pub fn raid_level(&self) -> String {
        let primary = match self.primary_raid_level {
            0x11 => "1E".to_string(),
            n => n.to_string(),
        };
        if self.span_depth > 1 {
            format!("RAID{primary}0")
        } else {
            format!("RAID{primary}")
        }
    }

    pub fn strip_size_bytes(&self) -> Option<u64> {
        (self.stripe_size_exp < 32).then(|| 512u64 << self.stripe_size_exp)
    }

    pub fn access_name(&self) -> &'static str {
        match self.access_policy & 0x03 {
            0 => "RW",
            2 => "RO",
            3 => "Blocked",
            _ => "Unknown",
        }
    }
}

fn decode_ld_config(buf: &[u8]) -> LdConfig {
    LdConfig {
        target_id: buf[0],
        name: ascii_field(&buf[4..20]),
        default_cache_policy: CachePolicy(buf[20]),
        access_policy: buf[21],
        disk_cache_policy: buf[22],
        current_cache_policy: CachePolicy(buf[23]),
        primary_raid_level: buf[32],
        secondary_raid_level: buf[34],
        stripe_size_exp: buf[35],
        num_drives: buf[36],
        span_depth: buf[37],
        state: buf[38],
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdInfo {
    pub config: LdConfig,
    pub size_blocks: u64,
}

/// The 32-byte mfi_ld_props of a logical drive, as LD_GET_INFO's first
/// bytes carry it, with the write policy changed (and the read and I/O
/// policies where given), ready for LD_SET_PROP.
pub fn props_with_policy(
    ld_info: &[u8],
    write: Option<&str>,
    read: Option<&str>,
    io: Option<&str>,
) -> Result<Vec<u8>, PassthroughError> {
    need_len("MFI LD_SET_PROP", ld_info, 32)?;
    let mut props = ld_info[..32].to_vec();
    let mut p = props[20];
    if let Some(w) = write {
        p &= !(CachePolicy::WRITE_BACK | CachePolicy::WRITE_CACHE_BAD_BBU);
        match w.to_ascii_uppercase().as_str() {
            "WB" => p |= CachePolicy::WRITE_BACK,
            "AWB" => p |= CachePolicy::WRITE_BACK | CachePolicy::WRITE_CACHE_BAD_BBU,
            _ => {}
        }
    }
    if let Some(r) = read {
        p &= !(CachePolicy::READ_AHEAD | CachePolicy::READ_ADAPTIVE);
        match r.to_ascii_uppercase().as_str() {
            "RA" => p |= CachePolicy::READ_AHEAD,
            "ADRA" => p |= CachePolicy::READ_AHEAD | CachePolicy::READ_ADAPTIVE,
            _ => {}
        }
    }
    if let Some(i) = io {
        p &= !(CachePolicy::ALLOW_READ_CACHE | CachePolicy::ALLOW_WRITE_CACHE);
        if i.eq_ignore_ascii_case("cached") {
            p |= CachePolicy::ALLOW_READ_CACHE | CachePolicy::ALLOW_WRITE_CACHE;
        }
    }
    // The default policy is what the controller applies (and reports as
    // current once the battery allows).
    props[20] = p;
    props[23] = p;
    Ok(props)
}

pub fn decode_ld_info(buf: &[u8]) -> Result<LdInfo, PassthroughError> {
    need_len("MFI LD_GET_INFO", buf, LD_INFO_LEN)?;
    Ok(LdInfo {
        config: decode_ld_config(&buf[..LD_CONFIG_LEN]),
        size_blocks: le64(buf, 256),
    })
}

/// CFG_READ: the logical drive configurations, and how the header's
/// element sizes were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigData {
    pub logical_drives: Vec<LdConfig>,
    /// Set when the header gave total sizes of the array and logical drive
    /// sections instead of per-element sizes (qemu's emulation does).
    pub note: Option<String>,
}

pub fn decode_config(buf: &[u8]) -> Result<ConfigData, PassthroughError> {
    const OP: &str = "MFI CFG_READ";
    need_len(OP, buf, CFG_HEADER_LEN)?;
    let size = le32(buf, 0) as usize;
    let array_count = le16(buf, 4) as usize;
    let array_size = le16(buf, 6) as usize;
    let ld_count = le16(buf, 8) as usize;
    let ld_size = le16(buf, 10) as usize;
    let spares_count = le16(buf, 12) as usize;
    let spares_size = le16(buf, 14) as usize;

    // The firmware interface gives the size of one element of each
    // section; qemu gives the size of the whole section. The header's total
    // size tells which one this reply uses.
    let per_element =
        CFG_HEADER_LEN + array_count * array_size + ld_count * ld_size + spares_count * spares_size;
    let totals = CFG_HEADER_LEN + array_size + ld_size + spares_count * spares_size;
    let (array_stride, ld_stride, note) = if size == per_element {
        (array_size, ld_size, None)
    } else if size == totals && array_count > 0 && ld_count > 0 {
        (
            array_size / array_count,
            ld_size / ld_count,
            Some(format!(
                "CFG_READ header gives section totals ({array_size} bytes for {array_count} arrays, \
                 {ld_size} for {ld_count} logical drives) instead of element sizes; decoded as totals"
            )),
        )
    } else {
        return Err(PassthroughError::malformed(
            OP,
            format!("header size {size} matches neither element nor total section sizes"),
        ));
    };
    if ld_stride < LD_CONFIG_LEN || (array_count > 0 && array_stride < ARRAY_LEN) {
        return Err(PassthroughError::malformed(
            OP,
            format!("element sizes {array_stride}/{ld_stride} are smaller than the structures"),
        ));
    }
    let ld_start = CFG_HEADER_LEN + array_count * array_stride;
    need_len(OP, buf, ld_start + ld_count * ld_stride)?;
    let logical_drives = (0..ld_count)
        .map(|i| decode_ld_config(&buf[ld_start + i * ld_stride..]))
        .collect();
    Ok(ConfigData {
        logical_drives,
        note,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdListEntry {
    pub device_id: u16,
    pub enclosure_device_id: u16,
    pub slot: u8,
    pub scsi_dev_type: u8,
    pub sas_address: u64,
}

pub fn decode_pd_list(buf: &[u8]) -> Result<Vec<PdListEntry>, PassthroughError> {
    const OP: &str = "MFI PD_GET_LIST";
    need_len(OP, buf, 8)?;
    let count = le32(buf, 4) as usize;
    if count > 256 || 8 + count * 24 > buf.len() {
        return Err(PassthroughError::malformed(
            OP,
            format!("{count} physical drives do not fit in {} bytes", buf.len()),
        ));
    }
    Ok((0..count)
        .map(|i| {
            let e = 8 + 24 * i;
            PdListEntry {
                device_id: le16(buf, e),
                enclosure_device_id: le16(buf, e + 2),
                slot: buf[e + 5],
                scsi_dev_type: buf[e + 6],
                sas_address: le64(buf, e + 8),
            }
        })
        .collect())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdInfo {
    pub device_id: u16,
    /// Standard INQUIRY data as the controller read it from the drive.
    pub inquiry: Vec<u8>,
    /// VPD page 0x83 as the controller read it.
    pub vpd83: Vec<u8>,
    pub media_errors: u32,
    pub other_errors: u32,
    pub predictive_failures: u32,
    pub fw_state: u16,
    pub interface: &'static str,
    pub raw_size_blocks: u64,
    pub coerced_size_blocks: u64,
    pub enclosure_device_id: u16,
    pub slot: u8,
}

pub fn decode_pd_info(buf: &[u8]) -> Result<PdInfo, PassthroughError> {
    need_len("MFI PD_GET_INFO", buf, PD_INFO_LEN)?;
    let pd_type = le16(buf, 188);
    let interface = if pd_type & (1 << 13) != 0 {
        "SAS"
    } else if pd_type & ((1 << 14) | (1 << 15)) != 0 {
        "SATA"
    } else if pd_type & (1 << 12) != 0 {
        "SPI"
    } else {
        "unknown"
    };
    Ok(PdInfo {
        device_id: le16(buf, 0),
        inquiry: buf[4..100].to_vec(),
        vpd83: buf[100..164].to_vec(),
        media_errors: le32(buf, 168),
        other_errors: le32(buf, 172),
        predictive_failures: le32(buf, 176),
        fw_state: le16(buf, 184),
        interface,
        raw_size_blocks: le64(buf, 232),
        coerced_size_blocks: le64(buf, 248),
        enclosure_device_id: le16(buf, 256),
        slot: buf[259],
    })
}

// The transport (frames, the ioctl, the node) is a file of its own.
mod node;
pub use node::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bbu_status_in_words_and_health() {
        let mut raw = vec![0u8; BBU_STATUS_LEN];
        raw[0] = 2; // BBU
        raw[2..4].copy_from_slice(&4012u16.to_le_bytes());
        raw[6..8].copy_from_slice(&31u16.to_le_bytes());
        raw[32 + 10] = 1; // state of health good
        let s = decode_bbu_status(&raw).unwrap();
        assert!(s.present() && s.healthy());
        assert_eq!(s.state(), "normal");
        // Charging is no fault of a BBU; a learn cycle is one of an iBBU's.
        raw[8] = 1 << 3 | 1 << 6;
        let s = decode_bbu_status(&raw).unwrap();
        assert!(s.healthy(), "{}", s.state());
        assert_eq!(s.state(), "charging, learn cycle active");
        raw[0] = 1;
        assert!(!decode_bbu_status(&raw).unwrap().healthy());
        // Replace pack, and a flag nobody has named.
        raw[0] = 2;
        raw[8..12].copy_from_slice(&(1u32 << 10 | 1 << 20).to_le_bytes());
        let s = decode_bbu_status(&raw).unwrap();
        assert!(s.present() && !s.healthy());
        assert_eq!(s.state(), "replace pack, flags 0x100000");
        // Pack missing: not present at all; a bad state of health.
        raw[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert!(!decode_bbu_status(&raw).unwrap().present());
        raw[8..12].copy_from_slice(&0u32.to_le_bytes());
        raw[42] = 0;
        let s = decode_bbu_status(&raw).unwrap();
        assert!(!s.healthy());
        assert_eq!(s.state(), "state of health bad");
        assert!(decode_bbu_status(&raw[..63]).is_err());
    }

    #[test]
    fn a_drive_behind_the_controller_is_sent_only_what_reads() {
        use super::super::sg::Data;
        use super::super::tape::{Command, Exchange, Reply, Tape};
        use super::super::{reads_only, ScsiPath};
        let tape = Tape::playing(vec![Exchange {
            device: IOCTL_NODE.into(),
            op: OPEN_OP.into(),
            command: Command::Open,
            reply: Reply::Opened,
        }]);
        let node = MfiNode::open(Some(&tape)).unwrap();
        let path = PdPath {
            node: &node,
            host: 0,
            target: 0,
        };
        for (what, cdb) in [
            ("MODE SELECT(10)", vec![0x55, 0x10, 0, 0, 0, 0, 0, 0, 20, 0]),
            (
                "LOG SENSE saving parameters",
                vec![0x4d, 0x01, 0x6f, 0, 0, 0, 0, 1, 0, 0],
            ),
            ("WRITE(10)", vec![0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
            ("SYNCHRONIZE CACHE", vec![0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            // ATA PASS-THROUGH(16) carrying SMART ENABLE OPERATIONS (0xd8).
            ("SMART ENABLE", {
                let mut c = vec![
                    0x85, 0x06, 0x20, 0, 0xd8, 0, 0, 0, 0, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0,
                ];
                c.truncate(16);
                c
            }),
            ("a CDB past 16 bytes", vec![0x12; 17]),
        ] {
            assert!(!reads_only(&cdb) || cdb.len() > 16, "{what}");
            let mut buf = [0u8; 32];
            let r = path.scsi("test", &cdb, Data::FromDevice(&mut buf), 1000);
            assert!(r.is_err(), "{what} was sent");
        }
        // Refused before the tape is asked: nothing is missing from it.
        assert_eq!(tape.missing().count, 0);
        for cdb in [
            vec![0x12, 0, 0, 0, 96, 0],
            vec![0x5a, 0x08, 0x08, 0, 0, 0, 0, 0, 0xfc, 0],
            vec![0x4d, 0, 0x6f, 0, 0, 0, 0, 1, 0, 0],
        ] {
            assert!(reads_only(&cdb), "{cdb:02x?}");
        }
    }

    #[test]
    fn a_pass_through_frame_is_laid_out_as_the_kernel_reads_it() {
        // struct megasas_pass_thru_frame: cmd, sense_len, cmd_status,
        // scsi_status, target_id, lun, cdb_len, sge_count at 0..8; flags
        // at 16, data_xfer_len at 20, sense address at 24, cdb at 32.
        let cdb = [0x12, 0x01, 0x80, 0x01, 0x00, 0x00];
        let f = pd_scsi_frame(7, &cdb, 256, 10_000, 0x1122_3344_5566_7788);
        assert_eq!(&f[..8], &[0x04, 64, 0xff, 0, 7, 0, 6, 1]);
        assert_eq!(le16(&f, 16), MFI_FRAME_DIR_READ);
        assert_eq!(le16(&f, 18), 10, "the firmware's timeout, seconds");
        assert_eq!(le32(&f, 20), 256);
        assert_eq!(
            u64::from_ne_bytes(f[24..32].try_into().unwrap()),
            0x1122_3344_5566_7788
        );
        assert_eq!(&f[32..38], &cdb);
        assert!(f[38..].iter().all(|&b| b == 0));
        // No data phase: no SGE, no direction.
        let none = pd_scsi_frame(7, &[0x85; 16], 0, 10_000, 0);
        assert_eq!((none[7], le16(&none, 16)), (0, MFI_FRAME_DIR_NONE));
    }

    #[test]
    fn ioc_packet_matches_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<IocPacket>(), 404);
        assert_eq!(MEGASAS_IOC_FIRMWARE, 0xc194_4d01);
    }

    #[test]
    fn cache_policy_words() {
        assert_eq!(CachePolicy(0x00).summary(), "WT NORA Direct");
        assert_eq!(CachePolicy(0x0c).summary(), "WT ADRA Direct");
        assert_eq!(CachePolicy(0x05).summary(), "WB RA Direct");
        assert_eq!(CachePolicy(0x11 | 0x60).summary(), "AWB NORA Cached");
        assert_eq!(CachePolicy(0x40).io(), "Cached-reads");
    }

    #[test]
    fn sets_policy_bits() {
        let mut info = vec![0u8; LD_INFO_LEN];
        info[20] = 0x0c; // RA + adaptive
        let p = props_with_policy(&info, Some("WB"), Some("NORA"), Some("Direct")).unwrap();
        assert_eq!(CachePolicy(p[20]).summary(), "WB NORA Direct");
        assert_eq!(p[23], p[20]);
        let p = props_with_policy(&info, Some("WT"), None, Some("Cached")).unwrap();
        assert_eq!(CachePolicy(p[20]).summary(), "WT ADRA Cached");
    }

    #[test]
    fn finds_ioctl_major() {
        let text =
            "Character devices:\n  1 mem\n246 megaraid_sas_ioctl\n\nBlock devices:\n  8 sd\n";
        assert_eq!(driver_char_major(text), Some(246));
        assert_eq!(driver_char_major("Character devices:\n  1 mem\n"), None);
    }

    #[test]
    fn ld_list_rejects_impossible_counts() {
        let mut b = vec![0u8; LD_LIST_LEN];
        b[0..4].copy_from_slice(&65u32.to_le_bytes());
        assert!(decode_ld_list(&b).is_err());
        b[0..4].copy_from_slice(&2u32.to_le_bytes());
        assert!(decode_ld_list(&b[..20]).is_err());
        b[8] = 0;
        b[12] = 3;
        b[24] = 1;
        b[28] = 2;
        let list = decode_ld_list(&b).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].target_id, 1);
        assert_eq!(ld_state_name(list[1].state), "Degraded");
    }

    #[test]
    fn config_rejects_inconsistent_header() {
        let mut b = vec![0u8; 64];
        b[0..4].copy_from_slice(&9999u32.to_le_bytes());
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        b[6..8].copy_from_slice(&288u16.to_le_bytes());
        b[8..10].copy_from_slice(&1u16.to_le_bytes());
        b[10..12].copy_from_slice(&256u16.to_le_bytes());
        assert!(decode_config(&b).is_err());
    }
}
