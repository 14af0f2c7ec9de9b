//! The collector's SQLite index of stored bundles and their drives, for
//! the fleet page and the JSON API. It is a cache of the store's
//! `summaries/` records: a collector sharing a bucket imports what the
//! others stored, and a lost index is rebuilt from the store.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};

use super::board::StatusRecord;
use storcert_judge::summary::Summary;
use storcert_report::export::DriveRow;

/// The index's own layout. An index of another version is rebuilt from
/// the store (it is a cache: every record verifies again).
const INDEX_VERSION: i64 = 3;

/// What the store keeps beside each bundle (`summaries/SHA.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub sha256: String,
    /// The name it was uploaded as.
    pub name: String,
    pub received_at: String,
    pub signed_at: String,
    pub key_id: String,
    pub size: u64,
    pub summary: Summary,
    /// A row per drive (the export's), made from the verified contents:
    /// kept in the index's rows table, never in the record (it is made
    /// again whenever a bundle is verified, and would swell the record).
    #[serde(skip)]
    pub rows: Vec<DriveRow>,
}

impl Record {
    pub fn new(
        v: storcert_bundle::Verified,
        received_at: String,
        size: u64,
        mut rows: Vec<DriveRow>,
    ) -> Record {
        for r in &mut rows {
            r.received_at = received_at.clone();
        }
        Record {
            sha256: v.sha256,
            name: v.signed_name,
            received_at,
            signed_at: v.signed_at,
            key_id: v.key_id,
            size,
            summary: v.summary,
            rows,
        }
    }
}

/// What a cohort groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CohortKey {
    Model,
    Firmware,
    Controller,
    Tag,
}

impl CohortKey {
    pub const ALL: [CohortKey; 4] = [
        CohortKey::Model,
        CohortKey::Firmware,
        CohortKey::Controller,
        CohortKey::Tag,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CohortKey::Model => "model",
            CohortKey::Firmware => "firmware",
            CohortKey::Controller => "controller",
            CohortKey::Tag => "tag",
        }
    }

    pub fn parse(s: &str) -> Option<CohortKey> {
        CohortKey::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The indexed column holding a row's group.
    fn column(self) -> &'static str {
        match self {
            CohortKey::Model => "g_model",
            CohortKey::Firmware => "g_firmware",
            CohortKey::Controller => "g_controller",
            CohortKey::Tag => "g_tag",
        }
    }

    /// A row's group: a firmware is a model's firmware, a controller's
    /// name goes with its firmware.
    pub fn group_of(self, r: &DriveRow) -> String {
        let o = |x: &Option<String>| x.clone().unwrap_or_default();
        match self {
            CohortKey::Model => o(&r.model),
            CohortKey::Firmware => format!("{} / {}", o(&r.model), o(&r.firmware)),
            CohortKey::Controller => {
                format!("{} / {}", o(&r.controller), o(&r.controller_firmware))
            }
            CohortKey::Tag => o(&r.tag),
        }
    }
}

/// Which rows an export or a page takes.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    /// Any of these drive serials or WWNs.
    pub drive: Vec<String>,
    pub machine: Option<String>,
    /// (key, its group's value) of a cohort.
    pub cohort: Option<(CohortKey, String)>,
    /// Received on or after this date/time (RFC 3339 prefix compare).
    pub since: Option<String>,
}

/// Whose a run is, and how far its heartbeats have come.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunOwner {
    /// The key id it belongs to; none for a run not heard of.
    pub key: Option<String>,
    /// The last seq recorded.
    pub seq: Option<u64>,
}

fn owner_of(db: &Connection, run_id: &str) -> Result<RunOwner> {
    use rusqlite::OptionalExtension;
    let status: Option<(i64, Option<String>)> = db
        .query_row(
            "SELECT seq, json_extract(record, '$.key_id') FROM status WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((seq, key)) = status {
        // The first accepted heartbeat's key: a bundle another key
        // uploads under the run's name cannot take the run over.
        return Ok(RunOwner {
            key,
            seq: Some(seq as u64),
        });
    }
    // A run never heard of, or whose records expired: its bundle's
    // signer's, if one is stored under its name.
    let bundle_key: Option<Option<String>> = db
        .query_row(
            "SELECT json_extract(record, '$.key_id') FROM bundles WHERE name = ?1
             ORDER BY received_at, sha256 LIMIT 1",
            [format!("{run_id}.tar.zst")],
            |r| r.get(0),
        )
        .optional()?;
    Ok(RunOwner {
        key: bundle_key.flatten(),
        seq: None,
    })
}

