//! Small hardening fixes, each checked end to end through the binary: HTML
//! pages never pass a bundle's control or bidi characters through, a
//! collector refuses waivers that never end or waive everything, and no
//! upload PUT follows a redirect to another origin. (The CSV export's
//! formula defusing is checked beside its code, in crates/report/src/export/csv.rs.)

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{read_request, s, storcert};

const INVENTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/qemu-lab/inventory.json"
);

/// What a hostile machine puts in every string it can: an OSC that retitles
/// the terminal (ESC … BEL), a C1 CSI that clears it, and a right-to-left
/// override that reorders what follows.
const HOSTILE: &str = "\u{1b}]0;TITLE-PWNED\u{7}\u{9b}2J\u{202e}x";

fn write(path: &Path, data: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

/// An ACT storage log of `device` at `load`x: one report after 10 s of
/// 20,000 reads, `slow_per_10k` of each 10,000 over 1 ms.
fn act_log(device: &str, load: f64, slow_per_10k: u64) -> String {
    let reads = 20_000u64;
    let slow = slow_per_10k * 2;
    format!(
        "\nACT version 6.6\nStorage device IO test\n\nACT-STORAGE CONFIGURATION\n\
         device-names: {device}\nnum-devices: 1\ntest-duration-sec: 10\nreport-interval-sec: 10\n\
         microsecond-histograms: no\nread-reqs-per-sec: {}\nwrite-reqs-per-sec: {}\n\n\
         DERIVED CONFIGURATION\nrecord-stored-bytes: 1536 ... 1536\n\n\
         HISTOGRAM NAMES\nreads\n\nafter 10 sec:\nreads ({reads} total)\n (00: {:010}) (01: {slow:010})\n\n",
        (load * 2000.0) as u64,
        (load * 1000.0) as u64,
        reads - slow
    )
}

/// A results folder whose every machine-given string is hostile: the
/// drive's path, serial and model, the inventory's model, the host name.
fn hostile_results(dir: &Path) {
    let device = format!("/dev/sdx{HOSTILE}");
    write(
        &dir.join("targets.json"),
        &serde_json::json!({
            "artefact": "targets", "schema_version": 1,
            "targets": [{"path": device, "disk": device, "label": "sdx",
                "serial": format!("S1{HOSTILE}"), "model": format!("M{HOSTILE}"),
                "file_size": 0}]
        })
        .to_string(),
    );
    for (load, slow) in [(1.0, 100), (2.0, 700)] {
        write(
            &dir.join(format!("act/sdx-{load}x.log")),
            &act_log(&device, load, slow),
        );
    }
    let inv = std::fs::read_to_string(INVENTORY).unwrap();
    let mut inv: serde_json::Value = serde_json::from_str(&inv).unwrap();
    inv["disks"][0]["model"] = format!("SSD{HOSTILE}").into();
    write(&dir.join("inventory.json"), &inv.to_string());
    let system = serde_json::json!({
        "schema_version": 1,
        "dmi": {"sys_vendor": "Dell Inc.", "product_name": format!("R760{HOSTILE}"),
                "product_serial": format!("7XYZ{HOSTILE}"), "product_uuid": "4c4c4544-0000"},
        "cpu_model": "Xeon", "cpu_count": 2, "memory_bytes": 1024,
        "kernel": "6.1.0", "hostname": format!("lab{HOSTILE}"), "storcert_version": "0.1.0",
        "image_build_id": null
    });
    write(&dir.join("system.json"), &system.to_string());
}

fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Neither ESC, BEL, a C1 control nor a bidi override, raw, in `page`; the
/// hostile text is there, escaped.
fn assert_escaped(what: &str, page: &[u8]) {
    let page = String::from_utf8(page.to_vec()).unwrap();
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        let n = page.matches(c).count();
        assert_eq!(n, 0, "{what}: {n} raw {c:?}");
    }
    assert!(
        page.chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\t'),
        "{what}: a raw control character"
    );
    assert!(
        page.contains("\\u{1b}]0;TITLE-PWNED\\u{7}\\u{9b}2J\\u{202e}x"),
        "{what}: the hostile text is not shown escaped"
    );
}

