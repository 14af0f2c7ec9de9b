//! The typed estimate (`results::typed_estimate`) against what reading a
//! file as its type really allocates, counted by this test's own global
//! allocator: for a real machine's inventory, a large SATA JBOD's, and the
//! shapes an attacker would choose (objects of few fields that become
//! large structs, thousands of tiny SMART attributes, structs written as
//! arrays, fields beside a tag). The estimate must never be below what the
//! read took at its peak, or a reader's bound on it would bound nothing;
//! and it must not be so far above a real machine's that a large one is
//! not read whole.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use storcert::bundle::contents::Holding;
use storcert::results::act::RunResult;
use storcert::results::health::Snapshot;
use storcert::results::inventory::Inventory;
use storcert::results::typed_estimate;

/// Bytes allocated now, and the most since the last `reset_peak`.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // Counted as growing in place, as glibc grows a large block
        // (mremap): a list's old and new blocks are not both held.
        let p = System.realloc(ptr, layout, new);
        if !p.is_null() {
            if new >= layout.size() {
                let now = LIVE.fetch_add(new - layout.size(), Relaxed) + new - layout.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new, Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most the read of `data` as `T` held at once, in bytes, beyond what
/// was held before it.
fn peak_of_reading<T: serde::de::DeserializeOwned>(data: &[u8]) -> usize {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let value: T = serde_json::from_slice(data).expect("reads as its type");
    let peak = PEAK.load(Relaxed) - before;
    drop(value);
    peak
}

fn check<T: serde::de::DeserializeOwned>(what: &str, data: &[u8]) -> u64 {
    let estimate = typed_estimate(data).unwrap();
    let peak = peak_of_reading::<T>(data) as u64;
    println!(
        "{what}: {} bytes of JSON, estimate {estimate}, read at peak {peak}",
        data.len()
    );
    assert!(
        peak <= estimate,
        "{what}: the read took {peak} bytes at its peak, the estimate says {estimate}"
    );
    estimate
}

const QEMU_LAB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/qemu-lab/inventory.json"
);

/// The lab's inventory with its SATA disk `n` times over, each with the
/// thirty SMART attributes and seven probes of a real SATA drive.
fn sata_jbod(n: usize) -> (serde_json::Value, serde_json::Value) {
    let mut inv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(QEMU_LAB).unwrap()).unwrap();
    let disks = inv["disks"].as_array_mut().unwrap();
    let mut sata = disks
        .iter()
        .find(|d| d["health"]["ata"].is_object())
        .expect("the lab has a SATA disk")
        .clone();
    let attributes: Vec<serde_json::Value> = (1..=30)
        .map(|id| serde_json::json!({"id": id, "current": 100, "worst": 100, "raw": 123456789}))
        .collect();
    sata["health"]["ata"]["attributes"] = attributes.into();
    let probe = serde_json::json!({"probe": "ata-identify", "outcome": "ok", "detail": "SG_IO ATA PASS-THROUGH(16): 512 bytes"});
    sata["probes"] = vec![probe; 7].into();
    let mut jbod = Vec::new();
    let mut health = Vec::new();
    for i in 0..n {
        let mut d = sata.clone();
        d["name"] = format!("sd{i}").into();
        d["serial"] = format!("S6XXNX0T{i:06}").into();
        health.push(serde_json::json!({
            "name": d["name"], "model": d["model"], "serial": d["serial"], "wwn": d["wwn"],
            "capacity_bytes": d["capacity_bytes"], "health": d["health"],
            "host_bytes_written": 1234567890123u64, "host_bytes_written_source": "ATA attribute 241",
        }));
        jbod.push(d);
    }
    *disks = jbod;
    let snapshot = serde_json::json!({"schema_version": 1, "taken_at": 0, "drives": health});
    (inv, snapshot)
}

#[test]
fn the_estimate_is_never_below_what_a_read_takes_and_reads_real_jbods_whole() {
    // A real machine's inventory (the lab's: NVMe, SATA, MegaRAID).
    check::<Inventory>("the lab's inventory", &std::fs::read(QEMU_LAB).unwrap());

    // A large SATA JBOD's inventory and both health snapshots.
    let (inv, snap) = sata_jbod(1000);
    let inv = serde_json::to_vec(&inv).unwrap();
    let snap = serde_json::to_vec(&snap).unwrap();
    let jbod = check::<Inventory>("1,000 SATA drives' inventory", &inv)
        + 2 * check::<Snapshot>("1,000 SATA drives' health", &snap);
    let bound = Holding::BUNDLE.json_typed;
    println!("1,000 SATA drives: {jbod} of the {bound} a bundle's reader holds");
    assert!(
        jbod * 3 / 2 < bound,
        "a 1,500-drive JBOD's inventory and health ({}) are not read whole ({bound})",
        jbod * 3 / 2
    );

    // What an attacker would write: drives of two fields (each a struct of
    // hundreds of bytes), SMART attributes and probes of nothing, and
    // structs written as arrays, a megabyte of each.
    let n = 1 << 20;
    let drives = vec![r#"{"name":"","capacity_bytes":0}"#; n / 31].join(",");
    check::<Snapshot>(
        "two-field drives",
        format!(r#"{{"schema_version":1,"taken_at":0,"drives":[{drives}]}}"#).as_bytes(),
    );
    let drives =
        vec![r#"["",null,null,null,0,null,null,null,null,null,null,null]"#; n / 52].join(",");
    check::<Snapshot>(
        "drives as arrays",
        format!(r#"{{"schema_version":1,"taken_at":0,"drives":[{drives}]}}"#).as_bytes(),
    );
    // Beside a tag serde reads by copying the object first (the third
    // review's act-run: 12 MB of zeros in its outcome took report to
    // 235 MiB), a field no type has.
    let zeros = vec!["0"; n / 2].join(",");
    check::<RunResult>(
        "an outcome padded with a list",
        format!(
            r#"{{"schema_version":1,"outcome":{{"outcome":"completed","x":[{zeros}]}},"engine":"e","elapsed_s":1.0,"max_lag_ms":0.0,"reports":0,"streams":[],"histograms":[],"devices":[],"read_spikes":{{"seconds":[],"period_s":null,"threshold":0.0}}}}"#
        )
        .as_bytes(),
    );

    // The lab's SATA disk alone, with `count` of `element` as its SMART
    // attributes, probes or errors.
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(QEMU_LAB).unwrap()).unwrap();
    let disk = |field: &str, element: &str, count: usize| {
        let element: serde_json::Value = serde_json::from_str(element).unwrap();
        let mut inv = lab.clone();
        let mut d = inv["disks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["health"]["ata"].is_object())
            .unwrap()
            .clone();
        let list = vec![element; count].into();
        match field {
            "attributes" => d["health"]["ata"]["attributes"] = list,
            _ => d[field] = list,
        }
        inv["disks"] = vec![d].into();
        serde_json::to_vec(&inv).unwrap()
    };
    for (what, field, element) in [
        (
            "SMART attributes of nothing",
            "attributes",
            r#"{"id":0,"current":0,"worst":0,"raw":0}"#,
        ),
        ("SMART attributes as arrays", "attributes", "[0,0,0,0]"),
        (
            "probes of nothing",
            "probes",
            r#"{"probe":"","outcome":""}"#,
        ),
        ("probes as arrays", "probes", r#"["","",null]"#),
        ("errors of one letter", "errors", r#""a""#),
    ] {
        let count = n / (element.len() + 1);
        check::<Inventory>(what, &disk(field, element, count));
    }
}
