//! SCSI commands used by the inventory: INQUIRY (standard and VPD pages
//! 0x80 unit serial, 0x83 device identification), MODE SENSE(10) of the
//! caching mode page, and LOG SENSE of the temperature and informational
//! exceptions pages.

use super::sg::{Data, ScsiReply};
use super::{ascii_field, be16, hex, need_len, PassthroughError, ScsiPath};

const TIMEOUT_MS: u32 = 10_000;

/// Standard INQUIRY data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inquiry {
    pub peripheral_type: u8,
    pub removable: bool,
    pub vendor: String,
    pub product: String,
    pub revision: String,
}

pub fn decode_inquiry(buf: &[u8]) -> Result<Inquiry, PassthroughError> {
    need_len("INQUIRY", buf, 36)?;
    Ok(Inquiry {
        peripheral_type: buf[0] & 0x1f,
        removable: buf[1] & 0x80 != 0,
        vendor: ascii_field(&buf[8..16]),
        product: ascii_field(&buf[16..32]),
        revision: ascii_field(&buf[32..36]),
    })
}

/// VPD page 0x80: the unit serial number.
pub fn decode_vpd_serial(buf: &[u8]) -> Result<String, PassthroughError> {
    need_len("INQUIRY VPD 0x80", buf, 4)?;
    if buf[1] != 0x80 {
        return Err(PassthroughError::malformed(
            "INQUIRY VPD 0x80",
            format!("page code 0x{:02x}", buf[1]),
        ));
    }
    let len = be16(buf, 2) as usize;
    let end = (4 + len).min(buf.len());
    Ok(ascii_field(&buf[4..end]))
}

/// What VPD page 0x83 identifies the logical unit by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceIds {
    /// NAA designator of the logical unit, as "0x" + hex (the WWN).
    pub naa: Option<String>,
    /// EUI-64 designator of the logical unit.
    pub eui64: Option<String>,
    /// T10 vendor id designator (text).
    pub t10: Option<String>,
}

pub fn decode_vpd_device_ids(buf: &[u8]) -> Result<DeviceIds, PassthroughError> {
    const OP: &str = "INQUIRY VPD 0x83";
    need_len(OP, buf, 4)?;
    if buf[1] != 0x83 {
        return Err(PassthroughError::malformed(
            OP,
            format!("page code 0x{:02x}", buf[1]),
        ));
    }
    let end = (4 + be16(buf, 2) as usize).min(buf.len());
    let mut ids = DeviceIds::default();
    let mut i = 4;
    while i + 4 <= end {
        let code_set = buf[i] & 0x0f;
        let association = (buf[i + 1] >> 4) & 0x03;
        let designator_type = buf[i + 1] & 0x0f;
        let len = buf[i + 3] as usize;
        if i + 4 + len > end {
            return Err(PassthroughError::malformed(
                OP,
                format!("designator at byte {i} runs past the page end"),
            ));
        }
        let value = &buf[i + 4..i + 4 + len];
        // Only designators of the logical unit itself (association 0), not
        // of the target port or target device.
        if association == 0 {
            match designator_type {
                1 if ids.t10.is_none() => ids.t10 = Some(ascii_field(value)),
                2 if ids.eui64.is_none() && code_set == 1 => {
                    ids.eui64 = Some(format!("0x{}", hex(value)))
                }
                3 if ids.naa.is_none() && code_set == 1 => {
                    ids.naa = Some(format!("0x{}", hex(value)))
                }
                _ => {}
            }
        }
        i += 4 + len;
    }
    Ok(ids)
}

/// The caching mode page (0x08) as MODE SENSE returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachingPage {
    /// WCE: the volatile write cache is enabled.
    pub write_cache_enabled: bool,
    /// RCD: the read cache is disabled.
    pub read_cache_disabled: bool,
}

/// Decodes a MODE SENSE(10) reply and finds the caching page in it.
pub fn decode_caching_page(buf: &[u8]) -> Result<CachingPage, PassthroughError> {
    const OP: &str = "MODE SENSE(10) caching page";
    need_len(OP, buf, 8)?;
    let data_len = be16(buf, 0) as usize + 2;
    let block_desc_len = be16(buf, 6) as usize;
    let end = data_len.min(buf.len());
    let mut i = 8 + block_desc_len;
    while i + 2 <= end {
        let page = buf[i] & 0x3f;
        let spf = buf[i] & 0x40 != 0;
        let (body, len) = if spf {
            if i + 4 > end {
                break;
            }
            (i + 4, be16(buf, i + 2) as usize)
        } else {
            (i + 2, buf[i + 1] as usize)
        };
        if page == 0x08 && !spf {
            need_len(OP, buf, i + 3)?;
            let flags = buf[i + 2];
            return Ok(CachingPage {
                write_cache_enabled: flags & 0x04 != 0,
                read_cache_disabled: flags & 0x01 != 0,
            });
        }
        i = body + len;
    }
    Err(PassthroughError::malformed(
        OP,
        "no caching page (0x08) in the reply",
    ))
}

