//! The session log in a SQLite file (the default), or in memory: one row per event,
//! `(session, seq)` the key. A commit waits for the disk (WAL, `synchronous=FULL`), appends to
//! one session are serialised by SQLite's single writer, and a session's writer lock is an OS
//! lock on a file beside the log, released when the process dies.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{LogError, Row, SessionLock};

/// What to do when the log file cannot be opened.
const OPEN_HINT: &str = "set session.log_path (DOCS_AGENT_SESSION_LOG) to a writable file";

/// The schema, by version (`PRAGMA user_version`): each entry moves a log from the version
/// before it. A log made before versions were counted is at 0 with the first table in place,
/// which `CREATE TABLE IF NOT EXISTS` leaves as it is.
const MIGRATIONS: &[&str] = &[
    // 1: the events.
    "CREATE TABLE IF NOT EXISTS events (
        session TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session, seq)
    ) WITHOUT ROWID;",
    // 2: an effect's idempotency key, unique in the table: a write's result is recorded once.
    "ALTER TABLE events ADD COLUMN idem_key TEXT;
     CREATE UNIQUE INDEX events_idem_key ON events (idem_key) WHERE idem_key IS NOT NULL;",
    // 3: events by time, so that counting the open sessions reads the recent events only (it
    // grouped the whole log on every new session).
    "CREATE INDEX events_at ON events (at_ms);",
    // 4: each session's owner (its first event's principal), so that listing a person's
    // sessions is an index lookup.
    "CREATE INDEX events_owner ON events (json_extract(body, '$.principal'))
     WHERE kind = 'session_started' AND seq = 1;",
];

/// A connection to the log.
pub struct Db {
    /// The connection (one per task: SQLite serialises the writers).
    conn: Connection,
    /// The database file (none in memory): session locks live beside it.
    path: Option<PathBuf>,
}

