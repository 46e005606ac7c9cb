//! The session log on a PostgreSQL server (`session.log_url = "postgres://…"`), shared by every
//! `serve` replica: the same events and guarantees as the SQLite log.
//! - An append is one transaction, committed (`synchronous_commit = on`) before it returns: an
//!   event is durable before its effect.
//! - Appends to a session are serialised by a row lock on the session, so its seqs are 1, 2, 3…
//!   with `(session, seq)` the key; an effect's idempotency key is unique in the table.
//! - One writer per session across replicas: a lease row ([`lease`]) that its holder renews
//!   and that expires when a replica dies; every append checks it in its transaction.
//!
//! The rest of the harness calls the log synchronously, as it calls SQLite. The connection pool
//! lives on a runtime of its own, on one thread, and a call waits for its answer there: no
//! caller's runtime is ever blocked on from inside (which tokio forbids).

mod lease;
mod notify;
mod schema;
mod target;
mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;

pub use lease::Lease;
pub use notify::{Heard, Listening};
pub use target::{Target, TargetError};
pub use tls::{SslMode, TlsParamsError, TlsSetupError};

use super::{LogError, Row, SessionLock};

/// Connections each replica keeps at most (turns, followers and handlers share them).
const POOL_SIZE: usize = 16;

/// The longest a call to the database may take, connection included.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// How long a call waits for a free connection, or for a new one to open.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// A replica's connection to the database: the pool, and the thread that drives it.
pub struct Store {
    /// Where (shown without its password).
    target: Target,
    /// The pool.
    pool: Pool,
    /// TLS for a connection of its own (notifications), as the pool's.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    /// The runtime the pool's connections live on.
    handle: tokio::runtime::Handle,
    /// Dropped with the store: the runtime's thread then ends.
    _stop: tokio::sync::oneshot::Sender<()>,
    /// How long a lease lasts without renewal.
    lease: Duration,
    /// This replica, as lease holders are named: `host:pid`.
    holder: String,
}

impl Store {
    /// Connects to `target`, checks that the server answers, and creates or migrates the
    /// schema. Session leases last `lease` unless renewed.
    pub fn connect(target: &Target, lease: Duration) -> Result<Arc<Store>, LogError> {
        let tls = target.tls().connector().map_err(|e| LogError::Database {
            what: format!("cannot set up TLS to {}", target.shown()),
            detail: format!("session.log_url {e}"),
        })?;
        let (handle, stop) = runtime_thread()?;
        let manager = Manager::from_config(
            target.config().clone(),
            tls.clone(),
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_WAIT))
            .create_timeout(Some(CONNECT_WAIT))
            .build()
            .map_err(|e| LogError::Database {
                what: format!("cannot set up the connection pool for {}", target.shown()),
                detail: e.to_string(),
            })?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let holder = format!("{}:{}", host.trim(), std::process::id());
        let store = Store { target: target.clone(), pool, tls, handle, _stop: stop, lease, holder };
        store
            .run(|pool, shown| async move {
                let mut client = get(&pool, &shown).await?;
                schema::migrate(&mut client).await
            })
            .map_err(|e| match e {
                LogError::Database { what, detail } => match target.tls().hint(&detail) {
                    Some(hint) => LogError::Database { what, detail: format!("{detail}; {hint}") },
                    None => LogError::Database { what, detail },
                },
                other => other,
            })?;
        Ok(Arc::new(store))
    }

    /// Listens for what other replicas announce (appends, cancels) until dropped.
    pub fn listen(&self, hear: Arc<dyn Fn(Heard) + Send + Sync>) -> Listening {
        notify::listen(self, hear)
    }

    /// Where the log is, without the password: `postgres://user@host:port/db`.
    pub fn shown(&self) -> &str {
        self.target.shown()
    }

    /// Runs `work` with the pool on the store's runtime and waits for its result (from any
    /// thread, inside a runtime or not), at most [`CALL_LIMIT`].
    fn run<T, F, Fut>(&self, work: F) -> Result<T, LogError>
    where
        T: Send + 'static,
        F: FnOnce(Pool, String) -> Fut,
        Fut: Future<Output = Result<T, LogError>> + Send + 'static,
    {
        self.run_within(CALL_LIMIT, work)
    }

    /// [`Store::run`], waiting at most `limit`: past it the work is dropped (its transaction
    /// rolled back) and the call fails.
    fn run_within<T, F, Fut>(&self, limit: Duration, work: F) -> Result<T, LogError>
    where
        T: Send + 'static,
        F: FnOnce(Pool, String) -> Fut,
        Fut: Future<Output = Result<T, LogError>> + Send + 'static,
    {
        if tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == self.handle.id()) {
            return Err(LogError::Database {
                what: "a session log call".into(),
                detail: "it was made from the database thread itself, which would wait forever".into(),
            });
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let shown = self.target.shown().to_string();
        let future = work(self.pool.clone(), shown.clone());
        self.handle.spawn(async move {
            let done = match tokio::time::timeout(limit, future).await {
                Ok(done) => done,
                Err(_) => Err(LogError::Database {
                    what: format!("the session database {shown}"),
                    detail: format!(
                        "no answer within {} s; check that the server runs and is not locked up",
                        limit.as_secs()
                    ),
                }),
            };
            let _ = tx.send(done);
        });
        rx.recv().map_err(|_| LogError::Database {
            what: format!("the session database {}", self.target.shown()),
            detail: "its connection thread stopped; restart docs-agent".into(),
        })?
    }
}

