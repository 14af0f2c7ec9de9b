//! Helpers shared by the integration tests: running the binary, the
//! collector, shell commands, loop devices, tmpfs and ramfs mounts.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Waits, polling every 200 ms, until `f` holds; fails naming `what`
/// after `secs` (a bound for a machine far busier than usual, never the
/// expected time).
pub fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !f() {
        assert!(
            std::time::Instant::now() < until,
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `sh -c CMD`, which must succeed; its standard output.
pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A file's SHA-256, hex.
pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// Starts `cmd` (a `storcert collect …` with its arguments) and waits for
/// its "listening on ADDR" line; returns it and ADDR without the trailing
/// slash. Its log is drained from then on, so it never blocks on a full
/// pipe, and echoed to stderr when `echo`.
pub fn start_collector(cmd: &mut Command, echo: bool) -> (Child, String) {
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("collector exited before listening")
            .unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_string();
        }
    };
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            if echo {
                eprintln!("  {l}");
            }
        }
    });
    (child, addr)
}

pub fn storcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args(args)
        .output()
        .expect("run storcert")
}

/// Debian's chromium, headless, started as this machine needs it (no
/// sandbox as root, no background connections), with a fresh profile.
pub fn chromium(args: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .expect("chromium (Debian package chromium; scripts/setup installs it)")
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A loop device over a file; detached on drop.
pub struct Loop {
    pub dev: String,
}

impl Loop {
    /// Direct-I/O loop device over a new sparse file of `size` bytes.
    pub fn new(file: &Path, size: u64) -> Loop {
        std::fs::File::create(file).unwrap().set_len(size).unwrap();
        Loop::attach(file, &["--direct-io=on"])
    }

    /// A loop device over an existing file, with extra losetup options.
    pub fn attach(file: &Path, options: &[&str]) -> Loop {
        let out = Command::new("losetup")
            .args(options)
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .expect("losetup (these tests need root and util-linux)");
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Loop {
            dev: String::from_utf8(out.stdout).unwrap().trim().to_string(),
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // Partitions a tool told the kernel of (parted's BLKPG) outlive
        // the loop device's detach here, and would greet the next test
        // that gets its number: they go first.
        let _ = Command::new("partx")
            .args(["-d", &self.dev])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// A memory filesystem mounted at `dir` (made if missing); unmounted on
/// drop.
pub struct Mount(pub PathBuf);

impl Mount {
    /// A tmpfs of `size`.
    pub fn tmpfs(dir: &Path, size: &str) -> Mount {
        Mount::new("tmpfs", &[&format!("size={size}")], dir)
    }

    /// A ramfs: no size limit, and O_DIRECT refused with EINVAL.
    pub fn ramfs(dir: &Path) -> Mount {
        Mount::new("ramfs", &[], dir)
    }

    fn new(fstype: &str, options: &[&str], dir: &Path) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        let mut cmd = Command::new("mount");
        cmd.args(["-t", fstype]);
        for o in options {
            cmd.args(["-o", o]);
        }
        let ok = cmd.arg(fstype).arg(dir).status().unwrap();
        assert!(ok.success(), "mount {fstype} (the test needs root)");
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A loop device whose writes fail once a 32 MiB tmpfs under it is full
/// (ENOSPC through the loop driver), as a failing drive's writes would.
/// 28 MiB of the tmpfs are taken first, so the errors start after 4 MiB
/// of writes: however slowly a busy machine lets a test write, it gets
/// there.
pub fn failing_loop(tmp: &Path) -> (Mount, Loop) {
    let fs = Mount::tmpfs(&tmp.join("small"), "32m");
    std::fs::write(fs.0.join("taken"), vec![0x5au8; 28 << 20]).unwrap();
    let back = fs.0.join("back.img");
    std::fs::File::create(&back)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let lo = Loop::attach(&back, &[]);
    (fs, lo)
}

/// Peak RSS of a storcert command, in KiB (GNU time's %M), and its output.
#[allow(dead_code)]
pub fn peak_rss_kib(args: &[&str]) -> (u64, Output) {
    let o = Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib %M", env!("CARGO_BIN_EXE_storcert")])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let kib = err
        .lines()
        .find_map(|l| l.strip_prefix("peak-rss-kib "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    (kib, o)
}

/// Replays the inventory capture `capture` here and checks that it gives
/// `live`, the inventory JSON the machine wrote, byte for byte, asking
/// nothing the capture does not hold. With STORCERT_SAVE_CAPTURES=DIR
/// both are also copied to DIR/NAME/ (how tests/fixtures/captures is
/// refreshed from the lab).
pub fn assert_replay_matches(name: &str, capture: &Path, live: &Path) {
    use storcert::inventory::capture;
    let replay =
        capture::read_file(capture).unwrap_or_else(|e| panic!("{}: {e:#}", capture.display()));
    let inv = capture::replay(&replay);
    assert_eq!(
        replay.capture.missing(),
        (0, Vec::new()),
        "{name}: the replay asked what the capture does not hold"
    );
    let replayed = storcert::results::Artefact::from(inv).to_json();
    let live_bytes = std::fs::read(live).unwrap_or_else(|e| panic!("{}: {e}", live.display()));
    assert!(
        replayed == live_bytes,
        "{name}: the replayed inventory differs from the live one:\n--- live\n{}\n--- replayed\n{}",
        String::from_utf8_lossy(&live_bytes),
        String::from_utf8_lossy(&replayed)
    );
    if let Some(dir) = std::env::var_os("STORCERT_SAVE_CAPTURES") {
        let to = Path::new(&dir).join(name);
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(capture, to.join("capture.tar.zst")).unwrap();
        std::fs::copy(live, to.join("inventory.json")).unwrap();
    }
}

/// Copies a tree, keeping symlinks as symlinks.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// An HTTP body, de-chunked where the answer was streamed.
pub fn body_of(raw: &str) -> String {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

/// GET, the whole answer (streamed ones de-chunked).
pub fn http_get(base: &str, path: &str) -> (u16, String) {
    let host = base.trim_start_matches("http://");
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(host).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = Vec::new();
    c.read_to_end(&mut resp).unwrap();
    let raw = String::from_utf8(resp).unwrap();
    let code = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body_of(&raw))
}

/// A collector's live board, as its API gives it.
pub fn board(base: &str) -> Vec<serde_json::Value> {
    let (code, body) = http_get(base, "/api/board");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str::<serde_json::Value>(&body)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Reads one request from `conn`: its head (returned, lower-cased) and its
/// Content-Length body (skipped). `None` once the client is gone.
pub fn read_request(conn: &mut impl std::io::Read) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let len: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let _ = std::io::copy(&mut conn.take(len), &mut std::io::sink());
    Some(head)
}

/// The peak resident memory of a running process, KiB.
pub fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
