//! ATA commands through SAT's ATA PASS-THROUGH(16): IDENTIFY DEVICE and
//! SMART (READ DATA, RETURN STATUS). libata translates these for SATA disks
//! on AHCI; SAS HBAs translate them for SATA disks behind them. A USB
//! bridge without SAT, or a RAID controller's logical drive, rejects them.

use super::sg::{Data, STATUS_CHECK_CONDITION, STATUS_GOOD};
use super::{ascii_field, le16, le64, need_len, PassthroughError, ScsiPath};

const TIMEOUT_MS: u32 = 15_000;

/// What IDENTIFY DEVICE says that the inventory uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identify {
    pub model: String,
    pub serial: String,
    pub firmware: String,
    /// NAA WWN from words 108-111, as "0x" + 16 hex digits.
    pub wwn: Option<String>,
    pub sectors: u64,
    pub logical_sector_size: u32,
    pub physical_sector_size: u32,
    /// Nominal media rotation rate: Some(0) for non-rotating media.
    pub rotation_rpm: Option<u16>,
    pub write_cache_supported: bool,
    pub write_cache_enabled: bool,
    pub smart_supported: bool,
    pub smart_enabled: bool,
}

/// ATA strings store two characters per word, high byte first.
fn ata_string(words: &[u8]) -> String {
    let mut swapped = Vec::with_capacity(words.len());
    for pair in words.chunks(2) {
        if pair.len() == 2 {
            swapped.push(pair[1]);
            swapped.push(pair[0]);
        }
    }
    ascii_field(&swapped)
}

fn word(buf: &[u8], n: usize) -> u16 {
    le16(buf, n * 2)
}

/// A word is meaningful only when bit 15 is 0 and bit 14 is 1.
fn valid(w: u16) -> bool {
    w & 0xc000 == 0x4000
}

pub fn decode_identify(buf: &[u8]) -> Result<Identify, PassthroughError> {
    need_len("ATA IDENTIFY", buf, 512)?;
    let w83 = word(buf, 83);
    let lba48 = valid(w83) && w83 & (1 << 10) != 0;
    let sectors = if lba48 {
        le64(buf, 100 * 2)
    } else {
        (word(buf, 60) as u64) | ((word(buf, 61) as u64) << 16)
    };
    let w106 = word(buf, 106);
    let mut logical = 512u32;
    let mut physical = 512u32;
    if valid(w106) {
        if w106 & (1 << 12) != 0 {
            let words = (word(buf, 117) as u32) | ((word(buf, 118) as u32) << 16);
            logical = words
                .checked_mul(2)
                .filter(|b| (512..=1 << 20).contains(b))
                .ok_or_else(|| {
                    PassthroughError::malformed(
                        "ATA IDENTIFY",
                        format!(
                            "words 117-118 give an implausible logical sector of {words} words"
                        ),
                    )
                })?;
        }
        physical = if w106 & (1 << 13) != 0 {
            logical
                .checked_shl((w106 & 0x0f) as u32)
                .filter(|b| *b <= 1 << 24)
                .ok_or_else(|| {
                    PassthroughError::malformed(
                        "ATA IDENTIFY",
                        "word 106 gives an implausible physical sector size",
                    )
                })?
        } else {
            logical
        };
    }
    let w217 = word(buf, 217);
    let rotation_rpm = match w217 {
        0x0001 => Some(0),
        0x0401..=0xfffe => Some(w217),
        _ => None,
    };
    let w84 = word(buf, 84);
    let wwn = if valid(w84) && w84 & (1 << 8) != 0 {
        let mut v = 0u64;
        for n in 108..112 {
            v = (v << 16) | word(buf, n) as u64;
        }
        (v != 0).then(|| format!("0x{v:016x}"))
    } else {
        None
    };
    let w82 = word(buf, 82);
    let w85 = word(buf, 85);
    // Words 82-85 are valid unless they read 0x0000 or 0xffff.
    let feature_words_ok = w82 != 0 && w82 != 0xffff;
    Ok(Identify {
        serial: ata_string(&buf[10 * 2..20 * 2]),
        firmware: ata_string(&buf[23 * 2..27 * 2]),
        model: ata_string(&buf[27 * 2..47 * 2]),
        wwn,
        sectors,
        logical_sector_size: logical,
        physical_sector_size: physical,
        rotation_rpm,
        write_cache_supported: feature_words_ok && w82 & (1 << 5) != 0,
        write_cache_enabled: feature_words_ok && w85 & (1 << 5) != 0,
        smart_supported: feature_words_ok && w82 & 1 != 0,
        smart_enabled: feature_words_ok && w85 & 1 != 0,
    })
}

