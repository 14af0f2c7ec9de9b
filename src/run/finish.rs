//! The end of a run and what it sends while it runs: the signing key,
//! the run's id, the notes and report, the bundle and its spool, the
//! upload, and the heartbeats.

use super::*;

/// The run's signing key: `--key`, the profile's, or storcert.key beside
/// the results (made on first use).
pub(super) fn signing_key(ctx: &Ctx, opts: &Options) -> Result<crate::bundle::minisign::SecretKey> {
    let key_path = opts
        .key
        .clone()
        .or_else(|| ctx.profile.bundle.key.clone())
        .unwrap_or_else(|| {
            ctx.dir
                .parent()
                .unwrap_or(Path::new("."))
                .join("storcert.key")
        });
    if key_path.exists() {
        return crate::bundle::keys::read_secret_key(&key_path).map_err(|e| anyhow!(e));
    }
    let k = crate::bundle::keys::make_key(&key_path, false).map_err(|e| anyhow!(e))?;
    ctx.console.say(&format!(
        "made signing key {} ({})",
        k.public().id_hex(),
        key_path.display()
    ));
    Ok(k)
}

/// The run's bundle name without ".tar.zst": also its id on the board.
pub(super) fn run_id(ctx: &Ctx, system: &crate::bundle::system::SystemIdentity) -> String {
    let machine = system
        .dmi
        .product_serial
        .clone()
        .unwrap_or_else(|| "machine".into());
    let run_name = ctx
        .dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("run")
        .to_string();
    format!(
        "storcert-{}-{}-{run_name}",
        label_of(&machine),
        ctx.profile.name
    )
}

/// A client per upload target of the profile, with its URL as given.
pub(super) fn upload_clients(p: &Profile) -> Result<Vec<(String, crate::upload::Client)>> {
    let (Some(u), Some(up)) = (&p.upload, &p.plan.upload) else {
        return Ok(Vec::new());
    };
    let token = u
        .token_file
        .as_ref()
        .map(|f| crate::input::read_text(f).map(|t| t.trim().to_string()))
        .transpose()?;
    let mut clients = Vec::new();
    for to in &u.to {
        let client = crate::upload::Client::new(crate::upload::Options {
            to: to.clone(),
            ca_file: u.ca_file.clone(),
            pins: up.pins.clone(),
            token: token.clone(),
            allow_http: u.allow_http,
            deadline: up.deadline,
            max_backoff: Duration::from_secs(60),
            signature_urls: None,
        })
        .map_err(|e| anyhow!(e))?;
        clients.push((to.clone(), client));
    }
    Ok(clients)
}

/// Heartbeats to every collector among the upload targets, signed with
/// the run's key.
pub(super) fn start_heartbeats(
    ctx: &Ctx,
    opts: &Options,
    system: &crate::bundle::system::SystemIdentity,
) -> Result<()> {
    let run_id = run_id(ctx, system);
    let targets: Vec<_> = upload_clients(ctx.profile)?
        .into_iter()
        .filter_map(|(to, c)| {
            let url = c.heartbeat_url(&run_id)?;
            Some((crate::upload::shown_url(&to), c, url))
        })
        .collect();
    let textfile = ctx.profile.textfile.clone();
    if targets.is_empty() && textfile.is_none() {
        return Ok(());
    }
    if !crate::results::heartbeat::valid_run_id(&run_id) {
        bail!(
            "the run id {} is not a plain name (the profile's name?)",
            crate::util::text::printable(&run_id, 200)
        );
    }
    let key = signing_key(ctx, opts)?;
    let p = ctx.profile;
    let info = heartbeat::RunInfo {
        run_id,
        machine: system.machine(),
        profile: p.name.clone(),
        tag: p.tag.clone(),
        interval: p.plan.progress_interval,
        timed_seconds: p.plan.timed_seconds(),
        // Beside the run folder, not in it: not a result.
        seq_file: ctx.dir.with_extension("heartbeat-seq"),
    };
    let to: Vec<String> = targets
        .iter()
        .map(|t| t.0.clone())
        .chain(textfile.iter().map(|d| {
            let file = d.join(super::textfile::FILE);
            format!(
                "{} (node_exporter)",
                crate::util::text::printable(&file.display().to_string(), 300)
            )
        }))
        .collect();
    ctx.console.say(&format!(
        "heartbeats every {} s to {}",
        p.plan.progress_interval.as_secs().max(1),
        to.join(", ")
    ));
    *ctx.beacon.lock().unwrap_or_else(|e| e.into_inner()) = heartbeat::Beacon::start(
        (targets, textfile),
        key,
        info,
        ctx.live.clone(),
        ctx.console.clone(),
    );
    Ok(())
}

