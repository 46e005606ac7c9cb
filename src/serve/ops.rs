//! Health (`/healthz`: the process answers), readiness (`/readyz`: the index is built and the
//! model answers; which index generation is searched), metrics (`/metrics`, admin role) and the
//! admin's gaps report.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::AppState;
use super::error::{ApiError, ErrorBody};
use crate::config::Role;
use crate::service::Principal;

/// What `/healthz` answers.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`.
    status: &'static str,
}

/// `GET /healthz`
#[utoipa::path(
    get,
    path = "/healthz",
    summary = "The process answers",
    security(()),
    responses((status = 200, description = "alive", body = Health))
)]
pub async fn healthz() -> Response {
    axum::Json(Health { status: "ok" }).into_response()
}

/// A ready `/readyz`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Ready {
    /// `ready`.
    status: &'static str,
    /// Sections indexed, in the collections the caller reads (with `[[collections]]`, a caller
    /// without a token reads none, and this is left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    sections: Option<usize>,
    /// Files indexed, in the collections the caller reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<usize>,
    /// The configured model, as its server names it.
    model: String,
    /// The index generation searched now, of the first collection the caller reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<ReadyIndex>,
    /// Each collection's index: for an admin's token only, with `[[collections]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    collections: Option<Vec<ReadyCollection>>,
    /// The kernel sandbox's state: for an admin's token only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    sandbox: Option<serde_json::Value>,
    /// The git sources (`[[sources]]`) and what their syncs did since start: for an admin's
    /// token only, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    sources: Option<Vec<ReadySource>>,
    /// The reranker (`[retrieval.reranker]`), when one is configured: whether the last reranked
    /// search got its scores. A reranker that does not answer leaves the server ready: searches
    /// keep their own order.
    #[serde(skip_serializing_if = "Option::is_none")]
    reranker: Option<ReadyReranker>,
}

/// The reranker as `/readyz` reports it: what the last search's scores did, without asking it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReadyReranker {
    /// Whether the last reranked search got its scores; null before any search.
    answers: Option<bool>,
    /// How long they took, in milliseconds, when they came.
    #[serde(skip_serializing_if = "Option::is_none")]
    ms: Option<u64>,
    /// Why they did not come: for an admin's token only.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// A collection as `/readyz` reports it to an admin.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReadyCollection {
    /// Its name.
    name: String,
    /// Sections and files indexed.
    sections: usize,
    files: usize,
    /// The index generation searched now.
    generation: i64,
    /// The commit its docs come from, for a git source.
    revision: Option<String>,
}

/// A git source as `/readyz` reports it to an admin.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReadySource {
    /// Its name.
    name: String,
    /// The commit this server serves.
    commit: Option<String>,
    /// Syncs that moved to a new commit, found nothing new, failed.
    moved: u64,
    unchanged: u64,
    failed: u64,
    /// Why the last sync failed, when it did.
    error: Option<String>,
}

/// The index generation `/readyz` reports.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReadyIndex {
    /// Grows by one with every update that changed what is indexed.
    generation: i64,
    /// When that update committed (ms since the epoch).
    updated_at_ms: i64,
    /// Whether `docs/` is watched for changes.
    watching: bool,
}

/// `GET /readyz`: 200 when the index is built and the model answers, else 503 with the reason.
///
/// An admin's token (optional) adds, to a ready answer, what others do not see: the kernel
/// sandbox's state.
#[utoipa::path(
    get,
    path = "/readyz",
    summary = "The index is built and the model answers",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "ready: the index generation searched now, when it was made, and whether docs/ is watched", body = Ready),
        (status = 503, description = "not ready (model_unavailable: the model server is unreachable or lacks the model), or overloaded", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    )
)]
pub async fn readyz(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    // A token shows the counts of the collections it reads; an admin's shows more, of those
    // collections too.
    let caller = super::auth::principal(&state, &headers);
    let model = match state.model(&state.config.llm.model) {
        Ok(model) => model,
        Err(e) => return e.into_response(),
    };
    match model.ready().await {
        Ok(()) => {
            state.readiness_error.lock().unwrap_or_else(|p| p.into_inner()).clear();
            let admin = caller.as_ref().is_some_and(|p| p.roles.contains(&Role::Admin));
            let reranker = reranker_status(&state, admin);
            ready_body(&state, &model.name(), caller.as_ref(), reranker)
        }
        Err(e) => {
            // /readyz answers anyone: the detail (the model server's address, its error) goes to
            // the server's log, once per distinct error, not to the caller.
            let detail = e.to_string();
            let mut last = state.readiness_error.lock().unwrap_or_else(|p| p.into_inner());
            if *last != detail {
                tracing::warn!("not ready: {detail}");
                last.clone_from(&detail);
            }
            let message = "the model server is unreachable or lacks the model; the server's log says why";
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "model_unavailable", message).retry_after(5).into_response()
        }
    }
}

/// What the reranker's last scores did, if one is configured (searches of the first
/// collection); `admin` adds why they failed. The reranker is never asked from here: a
/// readiness check must stay fast, and one that does not answer leaves the server ready.
fn reranker_status(state: &AppState, admin: bool) -> Option<ReadyReranker> {
    use crate::index::rerank::Last;
    let all = state.collections.all();
    let reranker = all.first()?.harness.index.reranker()?;
    Some(match reranker.last() {
        Last::NotAsked => ReadyReranker { answers: None, ms: None, error: None },
        Last::Answered { ms } => ReadyReranker { answers: Some(true), ms: Some(ms), error: None },
        Last::Failed(why) => ReadyReranker { answers: Some(false), ms: None, error: admin.then_some(why) },
    })
}

