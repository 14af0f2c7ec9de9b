//! ACT configuration: every file of tests/fixtures/act/configs read to the
//! exact echo upstream ACT 6.6 printed for it (keys, defaults, derived
//! rates), and bad input rejected with file, line and key.

use std::path::PathBuf;

use storcert::act::config::{
    parse_duration_secs, parse_load, rates_for_load, IndexConfig, StorageConfig,
};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/act/configs")
}

/// The part of upstream's output that is the configuration echo.
fn upstream_echo(name: &str, first: &str) -> String {
    let text = std::fs::read_to_string(dir().join(format!("{name}.upstream-echo"))).unwrap();
    let start = text.find(first).unwrap();
    let derived = text[start..].find("DERIVED CONFIGURATION").unwrap() + start;
    let end = text[derived..].find("\n\n").unwrap() + derived + 1;
    text[start..end].to_string()
}

#[test]
fn storage_configs_echo_exactly_as_upstream() {
    for name in [
        "1x",
        "10x-two-drives",
        "commit-to-device",
        "no-defrag-reads",
        "odd-rates",
    ] {
        let cfg = StorageConfig::from_file(&dir().join(format!("{name}.conf")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            cfg.echo(),
            upstream_echo(name, "ACT-STORAGE CONFIGURATION"),
            "{name}"
        );
    }
}

#[test]
fn index_config_echoes_exactly_as_upstream() {
    let cfg = IndexConfig::from_file(&dir().join("index-2x.conf")).unwrap();
    assert_eq!(
        cfg.echo(),
        upstream_echo("index-2x", "ACT-INDEX CONFIGURATION")
    );
}

#[test]
fn derived_rates_use_acts_integer_division() {
    // 1x: 131072 / 1536 = 85 records per block (integer), so
    // 1000 / 85 × 2 = 23.53 large-block ops/s, not 1000 × 1536 / 131072 × 2 = 22.95.
    let cfg = StorageConfig::from_file(&dir().join("1x.conf")).unwrap();
    let d = &cfg.derived;
    assert!((d.large_block_reads_per_sec - 23.529_411).abs() < 1e-5);
    assert_eq!(d.large_block_reads_per_sec, d.large_block_writes_per_sec);
    assert_eq!(d.internal_read_reqs_per_sec, 2000);
    assert_eq!(d.internal_write_reqs_per_sec, 0);
    // Defaults.
    assert_eq!(cfg.report_interval_sec, 1);
    assert_eq!(cfg.record_bytes, 1536);
    assert_eq!(cfg.large_block_op_bytes, 131072);
    assert_eq!(cfg.defrag_lwm_pct, 50);
    assert_eq!(cfg.compress_pct, 100);
    assert_eq!(cfg.max_lag_sec, 10);
    assert!(!cfg.microsecond_histograms && !cfg.commit_to_device);
}

#[test]
fn bad_configs_name_file_line_and_key() {
    let cases = [
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 2000\nbogus-key: 1\n", "t.conf:4: bogus-key: unknown config item \"bogus-key\""),
        ("device-names: /dev/x\ntest-duration-sec: ten\n", "t.conf:2: test-duration-sec: \"ten\" is not an unsigned integer"),
        ("device-names: /dev/x\ntest-duration-sec: 99999999999\n", "t.conf:2: test-duration-sec: 99999999999 overflows unsigned int"),
        ("device-names: /dev/x\ntest-duration-sec:\n", "t.conf:2: test-duration-sec: missing integer value"),
        ("device-names: /dev/x\nmicrosecond-histograms: maybe\n", "t.conf:2: microsecond-histograms: \"maybe\" is neither yes nor no"),
        ("test-duration-sec: 10\nread-reqs-per-sec: 1\n", "t.conf: device-names: no devices named"),
        ("device-names: /dev/x\nread-reqs-per-sec: 1\n", "t.conf: test-duration-sec: must be non-zero"),
        ("device-names: /dev/x\ntest-duration-sec: 10\n", "t.conf: read-reqs-per-sec: read-reqs-per-sec and write-reqs-per-sec can't both be zero"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\nlarge-block-op-kbytes: 100\n", "t.conf: large-block-op-kbytes: must be a power of 2, at most 8192"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\ndefrag-lwm-pct: 100\n", "t.conf: defrag-lwm-pct: must be less than 100"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\ncompress-pct: 101\n", "t.conf: compress-pct: must be 0 to 100"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\nupdate-pct: 101\n", "t.conf: update-pct: must be 0 to 100"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\nrecord-bytes: 2000\nrecord-bytes-range-max: 1000\n", "t.conf: record-bytes-range-max: must be 0, or more than record-bytes and at most 8388608"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 1\ndisable-odsync: yes\ncommit-to-device: yes\n", "t.conf: disable-odsync: can't be set together with commit-to-device"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nread-reqs-per-sec: 5\nservice-threads: 10\n", "t.conf: service-threads: load config too small for the service threads (read-reqs-per-sec, write-reqs-per-sec)"),
        ("device-names: /dev/x\ntest-duration-sec: 10\nwrite-reqs-per-sec: 100\nrecord-bytes: 262144\n", "t.conf: large-block-op-kbytes: a large block must hold at least one average record (record-bytes, record-bytes-range-max)"),
        // An older ACT's config: the error says what replaced the key.
        ("device-names: /dev/x\nnum-queues: 8\n", "t.conf:2: num-queues: \"num-queues\" is an older ACT's config item; ACT 6 has no transaction queues: service-threads replaces them"),
        ("device-names: /dev/x\nread-req-num-512-blocks: 3\n", "t.conf:2: read-req-num-512-blocks: \"read-req-num-512-blocks\" is an older ACT's config item; record-bytes replaces it (record-bytes: 1536)"),
        ("device-names: /dev/x\nlarge-block-ops-per-sec: 24\n", "t.conf:2: large-block-ops-per-sec: \"large-block-ops-per-sec\" is an older ACT's config item; ACT 4 and later derive the large-block rates: give write-reqs-per-sec (1x: 1000 per drive) with record-bytes, large-block-op-kbytes and defrag-lwm-pct"),
        ("device-names: /dev/x\nscheduler-mode: noop\n", "t.conf:2: scheduler-mode: \"scheduler-mode\" is an older ACT's config item; ACT 6.5 dropped it: set /sys/block/DEV/queue/scheduler before the run"),
    ];
    for (text, want) in cases {
        let err = StorageConfig::parse(text, "t.conf")
            .unwrap_err()
            .to_string();
        assert_eq!(err, want, "for config:\n{text}");
    }
    // A truncated file is read as far as it goes and then validated.
    let err = StorageConfig::parse("device-names: /dev/x\ntest-dura", "t.conf").unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.conf:2: test-dura: unknown config item \"test-dura\""
    );
    let err = IndexConfig::parse(
        "device-names: /dev/x\ntest-duration-sec: 1\nread-reqs-per-sec: 100\ncache-threads: 0\n",
        "i.conf",
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "i.conf: cache-threads: must be non-zero");
    let missing =
        StorageConfig::from_file(std::path::Path::new("/nonexistent/act.conf")).unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("/nonexistent/act.conf: No such file"),
        "{missing}"
    );
}

