//! minisign's key and signature files (the format of jedisct1/minisign,
//! which Debian's `minisign` reads), on Ed25519 from ed25519-dalek.
//!
//! One Ed25519 key signs both the `.minisig` and the DSSE envelope, so the
//! raw key is needed here; the `minisign` crate keeps it private, hence
//! this thin layer over the documented file format:
//! public key  = base64("Ed" | key id (8) | public key (32))
//! secret key  = base64("Ed" | kdf "\0\0" | "B2" | salt (32) | opslimit (8)
//!               | memlimit (8) | key id (8) | secret key (64) | checksum (32))
//!               where checksum = BLAKE2b-256("Ed" | key id | secret key)
//! signature   = base64("ED" | key id | Ed25519(BLAKE2b-512(file)))
//! global sig  = Ed25519(signature (64) | trusted comment)
//! Only unencrypted secret keys (`minisign -G -W`) are read: an unattended
//! boot has nobody to type a password.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use blake2::{Blake2b512, Digest};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, KeyError> {
    Err(KeyError(msg.into()))
}

/// The line of a minisign file after its "untrusted comment:" line.
fn payload_line(text: &str, what: &str) -> Result<Vec<u8>, KeyError> {
    let mut lines = text.lines();
    match lines.next() {
        Some(l) if l.starts_with("untrusted comment:") => {}
        _ => {
            return err(format!(
                "{what}: first line is not an \"untrusted comment:\""
            ))
        }
    }
    let Some(line) = lines.next() else {
        return err(format!("{what}: no key or signature line"));
    };
    B64.decode(line.trim_end_matches('\r'))
        .map_err(|e| KeyError(format!("{what}: second line is not base64: {e}")))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub key_id: [u8; 8],
    pub key: VerifyingKey,
}

impl PublicKey {
    /// minisign prints key ids as the little-endian u64 in upper-case hex.
    pub fn id_hex(&self) -> String {
        key_id_hex(&self.key_id)
    }

    /// The one-line form (no comment), as `minisign -P` takes it.
    pub fn to_base64(&self) -> String {
        let mut raw = b"Ed".to_vec();
        raw.extend_from_slice(&self.key_id);
        raw.extend_from_slice(self.key.as_bytes());
        B64.encode(raw)
    }

    pub fn to_file(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.id_hex(),
            self.to_base64()
        )
    }

    pub fn from_base64(line: &str) -> Result<PublicKey, KeyError> {
        let raw = B64
            .decode(line.trim())
            .map_err(|e| KeyError(format!("not base64: {e}")))?;
        Self::from_raw(&raw)
    }

    fn from_raw(raw: &[u8]) -> Result<PublicKey, KeyError> {
        if raw.len() != 42 || &raw[..2] != b"Ed" {
            return err("not an Ed25519 minisign public key (expected 42 bytes starting \"Ed\")");
        }
        let key = VerifyingKey::from_bytes(raw[10..42].try_into().expect("32 bytes"))
            .map_err(|e| KeyError(format!("bad Ed25519 public key: {e}")))?;
        Ok(PublicKey {
            key_id: raw[2..10].try_into().expect("8 bytes"),
            key,
        })
    }

    /// A public key file as `minisign -G` writes it.
    pub fn parse_file(text: &str) -> Result<PublicKey, KeyError> {
        Self::from_raw(&payload_line(text, "public key")?)
    }

    /// Every key in a trusted-keys file: public key files concatenated,
    /// or bare base64 lines; blank lines and `#` comments skipped.
    pub fn parse_many(text: &str) -> Result<Vec<PublicKey>, KeyError> {
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("untrusted comment:") {
                continue;
            }
            let key = Self::from_base64(line)
                .map_err(|e| KeyError(format!("line {}: {}", n + 1, e.0)))?;
            // A signature names its key by id: two keys of one id would
            // let either pass for the other (and a run belongs to an id).
            match keys.iter().find(|k: &&PublicKey| k.key_id == key.key_id) {
                Some(same) if same.key == key.key => continue,
                Some(_) => {
                    return err(format!(
                        "line {}: another key has the id {} already",
                        n + 1,
                        key.id_hex()
                    ))
                }
                None => keys.push(key),
            }
        }
        if keys.is_empty() {
            return err("no public keys");
        }
        Ok(keys)
    }
}

