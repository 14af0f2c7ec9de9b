//! The command line as a user meets it: help on every level, version,
//! completions, man pages, and plain errors for bad input.

use std::process::Command;

fn storcert(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_storcert"))
        .args(args)
        .output()
        .expect("run storcert")
}

const SUBCOMMANDS: [&str; 11] = [
    "inventory",
    "check",
    "provision",
    "act",
    "stream",
    "bundle",
    "upload",
    "collect",
    "run",
    "completions",
    "man",
];

#[test]
fn help_on_every_level() {
    let top = storcert(&["--help"]);
    assert!(top.status.success());
    let text = String::from_utf8(top.stdout).unwrap();
    for sub in SUBCOMMANDS {
        assert!(text.contains(sub), "--help lacks {sub}");
        let out = storcert(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help failed");
        assert!(String::from_utf8(out.stdout)
            .unwrap()
            .contains("Usage: storcert"));
    }
}

/// The collector's own binary takes `storcert collect`'s flags and its
/// `export`, and names itself.
#[test]
fn the_collector_binary_is_storcert_collect() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_storcert-collect"))
            .args(args)
            .output()
            .unwrap()
    };
    let help = run(&["--help"]);
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    assert!(text.contains("Usage: storcert-collect"), "{text}");
    let same = String::from_utf8(storcert(&["collect", "--help"]).stdout).unwrap();
    for flag in [
        "--trusted-keys",
        "--export-stall",
        "--max-runs",
        "--tls-cert",
        "export",
    ] {
        assert!(text.contains(flag) && same.contains(flag), "{flag}");
    }
    let export = run(&["export", "--help"]);
    assert!(String::from_utf8(export.stdout)
        .unwrap()
        .contains("--format"));
    let version = run(&["--version"]);
    assert_eq!(
        String::from_utf8(version.stdout).unwrap().trim(),
        format!("storcert-collect {}", env!("CARGO_PKG_VERSION"))
    );
    // Bad input is a one-line error, as storcert's.
    let bad = run(&["--max-runs", "many", "--trusted-keys", "k.pub"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8(bad.stderr)
        .unwrap()
        .contains("--max-runs"));
}

#[test]
fn version_is_the_crate_version() {
    let out = storcert(&["--version"]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("storcert {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_and_man_pages_come_from_the_same_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let out = storcert(&["completions", shell]);
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("inventory") && text.contains("no-probe"),
            "{shell}"
        );
    }
    let man = storcert(&["man"]);
    let text = String::from_utf8(man.stdout).unwrap();
    assert!(
        text.starts_with(".ie") || text.contains(".TH storcert"),
        "{}",
        &text[..80]
    );
    let dir = tempfile::tempdir().unwrap();
    let out = storcert(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    assert!(dir.path().join("storcert.1").exists());
    assert!(dir.path().join("storcert-inventory.1").exists());
    // Each page ends with its examples, one a line (unfilled), as --help
    // ends with them.
    let run = std::fs::read_to_string(dir.path().join("storcert-run.1")).unwrap();
    let examples = run
        .split("\n.SH EXAMPLES\n.nf\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{run}"));
    let examples = examples.split("\n.fi\n").next().unwrap();
    assert!(
        examples.contains("  storcert run \\-\\-profile burn\\-in  "),
        "{examples}"
    );
    assert!(!run.contains(".SH EXTRA"), "{run}");
    let help = String::from_utf8(storcert(&["run", "--help"]).stdout).unwrap();
    assert!(
        help.contains("Examples:\n  storcert run                "),
        "{help}"
    );
}