fn add_foreign(db: &Connection, run_id: &str, key_id: &str, n: u64) -> Result<()> {
    let n = n.min(i64::MAX as u64) as i64;
    db.execute(
        "INSERT INTO status_foreign (run_id, refused, last_key, last_ms)
         VALUES (?1, ?4, ?2, ?3)
         ON CONFLICT(run_id) DO UPDATE SET refused = refused + ?4,
             last_key = excluded.last_key, last_ms = excluded.last_ms",
        params![run_id, key_id, super::board::now_ms() as i64, n],
    )?;
    Ok(())
}

/// The board's rows `filter` (a WHERE clause over `s`, the status, and
/// `b`, its bundle signed by the run's own key, with its ORDER and
/// LIMIT) takes, each handed to `each`; how many.
fn status_rows(
    db: &Connection,
    filter: &str,
    values: impl rusqlite::Params,
    each: &mut impl FnMut(StatusRow),
) -> Result<u32> {
    let mut st = db.prepare(&format!(
        "SELECT s.record, b.sha256, b.verdict,
                json_extract(b.record, '$.summary.reasons'),
                json_extract(b.record, '$.summary.machine'),
                f.refused, f.last_key
         FROM status s
         LEFT JOIN bundles b ON b.sha256 = (
             SELECT b2.sha256 FROM bundles b2 WHERE b2.name = s.run_id || '.tar.zst'
                 AND json_extract(b2.record, '$.key_id') = json_extract(s.record, '$.key_id')
             ORDER BY b2.received_at, b2.sha256 LIMIT 1)
         LEFT JOIN status_foreign f ON f.run_id = s.run_id
         WHERE {filter}"
    ))?;
    let mut rows = st.query(values)?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let (sha, verdict) = (
            r.get::<_, Option<String>>(1)?,
            r.get::<_, Option<String>>(2)?,
        );
        let bundle = match (sha, verdict) {
            (Some(sha256), Some(verdict)) => Some(StoredRun {
                sha256,
                verdict: serde_json::from_value(verdict.into()).context("index verdict")?,
                reasons: serde_json::from_str(
                    r.get::<_, Option<String>>(3)?.as_deref().unwrap_or("[]"),
                )
                .context("index reasons")?,
                machine: serde_json::from_str(
                    r.get::<_, Option<String>>(4)?.as_deref().unwrap_or("{}"),
                )
                .context("index machine")?,
            }),
            _ => None,
        };
        let foreign = r
            .get::<_, Option<i64>>(5)?
            .zip(r.get::<_, Option<String>>(6)?)
            .map(|(n, k)| (n.max(0) as u64, k));
        each(StatusRow {
            record: serde_json::from_str(&r.get::<_, String>(0)?).context("index status")?,
            bundle,
            foreign,
        });
        n += 1;
    }
    Ok(n)
}

/// What `put_status` made of a heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub enum PutStatus {
    Recorded,
    /// Not above this seq, recorded already.
    Stale(u64),
    /// The run belongs to this other key.
    Foreign(String),
}

/// A run's stored bundle, as the board shows it: once stored, the
/// bundle's machine, verdict and reasons stand, never a heartbeat's.
#[derive(Debug, Clone, Serialize)]
pub struct StoredRun {
    pub sha256: String,
    pub verdict: storcert_results::Verdict,
    pub reasons: Vec<String>,
    pub machine: storcert_results::summary::Machine,
}

/// A run on the board: its last status, its bundle once stored, and the
/// heartbeats of other keys refused for it (how many, the last key).
#[derive(Debug, Clone)]
pub struct StatusRow {
    pub record: StatusRecord,
    pub bundle: Option<StoredRun>,
    pub foreign: Option<(u64, String)>,
}

/// What /metrics counts in the index: bundles by verdict, drives by
/// (model, verdict), bundles by model.
pub type MetricCounts = (
    Vec<(String, u64)>,
    Vec<(String, String, u64)>,
    Vec<(String, u64)>,
);

pub struct Index {
    db: Mutex<Connection>,
    path: std::path::PathBuf,
}

