//! The HTTP API's suite (tests/serve/suite.rs) on the SQLite session log, the default.

mod common;
mod fake;

/// The suite's session log is the SQLite file.
const POSTGRES: bool = false;

#[path = "serve/suite.rs"]
mod suite;
