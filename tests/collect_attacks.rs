//! The fleet board, heartbeats, exports and store sync under attack, on
//! 127.0.0.1 (and 127.0.0.2/.3 as other addresses), each attack bounded in
//! count and time: a run belongs to the key that started it, no seq locks
//! a run out, one address holds no heartbeat slots or export turns, a
//! silent machine stays on the board, hostile heartbeat fields are refused
//! or clamped, broken store records are read once, and an open collector
//! says so at start.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use common::{s, storcert, vm_hwm_kib};
use storcert::bundle::minisign::SecretKey;

struct Lab {
    dir: tempfile::TempDir,
    /// The fleet's key (machine A), its file, and another trusted key (B).
    key_file: PathBuf,
    a: SecretKey,
    b: SecretKey,
    trusted: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("a.key");
        let out = storcert(&["keygen", "-s", s(&key_file)]);
        assert!(out.status.success());
        let a = storcert::bundle::keys::read_secret_key(&key_file).unwrap();
        let b = SecretKey::generate();
        std::fs::write(dir.path().join("b.key"), b.to_file()).unwrap();
        let trusted = dir.path().join("trusted.pub");
        std::fs::write(&trusted, a.public().to_file() + &b.public().to_file()).unwrap();
        Lab {
            dir,
            key_file,
            a,
            b,
            trusted,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A collector whose every log line is kept.
struct Collector {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    /// The collector's own binary, storcert-collect (tests/collect.rs runs
    /// `storcert collect`: the same flags, the same server).
    fn start(lab: &Lab, listen: &str, extra: &[&str]) -> Collector {
        let mut child = Command::new(env!("CARGO_BIN_EXE_storcert-collect"))
            .args(["--listen", listen, "--store", "store"])
            .args(["--trusted-keys", s(&lab.trusted)])
            .args(extra)
            .current_dir(lab.dir.path())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("the collector exited").unwrap();
            log.lock().unwrap().push(line.clone());
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        let kept = log.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(l);
            }
        });
        Collector { child, addr, log }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn lines_with(&self, text: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(text))
            .count()
    }

    fn board(&self) -> Vec<serde_json::Value> {
        common::board(&self.base())
    }

    fn row(&self, run: &str) -> Option<serde_json::Value> {
        self.board()
            .into_iter()
            .find(|r| r["heartbeat"]["run_id"] == run)
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection to `to` from the loopback address `from`, so one test
/// can be several clients.
fn connect_from(from: Ipv4Addr, to: SocketAddr, rcvbuf: Option<u32>) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    if let Some(n) = rcvbuf {
        sock.set_recv_buffer_size(n).unwrap();
    }
    sock.bind(SocketAddr::new(from.into(), 0)).unwrap();
    let stream = rt.block_on(sock.connect(to)).unwrap().into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Sends a request's head (and `body`), returns the status and the body.
fn exchange(mut c: TcpStream, head: &str, body: &[u8]) -> (u16, String) {
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let _ = c.write_all(body);
    let mut resp = Vec::new();
    let _ = c.read_to_end(&mut resp);
    let raw = String::from_utf8_lossy(&resp).into_owned();
    let code = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, common::body_of(&raw))
}

fn heartbeat_json(run: &str, seq: u64, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::json!({
        "schema_version": 1, "run_id": run, "seq": seq, "sent_at": "2026-12-01T00:00:00Z",
        "machine": {"vendor": "Dell", "product": "R760", "serial": "SRV-A", "uuid": null,
                    "hostname": "rack7-a"},
        "profile": "burn-in", "tag": null, "state": "running", "stage": "act storage 3x",
        "stages_done": 1, "stages_failed": [], "progress": [], "live_pct_over_1ms": 0.5,
        "verdict": "pass", "errors": [], "eta_s": 600, "interval_s": 10, "bundle": null
    });
    change(&mut v);
    serde_json::to_vec(&v).unwrap()
}

/// A heartbeat for `run` at `seq` signed by `key`, sent from `from`:
/// the status and the answer.
fn beat(
    c: &Collector,
    from: Ipv4Addr,
    key: &SecretKey,
    run: &str,
    seq: u64,
    change: impl FnOnce(&mut serde_json::Value),
) -> (u16, String) {
    let body = heartbeat_json(run, seq, change);
    let sig = key.sign_minisig(&body, &format!("storcert heartbeat {run} {seq}"));
    let head = format!(
        "PUT /heartbeat/{run} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         x-storcert-minisig: {}\r\nContent-Length: {}\r\n\r\n",
        base64::engine::general_purpose::STANDARD.encode(sig),
        body.len()
    );
    exchange(connect_from(from, c.addr, None), &head, &body)
}

const A1: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const A2: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const A3: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A signed bundle named `name` of one machine (SRV-00000, passing),
/// from scripts/bench/fleet-results.
fn fleet_bundle(lab: &Lab, name: &str, machine: usize, drives: usize) -> PathBuf {
    fleet_bundle_by(lab, &lab.key_file, name, machine, drives)
}

