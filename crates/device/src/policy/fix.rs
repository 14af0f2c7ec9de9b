//! `check --fix`: change the settings a policy wants that storcert can
//! change itself without touching data — a drive's volatile write cache
//! (MODE SELECT of the caching page, through SAT for SATA; NVMe Set
//! Features 0x06) and a MegaRAID virtual drive's cache policy (MFI
//! LD_SET_PROP) — and read each back to verify it took.

use serde::Serialize;

use super::check::{Action, Finding};
use crate::inventory::raid;
use crate::passthrough::tape::Device;
use crate::passthrough::{ata, nvme, scsi, PassthroughError};
use crate::safety::Refusal;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FixResult {
    pub device: String,
    pub change: String,
    pub method: String,
    /// "verified", "not applied: …" (the device accepted the command but
    /// reads back the old value) or "failed: …".
    pub outcome: String,
}

/// What `--fix` will do, printed before it does anything.
pub fn plan(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter_map(|f| {
            f.action
                .as_ref()
                .map(|a| format!("{}: {}", f.device, describe(a).0))
        })
        .collect()
}

fn describe(a: &Action) -> (String, String) {
    match a {
        Action::WriteCache { on, nvme, .. } => (
            format!("write cache {}", if *on { "on" } else { "off" }),
            if *nvme {
                "NVMe Set Features 0x06 (Volatile Write Cache)".into()
            } else {
                "SCSI MODE SELECT caching page (WCE)".into()
            },
        ),
        Action::VirtualDrive {
            family,
            target,
            write,
            read,
            io,
            ..
        } => {
            let parts: Vec<String> = [write, read, io]
                .iter()
                .filter_map(|x| x.as_ref().cloned())
                .collect();
            (
                format!("virtual drive {target} cache policy {}", parts.join(" ")),
                raid::family(family)
                    .map_or("none", |f| f.cache_policy_method())
                    .into(),
            )
        }
    }
}

/// The device a fix changes, for the safety gate.
pub fn device_of(a: &Action) -> Option<&str> {
    match a {
        Action::WriteCache { dev_path, .. } => Some(dev_path),
        Action::VirtualDrive { dev_path, .. } => dev_path.as_deref(),
    }
}

/// Why a fix could not be applied (its outcome then reads "failed: …").
/// An io::Error cause is printed in the message, not chained as a
/// `source`, so a `{:#}` chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    #[error("open {dev}: {err}")]
    Open { dev: String, err: std::io::Error },
    #[error(transparent)]
    Raid(#[from] raid::SetError),
    #[error(transparent)]
    Command(#[from] PassthroughError),
}

/// Applies every fix the safety gate (`allowed`, per device) lets through.
pub fn apply(
    findings: &[Finding],
    allowed: impl Fn(&str) -> Result<(), Refusal>,
) -> Vec<FixResult> {
    let mut done: Vec<&Action> = Vec::new();
    let mut out = Vec::new();
    for f in findings {
        let Some(a) = &f.action else { continue };
        if done.contains(&a) {
            continue;
        }
        done.push(a);
        let (change, method) = describe(a);
        if let Some(Err(why)) = device_of(a).map(&allowed) {
            out.push(FixResult {
                device: f.device.clone(),
                change,
                method,
                outcome: format!("refused by the safety gate: {}", why.reasons),
            });
            continue;
        }
        let outcome = match a {
            Action::WriteCache {
                dev_path,
                nvme: true,
                on,
                ..
            } => nvme_write_cache(dev_path, *on),
            Action::WriteCache {
                dev_path,
                nvme: false,
                on,
                ..
            } => scsi_write_cache(dev_path, *on),
            Action::VirtualDrive {
                family,
                host,
                target,
                write,
                read,
                io,
                ..
            } => match raid::family(family) {
                Some(f) => f
                    .set_cache_policy(
                        *host,
                        *target,
                        &raid::CacheChange {
                            write: write.clone(),
                            read: read.clone(),
                            io: io.clone(),
                        },
                    )
                    .map_err(FixError::from),
                None => Err(FixError::Raid(raid::SetError::Open(format!(
                    "no controller family {family}"
                )))),
            },
        };
        out.push(FixResult {
            device: f.device.clone(),
            change,
            method,
            outcome: outcome.unwrap_or_else(|e| format!("failed: {e}")),
        });
    }
    out
}

fn verdict(wanted: bool, now: bool, what: &str) -> String {
    if wanted == now {
        "verified".into()
    } else {
        format!(
            "not applied: {what} still reads {}",
            if now { "on" } else { "off" }
        )
    }
}

fn open(dev: &str) -> Result<Device, FixError> {
    Device::open_for_probe(dev, None).map_err(|err| FixError::Open {
        dev: dev.into(),
        err,
    })
}

fn nvme_write_cache(dev: &str, on: bool) -> Result<String, FixError> {
    let f = open(dev)?;
    nvme::set_feature(&f, nvme::FEATURE_VOLATILE_WRITE_CACHE, u32::from(on))?;
    let now = nvme::get_feature(&f, nvme::FEATURE_VOLATILE_WRITE_CACHE)?;
    Ok(verdict(on, now & 1 != 0, "Get Features 0x06"))
}

fn scsi_write_cache(dev: &str, on: bool) -> Result<String, FixError> {
    let f = open(dev)?;
    let sense = scsi::mode_sense_caching(&f, false)?;
    let params = scsi::caching_select_params(&sense, on)?;
    scsi::mode_select(&f, &params)?;
    // The drive's own word where it speaks ATA, else the caching page.
    if let Ok(id) = ata::identify(&f).and_then(|raw| ata::decode_identify(&raw)) {
        return Ok(verdict(on, id.write_cache_enabled, "ATA IDENTIFY word 85"));
    }
    let page =
        scsi::mode_sense_caching(&f, false).and_then(|raw| scsi::decode_caching_page(&raw))?;
    Ok(verdict(on, page.write_cache_enabled, "the caching page"))
}