#[test]
fn html_report_and_compare_show_a_bundle_s_control_and_bidi_characters_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    hostile_results(&dir);
    // The results folder, in HTML: the report (its default) and compare.
    let o = storcert(&["report", "--format", "html", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_escaped("report --format html DIR", &o.stdout);
    let o = storcert(&["compare", "--format", "html", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_escaped("compare --format html", &o.stdout);
    // The same, signed into a bundle and reported with the default format.
    let key = tmp.path().join("k.key");
    let o = storcert(&["keygen", "-s", s(&key)]);
    assert!(o.status.success(), "{}", text(&o));
    let b = tmp.path().join("run.tar.zst");
    let o = storcert(&["bundle", "create", s(&dir), "-o", s(&b), "-k", s(&key)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = storcert(&["report", s(&b)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_escaped("report BUNDLE", &o.stdout);
    assert!(!o.stderr.contains(&0x1b), "{}", text(&o));
}

/// `collect export` with a waivers file: its exit status and output.
fn export_with_waivers(tmp: &Path, waivers: &str, extra: &[&str]) -> std::process::Output {
    let key = tmp.join("k.key");
    if !key.exists() {
        let o = storcert(&["keygen", "-s", s(&key)]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let (store, pubkey) = (tmp.join("store"), tmp.join("k.key.pub"));
    std::fs::create_dir_all(&store).unwrap();
    let file = tmp.join("waivers.toml");
    std::fs::write(&file, waivers).unwrap();
    let mut args = vec![
        "collect",
        "export",
        "--store",
        s(&store),
        "--trusted-keys",
        s(&pubkey),
        "--waivers",
        s(&file),
    ];
    args.extend_from_slice(extra);
    storcert(&args)
}

#[test]
fn a_collector_refuses_waivers_that_waive_everything_or_never_end() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let one = |rule: &str, serial: &str, expires: &str| {
        format!(
            "[[waiver]]\nrule = {rule:?}\nmodel = \"Micron*\"\nserial = {serial:?}\n\
             reason = \"vendor RMA open\"\nexpires = {expires:?}\n"
        )
    };
    let refused = |waivers: &str, extra: &[&str], want: &str| {
        let o = export_with_waivers(t, waivers, extra);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        let file = t.join("waivers.toml");
        assert!(
            err.contains(&format!("--waivers {}: waiver[1]", file.display())) && err.contains(want),
            "{want}: {err}"
        );
    };
    let good = one("act-storage *", "DRV-1", "2000-01-01");
    // Not a day of the calendar, before 1970, years away.
    refused(
        &(good.clone() + &one("*", "DRV-2", "2026-02-31")),
        &[],
        "not a date",
    );
    refused(
        &(good.clone() + &one("*", "DRV-2", "0000-01-01")),
        &[],
        "not a date",
    );
    refused(
        &(good.clone() + &one("*", "DRV-2", "9999-12-31")),
        &[],
        "at most 365 (--waiver-max-days)",
    );
    refused(
        &(good.clone() + &one("*", "DRV-2", "9999-12-31")),
        &["--waiver-max-days", "3000"],
        "at most 3000 (--waiver-max-days)",
    );
    // Rule, model and serial all "*" (model and serial by default).
    refused(
        &(good.clone()
            + "[[waiver]]\nrule = \"*\"\nreason = \"noisy\"\nexpires = \"2000-01-01\"\n"),
        &[],
        "every failure of every drive",
    );
    // What is left is accepted: an expired waiver (inert), and a far one
    // where the collector allows it.
    let o = export_with_waivers(
        t,
        &(good.clone() + &one("*", "DRV-2", "9999-12-31")),
        &["--waiver-max-days", "4000000"],
    );
    assert!(o.status.success(), "{}", text(&o));
}

/// A server on 127.0.0.1 answering each request with `reply(head)`; the
/// request lines it saw.
fn server(
    reply: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            let (log, reply) = (log.clone(), reply.clone());
            std::thread::spawn(move || {
                while let Some(head) = read_request(&mut conn) {
                    let line = head.lines().next().unwrap_or("").to_string();
                    log.lock().unwrap().push(line);
                    if conn.write_all(reply(&head).as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (base, seen)
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

/// A presigned upload whose signature PUTs are answered with a 307 to
/// another origin (the presigned query in the Location too): neither
/// signature follows it, as the bundle's PUT never did, nothing reaches
/// the other origin, no credential is printed, and the bundle is not left
/// in the bucket without its signatures. A plain PUT target is held to
/// the same rule, for the bundle and for its signatures.
#[test]
fn no_upload_put_follows_a_redirect_to_another_origin() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("p.tar.zst");
    std::fs::write(&b, b"bundle bytes").unwrap();
    std::fs::write(tmp.path().join("p.tar.zst.minisig"), b"minisig").unwrap();
    std::fs::write(tmp.path().join("p.tar.zst.intoto.json"), b"{}").unwrap();
    // The other origin: takes whatever comes (so following would succeed).
    let elsewhere_hits = Arc::new(AtomicUsize::new(0));
    let hits = elsewhere_hits.clone();
    let (elsewhere, _) = server(move |_| {
        hits.fetch_add(1, Ordering::SeqCst);
        OK.to_string()
    });
    let redirect = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {elsewhere}/stolen?X-Amz-Signature=LEAKED\r\n\
         Content-Length: 0\r\n\r\n"
    );
    let upload = |extra: &[&str]| {
        let mut args = vec![
            "upload",
            "--allow-http",
            "--max-backoff",
            "1s",
            "--deadline",
            "5s",
            "--no-spool",
            s(&b),
        ];
        args.extend_from_slice(extra);
        storcert(&args)
    };
    let refused_here = |o: &std::process::Output| {
        let t = text(o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(
            t.contains(&format!(
                "refusing a redirect to another origin ({elsewhere})"
            )),
            "{t}"
        );
        assert!(!t.contains("SECRET") && !t.contains("LEAKED"), "{t}");
        assert_eq!(elsewhere_hits.load(Ordering::SeqCst), 0, "{t}");
    };

    // Presigned: the signature PUTs are redirected, the bundle's would be taken.
    let r = redirect.clone();
    let (bucket, seen) = server(move |head| {
        if head.starts_with("put /b/p.tar.zst?") {
            OK.to_string()
        } else {
            r.clone()
        }
    });
    let url = |object: &str, secret: &str| format!("{bucket}/b/{object}?X-Amz-Signature={secret}");
    let (to, m, e) = (
        url("p.tar.zst", "SECRET1"),
        url("p.tar.zst.minisig", "SECRET2"),
        url("p.tar.zst.intoto.json", "SECRET3"),
    );
    let o = upload(&["--to", &to, "--minisig-to", &m, "--intoto-to", &e]);
    refused_here(&o);
    // Refused at the first signature: the bundle never went without them.
    assert_eq!(
        *seen.lock().unwrap(),
        ["put /b/p.tar.zst.minisig?x-amz-signature=secret2 http/1.1"]
    );

    // A plain PUT target: the bundle is taken, its signatures redirected.
    let r = redirect.clone();
    let (drop_url, _) = server(move |head| {
        if head.starts_with("put /drop/p.tar.zst ") {
            OK.to_string()
        } else {
            r.clone()
        }
    });
    refused_here(&upload(&["--to", &format!("{drop_url}/drop/")]));

    // And the bundle's own PUT redirected: the same rule, the same words.
    let r = redirect.clone();
    let (drop_url, _) = server(move |_| r.clone());
    refused_here(&upload(&["--to", &format!("{drop_url}/drop/")]));
}
