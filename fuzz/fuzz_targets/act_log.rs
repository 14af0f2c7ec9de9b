//! ACT logs read by `storcert act analyze` and the bundle summary.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::act::analyze::{analyze, Options};

fuzz_target!(|data: &[u8]| {
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
});
