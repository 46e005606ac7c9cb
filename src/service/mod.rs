//! The service core: what every front end (the command line, `serve`, `mcp`) calls, so none of
//! them needs another's internals. `serve` holds one [`Service`] and mounts the MCP server on
//! it; neither front end uses the other's state.
//!
//! - [`Service`]: the configuration, the harness (workspace, index, skills, prompt), the
//!   models by name and their circuit breaker, the principals' fair shares, the metrics;
//! - `answer`: one question answered in an ephemeral session, with the breaker's fallback;
//! - `settings`: the configuration, loaded and checked by every subsystem that owns a part of
//!   it, with its secrets remembered for redaction;
//! - `principal`: who is calling; `shares` and `limits`: what one principal may hold and how
//!   fast it may ask; `breaker`: when answers come from retrieval alone; `metrics`: the counters
//!   `/metrics` shows.

pub mod answer;
pub mod breaker;
pub mod limits;
pub mod metrics;
pub mod principal;
pub mod settings;
pub mod shares;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::agent::Harness;
use crate::config::Config;
use crate::model::Model;
use crate::session::store::LogError;

pub use principal::Principal;

/// What answers while the model server is down: quotes of the best sections, flagged.
pub const FALLBACK_MODEL: &str = "extractive";

/// Why the service did not do what a front end asked; each front end says it in its own terms
/// (`serve`: a status, a code and maybe a Retry-After; `mcp`: the message).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The principal holds its whole share of something (turns, streams, session starts).
    #[error("{message}")]
    OverShare {
        /// What is over its share.
        share: shares::Share,
        /// What to do, for the person.
        message: String,
        /// Seconds after which to try again.
        retry_after: u64,
    },
    /// The principal lacks the role this needs.
    #[error("{0}")]
    Forbidden(String),
    /// The model server failed, and so did the retrieval-only answer.
    #[error("{0}")]
    Model(String),
    /// The session log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Something else on the server's side.
    #[error("{0}")]
    Internal(String),
}

/// The core every front end shares.
pub struct Service {
    /// The configuration, read once at start.
    pub config: Config,
    /// Workspace, index, skills, prompt.
    pub harness: Harness,
    /// What one principal may hold at once: turns, followers, session starts.
    pub shares: shares::Shares,
    /// Counters for `/metrics`.
    pub metrics: metrics::Metrics,
    /// Trips when the model server keeps failing; answers then come from retrieval alone.
    pub breaker: breaker::Breaker,
    /// Models by name, built once.
    models: Mutex<HashMap<String, Arc<Model>>>,
}

impl Service {
    /// The core for `harness` (its config's `serve` section sets the shares and the breaker).
    pub fn new(config: Config, harness: Harness) -> Service {
        let serve = &config.serve;
        Service {
            shares: shares::Shares::new(serve),
            metrics: metrics::Metrics::default(),
            breaker: breaker::Breaker::new(serve.breaker_failures, serve.breaker_cooldown_secs),
            models: Mutex::new(HashMap::new()),
            harness,
            config,
        }
    }

    /// The model for a new piece of work: `name`, or the retrieval-only model while the breaker
    /// is open (`true` then: the answer is degraded).
    pub fn model_or_fallback(&self, name: &str) -> Result<(Arc<Model>, bool), Refused> {
        if self.breaker.allows() { Ok((self.model(name)?, false)) } else { Ok((self.model(FALLBACK_MODEL)?, true)) }
    }

    /// Records how a model call went, for the breaker (built-in models never trip it).
    pub fn model_result(&self, model: &Model, ok: bool) {
        if matches!(model, Model::OpenAi(_)) {
            if ok {
                self.breaker.success();
            } else {
                self.breaker.failure();
                self.metrics.model_error();
            }
        }
    }

    /// The model called `name`, built once.
    pub fn model(&self, name: &str) -> Result<Arc<Model>, Refused> {
        let mut models = self.models.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(model) = models.get(name) {
            return Ok(model.clone());
        }
        let llm = crate::config::LlmConfig { model: name.to_string(), ..self.config.llm.clone() };
        let model = Arc::new(
            Model::from_config(&llm, self.config.limits.max_output_tokens)
                .map_err(|e| Refused::Internal(e.to_string()))?,
        );
        models.insert(name.to_string(), model.clone());
        Ok(model)
    }
}
