//! The human view of an inventory: one line per disk, each controller's
//! line (and its virtual drives) above the disks behind it, then any
//! problems found, device by device.

use super::table::Table;
use super::units::decimal_bytes;
use storcert_results::inventory::{Controller, Disk, Inventory, RaidController};

fn opt(v: &Option<String>) -> String {
    v.as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("-")
        .to_string()
}

fn write_cache(d: &Disk) -> String {
    let Some(wc) = &d.write_cache else {
        return "?".into();
    };
    let mut s = match (wc.supported, wc.enabled) {
        (Some(false), _) => "none".to_string(),
        (_, Some(true)) => "on".to_string(),
        (_, Some(false)) => "off".to_string(),
        _ => "?".to_string(),
    };
    if wc.from_sysfs {
        s.push_str("(sysfs)");
    }
    if wc.disagreement {
        s.push('!');
    }
    s
}

fn role(d: &Disk) -> String {
    let mut r = Vec::new();
    if d.system_disk {
        r.push("system");
    }
    if d.boot_medium {
        r.push("boot");
    }
    if !d.mountpoints.is_empty() || d.partitions.iter().any(|p| !p.mountpoints.is_empty()) {
        r.push("mounted");
    }
    if !d.holders.is_empty() || d.partitions.iter().any(|p| !p.holders.is_empty()) {
        r.push("held");
    }
    if r.is_empty() {
        "-".into()
    } else {
        r.join(",")
    }
}

fn disk_row(d: &Disk) -> Vec<String> {
    let sectors = match (d.logical_sector_size, d.physical_sector_size) {
        (Some(l), Some(p)) => format!("{l}/{p}"),
        (Some(l), None) => format!("{l}"),
        _ => "-".into(),
    };
    vec![
        format!("  {}", d.name),
        d.transport.as_str().into(),
        opt(&d.model),
        opt(&d.serial),
        opt(&d.firmware),
        decimal_bytes(d.capacity_bytes),
        sectors,
        match d.rotational {
            Some(true) => "hdd".into(),
            Some(false) => "ssd".into(),
            None => "-".into(),
        },
        write_cache(d),
        d.health
            .as_ref()
            .map(|h| h.overall.clone())
            .unwrap_or_else(|| "-".into()),
        role(d),
    ]
}

