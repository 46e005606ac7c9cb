//! `docs-agent serve`: the harness as an HTTP service for support teams. `app(state)` builds
//! the router, so tests drive it without a socket; `serve` binds it and shuts down gracefully.
//!
//! - `auth`: bearer tokens (kept as SHA-256), principals and roles; `limits`: per-principal
//!   rate; body size, timeout and load shedding are tower layers here;
//! - `ask`: one-shot questions and search; `sessions`: durable sessions over HTTP; `turns`:
//!   running a session's turn in its own task; `approvals`: deciding writes;
//! - `ops`: health, readiness, metrics, the OpenAPI document; `error`: the one error shape;
//!   `openapi`: that document, generated from the handlers' `#[utoipa::path]` and their types.

pub mod approvals;
pub mod ask;
pub mod auth;
pub mod body;
pub mod completions;
pub mod conn;
pub mod error;
pub mod expiry;
pub mod fresh;
pub mod history;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod owner;
pub mod page;
pub mod readers;
pub mod replicas;
pub mod requests;
pub mod sessions;
pub mod stream;
pub mod turns;
pub mod waiting;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, any, get, post};
use tower::ServiceBuilder;

use crate::agent::Harness;
use crate::config::Config;
use crate::service::{Service, limits};
use crate::session::cancel::Canceller;
use crate::session::store::{KillAfter, Log, Store};
use error::ApiError;

/// Everything the handlers share: the service core (`service::Service`: configuration,
/// harness, models and their breaker, shares, metrics), which the state derefs to, and what
/// only HTTP needs besides.
pub struct AppState {
    /// The service core, shared with the MCP server at `/mcp`.
    pub service: Arc<Service>,
    /// Who may call.
    pub tokens: auth::Tokens,
    /// Requests per principal.
    pub rate: limits::RateLimiter,
    /// The last reason `/readyz` said not ready, logged once (empty when ready).
    pub readiness_error: Mutex<String>,
    /// The running turns, by session, so a cancel can reach them.
    pub running: Mutex<HashMap<String, Canceller>>,
    /// Slots for requests in flight, shared by every route (`serve.max_concurrent`).
    slots: Arc<tokio::sync::Semaphore>,
    /// The last sequence number of each session, for streams that follow it.
    pub watchers: Arc<Watchers>,
    /// The session log, opened once (a PostgreSQL store keeps its pool here).
    pub store: Store,
    /// The crash-test hook armed on every handle on the log (test builds only).
    kill_after: Option<KillAfter>,
    /// Set when the server shuts down: streams that follow sessions end.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Slots for turns running in their own tasks (`serve.max_concurrent`; a streamed turn
    /// outlives its request).
    pub turn_slots: Arc<tokio::sync::Semaphore>,
    /// Slots for streams following a session (4 × `serve.max_concurrent`).
    pub follower_slots: Arc<tokio::sync::Semaphore>,
    /// Slots for request bodies being read (`serve.max_connections`): with HTTP/2's streams,
    /// more bodies than connections could be read at once, each up to `serve.max_body_bytes`.
    pub body_slots: Arc<tokio::sync::Semaphore>,
    /// How the index is kept fresh (`fresh`): updates, failures, documents held back.
    pub index_status: fresh::Status,
    /// What the kernel sandbox enforces for this process (`/readyz` shows it to admins).
    pub sandbox: crate::sandbox::Status,
    /// The pending writes this replica expires on time.
    pub expiry: waiting::Schedule,
    /// The log handles every follower of a session reads through.
    pub readers: readers::Readers,
}

/// Per-session notifications of new events.
#[derive(Default)]
pub struct Watchers(Mutex<HashMap<String, tokio::sync::watch::Sender<u64>>>);

