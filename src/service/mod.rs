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
//!   `/metrics` shows;
//! - durable sessions: `turns` runs a session's turn in its own task (a client that goes away
//!   does not stop it); `owner` says whose a session is; `waiting` and `expiry` keep the writes
//!   that wait for a person and expire them on time; `watchers` wakes whoever follows a
//!   session; `readers` are the log handles followers share; `replicas` hears the other
//!   replicas on a shared log and takes over their lapsed turns;
//! - `fresh`: the index kept up to date with `docs/` while the service runs.

pub mod answer;
pub mod breaker;
pub mod collections;
pub mod expiry;
pub mod fresh;
pub mod limits;
pub mod metrics;
pub mod owner;
pub mod principal;
pub mod readers;
pub mod replicas;
pub mod settings;
pub mod shares;
pub mod sources;
pub mod turns;
pub mod waiting;
pub mod watchers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::agent::Harness;
use crate::config::Config;
use crate::model::Model;
use crate::session::cancel::Canceller;
use crate::session::store::{KillAfter, Log, LogError, Store};

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
    /// No collection by that name that the principal reads (404, as one that does not exist).
    #[error("{0}")]
    NoCollection(String),
    /// The principal lacks the role this needs.
    #[error("{0}")]
    Forbidden(String),
    /// The model server failed, and so did the retrieval-only answer.
    #[error("{0}")]
    Model(String),
    /// The session log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// No such thing, or not this principal's (a session is shown to its owner only).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The session is not in a state that allows this.
    #[error("{message}")]
    Conflict {
        /// Which state stands in the way.
        conflict: Conflict,
        /// What to do, for the person.
        message: String,
    },
    /// The session's token or cost budget is spent.
    #[error("{0}")]
    BudgetExhausted(String),
    /// A capacity limit of the whole service is reached.
    #[error("{message}")]
    Overloaded {
        /// What is full.
        message: String,
        /// Seconds after which to try again.
        retry_after: u64,
    },
    /// Something else on the server's side.
    #[error("{0}")]
    Internal(String),
}

impl Refused {
    /// A conflict with the session's state.
    pub fn conflict(conflict: Conflict, message: impl Into<String>) -> Refused {
        Refused::Conflict { conflict, message: message.into() }
    }

    /// True when another writer holds the session now (a turn, a decision, another replica):
    /// trying again once it is done may work.
    pub fn is_busy(&self) -> bool {
        match self {
            Refused::Conflict { conflict, .. } => *conflict == Conflict::TurnInProgress,
            Refused::Log(e) => e.is_busy(),
            _ => false,
        }
    }
}

/// What in a session's state stands in the way of a request (each front end shows its code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// A turn runs, or one is unfinished.
    TurnInProgress,
    /// A write waits for a decision.
    AwaitingApproval,
    /// The session is closed.
    SessionClosed,
    /// No write waits (or none is due).
    NotPending,
    /// The write's time to be decided has passed.
    Expired,
}

impl Conflict {
    /// The code a client branches on.
    pub fn code(self) -> &'static str {
        match self {
            Conflict::TurnInProgress => "turn_in_progress",
            Conflict::AwaitingApproval => "awaiting_approval",
            Conflict::SessionClosed => "session_closed",
            Conflict::NotPending => "not_pending",
            Conflict::Expired => "expired",
        }
    }
}

/// The core every front end shares.
pub struct Service {
    /// The configuration, read once at start.
    pub config: Config,
    /// The collections served, each with its harness (workspace, index, skills, prompt), its
    /// index's freshness and its git source.
    pub collections: collections::Collections,
    /// What one principal may hold at once: turns, followers, session starts.
    pub shares: shares::Shares,
    /// Counters for `/metrics`.
    pub metrics: metrics::Metrics,
    /// Trips when the model server keeps failing; answers then come from retrieval alone.
    pub breaker: breaker::Breaker,
    /// Models by name, built once.
    models: Mutex<HashMap<String, Arc<Model>>>,
    /// The session log, opened once (a PostgreSQL store keeps its pool here).
    pub store: Store,
    /// The crash-test hook armed on every handle on the log (test builds only).
    kill_after: Option<KillAfter>,
    /// The running turns, by session, so a cancel can reach them.
    pub running: Mutex<HashMap<String, Canceller>>,
    /// Slots for turns running in their own tasks (`serve.max_concurrent`; a streamed turn
    /// outlives its request).
    pub turn_slots: Arc<tokio::sync::Semaphore>,
    /// The last sequence number of each session, for whoever follows it.
    pub watchers: Arc<watchers::Watchers>,
    /// The log handles every follower of a session reads through.
    pub readers: readers::Readers,
    /// The pending writes this replica expires on time.
    pub expiry: waiting::Schedule,
    /// Set when the service stops: followers end, timers stop.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl Service {
    /// The core for `harness`, the one collection of `config` (which has no
    /// `[[collections]]`), keeping its sessions in `store` (the config's `serve` section sets
    /// the shares, the breaker and the turns that run at once).
    pub fn new(config: Config, harness: Harness, store: Store) -> Service {
        let one = collections::Collections::one(&config, harness);
        Service::of(config, one, store)
    }

    /// The core for `collections`, each opened from its own configuration.
    pub fn of(config: Config, collections: collections::Collections, store: Store) -> Service {
        let serve = &config.serve;
        Service {
            shares: shares::Shares::new(serve),
            metrics: metrics::Metrics::default(),
            breaker: breaker::Breaker::new(serve.breaker_failures, serve.breaker_cooldown_secs),
            models: Mutex::new(HashMap::new()),
            store,
            kill_after: None,
            running: Mutex::new(HashMap::new()),
            turn_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_concurrent)),
            watchers: Arc::new(watchers::Watchers::default()),
            readers: readers::Readers::default(),
            expiry: waiting::Schedule::default(),
            stopping: tokio::sync::watch::channel(false).0,
            collections,
            config,
        }
    }

    /// The same core, with the crash-test hook armed on every handle on the log: the process
    /// kills itself there (`DOCS_AGENT_TEST_KILL_AFTER`, test builds).
    pub fn with_crash_hook(mut self, hook: Option<KillAfter>) -> Service {
        self.kill_after = hook;
        self
    }

    /// A handle on the session log (one per task: SQLite serialises the writers); every
    /// commit wakes whoever follows that session.
    pub fn log(&self) -> Result<Log, LogError> {
        let mut log = self.store.log()?;
        if let Some(hook) = &self.kill_after {
            log.kill_after(hook.clone());
        }
        let watchers = self.watchers.clone();
        log.on_append(Box::new(move |id, seq| watchers.notify(id, seq)));
        Ok(log)
    }

    /// Becomes true when the service stops.
    pub fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Stops: followers end, timers stop, and every running turn is cancelled (recorded as
    /// interrupted, so it can be resumed).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
        for canceller in self.running.lock().unwrap_or_else(|p| p.into_inner()).values() {
            canceller.cancel();
        }
    }

    /// Follows session `id`'s new events (subscribe before reading the log, so no append is
    /// missed).
    pub fn watch(&self, id: &str) -> tokio::sync::watch::Receiver<u64> {
        self.watchers.watch(id)
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