/// One SMART attribute from the READ DATA page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmartAttribute {
    pub id: u8,
    pub flags: u16,
    pub current: u8,
    pub worst: u8,
    /// The 48-bit raw value (vendor-defined; for the attributes storcert
    /// interprets, the low 32 bits are a count).
    pub raw: u64,
}

pub fn decode_smart_data(buf: &[u8]) -> Result<Vec<SmartAttribute>, PassthroughError> {
    need_len("ATA SMART READ DATA", buf, 512)?;
    let checksum = buf[..512].iter().fold(0u8, |a, &b| a.wrapping_add(b));
    if checksum != 0 {
        return Err(PassthroughError::malformed(
            "ATA SMART READ DATA",
            format!("checksum byte is off by 0x{checksum:02x}"),
        ));
    }
    let mut attrs = Vec::new();
    for i in 0..30 {
        let e = &buf[2 + i * 12..2 + (i + 1) * 12];
        if e[0] == 0 {
            continue;
        }
        let mut raw = 0u64;
        for (k, &b) in e[5..11].iter().enumerate() {
            raw |= (b as u64) << (8 * k);
        }
        attrs.push(SmartAttribute {
            id: e[0],
            flags: le16(e, 1),
            current: e[3],
            worst: e[4],
            raw,
        });
    }
    Ok(attrs)
}

/// The verdict of SMART RETURN STATUS, from the LBA mid/high registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmartStatus {
    Passed,
    ThresholdExceeded,
}

pub fn decode_smart_status(lba_mid: u8, lba_high: u8) -> Result<SmartStatus, PassthroughError> {
    match (lba_mid, lba_high) {
        (0x4f, 0xc2) => Ok(SmartStatus::Passed),
        (0xf4, 0x2c) => Ok(SmartStatus::ThresholdExceeded),
        (m, h) => Err(PassthroughError::malformed(
            "ATA SMART RETURN STATUS",
            format!("unexpected LBA mid/high 0x{m:02x}/0x{h:02x}"),
        )),
    }
}

// --- transport -----------------------------------------------------------

/// ATA PASS-THROUGH(16), PIO data-in of one 512-byte sector.
fn pio_in(
    dev: &dyn ScsiPath,
    op: &'static str,
    command: u8,
    features: u8,
    lba_mid: u8,
    lba_high: u8,
) -> Result<Vec<u8>, PassthroughError> {
    let cdb = [
        0x85,
        4 << 1, // protocol 4: PIO data-in
        0x0e,   // T_DIR from device, BYT_BLOK, T_LENGTH in sector count
        0,
        features,
        0,
        1, // sector count
        0,
        0, // LBA low
        0,
        lba_mid,
        0,
        lba_high,
        0, // device
        command,
        0,
    ];
    let mut buf = vec![0u8; 512];
    let reply = dev.scsi(op, &cdb, Data::FromDevice(&mut buf), TIMEOUT_MS)?;
    // Some SATLs report CHECK CONDITION with RECOVERED ERROR / "ATA
    // pass-through information available" on success; that is not a
    // failure.
    if reply.status == STATUS_CHECK_CONDITION {
        if let Some(s) = reply.sense_summary() {
            if s.key == 0x01 && s.asc == 0x00 && s.ascq == 0x1d {
                return Ok(buf);
            }
        }
    }
    reply.check(op)?;
    Ok(buf)
}

pub fn identify(dev: &dyn ScsiPath) -> Result<Vec<u8>, PassthroughError> {
    pio_in(dev, "ATA IDENTIFY", 0xec, 0, 0, 0)
}

pub fn smart_read_data(dev: &dyn ScsiPath) -> Result<Vec<u8>, PassthroughError> {
    pio_in(dev, "ATA SMART READ DATA", 0xb0, 0xd0, 0x4f, 0xc2)
}

/// SMART RETURN STATUS: a non-data command whose answer is in the
/// registers, which come back in the ATA Status Return sense descriptor
/// (CK_COND=1 asks for it).
pub fn smart_return_status(dev: &dyn ScsiPath) -> Result<SmartStatus, PassthroughError> {
    const OP: &str = "ATA SMART RETURN STATUS";
    let cdb = [
        0x85,
        3 << 1,
        0x20,
        0,
        0xda,
        0,
        0,
        0,
        0,
        0,
        0x4f,
        0,
        0xc2,
        0,
        0xb0,
        0,
    ];
    let reply = dev.scsi(OP, &cdb, Data::None, TIMEOUT_MS)?;
    let sense = reply.sense_summary();
    if let Some(desc) = sense.as_ref().and_then(|s| s.descriptor(0x09)) {
        if desc.len() >= 14 {
            return decode_smart_status(desc[9], desc[11]);
        }
    }
    // Fixed-format sense (some SATLs): LBA mid/high in the command-specific
    // information bytes.
    if let Some(raw) = reply.sense.get(..18) {
        if raw[0] & 0x7f == 0x70 && reply.status == STATUS_CHECK_CONDITION {
            if let Ok(status) = decode_smart_status(raw[9], raw[10]) {
                return Ok(status);
            }
        }
    }
    if reply.status == STATUS_GOOD {
        return Err(PassthroughError::malformed(
            OP,
            "the SATL returned no ATA registers",
        ));
    }
    reply.check(OP)?;
    Err(PassthroughError::malformed(
        OP,
        "no ATA status return descriptor",
    ))
}

