//! The streaming suite's part of a profile: one `[stream]` table, or
//! several named `[[stream]]` entries run in order, so one run holds a
//! dd-style pass and a fio-style pass as the streaming write-ups ran both.

use std::path::PathBuf;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::act::config::parse_duration_secs;
use crate::stream::Pass;
use crate::util::size::parse_size;

/// One streaming entry as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    /// Its name among several `[[stream]]` entries ("dd", "fio"): the
    /// stage's name and its results' folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub size: Option<String>,
    pub percent: Option<u32>,
    pub bs: Option<String>,
    pub qd: Option<u32>,
    pub jobs: Option<u32>,
    #[serde(default)]
    pub verify: bool,
    /// Passes in order: "write", "read" (default both); [] for none (a
    /// filesystem pass alone).
    pub pattern: Option<Vec<String>>,
    /// dd's single stream: one job, one request at a time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dd: bool,
    /// Burn-in: the passes again and again, this many times...
    pub loops: Option<u32>,
    /// ... or until this long has gone ("12h"; the loop under way ends).
    pub duration: Option<String>,
    /// A filesystem pass (bonnie++-style) in this directory, on a volume
    /// mounted there: it never formats anything.
    pub fs_dir: Option<PathBuf>,
    /// Its file's size (default 1G) and the files it creates (default 1024).
    pub fs_size: Option<String>,
    pub fs_files: Option<u32>,
}

/// `[stream]` or `[[stream]]`: the entries in the order written. One
/// entry is written back as a table, so a profile that had one reads as
/// it did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Streams(pub Vec<Stream>);

impl Serialize for Streams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Streams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = Streams;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a [stream] table or [[stream]] entries")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<Streams, A::Error> {
                Ok(Streams(vec![Stream::deserialize(
                    MapAccessDeserializer::new(m),
                )?]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, s: A) -> Result<Streams, A::Error> {
                Ok(Streams(Vec::deserialize(SeqAccessDeserializer::new(s))?))
            }
        }
        d.deserialize_any(Either)
    }
}

/// One entry with every unit parsed: what the stream stage carries out.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamPlan {
    /// The entry's name when the profile has several.
    pub name: Option<String>,
    pub size: Option<u64>,
    pub percent: u32,
    pub bs: u32,
    pub qd: u32,
    pub jobs: u32,
    pub passes: Vec<Pass>,
    pub verify: bool,
    /// How many times the passes run (1 without `loops`/`duration`).
    pub loops: Option<u32>,
    /// Loop until this many seconds have gone.
    pub duration_secs: Option<u64>,
    pub fs: Option<FsPlan>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FsPlan {
    pub dir: PathBuf,
    pub file_size: u64,
    pub files: u32,
}

impl StreamPlan {
    /// The stage's name in the journal and on the console: "stream", or
    /// "stream dd" for the entry named "dd".
    pub fn stage(&self) -> String {
        match &self.name {
            Some(n) => format!("stream {n}"),
            None => "stream".into(),
        }
    }

    /// The filesystem pass's stage.
    pub fn fs_stage(&self) -> String {
        format!("{} fs", self.stage())
    }

    /// Where a result goes in the results folder: `what` is "result",
    /// "fs" or a burn-in loop's "attempt-1/loop-0001". A named entry keeps
    /// its files in a folder of its own, so no name collides with another
    /// entry's file; one unnamed entry keeps the names runs always gave.
    pub fn file(&self, what: &str) -> String {
        match (&self.name, what) {
            (Some(n), w) => format!("stream-{n}/{w}.json"),
            (None, "result") => "stream.json".into(),
            (None, "fs") => "stream-fs.json".into(),
            (None, w) => format!("stream/{w}.json"),
        }
    }
}

/// The longest entry name: a folder and a stage name, read on a console.
const NAME_MAX: usize = 32;