pub fn key_id_hex(id: &[u8; 8]) -> String {
    format!("{:016X}", u64::from_le_bytes(*id))
}

pub struct SecretKey {
    pub key_id: [u8; 8],
    pub key: SigningKey,
}

/// Shows the key id only: a secret never reaches a log.
impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", key_id_hex(&self.key_id))
    }
}

fn checksum(key_id: &[u8; 8], sk: &[u8; 64]) -> [u8; 32] {
    let mut h = blake2::Blake2b::<blake2::digest::consts::U32>::new();
    h.update(b"Ed");
    h.update(key_id);
    h.update(sk);
    h.finalize().into()
}

impl SecretKey {
    pub fn generate() -> SecretKey {
        let seed: [u8; 32] = rand::random();
        SecretKey {
            key_id: rand::random(),
            key: SigningKey::from_bytes(&seed),
        }
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key_id: self.key_id,
            key: self.key.verifying_key(),
        }
    }

    pub fn to_file(&self) -> String {
        let sk = self.key.to_keypair_bytes();
        let mut raw = Vec::with_capacity(158);
        raw.extend_from_slice(b"Ed\0\0B2");
        raw.extend_from_slice(&[0u8; 32 + 8 + 8]); // no kdf: salt and limits unused
        raw.extend_from_slice(&self.key_id);
        raw.extend_from_slice(&sk);
        raw.extend_from_slice(&checksum(&self.key_id, &sk));
        format!(
            "untrusted comment: minisign secret key (unencrypted, storcert)\n{}\n",
            B64.encode(raw)
        )
    }

    pub fn parse_file(text: &str) -> Result<SecretKey, KeyError> {
        let raw = payload_line(text, "secret key")?;
        if raw.len() != 158 || &raw[..2] != b"Ed" || &raw[4..6] != b"B2" {
            return err("secret key: not an Ed25519 minisign secret key");
        }
        if raw[2..4] != [0, 0] {
            return err(
                "secret key: encrypted with a password; storcert runs unattended and needs \
                 an unencrypted key (storcert keygen, or minisign -G -W)",
            );
        }
        let key_id: [u8; 8] = raw[54..62].try_into().expect("8 bytes");
        let sk: [u8; 64] = raw[62..126].try_into().expect("64 bytes");
        // minisign 0.11 leaves the checksum of an unencrypted key zero.
        if raw[126..158] != [0u8; 32] && checksum(&key_id, &sk) != raw[126..158] {
            return err("secret key: checksum mismatch (damaged key file)");
        }
        let key = SigningKey::from_keypair_bytes(&sk)
            .map_err(|e| KeyError(format!("secret key: inconsistent key pair: {e}")))?;
        Ok(SecretKey { key_id, key })
    }

    /// Raw Ed25519 over `message` (DSSE signs its PAE this way).
    pub fn sign_raw(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// A `.minisig` for `data`, hashed (BLAKE2b-512) as minisign 0.10+ does
    /// by default. The untrusted comment is fixed so that the file has one
    /// canonical form and any changed byte is detected.
    pub fn sign_minisig(&self, data: &[u8], trusted_comment: &str) -> String {
        self.sign_minisig_prehashed(&Blake2b512::digest(data).into(), trusted_comment)
    }

    /// `sign_minisig` for data written as a stream: `blake2b512` is its
    /// BLAKE2b-512, which is what the signature signs.
    pub fn sign_minisig_prehashed(&self, blake2b512: &[u8; 64], trusted_comment: &str) -> String {
        let sig = self.key.sign(blake2b512).to_bytes();
        let mut sig_line = b"ED".to_vec();
        sig_line.extend_from_slice(&self.key_id);
        sig_line.extend_from_slice(&sig);
        let mut global = sig.to_vec();
        global.extend_from_slice(trusted_comment.as_bytes());
        let global_sig = self.key.sign(&global).to_bytes();
        format!(
            "{}\n{}\ntrusted comment: {trusted_comment}\n{}\n",
            untrusted_comment(&self.key_id),
            B64.encode(sig_line),
            B64.encode(global_sig)
        )
    }
}

