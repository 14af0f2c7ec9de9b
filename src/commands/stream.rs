//! `storcert stream`: the sequential suite, or the filesystem pass.

use crate::output::console::Console;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{exit, gate, stop_flag};
use crate::cli::{StreamArgs, StreamFormat};
use crate::stream::{self, export, fs, Pass, Spec};
use crate::util::size::parse_size;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert stream: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

fn emit(output: &Option<PathBuf>, text: &str) -> Result<(), ExitCode> {
    let r = match output {
        Some(p) => crate::util::fs::write_durably(p, text)
            .map_err(|e| format!("--output {}: {e}", p.display())),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string()),
    };
    r.map_err(fail)
}

pub fn run(a: StreamArgs) -> ExitCode {
    let stop = stop_flag();
    if let Some(dir) = &a.fs {
        let spec = match (parse_size(&a.fs_size), parse_size(&a.bs)) {
            (Ok(size), Ok(bs)) => fs::FsSpec {
                dir: dir.clone(),
                file_size: size,
                chunk: bs as usize,
                files: a.files,
                seeks: 8000,
            },
            (Err(e), _) => return fail(format!("--fs-size: {e}")),
            (_, Err(e)) => return fail(format!("--bs: {e}")),
        };
        // Said before the pass too: its figures may be the page cache's.
        if let Some(w) =
            crate::results::stream::page_cache_warning(spec.file_size, fs::memory_bytes())
        {
            eprintln!("storcert stream: warning: {w}");
        }
        let r = match fs::run(&spec, &stop) {
            Ok(r) => r,
            Err(e) => return fail(format!("{e:#}")),
        };
        let text = match a.output_format {
            StreamFormat::Text => fs::render(&r),
            _ => String::from_utf8_lossy(&crate::results::Artefact::from(r.clone()).to_json())
                .into_owned(),
        };
        if let Err(code) = emit(&a.output, &text) {
            return code;
        }
        return ExitCode::from(if r.interrupted {
            exit::INTERRUPTED
        } else {
            exit::PASS
        });
    }
    if a.device.is_empty() {
        return fail("give --device DEV (repeatable), or --fs DIR");
    }
    let bs = if a.dd && a.bs == "1M" {
        1 << 20
    } else {
        match parse_size(&a.bs) {
            Ok(b) if b <= u32::MAX as u64 / 2 => b as u32,
            Ok(_) => return fail("--bs is too large"),
            Err(e) => return fail(format!("--bs: {e}")),
        }
    };
    let null_latency = match a.engine.null_model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    if a.verify && a.engine.engine == crate::cli::EngineChoice::Null {
        return fail("--verify reads back what was written; the null engine writes nothing");
    }
    let size = match a.size.as_deref().map(parse_size).transpose() {
        Ok(s) => s,
        Err(e) => return fail(format!("--size: {e}")),
    };
    let mut passes = Vec::new();
    for p in a.pattern.split(',').map(str::trim) {
        match p {
            "write" => passes.push(Pass::Write),
            "read" => passes.push(Pass::Read),
            other => return fail(format!("--pattern: unknown pass {other:?} (write, read)")),
        }
    }
    if a.verify && passes.first() != Some(&Pass::Write) && a.seed.is_none() {
        return fail("--verify needs a write pass first, or --seed of the run that wrote the data");
    }
    let targets = super::on_provisioned("stream", &a.device);
    let mut spec = Spec {
        targets: targets.clone(),
        cleared: Vec::new(),
        size,
        percent: a.percent.unwrap_or(100),
        bs,
        qd: if a.dd { 1 } else { a.qd },
        jobs: if a.dd { 1 } else { a.jobs },
        passes: passes.clone(),
        verify: a.verify,
        direct: !a.buffered,
        engine: a.engine.kind(),
        null_latency,
        seed: a
            .seed
            .unwrap_or_else(|| crate::util::random::Rng::from_entropy().next_u64()),
    };
    if passes.contains(&Pass::Write) {
        let paths: Vec<PathBuf> = targets.iter().map(PathBuf::from).collect();
        match gate("stream", "stream sequential writes", &paths, &a.safety) {
            Ok(cleared) => spec.cleared = cleared,
            Err(code) => return code,
        }
    } else if a.safety.dry_run {
        eprintln!("dry run: a read-only pattern writes nothing");
        return ExitCode::SUCCESS;
    }
    let console = Console::for_command();
    let result = stream::run(&spec, &stop, &console);
    console.close();
    let result = match result {
        Ok(r) => r,
        Err(e) => return fail(format!("{e:#}")),
    };
    let text = match a.output_format {
        StreamFormat::Text if a.dd => export::text::dd_summary(&result),
        StreamFormat::Text => export::text::render(&result),
        StreamFormat::Json => {
            String::from_utf8_lossy(&crate::results::Artefact::from(result.clone()).to_json())
                .into_owned()
        }
        StreamFormat::FioJson | StreamFormat::FioJsonPlus => {
            let plus = a.output_format == StreamFormat::FioJsonPlus;
            serde_json::to_string_pretty(&export::fio_json::render(&result, plus))
                .unwrap_or_default()
                + "\n"
        }
    };
    if let Err(code) = emit(&a.output, &text) {
        return code;
    }
    for p in &result.passes {
        for j in p.jobs.iter().filter_map(|j| j.error.as_ref()) {
            eprintln!("storcert stream: {j}");
        }
    }
    if result.interrupted() {
        ExitCode::from(exit::INTERRUPTED)
    } else if result.failed() {
        ExitCode::from(exit::FAIL)
    } else {
        ExitCode::SUCCESS
    }
}
