//! `storcert act …`: prep, storage, index, analyze, search.

use crate::output::console::Console;
use anyhow::Context;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::{exit, gate, stop_flag};
use crate::act::config::{
    parse_duration_secs, parse_load, rates_for_load, IndexConfig, StorageConfig,
};
use crate::act::runner::{Outcome, RunResult};
use crate::act::{self, analyze, search, RunOptions};
use crate::cli::*;
use crate::results::act::{Prep, PREP_SCHEMA};
use crate::results::Artefact;
use crate::util::fs::write_durably;

fn fail(cmd: &str, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("storcert act {cmd}: {msg}");
    ExitCode::from(exit::COULD_NOT_RUN)
}

pub fn run(args: ActArgs) -> ExitCode {
    match args.command {
        ActCommand::Prep(a) => prep(a),
        ActCommand::Storage(a) => storage(a),
        ActCommand::Index(a) => index(a),
        ActCommand::Analyze(a) => analyze_cmd(a),
        ActCommand::Search(a) => search_cmd(a),
    }
}

/// Applies flags over a config (file or defaults), then validates it.
pub fn storage_config(config: Option<&Path>, s: &StorageSettings) -> anyhow::Result<StorageConfig> {
    let mut c = storage_config_as_given(config, s)?;
    c.device_names = super::on_provisioned("act", &c.device_names);
    Ok(c)
}

fn storage_config_as_given(
    config: Option<&Path>,
    s: &StorageSettings,
) -> anyhow::Result<StorageConfig> {
    let mut c = match config {
        Some(p) => StorageConfig::from_file_unchecked(p)?,
        None => StorageConfig::default(),
    };
    let origin = config
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "flags".into());
    if !s.device.is_empty() {
        c.device_names = s.device.clone();
    }
    if let Some(load) = &s.load {
        let n = parse_load(load).with_context(|| "--load")?;
        let (r, w) = rates_for_load(n, c.device_names.len());
        c.read_reqs_per_sec = r;
        c.write_reqs_per_sec = w;
    }
    let set = |dst: &mut u32, v: Option<u32>| {
        if let Some(v) = v {
            *dst = v;
        }
    };
    set(&mut c.read_reqs_per_sec, s.read_reqs_per_sec);
    set(&mut c.write_reqs_per_sec, s.write_reqs_per_sec);
    set(&mut c.record_bytes, s.record_bytes);
    set(&mut c.record_bytes_range_max, s.record_bytes_range_max);
    if let Some(kb) = s.large_block_op_kbytes {
        c.large_block_op_bytes = kb
            .checked_mul(1024)
            .context("--large-block-op-kbytes: too large")?;
    }
    set(&mut c.replication_factor, s.replication_factor);
    set(&mut c.update_pct, s.update_pct);
    set(&mut c.defrag_lwm_pct, s.defrag_lwm_pct);
    set(&mut c.compress_pct, s.compress_pct);
    set(&mut c.tomb_raider_sleep_usec, s.tomb_raider_sleep_usec);
    c.microsecond_histograms |= s.microsecond_histograms;
    c.no_defrag_reads |= s.no_defrag_reads;
    c.disable_odsync |= s.disable_odsync;
    c.commit_to_device |= s.commit_to_device;
    c.tomb_raider |= s.tomb_raider;
    if let Some(d) = &s.duration {
        c.test_duration_sec = parse_duration_secs(d).with_context(|| "--duration")?;
    }
    if let Some(d) = &s.report_interval {
        c.report_interval_sec = parse_duration_secs(d).with_context(|| "--report-interval")?;
    }
    if let Some(d) = &s.max_lag {
        c.max_lag_sec = if d.trim() == "0" {
            0
        } else {
            parse_duration_secs(d).with_context(|| "--max-lag")?
        };
    }
    if let Some(m) = s.file_size_mbytes {
        c.file_size_bytes = (m as u64) << 20;
    }
    let Err(e) = c.finish(&origin) else {
        return Ok(c);
    };
    // A check that names a key a flag set (every key, without a config
    // file) is the flags' to answer for, not the file's: name the flags,
    // and the file's keys as the file's.
    let flagged = set_by_flags(s);
    // Without a config file, the key a check is about is named by the flag
    // that sets it ("--device: no devices named"), unless a flag given
    // for another key it names is what broke it.
    let words: Vec<&str> = e.reason.split(' ').map(config_word).collect();
    let others_given = words.iter().any(|&k| k != e.key && flagged.contains(&k));
    let by_flag =
        |k: &str| flagged.contains(&k) || (config.is_none() && k == e.key && !others_given);
    let named = std::iter::once(e.key.as_str()).chain(words.iter().copied());
    if config.is_none()
        || named
            .into_iter()
            .any(|k| flag_for(k).is_some() && by_flag(k))
    {
        // A key no flag set is the file's, or without one ACT's default.
        let other = |k: &str| match config {
            Some(_) => format!("{origin}'s {k}"),
            None => format!("the default {k}"),
        };
        return Err(anyhow::anyhow!(
            "{}",
            in_flags(&e.key, &e.reason, &by_flag, &other)
        ));
    }
    Err(e.into())
}

