//! The collector's SQLite index of stored bundles and their drives, for
//! the fleet page and the JSON API. It is a cache of the store's
//! `summaries/` records: a collector sharing a bucket imports what the
//! others stored, and a lost index is rebuilt from the store.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};

use crate::bundle::summary::Summary;

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
}

pub struct Index {
    db: Mutex<Connection>,
}

impl Index {
    pub fn open(path: &Path) -> Result<Index> {
        let db = Connection::open(path).with_context(|| format!("index {}", path.display()))?;
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
             CREATE INDEX IF NOT EXISTS drives_sha ON drives(sha256);",
        )
        .with_context(|| format!("index {}", path.display()))?;
        Ok(Index { db: Mutex::new(db) })
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

    pub fn count(&self) -> Result<u64> {
        let n: i64 = self
            .lock()
            .query_row("SELECT COUNT(*) FROM bundles", [], |r| r.get(0))?;
        Ok(n as u64)
    }
}