/// Starts the thread whose runtime drives the pool's connections; it ends when the returned
/// sender is dropped.
fn runtime_thread() -> Result<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>), LogError> {
    let failed = |detail: String| LogError::Database { what: "cannot start the database thread".into(), detail };
    let (handle_tx, handle_rx) = std::sync::mpsc::sync_channel(1);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("docs-agent-postgres".into())
        .spawn(move || match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => {
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async move {
                    let _ = stopped.await;
                });
            }
            Err(e) => {
                let _ = handle_tx.send(Err(e.to_string()));
            }
        })
        .map_err(|e| failed(e.to_string()))?;
    let handle = handle_rx.recv().map_err(|_| failed("it ended at once".into()))?.map_err(failed)?;
    Ok((handle, stop))
}

/// A connection from the pool, or why there is none.
async fn get(pool: &Pool, shown: &str) -> Result<deadpool_postgres::Object, LogError> {
    pool.get().await.map_err(|e| {
        let detail = match e {
            deadpool_postgres::PoolError::Backend(e) => describe(&e),
            deadpool_postgres::PoolError::Timeout(_) => {
                format!("no connection within {} s", CONNECT_WAIT.as_secs())
            }
            other => other.to_string(),
        };
        LogError::Database {
            what: format!("cannot reach the session database {shown}"),
            detail: format!("{detail}; check session.log_url (DOCS_AGENT_SESSION_LOG_URL) and that the server runs"),
        }
    })
}

/// What went wrong, with the server's own message when it sent one.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
    }
}

/// Maps a database error met while doing `what`.
fn database(what: &str) -> impl Fn(tokio_postgres::Error) -> LogError + '_ {
    move |e| LogError::Database { what: what.to_string(), detail: describe(&e) }
}

/// One handle on the log: the shared store, and the leases this handle holds.
pub struct Db {
    /// The replica's store.
    store: Arc<Store>,
    /// Session → lease token, for the sessions this handle holds the writer lease of.
    held: Arc<Mutex<HashMap<String, String>>>,
}

impl Db {
    /// A handle on `store`.
    pub fn new(store: Arc<Store>) -> Db {
        Db { store, held: Arc::default() }
    }

    /// Takes the session's writer lease, or says that another replica or task holds it.
    pub fn lock(&self, session: &str) -> Result<SessionLock, LogError> {
        let lease = Lease::take(&self.store, session, &self.held)?;
        Ok(SessionLock::lease(lease))
    }

