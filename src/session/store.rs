//! The append-only event log in SQLite: one row per event, `(session, seq)` the key. An append
//! is committed (WAL, `synchronous=FULL`) before it returns, so an event is durable before its
//! effect is acted on. Events are scrubbed on the way in: the log never holds a secret.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::event::Event;

/// What to do when the log file cannot be opened.
const OPEN_HINT: &str = "set session.log_path (DOCS_AGENT_SESSION_LOG) to a writable file";

/// Why the session log failed. Each kind has its own handling: a busy session is the caller's
/// turn to wait (409 over HTTP), anything else is a failure on our side (500), said clearly.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Another process or task holds the session's writer lock.
    #[error("session {session} is in use by another docs-agent process or request; wait for it to finish, or stop it")]
    Busy {
        /// The session.
        session: String,
    },
    /// The file system refused: the log's folder or file, or a session's lock file.
    #[error("{what}: {source}{}", if hint.is_empty() { String::new() } else { format!("; {hint}") })]
    Io {
        /// What was being done, on which file.
        what: String,
        /// What to do about it, when there is something to say.
        hint: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// SQLite failed (the disk is full, the file is locked for too long, it is not a database).
    #[error("session log: {what}: {source}")]
    Sql {
        /// What was being done.
        what: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A stored event cannot be read back (or a new one cannot be encoded).
    #[error("session {session}: {}", if *seq == 0 {
        format!("an event cannot be stored ({detail})")
    } else {
        format!("event {seq} cannot be read ({detail}); the log file is damaged")
    })]
    Corrupt {
        /// The session.
        session: String,
        /// The event's sequence number (0 for an event not yet stored).
        seq: u64,
        /// What is wrong with it.
        detail: String,
    },
    /// Forgetting a session was asked of a log on disk, which never forgets.
    #[error("a session log on disk is append-only; nothing is forgotten")]
    AppendOnly,
}

