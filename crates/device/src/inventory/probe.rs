//! Asking each disk about itself through passthrough: identity, firmware,
//! write cache and health, from the device rather than from what the kernel
//! cached. Every command tried is recorded as a `Probe` on the disk, so a
//! refusal (ENOTTY, EPERM, a USB bridge without SAT, a RAID logical drive
//! that rejects ATA PASS-THROUGH) is visible and never stops the scan.

use super::model::*;
use crate::passthrough::tape::Device;
use crate::passthrough::{ata, nvme, scsi, PassthroughError, ScsiPath};

/// Runs one passthrough step and records its outcome on the disk.
fn step<T>(
    disk: &mut Disk,
    probe: &str,
    run: impl FnOnce() -> Result<Vec<u8>, PassthroughError>,
    decode: impl FnOnce(&[u8]) -> Result<T, PassthroughError>,
) -> Option<T> {
    let result = run().and_then(|raw| decode(&raw));
    record(disk, probe, result)
}

fn record<T>(disk: &mut Disk, probe: &str, result: Result<T, PassthroughError>) -> Option<T> {
    match result {
        Ok(v) => {
            disk.probes.push(Probe {
                probe: probe.to_string(),
                outcome: "ok".into(),
                detail: None,
            });
            Some(v)
        }
        Err(e) => {
            let outcome = if e.is_unsupported() {
                "unsupported"
            } else {
                "failed"
            };
            disk.probes.push(Probe {
                probe: probe.to_string(),
                outcome: outcome.into(),
                detail: Some(e.to_string()),
            });
            None
        }
    }
}

/// Adds a reading of the write cache; the first one makes the disk's
/// answer, and one that disagrees with an earlier one is flagged.
pub(crate) fn push_reading(disk: &mut Disk, reading: WriteCacheReading) {
    let wc = disk.write_cache.get_or_insert_with(|| WriteCache {
        supported: reading.supported,
        enabled: reading.enabled,
        source: reading.source.clone(),
        from_sysfs: false,
        readings: Vec::new(),
        disagreement: false,
    });
    if wc
        .readings
        .iter()
        .any(|r| r.enabled.is_some() && reading.enabled.is_some() && r.enabled != reading.enabled)
    {
        wc.disagreement = true;
    }
    wc.readings.push(reading);
}

/// NVMe namespace: Identify Controller and Namespace, Get Features 0x06,
/// SMART log.
pub fn probe_nvme(disk: &mut Disk, dev: &Device) {
    if let Some(id) = step(
        disk,
        "NVMe Identify Controller",
        || nvme::identify_controller(dev),
        nvme::decode_identify_controller,
    ) {
        disk.model = Some(id.model.clone());
        disk.serial = Some(id.serial.clone());
        disk.firmware = Some(id.firmware.clone());
        disk.firmware_source = Some("NVMe Identify Controller (FR)".into());
        push_reading(
            disk,
            WriteCacheReading {
                source: "NVMe Identify Controller (VWC)".into(),
                supported: Some(id.volatile_write_cache_present),
                enabled: None,
            },
        );
        let nsid = record(disk, "NVMe namespace id", nvme::namespace_id(dev));
        if let Some(nsid) = nsid {
            if let Some(ns) = step(
                disk,
                "NVMe Identify Namespace",
                || nvme::identify_namespace(dev, nsid),
                nvme::decode_identify_namespace,
            ) {
                disk.eui64 = ns.eui64;
                disk.nguid = ns.nguid;
                disk.logical_sector_size = Some(ns.lba_size);
                disk.lba_format = Some(ns.lba_format_index);
                disk.metadata_bytes = Some(ns.metadata_size);
            }
        }
        let vwc = record(
            disk,
            "NVMe Get Features 0x06 (Volatile Write Cache)",
            nvme::get_feature(dev, nvme::FEATURE_VOLATILE_WRITE_CACHE),
        );
        if let Some(dw0) = vwc {
            push_reading(
                disk,
                WriteCacheReading {
                    source: "NVMe Get Features 0x06".into(),
                    supported: Some(id.volatile_write_cache_present),
                    enabled: Some(dw0 & 1 != 0),
                },
            );
            // The feature is the authority on "enabled"; Identify only
            // says whether a cache exists.
            if let Some(wc) = disk.write_cache.as_mut() {
                wc.enabled = Some(dw0 & 1 != 0);
                wc.source = "NVMe Get Features 0x06 (VWC present from Identify Controller)".into();
            }
        } else if !id.volatile_write_cache_present {
            if let Some(wc) = disk.write_cache.as_mut() {
                wc.enabled = Some(false);
            }
        }
        if let Some(log) = step(
            disk,
            "NVMe SMART log",
            || nvme::smart_log(dev),
            nvme::decode_smart_log,
        ) {
            let warnings = nvme::critical_warning_names(log.critical_warning);
            let ocp = step(
                disk,
                "NVMe OCP extended SMART log 0xC0",
                || nvme::ocp_smart_log(dev),
                nvme::decode_ocp_smart,
            );
            disk.health = Some(Health {
                overall: if log.critical_warning == 0 {
                    "passed"
                } else {
                    "failed"
                }
                .into(),
                source: "NVMe SMART / Health log (0x02)".into(),
                temperature_c: (log.temperature_k > 0).then(|| log.temperature_k as i32 - 273),
                power_on_hours: u64::try_from(log.power_on_hours).ok(),
                nvme: Some(NvmeHealth {
                    critical_warning: log.critical_warning,
                    critical_warnings: warnings.into_iter().map(String::from).collect(),
                    available_spare_pct: log.available_spare_pct,
                    available_spare_threshold_pct: log.available_spare_threshold_pct,
                    percentage_used: log.percentage_used,
                    data_units_read: log.data_units_read,
                    data_units_written: log.data_units_written,
                    bytes_written: log.data_units_written.saturating_mul(512_000),
                    media_bytes_written: ocp.map(|o| o.media_bytes_written),
                    power_cycles: log.power_cycles,
                    unsafe_shutdowns: log.unsafe_shutdowns,
                    media_errors: log.media_errors,
                    error_log_entries: log.error_log_entries,
                    volatile_write_cache_present: id.volatile_write_cache_present,
                }),
                ..Default::default()
            });
        }
    }
}

