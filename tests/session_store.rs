//! The session log's guarantees, held the same by both stores (a SQLite file, a real
//! PostgreSQL server started for the test): order and seqs per session, many writers at once,
//! an effect recorded once by its idempotency key, one writer per session, a schema that a
//! second opening leaves as it is, and a PostgreSQL password never shown.

mod common;

use std::time::Duration;

use common::postgres::{Cluster, PASSWORD};
use docs_agent::session::event::Event;
use docs_agent::session::store::postgres::Target;
use docs_agent::session::store::{Location, LogError, Store};
use docs_agent::tools::Decision;

/// A store of each kind, with what keeps it alive.
enum Kind {
    Sqlite(tempfile::TempDir),
    Postgres(Cluster),
}

impl Kind {
    /// SQLite, and PostgreSQL when it is installed (skipped otherwise: `common::available`).
    fn both() -> Vec<Kind> {
        let mut kinds = vec![Kind::Sqlite(tempfile::tempdir().expect("tempdir"))];
        kinds.extend(Cluster::start_or_skip().map(Kind::Postgres));
        kinds
    }

    fn location(&self) -> Location {
        match self {
            Kind::Sqlite(dir) => Location::File(dir.path().join("sessions.db")),
            Kind::Postgres(cluster) => Location::Postgres {
                target: Box::new(Target::parse(&cluster.url()).expect("url")),
                lease: Duration::from_secs(3),
            },
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Kind::Sqlite(_) => "sqlite",
            Kind::Postgres(_) => "postgres",
        }
    }
}

fn user(text: &str) -> Event {
    Event::UserMessage { text: text.to_string() }
}

#[test]
fn appends_are_ordered_per_session_and_read_back_from_a_second_opening() {
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let mut log = store.log().expect("log");
        assert_eq!(log.append("s-a", user("one")).expect("append"), 1, "{}", kind.name());
        assert_eq!(log.append("s-b", user("other")).expect("append"), 1, "{}", kind.name());
        assert_eq!(log.append_all("s-a", vec![user("two"), user("three")]).expect("append"), 3, "{}", kind.name());
        // A second opening (another replica) sees the same log, and the schema is left as it is.
        let again = Store::open(&kind.location()).expect("reopen").log().expect("log");
        let texts: Vec<String> = again
            .events_after("s-a", 1)
            .expect("read")
            .into_iter()
            .map(|s| match s.event {
                Event::UserMessage { text } => format!("{}:{text}", s.seq),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(texts, ["2:two", "3:three"], "{}", kind.name());
        assert_eq!(again.sessions().expect("sessions"), ["s-a", "s-b"], "{}", kind.name());
        assert_eq!(again.open_sessions(0, None).expect("open"), 2, "{}", kind.name());
        assert_eq!(again.open_sessions(u64::MAX / 2, None).expect("open"), 0, "{}", kind.name());
    }
}

/// Open sessions are counted in the log, for everyone or one principal, and a closed one no
/// longer counts, on both stores.
#[test]
fn open_sessions_count_by_principal_and_leave_out_closed_ones() {
    let started = |principal: &str| Event::SessionStarted {
        model: "m".into(),
        workspace: "w".into(),
        config_fingerprint: "f".into(),
        principal: Some(principal.into()),
        collection: None,
    };
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let mut log = store.log().expect("log");
        for (id, who) in [("s-1", "ana"), ("s-2", "ana"), ("s-3", "bo")] {
            log.append(id, started(who)).expect("append");
        }
        let count = |principal: Option<&str>| log.open_sessions(0, principal).expect("count");
        assert_eq!(
            (count(None), count(Some("ana")), count(Some("bo")), count(Some("cy"))),
            (3, 2, 1, 0),
            "{}",
            kind.name()
        );
        log.append("s-1", Event::SessionClosed { by: "ana".into() }).expect("close");
        let count = |principal: Option<&str>| log.open_sessions(0, principal).expect("count");
        assert_eq!((count(None), count(Some("ana"))), (2, 1), "{}: a closed session no longer counts", kind.name());
    }
}

