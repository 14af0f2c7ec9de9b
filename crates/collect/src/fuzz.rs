//! The collector's fuzz entry (fuzz/fuzz_targets/collect_request.rs),
//! here so that the committed seeds are replayed by the ordinary test
//! suite through the very same router.
#![doc(hidden)]

use std::sync::OnceLock;

use storcert_bundle::minisign::SecretKey;

struct World {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    store: std::path::PathBuf,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        use crate::{index::Index, store::Store};
        let dir =
            std::env::temp_dir().join(format!("storcert-fuzz-collect-{}", std::process::id()));
        let store = dir.join("store");
        std::fs::create_dir_all(&dir).expect("temp dir");
        let key = SecretKey::generate();
        let state = crate::Collector::new(crate::Config {
            store: Store::open(store.to_str().expect("utf-8")).expect("store"),
            index: Index::open(&dir.join("index.sqlite")).expect("index"),
            trusted: vec![key.public()],
            max_body: 1 << 20,
            rate_per_minute: u32::MAX,
            sync_interval: std::time::Duration::from_secs(3600),
            token: None,
            public_read: true,
            max_uploads: 4,
            max_uploads_per_client: 4,
            max_verifying: 1,
            request_timeout: std::time::Duration::from_secs(10),
            body_idle_timeout: std::time::Duration::from_secs(10),
            limits: Default::default(),
            waivers: Default::default(),
            stall_after: std::time::Duration::from_secs(180),
            heartbeat: crate::heartbeat::Limits {
                rate_per_minute: u32::MAX,
                new_runs_per_key: u32::MAX,
                new_runs_per_client: u32::MAX,
                max_runs: u64::MAX,
            },
            export_stall: std::time::Duration::from_secs(30),
            incoming: {
                let d = dir.join("incoming");
                std::fs::create_dir_all(&d).expect("incoming dir");
                d
            },
        });
        World {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            router: crate::router(state),
            store,
        }
    })
}

/// A request to the collector: a method line, a path line, header lines,
/// an empty line, then the body. Nothing fuzzed carries a trusted
/// signature, so nothing may ever be stored.
pub fn collect_request(data: &[u8]) {
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::http::Request;
    use tower::ServiceExt;
    let w = world();
    let end = data
        .windows(2)
        .position(|x| x == b"\n\n")
        .unwrap_or(data.len());
    let head = String::from_utf8_lossy(&data[..end]);
    let body = data.get(end + 2..).unwrap_or(&[]).to_vec();
    let mut lines = head.lines();
    let method = match lines.next().unwrap_or("") {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        _ => "PUT",
    };
    let path = lines.next().unwrap_or("/");
    let mut req = Request::builder()
        .method(method)
        .uri(if path.starts_with('/') { path } else { "/" });
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            req = req.header(k.trim(), v.trim());
        }
    }
    let Ok(mut req) = req.body(Body::from(body)) else {
        return;
    };
    req.extensions_mut()
        .insert(ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 9))));
    let resp =
        w.rt.block_on(w.router.clone().oneshot(req))
            .expect("the router answers");
    assert!(
        !(resp.status().is_success() && method == "PUT"),
        "a fuzzed upload was accepted"
    );
    let stored = std::fs::read_dir(w.store.join("bundles"))
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    assert!(!stored, "a fuzzed upload was stored");
}