/// `fleet_bundle`, signed with the key in `key`.
fn fleet_bundle_by(lab: &Lab, key: &Path, name: &str, machine: usize, drives: usize) -> PathBuf {
    let out = lab.path(&format!("fleet-{name}"));
    let gen = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/bench/fleet-results"
    ))
    .args([s(&out), "--machines", "1", "--drives", &drives.to_string()])
    .args(["--first", &machine.to_string()])
    .output()
    .expect("python3 scripts/bench/fleet-results");
    assert!(gen.status.success(), "{gen:?}");
    let dir = String::from_utf8(gen.stdout).unwrap();
    let b = lab.path(name);
    let r = storcert(&["bundle", "create", dir.trim(), "-o", s(&b), "-k", s(key)]);
    assert!(r.status.success(), "{r:?}");
    b
}

/// A signed bundle of one machine with `drives` untested drives behind
/// one controller whose name and firmware are 4,000 characters each (a
/// row keeps 256 of each): an export of some thousands of them is
/// megabytes (what a large fleet's is).
fn wide_bundle(lab: &Lab, name: &str, drives: usize) -> PathBuf {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/qemu-lab/inventory.json"
    );
    let mut inv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    let mut controller = inv["controllers"][0].clone();
    controller["device_name"] = "C".repeat(4000).into();
    controller["firmware"] = "F".repeat(4000).into();
    controller["disks"] = serde_json::json!([]);
    let pci = controller["pci_address"].clone();
    let disk = inv["disks"][0].clone();
    let disks: Vec<serde_json::Value> = (0..drives)
        .map(|n| {
            let mut d = disk.clone();
            d["name"] = format!("nvme{n}n1").into();
            d["dev_path"] = format!("/dev/nvme{n}n1").into();
            d["serial"] = format!("WIDE-{name}-{n:05}").into();
            d["controller"] = pci.clone();
            d
        })
        .collect();
    inv["controllers"] = serde_json::json!([controller]);
    inv["disks"] = disks.into();
    let res = lab.path(&format!("res-{name}"));
    std::fs::create_dir_all(&res).unwrap();
    std::fs::write(res.join("inventory.json"), inv.to_string()).unwrap();
    signed(lab, &res, name)
}

/// The results folder `res` as the bundle `name`, signed by key A.
fn signed(lab: &Lab, res: &Path, name: &str) -> PathBuf {
    let b = lab.path(name);
    let r = storcert(&[
        "bundle",
        "create",
        s(res),
        "-o",
        s(&b),
        "-k",
        s(&lab.key_file),
    ]);
    assert!(r.status.success(), "{r:?}");
    b
}

fn upload(c: &Collector, bundle: &Path) {
    let o = storcert(&[
        "upload",
        "--allow-http",
        "--max-backoff",
        "1s",
        s(bundle),
        "--to",
        &format!("{}/upload/", c.base()),
    ]);
    assert!(o.status.success(), "{o:?}");
}

/// Item 1: another trusted key can neither take over a run, nor lock its
/// heartbeats out with a huge seq, nor dress a stored run up as another
/// machine; the run's own key cannot push its seq more than a day ahead.
#[test]
fn a_run_belongs_to_the_key_that_started_it() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "127.0.0.1:0", &[]);
    let run = "run-A";
    assert_eq!(beat(&c, A1, &lab.a, run, 5, |_| {}).0, 200);
    // B: a finished pass, then the highest seq there is: refused, 403.
    let (code, why) = beat(&c, A1, &lab.b, run, 7, |v| {
        v["state"] = "finished".into();
    });
    assert_eq!(code, 403, "{why}");
    assert!(why.contains("belongs to another key"), "{why}");
    assert_eq!(beat(&c, A1, &lab.b, run, i64::MAX as u64, |_| {}).0, 422);
    // A goes on; a seq over a day ahead of the collector's clock is
    // refused (so none can lock the run out for longer).
    assert_eq!(beat(&c, A1, &lab.a, run, 8, |_| {}).0, 200);
    let ahead = now_ms() + 2 * 86_400_000;
    let (code, why) = beat(&c, A1, &lab.a, run, ahead, |_| {});
    assert_eq!(code, 422, "{why}");
    assert!(why.contains("ahead of this collector's clock"), "{why}");
    assert_eq!(beat(&c, A1, &lab.a, run, 10u64.pow(12), |_| {}).0, 200);
    let row = c.row(run).unwrap();
    assert_eq!(row["heartbeat"]["seq"], 10u64.pow(12));
    assert_eq!(row["foreign"]["refused"], 1, "{row}");

    // A's real bundle of this run, stored: the run is its signer's.
    let bundle = fleet_bundle(&lab, &format!("{run}.tar.zst"), 0, 2);
    upload(&c, &bundle);
    // B's word on it: refused; even A's own heartbeat cannot make the
    // stored run look like another machine or another verdict.
    let lie = |v: &mut serde_json::Value| {
        v["state"] = "finished".into();
        v["verdict"] = "fail".into();
        v["machine"]["serial"] = "SOMEONE-ELSE".into();
        v["machine"]["hostname"] = "evil".into();
    };
    assert_eq!(beat(&c, A1, &lab.b, run, 10u64.pow(12) + 1, lie).0, 403);
    assert_eq!(beat(&c, A1, &lab.a, run, 10u64.pow(12) + 2, lie).0, 200);
    let row = c.row(run).unwrap();
    assert_eq!(row["shown"], "finished", "{row}");
    assert!(row["bundle_sha256"].is_string(), "{row}");
    assert_eq!(row["heartbeat"]["machine"]["serial"], "SRV-00000", "{row}");
    assert_eq!(row["heartbeat"]["verdict"], "pass", "{row}");
    assert_ne!(row["heartbeat"]["machine"]["hostname"], "evil", "{row}");
    let (_, page) = common::http_get(&c.base(), "/board");
    assert!(
        !page.contains("SOMEONE-ELSE") && !page.contains("evil"),
        "{page}"
    );
    assert_eq!(c.lines_with("but it is"), 2, "{:?}", c.log.lock().unwrap());
}

