//! The safety gate against the world's signatures, with Debian's own
//! tools as the oracle: every image below is made by the tool that makes
//! such volumes (cryptsetup, mkfs.*, mksquashfs, xorriso, parted, ...),
//! attached as a loop device, and shown to `blkid -p` and `wipefs
//! --no-act`. Whatever either names, every writer refuses, names it in
//! libblkid's words, and leaves the device byte for byte as it was; a
//! device blkid finds nothing on but that holds data is refused too; a
//! zeroed device, and one storcert itself tested, are written. Needs root,
//! loop devices and the tools `scripts/setup` installs.

mod common;

use std::path::Path;
use std::process::Command;

use common::{storcert, Loop};

/// Each image's size: the smallest its tool takes (xfs: 300 MiB, btrfs
/// and nilfs2 over 100 MiB), as every byte is hashed twice.
fn size_for(what: &str) -> u64 {
    match what {
        "xfs" => 320 << 20,
        "btrfs" | "nilfs2" => 160 << 20,
        _ => 64 << 20,
    }
}

fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e} (scripts/setup installs it)"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The device's SHA-256, by coreutils' sha256sum (this test's own build
/// may be unoptimised, and hashes every byte of every image twice).
fn sha(dev: &str) -> String {
    let out = Command::new("sha256sum").arg(dev).output().unwrap();
    assert!(out.status.success(), "sha256sum {dev}");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// What `blkid -p` says is on `dev`: its TYPE= or PTTYPE= word, if any.
fn blkid(dev: &str) -> Option<(String, String)> {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export", dev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
    };
    get("TYPE")
        .map(|t| ("TYPE".to_string(), t))
        .or_else(|| get("PTTYPE").map(|t| ("PTTYPE".to_string(), t)))
}