/// Every entry parsed; Err((key, why)). An entry's keys are named
/// `stream.bs` when there is one entry and `stream[1].bs` (from 0) when
/// there are several.
pub(super) fn plan(
    streams: &Streams,
    read_only: bool,
    scratch_bytes: Option<u64>,
) -> Result<Vec<StreamPlan>, (String, String)> {
    let many = streams.0.len() > 1;
    let mut names = std::collections::BTreeSet::new();
    let mut plans = Vec::new();
    for (i, s) in streams.0.iter().enumerate() {
        let key = if many {
            format!("stream[{i}]")
        } else {
            "stream".into()
        };
        match &s.name {
            Some(n) if !valid_name(n) => {
                return Err((
                    format!("{key}.name"),
                    format!(
                        "{n:?}: 1 to {NAME_MAX} of a-z, 0-9 and '-' (it names a stage and a folder)"
                    ),
                ))
            }
            Some(n) if !names.insert(n.clone()) => {
                return Err((format!("{key}.name"), format!("{n:?} is given twice")))
            }
            None if many => {
                return Err((
                    format!("{key}.name"),
                    "needed when the profile has more than one [[stream]]".into(),
                ))
            }
            _ => {}
        }
        let p = plan_one(s, &key, read_only)?;
        // A stream over more than the scratch file would write past it
        // (the file grows) or stop at its end: neither was asked for.
        if let (Some(size), Some(scratch)) = (p.size, scratch_bytes) {
            if size > scratch {
                return Err((
                    format!("{key}.size"),
                    format!(
                        "{} is more than the scratch file's {} (devices.scratch)",
                        crate::output::units::decimal_bytes(size),
                        crate::output::units::decimal_bytes(scratch)
                    ),
                ));
            }
        }
        plans.push(p);
    }
    Ok(plans)
}