#[test]
fn loads_and_durations() {
    assert_eq!(parse_load("10x").unwrap(), 10.0);
    assert_eq!(parse_load("1.5X").unwrap(), 1.5);
    assert!(parse_load("0x").is_err());
    assert!(parse_load("fast").is_err());
    assert_eq!(rates_for_load(10.0, 1), (20000, 10000));
    assert_eq!(rates_for_load(12.0, 8), (192000, 96000));
    assert_eq!(parse_duration_secs("24h").unwrap(), 86400);
    assert_eq!(parse_duration_secs("10m").unwrap(), 600);
    assert_eq!(parse_duration_secs("45").unwrap(), 45);
    // Zero is said as zero, not as a malformed duration.
    assert_eq!(
        parse_duration_secs("0s").unwrap_err().to_string(),
        "duration \"0s\" runs nothing: give at least 1s"
    );
    assert_eq!(
        parse_duration_secs("9223372036854775808s")
            .unwrap_err()
            .to_string(),
        "duration \"9223372036854775808s\" is too long (at most 10 years)"
    );
    assert_eq!(parse_duration_secs("3660d").unwrap(), 3660 * 86_400);
    assert!(parse_duration_secs("3661d").is_err());
    assert_eq!(
        parse_duration_secs("1y").unwrap_err().to_string(),
        "duration \"1y\" is not like 30s, 10m, 24h"
    );
}