impl Watchers {
    /// Session `id` has events up to `seq`: wakes its followers.
    pub fn notify(&self, id: &str, seq: u64) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(id) {
            tx.send_replace(seq);
        }
        // Forget sessions nobody follows any more, so the map does not grow.
        map.retain(|_, tx| tx.receiver_count() > 0);
    }

    /// Wakes every follower: they read their session again (what was announced while the
    /// notifications were down was missed).
    pub fn notify_all(&self) {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for tx in map.values() {
            tx.send_modify(|_| {});
        }
    }

    /// Follows session `id` (subscribe before reading the log, so no append is missed).
    pub fn watch(&self, id: &str) -> tokio::sync::watch::Receiver<u64> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_string()).or_insert_with(|| tokio::sync::watch::channel(0).0).subscribe()
    }
}

/// The handlers reach the service core through the state: `state.config`, `state.harness`,
/// `state.model(..)`.
impl std::ops::Deref for AppState {
    type Target = Service;

    fn deref(&self) -> &Service {
        &self.service
    }
}

impl AppState {
    /// The state for `harness` (its config's `serve` section sets tokens and limits).
    pub fn new(config: Config, harness: Harness, store: Store) -> AppState {
        let service = Arc::new(Service::new(config, harness));
        let serve = &service.config.serve;
        AppState {
            tokens: auth::Tokens::new(&serve.tokens),
            rate: limits::RateLimiter::new(serve.rate_per_minute),
            readiness_error: Mutex::new(String::new()),
            running: Mutex::new(HashMap::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(serve.max_concurrent)),
            watchers: Arc::new(Watchers::default()),
            stopping: tokio::sync::watch::channel(false).0,
            turn_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_concurrent)),
            follower_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_concurrent.saturating_mul(4))),
            body_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_connections)),
            index_status: fresh::Status::default(),
            sandbox: crate::sandbox::Status::off("not entered by this process"),
            expiry: waiting::Schedule::default(),
            readers: readers::Readers::default(),
            store,
            kill_after: None,
            service,
        }
    }

    /// The same state, with the crash-test hook armed on every handle on the log: the process
    /// kills itself there (`DOCS_AGENT_TEST_KILL_AFTER`, test builds).
    pub fn with_crash_hook(mut self, hook: Option<KillAfter>) -> AppState {
        self.kill_after = hook;
        self
    }

    /// The same state, reporting `sandbox` as the kernel sandbox it runs in.
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::Status) -> AppState {
        self.sandbox = sandbox;
        self
    }

    /// A handle on the session log (one per task: SQLite serialises the writers); every
    /// commit wakes the streams following that session.
    pub fn log(&self) -> Result<Log, ApiError> {
        let mut log = self.store.log()?;
        if let Some(hook) = &self.kill_after {
            log.kill_after(hook.clone());
        }
        let watchers = self.watchers.clone();
        log.on_append(Box::new(move |id, seq| watchers.notify(id, seq)));
        Ok(log)
    }

    /// Becomes true when the server shuts down.
    pub fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Follows session `id`'s new events.
    pub fn watch(&self, id: &str) -> tokio::sync::watch::Receiver<u64> {
        self.watchers.watch(id)
    }
}

/// Every route behind a bearer token, in one list: `app` serves exactly these, and the tests
/// walk it (every route under `/v1/sessions/{id}` must be 404 for anyone but the owner, and
/// every route must be in the OpenAPI document), so a route added here is checked at once.
pub fn api_routes() -> Vec<(&'static str, MethodRouter<Arc<AppState>>)> {
    vec![
        ("/v1/ask", post(ask::ask)),
        ("/v1/search", get(ask::search)),
        ("/v1/sections", get(ask::section)),
        ("/v1/sessions", post(sessions::create).get(history::list)),
        ("/v1/me", get(auth::me)),
        ("/v1/sessions/{id}", get(sessions::show).delete(sessions::close)),
        ("/v1/sessions/{id}/messages", post(sessions::message)),
        ("/v1/sessions/{id}/events", get(sessions::events)),
        ("/v1/sessions/{id}/cancel", post(sessions::cancel)),
        ("/v1/sessions/{id}/resume", post(sessions::resume)),
        ("/v1/sessions/{id}/feedback", post(sessions::feedback)),
        ("/v1/reports/gaps", get(ops::gaps)),
        ("/v1/approvals", get(approvals::list)),
        ("/v1/approvals/{id}", post(approvals::decide)),
        ("/v1/chat/completions", post(completions::completions)),
        ("/v1/models", get(completions::models)),
        ("/metrics", get(ops::metrics)),
        ("/mcp", any(mcp::handle)),
    ]
}

