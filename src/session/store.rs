//! The append-only event log in SQLite: one row per event, `(session, seq)` the key. An append
//! is committed (WAL, `synchronous=FULL`) before it returns, so an event is durable before its
//! effect is acted on. Events are scrubbed on the way in: the log never holds a secret.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::event::Event;

crate::message_error!(
    /// The session log could not be opened, read or written.
    LogError
);

impl From<rusqlite::Error> for LogError {
    fn from(e: rusqlite::Error) -> Self {
        LogError(format!("session log: {e}"))
    }
}

/// One event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Position in its session, from 1.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when it was appended.
    pub at_ms: u64,
    /// The event.
    pub event: Event,
}

/// The log.
pub struct Log {
    /// The database connection (one per process; SQLite serialises writers).
    conn: Connection,
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS events (
        session TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session, seq)
    ) WITHOUT ROWID;";

impl Log {
    /// Opens (creating) the log at `path`.
    pub fn open(path: &Path) -> Result<Log, LogError> {
        let conn = Connection::open(path)
            .map_err(|e| LogError(format!("cannot open the session log {}: {e}", path.display())))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Self::with(conn)
    }

    /// A log that lives only in memory (tests, one-shot questions).
    pub fn in_memory() -> Result<Log, LogError> {
        Self::with(Connection::open_in_memory()?)
    }

    fn with(conn: Connection) -> Result<Log, LogError> {
        conn.execute_batch(SCHEMA)?;
        Ok(Log { conn })
    }

    /// Appends `event` (scrubbed) to `session` and returns its sequence number once it is durable.
    pub fn append(&mut self, session: &str, event: Event) -> Result<u64, LogError> {
        let event = event.scrubbed();
        let body = serde_json::to_string(&event).map_err(|e| LogError(format!("cannot encode an event: {e}")))?;
        let at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seq: u64 = {
            let mut last = tx.prepare_cached("SELECT MAX(seq) FROM events WHERE session = ?1")?;
            let max: Option<i64> = last.query_row([session], |r| r.get(0)).optional()?.flatten();
            max.unwrap_or(0) as u64 + 1
        };
        tx.prepare_cached("INSERT INTO events (session, seq, at_ms, kind, body) VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(params![session, seq as i64, at_ms as i64, event.kind(), body])?;
        tx.commit()?;
        Ok(seq)
    }

    /// Every event of `session` after `after` (0 for all), in order.
    pub fn events_after(&self, session: &str, after: u64) -> Result<Vec<Stored>, LogError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, at_ms, body FROM events WHERE session = ?1 AND seq > ?2 ORDER BY seq")?;
        let rows = stmt.query_map(params![session, after as i64], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at_ms, body) = row?;
            let event = serde_json::from_str(&body)
                .map_err(|e| LogError(format!("session {session}: event {seq} cannot be read ({e})")))?;
            out.push(Stored { seq: seq as u64, at_ms: at_ms as u64, event });
        }
        Ok(out)
    }

    /// The ids of every session in the log.
    pub fn sessions(&self) -> Result<Vec<String>, LogError> {
        let mut stmt = self.conn.prepare_cached("SELECT DISTINCT session FROM events ORDER BY session")?;
        let ids = stmt.query_map([], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    /// The raw stored text of every event of `session` (for checks that nothing secret is stored).
    pub fn raw_bodies(&self, session: &str) -> Result<Vec<String>, LogError> {
        let mut stmt = self.conn.prepare_cached("SELECT body FROM events WHERE session = ?1 ORDER BY seq")?;
        let bodies = stmt.query_map([session], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
        Ok(bodies)
    }
}
