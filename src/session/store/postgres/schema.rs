//! The session log's tables in PostgreSQL, versioned: `docs_agent_schema` holds the version,
//! and every replica brings the schema up to date at start, one at a time (a transaction-scoped
//! advisory lock), so two replicas starting together never migrate twice.

use tokio_postgres::Client;

use super::{LogError, database};

/// The advisory lock key migrations run under ("docs-agt" in ASCII).
const MIGRATION_LOCK: i64 = 0x646f_6373_2d61_6774;

/// The schema, by version: each entry moves a database from the version before it.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, their events, and the leases that keep one writer per session.
    "CREATE TABLE docs_agent_sessions (
        id text PRIMARY KEY,
        created_ms bigint NOT NULL,
        last_ms bigint NOT NULL,
        last_seq bigint NOT NULL
    );
    CREATE INDEX docs_agent_sessions_last_ms ON docs_agent_sessions (last_ms);
    CREATE TABLE docs_agent_events (
        session text NOT NULL REFERENCES docs_agent_sessions (id),
        seq bigint NOT NULL,
        at_ms bigint NOT NULL,
        kind text NOT NULL,
        body text NOT NULL,
        idem_key text UNIQUE,
        PRIMARY KEY (session, seq)
    );
    CREATE TABLE docs_agent_leases (
        session text PRIMARY KEY,
        holder text NOT NULL,
        token text NOT NULL,
        expires_at timestamptz NOT NULL
    );",
    // 2: whose session it is (its first event's principal), so a person's sessions are listed
    // from an index, the most recently active first.
    "ALTER TABLE docs_agent_sessions ADD COLUMN principal text;
    UPDATE docs_agent_sessions s SET principal = e.body::jsonb ->> 'principal'
        FROM docs_agent_events e WHERE e.session = s.id AND e.seq = 1 AND e.kind = 'session_started';
    CREATE INDEX docs_agent_sessions_principal ON docs_agent_sessions (principal, last_ms);",
];

/// The newest schema version this build knows.
pub fn newest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Brings the database's schema to the newest version, in one transaction under the migration
/// lock; refuses a database a newer docs-agent migrated.
pub async fn migrate(client: &mut Client) -> Result<(), LogError> {
    let what = "migrating the session database";
    // Up to date (every start but the first after an upgrade): only read, so a role without
    // CREATE on the schema starts as well.
    let current = client
        .query_one(
            "SELECT CASE WHEN to_regclass('docs_agent_schema') IS NULL THEN 0
                    ELSE (SELECT COALESCE(MAX(version), 0) FROM docs_agent_schema) END",
            &[],
        )
        .await;
    let known = newest();
    match current.map(|row| row.get::<_, i64>(0)) {
        Ok(version) if version == known => return Ok(()),
        Ok(version) if version > known => return Err(LogError::NewerSchema { found: version, known }),
        _ => {}
    }
    let tx = client.transaction().await.map_err(database(what))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(database(what))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS docs_agent_schema (version bigint NOT NULL)")
        .await
        .map_err(database(what))?;
    let row = tx.query_opt("SELECT version FROM docs_agent_schema", &[]).await.map_err(database(what))?;
    let version: i64 = row.map_or(0, |r| r.get(0));
    let known = newest();
    if version > known {
        return Err(LogError::NewerSchema { found: version, known });
    }
    for (step, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let what = format!("migrating the session database to schema version {}", step + 1);
        tx.batch_execute(migration).await.map_err(database(&what))?;
    }
    if version == 0 {
        tx.execute("INSERT INTO docs_agent_schema (version) VALUES ($1)", &[&known]).await.map_err(database(what))?;
    } else if version < known {
        tx.execute("UPDATE docs_agent_schema SET version = $1", &[&known]).await.map_err(database(what))?;
    }
    tx.commit().await.map_err(database(what))?;
    Ok(())
}