/// Byte fixtures for tests here and in the layers above (the RAID
/// families' tests play IDENTIFY pages through their own passthroughs).
#[doc(hidden)]
pub mod fixtures {
    /// Builds an IDENTIFY page the way a drive fills it.
    pub fn identify_page(model: &str, serial: &str, fw: &str, wce: bool) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        let mut put_str = |first_word: usize, words: usize, s: &str| {
            let padded = format!("{s:<width$}", width = words * 2);
            for (k, pair) in padded.as_bytes().chunks(2).enumerate() {
                b[(first_word + k) * 2] = pair[1];
                b[(first_word + k) * 2 + 1] = pair[0];
            }
        };
        put_str(10, 10, serial);
        put_str(23, 4, fw);
        put_str(27, 20, model);
        let mut set = |w: usize, v: u16| b[w * 2..w * 2 + 2].copy_from_slice(&v.to_le_bytes());
        set(60, 0xffff);
        set(61, 0x0fff);
        set(82, 0x7429);
        set(83, 0x7400 | (1 << 10));
        set(84, 0x4000 | (1 << 8));
        set(85, 0x7409 | if wce { 1 << 5 } else { 0 });
        set(100, 0x6db0);
        set(101, 0x37e4);
        set(106, 0x6003); // 8 logical per physical
        set(108, 0x5002);
        set(109, 0x538e);
        set(110, 0x4010);
        set(111, 0x2345);
        set(217, 1);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::identify_page;
    use super::*;

    #[test]
    fn decodes_identify() {
        let page = identify_page(
            "SAMSUNG MZ7KM480HAHP-00005",
            "S2HSNX0H400123",
            "GXM1003Q",
            false,
        );
        let id = decode_identify(&page).unwrap();
        assert_eq!(id.model, "SAMSUNG MZ7KM480HAHP-00005");
        assert_eq!(id.serial, "S2HSNX0H400123");
        assert_eq!(id.firmware, "GXM1003Q");
        assert_eq!(id.sectors, 0x37e4_6db0);
        assert_eq!(id.logical_sector_size, 512);
        assert_eq!(id.physical_sector_size, 4096);
        assert_eq!(id.rotation_rpm, Some(0));
        assert_eq!(id.wwn.as_deref(), Some("0x5002538e40102345"));
        assert!(id.write_cache_supported);
        assert!(!id.write_cache_enabled);
        assert!(id.smart_supported && id.smart_enabled);
        let on = decode_identify(&identify_page("M", "S", "F", true)).unwrap();
        assert!(on.write_cache_enabled);
    }

    #[test]
    fn truncated_identify_is_an_error() {
        let err = decode_identify(&[0u8; 100]).unwrap_err().to_string();
        assert_eq!(
            err,
            "ATA IDENTIFY: malformed reply: 100 bytes, need at least 512"
        );
    }

    #[test]
    fn decodes_smart_attributes_with_checksum() {
        let mut b = vec![0u8; 512];
        // attribute 5, raw 3; attribute 9, raw 12345
        b[2..14].copy_from_slice(&[5, 0x33, 0, 100, 100, 3, 0, 0, 0, 0, 0, 0]);
        b[14..26].copy_from_slice(&[9, 0x32, 0, 99, 99, 0x39, 0x30, 0, 0, 0, 0, 0]);
        let sum = b[..511].iter().fold(0u8, |a, &x| a.wrapping_add(x));
        b[511] = 0u8.wrapping_sub(sum);
        let attrs = decode_smart_data(&b).unwrap();
        assert_eq!(attrs.len(), 2);
        assert_eq!(attrs[0].id, 5);
        assert_eq!(attrs[0].raw, 3);
        assert_eq!(attrs[1].raw, 12345);
        b[100] ^= 1;
        assert!(decode_smart_data(&b).is_err());
    }

    #[test]
    fn smart_status_registers() {
        assert_eq!(
            decode_smart_status(0x4f, 0xc2).unwrap(),
            SmartStatus::Passed
        );
        assert_eq!(
            decode_smart_status(0xf4, 0x2c).unwrap(),
            SmartStatus::ThresholdExceeded
        );
        assert!(decode_smart_status(0, 0).is_err());
    }
}
