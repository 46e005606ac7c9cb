//! Pending writes over HTTP: approvers list them and decide (allow once, allow for the session
//! under a folder, deny). Never on a request from their own session, unless
//! `serve.allow_self_approval`. A decision is an event; the turn then goes on in its own task.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::Instrument;

use super::AppState;
use super::auth::Principal;
use super::error::{ApiError, respond};
use super::turns::{self, Start};
use crate::config::Role;
use crate::session::event::{Event, Scope};
use crate::session::state::{self, Next};
use crate::session::store::Stored;
use crate::session::turn::Verdict;
use crate::tools::Toolbox;

/// A write (or a call an operator's rule asks about) waiting for a decision.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    /// The tool (`write_file`, or another one a rule asks about).
    pub tool: String,
    /// The operator's rule that asks, when one does (then no session grant decides it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// `{session}.{call}`: what `POST /v1/approvals/{id}` takes.
    pub id: String,
    /// The session.
    pub session_id: String,
    /// Who owns the session.
    pub principal: Option<String>,
    /// Where the model wants to write; for another call, the tool and what it is about.
    pub path: String,
    /// What (scrubbed).
    pub content: String,
    /// When it was asked (ms since the epoch).
    pub requested_at_ms: u64,
    /// The sequence number of the request's event: a follower of the session's events from
    /// here sees how the wait ends, however soon it is decided.
    pub requested_seq: u64,
    /// When it expires undecided.
    pub expires_at_ms: u64,
    /// The conversation it came from: the session's latest questions and answers (at most
    /// [`CONTEXT_MESSAGES`], each cut to [`CONTEXT_BYTES`]), ending with the question whose turn
    /// asks, so an approver sees why the write is wanted.
    pub conversation: Vec<Said>,
}

/// Messages of the conversation a pending write shows.
pub const CONTEXT_MESSAGES: usize = 6;
/// Bytes of each (a longer message is cut, with an ellipsis).
pub const CONTEXT_BYTES: usize = 2_000;

/// One message of a conversation: the person's question or the answer they were shown.
#[derive(Debug, Clone, Serialize)]
pub struct Said {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// What was said (scrubbed in the log; answers were guarded when shown).
    pub text: String,
}

/// The latest questions and answers among `events`, oldest first.
fn conversation(events: &[Stored]) -> Vec<Said> {
    let said: Vec<Said> = events
        .iter()
        .filter_map(|s| match &s.event {
            Event::UserMessage { text } => Some(("user", text)),
            Event::Answer { text } => Some(("assistant", text)),
            _ => None,
        })
        .map(|(role, text)| Said { role, text: crate::guard::clip(text, CONTEXT_BYTES) })
        .collect();
    said[said.len().saturating_sub(CONTEXT_MESSAGES)..].to_vec()
}

/// The write session `id` waits for, if any.
pub fn pending(state: &AppState, id: &str, events: &[Stored]) -> Option<Pending> {
    // A closed session waits on nothing.
    if state::closed(events) {
        return None;
    }
    let Next::Decide(p) = state::next(events) else {
        return None;
    };
    let ttl_ms = state.config.session.approval_ttl_secs.saturating_mul(1000);
    Some(Pending {
        id: format!("{id}.{}", p.call.record.id),
        tool: p.call.record.name.clone(),
        rule: p.rule.map(str::to_string),
        session_id: id.to_string(),
        principal: state::owner(events).map(str::to_string),
        path: p.path.to_string(),
        content: Toolbox::plan_write(&p.call.record.arguments).map(|r| r.content).unwrap_or_default(),
        requested_at_ms: p.requested_at_ms,
        requested_seq: p.seq,
        expires_at_ms: p.requested_at_ms.saturating_add(ttl_ms),
        conversation: conversation(events),
    })
}

/// `GET /v1/approvals` query.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    /// Only `pending` is kept: decided writes are in each session's events.
    pub state: Option<String>,
}

/// `GET /v1/approvals?state=pending` (approvers): the writes asked within the approval TTL
/// that still wait; one past it is expired at once (`expiry`) and never listed.
pub async fn list(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Query(query): Query<ListQuery>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Approve)?;
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
            // One past its TTL is expired by the timer now, and never listed.
            if state::owner(&events).is_some() && !super::expiry::hand_over_if_due(&state, &id, &events) {
                out.extend(pending(&state, &id, &events));
            }
        }
        Ok(json!({"approvals": out}))
    });
    respond(result, StatusCode::OK)
}

/// `POST /v1/approvals/{id}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    /// `once`, `session` or `deny`.
    pub decision: String,
    /// For `session`: the folder later writes may go to (default: the requested file's).
    pub prefix: Option<String>,
    /// For `deny`: why (the model is told).
    pub reason: Option<String>,
}

/// `POST /v1/approvals/{id}`: records the decision, then the session's turn goes on in its own
/// task, under the same session lock (nothing can slip in between).
pub async fn decide(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(approval): Path<String>,
    body: Result<Json<DecideBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let checked = crate::runtime::blocking(|| {
        principal.require(Role::Approve)?;
        let Json(body) = body.map_err(|e| ApiError::body(e, "{\"decision\": \"once|session|deny\"}"))?;
        let (session, call) = approval.split_once('.').ok_or_else(|| ApiError::not_found("approval"))?;
        if crate::session::check_id(session).is_err() {
            return Err(ApiError::not_found("approval"));
        }
        let events = state.log()?.events_after(session, 0)?;
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
    let continued = state.clone();
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
            (StatusCode::OK, Json(json!({"approval_id": approval, "session_id": session, "decision": outcome})))
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
