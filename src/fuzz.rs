//! Entry points of the fuzz targets (fuzz/fuzz_targets/*), one per parser
//! that reads outside input. They live here so that the committed seeds
//! and every input a fuzzer once crashed on are replayed by the ordinary
//! test suite (tests/fuzz_inputs.rs) through the very same code.
#![doc(hidden)]

use std::sync::OnceLock;

use crate::act::analyze::{analyze, Options};
use crate::act::config::{IndexConfig, StorageConfig};
use crate::bundle::{self, minisign::PublicKey, minisign::SecretKey};
use crate::passthrough::{ata, cciss, mfi, mpi3, nvme, scsi};

pub fn act_config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = StorageConfig::parse(text, "fuzz") {
            let _ = c.echo();
        }
        if let Ok(c) = IndexConfig::parse(text, "fuzz") {
            let _ = c.echo();
        }
    }
}

pub fn act_log(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for (slice, start_bucket, extra) in [(3600, 0, false), (1, 10, true)] {
        let opts = Options {
            log: "fuzz.log".into(),
            slice,
            start_bucket,
            extra,
            ..Options::default()
        };
        if let Ok(a) = analyze(&text, &opts, "-l fuzz.log") {
            let _ = a.verdict_text();
        }
    }
}

pub fn policy(data: &[u8]) {
    static INVENTORY: OnceLock<crate::inventory::model::Inventory> = OnceLock::new();
    let inv = INVENTORY.get_or_init(|| {
        serde_json::from_str(include_str!("../tests/fixtures/qemu-lab/inventory.json"))
            .expect("the recorded inventory parses")
    });
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(p) = crate::policy::Policy::parse(text, "fuzz.toml") {
            let _ = crate::policy::check::check(&p, inv);
        }
    }
}

pub fn profile(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(p) = crate::run::profile::Profile::parse(text, "fuzz.toml") {
            let _ = p.plan.timed_seconds();
        }
    }
}

pub fn cmdline(data: &[u8]) {
    use crate::run::source::{resolve, Cmdline};
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = Cmdline::parse(&text) {
        // Only built-in or absent profiles: a URL would reach the network.
        let local = c
            .profile
            .as_deref()
            .is_none_or(|p| crate::run::profile::Profile::built_in(p).is_some());
        if local {
            let _ = resolve(None, &c, None, false);
        }
    }
}

struct Seed {
    bytes: Vec<u8>,
    minisig: String,
    envelope: String,
    key: PublicKey,
}

fn seed() -> &'static Seed {
    static SEED: OnceLock<Seed> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("storcert-fuzz-seed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("note.json"), "{\"a\": 1}").expect("write");
        std::fs::write(
            dir.join("system.json"),
            "{\"schema_version\":1,\"dmi\":{},\"cpu_count\":1,\"storcert_version\":\"0\"}",
        )
        .expect("write");
        let c = bundle::create(&dir).expect("a bundle");
        let _ = std::fs::remove_dir_all(&dir);
        let key = SecretKey::generate();
        let s = bundle::sign(&c.bytes, "f.tar.zst", &c.summary, &key);
        Seed {
            bytes: c.bytes,
            minisig: s.minisig,
            envelope: s.envelope,
            key: key.public(),
        }
    })
}

/// The first byte picks what is fuzzed; the other parts are a valid
/// signed bundle's. A changed part must never verify.
pub fn bundle(data: &[u8]) {
    let s = seed();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let keys = [s.key.clone()];
    let limits = bundle::Limits::default();
    let verify = |bytes: &[u8], minisig: &str, envelope: &str| {
        bundle::verify(
            std::io::Cursor::new(bytes),
            "f.tar.zst",
            minisig,
            envelope,
            &keys,
            &limits,
        )
    };
    match mode % 4 {
        0 => {
            let r = verify(rest, &s.minisig, &s.envelope);
            assert!(
                r.is_err() || rest == s.bytes.as_slice(),
                "a changed bundle verified"
            );
        }
        1 => {
            let text = String::from_utf8_lossy(rest);
            let r = verify(&s.bytes, &text, &s.envelope);
            assert!(
                r.is_err() || text == s.minisig,
                "a changed signature verified"
            );
        }
        2 => {
            let text = String::from_utf8_lossy(rest);
            let r = verify(&s.bytes, &s.minisig, &text);
            assert!(
                r.is_err() || text == s.envelope,
                "a changed envelope verified"
            );
        }
        _ => {
            let _ = bundle::unpack_bytes(rest, &limits);
            let _ = PublicKey::parse_many(&String::from_utf8_lossy(rest));
            let _ = SecretKey::parse_file(&String::from_utf8_lossy(rest));
        }
    }
}

