//! End-to-end boots of the image that scripts/build-image made (in
//! image-out/, or $STORCERT_IMAGE_DIR), under qemu TCG, each under a
//! timeout and ending by the guest powering itself off:
//!
//! - PXE: iPXE fetches storcert.ipxe, the kernel, the initrd and a site
//!   overlay (key and profile) from qemu's built-in TFTP; the guest qualifies
//!   NVMe, SATA, two MegaRAID and a virtio disk, refuses a decoy holding
//!   ext4, and uploads to a collector on the host's 127.0.0.1 (10.0.2.2).
//! - USB: the stick image under OVMF as a usb-storage device, first with
//!   no network (the bundle stays on the stick's STORCERT partition), then
//!   with one (the spooled bundle is delivered and leaves the spool).
//! - A bad profile on the kernel command line: the error on the console,
//!   the failure exit, power off, no disk touched.
//! - The live board: the PXE guest shows on the collector's board while it
//!   runs (in headless Chromium) and moves to finished with its bundle; a
//!   guest killed mid-run shows as stalled.
//!
//! Ignored for a plain `cargo test`: scripts/test builds the image first.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use common::{s, sh, sha256_file as sha};

fn image_dir() -> PathBuf {
    let dir = std::env::var_os("STORCERT_IMAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("image-out"));
    assert!(
        dir.join("initrd.img").exists(),
        "no image in {} (run scripts/build-image)",
        dir.display()
    );
    dir
}

fn sparse(path: &Path, mib: u64) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(mib << 20)
        .unwrap();
}

/// A finished guest: whether qemu ended by itself (the guest powered off)
/// and what the console showed.
struct Guest {
    powered_off: bool,
    console: String,
    secs: u64,
}

/// qemu as every boot test runs it, under `timeout`: TCG, q35, 2 vCPUs,
/// no display, no reboot. -nographic: the firmware (SeaBIOS, iPXE, OVMF)
/// writes to the serial port too, so the console shows the whole boot.
fn qemu(timeout_s: u64) -> Command {
    let mut c = Command::new("timeout");
    c.args([
        "--kill-after=10",
        &timeout_s.to_string(),
        "qemu-system-x86_64",
    ])
    .args([
        "-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "2",
    ])
    .args(["-m", "2048", "-nographic", "-no-reboot", "-monitor", "none"]);
    c
}

/// A direct kernel boot of the image, `extra` after the image's own words
/// of the command line (image/cmdline).
fn direct_boot(image: &Path, extra: &str) -> Vec<String> {
    let cmdline =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("image/cmdline"))
            .unwrap();
    vec![
        "-kernel".into(),
        s(&image.join("vmlinuz")).into(),
        "-initrd".into(),
        s(&image.join("initrd.img")).into(),
        "-append".into(),
        format!("{} {extra}", cmdline.trim()),
    ]
}

/// Runs the guest with its console on the first serial port, into a file;
/// the guest must power off by itself.
fn boot(name: &str, dir: &Path, timeout_s: u64, args: &[String]) -> Guest {
    let console = match std::env::var_os("STORCERT_BOOT_LOGS") {
        Some(keep) => Path::new(&keep).join(format!("{name}.console.log")),
        None => dir.join(format!("{name}.console.log")),
    };
    let started = Instant::now();
    let status = qemu(timeout_s)
        .stdin(Stdio::null())
        .args(["-serial", &format!("file:{}", s(&console))])
        .args(args)
        .status()
        .unwrap();
    let secs = started.elapsed().as_secs();
    let text = String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).into_owned();
    eprintln!("boot {name}: qemu ended after {secs} s ({status})");
    Guest {
        powered_off: status.success(),
        console: text,
        secs,
    }
}

fn disk(file: &Path, id: &str, device: &str) -> Vec<String> {
    vec![
        "-drive".into(),
        format!("if=none,id={id},file={},format=raw,cache=unsafe", s(file)),
        "-device".into(),
        format!("{device},drive={id}"),
    ]
}

/// "first device I/O 9.0 s after kernel start", printed by storcert in the image.
fn first_io(console: &str) -> Option<f64> {
    console
        .lines()
        .find_map(|l| l.split("first device I/O ").nth(1))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
}