/// A word of a reason as a config key would be written in it.
fn config_word(w: &str) -> &str {
    w.trim_start_matches('(')
        .trim_end_matches([',', ';', ':', '.', ')'])
}

/// The config keys the flags set, over the config file's.
fn set_by_flags(s: &StorageSettings) -> Vec<&'static str> {
    let load = s.load.is_some();
    [
        ("device-names", !s.device.is_empty()),
        // Not a config key: that --load set the rates.
        ("load", load),
        ("read-reqs-per-sec", load || s.read_reqs_per_sec.is_some()),
        ("write-reqs-per-sec", load || s.write_reqs_per_sec.is_some()),
        ("record-bytes", s.record_bytes.is_some()),
        ("record-bytes-range-max", s.record_bytes_range_max.is_some()),
        ("large-block-op-kbytes", s.large_block_op_kbytes.is_some()),
        ("replication-factor", s.replication_factor.is_some()),
        ("update-pct", s.update_pct.is_some()),
        ("defrag-lwm-pct", s.defrag_lwm_pct.is_some()),
        ("no-defrag-reads", s.no_defrag_reads),
        ("compress-pct", s.compress_pct.is_some()),
        ("disable-odsync", s.disable_odsync),
        ("commit-to-device", s.commit_to_device),
        ("tomb-raider", s.tomb_raider),
        ("tomb-raider-sleep-usec", s.tomb_raider_sleep_usec.is_some()),
        ("microsecond-histograms", s.microsecond_histograms),
        ("test-duration-sec", s.duration.is_some()),
        ("report-interval-sec", s.report_interval.is_some()),
        ("max-lag-sec", s.max_lag.is_some()),
        ("file-size-mbytes", s.file_size_mbytes.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect()
}

/// A config check's error as the flags that set the keys it names; a key
/// `by_flag` says a flag did not set is named by `file`.
fn in_flags(
    key: &str,
    reason: &str,
    by_flag: &dyn Fn(&str) -> bool,
    file: &dyn Fn(&str) -> String,
) -> String {
    if key == "read-reqs-per-sec" && reason.ends_with("can't both be zero") {
        if by_flag("load") {
            return "--load: no reads or writes at that load (each rounds to 0 per second)".into();
        }
        return "no load: give --load Nx (or --read-reqs-per-sec and --write-reqs-per-sec)".into();
    }
    let name = |k: &str| match flag_for(k) {
        Some(f) if by_flag(k) => f.to_string(),
        Some(_) => file(k),
        None => k.to_string(),
    };
    let reason: Vec<String> = reason
        .split(' ')
        .map(|w| {
            let word = config_word(w);
            match flag_for(word) {
                Some(_) => w.replacen(word, &name(word), 1),
                None => w.to_string(),
            }
        })
        .collect();
    format!("{}: {}", name(key), reason.join(" "))
}

/// The flag that sets an ACT config key (the service threads follow from
/// the load: no flag sets them).
fn flag_for(key: &str) -> Option<&'static str> {
    Some(match key {
        "device-names" => "--device",
        "test-duration-sec" => "--duration",
        "report-interval-sec" => "--report-interval",
        "max-lag-sec" => "--max-lag",
        "service-threads" => "--load",
        "read-reqs-per-sec" => "--read-reqs-per-sec",
        "write-reqs-per-sec" => "--write-reqs-per-sec",
        "record-bytes" => "--record-bytes",
        "record-bytes-range-max" => "--record-bytes-range-max",
        "large-block-op-kbytes" => "--large-block-op-kbytes",
        "replication-factor" => "--replication-factor",
        "update-pct" => "--update-pct",
        "defrag-lwm-pct" => "--defrag-lwm-pct",
        "no-defrag-reads" => "--no-defrag-reads",
        "compress-pct" => "--compress-pct",
        "disable-odsync" => "--disable-odsync",
        "commit-to-device" => "--commit-to-device",
        "tomb-raider" => "--tomb-raider",
        "tomb-raider-sleep-usec" => "--tomb-raider-sleep-usec",
        "microsecond-histograms" => "--microsecond-histograms",
        "file-size-mbytes" => "--file-size-mbytes",
        _ => return None,
    })
}

