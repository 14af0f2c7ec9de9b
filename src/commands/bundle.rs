//! `storcert keygen` and `storcert bundle create|verify`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::exit;
use crate::bundle::keys::{make_key, public_key_path, read_public_keys, read_secret_key};
use crate::bundle::{self, create_signed};
use crate::cli::{BundleArgs, BundleCommand, BundleCreateArgs, BundleVerifyArgs, KeygenArgs};
use crate::util::text::printable;

fn fail(cmd: &str, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert {cmd}: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn keygen(args: KeygenArgs) -> ExitCode {
    match make_key(&args.secret, args.force) {
        Ok(key) => {
            println!(
                "key {} written: secret {} (keep it on the image or stick), public {}",
                key.public().id_hex(),
                args.secret.display(),
                public_key_path(&args.secret).display()
            );
            println!(
                "verify with: minisign -Vm BUNDLE -P {}",
                key.public().to_base64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail("keygen", format!("{e:#}")),
    }
}

pub fn run(args: BundleArgs) -> ExitCode {
    match args.command {
        BundleCommand::Create(a) => create(a),
        BundleCommand::Verify(a) => verify(a),
    }
}

fn create(a: BundleCreateArgs) -> ExitCode {
    const CMD: &str = "bundle create";
    let key = match a.key.as_deref().map(read_secret_key).transpose() {
        Ok(k) => k,
        Err(e) => return fail(CMD, format!("--key {e:#}")),
    };
    if !a.dir.join(bundle::SYSTEM).exists() {
        eprintln!(
            "{CMD}: {} has no {}: the bundle names no machine (storcert run records one)",
            a.dir.display(),
            bundle::SYSTEM
        );
    }
    let created = match create_signed(&a.dir, None, &a.output, key.as_ref()) {
        Ok(c) => c,
        Err(e) => return fail(CMD, format!("{e:#}")),
    };
    if let Some(spool) = &a.spool {
        if key.is_none() {
            return fail(CMD, "--spool: an unsigned bundle cannot be uploaded");
        }
        match crate::upload::spool::Spool::open(spool).and_then(|s| s.put(&a.output)) {
            Ok(p) => eprintln!("spooled as {}", p.display()),
            Err(e) => return fail(CMD, format!("--spool {}: {e:#}", spool.display())),
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&created.summary).expect("serialises")
        );
    } else {
        print!("{}", summary_text(&created.summary));
        println!(
            "bundle {} ({} bytes, sha256 {}){}",
            a.output.display(),
            created.size,
            created.sha256,
            if key.is_some() {
                ", signed"
            } else {
                ", unsigned"
            }
        );
    }
    ExitCode::SUCCESS
}

/// The summary for a terminal: every string from the bundle printable.
pub fn summary_text(s: &bundle::summary::Summary) -> String {
    let p = |s: &str| printable(s, 300);
    let mut out = format!("verdict: {}\n", s.verdict.as_str().to_uppercase());
    for r in &s.reasons {
        out += &format!("  {}\n", p(r));
    }
    for d in &s.drives {
        out += &format!(
            "  {} {} serial {} : {}{}\n",
            p(&d.device),
            p(d.model.as_deref().unwrap_or("-")),
            p(d.serial.as_deref().unwrap_or("-")),
            d.verdict,
            d.act_load_passed
                .map(|l| format!(", ACT passed at {l}x"))
                .unwrap_or_default()
        );
    }
    out
}

fn verify(a: BundleVerifyArgs) -> ExitCode {
    const CMD: &str = "bundle verify";
    let keys = match read_public_keys(&a.pubkey) {
        Ok(k) => k,
        Err(e) => return fail(CMD, format!("--pubkey {e:#}")),
    };
    let limits = match a.limits.limits() {
        Ok(l) => l,
        Err(e) => return fail(CMD, e),
    };
    let read_text = |p: &Path| crate::input::read_text(p).with_context(|| p.display().to_string());
    let inputs = read_text(&bundle::minisig_path(&a.file))
        .and_then(|m| Ok((m, read_text(&bundle::envelope_path(&a.file))?)));
    let (minisig, envelope) = match inputs {
        Ok(x) => x,
        Err(e) => return fail(CMD, format!("{e:#}")),
    };
    // Every string below came from the bundle: printable, one line each,
    // so no escape sequence can repaint what the terminal shows.
    let p = |s: &str| printable(s, 300);
    let name = a.signed_as.clone().unwrap_or_else(|| {
        a.file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let verified = std::fs::File::open(&a.file)
        .map_err(bundle::VerifyError::Io)
        .and_then(|f| bundle::verify(f, &name, &minisig, &envelope, &keys, &limits));
    match verified {
        Ok(v) => {
            if a.json {
                println!("{}", serde_json::to_string_pretty(&v).expect("serialises"));
            } else {
                println!("{}: OK", p(&a.file.display().to_string()));
                println!("  sha256     {}", v.sha256);
                println!("  signed by  key {}", v.key_id);
                println!(
                    "  signed at  {} (as {})",
                    p(&v.signed_at),
                    p(&v.signed_name)
                );
                println!("  minisign   {}", p(&v.trusted_comment.replace('\t', " ")));
                println!("  files      {} (every manifest entry matches)", v.files);
                if v.subjects.is_empty() {
                    // A scratch file on a machine without a DMI serial has nothing to name.
                    println!(
                        "  covers     the bundle only (no DMI serial, no drive serial or WWN)"
                    );
                } else {
                    let subjects: Vec<String> = v.subjects.iter().map(|s| p(s)).collect();
                    println!("  covers     {}", subjects.join(", "));
                }
                print!("{}", summary_text(&v.summary));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "storcert {CMD}: {}: FAILED: {}",
                p(&a.file.display().to_string()),
                printable(&e.to_string(), 1000)
            );
            ExitCode::from(exit::FAIL)
        }
    }
}
