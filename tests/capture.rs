//! Inventory captures (`storcert inventory --capture`, and the one every
//! run keeps): each lab machine's capture, made live in the qemu lab,
//! replays here to the inventory that machine printed; capturing sent
//! only commands that read; and a capture is hostile input: a damaged or
//! foreign one is a one-line error, and replaying one never reads the
//! host.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use storcert::bundle::unpack::Limits;
use storcert::inventory::capture::{self, CAPTURE_JSON};
use storcert::passthrough::mfi;
use storcert::passthrough::tape::Command;

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/captures")
}

/// Every lab machine's capture folder (capture.tar.zst, inventory.json).
fn machines() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(captures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("capture.tar.zst").exists())
        .collect();
    dirs.sort();
    dirs
}

/// The capture's files as (path, bytes), and its capture.json.
fn open(capture: &Path) -> (Vec<(String, Vec<u8>)>, Value) {
    let bytes = std::fs::read(capture).unwrap();
    let unpacked = storcert::bundle::unpack_bytes(&bytes, &Limits::default()).unwrap();
    let json = serde_json::from_slice(&unpacked.files[CAPTURE_JSON]).unwrap();
    let files = unpacked
        .files
        .into_iter()
        .filter(|(p, _)| p != "manifest.json" && p != CAPTURE_JSON)
        .collect();
    (files, json)
}

/// A capture archive of these files and this capture.json.
fn pack(files: &[(String, Vec<u8>)], json: &Value, to: &Path) {
    let mut entries = vec![(CAPTURE_JSON.to_string(), json.to_string().into_bytes())];
    entries.extend(files.iter().cloned());
    std::fs::write(to, storcert::bundle::pack(entries).unwrap()).unwrap();
}

fn lab() -> PathBuf {
    captures().join("qemu-lab/capture.tar.zst")
}

#[test]
fn each_lab_machines_capture_replays_to_the_inventory_it_printed() {
    let machines = machines();
    let names: Vec<String> = machines
        .iter()
        .map(|m| m.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["pxe-image", "qemu-lab"], "the lab machines");
    for m in machines {
        common::assert_replay_matches(
            &m.file_name().unwrap().to_string_lossy(),
            &m.join("capture.tar.zst"),
            &m.join("inventory.json"),
        );
    }
}

#[test]
fn capturing_sent_only_commands_that_read() {
    let read_dcmds = [
        mfi::DCMD_CTRL_GET_INFO,
        mfi::DCMD_LD_GET_LIST,
        mfi::DCMD_LD_GET_INFO,
        mfi::DCMD_CFG_READ,
        mfi::DCMD_PD_GET_LIST,
        mfi::DCMD_PD_GET_INFO,
    ];
    let mut kinds = std::collections::BTreeSet::new();
    for m in machines() {
        let replay = capture::read_file(&m.join("capture.tar.zst")).unwrap();
        for x in replay.capture.exchanges() {
            let ok = match &x.command {
                Command::Open | Command::NvmeNamespaceId => true,
                Command::Scsi { cdb, data_out, .. } => {
                    kinds.insert(format!("scsi {:02x}", cdb[0]));
                    data_out.is_empty()
                        && match cdb[0] {
                            // INQUIRY, MODE SENSE(10), LOG SENSE.
                            0x12 | 0x5a | 0x4d => true,
                            // ATA PASS-THROUGH(16): IDENTIFY, SMART READ
                            // DATA, SMART RETURN STATUS.
                            0x85 => {
                                cdb[14] == 0xec
                                    || (cdb[14] == 0xb0 && [0xd0, 0xda].contains(&cdb[4]))
                            }
                            _ => false,
                        }
                }
                Command::NvmeAdmin { opcode, .. } => {
                    kinds.insert(format!("nvme {opcode:02x}"));
                    // Get Log Page, Identify, Get Features.
                    [0x02, 0x06, 0x0a].contains(opcode)
                }
                Command::MfiDcmd {
                    opcode, data_out, ..
                } => {
                    kinds.insert(format!("mfi {opcode:08x}"));
                    data_out.is_empty() && read_dcmds.contains(opcode)
                }
            };
            assert!(
                ok,
                "{}: {} wrote or is unknown: {:?}",
                m.display(),
                x.op,
                x.command
            );
        }
    }
    // Not vacuous: the lab's SATA, NVMe and MegaRAID were all asked.
    for want in [
        "scsi 85",
        "scsi 12",
        "nvme 06",
        "nvme 02",
        "mfi 01010000",
        "mfi 02020000",
    ] {
        assert!(kinds.contains(want), "no {want} in {kinds:?}");
    }
}

