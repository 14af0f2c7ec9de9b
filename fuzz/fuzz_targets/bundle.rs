//! The bundle reader and verifier: the archive, its manifest, the
//! minisign signature and the DSSE envelope. A changed input must never
//! verify.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storcert::bundle::{self, minisign::SecretKey, minisign::PublicKey};

struct Seed {
    bytes: Vec<u8>,
    minisig: String,
    envelope: String,
    key: PublicKey,
}

static SEED: std::sync::OnceLock<Seed> = std::sync::OnceLock::new();

fn seed() -> &'static Seed {
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.json"), "{\"a\": 1}").unwrap();
        std::fs::write(dir.path().join("system.json"), "{\"schema_version\":1,\"dmi\":{},\"cpu_count\":1,\"storcert_version\":\"0\"}").unwrap();
        let c = bundle::create(dir.path()).unwrap();
        let key = SecretKey::generate();
        let s = bundle::sign(&c.bytes, "f.tar.zst", &c.summary, &key);
        Seed { bytes: c.bytes, minisig: s.minisig, envelope: s.envelope, key: key.public() }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = seed();
    let Some((&mode, rest)) = data.split_first() else { return };
    let keys = [s.key.clone()];
    match mode % 4 {
        0 => {
            let r = bundle::verify(rest, &s.minisig, &s.envelope, &keys);
            assert!(r.is_err() || rest == s.bytes.as_slice());
        }
        1 => {
            let text = String::from_utf8_lossy(rest);
            let r = bundle::verify(&s.bytes, &text, &s.envelope, &keys);
            assert!(r.is_err() || text == s.minisig);
        }
        2 => {
            let text = String::from_utf8_lossy(rest);
            let r = bundle::verify(&s.bytes, &s.minisig, &text, &keys);
            assert!(r.is_err() || text == s.envelope);
        }
        _ => {
            let _ = bundle::unpack(rest);
            let _ = PublicKey::parse_many(&String::from_utf8_lossy(rest));
            let _ = SecretKey::parse_file(&String::from_utf8_lossy(rest));
        }
    }
});
