//! The HTTP API's suite (tests/serve/suite.rs) on a PostgreSQL session log: a real server,
//! started for each test on 127.0.0.1 (`session.log_url`). Every session guarantee the suite
//! checks on SQLite holds here too.

mod common;
mod fake;

/// The suite's session log is on PostgreSQL.
const POSTGRES: bool = true;

#[path = "serve/suite.rs"]
mod suite;