fn valid_name(n: &str) -> bool {
    (1..=NAME_MAX).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// One entry's units and contradictions.
fn plan_one(s: &Stream, key: &str, read_only: bool) -> Result<StreamPlan, (String, String)> {
    let k = |field: &str| format!("{key}.{field}");
    let bad = |field: &str, m: String| Err((k(field), m));
    let size_of = |field: &str, v: &str| parse_size(v).map_err(|e| (k(field), e.to_string()));
    if s.size.is_some() && s.percent.is_some() {
        return Err((key.into(), "give size or percent, not both".into()));
    }
    let size = s.size.as_deref().map(|v| size_of("size", v)).transpose()?;
    if let Some(p) = s.percent {
        if !(1..=100).contains(&p) {
            return bad("percent", format!("{p} is not 1-100"));
        }
    }
    let bs = match &s.bs {
        Some(v) => {
            u32::try_from(size_of("bs", v)?).map_err(|_| (k("bs"), format!("{v}: too large")))?
        }
        None => 1 << 20,
    };
    if s.loops.is_some() && s.duration.is_some() {
        return Err((key.into(), "give loops or duration, not both".into()));
    }
    if s.loops == Some(0) {
        return bad("loops", "must be at least 1".into());
    }
    if s.dd && (s.qd.is_some() || s.jobs.is_some()) {
        return bad(
            "dd",
            "is one job at one request at a time: drop qd and jobs".into(),
        );
    }
    let duration_secs = s
        .duration
        .as_deref()
        .map(|d| parse_duration_secs(d).map_err(|e| (k("duration"), e.to_string())))
        .transpose()?;
    let fs = match &s.fs_dir {
        Some(dir) => Some(FsPlan {
            dir: dir.clone(),
            file_size: s
                .fs_size
                .as_deref()
                .map(|v| size_of("fs_size", v))
                .transpose()?
                .unwrap_or(1 << 30),
            files: s.fs_files.unwrap_or(1024),
        }),
        None if s.fs_size.is_some() || s.fs_files.is_some() => {
            return bad("fs_dir", "fs_size and fs_files need fs_dir".into());
        }
        None => None,
    };
    if fs.is_some() && read_only {
        return bad("fs_dir", "contradicts read_only = true".into());
    }
    let passes = passes(s, &k, read_only, fs.is_some())?;
    Ok(StreamPlan {
        name: s.name.clone(),
        size,
        percent: s.percent.unwrap_or(100),
        bs,
        qd: if s.dd { 1 } else { s.qd.unwrap_or(32) },
        jobs: if s.dd { 1 } else { s.jobs.unwrap_or(1) },
        loops: s.loops,
        duration_secs,
        fs,
        passes,
        verify: s.verify,
    })
}

/// The entry's passes in order, checked against read_only and verify.
fn passes(
    s: &Stream,
    k: &dyn Fn(&str) -> String,
    read_only: bool,
    fs: bool,
) -> Result<Vec<Pass>, (String, String)> {
    let bad = |m: &str| Err((k("pattern"), m.to_string()));
    let passes = match &s.pattern {
        None => vec![Pass::Write, Pass::Read],
        Some(v) => {
            let mut out = Vec::new();
            for p in v {
                match p.as_str() {
                    "read" => out.push(Pass::Read),
                    "write" => out.push(Pass::Write),
                    _ => return Err((k("pattern"), format!("{p:?}: \"write\" or \"read\""))),
                }
            }
            out
        }
    };
    if passes.is_empty() && !fs {
        return bad("[] runs nothing without fs_dir");
    }
    let writes = passes.contains(&Pass::Write);
    if read_only && writes {
        return bad("read_only allows only [\"read\"]");
    }
    if s.verify && !writes {
        return Err((k("verify"), "verify needs the write pass".into()));
    }
    Ok(passes)
}

#[cfg(test)]
mod tests {
    use super::super::Profile;

    fn err(text: &str) -> String {
        Profile::parse(text, "p.toml").unwrap_err().0
    }

    #[test]
    fn stream_entries_take_burn_in_dd_and_a_filesystem_pass() {
        const S: &str = "name = \"x\"\n[devices]\nselect = \"all\"\n[stream]\n";
        let p = Profile::parse(
            &format!("{S}dd = true\nduration = \"2h\"\nfs_dir = \"/mnt/v\"\nfs_size = \"8G\"\n"),
            "p.toml",
        )
        .unwrap();
        let st = &p.plan.stream[0];
        assert_eq!((st.qd, st.jobs, st.duration_secs), (1, 1, Some(7200)));
        assert_eq!(st.fs.as_ref().unwrap().file_size, 8 << 30);
        assert_eq!(st.fs.as_ref().unwrap().files, 1024);
        assert_eq!(p.plan.timed_seconds(), 7200);
        let e = err(&format!("{S}loops = 2\nduration = \"1h\"\n"));
        assert!(e.contains("loops or duration, not both"), "{e}");
        let e = err(&format!("{S}loops = 0\n"));
        assert!(e.contains("stream.loops"), "{e}");
        let e = err(&format!("{S}dd = true\nqd = 4\n"));
        assert!(e.contains("stream.dd"), "{e}");
        let e = err(&format!("{S}fs_files = 4\n"));
        assert!(e.contains("need fs_dir"), "{e}");
        let e = err(&format!("{S}pattern = []\n"));
        assert!(e.contains("runs nothing"), "{e}");
    }

    /// A dd pass and a fio-style pass in one profile, each named, each
    /// its own stage and folder; one `[stream]` keeps today's names.
    #[test]
    fn a_profile_holds_a_dd_pass_and_a_fio_style_pass() {
        const D: &str = "name = \"x\"\n[devices]\nselect = \"all\"\n";
        let p = Profile::parse(
            &format!(
                "{D}[[stream]]\nname = \"dd\"\ndd = true\nsize = \"1G\"\n\
                 [[stream]]\nname = \"fio\"\nqd = 32\njobs = 4\nbs = \"128K\"\nsize = \"1G\"\n"
            ),
            "p.toml",
        )
        .unwrap();
        let s = &p.plan.stream;
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].qd, s[0].jobs, s[0].bs), (1, 1, 1 << 20));
        assert_eq!((s[1].qd, s[1].jobs, s[1].bs), (32, 4, 128 << 10));
        assert_eq!(
            (s[0].stage(), s[1].fs_stage()),
            ("stream dd".into(), "stream fio fs".into())
        );
        assert_eq!(s[0].file("result"), "stream-dd/result.json");
        assert_eq!(
            s[1].file("attempt-1/loop-0001"),
            "stream-fio/attempt-1/loop-0001.json"
        );
        // Written back, the profile reads the same: both entries, in order.
        let again = Profile::parse(&toml::to_string(&p).unwrap(), "again").unwrap();
        assert_eq!(again.plan.stream, p.plan.stream);

        let one = Profile::parse(&format!("{D}[stream]\nsize = \"1G\"\n"), "p.toml").unwrap();
        let s = &one.plan.stream[0];
        assert_eq!(
            (s.stage(), s.file("result"), s.file("fs")),
            (
                "stream".into(),
                "stream.json".into(),
                "stream-fs.json".into()
            )
        );
        assert_eq!(
            s.file("attempt-2/loop-0003"),
            "stream/attempt-2/loop-0003.json"
        );
        let again = Profile::parse(&toml::to_string(&one).unwrap(), "again").unwrap();
        assert_eq!(again.plan.stream, one.plan.stream);

        let two = |a: &str, b: &str| {
            format!("{D}[[stream]]\n{a}size = \"1G\"\n[[stream]]\n{b}size = \"1G\"\n")
        };
        // Errors point at the entry's own line, not the first of its name.
        let e = err(&two("name = \"a\"\n", ""));
        assert!(
            e.contains(
                "line 7: stream[1].name: needed when the profile has more than one [[stream]]"
            ),
            "{e}"
        );
        let e = err(&format!(
            "{D}[[stream]]\nname = \"a\"\nsize = \"1M\"\n[[stream]]\nname = \"b\"\nsize = \"1x\"\n"
        ));
        assert!(e.contains("p.toml: line 9: stream[1].size: "), "{e}");
        let e = err(&format!(
            "{D}[[stream]]\nname = \"a\"\nsize = \"1M\"\n[[stream]]\nname = \"B\"\n"
        ));
        assert!(e.contains("p.toml: line 8: stream[1].name: \"B\""), "{e}");
        // Headers as TOML reads them: spaced, with a comment after.
        let e = err(&format!(
            "{D}[[ stream ]] # one\nname = \"a\"\nsize = \"1M\"\n[[stream]] # two\nname = \"B\"\n"
        ));
        assert!(e.contains("p.toml: line 8: stream[1].name: \"B\""), "{e}");
        let e = err(&two("name = \"a\"\n", "name = \"a\"\n"));
        assert!(e.contains("stream[1].name: \"a\" is given twice"), "{e}");
        let e = err(&two("name = \"a\"\n", "name = \"../x\"\n"));
        assert!(
            e.contains("stream[1].name: \"../x\": 1 to 32 of a-z"),
            "{e}"
        );
        let e = err(&two("name = \"a\"\n", "name = \"b\"\nloops = 0\n"));
        assert!(e.contains("stream[1].loops: must be at least 1"), "{e}");
        let e = err("name = \"x\"\n[devices]\nscratch = \"64M\"\n[stream]\nsize = \"1G\"\n");
        assert!(
            e.contains(
                "stream.size: 1.1 GB is more than the scratch file's 67.1 MB (devices.scratch)"
            ),
            "{e}"
        );
        let e = err(&format!("{D}[[stream]]\nname = \"a\"\nbogus = 1\n"));
        assert!(e.contains("unknown field `bogus`"), "{e}");
    }
}
