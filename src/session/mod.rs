//! Durable sessions: the append-only event log is the session's state, and the messages sent
//! to the model are a projection of it, rebuilt on every turn.
//! - `event`: the closed set of events; `store`: the SQLite log (durable before an append
//!   returns, scrubbed on the way in) and the one-writer-per-session lock;
//! - `state`: what to do next, read from the events alone; `turn`: the loop that does it;
//! - `projection`: events → a valid model request; `compact`: the summary that keeps it small;
//! - `deps`: what a turn uses, built in one place; `progress`: what a turn tells its front end;
//! - `cancel`: interrupting a turn.

pub mod budget;
pub mod cancel;
pub mod compact;
pub mod deps;
pub mod event;
pub mod fallback;
pub mod fit;
pub mod progress;
pub mod projection;
pub mod spans;
pub mod stale;
pub mod state;
pub mod store;
pub mod turn;
pub mod verify;

#[cfg(test)]
mod tests;

use crate::config::Config;

/// Longest session id accepted.
const MAX_ID_CHARS: usize = 64;

/// A fresh session id: `s-`, the milliseconds since the epoch in hex (so ids sort by creation
/// time), and 128 bits from the operating system's CSPRNG, so no id can be guessed from another.
pub fn new_id() -> Result<String, store::LogError> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| store::LogError::Io {
        what: "drawing a random session id".to_string(),
        hint: "the operating system's random source is unavailable",
        source: std::io::Error::other(e.to_string()),
    })?;
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("s-{:011x}-{random}", turn::now_ms()))
}

/// An id given by a person that is not a session id (clipped to 80 characters), told with what
/// an id looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a session id: use letters, digits, - and _ (at most {MAX_ID_CHARS}); `docs-agent sessions list` shows them"
)]
pub struct BadSessionId(String);

/// Checks an id given by a person: letters, digits, `-` and `_`, at most 64.
pub fn check_id(id: &str) -> Result<(), BadSessionId> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok { Ok(()) } else { Err(BadSessionId(crate::guard::clip(id, 80))) }
}

/// A fingerprint of the configuration a session starts with (the API key left out), so a later
/// resume can tell that the configuration changed.
pub fn fingerprint(config: &Config) -> String {
    let text = format!(
        "{}|{}|{}|{:?}|{:?}|{:?}|{:?}",
        config.workspace.display(),
        config.llm.base_url,
        config.llm.model,
        config.limits,
        config.index,
        config.allowed_link_hosts,
        Shown(&config.session)
    );
    // FNV-1a, 64 bits: stable across builds, unlike std's hasher.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}")
}

/// The session settings as the fingerprint hashes them: as they were shown before `log_url`
/// existed when it is unset (so the fingerprint of a SQLite user's sessions does not change),
/// and the URL without its password when it is set.
struct Shown<'a>(&'a crate::config::SessionConfig);

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let session = self.0;
        let mut shown = f.debug_struct("SessionConfig");
        shown
            .field("log_path", &session.log_path)
            .field("approval_ttl_secs", &session.approval_ttl_secs)
            .field("context_budget_tokens", &session.context_budget())
            .field("compact_at", &session.compact_at);
        let url = session.log_url.trim();
        if !url.is_empty() {
            let target = store::postgres::Target::parse(url);
            shown.field("log_url", &target.as_ref().map_or("(not a postgres:// URL)", |t| t.shown()));
            shown.field("lease_secs", &session.lease_secs);
        }
        shown.finish()
    }
}

/// The event a session pinned to `model` starts with (owned by `principal` and reading
/// `collection` over HTTP).
pub fn started(config: &Config, model: &str, principal: Option<&str>, collection: Option<&str>) -> event::Event {
    event::Event::SessionStarted {
        model: model.to_string(),
        workspace: workspace_of(config),
        config_fingerprint: fingerprint(config),
        principal: principal.map(str::to_string),
        collection: collection.map(str::to_string),
    }
}

/// The workspace a session is tied to: the configured folder, absolute and resolved.
pub fn workspace_of(config: &Config) -> String {
    std::fs::canonicalize(&config.workspace).unwrap_or_else(|_| config.workspace.clone()).display().to_string()
}

/// Starts a session pinned to `model` and returns its id.
pub fn start(log: &mut store::Log, config: &Config, model: &str) -> Result<String, store::LogError> {
    let id = new_id()?;
    log.append(&id, started(config, model, None, None))?;
    Ok(id)
}
