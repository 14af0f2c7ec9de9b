//! kernel-config/storcert.config against Debian's linux-source: every
//! symbol must survive `make olddefconfig` (scripts/build-kernel --check),
//! and the check must name what a broken fragment loses. Ignored for a
//! plain `cargo test` (it downloads linux-source); scripts/test runs it.

use std::path::Path;
use std::process::Command;

fn check(fragment: Option<&Path>) -> (bool, String) {
    let mut c = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-kernel"));
    c.arg("--check");
    if let Some(f) = fragment {
        c.arg("--fragment").arg(f);
    }
    let out = c.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
#[ignore = "downloads Debian's linux-source; run through scripts/test"]
fn every_symbol_of_the_fragment_survives_olddefconfig_and_a_lost_one_is_named() {
    let (ok, text) = check(None);
    assert!(ok, "{text}");
    assert!(
        text.contains("symbols of storcert.config survive olddefconfig"),
        "{text}"
    );

    // A fragment asking for what x86 cannot have fails, naming the symbol.
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.config");
    std::fs::write(&bad, "CONFIG_BLK_DEV_NVME=y\nCONFIG_SCSI_ACORNSCSI_3=y\n").unwrap();
    let (ok, text) = check(Some(&bad));
    assert!(!ok, "{text}");
    assert!(
        text.contains("CONFIG_SCSI_ACORNSCSI_3=y did not survive"),
        "{text}"
    );
    assert!(
        !text.contains("CONFIG_BLK_DEV_NVME=y did not survive"),
        "{text}"
    );
}