/// Prints the boot's figures past the test harness's capture (straight to
/// stderr), so that CI's log shows them for passing tests too.
fn report(name: &str, g: &Guest) {
    use std::io::Write;
    let line = match first_io(&g.console) {
        Some(t) => format!(
            "boot {name}: kernel start to first device I/O {t:.1} s (target <= 20 s); whole boot {} s\n",
            g.secs
        ),
        None => format!("boot {name}: storcert sent no I/O; whole boot {} s\n", g.secs),
    };
    let _ = std::io::stderr().write_all(line.as_bytes());
}

struct Collector {
    child: Child,
    port: u16,
    store: PathBuf,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Collector {
    fn start(dir: &Path, trusted: &Path) -> Collector {
        Self::start_with(dir, trusted, &[])
    }

    fn start_with(dir: &Path, trusted: &Path, extra: &[&str]) -> Collector {
        let store = dir.join("store");
        let (child, addr) = common::start_collector(
            Command::new(env!("CARGO_BIN_EXE_storcert"))
                .args(["collect", "--listen", "127.0.0.1:0", "--store", s(&store)])
                .args([
                    "--trusted-keys",
                    s(trusted),
                    "--db",
                    s(&dir.join("index.db")),
                ])
                .args(extra),
            true,
        );
        let port = addr.rsplit(':').next().unwrap().parse().unwrap();
        Collector { child, port, store }
    }

    fn addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The board's rows.
    fn board(&self) -> Vec<serde_json::Value> {
        common::board(&self.addr())
    }

    /// Watches the board while a guest runs: the first row seen running a
    /// stage, and the board page as headless Chromium built it then.
    fn watch_board(&self) -> BoardWatch {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, addr) = (stop.clone(), self.addr());
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let (_, body) = common::http_get(&addr, "/api/board");
                let rows: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let running = rows.as_array().and_then(|rows| {
                    rows.iter()
                        .find(|r| r["shown"] == "running" && r["heartbeat"]["stage"].is_string())
                        .cloned()
                });
                if let Some(row) = running {
                    let dom = common::chromium(&["--dump-dom", &format!("{addr}/board")]);
                    return Some((row, String::from_utf8_lossy(&dom.stdout).into_owned()));
                }
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            None
        });
        BoardWatch { stop, thread }
    }

    fn bundles(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.store.join("bundles"))
            .map(|rd| {
                rd.map(|e| e.unwrap().path())
                    .filter(|p| s(p).ends_with(".tar.zst"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

struct BoardWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Option<(serde_json::Value, String)>>,
}

impl BoardWatch {
    /// What it saw: the running row and the page.
    fn seen(self) -> Option<(serde_json::Value, String)> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// Verifies a bundle; one a collector stored (named by its digest, with
/// its record under summaries/) as the name it was signed as.
fn verify(bundle: &Path, public: &Path) -> serde_json::Value {
    let mut args = vec![
        "bundle",
        "verify",
        s(bundle),
        "--pubkey",
        s(public),
        "--json",
    ];
    let record = bundle
        .parent()
        .and_then(Path::parent)
        .map(|store| {
            let name = bundle.file_name().unwrap().to_string_lossy();
            store
                .join("summaries")
                .join(name.replace(".tar.zst", ".json"))
        })
        .filter(|p| p.exists());
    let signed_as = record.map(|r| common::json(&r)["name"].as_str().unwrap().to_string());
    if let Some(n) = &signed_as {
        args.extend(["--as", n]);
    }
    let out = common::storcert(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn keygen(dir: &Path) -> (PathBuf, PathBuf) {
    let key = dir.join("site.key");
    let out = common::storcert(&["keygen", "-s", s(&key)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (key.clone(), dir.join("site.key.pub"))
}

/// What PXE needs: TFTP serving the image's artefacts, a site overlay
/// (the key and `profile`) and the operator's wrapper script that sets the
/// command line (upload to `collector`) and chains storcert.ipxe; the
/// qemu arguments that boot from it.
fn pxe_network(dir: &Path, key: &Path, profile: &str, collector: &Collector) -> Vec<String> {
    let image = image_dir();
    let d = |n: &str| dir.join(n);
    let tftp = d("tftp");
    std::fs::create_dir(&tftp).unwrap();
    for f in ["vmlinuz", "initrd.img", "storcert.ipxe"] {
        std::fs::copy(image.join(f), tftp.join(f)).unwrap();
    }
    let overlay = d("overlay/etc/storcert");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::copy(key, overlay.join("storcert.key")).unwrap();
    std::fs::write(overlay.join("pxe.toml"), profile).unwrap();
    sh(&format!(
        "cd {} && find . | cpio --quiet -o -H newc > {}",
        s(&d("overlay")),
        s(&tftp.join("site.cpio"))
    ));
    let args = format!(
        "storcert.profile=/etc/storcert/pxe.toml storcert.upload=http://10.0.2.2:{}/upload/ storcert.allow_http",
        collector.port
    );
    std::fs::write(
        tftp.join("boot.ipxe"),
        format!("#!ipxe\nset storcert-args {args}\nset storcert-overlay site.cpio\nchain storcert.ipxe\n"),
    )
    .unwrap();
    vec![
        "-boot".into(),
        "n".into(),
        "-nic".into(),
        format!(
            "user,model=virtio-net-pci,tftp={},bootfile=boot.ipxe",
            s(&tftp)
        ),
    ]
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn pxe_boot_qualifies_every_disk_and_delivers_one_verified_bundle() {
    let image = image_dir();
    let t = tempfile::tempdir().unwrap();
    let d = |n: &str| t.path().join(n);
    let (key, public) = keygen(t.path());
    let collector = Collector::start(t.path(), &public);

    // The disks, and a decoy whose every byte must survive.
    for (n, mib) in [
        ("nvme", 1024),
        ("sata", 1024),
        ("mega0", 1024),
        ("mega1", 1024),
        ("virtio", 1024),
        ("decoy", 128),
    ] {
        sparse(&d(n), mib);
    }
    sh(&format!(
        "mkfs.ext4 -q -F -L precious {0} && echo 'customer data' > {1} && debugfs -w -R 'write {1} note' {0} >/dev/null 2>&1",
        s(&d("decoy")),
        s(&d("note"))
    ));
    let decoy_before = sha(&d("decoy"));

    let mut q = pxe_network(t.path(), &key, include_str!("boot/pxe.toml"), &collector);
    q.extend(disk(&d("nvme"), "nvme", "nvme,serial=E2ENVME0001"));
    q.extend(["-device".into(), "ahci,id=ahci0".into()]);
    q.extend(disk(
        &d("sata"),
        "sata",
        "ide-hd,bus=ahci0.0,model=STORCERT E2E SATA,serial=E2ESATA0001,write-cache=off",
    ));
    q.extend(["-device".into(), "megasas-gen2,id=mega".into()]);
    q.extend(disk(
        &d("mega0"),
        "mega0",
        "scsi-hd,bus=mega.0,scsi-id=0,lun=0,serial=E2EMEGA0001",
    ));
    q.extend(disk(
        &d("mega1"),
        "mega1",
        "scsi-hd,bus=mega.0,scsi-id=1,lun=0,serial=E2EMEGA0002",
    ));
    q.extend(disk(
        &d("virtio"),
        "virtio",
        "virtio-blk-pci,serial=E2EVIRTIO01",
    ));
    q.extend(disk(
        &d("decoy"),
        "decoy",
        "virtio-blk-pci,serial=E2EDECOY01",
    ));
    // A SCSI controller the image has no module for (sym53c8xx).
    q.extend(["-device".into(), "lsi53c895a,id=undriven".into()]);
    let watch = collector.watch_board();
    let g = boot("pxe", t.path(), 420, &q);
    report("pxe", &g);
    let c = &g.console;
    assert!(g.powered_off, "the guest did not power off by itself:\n{c}");
    // While it ran, the board showed it running a stage, in a browser too.
    let (row, dom) = watch
        .seen()
        .unwrap_or_else(|| panic!("the board never showed the guest running:\n{c}"));
    let run_id = row["heartbeat"]["run_id"].as_str().unwrap().to_string();
    assert_eq!(row["heartbeat"]["profile"], "pxe-e2e", "{row}");
    assert!(
        dom.contains(&format!("data-run=\"{run_id}\" data-state=\"running\"")),
        "{dom}"
    );
    assert!(
        c.contains("storcert: loading the image"),
        "iPXE never ran storcert.ipxe:\n{c}"
    );
    assert!(
        c.contains("E2EDECOY01") || c.contains("skipping /dev/vdb"),
        "the decoy was not named as refused:\n{c}"
    );
    assert!(c.contains("delivered to"), "no delivery:\n{c}");

    // Exactly one copy arrived, and it verifies with the site's key.
    let stored = collector.bundles();
    assert_eq!(stored.len(), 1, "{stored:?}\n{c}");
    // And then finished, linked to the bundle that arrived.
    let finished = collector
        .board()
        .into_iter()
        .find(|r| r["heartbeat"]["run_id"] == run_id.as_str())
        .unwrap();
    assert_eq!(finished["shown"], "finished", "{finished}");
    assert_eq!(
        format!("{}.tar.zst", finished["bundle_sha256"].as_str().unwrap()),
        stored[0].file_name().unwrap().to_str().unwrap()
    );
    let v = verify(&stored[0], &public);
    let drives = v["summary"]["drives"].as_array().unwrap();
    for serial in [
        "E2ENVME0001",
        "E2ESATA0001",
        "E2EMEGA0001",
        "E2EMEGA0002",
        "E2EVIRTIO01",
    ] {
        let drive = drives
            .iter()
            .find(|x| x["serial"] == serial)
            .unwrap_or_else(|| panic!("{serial} is not in the bundle: {drives:?}"));
        let verdict = drive["verdict"].as_str().unwrap();
        assert!(
            ["pass", "fail"].contains(&verdict),
            "{serial}: {verdict}: {drive}"
        );
    }
    assert!(
        !drives.iter().any(|x| x["serial"] == "E2EDECOY01"),
        "the decoy was tested: {drives:?}"
    );
    // The stages the profile asked for all ran.
    let unpacked = d("unpacked");
    unpack(&stored[0], &unpacked);
    let listing = sh(&format!("cd {} && find . -type f | sort", s(&unpacked)));
    // The bundle records the image it ran on.
    let manifest = common::json(&image.join("manifest.json"));
    let system = bundle_json(&unpacked, "system.json");
    assert_eq!(system["image_build_id"], manifest["build_id"], "{system}");
    let kernel = manifest["kernel"]["package"].as_str().unwrap();
    assert!(kernel.starts_with("linux-image-"), "{kernel}");
    for want in [
        "policy",
        "health",
        "provision",
        "act",
        "stream",
        "inventory.json",
        "system.json",
    ] {
        assert!(
            listing.contains(want),
            "no {want} in the bundle:\n{listing}"
        );
    }
    assert_eq!(sha(&d("decoy")), decoy_before, "the decoy disk changed");
    // The undriven controller: in the inventory with the module it would
    // need, a finding that says what it means, and the run failed for it
    // (the profile's hardware = "fail").
    // The run captured its inventory: replayed here, it is the same.
    common::assert_replay_matches(
        "pxe-image",
        &unpacked.join("results/inventory-capture.tar.zst"),
        &unpacked.join("results/inventory.json"),
    );
    let inv = bundle_json(&unpacked, "inventory.json");
    let undriven = inv["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["device_id"] == "0x0012")
        .unwrap_or_else(|| panic!("no 1000:0012 in {}", inv["controllers"]));
    assert!(undriven["driver"].is_null(), "{undriven}");
    assert_eq!(undriven["module"]["name"], "sym53c8xx", "{undriven}");
    assert_eq!(undriven["module"]["in_image"], false, "{undriven}");
    assert!(!inv["network_controllers"].as_array().unwrap().is_empty());
    let policy = bundle_json(&unpacked, "policy.json");
    let finding = policy["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "storage controller driver")
        .unwrap_or_else(|| panic!("no hardware finding: {policy}"));
    let actual = finding["actual"].as_str().unwrap();
    assert!(
        actual.contains("the drives behind 1000:0012")
            && actual.contains("cannot be seen")
            && actual.contains("sym53c8xx is not in this image"),
        "{finding}"
    );
    assert_eq!(finding["severity"], "fail", "{finding}");
    assert_eq!(v["summary"]["verdict"], "fail", "{}", v["summary"]);
    assert!(
        v["summary"]["reasons"].to_string().contains("1000:0012"),
        "the verdict's reasons do not name the controller: {}",
        v["summary"]
    );
    assert!(
        c.contains("hardware: 1000:0012"),
        "the console does not say it:\n{c}"
    );
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn pxe_boot_with_every_drive_out_of_sight_still_delivers_a_failing_bundle() {
    // The machine's only disk sits behind a SCSI controller no module of
    // the image drives: nothing to test, and the operator must hear it.
    let t = tempfile::tempdir().unwrap();
    let d = |n: &str| t.path().join(n);
    let (key, public) = keygen(t.path());
    let collector = Collector::start(t.path(), &public);
    sparse(&d("hidden"), 256);
    let mut q = pxe_network(t.path(), &key, include_str!("boot/pxe.toml"), &collector);
    q.extend(["-device".into(), "lsi53c895a,id=undriven".into()]);
    q.extend(disk(
        &d("hidden"),
        "hidden",
        "scsi-hd,bus=undriven.0,scsi-id=0,serial=E2EHIDDEN01",
    ));
    let g = boot("pxe-hidden", t.path(), 300, &q);
    report("pxe-hidden", &g);
    let c = &g.console;
    assert!(g.powered_off, "the guest did not power off by itself:\n{c}");
    assert!(
        c.contains("no drive to test: the drives behind 1000:0012 at 0000:00:03.0 cannot be seen; the kernel's module sym53c8xx is not in this image"),
        "the console does not say why nothing was tested:\n{c}"
    );
    assert!(c.contains("delivered to"), "no delivery:\n{c}");
    let stored = collector.bundles();
    assert_eq!(stored.len(), 1, "{stored:?}\n{c}");
    let v = verify(&stored[0], &public);
    assert_eq!(v["summary"]["verdict"], "fail", "{}", v["summary"]);
    assert!(
        v["summary"]["reasons"].to_string().contains("1000:0012"),
        "{}",
        v["summary"]
    );
    let unpacked = d("unpacked");
    unpack(&stored[0], &unpacked);
    let targets = bundle_json(&unpacked, "targets.json");
    assert_eq!(targets["targets"], serde_json::json!([]), "{targets}");
    let notes = bundle_json(&unpacked, "run-notes.json");
    assert!(
        notes["notes"].to_string().contains("no drive to test"),
        "{notes}"
    );
    common::assert_replay_matches(
        "pxe-hidden",
        &unpacked.join("results/inventory-capture.tar.zst"),
        &unpacked.join("results/inventory.json"),
    );
}

/// Unpacks a results bundle (a .tar.zst) into the new folder `into`.
fn unpack(bundle: &Path, into: &Path) {
    std::fs::create_dir(into).unwrap();
    sh(&format!("zstd -dc {} | tar -x -C {}", s(bundle), s(into)));
}

/// The first file called `name` in an unpacked bundle, parsed.
fn bundle_json(unpacked: &Path, name: &str) -> serde_json::Value {
    let found = sh(&format!("find {} -name {name} | head -n 1", s(unpacked)));
    common::json(Path::new(found.trim()))
}

/// The byte offset of partition `n` in the stick image, from its GPT (1:
/// the ESP, 2: STORCERT).
fn partition_offset(img: &Path, n: u32) -> u64 {
    let table = sh(&format!("sgdisk -p {}", s(img)));
    let line = table
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{n} ")))
        .unwrap_or_else(|| panic!("no partition {n}:\n{table}"));
    let start: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    start * 512
}

fn mtools(img: &Path, offset: u64, cmd: &str, args: &str) -> String {
    sh(&format!("{cmd} -i {}@@{offset} {args}", s(img)))
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn usb_stick_keeps_the_bundle_offline_and_delivers_it_once_online() {
    let image = image_dir();
    let t = tempfile::tempdir().unwrap();
    let d = |n: &str| t.path().join(n);
    let (key, public) = keygen(t.path());
    let collector = Collector::start(t.path(), &public);
    let stick = d("stick.img");
    sh(&format!(
        "cp --sparse=always {} {}",
        s(&image.join("storcert-usb.img")),
        s(&stick)
    ));
    let at = partition_offset(&stick, 2);
    // What a user does on any computer: edit profile.toml and put the
    // signing key on the stick.
    let profile = include_str!("boot/usb.toml").replace("@PORT@", &collector.port.to_string());
    std::fs::write(d("profile.toml"), profile).unwrap();
    mtools(
        &stick,
        at,
        "mcopy",
        &format!("-o {} ::/profile.toml", s(&d("profile.toml"))),
    );
    mtools(&stick, at, "mmd", "::/storcert ::/storcert/results");
    mtools(
        &stick,
        at,
        "mcopy",
        &format!("{} ::/storcert/results/storcert.key", s(&key)),
    );
    sparse(&d("target"), 1024);
    let vars = d("vars.fd");
    std::fs::copy("/usr/share/OVMF/OVMF_VARS_4M.fd", &vars).unwrap();
    let machine = |network: bool| {
        let mut q: Vec<String> = vec![
            "-drive".into(),
            "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd".into(),
            "-drive".into(),
            format!("if=pflash,format=raw,file={}", s(&vars)),
            "-device".into(),
            "qemu-xhci,id=xhci".into(),
        ];
        q.extend(disk(
            &stick,
            "stick",
            "usb-storage,bus=xhci.0,bootindex=0,serial=E2EUSB0001",
        ));
        q.extend(disk(
            &d("target"),
            "target",
            "virtio-blk-pci,serial=E2ETARGET01",
        ));
        q.extend([
            "-nic".into(),
            if network {
                "user,model=virtio-net-pci".into()
            } else {
                "none".into()
            },
        ]);
        q
    };

    // Offline, from a stick that comes up late, as some do: its kernel
    // waits 6 s before it scans a new USB disk (usb-storage.delay_use; the
    // image's own word is 0), past udev's settling, so the run starts before
    // the medium it booted from exists and must wait for it to read the
    // stick's profile. Same length, so the stub's section keeps its size.
    let uki = image.join("storcert.efi");
    let esp = partition_offset(&stick, 1);
    let words = d("cmdline");
    sh(&format!(
        "objcopy -O binary --only-section=.cmdline {} {}",
        s(&uki),
        s(&words)
    ));
    let words_text = std::fs::read_to_string(&words).unwrap();
    assert!(
        words_text.contains("usb-storage.delay_use=0"),
        "{words_text}"
    );
    std::fs::write(&words, words_text.replace("delay_use=0", "delay_use=6")).unwrap();
    sh(&format!(
        "objcopy --update-section .cmdline={} {} {}",
        s(&words),
        s(&uki),
        s(&d("late.efi"))
    ));
    let boot_loader = |efi: &Path| {
        mtools(
            &stick,
            esp,
            "mcopy",
            &format!("-o {} ::/EFI/BOOT/BOOTX64.EFI", s(efi)),
        )
    };
    boot_loader(&d("late.efi"));
    // The bundle is signed and stays on the stick.
    let g = boot("usb-offline", t.path(), 420, &machine(false));
    report("usb-offline (stick 6 s late)", &g);
    assert!(
        g.powered_off,
        "the guest did not power off by itself:\n{}",
        g.console
    );
    assert!(
        g.console.contains("/mnt/storcert/profile.toml"),
        "{}",
        g.console
    );
    let pending = mtools(&stick, at, "mdir", "-b ::/storcert/spool/pending");
    let first: Vec<&str> = pending
        .lines()
        .filter(|l| l.ends_with(".tar.zst"))
        .collect();
    assert_eq!(first.len(), 1, "{pending}\n{}", g.console);
    let name = first[0].rsplit('/').next().unwrap().to_string();
    mtools(
        &stick,
        at,
        "mcopy",
        &format!("::/storcert/spool/pending/{name}* {}", s(t.path())),
    );
    verify(&d(&name), &public);
    assert!(collector.bundles().is_empty());
    // The run knew the stick as the medium the EFI loader booted from
    // (systemd-stub's LoaderDevicePartUUID): what it waits for when the
    // stick comes up late, and what keeps the stick safe from writes.
    let unpacked = d("offline-bundle");
    unpack(&d(&name), &unpacked);
    let inventory = bundle_json(&unpacked, "inventory.json");
    let stick_disk = inventory["disks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["serial"] == "E2EUSB0001")
        .unwrap_or_else(|| panic!("the stick is not in the inventory: {inventory}"));
    assert_eq!(stick_disk["boot_medium"], true, "{stick_disk}");
    assert!(
        stick_disk["role_reasons"]
            .to_string()
            .contains("the partition the EFI loader booted from"),
        "{stick_disk}"
    );
    // The stick itself was not tested: the run names only the target.
    assert!(!g.console.contains("testing: /dev/sda"), "{}", g.console);

    // Online, the image as built: the spooled bundle goes first and leaves
    // the spool.
    boot_loader(&uki);
    let g = boot("usb-online", t.path(), 420, &machine(true));
    report("usb-online", &g);
    assert!(
        g.powered_off,
        "the guest did not power off by itself:\n{}",
        g.console
    );
    let pending = mtools(&stick, at, "mdir", "-b ::/storcert/spool/pending");
    assert!(
        !pending.contains(".tar.zst"),
        "still pending:\n{pending}\n{}",
        g.console
    );
    let sent = mtools(&stick, at, "mdir", "-b ::/storcert/spool/sent");
    assert!(sent.contains(&name), "{sent}");
    let first_sha = sha(&d(&name));
    let stored: Vec<String> = collector
        .bundles()
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        stored.iter().filter(|n| n.starts_with(&first_sha)).count(),
        1,
        "the offline bundle is not stored exactly once: {stored:?}"
    );
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn a_bad_profile_on_the_command_line_powers_off_with_the_failure_and_touches_nothing() {
    let image = image_dir();
    let t = tempfile::tempdir().unwrap();
    let d = |n: &str| t.path().join(n);
    sparse(&d("disk"), 256);
    sh(&format!(
        "head -c 1M /dev/urandom | dd of={} conv=notrunc status=none",
        s(&d("disk"))
    ));
    let before = sha(&d("disk"));
    let mut q = direct_boot(&image, "storcert.devices=all storcert.load=lots");
    q.extend(["-nic".into(), "none".into()]);
    q.extend(disk(
        &d("disk"),
        "disk",
        "virtio-blk-pci,serial=E2EBYSTANDER",
    ));
    let g = boot("bad-profile", t.path(), 300, &q);
    let c = &g.console;
    assert!(g.powered_off, "the guest did not power off by itself:\n{c}");
    let error = c
        .lines()
        .find(|l| l.contains("storcert run:"))
        .unwrap_or_else(|| panic!("no error line:\n{c}"));
    assert!(error.contains("lots"), "{error}");
    assert!(
        c.contains("storcert.service: Main process exited, code=exited, status=2"),
        "not the could-not-run exit:\n{c}"
    );
    assert!(first_io(c).is_none(), "storcert touched a device:\n{c}");
    // No storcert.done=shell, no shell.
    assert!(
        !c.contains("the run has ended"),
        "a shell was started:\n{c}"
    );
    assert_eq!(sha(&d("disk")), before);
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn done_shell_gives_a_root_shell_on_the_console_after_the_run_and_poweroff_ends_it() {
    use std::io::Write;
    let image = image_dir();
    // The console on qemu's stdio: the test types into the shell.
    let mut qemu = qemu(240)
        .args(["-nic", "none"])
        .args(direct_boot(&image, "storcert.done=shell storcert.load=bad"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = qemu.stdin.take().unwrap();
    let stdout = qemu.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut out = BufReader::new(stdout);
        let mut raw = Vec::new();
        while out
            .read_until(b'\n', &mut raw)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            let _ = tx.send(String::from_utf8_lossy(&raw).into_owned());
            raw.clear();
        }
    });
    let mut console = String::new();
    let mut ended = false;
    let mut answered = false;
    loop {
        match rx.recv_timeout(std::time::Duration::from_secs(2)) {
            Ok(line) => {
                ended |= line.contains("the run has ended");
                // The product of 6 and 7 is only printed if a shell ran it.
                answered |= line.contains("SHELL-42");
                console.push_str(&line);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        // The shell hangs up the console as it starts (input typed before
        // is dropped): ask until it answers, then power off.
        if ended && !answered {
            let _ = input.write_all(b"echo SHELL-$((6*7))\n");
        } else if answered {
            let _ = input.write_all(b"poweroff\n");
        }
        let _ = input.flush();
    }
    let status = qemu.wait().unwrap();
    // Checked first: without the notice the test never types, and qemu's
    // timeout would read as a failed poweroff.
    assert!(
        ended,
        "the end-of-run notice never reached the console:\n{console}"
    );
    assert!(
        status.success(),
        "qemu did not end by a poweroff ({status}):\n{console}"
    );
    assert!(console.contains("status=2/INVALIDARGUMENT"), "{console}");
    // The unit's prompt, not /etc/profile's: the shell is not a login one.
    assert!(console.contains("storcert# "), "{console}");
    assert!(
        console.contains("SHELL-42"),
        "no shell ran the command:\n{console}"
    );
}

/// The hardware table against the image's own modules: the module tree
/// and firmware are unpacked from the built initrd; every row of
/// image/hardware.tsv is bound by its driver, every firmware file a module
/// names is in the image, and the check names a row no module binds as
/// its driver, an ID nothing binds, a row that is not six columns, and a
/// driver whose firmware is missing.
#[test]
#[ignore = "reads the built image; run through scripts/test"]
fn the_image_drives_every_row_of_the_hardware_table() {
    let image = image_dir();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    sh(&format!(
        "zstd -dc {} | (cd {} && cpio -idm --quiet 'usr/lib/modules/*' 'usr/lib/firmware/*')",
        s(&image.join("initrd.img")),
        s(root)
    ));
    std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
    let kver = std::fs::read_dir(root.join("usr/lib/modules"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = |table: &Path, missing: &str| {
        Command::new("bash")
            .args([
                "-c",
                ". \"$0/scripts/lib/hardware-check.sh\"; hardware_check \"$1\" \"$2\" \"$3\" \"$4\"",
            ])
            .arg(repo)
            .arg(root)
            .arg(&kver)
            .arg(table)
            .arg(missing)
            .output()
            .unwrap()
    };
    let real = repo.join("image/hardware.tsv");
    let rows = std::fs::read_to_string(&real)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert!(rows >= 40, "{rows} rows");
    let o = check(&real, "");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(&format!("{rows} rows")), "{out}");
    // Every firmware file a module of the image names is in the image.
    let mut named = 0;
    for ko in sh(&format!(
        "find {} -name '*.ko'",
        s(&root.join("usr/lib/modules"))
    ))
    .lines()
    {
        for f in sh(&format!("modinfo -F firmware {ko}")).lines() {
            assert!(
                root.join("usr/lib/firmware").join(f).is_file(),
                "{ko} names {f}, not in the image"
            );
            named += 1;
        }
    }
    assert!(named >= 30, "{named} firmware files named");
    // Rows the check must refuse, each named by its line.
    let bad = tmp.path().join("bad.tsv");
    std::fs::write(
        &bad,
        "1000:00a5\t-\t010400\tmegaraid_sas\tPERC H965i\tDell 16G\n\
         1234:5678\t-\t010400\tmegaraid_sas\tnothing\tnowhere\n\
         1000:005d\t-\t0104\tmegaraid_sas\tshort class\tDell\n\
         14e4:168e\t-\t020000\tbnx2x\tBCM57810\tDell\n",
    )
    .unwrap();
    let o = check(&bad, "bnx2x:bnx2x/bnx2x-e2-7.13.21.0.fw");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for want in [
        "line 1: 1000:00a5 (PERC H965i): no module of the image binds it as megaraid_sas (bound: mpi3mr)",
        "line 2: 1234:5678 (nothing): no module of the image binds it as megaraid_sas (bound: none)",
        "line 3: not vendor:device",
        "line 4: 14e4:168e (BCM57810): bnx2x names firmware bnx2x/bnx2x-e2-7.13.21.0.fw, not in the image",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
}

#[test]
#[ignore = "boots the built image under qemu; run through scripts/test"]
fn a_guest_killed_mid_run_shows_as_stalled_on_the_board() {
    let t = tempfile::tempdir().unwrap();
    let d = |n: &str| t.path().join(n);
    let (key, public) = keygen(t.path());
    let collector = Collector::start_with(t.path(), &public, &["--stall-after", "8s"]);
    sparse(&d("nvme"), 256);
    // Long enough that only the kill ends it.
    let profile = "name = \"long\"\nprogress_interval = \"2s\"\n[devices]\nselect = \"all\"\n\
                   [act]\nrun_to_end = true\nstorage = [{ load = \"1x\", duration = \"30m\" }]\n\
                   [bundle]\nkey = \"/etc/storcert/storcert.key\"\n";
    let mut q = pxe_network(t.path(), &key, profile, &collector);
    q.extend(disk(&d("nvme"), "nvme", "nvme,serial=E2ESTALL001"));
    let console = d("stall.console.log");
    let mut guest = qemu(600)
        .stdin(Stdio::null())
        .args(["-serial", &format!("file:{}", s(&console))])
        .args(&q)
        .spawn()
        .unwrap();
    let until = Instant::now() + std::time::Duration::from_secs(400);
    let row = loop {
        let act = collector.board().into_iter().find(|r| {
            r["shown"] == "running"
                && r["heartbeat"]["stage"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("act"))
        });
        if let Some(r) = act {
            break r;
        }
        if Instant::now() > until || guest.try_wait().unwrap().is_some() {
            let _ = guest.kill();
            panic!(
                "the guest never showed running ACT:\n{}",
                String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default())
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    // The guest dies: `timeout` passes the TERM on to qemu.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(guest.id() as i32, libc::SIGTERM) };
    guest.wait().unwrap();
    let run_id = row["heartbeat"]["run_id"].as_str().unwrap().to_string();
    let until = Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let now = collector
            .board()
            .into_iter()
            .find(|r| r["heartbeat"]["run_id"] == run_id.as_str())
            .unwrap();
        if now["shown"] == "stalled" {
            assert!(now["silent_s"].as_u64().unwrap() >= 8, "{now}");
            break;
        }
        assert!(Instant::now() < until, "never stalled: {now}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (_, page) = common::http_get(&collector.addr(), "/board");
    assert!(
        page.contains(&format!("data-run=\"{run_id}\" data-state=\"stalled\"")),
        "{page}"
    );
    assert!(collector.bundles().is_empty());
}