/// Whether `wipefs --no-act` lists any signature on `dev`.
fn wipefs_finds(dev: &str) -> bool {
    let out = Command::new("wipefs")
        .args(["--no-act", "--all", dev])
        .output()
        .unwrap();
    !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

/// Every writer asked to write `dev` without naming it: each refuses.
fn writers_refuse(dev: &str, what: &str, tmp: &Path) -> Vec<String> {
    let conf = tmp.join("act.conf");
    std::fs::write(
        &conf,
        format!("device-names: {dev}\ntest-duration-sec: 2\nread-reqs-per-sec: 100\nwrite-reqs-per-sec: 50\n"),
    )
    .unwrap();
    let conf = conf.display().to_string();
    let attempts: [&[&str]; 4] = [
        &["stream", "-d", dev, "--size", "8M"],
        &["act", "prep", dev],
        &["act", "storage", &conf],
        &["provision", "--device", dev, "--spare", "10"],
    ];
    let mut said = Vec::new();
    for args in attempts {
        let out = storcert(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{what}: storcert {args:?} was not refused: {err}"
        );
        assert!(err.contains("refusing to write"), "{what}: {args:?}: {err}");
        said.push(err);
    }
    said
}

/// Every writer refuses `dev`, the first saying `expect`, and the device
/// is byte for byte as it was.
fn refused_untouched(dev: &str, what: &str, tmp: &Path, expect: &str) {
    let before = sha(dev);
    let said = writers_refuse(dev, what, tmp);
    assert!(said[0].contains(expect), "{what}: {}", said[0]);
    assert_eq!(sha(dev), before, "{what}: a writer changed the device");
}

type Maker = fn(&str, &Path);

fn image_makers() -> Vec<(&'static str, Maker)> {
    vec![
        ("luks1", |d, _| {
            luks(d, "luks1");
        }),
        ("luks2", |d, _| {
            luks(d, "luks2");
        }),
        ("luks2 secondary header only", |d, _| {
            luks(d, "luks2");
            // The first header gone: libblkid still finds the second.
            let f = std::fs::OpenOptions::new().write(true).open(d).unwrap();
            use std::os::unix::fs::FileExt;
            f.write_all_at(&[0u8; 4096], 0).unwrap();
        }),
        ("ext2", |d, _| run("mkfs.ext2", &["-q", "-F", d])),
        ("ext4", |d, _| run("mkfs.ext4", &["-q", "-F", d])),
        ("xfs", |d, _| run("mkfs.xfs", &["-q", "-f", d])),
        ("btrfs", |d, _| run("mkfs.btrfs", &["-q", "-f", d])),
        ("vfat", |d, _| run("mkfs.vfat", &[d])),
        ("exfat", |d, _| run("mkfs.exfat", &[d])),
        ("f2fs", |d, _| run("mkfs.f2fs", &["-q", "-f", d])),
        ("nilfs2", |d, _| run("mkfs.nilfs2", &["-q", "-f", d])),
        ("jfs", |d, _| run("mkfs.jfs", &["-q", d])),
        ("ntfs", |d, _| run("mkntfs", &["-q", "-F", "-Q", d])),
        ("udf", |d, _| run("mkudffs", &[d])),
        ("swap", |d, _| run("mkswap", &[d])),
        ("squashfs", |d, tmp| {
            let img = tmp.join("sq.img");
            run(
                "mksquashfs",
                &[
                    tmp.join("content").to_str().unwrap(),
                    img.to_str().unwrap(),
                    "-quiet",
                    "-noappend",
                ],
            );
            copy_into(&img, d);
        }),
        ("erofs", |d, tmp| {
            let img = tmp.join("ero.img");
            run(
                "mkfs.erofs",
                &[img.to_str().unwrap(), tmp.join("content").to_str().unwrap()],
            );
            copy_into(&img, d);
        }),
        ("iso9660", |d, tmp| {
            let img = tmp.join("cd.iso");
            run(
                "xorriso",
                &[
                    "-as",
                    "mkisofs",
                    "-quiet",
                    "-o",
                    img.to_str().unwrap(),
                    tmp.join("content").to_str().unwrap(),
                ],
            );
            copy_into(&img, d);
        }),
        ("LVM2", |d, _| run("pvcreate", &["-q", "-y", "-ff", d])),
        ("bcache", |d, _| run("make-bcache", &["-B", d])),
        ("gpt", |d, _| run("parted", &["-s", d, "mklabel", "gpt"])),
        ("msdos", |d, _| {
            run(
                "parted",
                &[
                    "-s", d, "mklabel", "msdos", "mkpart", "primary", "1MiB", "10MiB",
                ],
            )
        }),
        ("mac", |d, _| run("parted", &["-s", d, "mklabel", "mac"])),
    ]
}

fn luks(dev: &str, kind: &str) {
    let mut child = Command::new("cryptsetup")
        .args([
            "luksFormat",
            "-q",
            "--type",
            kind,
            "--pbkdf-force-iterations",
            "1000",
        ])
        .args(if kind == "luks2" {
            &["--pbkdf", "pbkdf2"][..]
        } else {
            &[]
        })
        .args(["--key-file", "-", dev])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("cryptsetup (scripts/setup installs cryptsetup-bin)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"storcert").unwrap();
    assert!(
        child.wait().unwrap().success(),
        "cryptsetup luksFormat {kind}"
    );
}

fn copy_into(img: &Path, dev: &str) {
    let data = std::fs::read(img).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&data, 0).unwrap();
    f.sync_all().unwrap();
}

/// For every volume Debian's tools make, blkid's word for it is what the
/// refusal names, and no writer changes a byte.
#[test]
#[ignore = "root, loop devices and the corpus tools; scripts/test runs it"]
fn every_signature_blkid_knows_is_refused_and_left_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let content = tmp.path().join("content");
    std::fs::create_dir_all(&content).unwrap();
    std::fs::write(content.join("data.txt"), "a customer's file\n").unwrap();
    let mut unnamed = Vec::new();
    for (what, make) in image_makers() {
        let started = std::time::Instant::now();
        let lo = Loop::new(&tmp.path().join("disk.img"), size_for(what));
        make(&lo.dev, tmp.path());
        let found = blkid(&lo.dev);
        assert!(
            found.is_some() || wipefs_finds(&lo.dev),
            "{what}: neither blkid -p nor wipefs finds what the tool made"
        );
        let before = sha(&lo.dev);
        let said = writers_refuse(&lo.dev, what, tmp.path());
        assert_eq!(sha(&lo.dev), before, "{what}: a writer changed the device");
        if let Some((key, kind)) = found {
            let word = format!("{key}=\"{kind}\"");
            if !said[0].contains(&word) {
                unnamed.push(format!(
                    "{what}: blkid says {word}, storcert said {}",
                    said[0].trim()
                ));
            }
        }
        drop(lo);
        std::fs::remove_file(tmp.path().join("disk.img")).unwrap();
        eprintln!("{what}: refused ({} ms)", started.elapsed().as_millis());
    }
    assert!(
        unnamed.is_empty(),
        "refusals not in libblkid's words:\n{}",
        unnamed.join("\n")
    );
}

