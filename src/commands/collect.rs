//! `storcert-collect` (and `storcert collect` on a build with the
//! collector): the collector server, and `collect export`.

use std::os::unix::fs::DirBuilderExt;
use std::process::ExitCode;
use std::time::Duration;

use super::exit;
use crate::cli::collect::{CollectAction, CollectArgs, CollectExportArgs, CollectStoreArgs};
use crate::collect::{self, fleet::Waivers, index::Index, store::Store};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert collect: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

fn duration(flag: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{flag} {text:?}: {e}"))
}

/// What serving and exporting share: the store, its index, the keys
/// trusted, the limits of a verification and the waivers.
struct Opened {
    store: Store,
    index: Index,
    trusted: Vec<crate::bundle::minisign::PublicKey>,
    max_body: u64,
    limits: crate::bundle::Limits,
    incoming: std::path::PathBuf,
    waivers: Waivers,
}

/// Opens the store and its index. `incoming` names the private folder
/// (beside the index) bodies are copied into while they are verified: the
/// server's is cleared of what a killed run left; an export takes one of
/// its own, so a running server's uploads are never touched.
fn open(a: &CollectStoreArgs, incoming: &str) -> Result<Opened, String> {
    let keys = a
        .trusted_keys
        .as_ref()
        .ok_or("--trusted-keys is required")?;
    let trusted =
        crate::bundle::keys::read_public_keys(keys).map_err(|e| format!("--trusted-keys {e:#}"))?;
    let max_body = crate::util::size::parse_size(&a.max_body)
        .map_err(|e| format!("--max-body {:?}: {e}", a.max_body))?;
    let verify_cpu = duration("--verify-cpu", &a.verify_cpu)?;
    let mut limits = a.limits.limits()?;
    limits.budget.cpu = Some(verify_cpu);
    let waivers = match &a.waivers {
        Some(p) => {
            let text = crate::input::read_text(p)
                .map_err(|e| format!("--waivers {}: {e}", p.display()))?;
            Waivers::parse(
                &text,
                &format!("--waivers {}", p.display()),
                &collect::fleet::today(),
                a.waiver_max_days,
            )?
        }
        None => Waivers::default(),
    };
    let store = Store::open(&a.store).map_err(|e| format!("{e:#}"))?;
    let db = a.db.clone().unwrap_or_else(|| match &store {
        Store::Local(dir) => dir.join("index.sqlite"),
        Store::Object { .. } => "collector-index.sqlite".into(),
    });
    // Bodies arrive in a private folder beside the index; what an earlier
    // run left there (killed mid-upload) is removed.
    let mut folder = db.clone().into_os_string();
    folder.push(incoming);
    let incoming = std::path::PathBuf::from(folder);
    let _ = std::fs::remove_dir_all(&incoming);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&incoming)
        .map_err(|e| format!("{}: {e}", incoming.display()))?;
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
            return Err(format!(
                "{}: not a private folder of this user (remove it, or choose --db elsewhere)",
                incoming.display()
            ))
        }
    }
    let index = Index::open(&db).map_err(|e| format!("--db: {e:#}"))?;
    Ok(Opened {
        store,
        index,
        trusted,
        max_body,
        limits,
        incoming,
        waivers,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))
}

pub fn run(a: CollectArgs) -> ExitCode {
    // One TLS provider for the process (ring), before the S3 client or the
    // TLS listener is built: both take the process default.
    crate::upload::tls::use_ring();
    match a.action {
        Some(CollectAction::Export(e)) => export(e),
        None => serve(a),
    }
}

fn serve(a: CollectArgs) -> ExitCode {
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
    let times = (|| {
        Ok::<_, String>((
            duration("--sync-interval", &a.sync_interval)?,
            duration("--request-timeout", &a.request_timeout)?,
            duration("--body-idle-timeout", &a.body_idle_timeout)?,
            duration("--stall-after", &a.stall_after)?,
            duration("--export-stall", &a.export_stall)?,
        ))
    })();
    let (sync_interval, request_timeout, body_idle_timeout, stall_after, export_stall) = match times
    {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let o = match open(&a.store, ".incoming") {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let state = collect::Collector::new(collect::Config {
        store: o.store,
        index: o.index,
        trusted: o.trusted,
        max_body: o.max_body,
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
        limits: o.limits,
        incoming: o.incoming,
        sync_interval,
        waivers: o.waivers,
        stall_after,
        heartbeat: collect::heartbeat::Limits {
            rate_per_minute: a.heartbeat_rate,
            new_runs_per_key: a.new_runs_per_key,
            new_runs_per_client: a.new_runs_per_client,
            max_runs: a.max_runs,
        },
        export_stall,
    });
    let tls = a.tls_cert.clone().zip(a.tls_key.clone());
    match rt.block_on(collect::serve(state, &a.listen, tls)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("{e:#}")),
    }
}

/// `collect export`: the index brought up to date with the store (every
/// record it lacks verified from its bundle, as a server does), then the
/// rows written.
fn export(a: CollectExportArgs) -> ExitCode {
    let q = collect::ExportQuery {
        drive: a.drive.clone(),
        machine: a.machine.clone(),
        by: a.by.clone(),
        group: a.group.clone(),
        since: a.since.clone(),
        limit: a.limit,
    };
    let (filter, limit) = match q.filter() {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let own = format!(".export-{}.incoming", std::process::id());
    let o = match open(&a.store, &own) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let incoming = o.incoming.clone();
    let state = collect::Collector::new(collect::Config {
        store: o.store,
        index: o.index,
        trusted: o.trusted,
        max_body: o.max_body,
        rate_per_minute: 1,
        token: None,
        public_read: false,
        max_uploads: 1,
        max_uploads_per_client: 1,
        max_verifying: std::thread::available_parallelism().map_or(1, |n| n.get()),
        request_timeout: Duration::from_secs(600),
        body_idle_timeout: Duration::from_secs(30),
        limits: o.limits,
        incoming: o.incoming,
        sync_interval: Duration::from_secs(3600),
        waivers: o.waivers,
        stall_after: Duration::from_secs(180),
        heartbeat: Default::default(),
        export_stall: Duration::from_secs(30),
    });
    let synced = rt.block_on(state.sync());
    let _ = std::fs::remove_dir_all(&incoming);
    match synced {
        Ok(n) if n > 0 => {
            eprintln!("storcert collect export: indexed {n} bundle(s) from the store")
        }
        Ok(_) => {}
        Err(e) => return fail(format!("reading the store: {e:#}")),
    }
    let Some(format) = crate::export::format(&a.format) else {
        return fail(format!("--format {}: no such export format", a.format));
    };
    let written = match &a.output {
        // Streamed into a temporary file beside it, made durable, then
        // renamed over it: never a half-written export, never held whole.
        Some(path) => crate::util::fs::write_durably_with(path, |f| {
            collect::write_export(state.index(), state.waivers(), &filter, limit, format, f)
                .map_err(std::io::Error::other)
        })
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display())),
        None => collect::write_export(
            state.index(),
            state.waivers(),
            &filter,
            limit,
            format,
            std::io::stdout().lock(),
        ),
    };
    match written {
        Ok(n) => {
            eprintln!("storcert collect export: {n} row(s)");
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("export: {e:#}")),
    }
}
