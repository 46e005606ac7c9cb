//! `docs-agent serve`: the harness as an HTTP service for support teams. `app(state)` builds
//! the router, so tests drive it without a socket; `serve` binds it and shuts down gracefully.
//!
//! - `auth`: who calls: bearer tokens (kept as SHA-256), an OpenID provider's sign-in cookies, an
//!   authenticating proxy's header; roles, CSRF; `limits`: per-principal
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
pub mod history;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod ops;

pub mod page;
pub mod pick;
pub mod requests;
pub mod sessions;
pub mod sources;
pub mod stream;
pub mod suggest;

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
use crate::service::{Service, expiry, fresh, limits, replicas};
use crate::session::store::Store;
use error::ApiError;

/// Everything the handlers share: the service core (`service::Service`: configuration,
/// harness, models and their breaker, shares, metrics, the session log and its turns), which
/// the state derefs to, and what only HTTP needs besides.
pub struct AppState {
    /// The service core, shared with the MCP server at `/mcp`.
    pub service: Arc<Service>,
    /// Who may call with a bearer token.
    pub tokens: auth::Tokens,
    /// Who may call signed in otherwise: the OpenID provider, the proxy, their cookies.
    pub sign_in: auth::SignInSetup,
    /// Requests per principal.
    pub rate: limits::RateLimiter,
    /// The last reason `/readyz` said not ready, logged once (empty when ready).
    pub readiness_error: Mutex<String>,
    /// Slots for requests in flight, shared by every route (`serve.max_concurrent`).
    slots: Arc<tokio::sync::Semaphore>,
    /// Slots for streams following a session (4 × `serve.max_concurrent`).
    pub follower_slots: Arc<tokio::sync::Semaphore>,
    /// Slots for request bodies being read (`serve.max_connections`): with HTTP/2's streams,
    /// more bodies than connections could be read at once, each up to `serve.max_body_bytes`.
    pub body_slots: Arc<tokio::sync::Semaphore>,
    /// Slots for webhook bodies, read without a token ([`body::WEBHOOK_BODIES`]): apart from
    /// `body_slots`, so anonymous bodies never hold an authenticated caller's slot.
    pub webhook_slots: Arc<tokio::sync::Semaphore>,
    /// What the kernel sandbox enforces for this process (`/readyz` shows it to admins).
    pub sandbox: crate::sandbox::Status,
    /// The suggested questions last worked out (`GET /v1/suggestions`).
    pub suggestions: suggest::SuggestionCache,
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
    /// The state for `harness`, keeping sessions in `store` (its config's `serve` section sets
    /// tokens and limits).
    pub fn new(config: Config, harness: Harness, store: Store) -> AppState {
        AppState::on(Service::new(config, harness, store))
    }

    /// The HTTP front end on `service`.
    pub fn on(service: Service) -> AppState {
        let serve = &service.config.serve;
        AppState {
            tokens: auth::Tokens::new(&serve.tokens),
            sign_in: auth::SignInSetup::new(serve, &service.config.collections),
            rate: limits::RateLimiter::new(serve.rate_per_minute),
            readiness_error: Mutex::new(String::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(serve.max_concurrent)),
            follower_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_followers())),
            body_slots: Arc::new(tokio::sync::Semaphore::new(serve.max_connections)),
            webhook_slots: Arc::new(tokio::sync::Semaphore::new(body::WEBHOOK_BODIES)),
            sandbox: crate::sandbox::Status::off("not entered by this process"),
            suggestions: suggest::SuggestionCache::default(),
            service: Arc::new(service),
        }
    }

    /// The same state, reporting `sandbox` as the kernel sandbox it runs in.
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::Status) -> AppState {
        self.sandbox = sandbox;
        self
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
        ("/v1/suggestions", get(suggest::suggestions)),
        ("/v1/sessions", post(sessions::create).get(history::list)),
        ("/v1/me", get(auth::me)),
        ("/v1/sessions/{id}", get(sessions::show).delete(sessions::close).patch(history::rename)),
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
        .route("/openapi.json", get(openapi::document))
        // A forge's webhook: signed with the source's secret, not a bearer token.
        .route("/v1/sources/{name}/sync", post(sources::sync));
    let public = auth::routes::routes().into_iter().fold(public, |router, (path, route)| router.route(path, route));
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
    let _fresh: Vec<_> =
        (0..state.collections.all().len()).filter_map(|which| fresh::start(state.service.clone(), which)).collect();
    // With other replicas on the same log: their appends and cancels reach this one, and a
    // turn a dead replica left is taken over here. Stopped when serving ends.
    let _replicas = replicas::start(&state.service);
    // Pending writes expire on time: the whole log is looked at once, then each at its TTL.
    let expiring = expiry::start(&state.service);
    match state.config.collections.is_empty() {
        true => tracing::info!("serving on http://{address} (workspace {})", state.config.workspace.display()),
        false => tracing::info!(
            "serving on http://{address} (collections {})",
            state.collections.all().iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
    // A git source's branch: looked at now, every `every`, and when its webhook is called.
    // Stopped when serving ends.
    let _syncing = crate::service::sources::start(&state.service);
    let cancel_all = state.clone();
    let shutdown = async move {
        shutdown.await;
        tracing::info!("shutting down: no new requests; interrupting running turns");
        cancel_all.stop();
    };
    let limits = conn::Limits {
        max_connections: state.config.serve.max_connections,
        header_read_timeout: std::time::Duration::from_secs(state.config.serve.header_read_timeout_secs),
    };
    conn::serve(listener, app(state), limits, shutdown).await;
    expiring.abort();
    Ok(())
}