/// Data where no signature is (random bytes in the last MiB only): blkid
/// finds nothing, and the gate still refuses it. A zeroed device is
/// written, and so is one storcert tested; a mark copied to another drive
/// or one written over since is not storcert's any more.
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn data_without_a_signature_is_refused_and_storcert_s_own_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("disk.img"), 64 << 20);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    use std::os::unix::fs::FileExt;
    let mut noise = vec![0u8; 1 << 20];
    for (i, b) in noise.iter_mut().enumerate() {
        *b = (i.wrapping_mul(2654435761) >> 13) as u8;
    }
    f.write_all_at(&noise, (63 << 20) as u64).unwrap();
    f.sync_all().unwrap();
    assert_eq!(blkid(&lo.dev), None, "blkid finds nothing");
    refused_untouched(
        &lo.dev,
        "noise in the last MiB",
        tmp.path(),
        "non-zero byte at offset",
    );

    f.write_all_at(&vec![0u8; 1 << 20], (63 << 20) as u64)
        .unwrap();
    f.sync_all().unwrap();
    for round in ["zeroed", "storcert's own"] {
        let out = storcert(&["stream", "-d", &lo.dev, "--size", "8M"]);
        assert!(
            out.status.success(),
            "{round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = storcert(&["stream", "-d", &lo.dev, "--size", "8M", "--dry-run"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds storcert's test data"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Someone formats it since: no longer storcert's.
    run("mkfs.ext4", &["-q", "-F", &lo.dev]);
    let said = writers_refuse(&lo.dev, "ext4 over storcert's data", tmp.path());
    assert!(said[0].contains("TYPE=\"ext4\""), "{}", said[0]);
}

/// LUKS2 with a detached header: the header is another file, and the
/// device holds only what dm-crypt wrote, which reads as noise. blkid and
/// wipefs find nothing; the gate refuses it as data. (The host has no
/// device-mapper: the noise dm-crypt would write is written directly.)
#[test]
#[ignore = "root, loop devices and cryptsetup; scripts/test runs it"]
fn luks_with_a_detached_header_is_refused_as_data() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("disk.img"), 64 << 20);
    let header = tmp.path().join("header.img");
    std::fs::File::create(&header)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let mut child = Command::new("cryptsetup")
        .args(["luksFormat", "-q", "--type", "luks2", "--pbkdf", "pbkdf2"])
        .args([
            "--pbkdf-force-iterations",
            "1000",
            "--key-file",
            "-",
            "--header",
        ])
        .arg(&header)
        .arg(&lo.dev)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"storcert").unwrap();
    assert!(
        child.wait().unwrap().success(),
        "cryptsetup luksFormat --header"
    );
    assert_eq!(
        blkid(&header.display().to_string()).map(|t| t.1).as_deref(),
        Some("crypto_LUKS")
    );
    run(
        "sh",
        &[
            "-c",
            &format!(
                "head -c 8388608 /dev/urandom | dd of={} bs=1M conv=notrunc status=none",
                lo.dev
            ),
        ],
    );
    assert_eq!(blkid(&lo.dev), None, "the device alone says nothing");
    assert!(!wipefs_finds(&lo.dev));
    refused_untouched(
        &lo.dev,
        "LUKS2 data, header detached",
        tmp.path(),
        "non-zero byte at offset 0",
    );
}

/// A mount the target's own mount table does not show: through a loop
/// device stacked on it, and in another mount namespace. Both are refused
/// even when the disk is named.
#[test]
#[ignore = "root, loop devices and unshare; scripts/test runs it"]
fn mounts_through_a_stack_and_in_another_namespace_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("disk.img"), 64 << 20);
    run("mkfs.ext4", &["-q", "-F", &lo.dev]);
    let before = sha(&lo.dev);
    let named_stream = || {
        storcert(&[
            "stream",
            "-d",
            &lo.dev,
            "--size",
            "8M",
            "--force-destroy",
            &lo.dev,
        ])
    };
    // Stacked: a loop device over the loop device, mounted.
    let upper = Loop::attach(Path::new(&lo.dev), &[]);
    let dir = tmp.path().join("mnt");
    std::fs::create_dir_all(&dir).unwrap();
    run("mount", &["-o", "ro", &upper.dev, dir.to_str().unwrap()]);
    let out = named_stream();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    run("umount", &[dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "is backed by {}",
            lo.dev.trim_start_matches("/dev/")
        )),
        "{err}"
    );
    drop(upper);

    // Another mount namespace: mounted there only, this one sees nothing.
    let ready = tmp.path().join("ready");
    let mut child = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount -o ro {} {} && touch {} && exec sleep 60",
            lo.dev,
            dir.display(),
            ready.display()
        ))
        .spawn()
        .unwrap();
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready.exists() && std::time::Instant::now() < give_up {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ready.exists(), "the namespace's mount never came up");
    let out = named_stream();
    let _ = child.kill();
    let _ = child.wait();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in another mount namespace"), "{err}");
    assert_eq!(sha(&lo.dev), before, "a writer changed the device");
}

