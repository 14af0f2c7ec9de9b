//! Policy TOML (`storcert check --policy`), checked against the lab's
//! recorded inventory when it parses.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::inventory::model::Inventory;
use storcert::policy::Policy;

static INVENTORY: std::sync::OnceLock<Inventory> = std::sync::OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let inv = INVENTORY.get_or_init(|| {
        serde_json::from_str(include_str!("../../tests/fixtures/qemu-lab/inventory.json")).unwrap()
    });
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(p) = Policy::parse(text, "fuzz.toml") {
            let _ = storcert::policy::check::check(&p, inv);
        }
    }
});