/// Temperature log page (0x0d): current and reference temperature in °C.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TemperatureLog {
    pub current_c: Option<u8>,
    pub reference_c: Option<u8>,
}

pub fn decode_temperature_log(buf: &[u8]) -> Result<TemperatureLog, PassthroughError> {
    let mut out = TemperatureLog::default();
    for (code, value) in log_parameters("LOG SENSE 0x0d", buf, 0x0d)? {
        // 0xff means "not available".
        let t = value.get(1).copied().filter(|&t| t != 0xff);
        match code {
            0x0000 => out.current_c = t,
            0x0001 => out.reference_c = t,
            _ => {}
        }
    }
    Ok(out)
}

/// Informational exceptions log page (0x2f), parameter 0: the most recent
/// failure prediction (asc/ascq 0 means none) and the temperature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InformationalExceptions {
    pub asc: u8,
    pub ascq: u8,
    pub temperature_c: Option<u8>,
}

pub fn decode_ie_log(buf: &[u8]) -> Result<InformationalExceptions, PassthroughError> {
    const OP: &str = "LOG SENSE 0x2f";
    for (code, value) in log_parameters(OP, buf, 0x2f)? {
        if code == 0 && value.len() >= 3 {
            return Ok(InformationalExceptions {
                asc: value[0],
                ascq: value[1],
                temperature_c: Some(value[2]).filter(|&t| t != 0xff),
            });
        }
    }
    Err(PassthroughError::malformed(OP, "no parameter 0000h"))
}

/// Splits a log page into (parameter code, parameter value) pairs.
fn log_parameters<'a>(
    op: &'static str,
    buf: &'a [u8],
    page: u8,
) -> Result<Vec<(u16, &'a [u8])>, PassthroughError> {
    need_len(op, buf, 4)?;
    if buf[0] & 0x3f != page {
        return Err(PassthroughError::malformed(
            op,
            format!("page code 0x{:02x}", buf[0] & 0x3f),
        ));
    }
    let end = (4 + be16(buf, 2) as usize).min(buf.len());
    let mut out = Vec::new();
    let mut i = 4;
    while i + 4 <= end {
        let code = be16(buf, i);
        let len = buf[i + 3] as usize;
        if i + 4 + len > end {
            return Err(PassthroughError::malformed(
                op,
                format!("parameter 0x{code:04x} runs past the page end"),
            ));
        }
        out.push((code, &buf[i + 4..i + 4 + len]));
        i += 4 + len;
    }
    Ok(out)
}

// --- transport -----------------------------------------------------------

fn data_in(
    dev: &dyn ScsiPath,
    op: &'static str,
    cdb: &[u8],
    len: usize,
) -> Result<Vec<u8>, PassthroughError> {
    let mut buf = vec![0u8; len];
    let reply: ScsiReply = dev.scsi(op, cdb, Data::FromDevice(&mut buf), TIMEOUT_MS)?;
    reply.check(op)?;
    let got = len.saturating_sub(reply.resid.max(0) as usize);
    buf.truncate(got);
    Ok(buf)
}

pub fn inquiry(dev: &dyn ScsiPath) -> Result<Vec<u8>, PassthroughError> {
    data_in(dev, "INQUIRY", &[0x12, 0, 0, 0, 96, 0], 96)
}

pub fn inquiry_vpd(dev: &dyn ScsiPath, page: u8) -> Result<Vec<u8>, PassthroughError> {
    let op = match page {
        0x80 => "INQUIRY VPD 0x80",
        0x83 => "INQUIRY VPD 0x83",
        _ => "INQUIRY VPD",
    };
    data_in(dev, op, &[0x12, 0x01, page, 0x01, 0x00, 0], 256)
}

