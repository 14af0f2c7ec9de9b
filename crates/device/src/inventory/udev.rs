//! The udev database (/run/udev/data/b<major>:<minor>), read directly so
//! that the binary stays static (libudev exists only as a shared library).
//! Without a running udev (a bare initramfs, a container) the inventory
//! falls back to sysfs and the /dev/disk/by-id links, if any.

use std::collections::BTreeMap;

use super::Roots;

/// What udev recorded about one block device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UdevRecord {
    /// Symlinks relative to /dev ("disk/by-id/ata-...").
    pub links: Vec<String>,
    pub properties: BTreeMap<String, String>,
}

impl UdevRecord {
    pub fn parse(text: &str) -> UdevRecord {
        let mut rec = UdevRecord::default();
        for line in text.lines() {
            if let Some(link) = line.strip_prefix("S:") {
                rec.links.push(link.to_string());
            } else if let Some(prop) = line.strip_prefix("E:") {
                if let Some((k, v)) = prop.split_once('=') {
                    rec.properties.insert(k.to_string(), v.to_string());
                }
            }
        }
        rec
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.properties.get(key).filter(|v| !v.is_empty()).cloned()
    }

    /// The /dev/disk/by-id links, as absolute paths.
    pub fn by_id(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .links
            .iter()
            .filter(|l| l.starts_with("disk/by-id/"))
            .map(|l| format!("/dev/{l}"))
            .collect();
        v.sort();
        v
    }
}

pub fn database_present(roots: &Roots) -> bool {
    // Listing it is what reading it needs (and what a capture can answer).
    roots.read_dir(&roots.udev_data).is_ok()
}

/// The record of device `devnum` ("8:0"), if udev keeps one.
pub fn record(roots: &Roots, devnum: &str) -> Option<UdevRecord> {
    let text = roots
        .read_to_string(&roots.udev_data.join(format!("b{devnum}")))
        .ok()?;
    Some(UdevRecord::parse(&text))
}

/// by-id links found in /dev/disk/by-id, by the kernel name they point
/// at, for systems where /dev is populated but the udev database is not
/// readable. Read once per scan (a machine of many disks lists it once).
pub fn by_id_links(roots: &Roots) -> BTreeMap<String, Vec<String>> {
    let dir = roots.dev.join("disk/by-id");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(names) = roots.read_dir(&dir) else {
        return out;
    };
    for link in names {
        let Ok(target) = roots.read_link(&dir.join(&link)) else {
            continue;
        };
        if let Some(name) = target.file_name() {
            out.entry(name.to_string_lossy().into_owned())
                .or_default()
                .push(format!("/dev/disk/by-id/{link}"));
        }
    }
    for links in out.values_mut() {
        links.sort();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_udev_database_record() {
        let text =
            "S:disk/by-id/ata-SAMSUNG_MZ7KM480_S2HS\nS:disk/by-path/pci-0000:00:1f.2-ata-1\n\
                    S:disk/by-id/wwn-0x5002538e40102345\nE:ID_FS_TYPE=ext4\nE:ID_FS_LABEL=\nW:3\n\
                    E:ID_SERIAL_SHORT=S2HS\nbroken line\n";
        let rec = UdevRecord::parse(text);
        assert_eq!(
            rec.by_id(),
            vec![
                "/dev/disk/by-id/ata-SAMSUNG_MZ7KM480_S2HS",
                "/dev/disk/by-id/wwn-0x5002538e40102345"
            ]
        );
        assert_eq!(rec.get("ID_FS_TYPE").as_deref(), Some("ext4"));
        assert_eq!(rec.get("ID_FS_LABEL"), None);
        assert_eq!(rec.get("ID_SERIAL_SHORT").as_deref(), Some("S2HS"));
    }
}
