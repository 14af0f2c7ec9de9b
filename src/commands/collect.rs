//! `storcert collect`: the collector server.

use std::os::unix::fs::DirBuilderExt;
use std::process::ExitCode;

use super::exit;
use crate::cli::CollectArgs;
use crate::collect::{self, index::Index, store::Store};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert collect: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn run(a: CollectArgs) -> ExitCode {
    // One TLS provider for the process (ring), before the S3 client or the
    // TLS listener is built: both take the process default.
    crate::upload::tls::use_ring();
    let trusted = match crate::bundle::keys::read_public_keys(&a.trusted_keys) {
        Ok(k) => k,
        Err(e) => return fail(format!("--trusted-keys {e:#}")),
    };
    let max_body = match crate::util::size::parse_size(&a.max_body) {
        Ok(n) => n,
        Err(e) => return fail(format!("--max-body {:?}: {e}", a.max_body)),
    };
    let sync_interval = match humantime::parse_duration(&a.sync_interval) {
        Ok(d) => d,
        Err(e) => return fail(format!("--sync-interval {:?}: {e}", a.sync_interval)),
    };
    let token = match &a.token_file {
        Some(p) => match crate::input::read_text(p) {
            Ok(t) => Some(t.trim().to_string()),
            Err(e) => return fail(format!("--token-file {}: {e}", p.display())),
        },
        None => std::env::var("STORCERT_COLLECT_TOKEN").ok(),
    };
    if token.as_deref().is_some_and(str::is_empty) {
        return fail("--token-file: the token is empty (every endpoint would be open)");
    }
    let request_timeout = match humantime::parse_duration(&a.request_timeout) {
        Ok(d) => d,
        Err(e) => return fail(format!("--request-timeout {:?}: {e}", a.request_timeout)),
    };
    let duration = |flag: &str, text: &str| {
        humantime::parse_duration(text).map_err(|e| format!("{flag} {text:?}: {e}"))
    };
    let (body_idle_timeout, verify_cpu) = match (
        duration("--body-idle-timeout", &a.body_idle_timeout),
        duration("--verify-cpu", &a.verify_cpu),
    ) {
        (Ok(b), Ok(v)) => (b, v),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let mut limits = match a.limits.limits() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    limits.budget.cpu = Some(verify_cpu);
    let store = match Store::open(&a.store) {
        Ok(s) => s,
        Err(e) => return fail(format!("{e:#}")),
    };
    let db = a.db.clone().unwrap_or_else(|| match &store {
        Store::Local(dir) => dir.join("index.sqlite"),
        Store::Object { .. } => "collector-index.sqlite".into(),
    });
    // Bodies arrive in a private folder beside the index; what an earlier
    // run left there (killed mid-upload) is removed.
    let mut incoming = db.clone().into_os_string();
    incoming.push(".incoming");
    let incoming = std::path::PathBuf::from(incoming);
    let _ = std::fs::remove_dir_all(&incoming);
    if let Err(e) = std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&incoming)
    {
        return fail(format!("{}: {e}", incoming.display()));
    }
    // Ours alone: a folder someone else made (a shared /tmp) could have a
    // body swapped between its verification and its storing.
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match std::fs::symlink_metadata(&incoming) {
        Ok(m)
            if m.is_dir()
                && std::os::unix::fs::MetadataExt::uid(&m) == me
                && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o077 == 0 => {}
        _ => {
            return fail(format!(
                "{}: not a private folder of this user (remove it, or choose --db elsewhere)",
                incoming.display()
            ))
        }
    }
    let index = match Index::open(&db) {
        Ok(i) => i,
        Err(e) => return fail(format!("--db: {e:#}")),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("runtime: {e}")),
    };
    let state = collect::Collector::new(collect::Config {
        store,
        index,
        trusted,
        max_body,
        rate_per_minute: a.rate,
        token,
        public_read: a.public_read,
        max_uploads: a.max_uploads,
        max_uploads_per_client: a.max_uploads_per_client,
        max_verifying: a
            .max_verifying
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        request_timeout,
        body_idle_timeout,
        limits,
        incoming,
        sync_interval,
    });
    let tls = a.tls_cert.clone().zip(a.tls_key.clone());
    match rt.block_on(collect::serve(state, &a.listen, tls)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("{e:#}")),
    }
}