/// The run's notes (of this and earlier starts) and its report, into the
/// results folder. The summary and report are made of the values the run
/// holds, not read back from the folder. Returns each drive's answer, as
/// the report's first screen gives it, and the summary the bundle carries.
pub(super) fn write_notes_and_report(
    ctx: &Ctx,
    opts: &Options,
) -> Result<(Vec<String>, crate::bundle::summary::Summary)> {
    let p = ctx.profile;
    let journal_copy = ctx.journal().clone();
    ctx.made()
        .artefact(journal::FILE, journal_copy.clone().into());
    let as_made = folder_as_made(ctx)?;
    let notes: Vec<String> = ctx.notes.lock().unwrap_or_else(|e| e.into_inner()).clone();
    ctx.write(
        "run-notes.json",
        RunNotes {
            schema_version: NOTES_SCHEMA,
            profile: p.name.clone(),
            source: opts.source.clone(),
            tag: p.tag.clone(),
            starts: journal_copy.starts,
            notes,
            stages: journal_copy.stages,
        },
    )?;
    let contents = match as_made {
        true => ctx.made().take_contents(),
        false => crate::report::contents_of_results(&ctx.dir)?,
    };
    let report = crate::report::of_contents(&crate::report::title_of(&ctx.dir), &contents);
    let first = crate::report::write_for_results(&ctx.dir, &report).context("report")?;
    let answers = first
        .drives
        .iter()
        .map(|d| {
            // Device names are the machine's own strings: printable.
            crate::util::text::printable(
                &format!(
                    "{} {}: {}",
                    d.device,
                    d.verdict.as_str().to_uppercase(),
                    d.answer
                ),
                1000,
            )
        })
        .collect();
    Ok((answers, report.summary))
}

/// Whether the folder holds exactly the files the run holds values of.
/// One it lacks a value of, or a value whose file is gone, reached or
/// left the folder another way: a note says so, and the folder is then
/// judged as read, so the signed summary never says other than the
/// bundle's files.
fn folder_as_made(ctx: &Ctx) -> Result<bool> {
    let unlike = ctx.made().unlike_folder(&ctx.dir)?;
    if unlike.is_empty() {
        return Ok(true);
    }
    let shown: Vec<String> = unlike
        .iter()
        .take(5)
        .map(|p| crate::util::text::printable(p, 200))
        .collect();
    ctx.note(format!(
        "the results folder and the run's own record of it differ ({}{}): the folder is judged as read",
        shown.join(", "),
        if unlike.len() > 5 { ", …" } else { "" }
    ));
    Ok(false)
}

/// Bundles and signs the results and puts the bundle in the spool: the
/// results are safe on disk before any upload. Returns the spool and the
/// spooled bundle's path, and fills in `ending`'s verdict and bundle.
pub(super) fn bundle_and_spool(
    ctx: &Ctx,
    opts: &Options,
    system: &crate::bundle::system::SystemIdentity,
    summary: crate::bundle::summary::Summary,
    ending: &mut Ending,
) -> Result<(crate::upload::spool::Spool, PathBuf)> {
    let p = ctx.profile;
    let spool_dir = p
        .bundle
        .spool
        .clone()
        .or_else(crate::upload::spool::default_dir)
        .unwrap_or_else(|| ctx.dir.parent().unwrap_or(Path::new(".")).join("spool"));
    let spool = crate::upload::spool::Spool::open(&spool_dir)?;
    let key = signing_key(ctx, opts)?;
    let bundle_name = format!("{}.tar.zst", run_id(ctx, system));
    let out = ctx
        .dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("bundles")
        .join(&bundle_name);
    crate::util::fs::create_dir_durably(out.parent().expect("has a parent"))?;
    let created = crate::bundle::create_signed(&ctx.dir, Some(summary), &out, Some(&key))
        .map_err(|e| anyhow!(e))?;
    let spooled = spool.put(&out)?;
    ending.verdict = created.summary.verdict;
    ending.reasons = created.summary.reasons.clone();
    ending.bundle = Some(spooled.clone());
    ending.bundle_sha256 = Some(created.sha256.clone());
    // The board moves the run to finished now; its bundle follows.
    ctx.last_heartbeat(Some((bundle_name.clone(), created.summary.verdict)));
    Ok((spool, spooled))
}

/// Sends the spool's pending bundles (earlier runs' first) to the
/// profile's collectors until the upload deadline; a bundle leaves the
/// spool once every target confirmed it.
pub(super) fn upload_spooled(
    ctx: &Ctx,
    up: &profile::UploadPlan,
    spool: &crate::upload::spool::Spool,
    spooled: &Path,
    ending: &mut Ending,
) -> Result<()> {
    let p = ctx.profile;
    let deadline = up.deadline;
    let clients = upload_clients(p)?;
    let until = Instant::now() + deadline;
    // Pending bundles of earlier runs go first; a bundle leaves the
    // spool once every target confirmed it.
    let queue = spool.pending()?;
    let mut delivered_to = Vec::new();
    let done = crate::upload::drain::drain(
        &queue,
        &clients,
        Some(spool),
        until,
        &ctx.console,
        &mut |a| match &a.outcome {
            crate::upload::Outcome::Confirmed { status, .. } => {
                ctx.console.say(&format!(
                    "{}: delivered to {} ({status})",
                    a.bundle.display(),
                    a.to
                ));
                if a.bundle == spooled {
                    delivered_to.push(a.to.clone());
                }
            }
            crate::upload::Outcome::Rejected(why)
            | crate::upload::Outcome::RefusedBundle(why)
            | crate::upload::Outcome::GaveUp(why) => {
                ctx.note(format!(
                    "upload of {} to {}: {why}; kept in the spool",
                    a.bundle.display(),
                    a.to
                ));
            }
        },
    )?;
    ending.delivered_to = delivered_to;
    for d in done {
        if let Some(e) = d.confirm_error {
            bail!("{}: {e}", d.bundle.display());
        }
        // The banner says where the bundle is now (sent/, not pending/).
        if d.bundle == spooled {
            if let Some(now) = d.moved_to {
                ending.bundle = Some(now);
            }
        }
    }
    Ok(())
}