/// A request to the collector (its crate holds the entry, as it holds
/// the collector).
#[cfg(feature = "collector")]
pub use crate::collect::fuzz::collect_request;

pub fn scsi(data: &[u8]) {
    let _ = scsi::decode_inquiry(data);
    let _ = scsi::decode_vpd_serial(data);
    let _ = scsi::decode_vpd_device_ids(data);
    let _ = scsi::decode_caching_page(data);
    let _ = scsi::caching_select_params(data, true);
    let _ = scsi::decode_temperature_log(data);
    let _ = scsi::decode_ie_log(data);
    let _ = scsi::decode_capacity16(data);
}

pub fn ata(data: &[u8]) {
    let _ = ata::decode_identify(data);
    let _ = ata::decode_smart_data(data);
    if data.len() >= 2 {
        let _ = ata::decode_smart_status(data[0], data[1]);
    }
}

pub fn nvme(data: &[u8]) {
    let _ = nvme::decode_identify_controller(data);
    let _ = nvme::decode_identify_namespace(data);
    let _ = nvme::decode_smart_log(data);
    let _ = nvme::decode_ocp_smart(data);
}

pub fn mfi(data: &[u8]) {
    let _ = mfi::decode_ctrl_info(data);
    let _ = mfi::decode_ld_list(data);
    let _ = mfi::decode_ld_info(data);
    let _ = mfi::decode_config(data);
    let _ = mfi::decode_pd_list(data);
    let _ = mfi::decode_pd_info(data);
    let _ = mfi::decode_bbu_status(data);
}

/// Smart Array / SmartRAID replies: BMIC identify controller, cache
/// configuration (and its words), identify physical device, and the
/// REPORT LUNS lists.
pub fn cciss(data: &[u8]) {
    let _ = cciss::decode_identify_controller(data);
    let _ = cciss::decode_subsystem_serial(data);
    if let Ok(c) = cciss::decode_cache_config(data) {
        let _ = c.state();
        let _ = c.backup_healthy();
    }
    let _ = cciss::decode_identify_physical(data);
    if let Ok(luns) = cciss::decode_physical_luns(data) {
        for l in luns {
            let _ = (l.bmic_index(), l.passthrough_lun(), l.is_drive());
        }
    }
    let _ = cciss::decode_logical_luns(data);
}

/// MPI3 (mpi3mr) bsg replies: ADPINFO, ALLTGTDEVINFO, and a SCSI IO
/// pass-through's data-in buffer (the first byte picks the data length).
pub fn mpi3(data: &[u8]) {
    let _ = mpi3::decode_adpinfo(data);
    let _ = mpi3::decode_all_targets(data);
    if let Some((&n, rest)) = data.split_first() {
        let _ = mpi3::decode_scsi_io(rest, usize::from(n));
    }
}

/// An inventory capture replayed: the input is capture.json, then a NUL,
/// then the bytes every file it names holds (the archive around them is
/// made here: a fuzzer gets nowhere through zstd and a manifest's
/// digests, which `bundle` covers). The replay runs the whole inventory
/// on what the capture answers, through the same decoders as a machine.
pub fn capture(data: &[u8]) {
    let (json, contents) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let mut entries = vec![(
        crate::inventory::capture::CAPTURE_JSON.to_string(),
        json.to_vec(),
    )];
    let mut named = std::collections::BTreeSet::new();
    for f in value["files"].as_array().into_iter().flatten() {
        if let Some(name) = f["answer"]["contents"].as_str() {
            if bundle::unpack::plain_path(name) && named.insert(name.to_string()) {
                entries.push((name.to_string(), contents.to_vec()));
            }
        }
    }
    let Ok(archive) = bundle::pack(entries) else {
        return;
    };
    if let Ok(replay) = crate::inventory::capture::read_archive(&archive) {
        let inv = crate::inventory::capture::replay(&replay);
        let _ = crate::output::inventory_table::render(&inv);
    }
}

/// A fuzz target's entry point.
pub type Target = fn(&[u8]);

/// Every target by name, for the replay test and scripts (the
/// collector's only on a build with it).
pub const TARGETS: &[(&str, Target)] = &[
    ("capture", capture),
    ("act_config", act_config),
    ("act_log", act_log),
    ("policy", policy),
    ("profile", profile),
    ("cmdline", cmdline),
    ("bundle", bundle),
    #[cfg(feature = "collector")]
    ("collect_request", collect_request),
    ("scsi", scsi),
    ("ata", ata),
    ("nvme", nvme),
    ("mfi", mfi),
    ("cciss", cciss),
    ("mpi3", mpi3),
];
