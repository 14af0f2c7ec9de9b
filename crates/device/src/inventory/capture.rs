//! Capture and replay: everything one inventory read from a machine, in
//! one archive, and the inventory made again from it.
//!
//! Every file the inventory reads (sysfs, /proc, the udev database, /dev
//! links, the kernel's module lists) goes through `Roots`, and every
//! pass-through command through a `passthrough::tape::Device`. Capturing
//! keeps each answer the host gave, keyed by what was asked (the
//! operation and the path, or the device and the command bytes);
//! replaying gives those answers back instead of asking the host. The
//! same code runs in between, so a capture replayed here makes the
//! inventory the machine made, and a capture sent from hardware nobody
//! here has becomes a regression test.
//!
//! Replaying never opens a path or a device named in the capture: a
//! capture is as hostile as any file sent in. The archive is the bundle
//! format (zstd tar with a manifest), read within the bundle reader's
//! bounds, and replayed within its own (names, disks, controllers,
//! questions), each cut named.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{bail, Context, Result};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::{Inventory, Roots, ScanOptions};
use crate::passthrough::tape::{Exchange, Failure, Missing, Tape};
use storcert_bundle::unpack::{Limits, Unpacked};

/// The capture's own description, first in the archive.
pub const CAPTURE_JSON: &str = "capture.json";
/// Where the contents of the files read sit in the archive.
const FILES_PREFIX: &str = "files";
const FORMAT: &str = "storcert inventory capture";
const SCHEMA_VERSION: u32 = 1;
/// The largest capture read (compressed); a server with a hundred drives
/// captures to well under a megabyte.
pub const MAX_CAPTURE: u64 = 64 << 20;
/// The largest capture.json read.
const MAX_CAPTURE_JSON: u64 = 16 << 20;

// What a replay reads and walks, at most. A capture is anyone's file, and
// 16 MiB of capture.json can list millions of names, each a disk or a
// controller that costs tens of questions to walk: these keep a hostile
// one to a few tens of MiB and seconds, while the largest real machine's
// stays far inside them. Every cut is named (`Capture::cuts`).

/// Names of one folder a replay reads. The largest folders a real machine
/// lists are the udev database (a file per device: CPUs, memory blocks,
/// ports: tens of thousands on the largest) and /dev/disk/by-id (a few
/// links per disk and partition).
pub const MAX_NAMES_PER_LISTING: usize = 1 << 16;
/// Names of all the folders of a capture a replay reads: besides those
/// two, each disk's own folder lists about thirty.
pub const MAX_NAMES: usize = 1 << 18;
/// Block devices a replay walks: a real machine has at most a few
/// thousand (a thousand multipathed drives, their paths and their maps).
pub const MAX_DISKS: usize = 8192;
/// PCI controllers of one kind (storage, network) a replay reads: each
/// NVMe drive is one (virtual functions are skipped), so a few hundred on
/// the largest machines.
pub const MAX_CONTROLLERS: usize = 1024;
/// Questions of files a replay answers (the commands are a few a disk):
/// The bytes of answers one replay hands out: every answer is a copy, so
/// a capture of a few KB that lists one name many times, or shares one
/// large file among many controllers, could otherwise be handed out
/// gigabytes. A real machine's inventory reads a few MB.
pub const MAX_GIVEN: u64 = 96 << 20;
/// a real inventory asks about sixty a disk, so this is twice `MAX_DISKS`
/// real disks.
pub const MAX_QUESTIONS: usize = 1 << 20;
/// Questions a replay leaves unanswered before it stops asking: a newer
/// storcert asks a few a disk that an older one did not capture.
pub const MAX_UNANSWERED: usize = 1 << 16;
/// Cut lines kept; the rest are counted.
const MAX_CUT_LINES: usize = 8;

/// How the inventory reads the machine.
#[derive(Debug, Clone, Default)]
pub enum Source {
    /// The running host.
    #[default]
    Host,
    /// The running host, keeping every answer.
    Capturing(Arc<Capture>),
    /// A capture, instead of the host.
    Replaying(Arc<Capture>),
}

impl Source {
    /// The pass-through tape devices are opened with, if any.
    pub fn tape(&self) -> Option<&Arc<Tape>> {
        match self {
            Source::Host => None,
            Source::Capturing(c) | Source::Replaying(c) => Some(&c.tape),
        }
    }
}

