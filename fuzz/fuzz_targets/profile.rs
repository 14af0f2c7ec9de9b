//! `storcert run` profiles.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::run::profile::Profile;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(p) = Profile::parse(text, "fuzz.toml") {
            let _ = p.timed_seconds();
        }
    }
});