    /// Stores `rows` after the session's last event in one transaction, under its lease when
    /// this handle holds it (and refused while another holder's lease is live); returns the
    /// last seq.
    pub fn insert(&mut self, session: &str, at_ms: u64, rows: &[Row]) -> Result<u64, LogError> {
        let token = self.held.lock().unwrap_or_else(|p| p.into_inner()).get(session).cloned();
        let session = session.to_string();
        let rows = rows.to_vec();
        self.store.run(move |pool, shown| async move {
            let what = format!("appending to session {session} in {shown}");
            let mut client = get(&pool, &shown).await?;
            let tx = client.transaction().await.map_err(database(&what))?;
            let at = at_ms as i64;
            let new = tx
                .prepare_cached(
                    "INSERT INTO docs_agent_sessions (id, created_ms, last_ms, last_seq) VALUES ($1, $2, $2, 0)
                     ON CONFLICT (id) DO NOTHING",
                )
                .await
                .map_err(database(&what))?;
            tx.execute(&new, &[&session, &at]).await.map_err(database(&what))?;
            // The session's row lock serialises its appends, on every replica.
            let last = tx
                .prepare_cached("SELECT last_seq FROM docs_agent_sessions WHERE id = $1 FOR UPDATE")
                .await
                .map_err(database(&what))?;
            let mut seq: i64 = tx.query_one(&last, &[&session]).await.map_err(database(&what))?.get(0);
            lease::check(&tx, &session, token.as_deref()).await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO docs_agent_events (session, seq, at_ms, kind, body, idem_key)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await
                .map_err(database(&what))?;
            for row in &rows {
                seq += 1;
                // Whose session it is, kept on its row, so that listing a person's sessions is
                // an index lookup.
                if seq == 1 && row.kind == "session_started" {
                    let owner = tx
                        .prepare_cached(
                            "UPDATE docs_agent_sessions SET principal = $2::text::jsonb ->> 'principal' WHERE id = $1",
                        )
                        .await
                        .map_err(database(&what))?;
                    tx.execute(&owner, &[&session, &row.body]).await.map_err(database(&what))?;
                }
                let inserted = tx.execute(&insert, &[&session, &seq, &at, &row.kind, &row.body, &row.key]).await;
                match (inserted, &row.key) {
                    (Err(e), Some(key)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                        return Err(LogError::Duplicate { key: key.clone() });
                    }
                    (inserted, _) => {
                        inserted.map_err(database(&what))?;
                    }
                }
            }
            let moved = tx
                .prepare_cached("UPDATE docs_agent_sessions SET last_seq = $2, last_ms = $3 WHERE id = $1")
                .await
                .map_err(database(&what))?;
            tx.execute(&moved, &[&session, &seq, &at]).await.map_err(database(&what))?;
            // Told to every replica's followers at the commit, never before.
            let told = format!("{session} {seq}");
            tx.execute("SELECT pg_notify($1, $2)", &[&notify::EVENTS, &told]).await.map_err(database(&what))?;
            tx.commit().await.map_err(database(&what))?;
            Ok(seq as u64)
        })
    }