/// The file operations the inventory asks of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOp {
    Read,
    ReadLink,
    ReadDir,
    Canonicalize,
    Exists,
    /// The device number of a block special file (None: not one).
    BlockDevice,
}

/// What the host answered to one file operation. In memory a file's
/// contents are its bytes; in capture.json, the name of the archive entry
/// that holds them (`Answer<String>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Answer<C = Vec<u8>> {
    Contents(C),
    Path(String),
    Names(Listing),
    Exists(bool),
    Rdev(Option<u64>),
    Failed(Failure),
}

impl<C> Answer<C> {
    /// The same answer with its contents (if any) turned by `f`.
    fn map_contents<D, E>(self, f: impl FnOnce(C) -> Result<D, E>) -> Result<Answer<D>, E> {
        Ok(match self {
            Answer::Contents(c) => Answer::Contents(f(c)?),
            Answer::Path(p) => Answer::Path(p),
            Answer::Names(n) => Answer::Names(n),
            Answer::Exists(e) => Answer::Exists(e),
            Answer::Rdev(r) => Answer::Rdev(r),
            Answer::Failed(f) => Answer::Failed(f),
        })
    }
}

/// A folder's names. Read from a capture, at most `MAX_NAMES_PER_LISTING`
/// of them are kept as it is parsed (the rest are parsed and dropped), and
/// `listed` says how many it held. Written, the names only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub names: Vec<String>,
    pub listed: usize,
}

impl From<Vec<String>> for Listing {
    fn from(names: Vec<String>) -> Listing {
        Listing {
            listed: names.len(),
            names,
        }
    }
}

impl Serialize for Listing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.names)
    }
}

/// What handing out an answer costs, in bytes.
fn answer_bytes(a: &Answer) -> u64 {
    let n = match a {
        Answer::Contents(c) => c.len(),
        Answer::Path(p) => p.len(),
        Answer::Names(l) => l.names.iter().map(|n| n.len() + 24).sum(),
        _ => 0,
    };
    n as u64 + 16
}

/// A name a folder can hold: not empty, `.` or `..`, and no `/` or NUL
/// (joined to its folder, `/sys/block/sda` or `sda/` would read another
/// path's answers, or the same one again).
fn folder_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

impl<'de> Deserialize<'de> for Listing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Listing, D::Error> {
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = Listing;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Listing, A::Error> {
                let mut names = Vec::new();
                let mut seen = std::collections::HashSet::new();
                let mut listed = 0;
                while let Some(name) = seq.next_element::<String>()? {
                    listed += 1;
                    // A folder lists a name once, and only a name: a
                    // repeated or path-like one is a hostile capture's.
                    if names.len() < MAX_NAMES_PER_LISTING
                        && folder_name(&name)
                        && seen.insert(name.clone())
                    {
                        names.push(name);
                    }
                }
                Ok(Listing { names, listed })
            }
        }
        d.deserialize_seq(Names)
    }
}

/// The file records of a capture.json, of whose listings' names at most
/// `MAX_NAMES` are kept: each listing is bounded as it is parsed, then cut
/// to what is left, so this holds at most one listing more.
fn records_within_bounds<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FileRecord>, D::Error> {
    struct Records;
    impl<'de> Visitor<'de> for Records {
        type Value = Vec<FileRecord>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of file records")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut records = Vec::new();
            let mut left = MAX_NAMES;
            while let Some(mut r) = seq.next_element::<FileRecord>()? {
                if let Answer::Names(listing) = &mut r.answer {
                    if listing.names.len() > left {
                        listing.names.truncate(left);
                        listing.names.shrink_to_fit();
                    }
                    left -= listing.names.len();
                }
                records.push(r);
            }
            Ok(records)
        }
    }
    d.deserialize_seq(Records)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRecord {
    op: FileOp,
    path: String,
    answer: Answer<String>,
}

