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
        // Only the head is read first, skipping the body's values: a whole
        // `serde_json::Value` of a 16 MiB file is some 40 times its size.
        let head: Head = serde_json::from_slice(data).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => ReadError::Invalid(e),
            _ => ReadError::NotJson(e),
        })?;
        // JSON that is no object, or an object without the tag, is not a
        // tagged file; a tag or a version of the wrong type is a broken one.
        let kind = match head.tag {
            HeadField::Missing => return Err(ReadError::Untagged),
            HeadField::Other(what) => {
                return Err(ReadError::BadHead(format!(
                    "\"{TAG}\" is {what}, not a name"
                )))
            }
            HeadField::Found(kind) => kind,
        };
        let found = match head.version {
            HeadField::Missing => 0,
            HeadField::Found(n) => n,
            HeadField::Other(what) => {
                return Err(ReadError::BadHead(format!(
                    "schema_version {what} is not a version"
                )))
            }
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
        match Self::read_kind(&kind, data) {
            Some(read) => read.map_err(ReadError::Invalid),
            // Named, not echoed: a tag could be megabytes, and the reason
            // goes into a signed summary.
            None => Err(ReadError::BadHead(format!(
                "unknown artefact kind {:?}",
                storcert_util::text::printable(&kind, 60)
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

/// The longest string a results file may hold, in bytes.
pub const MAX_STRING: usize = 1 << 20;

/// What the typed values read from a JSON file may take in memory, in
/// bytes, estimated from its shape alone (without keeping anything): an
/// object as the largest results struct it could become, a string as a
/// `String`, a list as a `Vec`, anything else as a word or two. Bounding
/// the bytes of JSON is not enough: 16 MiB of `{"name":"","capacity_bytes":0}`
/// is half a million drives of several hundred bytes each.
///
/// A string longer than `MAX_STRING` is an error of data (`is_data`).
pub fn typed_estimate(data: &[u8]) -> Result<u64, serde_json::Error> {
    let total = std::cell::Cell::new(0u64);
    let mut de = serde_json::Deserializer::from_slice(data);
    serde::de::DeserializeSeed::deserialize(Estimate::root(&total), &mut de)?;
    de.end()?;
    Ok(total.get())
}

/// The estimate's weights, bytes. An object is priced as the largest
/// results struct (a disk, some 1 KB) twice over: a list of them grows by
/// doubling, so holds up to twice what it fills.
const OBJECT_BYTES: u64 = 2048;
const LIST_BYTES: u64 = 32;
const STRING_BYTES: u64 = 32;
/// A string's own place in a list (a `String` is three words), twice over.
const STRING_IN_LIST_BYTES: u64 = 48;
const SCALAR_BYTES: u64 = 16;

/// Objects priced by the field they sit under rather than as the largest
/// struct: the many small structs of a real machine's results (thirty
/// SMART attributes a SATA drive, a probe per passthrough path tried).
/// Sound because a field's name fixes its type: no results type keeps a
/// map of objects (whose keys would be data, not field names), and an
/// unknown field is skipped without being kept. Every field of these
/// names, in every results type, must be of these types (or lists of
/// them, or options): tests/typed_estimate.rs reads each shape and counts.
const SMALL_OBJECTS: [(&str, u64); 9] = [
    ("attributes", price_of::<inventory::AtaAttribute>()),
    ("probes", price_of::<inventory::Probe>()),
    ("readings", price_of::<inventory::WriteCacheReading>()),
    ("write_cache", price_of::<inventory::WriteCache>()),
    ("health", price_of::<inventory::Health>()),
    ("ata", price_of::<inventory::AtaHealth>()),
    ("nvme", price_of::<inventory::NvmeHealth>()),
    ("scsi", price_of::<inventory::ScsiHealth>()),
    ("tests", price_of::<summary::TestVerdict>()),
];

/// A struct's price: its size, rounded up to the allocator's 16 bytes,
/// and as much again for the list it sits in, which grows by doubling.
const fn price_of<T>() -> u64 {
    (std::mem::size_of::<T>() as u64).div_ceil(16) * 16 * 2
}

/// The price of an object under the field `name`.
fn object_price_under(name: &str) -> u64 {
    SMALL_OBJECTS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(OBJECT_BYTES, |(_, p)| *p)
}

/// The running total; whether this value is an element of a list (a list
/// in a list may be a struct written as an array, which serde reads from
/// its fields in order, priced as one); what an object here is priced at;
/// and, for a key, where to leave the price of the value it names.
#[derive(Clone, Copy)]
struct Estimate<'a> {
    total: &'a std::cell::Cell<u64>,
    in_list: bool,
    object: u64,
    key: Option<&'a std::cell::Cell<u64>>,
}

impl<'a> Estimate<'a> {
    /// A whole document, every object priced as the largest struct.
    fn root(total: &'a std::cell::Cell<u64>) -> Estimate<'a> {
        Estimate {
            total,
            in_list: false,
            object: OBJECT_BYTES,
            key: None,
        }
    }

    fn add(&self, n: u64) {
        self.total.set(self.total.get().saturating_add(n));
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Estimate<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Estimate<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.add(SCALAR_BYTES);
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.add(SCALAR_BYTES);
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.add(SCALAR_BYTES);
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.add(SCALAR_BYTES);
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.add(SCALAR_BYTES);
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        // No result holds a string of a megabyte; serde quotes a string
        // of the wrong type whole in its error, escaped to six times its
        // size, and a reader keeps that error.
        if s.len() > MAX_STRING {
            return Err(E::custom(format!(
                "a string of more than {} MiB",
                MAX_STRING >> 20
            )));
        }
        let slot = if self.in_list {
            STRING_IN_LIST_BYTES
        } else {
            0
        };
        self.add(slot + STRING_BYTES + s.len() as u64);
        if let Some(price) = self.key {
            price.set(object_price_under(s));
        }
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.add(if self.in_list {
            self.object
        } else {
            LIST_BYTES
        });
        while seq
            .next_element_seed(Estimate {
                in_list: true,
                key: None,
                ..self
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.add(self.object);
        // A key is a field name (nothing) or a map's key (a string); it
        // prices the object it names.
        let price = std::cell::Cell::new(OBJECT_BYTES);
        let key = Estimate {
            total: self.total,
            in_list: false,
            object: OBJECT_BYTES,
            key: Some(&price),
        };
        while map.next_key_seed(key)?.is_some() {
            map.next_value_seed(Estimate {
                total: self.total,
                in_list: false,
                object: price.replace(OBJECT_BYTES),
                key: None,
            })?;
        }
        Ok(())
    }
}

/// The head of a results file: its tag and version, the rest skipped.
/// JSON that is no object has neither (`Missing`), as an old untagged
/// file (a bare list of targets) has.
struct Head {
    tag: HeadField<String>,
    version: HeadField<u32>,
}

/// A head field: absent, of the right type, or (`Other`) a short word for
/// what it was instead.
enum HeadField<T> {
    Missing,
    Found(T),
    Other(String),
}

impl<'de> Deserialize<'de> for Head {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Head, D::Error> {
        d.deserialize_any(HeadVisitor)
    }
}

struct HeadVisitor;

impl HeadVisitor {
    fn not_object<E>() -> Result<Head, E> {
        Ok(Head {
            tag: HeadField::Missing,
            version: HeadField::Missing,
        })
    }
}

impl<'de> serde::de::Visitor<'de> for HeadVisitor {
    type Value = Head;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Head, A::Error> {
        use serde::de::Error;
        let mut head = Head {
            tag: HeadField::Missing,
            version: HeadField::Missing,
        };
        let mut version_twice = false;
        // What the head passes over is read as strictly as whole JSON
        // (numbers in range, real characters, serde_json's depth limit),
        // and kept as nothing: serde's IgnoredAny skips those checks.
        let skipped = std::cell::Cell::new(0);
        while let Some(key) = map.next_key::<String>()? {
            match &*key {
                TAG if !matches!(head.tag, HeadField::Missing) => {
                    return Err(A::Error::duplicate_field(TAG))
                }
                TAG => {
                    head.tag = map.next_value::<Scalar>()?.into_field(|s| match s {
                        Scalar::Str(s) => Some(s),
                        _ => None,
                    })
                }
                // Twice is refused only in a tagged file: an untagged one
                // is read by its own type, as it always was.
                "schema_version" if !matches!(head.version, HeadField::Missing) => {
                    version_twice = true;
                    map.next_value_seed(Estimate::root(&skipped))?;
                }
                "schema_version" => {
                    head.version = map.next_value::<Scalar>()?.into_field(|s| match s {
                        Scalar::Unsigned(n) => u32::try_from(n).ok(),
                        _ => None,
                    })
                }
                _ => {
                    map.next_value_seed(Estimate::root(&skipped))?;
                }
            }
        }
        if version_twice && !matches!(head.tag, HeadField::Missing) {
            return Err(A::Error::duplicate_field("schema_version"));
        }
        Ok(head)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Head, A::Error> {
        serde::de::Visitor::visit_seq(Estimate::root(&std::cell::Cell::new(0)), seq)?;
        Self::not_object()
    }

    fn visit_bool<E>(self, _: bool) -> Result<Head, E> {
        Self::not_object()
    }
    fn visit_i64<E>(self, _: i64) -> Result<Head, E> {
        Self::not_object()
    }
    fn visit_u64<E>(self, _: u64) -> Result<Head, E> {
        Self::not_object()
    }
    fn visit_f64<E>(self, _: f64) -> Result<Head, E> {
        Self::not_object()
    }
    fn visit_str<E>(self, _: &str) -> Result<Head, E> {
        Self::not_object()
    }
    fn visit_unit<E>(self) -> Result<Head, E> {
        Self::not_object()
    }
}

/// A head field's value as far as the head cares: a string, a whole
/// number, or a word for anything else (never kept: a tag could be a
/// megabyte of list).
enum Scalar {
    Str(String),
    Unsigned(u64),
    Other(&'static str),
}

impl Scalar {
    fn into_field<T>(self, pick: impl FnOnce(Scalar) -> Option<T>) -> HeadField<T> {
        let what = match &self {
            Scalar::Str(s) => format!("{:?}", storcert_util::text::printable(s, 40)),
            Scalar::Unsigned(n) => n.to_string(),
            Scalar::Other(w) => w.to_string(),
        };
        match pick(self) {
            Some(v) => HeadField::Found(v),
            None => HeadField::Other(what),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> serde::de::Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_str<E>(self, s: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(s.to_string()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Scalar, E> {
        Ok(Scalar::Unsigned(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Scalar, E> {
        Ok(Scalar::Other(if n < 0 { "negative" } else { "a number" }))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other("a fraction"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other("a boolean"))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other("null"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        serde::de::Visitor::visit_seq(Estimate::root(&std::cell::Cell::new(0)), seq)?;
        Ok(Scalar::Other("a list"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        serde::de::Visitor::visit_map(Estimate::root(&std::cell::Cell::new(0)), map)?;
        Ok(Scalar::Other("an object"))
    }
}

/// serde_json writes a NaN (a figure of nothing: a threshold over no
/// samples) as `null`; reading it back gives the NaN again.
pub(crate) fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Artefact, ReadError> {
        Artefact::from_json(json.as_bytes())
    }

    /// serde quotes a string of the wrong type whole in its error,
    /// escaped: 16 MB of DEL made a 96 MB error a reader kept (seventh
    /// review). No results file holds a string of a megabyte.
    #[test]
    fn a_string_of_more_than_a_megabyte_is_refused_before_it_is_read() {
        let ok = format!(r#"{{"a":"{}"}}"#, "x".repeat(MAX_STRING));
        assert!(typed_estimate(ok.as_bytes()).is_ok());
        let long = format!(r#"{{"a":"{}"}}"#, "\u{7f}".repeat(MAX_STRING + 1));
        let e = typed_estimate(long.as_bytes()).unwrap_err();
        assert!(e.is_data(), "{e}");
        assert!(e.to_string().len() < 100, "{e}");
    }

    #[test]
    fn the_head_alone_says_what_a_file_is() {
        // Not an object, or no tag: an untagged (older or foreign) file.
        for untagged in [
            "[1,2,[3]]",
            "\"x\"",
            "7",
            "null",
            "{\"a\":{\"artefact\":1}}",
        ] {
            assert!(
                matches!(read(untagged), Err(ReadError::Untagged)),
                "{untagged}"
            );
        }
        assert!(matches!(read("{\"artefact\":"), Err(ReadError::NotJson(_))));
        assert!(matches!(read("[1,]"), Err(ReadError::NotJson(_))));
        // A tag or version of the wrong type is named by its type, never
        // echoed whole (a list could be megabytes).
        let e = read(r#"{"artefact":[1,2,3]}"#).unwrap_err().to_string();
        assert_eq!(e, "\"artefact\" is a list, not a name");
        let e = read(r#"{"artefact":"stream","schema_version":-1}"#).unwrap_err();
        assert_eq!(e.to_string(), "schema_version negative is not a version");
        let e = read(r#"{"artefact":"stream","schema_version":4294967296}"#).unwrap_err();
        assert_eq!(e.to_string(), "schema_version 4294967296 is not a version");
        let e = read(r#"{"artefact":"stream","schema_version":99}"#).unwrap_err();
        assert!(matches!(e, ReadError::Newer { found: 99, .. }), "{e}");
        let e = read(r#"{"artefact":"no-such","schema_version":1}"#).unwrap_err();
        assert_eq!(e.to_string(), "unknown artefact kind \"no-such\"");
        let long = format!(r#"{{"artefact":"{}"}}"#, "k".repeat(1 << 20));
        assert!(read(&long).unwrap_err().to_string().len() < 200);
        // Given twice, either is refused: which one counts is no guess.
        for twice in [
            r#"{"artefact":"stream","artefact":"policy"}"#,
            r#"{"artefact":"stream","schema_version":1,"schema_version":1}"#,
            r#"{"schema_version":1,"schema_version":1,"artefact":"stream"}"#,
        ] {
            assert!(matches!(read(twice), Err(ReadError::Invalid(_))), "{twice}");
        }
        // In an untagged file, a version twice is the legacy reader's.
        let old = r#"{"schema_version":1,"schema_version":2,"device":"x"}"#;
        assert!(matches!(read(old), Err(ReadError::Untagged)));
    }

    #[test]
    fn an_object_is_priced_as_the_largest_results_struct_in_a_list() {
        use std::mem::size_of;
        let largest = [
            size_of::<inventory::Disk>(),
            size_of::<inventory::PhysicalDrive>(),
            size_of::<inventory::Controller>(),
            size_of::<health::DriveHealth>(),
            size_of::<act::LogAnalysis>(),
            size_of::<heartbeat::Heartbeat>(),
            size_of::<stream::JobResult>(),
            size_of::<policy::Finding>(),
            size_of::<Artefact>(),
        ];
        for size in largest {
            assert!(2 * size as u64 <= OBJECT_BYTES, "{size}");
        }
        for (name, price) in SMALL_OBJECTS {
            assert!(price < OBJECT_BYTES, "{name}: {price}");
        }
    }

    #[test]
    fn the_typed_estimate_weighs_shapes_not_bytes() {
        let drives = format!(
            "[{}]",
            vec![r#"{"name":"","capacity_bytes":0}"#; 1000].join(",")
        );
        let n = typed_estimate(drives.as_bytes()).unwrap();
        assert!(n > 1000 * OBJECT_BYTES, "{n}");
        // A struct written as an array, in a list: priced as an object.
        let arrays = format!("[{}]", vec![r#"["",null,0]"#; 1000].join(","));
        assert!(typed_estimate(arrays.as_bytes()).unwrap() > 1000 * OBJECT_BYTES);
        let notes = format!("[{}]", vec![r#""a""#; 1000].join(","));
        assert_eq!(
            typed_estimate(notes.as_bytes()).unwrap(),
            LIST_BYTES + 1000 * (STRING_IN_LIST_BYTES + STRING_BYTES + 1)
        );
        // Under a field of a small type, an object is priced as that type.
        let attributes = format!(
            r#"{{"attributes":[{}]}}"#,
            vec![r#"{"id":1}"#; 1000].join(",")
        );
        let n = typed_estimate(attributes.as_bytes()).unwrap();
        let small = price_of::<inventory::AtaAttribute>();
        assert!(n >= 1000 * small && n < 1000 * OBJECT_BYTES / 16, "{n}");
        // What sits beneath it is priced by its own field.
        let nested = r#"{"x":{"attributes":{"y":{}}}}"#;
        assert!(typed_estimate(nested.as_bytes()).unwrap() > 2 * OBJECT_BYTES);
        assert!(typed_estimate(b"{\"a\":1e400}").is_err());
        assert!(typed_estimate(b"[1] x").is_err());
    }

    #[test]
    fn a_tagged_file_is_read_as_its_kind_past_values_the_head_skips() {
        let mut system = serde_json::json!({
            "artefact": "system",
            "schema_version": system::SCHEMA_VERSION,
            "padding": [[0, {"artefact": "stream"}], "x"],
            "dmi": {"product_serial": "S1"},
            "cpu_count": 2,
            "storcert_version": "0",
        });
        let a = read(&system.to_string()).unwrap();
        assert_eq!(a.kind(), "system");
        system["cpu_count"] = "two".into();
        assert!(matches!(
            read(&system.to_string()),
            Err(ReadError::Invalid(_))
        ));
    }
}
