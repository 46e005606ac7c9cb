//! Pending writes over HTTP: approvers list them and decide (allow once, allow for the session
//! under a folder, deny). Never on a request from their own session, unless
//! `serve.allow_self_approval`. A decision is an event; the turn then goes on in its own task.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use super::AppState;
use super::error::{ApiError, ErrorBody, respond};
use crate::config::Role;
use crate::service::Principal;
use crate::service::turns::{self, Start};
use crate::service::waiting::{self, pending};
use crate::session::event::Scope;
use crate::session::state::{self};
use crate::session::turn::Verdict;

/// `GET /v1/approvals` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only `pending` is kept: decided writes are in each session's events.
    #[param(value_type = Option<Listed>)]
    pub state: Option<String>,
}

/// The writes `GET /v1/approvals` can list (for the OpenAPI document).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum Listed {
    /// Those that wait for a decision.
    Pending,
}

/// What `GET /v1/approvals` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Approvals {
    /// The writes that wait, each with the conversation it came from.
    approvals: Vec<waiting::Pending>,
}

/// `GET /v1/approvals?state=pending` (approvers): the writes asked within the approval TTL
/// that still wait; one past it is expired at once (`expiry`) and never listed.
#[utoipa::path(
    get,
    path = "/v1/approvals",
    operation_id = "list_approvals",
    summary = "Writes waiting for a decision (approve role)",
    params(ListQuery),
    responses(
        (status = 200, description = "pending approvals", body = Approvals),
        (status = 400, description = "state is not pending (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Approve).map_err(ApiError::from)?;
        let Query(query) =
            query.map_err(|e| ApiError::bad_request(format!("{}; the form is ?state=pending", e.body_text())))?;
        if query.state.as_deref().is_some_and(|s| s != "pending") {
            return Err(ApiError::bad_request("state must be `pending` (decided writes are in each session's events)"));
        }
        let log = state.log()?;
        // A write still waiting was asked within the approval TTL, so its session has an event
        // since then: only those sessions are read (the page polls this list).
        let ttl_ms = state.config.session.approval_ttl_secs.saturating_mul(1000);
        let since = crate::session::turn::now_ms().saturating_sub(ttl_ms);
        let mut out = Vec::new();
        for id in log.active_ids_since(since)? {
            let events = log.events_after(&id, 0)?;
            // One past its TTL is expired by the timer now, and never listed; nor is one of a
            // collection the approver does not read.
            if state::owner(&events).is_some()
                && crate::service::owner::reads_its_collection(&principal, &events)
                && !waiting::hand_over_if_due(&state, &id, &events)
            {
                out.extend(pending(&state, &id, &events));
            }
        }
        Ok(Approvals { approvals: out })
    });
    respond(result, StatusCode::OK)
}

/// `POST /v1/approvals/{id}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    /// `once`, `session` or `deny`.
    #[schema(value_type = Decision)]
    pub decision: String,
    /// For `session`: the folder later writes may go to (default: the requested file's).
    pub prefix: Option<String>,
    /// For `deny`: why (the model is told).
    pub reason: Option<String>,
}

/// The decisions `POST /v1/approvals/{id}` takes (`verdict` reads them; this names them in the
/// OpenAPI document).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum Decision {
    /// Allow this write.
    Once,
    /// Allow writes under a folder for the rest of the session.
    Session,
    /// Refuse it; the model is told `reason`.
    Deny,
}

/// What `POST /v1/approvals/{id}` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Decided {
    /// The pending write decided.
    approval_id: String,
    /// Its session, whose turn goes on.
    session_id: String,
    /// `granted` or `denied`.
    decision: &'static str,
}

/// `POST /v1/approvals/{id}`: records the decision, then the session's turn goes on in its own
/// task, under the same session lock (nothing can slip in between).
#[utoipa::path(
    post,
    path = "/v1/approvals/{id}",
    summary = "Decide a pending write (approve role; not in your own session unless allowed); the turn then goes on",
    params(("id" = String, Path, description = "the pending write: `{session}.{call}`")),
    request_body = DecideBody,
    responses(
        (status = 200, description = "recorded", body = Decided),
        (status = 400, description = "bad request: the body, or a decision or prefix not taken", body = ErrorBody),
        (status = 403, description = "missing role, or the approver's own session (forbidden)", body = ErrorBody),
        (status = 404, description = "no such pending approval (not_found)", body = ErrorBody),
        (status = 409, description = "expired, already decided, or the session is busy", body = ErrorBody),
    )
)]
pub async fn decide(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(approval): Path<String>,
    body: Result<Json<DecideBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let checked = crate::runtime::blocking(|| {
        principal.require(Role::Approve).map_err(ApiError::from)?;
        let Json(body) = body.map_err(|e| ApiError::body(e, "{\"decision\": \"once|session|deny\"}"))?;
        let (session, call) = approval.split_once('.').ok_or_else(|| ApiError::not_found("approval"))?;
        if crate::session::check_id(session).is_err() {
            return Err(ApiError::not_found("approval"));
        }
        let events = state.log()?.events_after(session, 0)?;
        // A write in a collection the approver does not read does not exist for them.
        if !crate::service::owner::reads_its_collection(&principal, &events) {
            return Err(ApiError::not_found("pending approval"));
        }
        // Only sessions made over HTTP are decided here; the CLI's are decided at the terminal.
        let Some(waiting) = pending(&state, session, &events).filter(|p| p.id == approval && p.principal.is_some())
        else {
            return Err(ApiError::not_found("pending approval"));
        };
        if waiting.principal.as_deref() == Some(principal.name.as_str()) && !state.config.serve.allow_self_approval {
            return Err(ApiError::forbidden(format!(
                "{} cannot decide a write asked for in their own session (serve.allow_self_approval)",
                principal.name
            )));
        }
        Ok((session.to_string(), call.to_string(), verdict(&body, &waiting.path)?))
    });
    let (session, call, verdict) = match checked {
        Ok(checked) => checked,
        Err(e) => return e.into_response(),
    };
    let (reply, recorded) = tokio::sync::oneshot::channel();
    let start = Start::Decision { call, verdict, by: format!("approver {}", principal.name), reply };
    let continued = state.service.clone();
    let id = session.clone();
    tokio::spawn(
        async move {
            // Its outcome is in the session's events; an error was already told to the approver.
            let _ = turns::run(continued, id, start).await;
        }
        .in_current_span(),
    );
    match recorded.await {
        Ok(Ok(outcome)) => {
            (StatusCode::OK, Json(Decided { approval_id: approval, session_id: session, decision: outcome }))
                .into_response()
        }
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::internal("the decision's task ended before recording it").into_response(),
    }
}

fn verdict(body: &DecideBody, path: &str) -> Result<Verdict, ApiError> {
    match body.decision.as_str() {
        "once" => Ok(Verdict::Allow(Scope::Once)),
        "deny" => Ok(Verdict::Deny(format!(
            "write not approved: {}",
            body.reason.as_deref().unwrap_or("the approver declined")
        ))),
        "session" => state::session_scope(path, body.prefix.as_deref())
            .map(Verdict::Allow)
            .map_err(|e| ApiError::bad_request(e.to_string())),
        other => Err(ApiError::bad_request(format!(
            "decision must be once, session or deny, got `{}`",
            crate::guard::clip(other, 40)
        ))),
    }
}