/// The capture a run keeps beside its inventory.json.
pub const RUN_CAPTURE: &str = "inventory-capture.tar.zst";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RootPaths {
    sys: String,
    proc: String,
    dev: String,
    udev_data: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaptureJson {
    format: String,
    schema_version: u32,
    storcert_version: String,
    generated_at: String,
    /// The options the inventory ran with, so a replay asks what it asked.
    options: ScanOptions,
    roots: RootPaths,
    #[serde(deserialize_with = "records_within_bounds")]
    files: Vec<FileRecord>,
    exchanges: Vec<Exchange>,
}

/// The answers of one inventory, being kept or played back.
#[derive(Debug)]
pub struct Capture {
    files: Mutex<FileAnswers>,
    tape: Arc<Tape>,
    generated_at: Mutex<Option<String>>,
    /// What a replay left out, by the bounds above.
    cuts: Mutex<Cuts>,
}

#[derive(Debug, Default)]
struct FileAnswers {
    answers: BTreeMap<(FileOp, String), Answer>,
    /// Questions a replay was asked that the capture does not answer.
    missing: Missing,
    /// Questions a replay was asked, answered or not, up to its bounds.
    asked: usize,
    /// The bytes of the answers a replay was given (each answer is a copy
    /// the inventory may keep), up to `MAX_GIVEN`.
    given: u64,
}

/// The cuts of one replay: the first few lines, how many more, and
/// where it stopped asking (said whatever came before).
#[derive(Debug, Default)]
struct Cuts {
    first: Vec<String>,
    more: usize,
    stopped: Option<String>,
}

impl Cuts {
    fn note(&mut self, line: String) {
        if self.first.len() < MAX_CUT_LINES {
            self.first.push(line);
        } else {
            self.more += 1;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding it leaves plain data behind.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Capture {
    /// An empty capture that keeps what the host answers.
    pub fn recording() -> Arc<Capture> {
        Arc::new(Capture {
            files: Mutex::default(),
            tape: Tape::recording(),
            generated_at: Mutex::new(None),
            cuts: Mutex::default(),
        })
    }

    /// A capture that keeps what the host's files answer and plays
    /// `exchanges` for every pass-through command: a machine made of a
    /// directory tree and of replies built from the public definitions,
    /// for the fixture tests of controllers nobody here has. Its archive
    /// replays like any capture.
    pub fn answering(exchanges: Vec<Exchange>) -> Arc<Capture> {
        Arc::new(Capture {
            files: Mutex::default(),
            tape: Tape::playing(exchanges),
            generated_at: Mutex::new(None),
            cuts: Mutex::default(),
        })
    }

    /// The pass-through exchanges kept or being played.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.tape.exchanges()
    }

    /// What the replay was asked and the capture did not hold: how many
    /// questions, and the first few (files, then commands).
    pub fn missing(&self) -> (usize, Vec<String>) {
        let files = lock(&self.files);
        let commands = self.tape.missing();
        let mut first: Vec<String> = files
            .missing
            .first
            .iter()
            .map(|m| format!("file {m}"))
            .collect();
        first.extend(commands.first.iter().map(|m| format!("command {m}")));
        (files.missing.count + commands.count, first)
    }

    /// What the replay left out, one line each (printable): a listing
    /// past its bounds, the disks or controllers not walked, the
    /// questions not asked.
    pub fn cuts(&self) -> Vec<String> {
        let cuts = lock(&self.cuts);
        let mut lines = cuts.first.clone();
        if cuts.more > 0 {
            lines.push(format!("capture: and {} more cuts", cuts.more));
        }
        lines.extend(cuts.stopped.clone());
        lines
    }

    /// Notes a cut (a line made printable by the caller).
    pub(crate) fn cut(&self, line: String) {
        lock(&self.cuts).note(line);
    }

    /// The answer kept for this question: the host's first one.
    fn keep(&self, op: FileOp, path: &str, live: impl FnOnce() -> Answer) -> Answer {
        let key = (op, path.to_string());
        if let Some(a) = lock(&self.files).answers.get(&key) {
            return a.clone();
        }
        let a = live();
        lock(&self.files).answers.entry(key).or_insert(a).clone()
    }

    /// The answer kept for this question; a question the capture does not
    /// hold is answered as for a path that does not exist, and noted.
    fn answer(&self, op: FileOp, path: &str) -> Answer {
        let mut files = lock(&self.files);
        // Past its bounds a replay stops asking: whatever walk asks, each
        // listing now reads as empty, so every loop ends.
        if files.asked >= MAX_QUESTIONS
            || files.missing.count >= MAX_UNANSWERED
            || files.given >= MAX_GIVEN
        {
            let mut cuts = lock(&self.cuts);
            if cuts.stopped.is_none() {
                let why = if files.asked >= MAX_QUESTIONS {
                    format!("the replay asked {MAX_QUESTIONS} questions")
                } else if files.given >= MAX_GIVEN {
                    format!("the replay was given {} MiB of answers", MAX_GIVEN >> 20)
                } else {
                    format!("{MAX_UNANSWERED} questions went unanswered")
                };
                cuts.stopped = Some(format!(
                    "capture: {why}; it stopped asking at {op:?} {}, and all it asked after read as absent",
                    storcert_util::text::printable(path, 200)
                ));
            }
            return absent(op);
        }
        files.asked += 1;
        if let Some(a) = files.answers.get(&(op, path.to_string())).cloned() {
            files.given = files.given.saturating_add(answer_bytes(&a));
            return a;
        }
        files.missing.note(format!("{op:?} {path}"));
        absent(op)
    }

    /// The time the inventory is stamped with: now, kept when capturing;
    /// the captured time when replaying.
    pub(super) fn stamp(&self, now: impl FnOnce() -> String) -> String {
        lock(&self.generated_at).get_or_insert_with(now).clone()
    }

    /// The archive of this capture (the bundle format, unsigned).
    pub fn to_archive(&self, roots: &Roots, opts: &ScanOptions) -> Result<Vec<u8>> {
        let files = lock(&self.files);
        let mut contents: Vec<(String, Vec<u8>)> = Vec::new();
        let mut records = Vec::new();
        for ((op, path), answer) in &files.answers {
            let stored = answer.clone().map_contents(|bytes| {
                let name = archive_name(path, contents.len());
                contents.push((name.clone(), bytes));
                Ok::<_, std::convert::Infallible>(name)
            });
            let Ok(stored) = stored;
            records.push(FileRecord {
                op: *op,
                path: path.clone(),
                answer: stored,
            });
        }
        let json = CaptureJson {
            format: FORMAT.into(),
            schema_version: SCHEMA_VERSION,
            storcert_version: env!("CARGO_PKG_VERSION").into(),
            generated_at: lock(&self.generated_at).clone().unwrap_or_default(),
            options: opts.clone(),
            roots: RootPaths {
                sys: roots.sys.display().to_string(),
                proc: roots.proc.display().to_string(),
                dev: roots.dev.display().to_string(),
                udev_data: roots.udev_data.display().to_string(),
            },
            files: records,
            exchanges: self.tape.exchanges(),
        };
        let mut text = serde_json::to_vec_pretty(&json).context("capture.json")?;
        text.push(b'\n');
        let mut entries = vec![(CAPTURE_JSON.to_string(), text)];
        entries.extend(contents);
        storcert_bundle::pack(entries)
    }
}

/// Where a file's contents sit in the archive: its path under `files/`,
/// or a numbered name for a path the archive's plain-path rule refuses.
fn archive_name(path: &str, n: usize) -> String {
    let name = format!("{FILES_PREFIX}{path}");
    if path.starts_with('/') && storcert_bundle::unpack::plain_path(&name) {
        name
    } else {
        format!("{FILES_PREFIX}/by-number/{n}")
    }
}

/// A capture read back: what to replay it with.
pub struct Replay {
    pub capture: Arc<Capture>,
    pub roots: Roots,
    pub options: ScanOptions,
    /// The storcert version that made it.
    pub made_by: String,
}

/// Reads a capture archive (hostile: bounded, nothing in it is opened).
pub fn read_archive(bytes: &[u8]) -> Result<Replay> {
    from_unpacked(unpack(bytes)?)
}

fn unpack(bytes: &[u8]) -> Result<Unpacked> {
    let limits = Limits {
        // A real capture is a few MB, pci.ids and the module lists its
        // largest files.
        max_unpacked: 64 << 20,
        max_entries: 200_000,
        ..Limits::default()
    };
    storcert_bundle::unpack_bytes(bytes, &limits).context("not a capture archive")
}

fn from_unpacked(mut unpacked: Unpacked) -> Result<Replay> {
    let Some(json) = unpacked.files.get(CAPTURE_JSON) else {
        bail!("not a capture: it has no {CAPTURE_JSON}");
    };
    // Parsed, it takes several times its size: a real one is well under
    // a few MiB (a hundred drives' replies).
    if json.len() as u64 > MAX_CAPTURE_JSON {
        bail!(
            "{CAPTURE_JSON}: {} bytes, more than the {} MiB a capture may hold",
            json.len(),
            MAX_CAPTURE_JSON >> 20
        );
    }
    let json: CaptureJson = serde_json::from_slice(json).context(CAPTURE_JSON)?;
    if json.format != FORMAT || json.schema_version != SCHEMA_VERSION {
        bail!(
            "{CAPTURE_JSON}: format {:?} version {}, this storcert reads {FORMAT:?} version {SCHEMA_VERSION}",
            storcert_util::text::printable(&json.format, 80),
            json.schema_version
        );
    }
    let mut answers = BTreeMap::new();
    let mut cuts = Cuts::default();
    for r in json.files {
        if let Answer::Names(l) = &r.answer {
            if l.names.len() < l.listed {
                let of_all = if l.names.len() < MAX_NAMES_PER_LISTING {
                    format!(" (a replay reads {MAX_NAMES} names of all folders at most)")
                } else {
                    String::new()
                };
                cuts.note(format!(
                    "capture: {} lists {} names; only the first {} were read{of_all}",
                    storcert_util::text::printable(&r.path, 200),
                    l.listed,
                    l.names.len()
                ));
            }
        }
        // Each entry holds one file's contents: one named twice would be
        // held twice (a capture of one large entry named by every record).
        let answer = r
            .answer
            .map_contents(|name| match unpacked.files.remove(&name) {
                Some(b) => Ok(b),
                None => Err(anyhow::anyhow!(
                    "{CAPTURE_JSON}: the contents of {} ({}) are not in the archive, or named twice",
                    storcert_util::text::printable(&r.path, 200),
                    storcert_util::text::printable(&name, 200)
                )),
            })?;
        answers.insert((r.op, r.path), answer);
    }
    let capture = Arc::new(Capture {
        files: Mutex::new(FileAnswers {
            answers,
            ..FileAnswers::default()
        }),
        tape: Tape::playing(json.exchanges),
        generated_at: Mutex::new(Some(json.generated_at)),
        cuts: Mutex::new(cuts),
    });
    let roots = Roots {
        sys: json.roots.sys.into(),
        proc: json.roots.proc.into(),
        dev: json.roots.dev.into(),
        udev_data: json.roots.udev_data.into(),
        source: Source::Replaying(capture.clone()),
    };
    let options = json.options;
    Ok(Replay {
        capture,
        roots,
        options,
        made_by: json.storcert_version,
    })
}

/// Reads a capture file, refusing one past `MAX_CAPTURE` before reading it.
pub fn read_file(path: &Path) -> Result<Replay> {
    use std::io::Read;
    let f = fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_CAPTURE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}", path.display()))?;
    if bytes.len() as u64 > MAX_CAPTURE {
        bail!(
            "{}: larger than {} MiB, not a capture",
            path.display(),
            MAX_CAPTURE >> 20
        );
    }
    let unpacked = unpack(&bytes).with_context(|| format!("{}", path.display()))?;
    // The archive is not needed past this: up to 64 MiB less beside what
    // the capture parses into.
    drop(bytes);
    from_unpacked(unpacked).with_context(|| format!("{}", path.display()))
}

/// This host's inventory, and the archive of everything it read: what
/// `inventory --capture` writes and every run keeps.
pub fn scan_captured(opts: &ScanOptions) -> Result<(Inventory, Vec<u8>)> {
    let capture = Capture::recording();
    let roots = Roots {
        source: Source::Capturing(capture.clone()),
        ..Roots::default()
    };
    let inventory = super::scan(&roots, opts);
    let archive = capture.to_archive(&roots, opts)?;
    Ok((inventory, archive))
}

/// The inventory a capture holds, made again by this storcert.
pub fn replay(replay: &Replay) -> Inventory {
    super::scan(&replay.roots, &replay.options)
}

/// The file operations of the inventory, against the host or a capture.
impl Roots {
    /// The capture being replayed, if any: what bounds a replay's walks
    /// and hears of their cuts.
    pub(crate) fn replaying(&self) -> Option<&Capture> {
        match &self.source {
            Source::Replaying(c) => Some(c),
            _ => None,
        }
    }

    fn ask(&self, op: FileOp, path: &Path, live: impl FnOnce() -> Answer) -> Answer {
        let key = path.to_string_lossy();
        match &self.source {
            Source::Host => live(),
            // The first answer is kept and given to every later asking,
            // so the live run sees exactly what a replay will.
            Source::Capturing(c) => c.keep(op, &key, live),
            Source::Replaying(c) => c.answer(op, &key),
        }
    }

    pub fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.ask(FileOp::Read, path, || {
            failed_or(fs::read(path), Answer::Contents)
        }) {
            Answer::Contents(b) => Ok(b),
            other => Err(not_this(other)),
        }
    }

    pub fn read_to_string(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read(path)?).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
    }

    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        match self.ask(FileOp::ReadLink, path, || {
            failed_or(fs::read_link(path), |p| {
                Answer::Path(p.to_string_lossy().into_owned())
            })
        }) {
            Answer::Path(p) => Ok(p.into()),
            other => Err(not_this(other)),
        }
    }

    /// The names in a folder, in the order the host gave them.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        match self.ask(FileOp::ReadDir, path, || {
            failed_or(
                fs::read_dir(path).and_then(|rd| {
                    rd.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                        .collect::<io::Result<Vec<String>>>()
                }),
                |names| Answer::Names(names.into()),
            )
        }) {
            Answer::Names(n) => Ok(n.names),
            other => Err(not_this(other)),
        }
    }

    pub fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        match self.ask(FileOp::Canonicalize, path, || {
            failed_or(fs::canonicalize(path), |p| {
                Answer::Path(p.to_string_lossy().into_owned())
            })
        }) {
            Answer::Path(p) => Ok(p.into()),
            other => Err(not_this(other)),
        }
    }

    pub fn exists(&self, path: &Path) -> bool {
        matches!(
            self.ask(FileOp::Exists, path, || Answer::Exists(path.exists())),
            Answer::Exists(true)
        )
    }

    /// The device number of a block special file (following links).
    pub fn block_device(&self, path: &Path) -> Option<u64> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        match self.ask(FileOp::BlockDevice, path, || {
            Answer::Rdev(
                fs::metadata(path)
                    .ok()
                    .filter(|m| m.file_type().is_block_device())
                    .map(|m| m.rdev()),
            )
        }) {
            Answer::Rdev(r) => r,
            _ => None,
        }
    }
}