/// The status a server wrote on `s` (0 if none within 30 s).
fn status_of(mut s: TcpStream) -> u16 {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn tally(socks: Vec<TcpStream>) -> std::collections::BTreeMap<u16, u32> {
    let mut codes = std::collections::BTreeMap::new();
    for s in socks {
        *codes.entry(status_of(s)).or_insert(0) += 1;
    }
    codes
}

/// Item 2: one address with no key and no token, opening slow heartbeat
/// bodies behind a junk signature header for 4 s (more than the 256
/// bodies read at once), holds no body slot: each is refused from its
/// head. With a real signature header, copied, it holds at most its own
/// 16. Real heartbeats from another address all land meanwhile.
#[test]
fn one_address_cannot_hold_the_heartbeat_slots() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "127.0.0.1:0", &[]);
    let slow_head = |sig: &str, run: &str| {
        format!(
            "PUT /heartbeat/{run} HTTP/1.1\r\nHost: x\r\nx-storcert-minisig: {sig}\r\n\
             Content-Length: 65536\r\n\r\n{{"
        )
    };
    let open = |sig: &str, run: &str| {
        let mut s = connect_from(A1, c.addr, None);
        s.write_all(slow_head(sig, run).as_bytes()).unwrap();
        s
    };
    // A real signature's head, copied (signatures are not secret).
    let body = heartbeat_json("copied", 1, |_| {});
    let sig = base64::engine::general_purpose::STANDARD
        .encode(lab.a.sign_minisig(&body, "storcert heartbeat copied 1"));
    let copied: Vec<TcpStream> = (0..40).map(|_| open(&sig, "copied")).collect();
    let junk = base64::engine::general_purpose::STANDARD.encode("junk");
    let mut junked = Vec::new();
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until && junked.len() < 600 {
        junked.push(open(&junk, &format!("junk-{}", junked.len())));
        std::thread::sleep(Duration::from_millis(5));
    }
    for seq in 1..=18 {
        let (code, why) = beat(&c, A2, &lab.a, "real", seq, |_| {});
        assert_eq!(code, 200, "real heartbeat {seq}: {why}");
    }
    // The copied ones: 16 held (then 408 at the body deadline), the rest
    // 503 at once. The junk ones: refused from the head, 403 (or 429
    // once the address's rate is spent), none held.
    let copied = tally(copied);
    assert_eq!(copied.get(&408), Some(&16), "{copied:?}");
    assert_eq!(copied.get(&503), Some(&24), "{copied:?}");
    let n = junked.len() as u32;
    let junked = tally(junked);
    assert_eq!(
        junked.get(&403).unwrap_or(&0) + junked.get(&429).unwrap_or(&0),
        n,
        "{junked:?}"
    );
    assert!(junked.contains_key(&403), "{junked:?}");
}

