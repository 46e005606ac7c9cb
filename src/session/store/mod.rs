//! The append-only event log: one row per event, `(session, seq)` the key, in one of two
//! stores, chosen by configuration:
//! - [`sqlite`]: a file (the default) or memory;
//! - [`postgres`]: a PostgreSQL server that several `serve` replicas share
//!   (`session.log_url`).
//!
//! Both keep the same guarantees: an append is committed before it returns, so an event is
//! durable before its effect is acted on; a session's seqs are 1, 2, 3…; an effect's
//! idempotency key is unique in the table; one writer per session ([`SessionLock`]), released
//! when its holder dies. Events are scrubbed on the way in: the log never holds a secret.

pub mod postgres;
mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;

use super::event::Event;

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
    /// Forgetting a session was asked of a durable log, which never forgets.
    #[error("a durable session log is append-only; nothing is forgotten")]
    AppendOnly,
    /// The PostgreSQL server refused, failed or could not be reached (`what` names it without
    /// its password).
    #[error("session log: {what}: {detail}")]
    Database {
        /// What was being done, and on which database.
        what: String,
        /// The server's message, or why it could not be reached, and what to check.
        detail: String,
    },
    /// An effect's idempotency key is already in the log: the effect was recorded once, by
    /// another writer, and is not recorded again.
    #[error("`{key}` is already recorded in the session log; it is not recorded twice")]
    Duplicate {
        /// The key.
        key: String,
    },
    /// This writer's lease on the session lapsed and another replica took the session over:
    /// its appends are refused from then on.
    #[error(
        "session {session} was taken over by another docs-agent replica (this one's lease lapsed); it goes on there"
    )]
    LeaseLost {
        /// The session.
        session: String,
    },
    /// The log was made by a newer docs-agent, whose schema this one does not know.
    #[error(
        "the session log's schema is version {found}, newer than this docs-agent knows ({known}); upgrade docs-agent"
    )]
    NewerSchema {
        /// The log's version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
}

impl LogError {
    /// True when another writer holds the session now (another process, request or replica,
    /// or one that recorded the same effect first): the caller's turn to wait, not a fault.
    pub fn is_busy(&self) -> bool {
        matches!(self, LogError::Busy { .. } | LogError::LeaseLost { .. } | LogError::Duplicate { .. })
    }

    /// True when the process ran out of file descriptors (EMFILE) or the system did (ENFILE):
    /// a load to wait out, not a fault.
    pub fn out_of_descriptors(&self) -> bool {
        const EMFILE: i32 = 24;
        const ENFILE: i32 = 23;
        let exhausted = |e: &std::io::Error| e.raw_os_error().is_some_and(|code| code == EMFILE || code == ENFILE);
        match self {
            LogError::Io { source, .. } => exhausted(source),
            // SQLite says only that it cannot open a file: whether descriptors ran out is seen
            // by trying to open one.
            LogError::Sql { source: rusqlite::Error::SqliteFailure(e, _), .. }
                if e.code == rusqlite::ErrorCode::CannotOpen =>
            {
                std::fs::File::open("/dev/null").err().is_some_and(|e| exhausted(&e))
            }
            _ => false,
        }
    }
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

/// A handle on the log.
pub struct Log {
    /// The store behind it.
    db: Db,
    /// The crash-test hook, when set.
    kill_after: Option<KillAfter>,
    /// Told `(session, last seq)` after every commit (a server wakes the streams that follow it).
    on_append: Option<AppendHook>,
}

/// The store behind a handle.
enum Db {
    /// A SQLite file or memory.
    Sqlite(sqlite::Db),
    /// A PostgreSQL server.
    Postgres(postgres::Db),
}

/// The one writer of a session: held while a process drives or decides it, released when
/// dropped or when the process dies (an OS file lock, or a database lease that its holder
/// stops renewing), so a crash never leaves it stuck.
#[derive(Debug)]
pub struct SessionLock {
    /// What holds it.
    _held: Held,
}

/// What holds a session's writer lock.
#[derive(Debug)]
enum Held {
    /// Nothing to hold: a log in memory belongs to one process.
    Nothing,
    /// An OS lock on the session's lock file beside the SQLite log.
    File {
        /// Kept open for its lock.
        _file: std::fs::File,
    },
    /// A lease row in the PostgreSQL log.
    Lease {
        /// Released when dropped.
        _lease: postgres::Lease,
    },
}

impl SessionLock {
    fn none() -> SessionLock {
        SessionLock { _held: Held::Nothing }
    }