/// Eight writers append to one session at once (as handlers without its lock may): every seq
/// from 1 to 80 is there once.
#[test]
fn concurrent_appends_never_share_or_skip_a_seq() {
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let store = store.clone();
                std::thread::spawn(move || {
                    let mut log = store.log().expect("log");
                    for i in 0..10 {
                        log.append("s-many", user(&format!("{w}-{i}"))).expect("append");
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        let seqs: Vec<u64> =
            store.log().expect("log").events_after("s-many", 0).expect("read").iter().map(|s| s.seq).collect();
        assert_eq!(seqs, (1..=80).collect::<Vec<u64>>(), "{}", kind.name());
    }
}

/// A write's result carries its idempotency key: the second record of it is refused, and
/// nothing of it is stored.
#[test]
fn an_effect_is_recorded_once_by_its_key() {
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let mut log = store.log().expect("log");
        let result =
            || Event::ToolResult { call_id: "c1".into(), text: "OK: written".into(), decision: Decision::Allowed };
        log.append_once("s-w", "s-w/3/c1", result()).expect("first");
        let mut other = store.log().expect("another handle");
        match other.append_once("s-w", "s-w/3/c1", result()) {
            Err(LogError::Duplicate { key }) => assert_eq!(key, "s-w/3/c1"),
            other => panic!("{}: the second record must be refused, got {other:?}", kind.name()),
        }
        assert_eq!(log.events_after("s-w", 0).expect("read").len(), 1, "{}", kind.name());
        // Another key goes in.
        log.append_once("s-w", "s-w/5/c1", result()).expect("another effect");
    }
}

/// One writer per session: a second lock is refused while the first is held, and taken once it
/// is released. On PostgreSQL, appending without the lease while another holder's is live is
/// refused too.
#[test]
fn one_writer_per_session() {
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let mut first = store.log().expect("log");
        let second = Store::open(&kind.location()).expect("a second replica").log().expect("log");
        let held = first.lock("s-l").expect("the lock");
        assert!(matches!(second.lock("s-l"), Err(LogError::Busy { .. })), "{}", kind.name());
        first.append("s-l", user("mine")).expect("the holder appends");
        if let Kind::Postgres(_) = kind {
            let mut third = store.log().expect("log");
            assert!(matches!(third.append("s-l", user("not mine")), Err(LogError::Busy { .. })));
        }
        drop(held);
        let _mine = second.lock("s-l").expect("free once released");
    }
}

/// A PostgreSQL lease held by a replica that stops renewing it (a dead one) lapses after
/// `lease_secs`; then another replica takes the session over, and the old holder's appends are
/// refused.
#[test]
fn a_lapsed_lease_is_taken_over_and_its_old_holder_is_refused() {
    let Some(cluster) = Cluster::start_or_skip() else { return };
    let kind = Kind::Postgres(cluster);
    let store = Store::open(&kind.location()).expect("open");
    let mut old = store.log().expect("log");
    let held = old.lock("s-t").expect("the lease");
    old.append("s-t", user("before")).expect("append");
    let Kind::Postgres(cluster) = &kind else { unreachable!() };
    // The holder stops renewing, as a dead replica does: its lease runs out.
    cluster.psql("UPDATE docs_agent_leases SET expires_at = now() - interval '1 second' WHERE session = 's-t'");
    let other = Store::open(&kind.location()).expect("another replica").log().expect("log");
    let _taken = other.lock("s-t").expect("a lapsed lease is taken over");
    match old.append("s-t", user("after")) {
        Err(e @ LogError::LeaseLost { .. }) => assert!(e.to_string().contains("taken over"), "{e}"),
        other => panic!("the old holder must be refused, got {other:?}"),
    }
    drop(held);
    assert_eq!(old.events_after("s-t", 0).expect("read").len(), 1);
    assert_eq!(
        cluster.psql("SELECT count(*) FROM docs_agent_leases WHERE session = 's-t'"),
        "1",
        "the new lease stays"
    );
}

/// A database a newer docs-agent migrated is refused with what to do; a URL's password is
/// never in an error.
#[test]
fn a_newer_schema_is_refused_and_the_password_never_shown() {
    let Some(cluster) = Cluster::start_or_skip() else { return };
    let kind = Kind::Postgres(cluster);
    Store::open(&kind.location()).expect("open");
    let Kind::Postgres(cluster) = &kind else { unreachable!() };
    cluster.psql("UPDATE docs_agent_schema SET version = 99");
    let error = Store::open(&kind.location()).err().expect("refused").to_string();
    assert!(error.contains("version 99") && error.contains("upgrade docs-agent"), "{error}");
    // Nothing listens on this port: the error names the server, not the password.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let target = Target::parse(&format!("postgres://docs:{PASSWORD}@127.0.0.1:{port}/postgres")).expect("url");
    let error = Store::open(&Location::Postgres { target: Box::new(target), lease: Duration::from_secs(3) })
        .err()
        .expect("no server")
        .to_string();
    assert!(error.contains(&format!("127.0.0.1:{port}")) && !error.contains(PASSWORD), "{error}");
}