/// MODE SENSE(10) of the caching page; `changeable` asks for the mask of
/// bits the device lets a host change instead of the current values.
pub fn mode_sense_caching(
    dev: &dyn ScsiPath,
    changeable: bool,
) -> Result<Vec<u8>, PassthroughError> {
    let pc = if changeable { 0x40 } else { 0x00 };
    // DBD=1: no block descriptors, the page follows the header directly.
    let cdb = [0x5a, 0x08, pc | 0x08, 0, 0, 0, 0, 0x00, 0xfc, 0];
    data_in(dev, "MODE SENSE(10) caching page", &cdb, 0xfc)
}

/// The MODE SELECT(10) parameter list that sets WCE to `wce`, built from a
/// MODE SENSE(10) reply of the caching page (DBD=1): header zeroed as MODE
/// SELECT wants it, the page as the device gave it with only WCE changed
/// and the PS bit cleared.
pub fn caching_select_params(sense_reply: &[u8], wce: bool) -> Result<Vec<u8>, PassthroughError> {
    const OP: &str = "MODE SELECT(10) caching page";
    need_len(OP, sense_reply, 8)?;
    let bdlen = be16(sense_reply, 6) as usize;
    let start = 8 + bdlen;
    need_len(OP, sense_reply, start + 3)?;
    if sense_reply[start] & 0x3f != 0x08 {
        return Err(PassthroughError::malformed(
            OP,
            "the reply's first page is not the caching page",
        ));
    }
    let len = sense_reply[start + 1] as usize + 2;
    if len < 3 {
        return Err(PassthroughError::malformed(
            OP,
            "the caching page has no flags byte",
        ));
    }
    need_len(OP, sense_reply, start + len)?;
    let mut params = vec![0u8; 8];
    let mut page = sense_reply[start..start + len].to_vec();
    page[0] &= 0x3f;
    if wce {
        page[2] |= 0x04;
    } else {
        page[2] &= !0x04;
    }
    params.extend_from_slice(&page);
    Ok(params)
}

/// MODE SELECT(10), page format, not saved (SATLs refuse SP=1).
pub fn mode_select(dev: &dyn ScsiPath, params: &[u8]) -> Result<(), PassthroughError> {
    const OP: &str = "MODE SELECT(10) caching page";
    let len = params.len() as u16;
    let cdb = [0x55, 0x10, 0, 0, 0, 0, 0, (len >> 8) as u8, len as u8, 0];
    let reply = dev.scsi(OP, &cdb, Data::ToDevice(params), TIMEOUT_MS)?;
    reply.check(OP)
}

/// READ CAPACITY(16): the last LBA and the logical block length.
pub fn read_capacity16(dev: &dyn ScsiPath) -> Result<Vec<u8>, PassthroughError> {
    let mut cdb = [0u8; 16];
    cdb[0] = 0x9e;
    cdb[1] = 0x10;
    cdb[13] = 32;
    data_in(dev, "READ CAPACITY(16)", &cdb, 32)
}

/// The capacity in bytes READ CAPACITY(16) gives.
pub fn decode_capacity16(buf: &[u8]) -> Result<u64, PassthroughError> {
    need_len("READ CAPACITY(16)", buf, 12)?;
    let last = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
    let block = u32::from_be_bytes(buf[8..12].try_into().expect("4 bytes"));
    if block == 0 {
        return Err(PassthroughError::malformed(
            "READ CAPACITY(16)",
            "a logical block length of 0",
        ));
    }
    Ok(last.saturating_add(1).saturating_mul(u64::from(block)))
}