fn run_options(r: &ActRunArgs) -> Result<RunOptions, &'static str> {
    Ok(RunOptions {
        engine: r.engine.kind(),
        null_latency: r.engine.null_model()?,
        max_errors: r.max_errors,
        io_timeout: Duration::from_secs(r.io_timeout),
        run_to_end: r.run_to_end,
        threads: r.threads.map(usize::from),
        ..RunOptions::default()
    })
}

/// Runs a workload with the log, timeline and progress wired up (the same
/// `act::run_to_files` as `storcert run`), then reports the result.
fn execute(cmd: &str, r: &ActRunArgs, w: &dyn act::Workload, opts: &RunOptions) -> ExitCode {
    let files = act::Files {
        log: r.log.clone(),
        timeline: r.timeline.clone(),
        json: r.json.clone(),
        label: None,
    };
    let stop = stop_flag();
    let console = Console::for_command();
    let total = w.duration_secs();
    let mut progress = |secs: u64, rate: f64, over: f64| {
        console.update(
            cmd,
            secs,
            total,
            "s",
            format!("reads {rate:.0}/s, {over:.2}% > 1 ms"),
        );
    };
    let ran = act::run_to_files(w, opts, &stop, &files, &mut progress);
    console.end(cmd);
    console.close();
    let ran = match ran {
        Ok(r) => r,
        Err(e) => return fail(cmd, format!("{e:#}")),
    };
    let result = ran.result;
    eprint!("{}", summary(&result));
    let passed = match &ran.analysis {
        Ok(a) => {
            print!("{}", verdict_text(a));
            // A drive that fails on its own share fails the run, as in
            // `storcert run`, whatever the drives' sum says.
            a.analysis.verdict.pass && a.per_device.iter().all(|d| d.verdict.pass)
        }
        // Stopped before ACT wrote its first report: the log holds its
        // configuration and nothing to judge.
        Err(_) if result.outcome == Outcome::Interrupted => {
            eprintln!(
                "storcert act {cmd}: no verdict: interrupted before the log's first report \
                 (one is written every report-interval-sec)"
            );
            true
        }
        Err(e) => {
            eprintln!("storcert act {cmd}: no verdict: {e}");
            true
        }
    };
    ExitCode::from(match result.outcome {
        Outcome::Completed if passed => exit::PASS,
        Outcome::Interrupted => exit::INTERRUPTED,
        _ => exit::FAIL,
    })
}

/// ACT's verdict on the run's log (as `act analyze` prints it), and each
/// drive's own where the run had several.
fn verdict_text(a: &storcert_results::act::LogAnalysis) -> String {
    let mut s = a.analysis.verdict_text();
    for d in &a.per_device {
        let v = &d.verdict;
        let why = storcert_results::act::verdict_reasons(v);
        let word = if v.pass { "PASS" } else { "FAIL" };
        s.push_str(&format!(
            "  {}: {word}{}{why}\n",
            crate::util::text::printable(&d.device, 200),
            if why.is_empty() { "" } else { ": " }
        ));
    }
    s
}

fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let outcome = match &r.outcome {
        Outcome::Completed => "completed".to_string(),
        Outcome::CouldNotKeepUp { stream } => format!("STOPPED: {stream} could not keep up"),
        Outcome::DeviceErrors { errors } => format!("STOPPED: {errors} device errors"),
        Outcome::StuckIo { device, seconds } => {
            format!("STOPPED: an I/O on {device} stuck for {seconds} s")
        }
        Outcome::Interrupted => "interrupted (the log holds every whole report)".to_string(),
        // (A pass by statistics is a search trial's alone.)
        Outcome::Decided { seconds, reason } | Outcome::PassingByStatistics { seconds, reason } => {
            format!("STOPPED once decided at {seconds} s ({reason}; --run-to-end runs on)")
        }
    };
    s.push_str(&format!(
        "run {outcome} after {:.1} s on {}; max lag behind schedule {:.3} ms\n",
        r.elapsed_s, r.engine, r.max_lag_ms
    ));
    let mut agg: Vec<(String, f64, f64)> = Vec::new();
    for st in &r.streams {
        match agg.iter_mut().find(|a| a.0 == st.label) {
            Some(a) => {
                a.1 += st.asked_per_sec;
                a.2 += st.achieved_per_sec;
            }
            None => agg.push((st.label.clone(), st.asked_per_sec, st.achieved_per_sec)),
        }
    }
    for (label, asked, got) in agg {
        if asked > 0.0 {
            s.push_str(&format!(
                "  {label}: asked {asked:.2}/s, achieved {got:.2}/s\n"
            ));
        }
    }
    for e in r.device_errors() {
        s.push_str(&format!("  {e}\n"));
    }
    if let Some(p) = r.read_spikes.period_s {
        s.push_str(&format!(
            "  read latency spikes recur every {p} s ({} spike seconds)\n",
            r.read_spikes.seconds.len()
        ));
    }
    s
}

fn storage(a: ActStorageArgs) -> ExitCode {
    match storage_config(a.config.as_deref(), &a.settings) {
        Ok(cfg) => workload(
            "storage",
            "run ACT's storage workload (random writes)",
            &cfg,
            &a.run,
        ),
        Err(e) => fail("storage", format!("{e:#}")),
    }
}

fn index(a: ActIndexArgs) -> ExitCode {
    match IndexConfig::from_file(&a.config) {
        Ok(mut cfg) => {
            cfg.device_names = super::on_provisioned("act", &cfg.device_names);
            workload(
                "index",
                "run ACT's index workload (random 4 KiB writes)",
                &cfg,
                &a.run,
            )
        }
        Err(e) => fail("index", e),
    }
}

/// Gate, plan, then run a workload with its outputs wired up.
fn workload(cmd: &str, action: &str, w: &dyn act::Workload, run: &ActRunArgs) -> ExitCode {
    let mut opts = match run_options(run) {
        Ok(o) => o,
        Err(e) => return fail(cmd, e),
    };
    let targets: Vec<PathBuf> = w.device_names().iter().map(PathBuf::from).collect();
    match gate(&format!("act {cmd}"), action, &targets, &run.safety) {
        Ok(cleared) => opts.cleared = cleared,
        Err(code) => return code,
    }
    execute(cmd, run, w, &opts)
}

fn prep(a: ActPrepArgs) -> ExitCode {
    if a.engine == crate::cli::EngineChoice::Null {
        return fail(
            "prep",
            "--engine null writes nothing, so it cannot zero or salt a drive",
        );
    }
    let cleared = match gate(
        "act prep",
        "zero and then salt (ACT prep)",
        &a.devices,
        &a.safety,
    ) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let stop = stop_flag();
    let console = Console::for_command();
    let mut results = Vec::new();
    let mut interrupted = false;
    for target in &cleared {
        let mut dev = match act::device::Device::open(target, false, 0) {
            Ok(d) => d,
            Err(e) => return fail("prep", format!("{e:#}")),
        };
        let mut engine = match crate::engine::open(a.engine.into(), 64) {
            Ok(e) => e,
            Err(e) => return fail("prep", format!("open the I/O engine: {e}")),
        };
        match act::prep::prep(&mut dev, engine.as_mut(), &stop, &console) {
            Ok(r) => {
                interrupted |= r.interrupted;
                results.push(r);
            }
            Err(e) => return fail("prep", format!("{e:#}")),
        }
        if interrupted {
            break;
        }
    }
    console.close();
    if let Some(path) = &a.json {
        let prep = Prep {
            schema_version: PREP_SCHEMA,
            devices: results,
        };
        if let Err(e) = write_durably(path, Artefact::from(prep).to_json()) {
            return fail("prep", format!("--json {}: {e}", path.display()));
        }
    }
    if interrupted {
        eprintln!("prep interrupted: the devices are only partly prepared");
        return ExitCode::from(exit::INTERRUPTED);
    }
    ExitCode::SUCCESS
}

