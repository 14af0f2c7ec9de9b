//! The artefacts every stage returns, as types: what a results folder and
//! a bundle hold, and what the summary, the report and the collector read.
//! Nothing here knows how a result is produced.

pub mod act;
pub mod health;
pub mod heartbeat;
pub mod inventory;
pub mod policy;
pub mod provision;
pub mod run;
pub mod stream;
pub mod summary;
pub mod system;
pub mod verdict;

use serde::{Deserialize, Serialize};

pub use self::verdict::Verdict;

/// The name of the key that says what a results file is.
pub const TAG: &str = "artefact";

/// Declares the artefact kinds once: each line is a variant, its tag, its
/// type and the schema version this build writes and reads up to. Adding
/// a kind of result is one line here (and its `judgement`).
macro_rules! artefacts {
    ($($variant:ident($ty:ty) = $tag:literal, $schema:expr;)*) => {
        /// Every results file storcert writes, tagged with what it is
        /// (`"artefact": "act-run"`) beside its own `schema_version`, so a
        /// reader knows a file by its tag, never by which keys it happens
        /// to have.
        // Read by `from_json`, which picks the type by the tag and reads
        // it straight from the bytes: serde's own tagged-enum reading
        // buffers the object first, and that buffer has no u128 (an NVMe
        // drive's bytes written).
        #[derive(Debug, Clone, Serialize)]
        #[serde(tag = "artefact")]
        pub enum Artefact {
            $(#[serde(rename = $tag)] $variant($ty),)*
        }

        impl Artefact {
            /// Every kind with the schema version this build writes and
            /// reads up to (docs/bundle-format.md lists them).
            pub const SCHEMAS: &'static [(&'static str, u32)] = &[$(($tag, $schema),)*];

            /// The tag's value ("act-run", "stream", …).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Artefact::$variant(_) => $tag,)*
                }
            }

            /// The artefact of kind `tag` in `data`; `None` for a kind
            /// this build does not know.
            fn read_kind(tag: &str, data: &[u8]) -> Option<Result<Artefact, serde_json::Error>> {
                match tag {
                    $($tag => Some(serde_json::from_slice::<$ty>(data).map(Artefact::$variant)),)*
                    _ => None,
                }
            }

            /// The artefact's own schema version.
            pub fn schema_version(&self) -> u32 {
                match self {
                    $(Artefact::$variant(x) => x.schema_version,)*
                }
            }
        }

        $(impl From<$ty> for Artefact {
            fn from(x: $ty) -> Artefact {
                Artefact::$variant(x)
            }
        })*
    };
}

artefacts! {
    ActRun(act::RunResult) = "act-run", act::RUN_SCHEMA;
    ActAnalysis(act::LogAnalysis) = "act-analysis", act::ANALYSIS_SCHEMA;
    ActSearch(act::SearchResult) = "act-search", act::SEARCH_SCHEMA;
    ActPrep(act::Prep) = "act-prep", act::PREP_SCHEMA;
    Stream(stream::StreamResult) = "stream", stream::SCHEMA_VERSION;
    StreamFs(stream::FsResult) = "stream-fs", stream::FS_SCHEMA;
    Policy(policy::Report) = "policy", policy::SCHEMA_VERSION;
    HealthSnapshot(health::Snapshot) = "health-snapshot", health::SCHEMA_VERSION;
    HealthDiff(health::Diff) = "health-diff", health::SCHEMA_VERSION;
    Inventory(inventory::Inventory) = "inventory", inventory::SCHEMA_VERSION;
    Targets(run::Targets) = "targets", run::TARGETS_SCHEMA;
    Journal(run::Journal) = "journal", run::JOURNAL_SCHEMA;
    RunNotes(run::RunNotes) = "run-notes", run::NOTES_SCHEMA;
    Provision(provision::ProvisionResult) = "provision", provision::SCHEMA_VERSION;
    System(system::SystemIdentity) = "system", system::SCHEMA_VERSION;
}

/// A results file that could not be read as the artefact its tag names.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error(
        "no \"artefact\" tag: not a storcert results file, or one written before files were tagged"
    )]
    Untagged,
    #[error("{kind} schema {found} is newer than this storcert reads ({known}): update storcert")]
    Newer {
        kind: String,
        found: u32,
        known: u32,
    },
    #[error("{0}")]
    BadHead(String),
    #[error("{0}")]
    Invalid(serde_json::Error),
}

impl Artefact {
    /// The test an artefact is on its own, with the name it is listed
    /// under in a summary ("stream", "health", …); `None` for artefacts
    /// that are not judged alone (a search needs its trials' logs, the
    /// inventory, targets and journal shape the drives, the others are
    /// records).
    pub fn judgement(&self) -> Option<(&'static str, verdict::Judgement)> {
        match self {
            Artefact::ActRun(r) => Some(("act-run", r.judgement())),
            Artefact::Stream(r) => Some(("stream", r.judgement())),
            Artefact::StreamFs(r) => Some(("stream-fs", r.judgement())),
            Artefact::Policy(r) => Some(("policy", r.judgement())),
            Artefact::HealthDiff(r) => Some(("health", r.judgement())),
            _ => None,
        }
    }

    /// Reads a tagged results file. A file of a newer schema than this
    /// build knows is refused rather than half-read.
    pub fn from_json(data: &[u8]) -> Result<Artefact, ReadError> {
        let value: serde_json::Value = serde_json::from_slice(data).map_err(ReadError::NotJson)?;
        // JSON that is no object, or an object without the tag, is not a
        // tagged file; a tag or a version of the wrong type is a broken one.
        let Some(tag) = value.as_object().and_then(|o| o.get(TAG)) else {
            return Err(ReadError::Untagged);
        };
        let Some(kind) = tag.as_str() else {
            return Err(ReadError::BadHead(format!(
                "\"{TAG}\" is {tag}, not a name"
            )));
        };
        let found = match value.get("schema_version") {
            None => 0,
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    ReadError::BadHead(format!("schema_version {v} is not a version"))
                })?,
        };
        if let Some((_, known)) = Self::SCHEMAS.iter().find(|(k, _)| *k == kind) {
            if found > *known {
                return Err(ReadError::Newer {
                    kind: kind.to_string(),
                    found,
                    known: *known,
                });
            }
        }
        // The tag and the version given twice are refused here (the value
        // above kept the last of each); the body's own keys by its type.
        #[derive(Deserialize)]
        struct Once {
            #[serde(rename = "artefact")]
            _tag: serde::de::IgnoredAny,
            #[serde(rename = "schema_version")]
            _version: Option<serde::de::IgnoredAny>,
        }
        serde_json::from_slice::<Once>(data).map_err(ReadError::Invalid)?;
        match Self::read_kind(kind, data) {
            Some(read) => read.map_err(ReadError::Invalid),
            None => Err(ReadError::BadHead(format!(
                "unknown artefact kind {kind:?}"
            ))),
        }
    }

    /// Pretty JSON with the tag first, newline-terminated.
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = serde_json::to_vec_pretty(self).expect("artefacts serialise");
        s.push(b'\n');
        s
    }
}

/// serde_json writes a NaN (a figure of nothing: a threshold over no
/// samples) as `null`; reading it back gives the NaN again.
pub(crate) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