fn untrusted_comment(key_id: &[u8; 8]) -> String {
    format!(
        "untrusted comment: storcert bundle signature, key {}",
        key_id_hex(key_id)
    )
}

/// What a verified `.minisig` says.
#[derive(Debug, Clone)]
pub struct MinisigInfo {
    pub key_id: [u8; 8],
    pub trusted_comment: String,
}

/// Verifies a `.minisig` against `data` with the first key in `keys` whose
/// id matches. Besides minisign's checks it requires the file to be
/// exactly as storcert writes it, so no byte of it can change unnoticed.
pub fn verify_minisig(
    data: &[u8],
    minisig: &str,
    keys: &[PublicKey],
) -> Result<(MinisigInfo, PublicKey), KeyError> {
    verify_minisig_prehashed(&Blake2b512::digest(data).into(), minisig, keys, || {
        Ok(data.to_vec())
    })
}

/// `verify_minisig` for data read as a stream: `blake2b512` is its
/// BLAKE2b-512 (what a prehashed "ED" signature signs); `whole` gives the
/// data itself, asked for only by a legacy "Ed" signature.
pub fn verify_minisig_prehashed(
    blake2b512: &[u8; 64],
    minisig: &str,
    keys: &[PublicKey],
    whole: impl FnOnce() -> Result<Vec<u8>, KeyError>,
) -> Result<(MinisigInfo, PublicKey), KeyError> {
    let p = parse(minisig, keys)?;
    let ok = if p.hashed {
        p.key.key.verify(blake2b512, &p.sig)
    } else {
        p.key.key.verify(&whole()?, &p.sig)
    };
    ok.map_err(|_| KeyError("signature: does not match the bundle".into()))?;
    p.check_trusted()?;
    Ok((
        MinisigInfo {
            key_id: p.key.key_id,
            trusted_comment: p.trusted.to_string(),
        },
        p.key.clone(),
    ))
}

/// The trusted key that made `minisig`, checked as far as it can be
/// without the signed file: its form, a trusted key id, and the trusted
/// comment's own signature (so only that key's holder made these lines).
/// The collector asks this before it reads a body.
pub fn signer(minisig: &str, keys: &[PublicKey]) -> Result<PublicKey, KeyError> {
    let p = parse(minisig, keys)?;
    p.check_trusted()?;
    Ok(p.key.clone())
}

/// `signer`, with the trusted comment: what a heartbeat's head claims
/// (its run and seq), signed by that key, before its body is read.
pub fn signer_and_comment(
    minisig: &str,
    keys: &[PublicKey],
) -> Result<(PublicKey, String), KeyError> {
    let p = parse(minisig, keys)?;
    p.check_trusted()?;
    Ok((p.key.clone(), p.trusted.to_string()))
}

/// A `.minisig` taken apart, its key found among the trusted.
struct Parsed<'a> {
    hashed: bool,
    key: &'a PublicKey,
    sig: Signature,
    trusted: &'a str,
    global: [u8; 64],
}

impl Parsed<'_> {
    /// The global signature over signature and trusted comment.
    fn check_trusted(&self) -> Result<(), KeyError> {
        let mut signed = self.sig.to_bytes().to_vec();
        signed.extend_from_slice(self.trusted.as_bytes());
        self.key
            .key
            .verify(&signed, &Signature::from_bytes(&self.global))
            .map_err(|_| KeyError("signature: trusted comment does not match its signature".into()))
    }
}

