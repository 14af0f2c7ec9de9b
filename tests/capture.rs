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
    assert_eq!(
        names,
        ["pxe-hidden", "pxe-image", "qemu-lab"],
        "the lab machines"
    );
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
    // A CDB that only reads: INQUIRY, MODE SENSE(10), LOG SENSE without
    // saving, and ATA PASS-THROUGH(16) IDENTIFY, SMART READ DATA, SMART
    // RETURN STATUS (the same rule refuses anything else to a drive
    // behind a controller).
    let reads = storcert::passthrough::reads_only;
    let mut kinds = std::collections::BTreeSet::new();
    for m in machines() {
        let replay = capture::read_file(&m.join("capture.tar.zst")).unwrap();
        for x in replay.capture.exchanges() {
            let ok = match &x.command {
                Command::Open | Command::NvmeNamespaceId => true,
                Command::Scsi { cdb, data_out, .. } => {
                    kinds.insert(format!("scsi {:02x}", cdb[0]));
                    data_out.is_empty() && reads(cdb)
                }
                // Through the controller: reads only by construction (no
                // data-out field), and the CDB must read too.
                Command::MfiPdScsi { cdb, .. } => {
                    kinds.insert(format!("mfi-pd scsi {:02x}", cdb[0]));
                    reads(cdb)
                }
                Command::NvmeAdmin { opcode, .. } => {
                    kinds.insert(format!("nvme {opcode:02x}"));
                    // Get Log Page, Identify, Get Features.
                    [0x02, 0x06, 0x0a].contains(opcode)
                }
                Command::Cciss { cdb, direction, .. } => {
                    kinds.insert(format!("cciss {:02x}", cdb[0]));
                    storcert::passthrough::cciss::only_reads(cdb, *direction)
                }
                Command::Bsg {
                    request, data_out, ..
                } => {
                    kinds.insert(format!("bsg {:02x}", request[0]));
                    storcert::passthrough::mpi3::only_reads(request, data_out)
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
    assert_eq!(
        replay.capture.missing(),
        (1, vec!["command /dev/nvme0n1: NVMe SMART log".to_string()])
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

/// Copies a tree, keeping symlinks as symlinks.
fn copy_tree(from: &Path, to: &Path) {
    common::sh(&format!("cp -a {}/. {}", common::s(from), common::s(to)));
}

#[test]
fn replaying_reads_nothing_of_the_host() {
    // Capture a recorded sysfs tree whose disks are regular files (so
    // each open works and SG_IO fails), then change everything on disk:
    // the replay must still give the first inventory, byte for byte.
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("machine");
    std::fs::create_dir(&base).unwrap();
    copy_tree(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-lab"),
        &base,
    );
    std::fs::create_dir_all(base.join("dev")).unwrap();
    for d in ["nvme0n1", "sda", "sdb", "sdc", "vda"] {
        std::fs::write(base.join("dev").join(d), b"not a device").unwrap();
    }
    let cap = capture::Capture::recording();
    let roots = storcert::inventory::Roots {
        source: capture::Source::Capturing(cap.clone()),
        ..storcert::inventory::Roots::under(&base)
    };
    let opts = storcert::inventory::ScanOptions::default();
    let live = storcert::inventory::scan(&roots, &opts);
    assert!(live.disks.len() >= 4, "{:?}", live.disks);
    assert!(
        cap.exchanges().len() > live.disks.len(),
        "opens and commands were taped"
    );
    let archive = cap.to_archive(&roots, &opts).unwrap();

    // Now the machine is another: other models, no disk nodes, no sysfs.
    for model in common::sh(&format!("find {} -name model", common::s(&base))).lines() {
        std::fs::write(model, "CHANGED\n").unwrap();
    }
    std::fs::remove_dir_all(base.join("dev")).unwrap();
    std::fs::remove_dir_all(base.join("sys/block")).unwrap();
    let replay = capture::read_archive(&archive).unwrap();
    let again = capture::replay(&replay);
    assert_eq!(replay.capture.missing(), (0, Vec::new()));
    assert_eq!(
        String::from_utf8(storcert::results::Artefact::from(again).to_json()).unwrap(),
        String::from_utf8(storcert::results::Artefact::from(live).to_json()).unwrap()
    );
}

#[test]
fn a_capture_s_strings_reach_the_terminal_as_text() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, json) = open(&lab());
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}1;31mALL DRIVES PASSED\r\u{202e}";
    // The capturing machine's --device, an unknown field, and a device
    // string in a file the inventory prints.
    let mut devices = json.clone();
    devices["options"]["devices"] = serde_json::json!([evil]);
    let mut field = json.clone();
    field["exchanges"][0]["command"]["kind"] = evil.into();
    let mut files_evil = files.clone();
    for (path, bytes) in &mut files_evil {
        if path.ends_with("/device/model") {
            *bytes = evil.as_bytes().to_vec();
        }
    }
    for (what, files, json, status) in [
        ("the capture's --device", &files, &devices, 0),
        ("an unknown kind", &files, &field, 2),
        ("a device's model", &files_evil, &json, 0),
    ] {
        let file = tmp.path().join("evil.tar.zst");
        pack(files, json, &file);
        for args in [vec![], vec!["--json"]] {
            let mut argv = vec!["inventory", "--replay", common::s(&file)];
            argv.extend(args);
            let out = common::storcert(&argv);
            assert_eq!(out.status.code(), Some(status), "{what}");
            for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                let text = String::from_utf8_lossy(bytes);
                assert!(
                    !text
                        .chars()
                        .any(|c| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\r' | '\u{202e}')),
                    "{what}: {stream} carries a control character: {text:?}"
                );
            }
        }
    }
}

#[test]
fn a_reply_of_another_kind_is_named_not_dumped() {
    let tmp = tempfile::tempdir().unwrap();
    let (files, mut json) = open(&lab());
    for x in json["exchanges"].as_array_mut().unwrap() {
        if x["op"] == "NVMe Identify Controller" {
            x["reply"] =
                serde_json::json!({"kind": "mfi", "status": 0, "data_in": "ab".repeat(1 << 20)});
        }
    }
    let file = tmp.path().join("kind.tar.zst");
    pack(&files, &json, &file);
    let inv = capture::replay(&capture::read_file(&file).unwrap());
    let nvme = inv.disks.iter().find(|d| d.name == "nvme0n1").unwrap();
    let probe = nvme
        .probes
        .iter()
        .find(|p| p.probe == "NVMe Identify Controller")
        .unwrap();
    assert_eq!(probe.outcome, "failed");
    let detail = probe.detail.as_deref().unwrap();
    assert!(detail.contains("a reply of another kind (mfi)"), "{detail}");
    assert!(detail.len() < 200, "{} bytes", detail.len());
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

    let mut twice = json.clone();
    let first = twice["files"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|f| f["answer"]["contents"].as_str().map(String::from))
        .unwrap();
    for f in twice["files"].as_array_mut().unwrap() {
        if f["answer"]["contents"].is_string() {
            f["answer"]["contents"] = first.clone().into();
        }
    }
    let named_twice = tmp.path().join("twice.tar.zst");
    let first_only: Vec<(String, Vec<u8>)> =
        files.iter().filter(|(p, _)| p == &first).cloned().collect();
    pack(&first_only, &twice, &named_twice);
    cases.push((
        "one file's contents named twice",
        named_twice,
        "named twice",
    ));

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
    assert_eq!(replay.capture.missing(), (0, Vec::new()));
    let replayed = common::storcert(&["inventory", "--replay", common::s(&cap), "--json"]);
    assert_eq!(replayed.stdout, out.stdout);
}

/// Runs `storcert inventory --replay FILE` under a generous safety
/// timeout: its stdout, its stderr, and its peak RSS in KiB (its VmHWM as
/// GNU time reports it: a child spawned by this test process directly
/// would be charged this process's own peak, which the exec carries over).
fn replay_measured(file: &Path) -> (String, String, u64) {
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib %M", "timeout", "-s", "KILL", "600"])
        .args([env!("CARGO_BIN_EXE_storcert"), "inventory", "--replay"])
        .arg(file)
        .output()
        .expect("GNU time (Debian package time; scripts/setup installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "the replay did not finish (137: killed after 600 s): {}",
        stderr.chars().take(2000).collect::<String>()
    );
    let (stderr, peak) = stderr
        .rsplit_once("peak-rss-kib ")
        .expect("GNU time's line");
    let peak = peak.trim().parse().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (stdout, stderr.to_string(), peak)
}

/// The lab's capture with these file records (each replacing the lab's
/// answer to the same question) and these files.
fn hostile(records: Vec<Value>, contents: Vec<(String, Vec<u8>)>, to: &Path) {
    let (mut files, mut json) = open(&lab());
    let asked = |r: &Value| (r["op"].clone(), r["path"].clone());
    let replaced: Vec<(Value, Value)> = records.iter().map(asked).collect();
    let lab = json["files"].as_array_mut().unwrap();
    lab.retain(|r| !replaced.contains(&asked(r)));
    lab.extend(records);
    files.retain(|(p, _)| !contents.iter().any(|(q, _)| p == q));
    files.extend(contents);
    pack(&files, &json, to);
}

fn listing(dir: &str, names: impl IntoIterator<Item = String>) -> Value {
    let names: Vec<String> = names.into_iter().collect();
    serde_json::json!({"op": "read_dir", "path": dir, "answer": {"names": names}})
}

/// `n` PCI storage controllers: the bus's listing, and each one's class.
fn storage_controllers(n: usize) -> (Vec<Value>, Vec<(String, Vec<u8>)>) {
    let addresses: Vec<String> = (0..n)
        .map(|n| format!("0000:{:02x}:{:02x}.0", n / 32, n % 32))
        .collect();
    let mut records = vec![listing("/sys/bus/pci/devices", addresses.clone())];
    let mut contents = Vec::new();
    for addr in addresses {
        let path = format!("/sys/bus/pci/devices/{addr}/class");
        let entry = format!("files{path}");
        records
            .push(serde_json::json!({"op": "read", "path": path, "answer": {"contents": entry}}));
        contents.push((entry, b"0x010802\n".to_vec()));
    }
    (records, contents)
}

#[test]
fn a_hostile_capture_replays_within_bounds_and_names_the_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let file = |name: &str| tmp.path().join(name);
    // The issue's: /sys/block lists 400,000 names, each a disk the
    // capture says nothing else of (28 unanswered questions each).
    hostile(
        vec![listing(
            "/sys/block",
            (0..400_000).map(|n| format!("sd{n}")),
        )],
        Vec::new(),
        &file("disks"),
    );
    // 5000 storage controllers.
    let (records, contents) = storage_controllers(5000);
    hostile(records, contents, &file("controllers"));
    // 1000 storage controllers, each walking every SCSI host of a folder
    // of 20,000 the capture answers for: 20 million questions answered.
    let (mut records, contents) = storage_controllers(1000);
    records.push(listing(
        "/sys/class/scsi_host",
        (0..20_000).map(|n| format!("host{n}")),
    ));
    for n in 0..20_000 {
        let path = format!("/sys/class/scsi_host/host{n}");
        let to = format!("/sys/devices/platform/host{n}/scsi_host/host{n}");
        records
            .push(serde_json::json!({"op": "canonicalize", "path": path, "answer": {"path": to}}));
    }
    hostile(records, contents, &file("hosts"));
    // Nearly 16 MiB of capture.json, all but a little short names: two
    // million, in thirty folders (each a disk's, walked for its
    // partitions), the first named to clear the screen.
    let disk = |n: usize| match n {
        0 => "sda\u{1b}[2J".to_string(),
        n => format!("sda{n}"),
    };
    let letters: Vec<String> = (0..65_536 + 3000).map(|n| format!("{n:x}")).collect();
    let mut records = vec![listing("/sys/block", (0..30).map(disk))];
    for n in 0..30 {
        records.push(listing(&format!("/sys/block/{}", disk(n)), letters.clone()));
    }
    hostile(records, Vec::new(), &file("letters"));
    // A few KB: /sys/block lists one disk 256 times, and as paths that
    // join to it ("sda/", "/sys/block/sda"), and the disk holds 65,536
    // holders: each listing would be a copy of them all.
    let mut names = vec!["sda".to_string(); 256];
    names.extend(["sda/", "/sys/block/sda", "..", ""].map(String::from));
    hostile(
        vec![
            listing("/sys/block", names),
            listing(
                "/sys/block/sda/holders",
                (0..65_536).map(|n| format!("{n:x}")),
            ),
        ],
        Vec::new(),
        &file("repeats"),
    );
    // 32 storage controllers of one driver, whose module's version file
    // is 30 MiB: one file, read for each.
    let (mut records, mut contents) = storage_controllers(32);
    for n in 0..32 {
        let path = format!("/sys/bus/pci/devices/0000:00:{n:02x}.0/driver");
        records.push(serde_json::json!({"op": "read_link", "path": path,
            "answer": {"path": "../../../bus/pci/drivers/ahci"}}));
    }
    records.push(
        serde_json::json!({"op": "read", "path": "/sys/module/ahci/version",
        "answer": {"contents": "files/sys/module/ahci/version"}}),
    );
    contents.push(("files/sys/module/ahci/version".into(), vec![b'v'; 30 << 20]));
    hostile(records, contents, &file("shared"));

    for (what, says) in [
        (
            "disks",
            &[
                "capture: /sys/block lists 400000 names; only the first 65536 were read",
                "capture: /sys/block lists 65536 block devices; only the first 8192 were read",
                "capture: 65536 questions went unanswered; it stopped asking at",
            ][..],
        ),
        (
            "controllers",
            &["capture: /sys/bus/pci/devices holds more than 1024 storage controllers; only the first 1024 were read"],
        ),
        (
            "hosts",
            // 20 million answers of 20,000 names: the answers' bytes
            // stop it first.
            &["capture: the replay was given 96 MiB of answers; it stopped asking at Canonicalize /sys/class/scsi_host/host"],
        ),
        (
            "letters",
            &[
                r"capture: /sys/block/sda\u{1b}[2J lists 68536 names; only the first 65536 were read",
                "capture: /sys/block/sda4 lists 68536 names; only the first 0 were read (a replay reads 262144 names of all folders at most)",
                "capture: and 22 more cuts",
                "capture: 65536 questions went unanswered; it stopped asking at Exists /sys/block/sda",
            ],
        ),
        (
            "repeats",
            &["capture: /sys/block lists 260 names; only the first 1 were read"],
        ),
        (
            "shared",
            &["capture: the replay was given 96 MiB of answers; it stopped asking at"],
        ),
    ] {
        let size = std::fs::metadata(file(what)).unwrap().len();
        let (stdout, stderr, peak_kib) = replay_measured(&file(what));
        println!(
            "{what}: a {} KiB capture replays in at most {} MiB",
            size / 1024,
            peak_kib / 1024
        );
        for line in says {
            assert!(stderr.contains(line), "{what}: no {line:?} in {stderr}");
        }
        // The cuts are said once each, in a few lines, as text.
        assert!(stderr.lines().count() <= 12, "{what}: {stderr}");
        assert!(!(stdout.clone() + &stderr).contains('\u{1b}'), "{what}");
        assert!(!stdout.is_empty(), "{what}: the inventory is printed");
        assert!(peak_kib < 256 * 1024, "{what}: peak RSS {peak_kib} KiB");
    }
}