/// Item 3: a trusted key inventing run ids gets a few a minute per
/// address and per key; a real machine gone silent stays on the board,
/// stalled, above every invented run.
#[test]
fn invented_runs_cannot_push_a_silent_machine_off_the_board() {
    let lab = Lab::new();
    let c = Collector::start(
        &lab,
        "127.0.0.1:0",
        &[
            "--new-runs-per-client",
            "20",
            "--new-runs-per-key",
            "30",
            "--stall-after",
            "1s",
        ],
    );
    assert_eq!(beat(&c, A2, &lab.a, "the-real-one", 1, |_| {}).0, 200);
    let started = Instant::now();
    let count = |from, range: std::ops::Range<u32>| {
        let mut codes = std::collections::BTreeMap::new();
        for n in range {
            let code = beat(&c, from, &lab.b, &format!("fake-{n}"), 1, |_| {}).0;
            *codes.entry(code).or_insert(0u32) += 1;
        }
        codes
    };
    let from_a1 = count(A1, 0..60);
    let from_a3 = count(A3, 60..80);
    // What a bucket may have refilled meanwhile (n a minute).
    let refill = |n: f64| (started.elapsed().as_secs_f64() * n / 60.0).ceil() as u32;
    let ok = |codes: &std::collections::BTreeMap<u16, u32>| *codes.get(&200).unwrap_or(&0);
    assert!(
        ok(&from_a1) >= 20 && ok(&from_a1) <= 20 + refill(20.0),
        "{from_a1:?}"
    );
    assert_eq!(ok(&from_a1) + from_a1[&429], 60, "{from_a1:?}");
    // Another address: only what is left of the key's 30.
    let invented = ok(&from_a1) + ok(&from_a3);
    assert!(
        invented >= 30 && invented <= 30 + refill(30.0),
        "{from_a3:?}"
    );
    assert!(from_a3[&429] > 0, "{from_a3:?}");
    // A run already known is no new run: it goes on.
    assert_eq!(beat(&c, A1, &lab.b, "fake-0", 2, |_| {}).0, 200);
    std::thread::sleep(Duration::from_millis(1500));
    let board = c.board();
    assert_eq!(board.len() as u32, 1 + invented, "{board:?}");
    let real = board
        .iter()
        .position(|r| r["heartbeat"]["run_id"] == "the-real-one")
        .unwrap();
    assert_eq!(board[real]["shown"], "stalled");
}

/// Item 4: a forged heartbeat's 60 KB host name or tag is refused and
/// named; absurd numbers are clamped to their domain; a board of 300
/// runs whose every field is at its bound stays small.
#[test]
fn heartbeat_fields_are_bounded_on_intake_and_on_the_board() {
    let lab = Lab::new();
    let c = Collector::start(
        &lab,
        "127.0.0.1:0",
        &[
            "--new-runs-per-client",
            "1000",
            "--new-runs-per-key",
            "1000",
            // 300 heartbeats from one address as fast as they go: not a
            // burst this test is about.
            "--heartbeat-rate",
            "1000000",
        ],
    );
    let (code, why) = beat(&c, A1, &lab.a, "big-host", 1, |v| {
        v["machine"]["hostname"] = "h".repeat(60_000).into();
    });
    assert_eq!(code, 403);
    assert!(
        why.contains("machine.hostname is 60000 characters; at most 128"),
        "{why}"
    );
    let (code, why) = beat(&c, A1, &lab.a, "big-tag", 1, |v| {
        v["tag"] = "t".repeat(60_000).into();
    });
    assert_eq!(code, 403);
    assert!(why.contains("tag is 60000 characters"), "{why}");
    let (code, _) = beat(&c, A1, &lab.a, "numbers", 1, |v| {
        v["live_pct_over_1ms"] = 1e308.into();
        v["progress"] = serde_json::json!([{"key": "act 3x", "done": 10_000_000_000_000_000_000u64,
            "total": 1, "unit": "s", "pct_over_1ms": 1e308}]);
        v["eta_s"] = u64::MAX.into();
    });
    assert_eq!(code, 200);
    let (_, page) = common::http_get(&c.base(), "/board");
    assert!(page.contains("live 100.00%"), "{page}");
    assert!(!page.contains("1000000000"), "{page}");
    // 300 runs at every bound.
    for n in 0..300 {
        let (code, why) = beat(&c, A1, &lab.a, &format!("full-{n}"), 1, |v| {
            for f in ["vendor", "product", "serial", "uuid", "hostname"] {
                v["machine"][f] = "<".repeat(128).into();
            }
            v["tag"] = "t".repeat(64).into();
            v["stage"] = "s".repeat(200).into();
            v["profile"] = "p".repeat(200).into();
            v["errors"] = serde_json::json!(vec!["<".repeat(300); 16]);
            v["progress"] = serde_json::json!(vec![
                serde_json::json!({"key": "k".repeat(200), "done": 1, "total": 2,
                                   "unit": "s", "pct_over_1ms": 1.0});
                64
            ]);
        });
        assert_eq!(code, 200, "{why}");
    }
    let (_, page) = common::http_get(&c.base(), "/board");
    assert!(page.len() < 6 << 20, "a board of {} bytes", page.len());
    let rss = vm_hwm_kib(c.child.id());
    assert!(rss < 150 << 10, "the collector peaked at {rss} KiB");
    // The figures docs/collector.md gives (seen with --nocapture).
    eprintln!(
        "300 runs at every bound: /board {} bytes, collector peak {} KiB",
        page.len(),
        rss
    );
}

/// The collector's open sockets.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().starts_with("socket:"))
        .count()
}

