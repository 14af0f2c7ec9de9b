//! The collector's request handling: any method, path, headers and body
//! through the real router (a folder store in a temporary directory).
//! Nothing may be stored unless it verifies, and nothing may panic.
#![no_main]
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;
use storcert::collect::{self, index::Index, store::Store};
use tower::ServiceExt;

struct World {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    store: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let key = storcert::bundle::minisign::SecretKey::generate();
        let state = collect::Collector::new(collect::Config {
            store: Store::open(store.to_str().unwrap()).unwrap(),
            index: Index::open(&dir.path().join("index.sqlite")).unwrap(),
            trusted: vec![key.public()],
            max_body: 1 << 20,
            rate_per_minute: u32::MAX,
            sync_interval: std::time::Duration::from_secs(3600),
            token: None,
            max_uploads: 4,
            request_timeout: std::time::Duration::from_secs(10),
        });
        World {
            rt: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            router: collect::router(state),
            store,
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    // Lines: method, path, then "name: value" headers until an empty
    // line; the rest is the body.
    let text_end = data.windows(2).position(|x| x == b"\n\n").unwrap_or(data.len());
    let head = String::from_utf8_lossy(&data[..text_end]);
    let body = data.get(text_end + 2..).unwrap_or(&[]).to_vec();
    let mut lines = head.lines();
    let method = match lines.next().unwrap_or("") {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        _ => "PUT",
    };
    let path = lines.next().unwrap_or("/");
    let mut req = Request::builder().method(method).uri(if path.starts_with('/') { path } else { "/" });
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            req = req.header(k.trim(), v.trim());
        }
    }
    let Ok(mut req) = req.body(Body::from(body)) else { return };
    req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 9))));
    let resp = w.rt.block_on(w.router.clone().oneshot(req)).unwrap();
    // Nothing fuzzed can carry a trusted signature: nothing is stored.
    if resp.status().is_success() && method == "PUT" {
        panic!("a fuzzed upload was accepted");
    }
    assert!(!w.store.join("bundles").exists() || std::fs::read_dir(w.store.join("bundles")).unwrap().next().is_none());
});