pub fn log_sense(dev: &dyn ScsiPath, page: u8) -> Result<Vec<u8>, PassthroughError> {
    let op = match page {
        0x0d => "LOG SENSE 0x0d",
        0x2f => "LOG SENSE 0x2f",
        _ => "LOG SENSE",
    };
    // PC=01b: cumulative values.
    let cdb = [0x4d, 0, 0x40 | page, 0, 0, 0, 0, 0x01, 0x00, 0];
    data_in(dev, op, &cdb, 256)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inquiry_bytes(vendor: &str, product: &str, rev: &str) -> Vec<u8> {
        let mut b = vec![0u8; 36];
        b[0] = 0x00;
        b[4] = 31;
        b[8..16].copy_from_slice(format!("{vendor:<8}").as_bytes());
        b[16..32].copy_from_slice(format!("{product:<16}").as_bytes());
        b[32..36].copy_from_slice(format!("{rev:<4}").as_bytes());
        b
    }

    #[test]
    fn decodes_standard_inquiry() {
        let inq = decode_inquiry(&inquiry_bytes("ATA", "SAMSUNG MZ7KM480", "GXM1")).unwrap();
        assert_eq!(inq.vendor, "ATA");
        assert_eq!(inq.product, "SAMSUNG MZ7KM480");
        assert_eq!(inq.revision, "GXM1");
        assert_eq!(inq.peripheral_type, 0);
        assert!(decode_inquiry(&[0u8; 20]).is_err());
    }

    #[test]
    fn decodes_vpd_80_and_83() {
        let mut p80 = vec![0x00, 0x80, 0x00, 0x0c];
        p80.extend_from_slice(b"  S2HTNX0H40");
        assert_eq!(decode_vpd_serial(&p80).unwrap(), "S2HTNX0H40");

        // NAA (LU), then a target-port NAA that must be ignored, then T10.
        let mut p83 = vec![0x00, 0x83, 0x00, 0x00];
        p83.extend_from_slice(&[
            0x01, 0x03, 0x00, 0x08, 0x50, 0x00, 0xc5, 0x00, 0x12, 0x34, 0x56, 0x78,
        ]);
        p83.extend_from_slice(&[0x01, 0x93, 0x00, 0x08, 0x50, 0, 0, 0, 0, 0, 0, 1]);
        p83.extend_from_slice(&[0x02, 0x01, 0x00, 0x08]);
        p83.extend_from_slice(b"ATA     ");
        let len = (p83.len() - 4) as u16;
        p83[2..4].copy_from_slice(&len.to_be_bytes());
        let ids = decode_vpd_device_ids(&p83).unwrap();
        assert_eq!(ids.naa.as_deref(), Some("0x5000c50012345678"));
        assert_eq!(ids.t10.as_deref(), Some("ATA"));
        assert_eq!(ids.eui64, None);
    }

    #[test]
    fn vpd_83_overrun_is_an_error_not_a_panic() {
        let p83 = [
            0x00, 0x83, 0x00, 0x08, 0x01, 0x03, 0x00, 0x20, 0x50, 0, 0, 0,
        ];
        assert!(decode_vpd_device_ids(&p83).is_err());
    }

    #[test]
    fn finds_caching_page_wce() {
        // Header (8), no block descriptors, caching page with WCE=1.
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&[
            0x08, 0x12, 0x04, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x80, 0x14, 0, 0, 0, 0,
            0, 0,
        ]);
        let len = (b.len() - 2) as u16;
        b[0..2].copy_from_slice(&len.to_be_bytes());
        let page = decode_caching_page(&b).unwrap();
        assert!(page.write_cache_enabled);
        assert!(!page.read_cache_disabled);
        b[10] = 0x01;
        let page = decode_caching_page(&b).unwrap();
        assert!(!page.write_cache_enabled);
        assert!(page.read_cache_disabled);
    }

    #[test]
    fn builds_mode_select_from_mode_sense() {
        let mut sense = vec![0u8; 8];
        sense.extend_from_slice(&[
            0x88, 0x12, 0x00, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x80, 0x14, 0, 0, 0, 0,
            0, 0,
        ]);
        sense[1] = (sense.len() - 2) as u8;
        let p = caching_select_params(&sense, true).unwrap();
        assert_eq!(&p[..8], &[0u8; 8]);
        assert_eq!(p[8], 0x08, "PS bit cleared");
        assert_eq!(p[10], 0x04);
        assert_eq!(p.len(), 8 + 20);
        assert_eq!(caching_select_params(&sense, false).unwrap()[10], 0);
        assert!(caching_select_params(&sense[..12], true).is_err());
    }

    #[test]
    fn caching_page_missing_is_reported() {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&[0x0a, 0x02, 0, 0]);
        b[1] = 10;
        assert!(decode_caching_page(&b).is_err());
    }

    #[test]
    fn decodes_log_pages() {
        let t = [0x0d, 0, 0, 12, 0, 0, 3, 2, 0, 38, 0, 1, 3, 2, 0, 65];
        let log = decode_temperature_log(&t).unwrap();
        assert_eq!(log.current_c, Some(38));
        assert_eq!(log.reference_c, Some(65));
        let ie = [0x2f, 0, 0, 8, 0, 0, 3, 4, 0x5d, 0x10, 40, 0];
        let ie = decode_ie_log(&ie).unwrap();
        assert_eq!((ie.asc, ie.ascq, ie.temperature_c), (0x5d, 0x10, Some(40)));
        assert!(decode_ie_log(&[0x0d, 0, 0, 0]).is_err());
    }
}
