//! Hardware reach: what this system cannot drive, as findings. A storage
//! controller with no driver hides every drive behind it; a network
//! controller with none, or firmware that did not load, can leave a
//! PXE-booted machine with no link (no profile fetched, nothing uploaded).
//! None of it may pass silently.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

use storcert_results::inventory::{Controller, Inventory};
use storcert_results::policy::{Finding, Severity};

/// The rule these findings name.
pub const RULE: &str = "hardware reach (built in)";
/// The check of a storage controller without a driver.
const STORAGE_DRIVER: &str = "storage controller driver";
/// How an undriven controller's finding begins (what was found: none).
const NONE: &str = "none: ";

/// Why drives cannot be seen, one line per storage controller without a
/// driver among `findings` ("the drives behind 1000:00a5 … cannot be
/// seen; …").
pub fn hidden_drives(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.rule == RULE && f.check == STORAGE_DRIVER)
        .map(|f| f.actual.trim_start_matches(NONE).to_string())
        .collect()
}

/// The most of the kernel log read: its ring buffer is far smaller.
const MAX_LOG: usize = 8 << 20;

fn label(c: &Controller) -> String {
    let id = format!(
        "{}:{}",
        c.vendor_id.trim_start_matches("0x"),
        c.device_id.trim_start_matches("0x")
    );
    match &c.device_name {
        Some(n) => format!("{id} ({n}) at {}", c.pci_address),
        None => format!("{id} at {}", c.pci_address),
    }
}

fn module_words(c: &Controller) -> String {
    match &c.module {
        Some(m) if m.in_image => format!(
            "its module {} is in this image but did not bind (see the kernel log)",
            m.name
        ),
        Some(m) => format!("the kernel's module {} is not in this image", m.name),
        None => "no module of this kernel drives it".into(),
    }
}

/// The findings of `inv` and the kernel log `log` (`None`: it could not
/// be read). An undriven storage controller is of `storage` severity (the
/// profile's: its drives were not tested); an undriven network controller
/// and firmware that did not load are warnings (an unused port is no
/// reason to fail a drive's qualification).
pub fn findings(inv: &Inventory, log: Option<&str>, storage: Severity) -> Vec<Finding> {
    let finding =
        |severity: Severity, device: String, check: &str, actual: String, fix: Option<String>| {
            Finding {
                severity,
                rule: RULE.into(),
                device,
                disk: None,
                machine: true,
                check: check.into(),
                expected: "driven".into(),
                actual,
                fix,
                action: None,
            }
        };
    let fix = |c: &Controller| {
        c.module.as_ref().filter(|m| !m.in_image).map(|m| {
            format!(
                "add {} to kernel-config/modules.list and a row to image/hardware.tsv",
                m.name
            )
        })
    };
    let mut out = Vec::new();
    for c in inv.controllers.iter().filter(|c| c.driver.is_none()) {
        let id = label(c);
        out.push(finding(
            storage,
            id.clone(),
            STORAGE_DRIVER,
            format!(
                "{NONE}the drives behind {id} cannot be seen; {}",
                module_words(c)
            ),
            fix(c),
        ));
    }
    for c in inv
        .network_controllers
        .iter()
        .filter(|c| c.driver.is_none())
    {
        let id = label(c);
        out.push(finding(
            Severity::Warn,
            id.clone(),
            "network controller driver",
            format!("none: {id} has no link; {}", module_words(c)),
            fix(c),
        ));
    }
    match log {
        Some(log) => {
            for line in firmware_failures(log) {
                out.push(finding(
                    Severity::Warn,
                    "kernel".into(),
                    "firmware",
                    storcert_util::text::printable(&line, 300),
                    Some("add the firmware's package to image/firmware.list".into()),
                ));
            }
        }
        None => out.push(finding(
            Severity::Info,
            "kernel".into(),
            "firmware",
            "not checked: the kernel log (/dev/kmsg) could not be read".into(),
            None,
        )),
    }
    out
}

/// Kernel log lines saying firmware did not load: the loader's "Direct
/// firmware load for F failed", and `ice`'s Safe Mode (its DDP package
/// missing). One line per failure, each once.
pub fn firmware_failures(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut safe_mode: Vec<String> = Vec::new();
    for line in log.lines() {
        let line = line.trim();
        let load = (line.contains("Direct firmware load for") && line.contains("failed"))
            || line.contains("firmware: failed to load");
        // ice says Safe Mode in more than one line: one per device.
        let device: String = line
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let safe =
            line.starts_with("ice ") && line.contains("Safe Mode") && !safe_mode.contains(&device);
        if safe {
            safe_mode.push(device);
        }
        if (load || safe) && !out.iter().any(|l| l == line) && out.len() < 50 {
            out.push(line.to_string());
        }
    }
    out
}

/// The kernel's log as it stands (`/dev/kmsg`, read without waiting):
/// the messages only, one per line. `None` where it cannot be read.
pub fn kernel_log() -> Option<String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .ok()?;
    let mut out = String::new();
    let mut record = vec![0u8; 8192];
    while out.len() < MAX_LOG {
        // One record per read: "prio,seq,time,flags;message\n".
        match f.read(&mut record) {
            Ok(0) => break,
            Ok(n) => {
                let text = String::from_utf8_lossy(&record[..n]);
                let message = text.split_once(';').map_or(&*text, |(_, m)| m);
                out.push_str(message.lines().next().unwrap_or(""));
                out.push('\n');
            }
            // EPIPE: a record was overwritten while reading; go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_drives_are_the_undriven_storage_controllers_in_their_words() {
        let mut inv: Inventory = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/qemu-lab/inventory.json"
        ))
        .unwrap();
        assert!(hidden_drives(&findings(&inv, Some(""), Severity::Fail)).is_empty());
        for c in &mut inv.controllers {
            if c.pci_address == "0000:00:03.0" {
                c.driver = None;
            }
        }
        let all = findings(&inv, Some(""), Severity::Warn);
        assert_eq!(
            hidden_drives(&all),
            ["the drives behind 1000:0079 (MegaRAID SAS 2108 [Liberator]) at 0000:00:03.0 cannot be seen; no module of this kernel drives it"]
        );
        // A policy's finding with the same words is not the built-in one.
        let mut other = all[0].clone();
        other.rule = "controller[0]".into();
        assert!(hidden_drives(&[other]).is_empty());
    }

    #[test]
    fn firmware_failures_are_read_from_the_kernel_log() {
        let log = "bnx2x 0000:3b:00.0: Direct firmware load for bnx2x/bnx2x-e2-7.13.21.0.fw failed with error -2\n\
                   ice 0000:5e:00.0: The DDP package file was not found or could not be read. Entering Safe Mode\n\
                   ice 0000:5e:00.0: Entering Safe Mode\n\
                   tg3 0000:01:00.0 eth0: Tigon3 [partno(BCM95720) rev 5720000] (PCI Express)\n\
                   some_device 0000:02:00.0: Safe Mode off\n\
                   bnx2x 0000:3b:00.0: Direct firmware load for bnx2x/bnx2x-e2-7.13.21.0.fw failed with error -2\n";
        let f = firmware_failures(log);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].contains("bnx2x/bnx2x-e2-7.13.21.0.fw"));
        assert!(f[1].contains("Safe Mode"));
    }
}