/// The body of a ready `/readyz`: the counts of the collections `caller` reads (without
/// `[[collections]]`, the one collection is everyone's); an admin's token adds the sandbox's
/// state, those collections' indexes and their sources.
fn ready_body(state: &AppState, model: &str, caller: Option<&Principal>, reranker: Option<ReadyReranker>) -> Response {
    let one = state.config.collections.is_empty();
    let visible: Vec<_> = state
        .collections
        .all()
        .iter()
        .filter(|c| one || caller.is_some_and(|p| p.reads(&c.name)))
        .map(|c| (c, c.harness.index.current()))
        .collect();
    let admin = caller.is_some_and(|p| p.roles.contains(&Role::Admin));
    let statuses: Vec<_> =
        if admin { visible.iter().flat_map(|(c, _)| c.sources.statuses()).collect() } else { Vec::new() };
    let counted = |count: fn(&crate::index::Stats) -> usize| {
        (!visible.is_empty()).then(|| visible.iter().map(|(_, i)| count(&i.stats)).sum())
    };
    let body = Ready {
        status: "ready",
        sections: counted(|s| s.sections),
        files: counted(|s| s.files),
        model: model.to_string(),
        index: visible.first().map(|(c, first)| ReadyIndex {
            generation: first.version.generation,
            updated_at_ms: first.version.updated_at_ms,
            watching: c.index_status.counts().watching,
        }),
        collections: (admin && !one).then(|| {
            visible
                .iter()
                .map(|(c, index)| ReadyCollection {
                    name: c.name.clone(),
                    sections: index.stats.sections,
                    files: index.stats.files,
                    generation: index.version.generation,
                    revision: index.revision(),
                })
                .collect()
        }),
        sandbox: admin.then(|| state.sandbox.to_json()),
        sources: (admin && !statuses.is_empty()).then(|| {
            statuses
                .into_iter()
                .map(|(name, s)| ReadySource {
                    name,
                    commit: s.commit,
                    moved: s.moved,
                    unchanged: s.unchanged,
                    failed: s.failed,
                    error: s.error,
                })
                .collect()
        }),
        reranker,
    };
    axum::Json(body).into_response()
}

/// `GET /metrics` (admin).
#[utoipa::path(
    get,
    path = "/metrics",
    summary = "Prometheus metrics (admin role)",
    responses(
        (status = 200, description = "the Prometheus text format", body = String, content_type = "text/plain; version=0.0.4"),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
    )
)]
pub async fn metrics(State(state): State<Arc<AppState>>, Extension(principal): Extension<Principal>) -> Response {
    if let Err(e) = principal.require(Role::Admin) {
        return e.into_response();
    }
    // (Without [[collections]], every caller reads the one collection: `auth::authenticate`.)
    let several = !state.config.collections.is_empty();
    let mut text = state.metrics.render(&|c| principal.reads(c), several);
    let all = state.collections.all();
    let indexes: Vec<_> = all.iter().map(|c| c.harness.index.current()).collect();
    // The collections the admin reads.
    let each: Vec<_> = all
        .iter()
        .zip(&indexes)
        .filter(|(c, _)| principal.reads(&c.name))
        .map(|(c, i)| (c.name.as_str(), &c.index_status, &**i))
        .collect();
    text.push_str(&crate::service::fresh::Status::render_all(&each, several));
    // Labels are route patterns and closed sets today; the guard holds whatever they become.
    let text = crate::guard::scrub(&text).into_owned();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// What `GET /v1/reports/gaps` takes.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GapsQuery {
    /// Questions of the last `days` days (default 30).
    #[param(minimum = 1, maximum = 3650, default = 30)]
    days: Option<u64>,
    /// At most `limit` groups (default 20).
    #[param(minimum = 1, maximum = 500, default = 20)]
    limit: Option<usize>,
}

/// `GET /v1/reports/gaps` (admin): the questions the docs could not answer, grouped, most
/// asked first, as `docs-agent report gaps --json` prints them.
#[utoipa::path(
    get,
    path = "/v1/reports/gaps",
    summary = "The questions the docs could not answer (no hits, a retrieval-only answer, rated not helpful), alike ones grouped and counted, most asked first, with the closest sections (admin)",
    params(GapsQuery),
    responses(
        (status = 200, description = "the report", body = crate::report::gaps::Report),
        (status = 400, description = "days or limit out of range, or an unknown parameter (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
    )
)]
pub async fn gaps(
    State(state): State<Arc<AppState>>,
    axum::Extension(principal): axum::Extension<crate::service::Principal>,
    query: Result<axum::extract::Query<GapsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Admin).map_err(ApiError::from)?;
        let axum::extract::Query(query) = query.map_err(|e| {
            super::error::ApiError::bad_request(format!("{}; the form is ?days=30&limit=20", e.body_text()))
        })?;
        let (days, limit) = (query.days.unwrap_or(30), query.limit.unwrap_or(20));
        if !(1..=3650).contains(&days) || !(1..=500).contains(&limit) {
            return Err(super::error::ApiError::bad_request("days must be 1 to 3650, and limit 1 to 500"));
        }
        // Only the sessions of the collections the admin reads.
        let reads =
            |events: &[crate::session::store::Stored]| crate::service::owner::reads_its_collection(&principal, events);
        let found = crate::report::gaps::report(&state.log()?, days, &reads)?;
        Ok(crate::report::gaps::summary(&found, days, limit))
    });
    super::error::respond(result, axum::http::StatusCode::OK)
}
