//! The artefacts every stage returns, as types: what a results folder and
//! a bundle hold, and what the summary, the report and the collector read.
//! Nothing here knows how a result is produced.

pub mod act;
pub mod health;
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

/// Every results file storcert writes, tagged with what it is
/// (`"artefact": "act-run"`) beside its own `schema_version`, so a reader
/// knows a file by its tag, never by which keys it happens to have.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "artefact", rename_all = "kebab-case")]
pub enum Artefact {
    ActRun(act::RunResult),
    ActAnalysis(act::LogAnalysis),
    ActSearch(act::SearchResult),
    ActPrep(act::Prep),
    Stream(stream::StreamResult),
    StreamFs(stream::FsResult),
    Policy(policy::Report),
    HealthSnapshot(health::Snapshot),
    HealthDiff(health::Diff),
    Inventory(inventory::Inventory),
    Targets(run::Targets),
    Journal(run::Journal),
    RunNotes(run::RunNotes),
    Provision(provision::ProvisionResult),
    System(system::SystemIdentity),
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
    /// The tag's value ("act-run", "stream", …).
    pub fn kind(&self) -> &'static str {
        match self {
            Artefact::ActRun(_) => "act-run",
            Artefact::ActAnalysis(_) => "act-analysis",
            Artefact::ActSearch(_) => "act-search",
            Artefact::ActPrep(_) => "act-prep",
            Artefact::Stream(_) => "stream",
            Artefact::StreamFs(_) => "stream-fs",
            Artefact::Policy(_) => "policy",
            Artefact::HealthSnapshot(_) => "health-snapshot",
            Artefact::HealthDiff(_) => "health-diff",
            Artefact::Inventory(_) => "inventory",
            Artefact::Targets(_) => "targets",
            Artefact::Journal(_) => "journal",
            Artefact::RunNotes(_) => "run-notes",
            Artefact::Provision(_) => "provision",
            Artefact::System(_) => "system",
        }
    }

    /// Every kind with the schema version this build writes and reads up
    /// to (docs/bundle-format.md lists them).
    pub const SCHEMAS: [(&'static str, u32); 15] = [
        ("act-run", act::RUN_SCHEMA),
        ("act-analysis", act::ANALYSIS_SCHEMA),
        ("act-search", act::SEARCH_SCHEMA),
        ("act-prep", act::PREP_SCHEMA),
        ("stream", stream::SCHEMA_VERSION),
        ("stream-fs", stream::FS_SCHEMA),
        ("policy", policy::SCHEMA_VERSION),
        ("health-snapshot", health::SCHEMA_VERSION),
        ("health-diff", health::SCHEMA_VERSION),
        ("inventory", inventory::SCHEMA_VERSION),
        ("targets", run::TARGETS_SCHEMA),
        ("journal", run::JOURNAL_SCHEMA),
        ("run-notes", run::NOTES_SCHEMA),
        ("provision", provision::SCHEMA_VERSION),
        ("system", system::SCHEMA_VERSION),
    ];

    /// The artefact's own schema version.
    pub fn schema_version(&self) -> u32 {
        match self {
            Artefact::ActRun(x) => x.schema_version,
            Artefact::ActAnalysis(x) => x.schema_version,
            Artefact::ActSearch(x) => x.schema_version,
            Artefact::ActPrep(x) => x.schema_version,
            Artefact::Stream(x) => x.schema_version,
            Artefact::StreamFs(x) => x.schema_version,
            Artefact::Policy(x) => x.schema_version,
            Artefact::HealthSnapshot(x) => x.schema_version,
            Artefact::HealthDiff(x) => x.schema_version,
            Artefact::Inventory(x) => x.schema_version,
            Artefact::Targets(x) => x.schema_version,
            Artefact::Journal(x) => x.schema_version,
            Artefact::RunNotes(x) => x.schema_version,
            Artefact::Provision(x) => x.schema_version,
            Artefact::System(x) => x.schema_version,
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
        // From the bytes, not the value: a key given twice is refused there.
        serde_json::from_slice(data).map_err(ReadError::Invalid)
    }

    /// Pretty JSON with the tag first, newline-terminated.
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = serde_json::to_vec_pretty(self).expect("artefacts serialise");
        s.push(b'\n');
        s
    }
}

macro_rules! artefact_from {
    ($($variant:ident($ty:ty)),* $(,)?) => {$(
        impl From<$ty> for Artefact {
            fn from(x: $ty) -> Artefact {
                Artefact::$variant(x)
            }
        }
    )*};
}

artefact_from!(
    ActRun(act::RunResult),
    ActAnalysis(act::LogAnalysis),
    ActSearch(act::SearchResult),
    ActPrep(act::Prep),
    Stream(stream::StreamResult),
    StreamFs(stream::FsResult),
    Policy(policy::Report),
    HealthDiff(health::Diff),
    Inventory(inventory::Inventory),
    Targets(run::Targets),
    Journal(run::Journal),
    RunNotes(run::RunNotes),
    Provision(provision::ProvisionResult),
    System(system::SystemIdentity),
);

impl From<health::Snapshot> for Artefact {
    fn from(x: health::Snapshot) -> Artefact {
        Artefact::HealthSnapshot(x)
    }
}

/// serde_json writes a NaN (a figure of nothing: a threshold over no
/// samples) as `null`; reading it back gives the NaN again.
pub(crate) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
