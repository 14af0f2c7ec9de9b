//! ACT storage and index config files (`storcert act storage|index CONFIG`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::act::config::{IndexConfig, StorageConfig};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = StorageConfig::parse(text, "fuzz") {
            let _ = c.echo();
        }
        if let Ok(c) = IndexConfig::parse(text, "fuzz") {
            let _ = c.echo();
        }
    }
});