    /// `(seq, at_ms, body)` of every event of `session` after `after`, in order.
    pub fn rows_after(&self, session: &str, after: u64) -> Result<Vec<(u64, u64, String)>, LogError> {
        let session = session.to_string();
        self.store.run(move |pool, shown| async move {
            let what = format!("reading session {session} in {shown}");
            let client = get(&pool, &shown).await?;
            let query = client
                .prepare_cached(
                    "SELECT seq, at_ms, body FROM docs_agent_events WHERE session = $1 AND seq > $2 ORDER BY seq",
                )
                .await
                .map_err(database(&what))?;
            let rows = client.query(&query, &[&session, &(after as i64)]).await.map_err(database(&what))?;
            Ok(rows.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64, r.get(2))).collect())
        })
    }

    /// How many sessions are open: active at or after `since_ms`, none closing them; only
    /// those `principal` started when one is named.
    pub fn open_sessions(&self, since_ms: u64, principal: Option<&str>) -> Result<usize, LogError> {
        let principal = principal.map(str::to_string);
        self.store.run(move |pool, shown| async move {
            let what = format!("counting open sessions in {shown}");
            let client = get(&pool, &shown).await?;
            let query = client
                .prepare_cached(
                    "SELECT count(*) FROM docs_agent_sessions s
                     WHERE s.last_ms >= $1 AND ($2::text IS NULL OR s.principal = $2)
                       AND NOT EXISTS (SELECT 1 FROM docs_agent_events e
                                       WHERE e.session = s.id AND e.kind = 'session_closed')",
                )
                .await
                .map_err(database(&what))?;
            let n: i64 =
                client.query_one(&query, &[&(since_ms as i64), &principal]).await.map_err(database(&what))?.get(0);
            Ok(n as usize)
        })
    }

    /// The sessions whose writer lease has lapsed: their replica died or lost the database
    /// while it drove them.
    pub fn lapsed(&self) -> Result<Vec<String>, LogError> {
        self.store.run(move |pool, shown| async move {
            let what = format!("looking for lapsed leases in {shown}");
            let client = get(&pool, &shown).await?;
            let rows = client
                .query("SELECT session FROM docs_agent_leases WHERE expires_at <= now() ORDER BY session", &[])
                .await
                .map_err(database(&what))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Asks the replica that holds `session`'s live lease, if one does, to cancel its turn;
    /// true when one was asked.
    pub fn cancel_elsewhere(&self, session: &str) -> Result<bool, LogError> {
        let session = session.to_string();
        self.store.run(move |pool, shown| async move {
            let what = format!("asking for a cancel of session {session} in {shown}");
            let client = get(&pool, &shown).await?;
            let asked = client
                .query(
                    "SELECT pg_notify($2, session) FROM docs_agent_leases WHERE session = $1 AND expires_at > now()",
                    &[&session, &notify::CANCEL],
                )
                .await
                .map_err(database(&what))?;
            Ok(!asked.is_empty())
        })
    }

    /// The ids of the sessions with an event at or after `since_ms`.
    pub fn active_ids_since(&self, since_ms: u64) -> Result<Vec<String>, LogError> {
        self.store.run(move |pool, shown| async move {
            let what = format!("listing the recent sessions in {shown}");
            let client = get(&pool, &shown).await?;
            let query = client
                .prepare_cached("SELECT id FROM docs_agent_sessions WHERE last_ms >= $1 ORDER BY id")
                .await
                .map_err(database(&what))?;
            let rows = client.query(&query, &[&(since_ms as i64)]).await.map_err(database(&what))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The ids of the sessions `principal` started, the most recently active first, at most
    /// `limit` of them.
    pub fn started_by(&self, principal: &str, limit: usize) -> Result<Vec<String>, LogError> {
        let principal = principal.to_string();
        self.store.run(move |pool, shown| async move {
            let what = format!("listing {principal}'s sessions in {shown}");
            let client = get(&pool, &shown).await?;
            let query = client
                .prepare_cached(
                    "SELECT id FROM docs_agent_sessions WHERE principal = $1 ORDER BY last_ms DESC, id LIMIT $2",
                )
                .await
                .map_err(database(&what))?;
            let rows = client.query(&query, &[&principal, &super::row_limit(limit)]).await.map_err(database(&what))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The ids of every session in the log.
    pub fn sessions(&self) -> Result<Vec<String>, LogError> {
        self.store.run(move |pool, shown| async move {
            let what = format!("listing the sessions in {shown}");
            let client = get(&pool, &shown).await?;
            let rows =
                client.query("SELECT id FROM docs_agent_sessions ORDER BY id", &[]).await.map_err(database(&what))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}
