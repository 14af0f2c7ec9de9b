//! The kernel command line's storcert.* keys, applied to a built-in profile.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::run::source::{resolve, Cmdline};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = Cmdline::parse(&text) {
        // Only built-in or absent profiles: a URL would reach the network.
        if c.profile.as_deref().is_none_or(|p| storcert::run::profile::Profile::built_in(p).is_some()) {
            let _ = resolve(None, &c, None);
        }
    }
});