/// Every output option pointed at a block device: refused in one line,
/// the device unchanged.
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn no_output_option_writes_into_a_device() {
    let tmp = tempfile::tempdir().unwrap();
    let lo = Loop::new(&tmp.path().join("disk.img"), 16 << 20);
    let d = lo.dev.as_str();
    let before = sha(d);
    let dir = tmp.path().display().to_string();
    let file = tmp.path().join("scratch").display().to_string();
    let attempts: Vec<Vec<&str>> = vec![
        vec!["report", &dir, "-o", d],
        vec!["inventory", "--capture", d],
        vec!["stream", "-d", &file, "--size", "1M", "--output", d],
        vec!["bundle", "create", &dir, "-o", d],
        vec!["act", "storage", "/nonexistent.conf", "--json", d],
        vec!["act", "storage", "/nonexistent.conf", "--log", d],
        vec!["act", "storage", "/nonexistent.conf", "--timeline", d],
        vec!["run", "--results", d],
        vec!["report", &dir, "-o", "/dev/zero"],
        vec!["report", &dir, "-o", "/dev/shm-not-a-device"],
    ];
    for args in attempts {
        let out = storcert(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("never writes an output into a device") || err.contains("under /dev"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(sha(d), before);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(d).unwrap().file_type().is_block_device());
}

/// What the target sits on: a loop device over a mounted device (with
/// an offset into it, unnamed; over the whole of it, named), and a second
/// loop device over the image file of a mounted one. Each write would land
/// in the mounted filesystem (found in review): each is refused.
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn a_device_over_a_mounted_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("disk.img");
    let lower = Loop::new(&img, 200 << 20);
    run("mkfs.ext4", &["-q", "-F", &lower.dev]);
    let dir = tmp.path().join("mnt");
    std::fs::create_dir_all(&dir).unwrap();
    // Read-only, so the filesystem itself writes nothing while mounted.
    run("mount", &["-o", "ro", &lower.dev, dir.to_str().unwrap()]);
    let before = sha(&lower.dev);
    let lname = lower.dev.trim_start_matches("/dev/").to_string();
    let offset = Loop::attach(Path::new(&lower.dev), &["-o", "140M", "--sizelimit", "20M"]);
    let whole = Loop::attach(Path::new(&lower.dev), &[]);
    let sibling = Loop::attach(&img, &[]);
    let attempts = [
        vec!["stream", "-d", &offset.dev, "--size", "8M"],
        vec![
            "stream",
            "-d",
            &whole.dev,
            "--size",
            "8M",
            "--force-destroy",
            &whole.dev,
        ],
        vec!["act", "prep", &sibling.dev],
        vec!["act", "prep", &sibling.dev, "--force-destroy", &sibling.dev],
    ];
    let said: Vec<(Vec<&str>, std::process::Output)> = attempts
        .into_iter()
        .map(|a| {
            let o = storcert(&a);
            (a, o)
        })
        .collect();
    // Hashed while still mounted: an unmount flushes the filesystem's own
    // buffers.
    let after = sha(&lower.dev);
    run("umount", &[dir.to_str().unwrap()]);
    for (args, out) in said {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{lname} (")) && err.contains("is mounted on"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(after, before, "the mounted filesystem was written");
}

/// Outputs that land in /dev only once a link or `..` is followed, and
/// standard output redirected into a device: refused. `--output
/// /dev/stdout` writes where standard output points and leaves the
/// /dev/stdout link as it was (found in review: a file was renamed over it).
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn outputs_reach_no_device_by_a_link_or_a_redirection() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch").display().to_string();
    let link = tmp.path().join("devdir");
    std::os::unix::fs::symlink("/dev", &link).unwrap();
    let through_link = link.join("storcert-x").display().to_string();
    let dotdot = format!("{}/../../dev/storcert-x", tmp.path().display());
    for out_path in [&through_link, &dotdot] {
        let out = storcert(&[
            "stream", "-d", &scratch, "--size", "1M", "--output", out_path,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{out_path}: {err}");
        assert!(err.contains("under /dev"), "{err}");
    }
    assert!(!Path::new("/dev/storcert-x").exists());

    let stdout_link = std::fs::read_link("/dev/stdout").unwrap();
    let file = std::fs::File::create(tmp.path().join("out.json")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args([
            "stream",
            "-d",
            &scratch,
            "--size",
            "1M",
            "--output-format",
            "json",
            "--output",
            "/dev/stdout",
        ])
        .stdout(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(tmp.path().join("out.json")).unwrap();
    assert!(written.contains("\"targets\""), "{written}");
    assert_eq!(std::fs::read_link("/dev/stdout").unwrap(), stdout_link);

    let lo = Loop::new(&tmp.path().join("disk.img"), 16 << 20);
    let before = sha(&lo.dev);
    let dev = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args(["stream", "-d", &scratch, "--size", "1M"])
        .stdout(dev)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is a block device"));
    assert_eq!(sha(&lo.dev), before);
}

/// storcert's mark copied onto another device without a serial, with the
/// regions it describes, is not that device's own (found in review: every
/// loop device had the same empty serial).
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn a_copied_mark_does_not_clear_another_device() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Loop::new(&tmp.path().join("a.img"), 64 << 20);
    let b = Loop::new(&tmp.path().join("b.img"), 64 << 20);
    let out = storcert(&["stream", "-d", &a.dev, "--size", "64M"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run(
        "sh",
        &[
            "-c",
            &format!(
        "head -c 1048576 /dev/urandom | dd of={b} bs=1M seek=20 conv=notrunc status=none && \
         dd if={a} of={b} bs=1M count=8 conv=notrunc status=none && \
         dd if={a} of={b} bs=1M skip=62 seek=62 count=2 conv=notrunc status=none",
        a = a.dev, b = b.dev
    ),
        ],
    );
    refused_untouched(&b.dev, "a copied mark", tmp.path(), "of another drive");
}

/// The gate's word is for the device it judged, and the writer holds it
/// exclusively: a path that names another device by the time it is
/// opened is not written, and nothing can mount the device while it is.
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn a_cleared_path_opens_only_the_device_judged_and_holds_it() {
    use storcert::safety::{check, Overrides};
    let tmp = tempfile::tempdir().unwrap();
    let a = Loop::new(&tmp.path().join("a.img"), 64 << 20);
    let b = Loop::new(&tmp.path().join("b.img"), 64 << 20);
    let link = tmp.path().join("by-id");
    std::os::unix::fs::symlink(&a.dev, &link).unwrap();
    let roots = storcert::inventory::Roots::default();
    let cleared = check(&link, &roots, &Overrides::default()).unwrap();
    let mut rw = std::fs::OpenOptions::new();
    rw.read(true).write(true);
    {
        let (_held, _) = cleared.open(&rw, 0).unwrap();
        let dir = tmp.path().join("mnt");
        std::fs::create_dir_all(&dir).unwrap();
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F", &a.dev])
            .output()
            .unwrap();
        assert!(
            !mkfs.status.success(),
            "mkfs.ext4 opened a device storcert holds"
        );
    }
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&b.dev, &link).unwrap();
    let err = cleared.open(&rw, 0).unwrap_err();
    assert!(err.to_string().contains("names another device"), "{err}");
    let err = cleared.begin_writing().unwrap_err();
    assert!(err.to_string().contains("names another device"), "{err}");
}

/// A second loop device over the target's own file, mounted after the
/// gate looked and before the writer opened the target (found in a
/// second review: O_EXCL on the target does not keep it out): the
/// writer's open asks again and refuses.
#[test]
#[ignore = "root and loop devices; scripts/test runs it"]
fn a_mount_beside_the_target_after_the_gate_is_refused_at_the_open() {
    use storcert::safety::{check, Overrides};
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("w.img");
    let target = Loop::new(&img, 64 << 20);
    let roots = storcert::inventory::Roots::default();
    let cleared = check(Path::new(&target.dev), &roots, &Overrides::default()).unwrap();
    // Since: an ext4 within the same file, through a second loop device,
    // mounted.
    let beside = Loop::attach(&img, &["-o", "9M", "--sizelimit", "40M"]);
    run("mkfs.ext4", &["-q", "-F", &beside.dev]);
    let dir = tmp.path().join("mnt");
    std::fs::create_dir_all(&dir).unwrap();
    run("mount", &["-o", "ro", &beside.dev, dir.to_str().unwrap()]);
    let mut rw = std::fs::OpenOptions::new();
    rw.read(true).write(true);
    let opened = cleared.open(&rw, 0);
    run("umount", &[dir.to_str().unwrap()]);
    let err = opened.unwrap_err().to_string();
    assert!(
        err.contains("in use since the safety gate cleared it"),
        "{err}"
    );
    // Unmounted, the same word opens it.
    assert!(cleared.open(&rw, 0).is_ok());
}