    fn file(file: std::fs::File) -> SessionLock {
        SessionLock { _held: Held::File { _file: file } }
    }

    fn lease(lease: postgres::Lease) -> SessionLock {
        SessionLock { _held: Held::Lease { _lease: lease } }
    }
}

/// One event on its way into the log: its kind, its JSON, and the idempotency key of the
/// effect it records, if it records one.
#[derive(Debug, Clone)]
pub struct Row {
    /// The event's kind.
    pub(super) kind: &'static str,
    /// The event as JSON.
    pub(super) body: String,
    /// The idempotency key of the effect it records.
    pub(super) key: Option<String>,
}

/// The store's part of the configuration: `session.log_url`, when set, is a `postgres://` URL
/// this store can use, and its CA file is readable (read here, so that a bad one is named
/// before anything starts).
pub fn check_config(config: &crate::config::SessionConfig) -> Result<(), crate::config::ConfigError> {
    let url = config.log_url.trim();
    if url.is_empty() {
        return Ok(());
    }
    let bad = |e: &dyn std::fmt::Display| {
        crate::config::ConfigError(format!("session.log_url (DOCS_AGENT_SESSION_LOG_URL): {e}"))
    };
    let target = postgres::Target::parse(url).map_err(|e| bad(&e))?;
    target.tls().check().map_err(|e| bad(&e))
}

/// Where the session log is, from the configuration.
#[derive(Debug, Clone)]
pub enum Location {
    /// A SQLite file (`session.log_path`).
    File(PathBuf),
    /// A PostgreSQL database (`session.log_url`), whose leases last `lease`.
    Postgres {
        /// The server and database.
        target: Box<postgres::Target>,
        /// How long a session's lease lasts unless renewed (`session.lease_secs`).
        lease: std::time::Duration,
    },
}

impl Location {
    /// Where `config` keeps sessions: `session.log_url` when set (checked by [`check_config`]
    /// when the configuration was loaded), else the SQLite file at `session.log_path`.
    pub fn of(config: &crate::config::SessionConfig) -> Location {
        let url = config.log_url.trim();
        match postgres::Target::parse(url) {
            Ok(target) if !url.is_empty() => Location::Postgres {
                target: Box::new(target),
                lease: std::time::Duration::from_secs(config.lease_secs),
            },
            _ => Location::File(config.log_path.clone()),
        }
    }

    /// The secret a log at this location is reached with (the database's password), to be
    /// redacted wherever it shows.
    pub fn password(&self) -> Option<String> {
        match self {
            Location::File(_) => None,
            Location::Postgres { target, .. } => {
                target.config().get_password().map(|p| String::from_utf8_lossy(p).into_owned())
            }
        }
    }

    /// How messages name it (a URL without its password).
    pub fn shown(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Postgres { target, .. } => target.shown().to_string(),
        }
    }
}

/// The session log, opened once per process: a SQLite file is opened again for each handle
/// (SQLite serialises the writers), a PostgreSQL store keeps one pool for all of them.
#[derive(Clone)]
pub enum Store {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(Arc<postgres::Store>),
}

impl Store {
    /// Opens the log at `location`: creates the SQLite file and its schema, or connects to
    /// PostgreSQL and creates or migrates its schema.
    pub fn open(location: &Location) -> Result<Store, LogError> {
        match location {
            Location::File(path) => {
                sqlite::Db::open(path)?;
                Ok(Store::File(path.clone()))
            }
            Location::Postgres { target, lease } => Ok(Store::Postgres(postgres::Store::connect(target, *lease)?)),
        }
    }

    /// A handle on the log (one per task or request).
    pub fn log(&self) -> Result<Log, LogError> {
        let db = match self {
            Store::File(path) => Db::Sqlite(sqlite::Db::open(path)?),
            Store::Postgres(store) => Db::Postgres(postgres::Db::new(store.clone())),
        };
        Ok(Log { db, kill_after: None, on_append: None })
    }

    /// Listens, until dropped, for what other replicas sharing a PostgreSQL log announce
    /// (`hear` must not block); a SQLite log has no other replicas: `None`.
    pub fn listen(&self, hear: Arc<dyn Fn(postgres::Heard) + Send + Sync>) -> Option<postgres::Listening> {
        match self {
            Store::File(_) => None,
            Store::Postgres(store) => Some(store.listen(hear)),
        }
    }

    /// True when several replicas may share it.
    pub fn shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// How messages name it (a URL without its password).
    pub fn shown(&self) -> String {
        match self {
            Store::File(path) => path.display().to_string(),
            Store::Postgres(store) => store.shown().to_string(),
        }
    }
}

