//! The identity of the machine a bundle speaks for: DMI (vendor, product,
//! serial, UUID, BIOS), CPU, memory, kernel, storcert's version and the
//! image build id. Read from /sys/class/dmi/id and /proc, never by running
//! a vendor tool.

use std::path::Path;

pub use crate::results::system::{unrecorded, Dmi, SystemIdentity};

/// Where the image records its build id (written by scripts/build-image).
pub const IMAGE_BUILD_ID: &str = "/etc/storcert-build-id";

fn read_trim(path: &Path) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Reads the running machine (`root` is "/" except in tests).
pub fn probe(root: &Path) -> SystemIdentity {
    let dmi_dir = root.join("sys/class/dmi/id");
    let d = |name: &str| read_trim(&dmi_dir.join(name));
    let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let cpu_count = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let memory_bytes = std::fs::read_to_string(root.join("proc/meminfo"))
        .ok()
        .and_then(|m| crate::util::size::mem_total_bytes(&m));
    SystemIdentity {
        schema_version: crate::results::system::SCHEMA_VERSION,
        dmi: Dmi {
            sys_vendor: d("sys_vendor"),
            product_name: d("product_name"),
            product_serial: d("product_serial"),
            product_uuid: d("product_uuid"),
            board_vendor: d("board_vendor"),
            board_name: d("board_name"),
            board_serial: d("board_serial"),
            chassis_serial: d("chassis_serial"),
            bios_vendor: d("bios_vendor"),
            bios_version: d("bios_version"),
            bios_date: d("bios_date"),
        },
        cpu_model,
        cpu_count,
        memory_bytes,
        kernel: read_trim(&root.join("proc/sys/kernel/osrelease")),
        hostname: read_trim(&root.join("proc/sys/kernel/hostname")),
        storcert_version: env!("CARGO_PKG_VERSION").to_string(),
        image_build_id: read_trim(&root.join(IMAGE_BUILD_ID.trim_start_matches('/'))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reads_a_recorded_tree() {
        let root = tempfile::tempdir().unwrap();
        let dmi = root.path().join("sys/class/dmi/id");
        std::fs::create_dir_all(&dmi).unwrap();
        std::fs::write(dmi.join("sys_vendor"), "Dell Inc.\n").unwrap();
        std::fs::write(dmi.join("product_serial"), "7XYZ123\n").unwrap();
        std::fs::write(dmi.join("product_uuid"), "   \n").unwrap();
        std::fs::create_dir_all(root.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(
            root.path().join("proc/cpuinfo"),
            "processor\t: 0\nmodel name\t: Xeon\nprocessor\t: 1\nmodel name\t: Xeon\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("proc/meminfo"),
            "MemTotal:       1024 kB\n",
        )
        .unwrap();
        let s = probe(root.path());
        assert_eq!(s.dmi.sys_vendor.as_deref(), Some("Dell Inc."));
        assert_eq!(s.dmi.product_serial.as_deref(), Some("7XYZ123"));
        assert_eq!(s.dmi.product_uuid, None, "blank values are absent");
        assert_eq!(s.cpu_model.as_deref(), Some("Xeon"));
        assert_eq!(s.cpu_count, 2);
        assert_eq!(s.memory_bytes, Some(1024 * 1024));
        assert_eq!(s.machine().serial.as_deref(), Some("7XYZ123"));
    }
}