/// SCSI-speaking disks (SATA through libata or a SAS HBA, SAS, RAID logical
/// drives, USB): INQUIRY and VPD, MODE SENSE caching page, then ATA
/// IDENTIFY and SMART where the disk is ATA, LOG SENSE otherwise.
pub fn probe_scsi(disk: &mut Disk, dev: &dyn ScsiPath) {
    let inquiry = step(
        disk,
        "SCSI INQUIRY",
        || scsi::inquiry(dev),
        scsi::decode_inquiry,
    );
    let Some(inquiry) = inquiry else {
        // No SCSI path at all (virtio-blk, or the ioctl is refused): the
        // other SCSI commands would fail the same way.
        return;
    };
    disk.vendor = Some(inquiry.vendor.clone()).filter(|v| !v.is_empty());
    disk.model = Some(inquiry.product.clone());
    disk.firmware = Some(inquiry.revision.clone());
    disk.firmware_source = Some("SCSI INQUIRY (product revision)".into());
    if let Some(serial) = step(
        disk,
        "SCSI INQUIRY VPD 0x80",
        || scsi::inquiry_vpd(dev, 0x80),
        scsi::decode_vpd_serial,
    ) {
        disk.serial = Some(serial).filter(|s| !s.is_empty());
    }
    if let Some(ids) = step(
        disk,
        "SCSI INQUIRY VPD 0x83",
        || scsi::inquiry_vpd(dev, 0x83),
        scsi::decode_vpd_device_ids,
    ) {
        disk.wwn = ids.naa;
        disk.eui64 = ids.eui64;
    }
    let is_ata = inquiry.vendor == "ATA" || disk.transport == Transport::Sata;
    // ATA first for ATA disks: IDENTIFY is the drive's own word, MODE SENSE
    // is the SATL's translation of it.
    if is_ata || disk.transport == Transport::Usb {
        probe_ata(disk, dev);
    }
    let caching = step(
        disk,
        "SCSI MODE SENSE(10) caching page",
        || scsi::mode_sense_caching(dev, false),
        scsi::decode_caching_page,
    );
    if let Some(page) = caching {
        let changeable = step(
            disk,
            "SCSI MODE SENSE(10) caching page (changeable)",
            || scsi::mode_sense_caching(dev, true),
            scsi::decode_caching_page,
        );
        push_reading(
            disk,
            WriteCacheReading {
                source: "SCSI MODE SENSE caching page (WCE)".into(),
                // A caching page with a changeable WCE bit means the cache
                // exists and can be switched; a fixed WCE=1 also means it
                // exists.
                supported: Some(
                    page.write_cache_enabled
                        || changeable.map(|c| c.write_cache_enabled).unwrap_or(false),
                ),
                enabled: Some(page.write_cache_enabled),
            },
        );
    }
    if !is_ata && disk.health.is_none() {
        probe_scsi_health(disk, dev);
    }
}

