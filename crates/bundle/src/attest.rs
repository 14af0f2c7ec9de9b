//! The in-toto Statement v1 about a bundle, in a DSSE envelope signed with
//! the same Ed25519 key as the `.minisig`.
//!
//! Subjects: the bundle (its SHA-256) and the identities it speaks of, the
//! machine's DMI serial and each drive's serial/WWN, each named
//! `machine:dmi-serial:X` / `drive:serial:X` / `drive:wwn:X` with the
//! SHA-256 of that name as its digest, so a policy engine can ask "which
//! attestations cover drive X". Predicate: in-toto's test-result v0.1
//! (`result`, `passedTests`, `failedTests`, ...) with storcert's summary in
//! an extra `storcert` field.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::minisign::{key_id_hex, PublicKey, SecretKey};
use storcert_results::summary::Summary;
use storcert_results::Verdict;

pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://in-toto.io/attestation/test-result/v0.1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    pub keyid: String,
    pub sig: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    pub digest: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    /// "PASSED", "FAILED" or "WARNED" (nothing judged: incomplete).
    pub result: String,
    pub configuration: Vec<Subject>,
    #[serde(rename = "passedTests")]
    pub passed_tests: Vec<String>,
    #[serde(rename = "warnedTests")]
    pub warned_tests: Vec<String>,
    #[serde(rename = "failedTests")]
    pub failed_tests: Vec<String>,
    pub storcert: StorcertPredicate,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StorcertPredicate {
    pub signed_at: String,
    pub storcert_version: String,
    pub summary: Summary,
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn subject(name: String, sha256: String) -> Subject {
    Subject {
        name,
        digest: [("sha256".to_string(), sha256)].into(),
    }
}

fn identity(name: String) -> Subject {
    let digest = sha256_hex(name.as_bytes());
    subject(name, digest)
}

/// DSSE's pre-authentication encoding: what the signature covers.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A summary's tests as a statement lists them: passed, failed, and
/// warned for a test that measured nothing (neither passed nor failed: a
/// signed statement never calls an untested stage failed).
#[derive(Debug, PartialEq)]
pub struct TestLists {
    pub passed: Vec<String>,
    pub warned: Vec<String>,
    pub failed: Vec<String>,
}

impl TestLists {
    pub fn of(summary: &Summary) -> TestLists {
        let mut lists = TestLists {
            passed: Vec::new(),
            warned: Vec::new(),
            failed: Vec::new(),
        };
        for t in &summary.tests {
            let list = match t.verdict {
                Verdict::Pass => &mut lists.passed,
                Verdict::Untested => &mut lists.warned,
                _ => &mut lists.failed,
            };
            list.push(t.name.clone());
        }
        lists
    }

    /// How statements signed before warned tests existed listed them:
    /// every test that did not pass as failed. Such a bundle still
    /// verifies.
    pub fn before_warned(summary: &Summary) -> TestLists {
        let names = |pass: bool| {
            summary
                .tests
                .iter()
                .filter(|t| (t.verdict == Verdict::Pass) == pass)
                .map(|t| t.name.clone())
                .collect()
        };
        TestLists {
            passed: names(true),
            warned: Vec::new(),
            failed: names(false),
        }
    }

    pub fn signed(statement: &Statement) -> TestLists {
        TestLists {
            passed: statement.predicate.passed_tests.clone(),
            warned: statement.predicate.warned_tests.clone(),
            failed: statement.predicate.failed_tests.clone(),
        }
    }
}

pub fn statement(
    bundle_name: &str,
    bundle_sha256: &str,
    summary: &Summary,
    signed_at: &str,
) -> Statement {
    let mut subjects = vec![subject(bundle_name.to_string(), bundle_sha256.to_string())];
    if let Some(serial) = summary.machine.serial.as_deref().filter(|s| !s.is_empty()) {
        subjects.push(identity(format!("machine:dmi-serial:{serial}")));
    }
    for d in &summary.drives {
        if let Some(s) = d.serial.as_deref().filter(|s| !s.is_empty()) {
            subjects.push(identity(format!("drive:serial:{s}")));
        }
        if let Some(w) = d.wwn.as_deref().filter(|s| !s.is_empty()) {
            subjects.push(identity(format!("drive:wwn:{w}")));
        }
    }
    let lists = TestLists::of(summary);
    let result = match summary.verdict {
        Verdict::Pass => "PASSED",
        Verdict::Fail => "FAILED",
        _ => "WARNED",
    };
    Statement {
        statement_type: STATEMENT_TYPE.into(),
        subject: subjects,
        predicate_type: PREDICATE_TYPE.into(),
        predicate: Predicate {
            result: result.into(),
            configuration: summary
                .configuration
                .iter()
                .map(|(name, sha)| subject(name.clone(), sha.clone()))
                .collect(),
            passed_tests: lists.passed,
            warned_tests: lists.warned,
            failed_tests: lists.failed,
            storcert: StorcertPredicate {
                signed_at: signed_at.to_string(),
                storcert_version: env!("CARGO_PKG_VERSION").to_string(),
                summary: summary.clone(),
            },
        },
    }
}

/// The envelope file's text. Its one canonical form (pretty JSON, one
/// trailing newline) is what `open` requires back.
pub fn seal(statement: &Statement, key: &SecretKey) -> String {
    let payload = serde_json::to_vec(statement).expect("a statement serialises");
    let sig = key.sign_raw(&pae(PAYLOAD_TYPE, &payload));
    let env = Envelope {
        payload: B64.encode(&payload),
        payload_type: PAYLOAD_TYPE.into(),
        signatures: vec![EnvelopeSignature {
            keyid: key_id_hex(&key.key_id),
            sig: B64.encode(sig),
        }],
    };
    serde_json::to_string_pretty(&env).expect("an envelope serialises") + "\n"
}

/// Why `open` refused an envelope. Each message starts "envelope:"; a
/// decoding cause is printed in it, not chained as a `source`, so a `{:#}`
/// chain does not print it twice.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("envelope: not a DSSE envelope: {0}")]
    NotDsse(serde_json::Error),
    #[error("envelope: not in the form storcert writes (edited)")]
    Edited,
    #[error("envelope: payloadType {0:?}")]
    PayloadType(String),
    #[error("envelope: payload is not base64: {0}")]
    PayloadNotBase64(base64::DecodeError),
    #[error("envelope: expected exactly one signature")]
    SignatureCount,
    #[error("envelope: signed by key {signed_by:?}, not {expected}")]
    OtherKey { signed_by: String, expected: String },
    #[error("envelope: signature is not base64: {0}")]
    SignatureNotBase64(base64::DecodeError),
    #[error("envelope: signature has the wrong length")]
    SignatureLength,
    #[error("envelope: signature does not match its statement")]
    SignatureMismatch,
    #[error("envelope: statement: {0}")]
    Statement(serde_json::Error),
    #[error("envelope: not an in-toto v1 test-result statement")]
    NotTestResult,
}

