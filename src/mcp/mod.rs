//! The MCP server: docs-agent's guarded docs search for other agents (Claude Code, codex, IDEs),
//! over the Model Context Protocol, with the official Rust SDK (`rmcp`).
//!
//! Two front ends serve the same [`DocsServer`]:
//! - `docs-agent mcp`: one client over stdio, with the command line's configuration, harness
//!   and model (`cli::mcp`);
//! - `/mcp` under `serve`: streamable HTTP, stateless (each request answered on its own, so any
//!   replica can take it), behind the same bearer tokens and the `ask` role (`serve::mcp`).
//!
//! What it offers (`tools`, `resources`):
//! - tools `search_docs`, `read_section` and `ask` (the whole harness, in an ephemeral session
//!   that may not write);
//! - resources: the docs' sections, by `docs-agent://path#anchor`.
//!
//! Every text it returns passes the same guards as the model's own tool results: the
//! operator's pre-tool rules decide the call first (`ask` and `deny` refuse it: nobody is
//! there to approve), sections are fenced as untrusted and redacted, the post-tool rules
//! redact and cap the result, and an answer is the guarded, verified answer.

pub mod resources;
pub mod stdout;
pub mod tools;

use std::sync::Arc;

use crate::agent::{AskError, Harness, Run};
use crate::config::Config;
use crate::model::Model;
use crate::model::ModelError;
use crate::service::{Principal, Refused, Service};
use crate::session::progress::Observer;
use crate::workspace::approval::Approver;

pub use tools::DocsServer;

/// Why the `ask` tool has no answer: the message its client's model is shown.
#[derive(Debug, thiserror::Error)]
pub enum AskFailed {
    /// The model server failed (locally; under `serve` the breaker's fallback answers instead).
    #[error("the model server failed: {0}; search_docs and read_section still work without it")]
    Model(#[source] ModelError),
    /// The harness failed otherwise (the session log, the runtime).
    #[error(transparent)]
    Harness(AskError),
    /// The service refused (a principal over its share, a rate limit).
    #[error(transparent)]
    Refused(#[from] Refused),
}

/// Where the server's tools answer from: the closed set of its front ends.
pub enum Front {
    /// `docs-agent mcp`: one local client, the command line's harness and model.
    Local(Box<Local>),
    /// `/mcp` under `serve`: one collection's harness (chosen by the request), the service's
    /// model (with its breaker) and metrics.
    Serve(Arc<Service>, crate::service::collections::Which),
}

/// What `docs-agent mcp` answers with.
pub struct Local {
    /// The configuration, read once.
    pub config: Config,
    /// Workspace, index, skills, prompt.
    pub harness: Harness,
    /// The configured model.
    pub model: Model,
    /// When `docs/` was last looked at for changes.
    pub looked: std::sync::Mutex<std::time::Instant>,
}

/// An answer from the whole harness, with whether it came from the retrieval-only fallback.
pub struct Answered {
    /// The run.
    pub run: Run,
    /// True when the model failed (or its breaker is open) and retrieval alone answered.
    pub degraded: bool,
}

impl Front {
    /// The configuration.
    pub fn config(&self) -> &Config {
        match self {
            Front::Local(local) => &local.config,
            Front::Serve(state, _) => &state.config,
        }
    }

    /// The harness.
    pub fn harness(&self) -> &Harness {
        match self {
            Front::Local(local) => &local.harness,
            Front::Serve(state, which) => &state.collections.get(*which).harness,
        }
    }

    /// Under `docs-agent mcp`, which lives as long as its client (hours, in an IDE): brings the
    /// index up to date with `docs/` when `index.rescan_secs` have passed since it last looked
    /// (0: never), before a call reads it. `serve` keeps its index fresh on its own.
    pub fn fresh(&self) {
        let Front::Local(local) = self else { return };
        let every = local.config.index.rescan_secs;
        let mut looked = local.looked.lock().unwrap_or_else(|p| p.into_inner());
        if every == 0 || looked.elapsed() < std::time::Duration::from_secs(every) {
            return;
        }
        let now = crate::index::walk::epoch_ns(std::time::SystemTime::now());
        // A document modified this recently may still be being written: it keeps its old
        // version until a later look, as `serve` holds it back without file events.
        let settle = crate::index::live::SETTLE.as_nanos() as i64;
        let held = |listed: &crate::index::walk::Listed| (0..settle).contains(&now.saturating_sub(listed.mtime_ns));
        match local.harness.refresh_index(crate::index::Limits::of(&local.config.index), &held) {
            Ok(refreshed) if refreshed.replaced => {
                tracing::info!(generation = refreshed.version.generation, "the docs changed: index updated");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("the docs index could not be brought up to date: {e}; answering from the last one")
            }
        }
        // From the end of the look: a look slower than `rescan_secs` is not paid by every call.
        *looked = std::time::Instant::now();
    }

    /// Whether `ask` tells its steps as progress: on stdio only. Over HTTP the first progress
    /// message would turn the reply into a stream that outlives the request's time limit and
    /// its slot among `serve.max_concurrent`, so the reply stays one JSON answer.
    pub fn tells_progress(&self) -> bool {
        matches!(self, Front::Local(_))
    }

    /// Counts a tool call an MCP client made, under `serve` (`/metrics`), as the model's are.
    pub fn tool_call(&self, decision: crate::tools::Decision) {
        if let Front::Serve(state, _) = self {
            state.metrics.tool_call(decision);
        }
    }

    /// Answers `question` in an ephemeral session, where a write is refused (no person is
    /// there to approve it). Under `serve`, as `POST /v1/ask` does: the breaker's fallback, and
    /// the tokens counted for `principal`.
    /// `observer` hears what happens as it happens.
    pub async fn ask(
        &self,
        question: &str,
        principal: Option<&Principal>,
        observer: Option<Observer<'_>>,
    ) -> Result<Answered, AskFailed> {
        match self {
            Front::Local(local) => {
                let asked =
                    local.harness.ask(&local.config, &local.model, Approver::NotInOneShot, question, observer).await;
                match asked {
                    Ok(run) => Ok(Answered { run, degraded: false }),
                    Err(AskError::Model(e)) => Err(AskFailed::Model(e)),
                    Err(e) => Err(AskFailed::Harness(e)),
                }
            }
            Front::Serve(state, which) => {
                let who = principal.map_or("unknown", |p| p.name.as_str());
                let (run, degraded) = crate::service::answer::answer(state, who, *which, question, observer).await?;
                crate::service::answer::count_usage(state, &run, who, *which);
                Ok(Answered { run, degraded })
            }
        }
    }
}