#[test]
fn bad_input_gets_one_clear_line_and_no_panic() {
    let out = storcert(&["inventory", "--no-probe", "--device", "/dev/does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.trim(),
        "storcert inventory: --device /dev/does-not-exist: no such block device"
    );

    // Probing too: no half table, the error once.
    let out = storcert(&["inventory", "--device", "/dev/does-not-exist"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "storcert inventory: --device /dev/does-not-exist: no such block device\n"
    );

    // Flags name themselves, files their path alone: no internal origin
    // ("flags:0: device-names") and no line 0.
    for (args, want) in [
        (
            &[
                "act",
                "storage",
                "--device",
                "x",
                "--duration",
                "2s",
                "--record-bytes",
                "99999999",
            ][..],
            "storcert act storage: --record-bytes: must be 1 to 8388608\n",
        ),
        (
            &["act", "storage", "--duration", "2s"][..],
            "storcert act storage: --device: no devices named\n",
        ),
        (
            &["act", "storage", "-d", "x", "--duration", "2s"][..],
            "storcert act storage: no load: give --load Nx (or --read-reqs-per-sec and --write-reqs-per-sec)\n",
        ),
        (
            &["act", "storage", "-d", "x", "--duration", "2s", "--load", "1x", "--disable-odsync", "--commit-to-device"][..],
            "storcert act storage: --disable-odsync: can't be set together with --commit-to-device\n",
        ),
        (
            &["act", "analyze", "a.log", "-l", "b.log"][..],
            "storcert act analyze: two logs given (a.log and -l b.log): analyze one at a time\n",
        ),
        (
            &["act", "storage", "/nonexistent.conf"][..],
            "storcert act storage: /nonexistent.conf: No such file or directory (os error 2)\n",
        ),
        (
            &["check", "--policy", "/nonexistent.toml"][..],
            "storcert check: /nonexistent.toml: No such file or directory (os error 2)\n",
        ),
    ] {
        let out = storcert(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }

    // With a config file, a flag's bad value is still the flag's; the
    // file's own is the file's.
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("a.conf");
    let text = "device-names: /tmp/x\ntest-duration-sec: 10\nread-reqs-per-sec: 2000\nwrite-reqs-per-sec: 1000\n";
    std::fs::write(&conf, text).unwrap();
    let c = conf.to_str().unwrap();
    let out = storcert(&["act", "storage", c, "--record-bytes", "0"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "storcert act storage: --record-bytes: must be 1 to 8388608\n"
    );
    std::fs::write(&conf, format!("{text}record-bytes: 0\n")).unwrap();
    let out = storcert(&["act", "storage", c, "--load", "1x"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("storcert act storage: {c}: record-bytes: must be 1 to 8388608\n")
    );

    // A check over two keys, one from a flag and one from the file, names
    // the flag as the flag and the file's key as the file's.
    std::fs::write(
        &conf,
        format!("{text}record-bytes-range-max: 2048\ndisable-odsync: yes\n"),
    )
    .unwrap();
    for (flag, want) in [
        (
            &["--record-bytes", "4000"][..],
            "record-bytes-range-max: must be 0, or more than --record-bytes and at most 8388608",
        ),
        (
            &["--commit-to-device"][..],
            "disable-odsync: can't be set together with --commit-to-device",
        ),
    ] {
        let out = storcert(&[&["act", "storage", c][..], flag].concat());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("storcert act storage: {c}'s {want}\n")
        );
    }

    // Without a config file, a key no flag gave is ACT's default, never a
    // flag that was not given.
    for (args, want) in [
        (
            &["-d", "x", "--duration", "2s", "--load", "1x", "--record-bytes", "1000000"][..],
            "the default large-block-op-kbytes: a large block must hold at least one average record (--record-bytes, the default record-bytes-range-max)",
        ),
        (
            &["-d", "x", "--duration", "2s", "--load", "0.0001x"][..],
            "--load: no reads or writes at that load (each rounds to 0 per second)",
        ),
    ] {
        let out = storcert(&[&["act", "storage"][..], args].concat());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("storcert act storage: {want}\n"),
            "{args:?}"
        );
    }

    let out = storcert(&["inventory", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("unexpected argument '--bogus'"));

    let out = storcert(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));

    let out = storcert(&["man", "--out", "/proc/version/not-a-dir"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("storcert man: cannot write to /proc/version/not-a-dir"),
        "{err}"
    );
}

#[test]
fn a_bundle_is_signed_unless_asked_not_to_be() {
    let out = storcert(&["bundle", "create", "dir", "-o", "x.tar.zst"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--key"), "{err}");
}

#[test]
fn inventory_of_this_machine_runs() {
    // Whatever this machine has, the scan completes and the JSON parses.
    let out = storcert(&["inventory", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inv: storcert::inventory::Inventory = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inv.schema_version, storcert::inventory::SCHEMA_VERSION);
}

#[test]
fn act_subcommands_have_help_and_analyze_keeps_dash_h_for_histograms() {
    for sub in ["prep", "storage", "index", "analyze", "search"] {
        let out = storcert(&["act", sub, "--help"]);
        assert!(out.status.success(), "act {sub} --help");
    }
    let out = storcert(&["act", "analyze", "-h", "reads", "/nonexistent.log"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap().trim(),
        "storcert act analyze: /nonexistent.log: No such file or directory (os error 2)"
    );
    let out = storcert(&["act", "storage", "--device", "/tmp/x", "--load", "ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap().trim(),
        "storcert act storage: --load: load \"ten\" is not a positive multiple like 10x"
    );
}

#[test]
fn a_mistyped_device_path_is_an_error_in_every_command() {
    // A name under /dev that does not exist is never created as a file
    // and benchmarked: every writer, dry run included, exits 2 naming it.
    let dev = "/dev/storcert-no-such-nvme9n1";
    let cases: [&[&str]; 8] = [
        &["stream", "-d", dev, "--size", "8M"],
        &["stream", "-d", dev, "--size", "8M", "--dry-run"],
        &["stream", "-d", dev, "--size", "8M", "--pattern", "read"],
        &[
            "act",
            "storage",
            "--device",
            dev,
            "--load",
            "1x",
            "--duration",
            "2s",
        ],
        &[
            "act",
            "storage",
            "--device",
            dev,
            "--load",
            "1x",
            "--duration",
            "2s",
            "--dry-run",
        ],
        &["act", "prep", dev, "--dry-run"],
        &[
            "act", "search", "--device", dev, "--max", "2x", "--trial", "1s",
        ],
        &["provision", "--device", dev, "--spare", "10", "--dry-run"],
    ];
    for args in cases {
        let out = storcert(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(dev), "{args:?}: {err}");
        assert!(!err.contains("WRITE new file"), "{args:?}: {err}");
        assert!(
            !std::path::Path::new(dev).exists(),
            "{args:?} created {dev}"
        );
    }
    for args in [
        &["inventory", "--device", dev][..],
        &["health", "--device", dev, "--snapshot", "/dev/null"][..],
    ] {
        let out = storcert(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
#[ignore = "needs root: runs storcert as another user; scripts/test runs it"]
fn permission_errors_say_that_root_is_needed() {
    // As an unprivileged user, a file only root may read: the refusal
    // says root is needed and for what, not a bare "Permission denied".
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("drive.img");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_storcert"))
        .args(["stream", "-d", file.to_str().unwrap(), "--size", "1M"])
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("storcert needs root to read it to look for filesystem signatures"),
        "{err}"
    );
    // The inventory as a user says what it could not read (it said
    // nothing, and showed unknowns).
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_storcert"))
        .arg("inventory")
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not root: the drives' own identity, write cache and health"),
        "{err}"
    );
}

#[test]
fn usage_names_storcert_whatever_the_file_is_called() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("storcert-x86_64-static");
    std::fs::copy(env!("CARGO_BIN_EXE_storcert"), &copy).unwrap();
    let out = Command::new(&copy)
        .args(["stream", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: storcert stream"), "{help}");
}

#[test]
fn the_install_script_places_completions_and_man_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install"))
        .arg(env!("CARGO_BIN_EXE_storcert"))
        .env("DESTDIR", tmp.path())
        .env("PREFIX", "/usr")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let usr = tmp.path().join("usr");
    for f in [
        "bin/storcert",
        "share/bash-completion/completions/storcert",
        "share/zsh/site-functions/_storcert",
        "share/fish/vendor_completions.d/storcert.fish",
        "share/man/man1/storcert.1",
        "share/man/man1/storcert-run.1",
    ] {
        let meta = std::fs::metadata(usr.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(meta.len() > 100, "{f} is nearly empty");
    }
    let bash =
        std::fs::read_to_string(usr.join("share/bash-completion/completions/storcert")).unwrap();
    assert!(bash.contains("storcert"), "{bash}");
}