fn probe_ata(disk: &mut Disk, dev: &dyn ScsiPath) {
    let Some(id) = step(
        disk,
        "ATA IDENTIFY (SAT ATA PASS-THROUGH 16)",
        || ata::identify(dev),
        ata::decode_identify,
    ) else {
        return;
    };
    disk.model = Some(id.model.clone());
    disk.serial = Some(id.serial.clone()).filter(|s| !s.is_empty());
    disk.firmware = Some(id.firmware.clone());
    disk.firmware_source = Some("ATA IDENTIFY (words 23-26)".into());
    if id.wwn.is_some() {
        disk.wwn = id.wwn.clone();
    }
    if let Some(rpm) = id.rotation_rpm {
        disk.rotational = Some(rpm != 0);
    }
    push_reading(
        disk,
        WriteCacheReading {
            source: "ATA IDENTIFY (words 82/85)".into(),
            supported: Some(id.write_cache_supported),
            enabled: Some(id.write_cache_enabled),
        },
    );
    let mut health = AtaHealth {
        smart_supported: id.smart_supported,
        smart_enabled: id.smart_enabled,
        smart_status: None,
        reallocated_sectors: None,
        pending_sectors: None,
        offline_uncorrectable: None,
        crc_errors: None,
        attributes: Vec::new(),
    };
    let mut overall = "unknown";
    let mut temperature_c = None;
    let mut power_on_hours = None;
    if id.smart_supported && id.smart_enabled {
        let status = record(
            disk,
            "ATA SMART RETURN STATUS",
            if dev.returns_ata_registers() {
                ata::smart_return_status(dev)
            } else {
                Err(PassthroughError::Rejected {
                    op: "ATA SMART RETURN STATUS",
                    detail:
                        "not supported by the controller: its firmware returns no ATA registers"
                            .into(),
                })
            },
        );
        if let Some(status) = status {
            overall = match status {
                ata::SmartStatus::Passed => "passed",
                ata::SmartStatus::ThresholdExceeded => "failed",
            };
            health.smart_status = Some(
                match status {
                    ata::SmartStatus::Passed => "passed",
                    ata::SmartStatus::ThresholdExceeded => "threshold exceeded",
                }
                .into(),
            );
        }
        if let Some(attrs) = step(
            disk,
            "ATA SMART READ DATA",
            || ata::smart_read_data(dev),
            ata::decode_smart_data,
        ) {
            let count = |id: u8| {
                attrs
                    .iter()
                    .find(|a| a.id == id)
                    .map(|a| a.raw & 0xffff_ffff)
            };
            health.reallocated_sectors = count(5);
            health.pending_sectors = count(197);
            health.offline_uncorrectable = count(198);
            health.crc_errors = count(199);
            power_on_hours = count(9);
            temperature_c = attrs
                .iter()
                .find(|a| a.id == 194 || a.id == 190)
                .map(|a| (a.raw & 0xff) as i32);
            health.attributes = attrs
                .iter()
                .map(|a| AtaAttribute {
                    id: a.id,
                    current: a.current,
                    worst: a.worst,
                    raw: a.raw,
                })
                .collect();
        }
    }
    disk.health = Some(Health {
        overall: overall.into(),
        source: "ATA SMART (SAT ATA PASS-THROUGH 16)".into(),
        temperature_c,
        power_on_hours,
        ata: Some(health),
        ..Default::default()
    });
}

fn probe_scsi_health(disk: &mut Disk, dev: &dyn ScsiPath) {
    let ie = step(
        disk,
        "SCSI LOG SENSE 0x2f (informational exceptions)",
        || scsi::log_sense(dev, 0x2f),
        scsi::decode_ie_log,
    );
    let temp = step(
        disk,
        "SCSI LOG SENSE 0x0d (temperature)",
        || scsi::log_sense(dev, 0x0d),
        scsi::decode_temperature_log,
    );
    if ie.is_none() && temp.is_none() {
        return;
    }
    // ASC 0x5d: FAILURE PREDICTION THRESHOLD EXCEEDED.
    let overall = match ie {
        Some(ie) if ie.asc == 0x5d => "failed",
        Some(_) => "passed",
        None => "unknown",
    };
    disk.health = Some(Health {
        overall: overall.into(),
        source: "SCSI LOG SENSE (0x2f, 0x0d)".into(),
        temperature_c: temp
            .and_then(|t| t.current_c)
            .or(ie.and_then(|i| i.temperature_c))
            .map(i32::from),
        power_on_hours: None,
        scsi: Some(ScsiHealth {
            ie_asc: ie.map(|i| i.asc),
            ie_ascq: ie.map(|i| i.ascq),
            reference_temperature_c: temp.and_then(|t| t.reference_c),
        }),
        ..Default::default()
    });
}