fn controller_line(c: &Controller) -> String {
    let name = [c.vendor_name.as_deref(), c.device_name.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let name = if name.is_empty() {
        format!("{}:{}", c.vendor_id, c.device_id)
    } else {
        name
    };
    let mut line = format!("{} {} [{}]", c.pci_address, name, c.class_name);
    if let Some(d) = &c.driver {
        line.push_str(&format!(" driver {d}"));
        if let Some(v) = &c.driver_version {
            line.push_str(&format!(" {v}"));
        }
    }
    if c.driver.is_none() {
        line.push_str(" NO DRIVER");
        if let Some(m) = &c.module {
            line.push_str(&format!(
                " (needs module {}, {})",
                m.name,
                if m.in_image {
                    "in this system"
                } else {
                    "not in this system"
                }
            ));
        }
    }
    if let Some(mr) = &c.raid {
        line.push_str(&format!(" | {}", mr.product));
    }
    if let Some(fw) = &c.firmware {
        line.push_str(&format!(" fw {fw}"));
    }
    line
}

pub fn render(inv: &Inventory) -> String {
    let mut t = Table::new(&[
        "DEVICE",
        "TRANSPORT",
        "MODEL",
        "SERIAL",
        "FIRMWARE",
        "SIZE",
        "SECTOR",
        "MEDIA",
        "WCACHE",
        "HEALTH",
        "ROLE",
    ]);
    let mut shown = vec![false; inv.disks.len()];
    for c in &inv.controllers {
        t.line(controller_line(c));
        if let Some(mr) = &c.raid {
            raid_lines(&mut t, mr);
        }
        for (i, d) in inv.disks.iter().enumerate() {
            if d.controller.as_deref() == Some(c.pci_address.as_str()) {
                t.row(disk_row(d));
                shown[i] = true;
            }
        }
    }
    if shown.iter().any(|s| !s) {
        t.line("(no PCI storage controller)".into());
        for (i, d) in inv.disks.iter().enumerate() {
            if !shown[i] {
                t.row(disk_row(d));
            }
        }
    }
    md_lines(&mut t, inv);
    if !inv.network_controllers.is_empty() {
        t.line("network:".into());
        for c in &inv.network_controllers {
            t.line(format!("  {}", controller_line(c)));
        }
    }
    let mut out = t.render();
    let problems = problems(inv);
    if !problems.is_empty() {
        out.push('\n');
        for p in problems {
            out.push_str(&storcert_util::text::printable(&p, 1000));
            out.push('\n');
        }
    }
    out
}

/// A RAID controller's battery, virtual drives and physical drives, under
/// its line.
fn raid_lines(t: &mut Table, mr: &RaidController) {
    if let Some(b) = &mr.battery {
        t.line(format!(
            "  battery: {}{}",
            match (b.present, b.healthy) {
                (false, _) => "none fitted",
                (true, Some(true)) => "healthy",
                (true, Some(false)) => "NOT HEALTHY",
                (true, None) => "fitted",
            },
            b.state
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ));
    }
    for vd in &mr.virtual_drives {
        let policies: Vec<String> = vd
            .cache_policy
            .iter()
            .map(|r| format!("{} ({})", r.current, r.source.trim_start_matches("MFI ")))
            .collect();
        t.line(format!(
            "  vd{} {} {} {} cache {} disk-cache {} -> {}",
            vd.id,
            vd.raid_level,
            vd.state,
            decimal_bytes(vd.size_bytes),
            policies.join(" / "),
            vd.disk_cache_policy,
            vd.block_device.as_deref().unwrap_or("-"),
        ));
    }
    for pd in &mr.physical_drives {
        t.line(format!(
            "  pd {:#06x} slot {} {} {} {} {} {}{}",
            pd.id,
            pd.slot,
            pd.state.as_deref().unwrap_or("-"),
            pd.interface.as_deref().unwrap_or("-"),
            pd.model.as_deref().unwrap_or("-"),
            pd.serial.as_deref().unwrap_or("-"),
            pd.firmware.as_deref().unwrap_or("-"),
            pd.health
                .as_ref()
                .map(|h| format!(" health {}", h.overall))
                .unwrap_or_default(),
        ));
    }
}

fn md_lines(t: &mut Table, inv: &Inventory) {
    if inv.md_arrays.is_empty() {
        return;
    }
    t.line("md arrays:".into());
    for a in &inv.md_arrays {
        let members: Vec<String> = a
            .members
            .iter()
            .map(|m| format!("{}[{}]", m.device, m.state.join(",")))
            .collect();
        t.line(format!(
            "  {} {}{} {} {} bitmap {} consistency {} degraded {} members {}",
            a.name,
            a.level,
            if a.vroc { " (VROC/IMSM)" } else { "" },
            a.state,
            decimal_bytes(a.size_bytes),
            a.bitmap.as_deref().unwrap_or("-"),
            a.consistency_policy.as_deref().unwrap_or("-"),
            a.degraded.map_or("-".into(), |d| d.to_string()),
            members.join(" "),
        ));
    }
}

/// What the scan could not read, or found contradicting itself, one line
/// each under the table.
fn problems(inv: &Inventory) -> Vec<String> {
    let mut problems = Vec::new();
    problems.extend(inv.errors.iter().map(|e| format!("scan: {e}")));
    for c in &inv.controllers {
        problems.extend(c.errors.iter().map(|e| format!("{}: {e}", c.pci_address)));
        if let Some(mr) = &c.raid {
            problems.extend(mr.errors.iter().map(|e| format!("{}: {e}", c.pci_address)));
            problems.extend(
                mr.notes
                    .iter()
                    .map(|e| format!("{} (note): {e}", c.pci_address)),
            );
            for pd in &mr.physical_drives {
                problems.extend(
                    pd.errors
                        .iter()
                        .map(|e| format!("{} pd {:#06x}: {e}", c.pci_address, pd.id)),
                );
            }
        }
    }
    for a in &inv.md_arrays {
        problems.extend(a.errors.iter().map(|e| format!("{}: {e}", a.name)));
    }
    for d in &inv.disks {
        problems.extend(d.errors.iter().map(|e| format!("{}: {e}", d.name)));
        if let Some(wc) = d.write_cache.as_ref().filter(|wc| wc.disagreement) {
            let readings: Vec<String> = wc
                .readings
                .iter()
                .map(|r| {
                    format!(
                        "{}={}",
                        r.source,
                        match r.enabled {
                            Some(true) => "on",
                            Some(false) => "off",
                            None => "?",
                        }
                    )
                })
                .collect();
            problems.push(format!(
                "{}: write cache sources disagree: {}",
                d.name,
                readings.join(", ")
            ));
        }
    }
    problems
}