/// Checks the envelope's form and its signature by `key`, and returns the
/// statement.
pub fn open(text: &str, key: &PublicKey) -> Result<Statement, EnvelopeError> {
    let env: Envelope = serde_json::from_str(text).map_err(EnvelopeError::NotDsse)?;
    if serde_json::to_string_pretty(&env)
        .ok()
        .map(|t| t + "\n")
        .as_deref()
        != Some(text)
    {
        return Err(EnvelopeError::Edited);
    }
    if env.payload_type != PAYLOAD_TYPE {
        return Err(EnvelopeError::PayloadType(env.payload_type));
    }
    let payload = B64
        .decode(&env.payload)
        .map_err(EnvelopeError::PayloadNotBase64)?;
    let [sig] = env.signatures.as_slice() else {
        return Err(EnvelopeError::SignatureCount);
    };
    if sig.keyid != key.id_hex() {
        return Err(EnvelopeError::OtherKey {
            signed_by: sig.keyid.clone(),
            expected: key.id_hex(),
        });
    }
    let raw = B64
        .decode(&sig.sig)
        .map_err(EnvelopeError::SignatureNotBase64)?;
    let raw: [u8; 64] = raw.try_into().map_err(|_| EnvelopeError::SignatureLength)?;
    use ed25519_dalek::Verifier;
    key.key
        .verify(
            &pae(&env.payload_type, &payload),
            &ed25519_dalek::Signature::from_bytes(&raw),
        )
        .map_err(|_| EnvelopeError::SignatureMismatch)?;
    // It carries a summary: bounded as a summary is, before it is made.
    let st: Statement =
        storcert_results::summary::bounded_json(&payload, 2 * Summary::MAX_TYPED, "statement")
            .map_err(EnvelopeError::Statement)?;
    if st.statement_type != STATEMENT_TYPE || st.predicate_type != PREDICATE_TYPE {
        return Err(EnvelopeError::NotTestResult);
    }
    Ok(st)
}
