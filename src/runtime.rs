//! The async runtimes, built in one place: one thread for what the command line runs (a
//! question, a chat, a session's turn, a health check), a pool of workers for the HTTP service.

use std::fmt;

/// Which runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// One thread: the command line, and the eval runner's questions.
    OneThread,
    /// One worker per core: `docs-agent serve`.
    Workers,
}

/// The runtime could not start (the OS refused a thread or an event queue).
#[derive(Debug)]
pub struct RuntimeError(std::io::Error);

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot start the async runtime: {}", self.0)
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Builds a runtime of `flavor`, with timers and IO enabled.
pub fn build(flavor: Flavor) -> Result<tokio::runtime::Runtime, RuntimeError> {
    let mut builder = match flavor {
        Flavor::OneThread => tokio::runtime::Builder::new_current_thread(),
        Flavor::Workers => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().map_err(RuntimeError)
}