fn parse<'a>(minisig: &'a str, keys: &'a [PublicKey]) -> Result<Parsed<'a>, KeyError> {
    let lines: Vec<&str> = minisig.split('\n').collect();
    if lines.len() != 5 || !lines[4].is_empty() {
        return err("signature: not four lines");
    }
    let sig_line = B64
        .decode(lines[1])
        .map_err(|e| KeyError(format!("signature: line 2 is not base64: {e}")))?;
    if sig_line.len() != 74 {
        return err("signature: line 2 has the wrong length");
    }
    let hashed = match &sig_line[..2] {
        b"ED" => true,
        b"Ed" => false,
        _ => return err("signature: unknown algorithm"),
    };
    let key_id: [u8; 8] = sig_line[2..10].try_into().expect("8 bytes");
    let Some(key) = keys.iter().find(|k| k.key_id == key_id) else {
        return err(format!(
            "signature: made by key {}, which is not trusted",
            key_id_hex(&key_id)
        ));
    };
    if lines[0] != untrusted_comment(&key_id) {
        return err("signature: untrusted comment changed");
    }
    let sig = Signature::from_bytes(sig_line[10..74].try_into().expect("64 bytes"));
    let Some(trusted) = lines[2].strip_prefix("trusted comment: ") else {
        return err("signature: line 3 is not a trusted comment");
    };
    let global = B64
        .decode(lines[3])
        .map_err(|e| KeyError(format!("signature: line 4 is not base64: {e}")))?;
    let Ok(global) = <[u8; 64]>::try_from(global.as_slice()) else {
        return err("signature: line 4 has the wrong length");
    };
    Ok(Parsed {
        hashed,
        key,
        sig,
        trusted,
        global,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_keys_of_one_id_are_refused_and_one_key_twice_is_one() {
        let a = SecretKey::generate().public();
        let twice = format!("{}{}", a.to_file(), a.to_file());
        assert_eq!(PublicKey::parse_many(&twice).unwrap().len(), 1);
        // Another key minted with a's id.
        let mut c = SecretKey::generate().public();
        c.key_id = a.key_id;
        let e = PublicKey::parse_many(&format!("{}{}", c.to_file(), a.to_file())).unwrap_err();
        assert!(e.0.contains("has the id"), "{}", e.0);
    }

    #[test]
    fn key_files_round_trip_and_sign() {
        let sk = SecretKey::generate();
        let back = SecretKey::parse_file(&sk.to_file()).unwrap();
        assert_eq!(back.key_id, sk.key_id);
        let pk = PublicKey::parse_file(&sk.public().to_file()).unwrap();
        assert_eq!(pk, sk.public());
        let sig = sk.sign_minisig(b"data", "timestamp:1\tfile:x");
        let (info, _) = verify_minisig(b"data", &sig, std::slice::from_ref(&pk)).unwrap();
        assert_eq!(info.trusted_comment, "timestamp:1\tfile:x");
        assert!(verify_minisig(b"datA", &sig, std::slice::from_ref(&pk)).is_err());
        let other = SecretKey::generate().public();
        let e = verify_minisig(b"data", &sig, &[other]).unwrap_err();
        assert!(e.0.contains("not trusted"), "{e}");
    }

    #[test]
    fn damaged_and_encrypted_keys_are_refused() {
        let sk = SecretKey::generate();
        let text = sk.to_file();
        let mut raw = B64.decode(text.lines().nth(1).unwrap()).unwrap();
        raw[100] ^= 1;
        let bad = format!("untrusted comment: x\n{}\n", B64.encode(&raw));
        assert!(SecretKey::parse_file(&bad)
            .unwrap_err()
            .0
            .contains("checksum"));
        raw[100] ^= 1;
        raw[2..4].copy_from_slice(b"Sc");
        let enc = format!("untrusted comment: x\n{}\n", B64.encode(&raw));
        assert!(SecretKey::parse_file(&enc)
            .unwrap_err()
            .0
            .contains("password"));
        assert!(PublicKey::parse_file("nonsense").is_err());
        assert!(PublicKey::parse_many("# only a comment\n").is_err());
    }
}