impl From<rusqlite::Error> for LogError {
    fn from(source: rusqlite::Error) -> Self {
        LogError::Sql { what: "a query failed".into(), source }
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

/// Called with `(session, last seq)` after each commit.
pub type AppendHook = Box<dyn Fn(&str, u64) + Send>;

/// The log.
pub struct Log {
    /// The database connection (one per process; SQLite serialises writers).
    conn: Connection,
    /// The crash-test hook, when set.
    kill_after: Option<KillAfter>,
    /// The database file (none in memory): session locks live beside it.
    path: Option<std::path::PathBuf>,
    /// Told `(session, last seq)` after every commit (a server wakes the streams that follow it).
    on_append: Option<AppendHook>,
}

/// The one writer of a session: held while a process drives or decides it, released when
/// dropped or when the process dies (an OS file lock), so a crash never leaves it stuck.
#[derive(Debug)]
pub struct SessionLock {
    /// The locked file; `None` for a log in memory.
    _file: Option<std::fs::File>,
}

/// The crash-test hook (`DOCS_AGENT_TEST_KILL_AFTER=POINT[#N]`): the process sends itself
/// SIGKILL right after the `nth` time it reaches `point`, an event kind just made durable or
/// `write` (a note written, its result not yet logged). Nothing is flushed or cleaned up, as in
/// a real crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillAfter {
    /// An event kind (`tool_result`...) or `write`.
    pub point: String,
    /// Which time it is reached (from 1).
    pub nth: u32,
    /// Times reached so far.
    seen: u32,
}

impl KillAfter {
    /// Parses `POINT` or `POINT#N`.
    pub fn parse(spec: &str) -> Result<KillAfter, String> {
        let (point, nth) = match spec.split_once('#') {
            Some((point, n)) => {
                (point, n.parse::<u32>().map_err(|_| format!("kill-after count `{n}` is not a number"))?)
            }
            None => (spec, 1),
        };
        if point.is_empty() || nth == 0 {
            return Err(format!("kill-after `{spec}` must be POINT or POINT#N with N from 1"));
        }
        Ok(KillAfter { point: point.to_string(), nth, seen: 0 })
    }
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
    /// Opens (creating it and its folder) the log at `path`.
    pub fn open(path: &Path) -> Result<Log, LogError> {
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
    pub fn in_memory() -> Result<Log, LogError> {
        Self::with(Connection::open_in_memory()?, None)
    }

    fn with(conn: Connection, path: Option<std::path::PathBuf>) -> Result<Log, LogError> {
        // Temporary tables and sorts stay in memory: the kernel sandbox grants no temporary
        // folder, and a session's log is small.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.execute_batch(SCHEMA)?;
        Ok(Log { conn, kill_after: None, path, on_append: None })
    }

    /// Takes the session's writer lock, or says who holds it.
    pub fn lock(&self, session: &str) -> Result<SessionLock, LogError> {
        let Some(path) = &self.path else {
            return Ok(SessionLock { _file: None });
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
            Ok(()) => Ok(SessionLock { _file: Some(file) }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LogError::Busy { session: session.to_string() }),
            Err(std::fs::TryLockError::Error(source)) => {
                Err(LogError::Io { what: format!("cannot lock session {session}"), hint: "", source })
            }
        }
    }

    /// True for a log on disk, whose commits wait for the disk; false for one in memory.
    pub fn on_disk(&self) -> bool {
        self.path.is_some()
    }

    /// Calls `hook(session, last seq)` after every commit.
    pub fn on_append(&mut self, hook: AppendHook) {
        self.on_append = Some(hook);
    }

    /// Arms the crash-test hook.
    pub fn kill_after(&mut self, hook: KillAfter) {
        self.kill_after = Some(hook);
    }

    /// Marks `point` reached; the armed hook kills the process here.
    pub fn reached(&mut self, point: &str) {
        if let Some(hook) = self.kill_after.as_mut().filter(|h| h.point == point) {
            hook.seen += 1;
            if hook.seen == hook.nth {
                // SAFETY: raise(2) with a valid signal number has no memory-safety preconditions.
                unsafe {
                    libc::raise(libc::SIGKILL);
                }
            }
        }
    }

    /// Appends `event` (scrubbed) to `session` and returns its sequence number once it is durable.
    pub fn append(&mut self, session: &str, event: Event) -> Result<u64, LogError> {
        self.append_all(session, vec![event])
    }

    /// Appends `events` (scrubbed) in one transaction: all are durable, or none. Returns the
    /// sequence number of the last.
    pub fn append_all(&mut self, session: &str, events: Vec<Event>) -> Result<u64, LogError> {
        self.insert(session, events.into_iter().map(Event::scrubbed).collect())
    }

    /// Appends `event` as it is, unscrubbed: what a log written by hand, or by a version from
    /// before the scrub, may hold. Only tests write such a log, to check the later guards.
    #[cfg(test)]
    pub(crate) fn append_unscrubbed(&mut self, session: &str, event: Event) -> Result<u64, LogError> {
        self.insert(session, vec![event])
    }

    /// Stores `events` in one transaction and wakes the followers.
    fn insert(&mut self, session: &str, events: Vec<Event>) -> Result<u64, LogError> {
        let at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut rows = Vec::with_capacity(events.len());
        for event in events {
            let body = serde_json::to_string(&event).map_err(|e| LogError::Corrupt {
                session: session.to_string(),
                seq: 0,
                detail: e.to_string(),
            })?;
            rows.push((event.kind(), body));
        }
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut seq: u64 = {
            let mut last = tx.prepare_cached("SELECT MAX(seq) FROM events WHERE session = ?1")?;
            let max: Option<i64> = last.query_row([session], |r| r.get(0)).optional()?.flatten();
            max.unwrap_or(0) as u64
        };
        {
            let mut insert =
                tx.prepare_cached("INSERT INTO events (session, seq, at_ms, kind, body) VALUES (?1, ?2, ?3, ?4, ?5)")?;
            for (kind, body) in &rows {
                seq += 1;
                insert.execute(params![session, seq as i64, at_ms as i64, kind, body])?;
            }
        }
        tx.commit()?;
        if let Some(hook) = &self.on_append {
            hook(session, seq);
        }
        for (kind, _) in &rows {
            self.reached(kind);
        }
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
            let event = serde_json::from_str(&body).map_err(|e| LogError::Corrupt {
                session: session.to_string(),
                seq: seq as u64,
                detail: e.to_string(),
            })?;
            out.push(Stored { seq: seq as u64, at_ms: at_ms as u64, event });
        }
        Ok(out)
    }

    /// Deletes every event of `session`: only for the ephemeral sessions of one-shot questions,
    /// in logs that live in memory. A log on disk never forgets.
    pub fn forget(&mut self, session: &str) -> Result<(), LogError> {
        if self.path.is_some() {
            return Err(LogError::AppendOnly);
        }
        self.conn.prepare_cached("DELETE FROM events WHERE session = ?1")?.execute([session])?;
        Ok(())
    }

    /// How many sessions had an event at or after `since_ms`.
    pub fn active_since(&self, since_ms: u64) -> Result<usize, LogError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT COUNT(*) FROM (SELECT session FROM events GROUP BY session HAVING MAX(at_ms) >= ?1)",
        )?;
        let n: i64 = stmt.query_row([since_ms as i64], |r| r.get(0))?;
        Ok(n as usize)
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
