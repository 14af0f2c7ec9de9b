//! Every committed fuzz seed (fuzz/seeds/TARGET) and every input a fuzzer
//! once crashed on (fuzz/regressions/TARGET) through the fuzz targets'
//! own entry points, so the ordinary test suite keeps them fixed.

#[test]
fn seeds_and_regressions_replay_cleanly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut replayed = 0;
    for (name, target) in storcert::fuzz::TARGETS {
        let mut inputs = 0;
        for dir in ["seeds", "regressions"] {
            let Ok(rd) = std::fs::read_dir(root.join(dir).join(name)) else {
                continue;
            };
            for f in rd {
                let path = f.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let r = std::panic::catch_unwind(|| target(&data));
                assert!(r.is_ok(), "{name}: {} panics", path.display());
                inputs += 1;
            }
        }
        assert!(inputs > 0, "{name} has no seeds");
        replayed += inputs;
    }
    println!("{replayed} fuzz inputs replayed");
}