impl Index {
    pub fn open(path: &Path) -> Result<Index> {
        let db = Connection::open(path).with_context(|| format!("index {}", path.display()))?;
        let version: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .with_context(|| format!("index {}", path.display()))?;
        if version != INDEX_VERSION {
            // Another layout: dropped, and filled again from the store.
            db.execute_batch(
                "DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS act_keys; DROP TABLE IF EXISTS status;
                 DROP TABLE IF EXISTS drives;
                 DROP TABLE IF EXISTS bundles;",
            )
            .with_context(|| format!("index {}", path.display()))?;
        }
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS bundles (
                 sha256 TEXT PRIMARY KEY,
                 name TEXT NOT NULL,
                 received_at TEXT NOT NULL,
                 verdict TEXT NOT NULL,
                 machine_serial TEXT,
                 machine TEXT,
                 hostname TEXT,
                 record TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS drives (
                 sha256 TEXT NOT NULL REFERENCES bundles(sha256),
                 device TEXT NOT NULL,
                 model TEXT,
                 serial TEXT,
                 wwn TEXT,
                 verdict TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS drives_serial ON drives(serial);
             CREATE INDEX IF NOT EXISTS drives_sha ON drives(sha256);
             CREATE TABLE IF NOT EXISTS rows (
                 sha256 TEXT NOT NULL REFERENCES bundles(sha256),
                 n INTEGER NOT NULL,
                 received_at TEXT NOT NULL,
                 machine_serial TEXT,
                 serial TEXT,
                 wwn TEXT,
                 model TEXT,
                 firmware TEXT,
                 controller TEXT,
                 controller_firmware TEXT,
                 tag TEXT,
                 verdict TEXT NOT NULL,
                 g_model TEXT NOT NULL,
                 g_firmware TEXT NOT NULL,
                 g_controller TEXT NOT NULL,
                 g_tag TEXT NOT NULL,
                 row TEXT NOT NULL,
                 PRIMARY KEY (sha256, n)
             );
             CREATE INDEX IF NOT EXISTS rows_g_model ON rows(g_model);
             CREATE INDEX IF NOT EXISTS rows_g_firmware ON rows(g_firmware);
             CREATE INDEX IF NOT EXISTS rows_g_controller ON rows(g_controller);
             CREATE INDEX IF NOT EXISTS rows_g_tag ON rows(g_tag);
             CREATE INDEX IF NOT EXISTS bundles_machine ON bundles(machine_serial);
             CREATE TABLE IF NOT EXISTS act_keys (
                 key TEXT PRIMARY KEY,
                 load REAL NOT NULL,
                 spare_pct REAL
             );
             CREATE INDEX IF NOT EXISTS rows_serial ON rows(serial);
             CREATE INDEX IF NOT EXISTS rows_wwn ON rows(wwn);
             CREATE INDEX IF NOT EXISTS rows_machine ON rows(machine_serial);
             CREATE INDEX IF NOT EXISTS rows_received ON rows(received_at);
             CREATE INDEX IF NOT EXISTS bundles_received ON bundles(received_at);
             CREATE INDEX IF NOT EXISTS bundles_name ON bundles(name);
             CREATE TABLE IF NOT EXISTS status (
                 run_id TEXT PRIMARY KEY,
                 seq INTEGER NOT NULL,
                 received_ms INTEGER NOT NULL,
                 state TEXT NOT NULL,
                 record TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS status_received ON status(received_ms);
             CREATE INDEX IF NOT EXISTS status_state ON status(state, received_ms);
             CREATE TABLE IF NOT EXISTS status_foreign (
                 run_id TEXT PRIMARY KEY,
                 refused INTEGER NOT NULL,
                 last_key TEXT NOT NULL,
                 last_ms INTEGER NOT NULL
             );",
        )
        .with_context(|| format!("index {}", path.display()))?;
        db.pragma_update(None, "user_version", INDEX_VERSION)
            .with_context(|| format!("index {}", path.display()))?;
        Ok(Index {
            db: Mutex::new(db),
            path: path.to_path_buf(),
        })
    }

    /// A read-only connection of its own (WAL lets it read beside the
    /// writer): a long read holds up no upload, heartbeat or page.
    fn reader(&self) -> Result<Connection> {
        Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("index {}", self.path.display()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn contains(&self, sha256: &str) -> Result<bool> {
        Ok(self
            .lock()
            .query_row("SELECT 1 FROM bundles WHERE sha256 = ?1", [sha256], |_| {
                Ok(())
            })
            .map(|_| true)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(false),
                e => Err(e),
            })?)
    }

    /// Adds a record (once: a second insert of the same digest is a no-op).
    pub fn insert(&self, r: &Record) -> Result<bool> {
        let mut db = self.lock();
        let tx = db.transaction()?;
        let m = &r.summary.machine;
        let machine = [m.vendor.as_deref(), m.product.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let added = tx.execute(
            "INSERT OR IGNORE INTO bundles
             (sha256, name, received_at, verdict, machine_serial, machine, hostname, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                r.sha256,
                r.name,
                r.received_at,
                r.summary.verdict.as_str(),
                m.serial,
                machine,
                m.hostname,
                serde_json::to_string(r)?
            ],
        )? == 1;
        if added {
            for d in &r.summary.drives {
                tx.execute(
                    "INSERT INTO drives (sha256, device, model, serial, wwn, verdict)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        r.sha256,
                        d.device,
                        d.model,
                        d.serial,
                        d.wwn,
                        d.verdict.as_str()
                    ],
                )?;
            }
            for (n, row) in r.rows.iter().enumerate() {
                tx.execute(
                    "INSERT INTO rows (sha256, n, received_at, machine_serial, serial, wwn,
                        model, firmware, controller, controller_firmware, tag, verdict,
                        g_model, g_firmware, g_controller, g_tag, row)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                        ?15, ?16, ?17)",
                    params![
                        r.sha256,
                        n as i64,
                        r.received_at,
                        row.machine_serial,
                        row.serial,
                        row.wwn,
                        row.model,
                        row.firmware,
                        row.controller,
                        row.controller_firmware,
                        row.tag,
                        row.verdict.as_str(),
                        CohortKey::Model.group_of(row),
                        CohortKey::Firmware.group_of(row),
                        CohortKey::Controller.group_of(row),
                        CohortKey::Tag.group_of(row),
                        serde_json::to_string(row)?
                    ],
                )?;
                for a in &row.act {
                    tx.execute(
                        "INSERT OR IGNORE INTO act_keys (key, load, spare_pct) VALUES (?1, ?2, ?3)",
                        params![a.key(), a.load, a.spare_pct],
                    )?;
                }
            }
        }
        tx.commit()?;
        Ok(added)
    }