/// The router: public routes (health, readiness, the OpenAPI document), then the API behind a
/// bearer token, all behind the limits.
pub fn app(state: Arc<AppState>) -> Router {
    let serve = &state.config.serve;
    let api = api_routes()
        .into_iter()
        .fold(Router::new(), |router, (path, route)| router.route(path, route))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token));
    let limits = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(|error: tower::BoxError| async move { overloaded(&error) }))
        .load_shed()
        .layer(tower::limit::GlobalConcurrencyLimitLayer::with_semaphore(state.slots.clone()))
        .timeout(Duration::from_secs(serve.request_timeout_secs));
    let public = Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/openapi.json", get(openapi::document));
    page::routes()
        .into_iter()
        .fold(public, |router, (path, route)| router.route(path, route))
        .merge(api)
        .fallback(|| async { ApiError::not_found("route").into_response() })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method; see /openapi.json",
            )
            .into_response()
        })
        .layer(limits)
        // The body is read before the request takes a slot, so a slow body holds none.
        .layer(axum::middleware::from_fn_with_state(state.clone(), body::read_within))
        // Outside the limits, so shed (503) and timed-out (504) requests are counted too.
        .layer(axum::middleware::from_fn_with_state(state.clone(), metrics::track))
        // Outermost: every request has its span and id, whatever answered it.
        .layer(axum::middleware::from_fn(requests::traced))
        .layer(DefaultBodyLimit::max(serve.max_body_bytes))
        .with_state(state)
}

/// A request the limits refused: shed for load (503) or over its time (504).
fn overloaded(error: &tower::BoxError) -> axum::response::Response {
    if error.is::<tower::timeout::error::Elapsed>() {
        return ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            "the request took longer than serve.request_timeout_secs",
        )
        .into_response();
    }
    ApiError::overloaded("the server is at serve.max_concurrent requests; try again shortly", 1).into_response()
}

/// Turns off SQLite's memory statistics, which take one process-wide lock on every allocation
/// and so serialise the workers' searches and logs. Call before anything opens a database.
pub fn tune_sqlite() {
    // SAFETY: sqlite3_config is called before SQLite is initialised (nothing has opened a
    // database yet), with an option that takes one int; it only returns an error code otherwise.
    unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0);
    }
}

/// Binds `listen` and serves until `shutdown` completes; then running turns are cancelled
/// (recorded as interrupted, so they can be resumed) and the server drains.
pub async fn serve(
    state: Arc<AppState>,
    listen: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}; set serve.listen (DOCS_AGENT_LISTEN) or --listen"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    // Watching before the address is told, so no change a client makes after it is missed.
    // Dropped when serving ends, which stops the updater.
    let _fresh = fresh::start(state.clone());
    // With other replicas on the same log: their appends and cancels reach this one, and a
    // turn a dead replica left is taken over here. Stopped when serving ends.
    let _replicas = replicas::start(&state);
    // Pending writes expire on time: the whole log is looked at once, then each at its TTL.
    let expiring = expiry::start(&state);
    tracing::info!("serving on http://{address} (workspace {})", state.config.workspace.display());
    let cancel_all = state.clone();
    let shutdown = async move {
        shutdown.await;
        tracing::info!("shutting down: no new requests; interrupting running turns");
        cancel_all.stopping.send_replace(true);
        for canceller in cancel_all.running.lock().unwrap_or_else(|p| p.into_inner()).values() {
            canceller.cancel();
        }
    };
    let limits = conn::Limits {
        max_connections: state.config.serve.max_connections,
        header_read_timeout: std::time::Duration::from_secs(state.config.serve.header_read_timeout_secs),
    };
    conn::serve(listener, app(state), limits, shutdown).await;
    expiring.abort();
    Ok(())
}