/// Item 5: readers that never read hold at most two exports of their
/// address, and only until the export stall; another address's export
/// goes through meanwhile. Then their connections are dropped, with what
/// was queued for them (hyper has no write timeout of its own: they were
/// held, with up to half a megabyte each, until the client closed).
#[test]
fn exports_are_not_held_by_readers_that_never_read() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "127.0.0.1:0", &["--export-stall", "5s"]);
    // Four machines of 700 drives: an export of over 2 MiB, four times
    // what the server's send buffer and a socket never read take in.
    for n in 0..4 {
        upload(&c, &wide_bundle(&lab, &format!("wide-{n}.tar.zst"), 700));
    }
    let idle = sockets(c.child.id());
    let get = "GET /api/export.jsonl HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut stuck = Vec::new();
    for _ in 0..2 {
        let mut s = connect_from(A1, c.addr, Some(4096));
        s.write_all(get.as_bytes()).unwrap();
        // Its answer has begun (its turn is taken); the rest is never read.
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        stuck.push(s);
    }
    let third = exchange(connect_from(A1, c.addr, Some(4096)), get, b"");
    assert_eq!(third.0, 503, "{}", third.1);
    // Another address reads its whole export meanwhile.
    let (code, csv) = exchange(
        connect_from(A2, c.addr, None),
        "GET /api/export.jsonl HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(csv.lines().count(), 2800, "{}", &csv[..200.min(csv.len())]);
    assert!(csv.len() > 2 << 20, "an export of {} bytes", csv.len());
    // The stuck ones end once they have taken nothing for the stall:
    // their address may export again, though its sockets are still open.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, _) = exchange(
            connect_from(A1, c.addr, None),
            "GET /api/export.jsonl?limit=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"",
        );
        if code == 200 {
            break;
        }
        assert!(Instant::now() < until, "the stuck exports never ended");
        std::thread::sleep(Duration::from_millis(500));
    }
    // Ended by the export's stall or the connection's, whichever first.
    assert!(
        c.lines_with("collect: export: ") >= 2,
        "{:?}",
        c.log.lock().unwrap()
    );
    // Their connections go once the stall passes with nothing taken,
    // though the clients keep them open.
    let until = Instant::now() + Duration::from_secs(60);
    while sockets(c.child.id()) > idle {
        assert!(
            Instant::now() < until,
            "the stuck connections are still held: {} sockets, {idle} when idle",
            sockets(c.child.id())
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // What a stuck reader gets, once it reads: part of the export, and no
    // end of body (a cut export must not look whole).
    for mut s in stuck {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        // (Each connection's send buffer is small: what was queued in
        // the kernel for it is some hundreds of KiB.)
        assert!(got.len() > 64 << 10, "{} bytes", got.len());
        assert!(
            !got.ends_with(b"\r\n0\r\n\r\n"),
            "a cut export ended as a whole one"
        );
    }
}

/// Item 7: records that cannot be indexed (here: no signature files
/// beside them) are read once, not on every page view's sync.
#[test]
fn a_broken_store_record_is_tried_once_until_it_changes() {
    let lab = Lab::new();
    let summaries = lab.path("store/summaries");
    std::fs::create_dir_all(&summaries).unwrap();
    for n in 0..200u32 {
        let sha = format!("{n:064x}");
        std::fs::write(
            summaries.join(format!("{sha}.json")),
            format!(r#"{{"name": "x{n}.tar.zst", "received_at": "2026-12-01T00:00:00Z"}}"#),
        )
        .unwrap();
    }
    let c = Collector::start(&lab, "127.0.0.1:0", &[]);
    let until = Instant::now() + Duration::from_secs(60);
    while c.lines_with("not indexed") < 200 {
        assert!(Instant::now() < until, "{:?}", c.log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(common::http_get(&c.base(), "/").0, 200);
    }
    assert_eq!(c.lines_with("not indexed"), 200);
    // A changed record is read again.
    std::fs::write(
        summaries.join(format!("{:064x}.json", 7)),
        r#"{"name": "changed.tar.zst", "received_at": "2026-12-01T00:00:01Z"}"#,
    )
    .unwrap();
    // Read on a page view's sync a second on; its log line is read from
    // the collector's stderr by another thread, so it is waited for.
    let until = Instant::now() + Duration::from_secs(60);
    while c.lines_with("not indexed") < 201 {
        assert!(
            Instant::now() < until,
            "the changed record was not read again"
        );
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(common::http_get(&c.base(), "/").0, 200);
    }
    // And only once.
    std::thread::sleep(Duration::from_millis(2200));
    assert_eq!(common::http_get(&c.base(), "/").0, 200);
    assert_eq!(c.lines_with("not indexed"), 201);
}

/// Item 13: a collector reachable beyond this host with no token says at
/// start that every read route is open; on loopback, or with a token, it
/// does not.
#[test]
fn an_open_collector_says_so_at_start() {
    let lab = Lab::new();
    let open = Collector::start(&lab, "0.0.0.0:0", &[]);
    // Printed after the line start-up waits for: waited for, not slept on.
    common::wait_for("the open collector's warning", 30, || {
        open.lines_with("with no --token-file") > 0
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(open.lines_with("with no --token-file"), 1);
    drop(open);
    let local = Collector::start(&lab, "127.0.0.1:0", &[]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(local.lines_with("with no --token-file"), 0);
    std::fs::write(lab.path("token"), "t0k\n").unwrap();
    let with_token = Collector::start(&lab, "0.0.0.0:0", &["--token-file", s(&lab.path("token"))]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(with_token.lines_with("with no --token-file"), 0);
}

/// The outsider's review of the round's fixes: another key's bundle
/// under a running run's name takes nothing over; a head replayed with a
/// bad body spends no key's new runs; a record planted in the store has
/// no say; padding is refused; the JSON answers escape what machines say.
#[test]
fn a_bundle_a_replayed_head_or_a_planted_record_takes_no_run_over() {
    let lab = Lab::new();
    let c = Collector::start(
        &lab,
        "127.0.0.1:0",
        &["--new-runs-per-key", "10", "--new-runs-per-client", "1000"],
    );
    let run = "storcert-SRV-A-burn-in-20261201T000000Z";
    assert_eq!(beat(&c, A1, &lab.a, run, 1, |_| {}).0, 200);
    // B's bundle of another machine, under the run's name: stored (it is
    // a bundle of a trusted key), but the run stays A's.
    let b_key = lab.path("b.key");
    upload(
        &c,
        &fleet_bundle_by(&lab, &b_key, &format!("{run}.tar.zst"), 7, 2),
    );
    assert_eq!(beat(&c, A1, &lab.a, run, 2, |_| {}).0, 200);
    let row = c.row(run).unwrap();
    assert_eq!(row["shown"], "running", "{row}");
    assert!(row["bundle_sha256"].is_null(), "{row}");
    assert_eq!(row["heartbeat"]["machine"]["serial"], "SRV-A", "{row}");
    // A's own bundle of the run finishes it.
    let own = lab.path("own");
    std::fs::create_dir_all(&own).unwrap();
    upload(&c, &fleet_bundle(&lab, &format!("own/{run}.tar.zst"), 0, 2));
    let row = c.row(run).unwrap();
    assert_eq!(row["shown"], "finished", "{row}");
    assert_eq!(row["heartbeat"]["machine"]["serial"], "SRV-00000", "{row}");

    // A head of A's for a run not heard of, replayed with a bad body from
    // one address 30 times: A's ten new runs a minute are untouched.
    let good = heartbeat_json("replayed", 5, |_| {});
    let sig = base64::engine::general_purpose::STANDARD
        .encode(lab.a.sign_minisig(&good, "storcert heartbeat replayed 5"));
    let bad = heartbeat_json("replayed", 5, |v| v["stage"] = "forged".into());
    for _ in 0..30 {
        let head = format!(
            "PUT /heartbeat/replayed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             x-storcert-minisig: {sig}\r\nContent-Length: {}\r\n\r\n",
            bad.len()
        );
        assert_eq!(exchange(connect_from(A3, c.addr, None), &head, &bad).0, 403);
    }
    for n in 0..5 {
        let (code, why) = beat(&c, A2, &lab.a, &format!("genuine-{n}"), 1, |_| {});
        assert_eq!(code, 200, "{why}");
    }

    // A record planted in the store, unsigned, claiming the run for
    // another key at the highest seq: the owner's heartbeats go on.
    let planted = serde_json::json!({
        "run_id": "genuine-0", "received_at": "2026-12-01T00:00:00Z",
        "received_ms": 1u64, "key_id": "DEADBEEFDEADBEEF", "minisig": "x",
        "heartbeat": String::from_utf8(heartbeat_json("genuine-0", i64::MAX as u64, |_| {}))
            .unwrap()
    });
    std::fs::write(lab.path("store/status/genuine-0.json"), planted.to_string()).unwrap();
    let (code, why) = beat(&c, A2, &lab.a, "genuine-0", 2, |_| {});
    assert_eq!(code, 200, "{why}");

    // Padding: a field no run sends, or white space, is refused.
    let (code, why) = beat(&c, A2, &lab.a, "genuine-1", 2, |v| {
        v["padding"] = "x".repeat(60_000).into();
    });
    assert_eq!(code, 403, "{why}");
    let mut padded = heartbeat_json("genuine-1", 3, |_| {});
    padded.extend(std::iter::repeat_n(b' ', 60_000));
    let sig = lab
        .a
        .sign_minisig(&padded, "storcert heartbeat genuine-1 3");
    let head = format!(
        "PUT /heartbeat/genuine-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         x-storcert-minisig: {}\r\nContent-Length: {}\r\n\r\n",
        base64::engine::general_purpose::STANDARD.encode(sig),
        padded.len()
    );
    let (code, why) = exchange(connect_from(A2, c.addr, None), &head, &padded);
    assert_eq!(code, 403, "{why}");
    assert!(why.contains("bytes of heartbeat"), "{why}");

    // A host name with C1 and bidi controls: the JSON answer escapes them.
    assert_eq!(
        beat(&c, A2, &lab.a, "genuine-2", 2, |v| {
            v["machine"]["hostname"] = "a\u{9b}2J\u{202e}b\u{ad}".into();
        })
        .0,
        200
    );
    let (_, json) = common::http_get(&c.base(), "/api/board");
    for raw in ['\u{9b}', '\u{202e}', '\u{ad}'] {
        assert!(!json.contains(raw), "{raw:?} raw in /api/board");
    }
    assert!(json.contains("\\u009b"), "{json}");
}

/// The body of a whole chunked HTTP/1.1 answer, as bytes.
fn dechunked(raw: &[u8]) -> Vec<u8> {
    let find = |from: usize| {
        raw[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|at| from + at)
            .expect("a line end")
    };
    let mut at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let mut out = Vec::new();
    loop {
        let end = find(at);
        let n =
            usize::from_str_radix(std::str::from_utf8(&raw[at..end]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + n]);
        at = end + 2 + n + 2;
    }
}

/// Second review: downloads and report pages held by slow readers. One
/// address holds at most four (before: all sixteen, to the request
/// timeout, and a report page's copy in memory each); a reader that
/// stops, or takes a little just often enough, gives its slots back; and
/// another address downloads meanwhile.
#[test]
fn downloads_and_report_pages_are_not_held_by_slow_readers() {
    let lab = Lab::new();
    // A stall long enough that the four below are still held when the
    // fifth comes, however busy the machine.
    let c = Collector::start(&lab, "127.0.0.1:0", &["--export-stall", "10s"]);
    // Noise does not compress: more than any socket buffer holds.
    let res = lab.path("res-noise");
    std::fs::create_dir_all(&res).unwrap();
    let mut noise = vec![0u8; 6 << 20];
    storcert::util::random::Rng::seeded(7).fill(&mut noise, 100);
    std::fs::write(res.join("noise.bin"), &noise).unwrap();
    let page: String = noise[..3 << 20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(res.join("report.html"), &page).unwrap();
    let b = signed(&lab, &res, "noise.tar.zst");
    upload(&c, &b);
    let bytes = std::fs::read(&b).unwrap();
    let sha = storcert::bundle::sha256_hex(&bytes);
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let bundle = get(&format!("/download/{sha}.tar.zst"));
    let report = get(&format!("/bundles/{sha}/report"));
    // Four from one address, never read on: the fifth is refused.
    let mut stuck = Vec::new();
    for req in [&bundle, &report, &bundle, &report] {
        let mut s = connect_from(A1, c.addr, Some(4096));
        s.write_all(req.as_bytes()).unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        stuck.push(s);
    }
    let (code, why) = exchange(connect_from(A1, c.addr, Some(4096)), &bundle, b"");
    assert_eq!(code, 503, "{why}");
    assert!(why.contains("4 downloads from 127.0.0.1"), "{why}");
    // Another address downloads the whole bundle meanwhile.
    let mut s2 = connect_from(A2, c.addr, None);
    s2.write_all(bundle.as_bytes()).unwrap();
    let mut got = Vec::new();
    s2.read_to_end(&mut got).unwrap();
    assert_eq!(dechunked(&got), bytes, "a download of {} bytes", got.len());
    // A reader that takes 4 KiB each half second is cut well before it
    // has the page, and its connection ends.
    let mut slow = connect_from(A3, c.addr, Some(4096));
    slow.write_all(report.as_bytes()).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let (mut taken, started) = (0usize, Instant::now());
    let mut buf = [0u8; 4096];
    loop {
        match slow.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => taken += n,
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "a trickle held its page"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(taken < page.len(), "the trickle took the whole page");
    // The stuck ones are dropped too: their address downloads again.
    let until = Instant::now() + Duration::from_secs(60);
    while exchange(connect_from(A1, c.addr, None), &report, b"").0 != 200 {
        assert!(
            Instant::now() < until,
            "the stuck downloads were never dropped"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    drop(stuck);
}

/// Third review: sixteen readers of a large report page from four
/// addresses that read its head and stop held every download slot and a
/// copy of the page each (16 × 15 MB: some 270 MB of the collector). A
/// page now goes out from a private file of its own, a chunk at a time:
/// the collector holds little more for sixteen readers than for none.
/// The slots themselves are held for as long as the pace allows (the
/// export stall), then given back (downloads_and_report_pages_are_not_held_by_slow_readers).
#[test]
fn slow_readers_of_large_report_pages_do_not_hold_their_pages_in_memory() {
    let lab = Lab::new();
    // The stall is long enough that no slot comes back while the sixteen
    // readers are still being set up: each waits for its page to be
    // unpacked, which on a busy machine took over 30 s for all of them.
    let c = Collector::start(&lab, "127.0.0.1:0", &["--export-stall", "300s"]);
    let res = lab.path("res-page");
    std::fs::create_dir_all(&res).unwrap();
    // 12 MB of hex noise: it compresses to half, never to nothing.
    let mut noise = vec![0u8; 6 << 20];
    storcert::util::random::Rng::seeded(11).fill(&mut noise, 100);
    let page: String = noise.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(res.join("report.html"), &page).unwrap();
    let b = signed(&lab, &res, "page.tar.zst");
    upload(&c, &b);
    let sha = storcert::bundle::sha256_hex(&std::fs::read(&b).unwrap());
    let report =
        format!("GET /bundles/{sha}/report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // One served whole first, so what the server keeps for good is there.
    let (code, got) = exchange(connect_from(A1, c.addr, None), &report, b"");
    assert_eq!(code, 200);
    assert_eq!(got.len(), page.len());
    let before = vm_rss_kib(c.child.id());
    let mut stuck = Vec::new();
    for i in 0..16u8 {
        let mut s = connect_from(Ipv4Addr::new(127, 0, 1, 1 + i / 4), c.addr, Some(4096));
        s.write_all(report.as_bytes()).unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        stuck.push(s);
    }
    let (code, why) = exchange(connect_from(A2, c.addr, None), &report, b"");
    assert_eq!(code, 503, "{why}");
    assert!(why.contains("16 downloads in progress"), "{why}");
    let held = vm_rss_kib(c.child.id()).saturating_sub(before);
    eprintln!(
        "sixteen stuck readers of a {} byte page: the collector holds {held} KiB more",
        page.len()
    );
    // Holding the pages took 16 times 12 MB; streaming them takes 25 MB
    // on a quiet machine and up to 54 MB on a busy one (the allocator
    // keeps what the unpacking threads freed): half of what the pages
    // would take tells the two apart on any machine.
    let pages_held = 16 * page.len() as u64 / 1024;
    assert!(
        held < pages_held / 2,
        "sixteen stuck readers took {held} KiB (their pages are {pages_held} KiB)"
    );
    drop(stuck);
}

/// The collector's resident memory now.
fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// The third review's leftover page: a client gone while the bundle was
/// unpacking, before its report page, left the page's private file behind
/// for good (the request's guard had already run), and its slots free for
/// the next while the unpacking went on. The unpacking now owns both: when
/// it ends, nothing of the request is left.
#[test]
fn a_report_page_abandoned_mid_unpack_leaves_nothing_behind() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "127.0.0.1:0", &[]);
    let res = lab.path("res-abandon");
    std::fs::create_dir_all(&res).unwrap();
    // Noise that sorts before the page in the archive and takes a while
    // to unpack and hash, however fast the machine.
    let mut noise = vec![0u8; 48 << 20];
    storcert::util::random::Rng::seeded(13).fill(&mut noise, 100);
    std::fs::write(res.join("a.bin"), &noise).unwrap();
    std::fs::write(res.join("report.html"), "<p>page</p>".repeat(1000)).unwrap();
    let b = signed(&lab, &res, "abandon.tar.zst");
    upload(&c, &b);
    let size = std::fs::metadata(&b).unwrap().len();
    let sha = storcert::bundle::sha256_hex(&std::fs::read(&b).unwrap());
    let incoming = walkdir(lab.dir.path())
        .into_iter()
        .find(|p| p.is_dir() && p.to_string_lossy().ends_with(".incoming"))
        .expect("the collector's incoming folder");
    let parts = || -> Vec<(PathBuf, u64)> {
        std::fs::read_dir(&incoming)
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                Some((e.path(), e.metadata().ok()?.len()))
            })
            .collect()
    };
    assert!(parts().is_empty(), "{:?}", parts());
    let report =
        format!("GET /bundles/{sha}/report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // Gone as soon as the bundle's copy is whole, while it unpacks.
    let mut s = connect_from(A1, c.addr, None);
    s.write_all(report.as_bytes()).unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while !parts().iter().any(|(_, n)| *n == size) {
        assert!(
            Instant::now() < until,
            "the copy never appeared: {:?}",
            parts()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(s);
    // Whatever the unpacking had made is gone when it ends.
    let until = Instant::now() + Duration::from_secs(120);
    while !parts().is_empty() {
        assert!(Instant::now() < until, "left behind: {:?}", parts());
        std::thread::sleep(Duration::from_millis(200));
    }
    // And the page is served whole to a reader that stays.
    let (code, page) = exchange(connect_from(A2, c.addr, None), &report, b"");
    assert_eq!(code, 200);
    assert_eq!(page, "<p>page</p>".repeat(1000));
    assert!(parts().is_empty(), "{:?}", parts());
}

/// Every path under `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        }
        out.push(p);
    }
    out
}