    pub fn get(&self, sha256: &str) -> Result<Option<Record>> {
        let db = self.lock();
        let text: Option<String> = db
            .query_row(
                "SELECT record FROM bundles WHERE sha256 = ?1",
                [sha256],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        text.map(|t| serde_json::from_str(&t).context("index record"))
            .transpose()
    }

    /// Bundles whose machine, hostname, any drive's serial/model/WWN, or
    /// received date (a "2026-11" prefix) contains `q`; newest first.
    pub fn search(&self, q: &str, limit: u32) -> Result<Vec<Record>> {
        let db = self.lock();
        let like = format!(
            "%{}%",
            q.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let mut st = db.prepare(
            "SELECT record FROM bundles b WHERE ?1 = '%%'
               OR b.machine_serial LIKE ?1 ESCAPE '\\' OR b.machine LIKE ?1 ESCAPE '\\'
               OR b.hostname LIKE ?1 ESCAPE '\\' OR b.received_at LIKE ?1 ESCAPE '\\'
               OR b.name LIKE ?1 ESCAPE '\\' OR b.sha256 LIKE ?1 ESCAPE '\\'
               OR EXISTS (SELECT 1 FROM drives d WHERE d.sha256 = b.sha256 AND
                    (d.serial LIKE ?1 ESCAPE '\\' OR d.model LIKE ?1 ESCAPE '\\'
                     OR d.wwn LIKE ?1 ESCAPE '\\' OR d.device LIKE ?1 ESCAPE '\\'))
             ORDER BY received_at DESC, sha256 LIMIT ?2",
        )?;
        let rows = st.query_map(params![like, limit], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(serde_json::from_str(&row?).context("index record")?);
        }
        Ok(out)
    }

    /// Bundles by verdict, and drives by (model, verdict), for /metrics:
    /// two grouped counts, no record read.
    #[allow(clippy::type_complexity)]
    /// Bundles by verdict, drives by (model, verdict), bundles by model.
    pub fn metric_counts(&self) -> Result<MetricCounts> {
        let db = self.reader()?;
        let mut st = db.prepare("SELECT verdict, COUNT(*) FROM bundles GROUP BY verdict")?;
        let bundles = st
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })?
            .collect::<Result<_, _>>()?;
        let mut st =
            db.prepare("SELECT COALESCE(model, ''), verdict, COUNT(*) FROM drives GROUP BY 1, 2")?;
        let drives = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)? as u64,
                ))
            })?
            .collect::<Result<_, _>>()?;
        let mut st = db
            .prepare("SELECT COALESCE(model, ''), COUNT(DISTINCT sha256) FROM drives GROUP BY 1")?;
        let models = st
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })?
            .collect::<Result<_, _>>()?;
        Ok((bundles, drives, models))
    }

    pub fn count(&self) -> Result<u64> {
        let n: i64 = self
            .lock()
            .query_row("SELECT COUNT(*) FROM bundles", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Rows that `f` takes, newest first, handed to `each` one at a time
    /// (an export of the whole fleet is never held in memory); at most
    /// `limit`. `each` returning false stops.
    pub fn rows(
        &self,
        f: &RowFilter,
        limit: u64,
        mut each: impl FnMut(DriveRow) -> bool,
    ) -> Result<()> {
        let db = self.reader()?;
        let (mut sql, mut args) = (
            String::from("SELECT row FROM rows WHERE 1"),
            Vec::<String>::new(),
        );
        if !f.drive.is_empty() {
            let mut any = Vec::new();
            for d in f.drive.iter().take(64) {
                args.push(d.clone());
                any.push(format!("serial = ?{0} OR wwn = ?{0}", args.len()));
            }
            sql += &format!(" AND ({})", any.join(" OR "));
        }
        if let Some(m) = &f.machine {
            args.push(m.clone());
            sql += &format!(" AND machine_serial = ?{}", args.len());
        }
        if let Some((key, value)) = &f.cohort {
            args.push(value.clone());
            sql += &format!(" AND {} = ?{}", key.column(), args.len());
        }
        if let Some(s) = &f.since {
            args.push(s.clone());
            sql += &format!(" AND received_at >= ?{}", args.len());
        }
        sql += &format!(
            " ORDER BY received_at DESC, sha256, n LIMIT {}",
            limit.min(i64::MAX as u64)
        );
        let mut st = db.prepare(&sql)?;
        let mut q = st.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(r) = q.next()? {
            let text: String = r.get(0)?;
            if !each(serde_json::from_str(&text).context("index row")?) {
                break;
            }
        }
        Ok(())
    }

    /// The groups of `key`, largest first, with their row counts.
    pub fn cohorts(&self, key: CohortKey, limit: u32) -> Result<Vec<(String, u64)>> {
        let db = self.reader()?;
        let sql = format!(
            "SELECT {0} AS g, COUNT(*) FROM rows GROUP BY g ORDER BY COUNT(*) DESC, g LIMIT ?1",
            key.column()
        );
        let mut st = db.prepare(&sql)?;
        let rows = st.query_map([limit], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        let mut out = Vec::new();
        for r in rows {
            let (g, n) = r?;
            out.push((g, n as u64));
        }
        Ok(out)
    }

    /// The ACT column keys of every row indexed (an export's header:
    /// its groups are the same whatever rows it takes).
    pub fn act_keys(&self) -> Result<Vec<String>> {
        let db = self.reader()?;
        let mut st =
            db.prepare("SELECT key FROM act_keys ORDER BY COALESCE(spare_pct, -1), load, key")?;
        let keys = st.query_map([], |r| r.get::<_, String>(0))?;
        Ok(keys.collect::<Result<_, _>>()?)
    }

    /// The key a run belongs to and its last recorded seq: the signer of
    /// its stored bundle if there is one, else the key of its first
    /// accepted heartbeat. Asked before a heartbeat's body is read.
    pub fn run_owner(&self, run_id: &str) -> Result<RunOwner> {
        owner_of(&self.lock(), run_id)
    }

    /// How many runs the board's records hold.
    pub fn status_count(&self) -> Result<u64> {
        let n: i64 = self
            .lock()
            .query_row("SELECT COUNT(*) FROM status", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// Counts `n` heartbeats for `run_id`, the last signed by `key_id`,
    /// refused as not the run's owner's: the board says so.
    pub fn add_foreign(&self, run_id: &str, key_id: &str, n: u64) -> Result<()> {
        add_foreign(&self.lock(), run_id, key_id, n)
    }

    /// Records a run's status if it is signed by the run's owner (or the
    /// run is new) and its seq is above the one recorded: then, and only
    /// then, the caller stores it. A heartbeat of another key is counted
    /// against the run.
    pub fn put_status(&self, rec: &StatusRecord, seq: u64, state: &str) -> Result<PutStatus> {
        let db = self.lock();
        let owner = owner_of(&db, &rec.run_id)?;
        if let Some(key) = owner.key.filter(|k| *k != rec.key_id) {
            add_foreign(&db, &rec.run_id, &rec.key_id, 1)?;
            return Ok(PutStatus::Foreign(key));
        }
        if let Some(seen) = owner.seq.filter(|s| *s >= seq) {
            return Ok(PutStatus::Stale(seen));
        }
        db.execute(
            "INSERT INTO status (run_id, seq, received_ms, state, record)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(run_id) DO UPDATE SET seq = excluded.seq,
                 received_ms = excluded.received_ms, state = excluded.state,
                 record = excluded.record
             WHERE excluded.seq > status.seq",
            params![
                rec.run_id,
                seq as i64,
                rec.received_ms as i64,
                state,
                serde_json::to_string(rec)?
            ],
        )?;
        Ok(PutStatus::Recorded)
    }

    /// The runs still running heard from since `running_since_ms`, the
    /// longest silent first (the stalled ones: no number of newer runs
    /// pushes a silent machine off the board), then the others heard from
    /// since `since_ms`, newest first; at most `limit` in all, each with
    /// its stored bundle (signed by the run's own key). Each is handed to
    /// `each` as it is read (a record may be 64 KiB: thousands are never
    /// held at once).
    pub fn statuses(
        &self,
        since_ms: u64,
        running_since_ms: u64,
        limit: u32,
        mut each: impl FnMut(StatusRow),
    ) -> Result<()> {
        let db = self.reader()?;
        const LIVE: &str = "s.state = 'running' AND s.received_ms >= ?1 AND b.sha256 IS NULL";
        let running_since = running_since_ms as i64;
        let shown = status_rows(
            &db,
            &format!("{LIVE} ORDER BY s.received_ms ASC, s.run_id LIMIT ?2"),
            params![running_since, limit],
            &mut each,
        )?;
        status_rows(
            &db,
            &format!(
                "NOT ({LIVE}) AND s.received_ms >= ?2 ORDER BY s.received_ms DESC, s.run_id \
                 LIMIT ?3"
            ),
            params![running_since, since_ms as i64, limit.saturating_sub(shown)],
            &mut each,
        )?;
        Ok(())
    }

    /// Forgets the runs last heard from before `before_ms`: their records
    /// leave the index; the ids are returned so the store's go too.
    pub fn expire_statuses(&self, before_ms: u64) -> Result<Vec<String>> {
        let db = self.lock();
        let mut st = db.prepare("SELECT run_id FROM status WHERE received_ms < ?1")?;
        let ids = st
            .query_map([before_ms as i64], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        db.execute(
            "DELETE FROM status WHERE received_ms < ?1",
            [before_ms as i64],
        )?;
        db.execute(
            "DELETE FROM status_foreign WHERE run_id NOT IN (SELECT run_id FROM status)",
            [],
        )?;
        Ok(ids)
    }

    /// The bundles of a machine (DMI serial), newest first: digest, name,
    /// received, verdict.
    pub fn runs_of_machine(
        &self,
        serial: &str,
        limit: u32,
    ) -> Result<Vec<(String, String, String, String)>> {
        let db = self.reader()?;
        let mut st = db.prepare(
            "SELECT sha256, name, received_at, verdict FROM bundles WHERE machine_serial = ?1
             ORDER BY received_at DESC, sha256 LIMIT ?2",
        )?;
        let rows = st.query_map(params![serial, limit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(run: &str, key: &str, received_ms: u64) -> StatusRecord {
        StatusRecord {
            run_id: run.into(),
            received_at: "2026-12-01T00:00:00Z".into(),
            received_ms,
            key_id: key.into(),
            minisig: String::new(),
            heartbeat: "{}".into(),
        }
    }

    fn listed(ix: &Index, limit: u32) -> Vec<String> {
        let mut out = Vec::new();
        ix.statuses(0, 0, limit, |s| out.push(s.record.run_id))
            .unwrap();
        out
    }

    #[test]
    fn a_run_is_its_first_key_s_and_its_seq_only_climbs() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&dir.path().join("i.sqlite")).unwrap();
        let put = |key: &str, seq| ix.put_status(&status("r", key, 1), seq, "running").unwrap();
        assert_eq!(put("a", 5), PutStatus::Recorded);
        assert_eq!(put("b", 7), PutStatus::Foreign("a".into()));
        assert_eq!(put("a", 5), PutStatus::Stale(5));
        assert_eq!(put("a", 6), PutStatus::Recorded);
        assert_eq!(
            ix.run_owner("r").unwrap(),
            RunOwner {
                key: Some("a".into()),
                seq: Some(6)
            }
        );
        ix.add_foreign("r", "c", 1).unwrap();
        let mut foreign = None;
        ix.statuses(0, 0, 10, |s| foreign = s.foreign).unwrap();
        assert_eq!(foreign, Some((2, "c".to_string())));
        assert_eq!(ix.run_owner("new").unwrap(), RunOwner::default());
    }

    #[test]
    fn running_runs_come_first_whatever_else_was_heard_since() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&dir.path().join("i.sqlite")).unwrap();
        ix.put_status(&status("silent", "a", 1_000), 1, "running")
            .unwrap();
        for n in 0..10 {
            ix.put_status(&status(&format!("done-{n}"), "b", 2_000 + n), 1, "finished")
                .unwrap();
        }
        let shown = listed(&ix, 5);
        assert_eq!(shown.len(), 5);
        assert_eq!(shown[0], "silent", "{shown:?}");
        // Newer running runs, more than the board holds: the one silent
        // longest (the stalled machine) is still listed, first.
        for n in 0..10 {
            ix.put_status(&status(&format!("new-{n}"), "c", 5_000 + n), 1, "running")
                .unwrap();
        }
        let shown = listed(&ix, 5);
        assert_eq!(shown[0], "silent", "{shown:?}");
    }

    #[test]
    fn a_bundle_of_another_key_under_a_run_s_name_takes_nothing_over() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&dir.path().join("i.sqlite")).unwrap();
        ix.put_status(&status("r", "a", 1), 1, "running").unwrap();
        let db = ix.lock();
        db.execute(
            "INSERT INTO bundles (sha256, name, received_at, verdict, record)
             VALUES ('s', 'r.tar.zst', '2026-12-01', 'pass', '{\"key_id\": \"b\"}')",
            [],
        )
        .unwrap();
        drop(db);
        assert_eq!(ix.run_owner("r").unwrap().key.as_deref(), Some("a"));
        let mut bundle = Some(None);
        ix.statuses(0, 0, 10, |s| bundle = Some(s.bundle.map(|b| b.sha256)))
            .unwrap();
        assert_eq!(bundle, Some(None));
        // A run never heard of is its bundle's signer's.
        let db = ix.lock();
        db.execute(
            "INSERT INTO bundles (sha256, name, received_at, verdict, record)
             VALUES ('t', 'done.tar.zst', '2026-12-01', 'pass', '{\"key_id\": \"b\"}')",
            [],
        )
        .unwrap();
        drop(db);
        assert_eq!(ix.run_owner("done").unwrap().key.as_deref(), Some("b"));
    }

    #[test]
    fn runs_silent_too_long_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&dir.path().join("i.sqlite")).unwrap();
        ix.put_status(&status("old", "a", 1_000), 1, "running")
            .unwrap();
        ix.put_status(&status("new", "a", 9_000), 1, "running")
            .unwrap();
        ix.add_foreign("old", "b", 1).unwrap();
        assert_eq!(ix.expire_statuses(5_000).unwrap(), vec!["old".to_string()]);
        assert_eq!(listed(&ix, 10), vec!["new".to_string()]);
        // Its owner is forgotten with it.
        assert_eq!(ix.run_owner("old").unwrap(), RunOwner::default());
    }
}