impl Db {
    /// Opens (creating it and its folder) the log at `path`.
    pub fn open(path: &Path) -> Result<Db, LogError> {
        let what = format!("cannot open the session log {}", path.display());
        let io = |source| LogError::Io { what: what.clone(), hint: OPEN_HINT, source };
        let sql = |source| LogError::Sql { what: format!("{what} ({OPEN_HINT})"), source };
        // The log holds conversations: private to its owner (SQLite gives the -wal and -shm
        // files the database file's mode).
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder).map_err(io)?;
        }
        std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path).map_err(io)?;
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Self::with(conn, Some(path.to_path_buf()))
    }

    /// A log that lives only in memory (tests, one-shot questions).
    pub fn in_memory() -> Result<Db, LogError> {
        Self::with(Connection::open_in_memory()?, None)
    }

    fn with(mut conn: Connection, path: Option<PathBuf>) -> Result<Db, LogError> {
        // Temporary tables and sorts stay in memory: the kernel sandbox grants no temporary
        // folder, and a session's log is small.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        migrate(&mut conn)?;
        Ok(Db { conn, path })
    }

    /// True for a log on disk, whose commits wait for the disk.
    pub fn on_disk(&self) -> bool {
        self.path.is_some()
    }

    /// Takes the session's writer lock, or says who holds it.
    pub fn lock(&self, session: &str) -> Result<SessionLock, LogError> {
        let Some(path) = &self.path else {
            return Ok(SessionLock::none());
        };
        let folder = path.with_extension("locks");
        std::fs::create_dir_all(&folder).map_err(|source| LogError::Io {
            what: format!("cannot create the lock folder {}", folder.display()),
            hint: "",
            source,
        })?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(folder.join(format!("{session}.lock")))
            .map_err(|source| LogError::Io {
                what: format!("cannot open the lock of session {session}"),
                hint: "",
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(SessionLock::file(file)),
            Err(std::fs::TryLockError::WouldBlock) => Err(LogError::Busy { session: session.to_string() }),
            Err(std::fs::TryLockError::Error(source)) => {
                Err(LogError::Io { what: format!("cannot lock session {session}"), hint: "", source })
            }
        }
    }

    /// Stores `rows` after the session's last event in one transaction; returns the last seq.
    pub fn insert(&mut self, session: &str, at_ms: u64, rows: &[Row]) -> Result<u64, LogError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut seq: u64 = {
            let mut last = tx.prepare_cached("SELECT MAX(seq) FROM events WHERE session = ?1")?;
            let max: Option<i64> = last.query_row([session], |r| r.get(0)).optional()?.flatten();
            max.unwrap_or(0) as u64
        };
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (session, seq, at_ms, kind, body, idem_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for row in rows {
                seq += 1;
                let inserted =
                    insert.execute(params![session, seq as i64, at_ms as i64, row.kind, row.body, row.key.as_deref()]);
                if let (Err(rusqlite::Error::SqliteFailure(e, _)), Some(key)) = (&inserted, &row.key)
                    && e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                {
                    return Err(LogError::Duplicate { key: key.clone() });
                }
                inserted?;
            }
        }
        tx.commit()?;
        Ok(seq)
    }

    /// `(seq, at_ms, body)` of every event of `session` after `after`, in order.
    pub fn rows_after(&self, session: &str, after: u64) -> Result<Vec<(u64, u64, String)>, LogError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, at_ms, body FROM events WHERE session = ?1 AND seq > ?2 ORDER BY seq")?;
        let rows = stmt.query_map(params![session, after as i64], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, String>(2)?))
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Deletes every event of `session`, in a log in memory only.
    pub fn forget(&mut self, session: &str) -> Result<(), LogError> {
        if self.path.is_some() {
            return Err(LogError::AppendOnly);
        }
        self.conn.prepare_cached("DELETE FROM events WHERE session = ?1")?.execute([session])?;
        Ok(())
    }

    /// How many sessions are open: an event at or after `since_ms`, none closing them; only
    /// those `principal` started when one is named.
    pub fn open_sessions(&self, since_ms: u64, principal: Option<&str>) -> Result<usize, LogError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT COUNT(*) FROM (SELECT DISTINCT session FROM events WHERE at_ms >= ?1) a
             WHERE NOT EXISTS (SELECT 1 FROM events c WHERE c.session = a.session AND c.kind = 'session_closed')
               AND (?2 IS NULL OR EXISTS (SELECT 1 FROM events s WHERE s.session = a.session AND s.seq = 1
                                          AND s.kind = 'session_started'
                                          AND json_extract(s.body, '$.principal') = ?2))",
        )?;
        let n: i64 = stmt.query_row(params![since_ms as i64, principal], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// The ids of the sessions with an event at or after `since_ms`.
    pub fn active_ids_since(&self, since_ms: u64) -> Result<Vec<String>, LogError> {
        let mut stmt =
            self.conn.prepare_cached("SELECT DISTINCT session FROM events WHERE at_ms >= ?1 ORDER BY session")?;
        let ids = stmt.query_map([since_ms as i64], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// The ids of the sessions `principal` started, the most recently active first, at most
    /// `limit` of them.
    pub fn started_by(&self, principal: &str, limit: usize) -> Result<Vec<String>, LogError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.session FROM events s
             WHERE json_extract(s.body, '$.principal') = ?1 AND s.kind = 'session_started' AND s.seq = 1
             ORDER BY (SELECT e.at_ms FROM events e WHERE e.session = s.session ORDER BY e.seq DESC LIMIT 1) DESC,
                      s.session
             LIMIT ?2",
        )?;
        let ids = stmt
            .query_map(params![principal, super::row_limit(limit)], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// The ids of every session in the log.
    pub fn sessions(&self) -> Result<Vec<String>, LogError> {
        let mut stmt = self.conn.prepare_cached("SELECT DISTINCT session FROM events ORDER BY session")?;
        let ids = stmt.query_map([], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }
}

/// Brings the log's schema to the newest version, in one transaction; refuses a log made by a
/// newer docs-agent.
fn migrate(conn: &mut Connection) -> Result<(), LogError> {
    let sql = |what: &str| {
        let what = what.to_string();
        move |source| LogError::Sql { what: what.clone(), source }
    };
    let known = MIGRATIONS.len() as i64;
    // Every handle opens the log: one that is up to date is only read, never written.
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == known {
        return Ok(());
    }
    if version > known {
        return Err(LogError::NewerSchema { found: version, known });
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql("migrating the log"))?;
    // Read again under the write lock: another process may have migrated meanwhile.
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (step, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(migration).map_err(sql(&format!("migrating the log to schema version {}", step + 1)))?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.commit().map_err(sql("migrating the log"))?;
    Ok(())
}