/// The answer for a path that does not exist.
fn absent(op: FileOp) -> Answer {
    match op {
        FileOp::Exists => Answer::Exists(false),
        FileOp::BlockDevice => Answer::Rdev(None),
        _ => Answer::Failed(Failure::of(&io::Error::from_raw_os_error(libc::ENOENT))),
    }
}

fn failed_or<T>(r: io::Result<T>, ok: impl FnOnce(T) -> Answer) -> Answer {
    match r {
        Ok(v) => ok(v),
        Err(e) => Answer::Failed(Failure::of(&e)),
    }
}

/// The error of a failed answer; an answer of another kind (a capture
/// edited by hand) reads as bad data.
fn not_this(answer: Answer) -> io::Error {
    match answer {
        Answer::Failed(f) => f.to_error(),
        _ => io::Error::new(
            io::ErrorKind::InvalidData,
            "the capture answers this with another kind of answer",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_are_bounded_as_they_are_parsed() {
        let names: Vec<String> = (0..MAX_NAMES_PER_LISTING + 5)
            .map(|n| n.to_string())
            .collect();
        let text = serde_json::to_string(&names).unwrap();
        let one: Listing = serde_json::from_str(&text).unwrap();
        assert_eq!(one.listed, MAX_NAMES_PER_LISTING + 5);
        assert_eq!(one.names[..], names[..MAX_NAMES_PER_LISTING]);
        // Of all the listings of a capture, the first MAX_NAMES names.
        let records: Vec<serde_json::Value> = (0..5)
            .map(|n| {
                serde_json::json!({"op": "read_dir", "path": format!("/d{n}"), "answer": {"names": names}})
            })
            .collect();
        let text = serde_json::Value::Array(records).to_string();
        let records =
            records_within_bounds(&mut serde_json::Deserializer::from_str(&text)).unwrap();
        let kept: Vec<(usize, usize)> = records
            .iter()
            .map(|r| match &r.answer {
                Answer::Names(l) => (l.names.len(), l.listed),
                other => panic!("{other:?}"),
            })
            .collect();
        let (max, listed) = (MAX_NAMES_PER_LISTING, MAX_NAMES_PER_LISTING + 5);
        assert_eq!(MAX_NAMES, 4 * max);
        assert_eq!(
            kept,
            [(max, listed); 4]
                .into_iter()
                .chain([(0, listed)])
                .collect::<Vec<_>>()
        );
        // Written, a listing is its names.
        let written = serde_json::to_string(&Listing::from(vec!["sda".to_string()])).unwrap();
        assert_eq!(written, r#"["sda"]"#);
    }
}