#[test]
fn a_command_the_capture_lacks_fails_its_probe_and_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, mut json) = open(&lab());
    let before = json["exchanges"].as_array().unwrap().len();
    json["exchanges"]
        .as_array_mut()
        .unwrap()
        .retain(|x| x["op"] != "NVMe SMART log");
    assert!(json["exchanges"].as_array().unwrap().len() < before);
    let edited = tmp.path().join("edited.tar.zst");
    pack(&files, &json, &edited);
    let replay = capture::read_file(&edited).unwrap();
    let inv = capture::replay(&replay);
    let nvme = inv.disks.iter().find(|d| d.name == "nvme0n1").unwrap();
    let probe = nvme
        .probes
        .iter()
        .find(|p| p.probe == "NVMe SMART log")
        .unwrap();
    assert_eq!(probe.outcome, "failed", "{probe:?}");
    assert!(
        replay
            .capture
            .missing()
            .iter()
            .any(|m| m == "command /dev/nvme0n1: NVMe SMART log"),
        "{:?}",
        replay.capture.missing()
    );
    // The command line says so, and still prints the inventory.
    let out = common::storcert(&["inventory", "--replay", common::s(&edited), "--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not answer 1 of this storcert's questions"),
        "{err}"
    );
}

#[test]
fn replaying_reads_nothing_of_the_host() {
    // A capture whose roots are a real sysfs tree on this machine, but
    // which answers nothing: the replay must see no disk there.
    let tmp = tempfile::tempdir().unwrap();
    let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab");
    let (_, mut json) = open(&lab());
    json["roots"]["sys"] = tree.join("sys").display().to_string().into();
    json["roots"]["proc"] = tree.join("proc").display().to_string().into();
    json["roots"]["udev_data"] = tree.join("udev").display().to_string().into();
    json["files"] = Value::Array(Vec::new());
    // And an exchange for a device the host has: never sent.
    let empty = tmp.path().join("empty.tar.zst");
    pack(&[], &json, &empty);
    let replay = capture::read_file(&empty).unwrap();
    let inv = capture::replay(&replay);
    assert!(inv.disks.is_empty(), "{:?}", inv.disks);
    assert!(inv.controllers.is_empty());
    assert!(
        inv.errors.iter().any(|e| e.contains("No such file")),
        "{:?}",
        inv.errors
    );
    assert!(!replay.capture.missing().is_empty());
}

#[test]
fn a_damaged_or_foreign_capture_is_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, json) = open(&lab());
    let bytes = std::fs::read(lab()).unwrap();
    let mut cases: Vec<(&str, PathBuf, &str)> = Vec::new();

    let cut = tmp.path().join("cut.tar.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    cases.push(("cut in half", cut, "not a capture archive"));

    let foreign = tmp.path().join("bundle.tar.zst");
    std::fs::write(
        &foreign,
        storcert::bundle::pack(vec![("summary.json".into(), b"{}".to_vec())]).unwrap(),
    )
    .unwrap();
    cases.push(("a bundle", foreign, "it has no capture.json"));

    let mut other = json.clone();
    other["format"] = "\u{1b}[2Jsomething else".into();
    let wrong = tmp.path().join("format.tar.zst");
    pack(&files, &other, &wrong);
    cases.push(("another format", wrong, "this storcert reads"));

    let lost = tmp.path().join("lost.tar.zst");
    pack(&files[1..], &json, &lost);
    cases.push(("a file's contents missing", lost, "are not in the archive"));

    let mut bad_hex = json.clone();
    bad_hex["exchanges"][1]["reply"]["data_in"] = "zz".into();
    let hex = tmp.path().join("hex.tar.zst");
    pack(&files, &bad_hex, &hex);
    cases.push(("bytes that are not hex", hex, "capture.json"));

    // Refused by its size, before a byte is read (sparse: no disk used).
    let huge = tmp.path().join("huge.tar.zst");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(capture::MAX_CAPTURE + 1)
        .unwrap();
    cases.push(("too large", huge, "larger than 64 MiB"));

    for (what, file, says) in cases {
        let out = common::storcert(&["inventory", "--replay", common::s(&file)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(says), "{what}: {err}");
        assert!(!err.contains('\u{1b}'), "{what}: unescaped: {err}");
        assert!(out.stdout.is_empty(), "{what}");
    }
}

#[test]
fn capture_and_replay_on_this_machine_agree() {
    // Whatever this host has (loop devices at least, with --all).
    let tmp = tempfile::tempdir().unwrap();
    let cap = tmp.path().join("host.tar.zst");
    let live = tmp.path().join("live.json");
    let out = common::storcert(&["inventory", "--all", "--json", "--capture", common::s(&cap)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&live, &out.stdout).unwrap();
    let replay = capture::read_file(&cap).unwrap();
    capture::replay(&replay);
    assert_eq!(replay.capture.missing(), Vec::<String>::new());
    let replayed = common::storcert(&["inventory", "--replay", common::s(&cap), "--json"]);
    assert_eq!(replayed.stdout, out.stdout);
}
