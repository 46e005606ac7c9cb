//! Durable sessions (issue 4, in progress): the append-only event log is the session's state,
//! and the messages sent to the model are a projection of it. This module holds the event
//! types, the SQLite log and the projection; the CLI and the loop do not use it yet.

pub mod event;
pub mod projection;
pub mod store;