/// Why a `DOCS_AGENT_TEST_KILL_AFTER` value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KillAfterError {
    /// What follows `#` is not a number.
    #[error("kill-after count `{count}` is not a number")]
    Count {
        /// The text after `#`.
        count: String,
    },
    /// No point, or a count of 0.
    #[error("kill-after `{spec}` must be POINT or POINT#N with N from 1")]
    Form {
        /// The whole value.
        spec: String,
    },
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
    pub fn parse(spec: &str) -> Result<KillAfter, KillAfterError> {
        let (point, nth) = match spec.split_once('#') {
            Some((point, n)) => (point, n.parse::<u32>().map_err(|_| KillAfterError::Count { count: n.to_string() })?),
            None => (spec, 1),
        };
        if point.is_empty() || nth == 0 {
            return Err(KillAfterError::Form { spec: spec.to_string() });
        }
        Ok(KillAfter { point: point.to_string(), nth, seen: 0 })
    }
}

/// A count of rows as SQL's LIMIT takes it (a 64-bit signed number).
fn row_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl Log {
    /// Opens (creating it and its folder) the SQLite log at `path`.
    pub fn open(path: &std::path::Path) -> Result<Log, LogError> {
        Ok(Log { db: Db::Sqlite(sqlite::Db::open(path)?), kill_after: None, on_append: None })
    }

    /// A log that lives only in memory (tests, one-shot questions).
    pub fn in_memory() -> Result<Log, LogError> {
        Ok(Log { db: Db::Sqlite(sqlite::Db::in_memory()?), kill_after: None, on_append: None })
    }

    /// Takes the session's writer lock, or says who holds it.
    pub fn lock(&self, session: &str) -> Result<SessionLock, LogError> {
        match &self.db {
            Db::Sqlite(db) => db.lock(session),
            Db::Postgres(db) => db.lock(session),
        }
    }

    /// True for a durable log, whose commits wait for a disk or a server; false for one in memory.
    pub fn on_disk(&self) -> bool {
        match &self.db {
            Db::Sqlite(db) => db.on_disk(),
            Db::Postgres(_) => true,
        }
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
        self.insert(session, events.into_iter().map(|e| (e.scrubbed(), None)).collect())
    }

    /// Appends `event` (scrubbed), which records the effect `key` names: refused with
    /// [`LogError::Duplicate`] when that key is already in the log, so the effect is recorded
    /// once, whoever tries again.
    pub fn append_once(&mut self, session: &str, key: &str, event: Event) -> Result<u64, LogError> {
        self.append_once_after(session, Vec::new(), key, event)
    }

    /// [`Log::append_once`], with `before` (scrubbed) in the same transaction, ahead of it:
    /// the hook decisions about the effect are recorded with it or not at all.
    pub fn append_once_after(
        &mut self,
        session: &str,
        before: Vec<Event>,
        key: &str,
        event: Event,
    ) -> Result<u64, LogError> {
        let mut rows: Vec<(Event, Option<String>)> = before.into_iter().map(|e| (e.scrubbed(), None)).collect();
        rows.push((event.scrubbed(), Some(key.to_string())));
        self.insert(session, rows)
    }

    /// Appends `event` as it is, unscrubbed: what a log written by hand, or by a version from
    /// before the scrub, may hold. Only tests write such a log, to check the later guards.
    #[cfg(test)]
    pub(crate) fn append_unscrubbed(&mut self, session: &str, event: Event) -> Result<u64, LogError> {
        self.insert(session, vec![(event, None)])
    }

    /// Stores `events` in one transaction and wakes the followers.
    fn insert(&mut self, session: &str, events: Vec<(Event, Option<String>)>) -> Result<u64, LogError> {
        let at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut rows = Vec::with_capacity(events.len());
        for (event, key) in events {
            let body = serde_json::to_string(&event).map_err(|e| LogError::Corrupt {
                session: session.to_string(),
                seq: 0,
                detail: e.to_string(),
            })?;
            rows.push(Row { kind: event.kind(), body, key });
        }
        let seq = match &mut self.db {
            Db::Sqlite(db) => db.insert(session, at_ms, &rows)?,
            Db::Postgres(db) => db.insert(session, at_ms, &rows)?,
        };
        if let Some(hook) = &self.on_append {
            hook(session, seq);
        }
        for row in &rows {
            self.reached(row.kind);
        }
        Ok(seq)
    }

    /// Every event of `session` after `after` (0 for all), in order.
    pub fn events_after(&self, session: &str, after: u64) -> Result<Vec<Stored>, LogError> {
        let rows = match &self.db {
            Db::Sqlite(db) => db.rows_after(session, after)?,
            Db::Postgres(db) => db.rows_after(session, after)?,
        };
        rows.into_iter()
            .map(|(seq, at_ms, body)| {
                let event = serde_json::from_str(&body).map_err(|e| LogError::Corrupt {
                    session: session.to_string(),
                    seq,
                    detail: e.to_string(),
                })?;
                Ok(Stored { seq, at_ms, event })
            })
            .collect()
    }

    /// Deletes every event of `session`: only for the ephemeral sessions of one-shot questions,
    /// in logs that live in memory. A durable log never forgets.
    pub fn forget(&mut self, session: &str) -> Result<(), LogError> {
        match &mut self.db {
            Db::Sqlite(db) => db.forget(session),
            Db::Postgres(_) => Err(LogError::AppendOnly),
        }
    }

    /// How many sessions are open: active at or after `since_ms` and not closed; only
    /// `principal`'s when one is named.
    pub fn open_sessions(&self, since_ms: u64, principal: Option<&str>) -> Result<usize, LogError> {
        match &self.db {
            Db::Sqlite(db) => db.open_sessions(since_ms, principal),
            Db::Postgres(db) => db.open_sessions(since_ms, principal),
        }
    }

    /// The sessions whose writer lease lapsed (PostgreSQL: their replica died while driving
    /// them); a SQLite lock dies with its process and leaves nothing behind.
    pub fn lapsed(&self) -> Result<Vec<String>, LogError> {
        match &self.db {
            Db::Sqlite(_) => Ok(Vec::new()),
            Db::Postgres(db) => db.lapsed(),
        }
    }

    /// Asks another replica that drives `session` to cancel its turn; true when one does (a
    /// SQLite log has no other replica).
    pub fn cancel_elsewhere(&self, session: &str) -> Result<bool, LogError> {
        match &self.db {
            Db::Sqlite(_) => Ok(false),
            Db::Postgres(db) => db.cancel_elsewhere(session),
        }
    }

    /// The ids of the sessions with an event at or after `since_ms`.
    pub fn active_ids_since(&self, since_ms: u64) -> Result<Vec<String>, LogError> {
        match &self.db {
            Db::Sqlite(db) => db.active_ids_since(since_ms),
            Db::Postgres(db) => db.active_ids_since(since_ms),
        }
    }

    /// The ids of the sessions `principal` started (over HTTP), the most recently active first,
    /// at most `limit` of them.
    pub fn started_by(&self, principal: &str, limit: usize) -> Result<Vec<String>, LogError> {
        match &self.db {
            Db::Sqlite(db) => db.started_by(principal, limit),
            Db::Postgres(db) => db.started_by(principal, limit),
        }
    }

    /// The ids of every session in the log.
    pub fn sessions(&self) -> Result<Vec<String>, LogError> {
        match &self.db {
            Db::Sqlite(db) => db.sessions(),
            Db::Postgres(db) => db.sessions(),
        }
    }

    /// The raw stored text of every event of `session` (for checks that nothing secret is stored).
    pub fn raw_bodies(&self, session: &str) -> Result<Vec<String>, LogError> {
        let rows = match &self.db {
            Db::Sqlite(db) => db.rows_after(session, 0)?,
            Db::Postgres(db) => db.rows_after(session, 0)?,
        };
        Ok(rows.into_iter().map(|(_, _, body)| body).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{KillAfter, KillAfterError};

    /// Each way a kill-after value is refused, and its message.
    #[test]
    fn kill_after_values_are_read_or_refused() {
        assert_eq!(KillAfter::parse("tool_result#2").map(|k| (k.point, k.nth)), Ok(("tool_result".into(), 2)));
        assert_eq!(KillAfter::parse("write").map(|k| (k.point, k.nth)), Ok(("write".into(), 1)));
        #[rustfmt::skip]
        let cases = [
            ("write#two", KillAfterError::Count { count: "two".into() }, "kill-after count `two` is not a number"),
            ("write#0", KillAfterError::Form { spec: "write#0".into() },
             "kill-after `write#0` must be POINT or POINT#N with N from 1"),
            ("#3", KillAfterError::Form { spec: "#3".into() }, "kill-after `#3` must be POINT or POINT#N with N from 1"),
        ];
        for (spec, want, message) in cases {
            assert_eq!(KillAfter::parse(spec), Err(want.clone()), "{spec}");
            assert_eq!(want.to_string(), message, "{spec}");
        }
    }
}