fn analyze_cmd(a: ActAnalyzeArgs) -> ExitCode {
    if let (Some(l), Some(f)) = (&a.log, &a.log_file) {
        if l != f {
            return fail(
                "analyze",
                format!(
                    "two logs given ({} and -l {}): analyze one at a time",
                    f.display(),
                    l.display()
                ),
            );
        }
    }
    let Some(log) = a.log.clone().or(a.log_file.clone()) else {
        return fail(
            "analyze",
            "no log given (storcert act analyze LOG, or -l LOG)",
        );
    };
    // The echo line repeats the arguments as act_latency.py would see them.
    let argv: Vec<String> = std::env::args()
        .skip_while(|x| x != "analyze")
        .skip(1)
        .collect();
    let echo = argv.join(" ");
    let text = match std::fs::read(&log) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return fail("analyze", format!("{}: {e}", log.display())),
    };
    let opts = analyze::Options {
        log: log.display().to_string(),
        histograms: a.histogram,
        slice: a.slice.unwrap_or(3600),
        whole_run_if_short: a.slice.is_none(),
        start_bucket: a.start_bucket,
        num_buckets: a.num_buckets,
        every_nth: a.every_nth,
        extra: a.extra,
    };
    let result = match analyze::analyze(&text, &opts, &echo) {
        Ok(r) => r,
        Err(e) => return fail("analyze", format!("{}: {e}", log.display())),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        );
    } else {
        print!("{}{}", result.text, result.verdict_text());
    }
    ExitCode::from(if result.verdict.pass {
        exit::PASS
    } else {
        exit::FAIL
    })
}

fn search_cmd(a: ActSearchArgs) -> ExitCode {
    let mut settings = a.settings.clone();
    // Trials set their own rates and duration; a placeholder keeps the
    // base configuration valid.
    settings.load = Some("1x".into());
    settings.duration = Some("1s".into());
    let base = match storage_config(a.config.as_deref(), &settings) {
        Ok(c) => c,
        Err(e) => return fail("search", format!("{e:#}")),
    };
    let max = match parse_load(&a.max) {
        Ok(m) => m,
        Err(e) => return fail("search", format!("--max: {e}")),
    };
    let step = match parse_load(&a.step) {
        Ok(s) => s,
        Err(e) => return fail("search", format!("--step: {e}")),
    };
    if let Err(e) = search::check_loads(max, step) {
        return fail("search", format!("--max {} --step {}: {e}", a.max, a.step));
    }
    let trial = match parse_duration_secs(&a.trial) {
        Ok(t) => t,
        Err(e) => return fail("search", format!("--trial: {e}")),
    };
    let confirm = match a.confirm.as_deref().map(parse_duration_secs).transpose() {
        Ok(c) => c.unwrap_or(trial * 6),
        Err(e) => return fail("search", format!("--confirm: {e}")),
    };
    let null_latency = match a.engine.null_model() {
        Ok(m) => m,
        Err(e) => return fail("search", e),
    };
    if a.parallel {
        let null = a.engine.kind() == crate::engine::EngineKind::Null;
        if let Err(e) =
            super::alike::check(&base.device_names, act::Workload::file_size(&base), null)
        {
            return fail("search", format!("--parallel: {e}"));
        }
    }
    let targets: Vec<PathBuf> = base.device_names.iter().map(PathBuf::from).collect();
    let cleared = match gate(
        "act search",
        "run ACT trials (random writes)",
        &targets,
        &a.safety,
    ) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let stop = stop_flag();
    let spec = search::SearchSpec {
        base,
        plan: search::Plan {
            max_load: max,
            step,
            trial_secs: trial,
            confirm_secs: confirm,
        },
        parallel: a.parallel,
        statistical: a.statistical.then_some(act::statistics::ALPHA),
        out_dir: a.out.clone(),
        label_dir: String::new(),
    };
    let opts = RunOptions {
        engine: a.engine.kind(),
        null_latency,
        run_to_end: a.run_to_end,
        threads: a.threads.map(usize::from),
        cleared,
        ..RunOptions::default()
    };
    let console = Console::for_command();
    let result = search::search(&spec, &opts, &stop, &console).map(|s| s.result);
    console.close();
    let result = match result {
        Ok(r) => r,
        Err(e) => return fail("search", format!("{e:#}")),
    };
    print!("{}", search::table(&result));
    if let Some(path) = &a.json {
        if let Err(e) = write_durably(path, Artefact::from(result.clone()).to_json()) {
            return fail("search", format!("--json {}: {e}", path.display()));
        }
    }
    if result.interrupted {
        return ExitCode::from(exit::INTERRUPTED);
    }
    ExitCode::from(if result.highest_passing_load.is_some() {
        exit::PASS
    } else {
        exit::FAIL
    })
}