/// A SQLite log made by the version before schema versions (no idempotency keys) opens with its
/// events, and takes keys from then on; an up-to-date log is opened without being written.
#[test]
fn a_sqlite_log_from_before_versions_is_migrated_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        conn.execute_batch(
            "CREATE TABLE events (session TEXT NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER NOT NULL,
               kind TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;",
        )
        .expect("the old schema");
        let body = serde_json::to_string(&user("from before")).expect("json");
        conn.execute("INSERT INTO events VALUES ('s-old', 1, 1, 'user_message', ?1)", [body]).expect("an old event");
    }
    let store = Store::open(&Location::File(path.clone())).expect("open");
    let mut log = store.log().expect("log");
    assert_eq!(log.events_after("s-old", 0).expect("read").len(), 1);
    let result = || Event::ToolResult { call_id: "c1".into(), text: "OK".into(), decision: Decision::Allowed };
    assert_eq!(log.append_once("s-old", "s-old/1/c1", result()).expect("keyed"), 2);
    assert!(matches!(log.append_once("s-old", "s-old/1/c1", result()), Err(LogError::Duplicate { .. })));
    let version: i64 = rusqlite::Connection::open(&path)
        .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
        .expect("version");
    assert_eq!(version, 4);
    // Opening it again writes nothing: the WAL does not grow.
    let wal = path.with_extension("db-wal");
    let before = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    for _ in 0..3 {
        drop(store.log().expect("another handle"));
    }
    assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), before, "an up-to-date log is only read");
}

/// A person's sessions are listed the most recently active first, from either store, as are the
/// sessions active since a time; a
/// PostgreSQL database from before sessions had an owner column learns each session's owner
/// when it is migrated.
#[test]
fn a_persons_sessions_are_listed_latest_first_and_a_migration_finds_their_owners() {
    let started = |principal: &str| Event::SessionStarted {
        model: "m".into(),
        workspace: "/ws".into(),
        config_fingerprint: "f".into(),
        principal: Some(principal.to_string()),
        collection: None,
    };
    for kind in Kind::both() {
        let store = Store::open(&kind.location()).expect("open");
        let mut log = store.log().expect("log");
        for (id, who) in [("s-a1", "ana"), ("s-b1", "bo"), ("s-a2", "ana")] {
            log.append(id, started(who)).expect("start");
        }
        // A session without an owner (the CLI's); s-a1 is active last (a tie in time goes by id).
        log.append("s-cli", user("local")).expect("local");
        log.append("s-a1", user("later")).expect("later");
        assert_eq!(log.started_by("ana", 10).expect("list"), ["s-a1", "s-a2"], "{}", kind.name());
        assert_eq!(log.started_by("ana", 1).expect("list"), ["s-a1"], "{}", kind.name());
        assert_eq!(log.started_by("bo", 10).expect("list"), ["s-b1"], "{}", kind.name());
        assert!(log.started_by("nobody", 10).expect("list").is_empty());
        // What was active since a time: every session since the start, none from the future.
        assert_eq!(log.active_ids_since(0).expect("recent"), ["s-a1", "s-a2", "s-b1", "s-cli"], "{}", kind.name());
        assert!(log.active_ids_since(i64::MAX as u64).expect("recent").is_empty());
        if let Kind::Postgres(cluster) = &kind {
            cluster.psql(
                "ALTER TABLE docs_agent_sessions DROP COLUMN principal; UPDATE docs_agent_schema SET version = 1",
            );
            let log = Store::open(&kind.location()).expect("migrated").log().expect("log");
            assert_eq!(log.started_by("ana", 10).expect("list"), ["s-a1", "s-a2"], "after the migration");
            assert_eq!(cluster.psql("SELECT version FROM docs_agent_schema"), "2");
        }
    }
}
