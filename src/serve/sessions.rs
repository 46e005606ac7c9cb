//! Durable sessions over HTTP. A session belongs to the principal that made it: for anyone
//! else it does not exist (404).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::Instrument;

use super::AppState;
use super::auth::Credential;
use super::error::{ApiError, ErrorBody, respond};
use super::stream;
use crate::config::Role;
use crate::service::Principal;
use crate::service::owner::{existing, owned};
use crate::service::turns::{self, Start};
use crate::session::state;

/// Longest message accepted.
const MAX_MESSAGE_CHARS: usize = 8_000;
/// Most events one `events` call returns.
const MAX_EVENTS: usize = 1_000;

/// What `POST /v1/sessions` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Created {
    /// The new session.
    id: String,
    /// The model it is pinned to.
    model: String,
    /// The collection it reads, for all its turns.
    collection: String,
    /// `idle`.
    status: &'static str,
}

/// `POST /v1/sessions`: a new session pinned to the configured model.
#[utoipa::path(
    post,
    path = "/v1/sessions",
    summary = "A new durable session, owned by the caller, reading one collection (?collection=NAME)",
    params(super::pick::Pick),
    responses(
        (status = 201, description = "created", body = Created),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "no_collection: no collection by that name that the caller reads", body = ErrorBody),
        (status = 429, description = "too_many_starts: more than serve.sessions_per_minute starts by this principal; too_many_open_sessions: this principal holds serve.max_sessions_per_principal open sessions (close one with DELETE, or wait serve.session_idle_secs); rate_limited", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "too_many_sessions: serve.max_open_sessions are open; or overloaded", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    pick: Result<Query<super::pick::Pick>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(pick) = pick.map_err(|e| ApiError::bad_request(format!("{e}; use ?collection=NAME")))?;
        let (_, collection) = pick.chosen(&state, &principal)?;
        let serve = &state.config.serve;
        let mut log = state.log()?;
        let since = crate::session::turn::now_ms().saturating_sub(serve.session_idle_secs.saturating_mul(1000));
        // One principal's share first: a user who holds many cannot fill the server for the rest.
        let share = serve.shares().sessions;
        if log.open_sessions(since, Some(&principal.name))? >= share.max {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_open_sessions",
                format!(
                    "you have {} open sessions ({}); close one with DELETE /v1/sessions/{{id}}, or reuse one; a \
                     session idle for serve.session_idle_secs ({} s) stops counting",
                    share.max, share.setting, serve.session_idle_secs
                ),
            )
            .retry_after(60));
        }
        if log.open_sessions(since, None)? >= serve.max_open_sessions {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_sessions",
                format!("{} sessions are open (serve.max_open_sessions); try again later", serve.max_open_sessions),
            )
            .retry_after(60));
        }
        // Paced last, so a start refused above costs none of the principal's pace.
        state.shares.start(&principal.name)?;
        let id = crate::session::new_id()?;
        let model = state.config.llm.model.clone();
        let started =
            crate::session::started(&collection.config, &model, Some(&principal.name), Some(&collection.name));
        log.append(&id, started)?;
        Ok(Created { id, model, collection: collection.name.clone(), status: "idle" })
    });
    respond(result, StatusCode::CREATED)
}

/// What `GET /v1/sessions/{id}` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Shown {
    /// The session.
    id: String,
    /// `idle`, `in_turn`, `awaiting_approval` or `closed`.
    #[schema(value_type = crate::session::state::Status)]
    status: &'static str,
    /// The model it is pinned to (none for a session begun before models were pinned).
    model: Option<String>,
    /// What its turns used, and what its budget has left.
    usage: crate::session::budget::Usage,
    /// How many events its log holds.
    events: usize,
    /// The seq of its last event.
    last_seq: u64,
    /// The write that waits, when one does.
    approval: Option<crate::service::waiting::Pending>,
    /// A turn runs now, on this replica.
    running: bool,
}

/// `GET /v1/sessions/{id}`
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}",
    summary = "A session's status, its usage and any write waiting",
    params(("id" = String, Path, description = "the session")),
    responses(
        (status = 200, description = "the session", body = Shown),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    // A write past its TTL is expired first: nobody sees it pending.
    if let Err(e) = crate::service::expiry::owned_now(&state.service, &id, &principal).await {
        return e.into_response();
    }
    let result = crate::runtime::blocking(|| {
        let events = owned(&state.log()?, &id, &principal)?;
        let model = state::pinned_model(&events).unwrap_or(&state.config.llm.model);
        let usage = crate::session::budget::Usage::of(&state.config.budget, model, &events);
        Ok(Shown {
            status: state::status(&events).as_str(),
            model: state::pinned_model(&events).map(str::to_string),
            usage,
            events: events.len(),
            last_seq: events.last().map_or(0, |s| s.seq),
            approval: crate::service::waiting::pending(&state, &id, &events),
            running: state.running.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&id),
            id: id.clone(),
        })
    });
    respond(result, StatusCode::OK)
}

/// `DELETE /v1/sessions/{id}`: closes the session, as its owner or an admin (for anyone else it
/// does not exist). Closing is an event in its log: the session takes no more messages, a write
/// it waited on is no longer pending, and it stops counting against `serve.max_open_sessions`
/// and its owner's `serve.max_sessions_per_principal`. Closing a closed session changes nothing.
#[utoipa::path(
    delete,
    path = "/v1/sessions/{id}",
    summary = "Close the session (its owner, or an admin): it takes no more messages (409 session_closed), a write it waited on is no longer pending, and it stops counting as open. Closing a closed session changes nothing",
    params(("id" = String, Path, description = "the session")),
    responses(
        (status = 200, description = "closed", body = Closed),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 409, description = "turn_in_progress: a turn is running; cancel it first", body = ErrorBody),
    )
)]
pub async fn close(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let mut log = state.log()?;
        let events = if principal.may(Role::Admin) { existing(&log, &id)? } else { owned(&log, &id, &principal)? };
        // An admin closes anyone's session, in the collections they read only.
        if !crate::service::owner::reads_its_collection(&principal, &events) {
            return Err(ApiError::not_found("session"));
        }
        if !state::closed(&events) {
            if state.running.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&id) {
                return Err(ApiError::conflict(
                    "turn_in_progress",
                    format!(
                        "session {id} has a turn running; cancel it (POST /v1/sessions/{id}/cancel), then close it"
                    ),
                ));
            }
            // Under the session's lock: a turn another replica drives is not closed under it.
            let _lock = log.lock(&id)?;
            log.append(&id, crate::session::event::Event::SessionClosed { by: principal.name.clone() })?;
        }
        Ok(Closed { id: id.clone(), status: "closed" })
    });
    respond(result, StatusCode::OK)
}

/// What `DELETE /v1/sessions/{id}` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Closed {
    /// The session.
    id: String,
    /// `closed`.
    status: &'static str,
}

/// `POST /v1/sessions/{id}/messages` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageBody {
    /// What the person says (1 to 8,000 characters).
    #[schema(min_length = 1, max_length = 8000)]
    pub text: String,
}

/// `POST /v1/sessions/{id}/messages`: runs the turn and answers with its outcome, or, with
/// `Accept: text/event-stream`, streams it: `tool` steps, guarded `text` deltas, then
/// `approval_required` or `answer`, and `done` (the outcome) or `error`.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/messages",
    summary = "Say something; the turn runs to its end. With Accept: text/event-stream it is streamed: tool (a step: tool, args, result, decision), text (guarded deltas, a paragraph at a time), approval_required (the Pending write), answer ({answer, nodes, seq, citations}), done (the outcome) or error",
    params(("id" = String, Path, description = "the session")),
    request_body = MessageBody,
    responses(
        (status = 200, description = "the turn's outcome, or with Accept: text/event-stream, its events", content(
            (crate::service::turns::Outcome = "application/json"),
            (String = "text/event-stream"),
        )),
        (status = 400, description = "bad request: the body, or text of 0 or more than 8,000 characters", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 409, description = "the session is busy, awaiting approval or mid-turn, or closed (session_closed)", body = ErrorBody),
        (status = 429, description = "rate limited, or too_many_turns: this principal runs serve.max_turns_per_principal turns already; or budget_exhausted", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    )
)]
pub async fn message(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Json<MessageBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    // A write past its TTL is expired first: nobody sees it pending.
    if let Err(e) = crate::service::expiry::owned_now(&state.service, &id, &principal).await {
        return e.into_response();
    }
    let checked = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Json(body) = body.map_err(|e| ApiError::body(e, "{\"text\": \"...\"}"))?;
        let text = body.text.trim().to_string();
        if text.is_empty() || text.chars().count() > MAX_MESSAGE_CHARS {
            return Err(ApiError::bad_request(format!("text must be 1 to {MAX_MESSAGE_CHARS} characters")));
        }
        owned(&state.log()?, &id, &principal)?;
        Ok(text)
    });
    let text = match checked {
        Ok(text) => text,
        Err(e) => return e.into_response(),
    };
    if !stream::wants_stream(&headers) {
        return match turns::run(state.service.clone(), id, Start::Message(text)).await {
            Ok(outcome) => Json(outcome).into_response(),
            Err(e) => e.into_response(),
        };
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let revoked = super::auth::revoked(&state, &credential);
    tokio::spawn(
        async move {
            // The turn's live events go out as they happen; its outcome follows them.
            let live = tx.clone();
            let live: turns::Live = Box::new(move |event| {
                let _ = live.send(stream::live_event(event));
            });
            match turns::run_live(state.service.clone(), id, Start::Message(text), Some(live)).await {
                Ok(outcome) => {
                    if let Some(approval) = &outcome.approval {
                        let _ = tx.send(stream::event("approval_required", approval));
                    }
                    if let Some(answer) = &outcome.answer {
                        let _ = tx.send(stream::event(
                            "answer",
                            &json!({
                                "answer": answer,
                                "nodes": outcome.answer_nodes,
                                "seq": outcome.answer_seq,
                                "citations": outcome.citations,
                            }),
                        ));
                    }
                    let _ = tx.send(stream::event("done", &outcome));
                }
                Err(e) => {
                    let _ = tx.send(stream::error_event(e.into()));
                }
            }
        }
        .in_current_span(),
    );
    stream::from_channel(rx, revoked).into_response()
}

/// `POST /v1/sessions/{id}/resume`: finishes a turn a crash or a shutdown left unfinished.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/resume",
    summary = "Finish a turn a crash or a shutdown left unfinished",
    params(("id" = String, Path, description = "the session")),
    responses(
        (status = 200, description = "the turn's outcome", body = crate::service::turns::Outcome),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 409, description = "nothing_to_resume, or a turn is running (turn_in_progress)", body = ErrorBody),
    )
)]
pub async fn resume(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    // A write past its TTL is expired first: nobody sees it pending.
    if let Err(e) = crate::service::expiry::owned_now(&state.service, &id, &principal).await {
        return e.into_response();
    }
    let checked = principal.require(Role::Ask).map_err(ApiError::from).and_then(|()| {
        let events = crate::runtime::blocking(|| owned(&state.log()?, &id, &principal))?;
        match state::status(&events) {
            state::Status::InTurn => Ok(()),
            other => Err(ApiError::conflict(
                "nothing_to_resume",
                format!("session {id} has no unfinished turn (it is {})", other.as_str()),
            )),
        }
    });
    if let Err(e) = checked {
        return e.into_response();
    }
    match turns::run(state.service.clone(), id, Start::Continue).await {
        Ok(outcome) => Json(outcome).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/sessions/{id}/events` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only events after this sequence number (0: all).
    #[serde(default)]
    #[param(minimum = 0)]
    pub after: u64,
}

/// What `GET /v1/sessions/{id}/events` answers as JSON.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Events {
    /// The session.
    session_id: String,
    /// At most 1,000 events, each `{seq, at_ms, event}` and the event's fields; an `answer`
    /// event also carries `nodes` (its Markdown as safe nodes, `Node`) and `citations`
    /// (checked against what its turn retrieved).
    #[schema(value_type = Vec<Object>)]
    events: Vec<serde_json::Value>,
}

/// `GET /v1/sessions/{id}/events?after=SEQ`: the events a client has not seen yet; with
/// `Accept: text/event-stream`, followed live from there (`Last-Event-ID` resumes).
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}/events",
    summary = "The session's events after a sequence number; with Accept: text/event-stream, followed live (each event's id is its seq; Last-Event-ID resumes)",
    params(
        ("id" = String, Path, description = "the session"),
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "with Accept: text/event-stream: the seq to resume after"),
    ),
    responses(
        (status = 200, description = "the events, or with Accept: text/event-stream, each event as it is appended", content(
            (Events = "application/json"),
            (String = "text/event-stream"),
        )),
        (status = 400, description = "a bad after or Last-Event-ID (bad_request)", body = ErrorBody),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 429, description = "rate limited, or too_many_followers: this principal follows serve.max_followers_per_principal sessions already", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "too many streams follow sessions (4 × serve.max_concurrent), or overloaded", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    )
)]
pub async fn events(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    Path(id): Path<String>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    headers: axum::http::HeaderMap,
) -> Response {
    // A write past its TTL is expired first: nobody sees it pending.
    // The session's collection decides how its answers' citations are shown.
    let seen = crate::service::expiry::owned_now(&state.service, &id, &principal).await;
    let collection =
        match seen.and_then(|events| state.collections.of_session(crate::session::state::reads_collection(&events))) {
            Ok(which) => which,
            Err(e) => return e.into_response(),
        };
    let after = match query {
        Ok(Query(query)) => query.after,
        Err(e) => return ApiError::bad_request(format!("{e}; use ?after=SEQ (a number)")).into_response(),
    };
    let after = match stream::check_cursor(after) {
        Ok(after) => after,
        Err(e) => return ApiError::bad_request(format!("?after: {e}")).into_response(),
    };
    if stream::wants_stream(&headers) {
        // Ownership was checked above (owned_now); the stream reads through the shared readers.
        let cursor = match stream::resume_point(&headers, after) {
            Ok(cursor) => cursor,
            Err(e) => return ApiError::bad_request(e).into_response(),
        };
        // The principal's share first: one user's streams cannot take every slot.
        let share = match state.shares.follower(&principal.name) {
            Ok(share) => share,
            Err(e) => return e.into_response(),
        };
        let Ok(slot) = state.follower_slots.clone().try_acquire_owned() else {
            return ApiError::overloaded("too many streams follow sessions; try again shortly", 5).into_response();
        };
        let revoked = super::auth::revoked(&state, &credential);
        return stream::follow(state, id, collection, cursor, (slot, share), revoked).into_response();
    }
    let result = crate::runtime::blocking(|| {
        let all = owned(&state.log()?, &id, &principal)?;
        let view = stream::View::of(&state, state.collections.get(collection));
        let events: Vec<_> =
            all.iter().filter(|s| s.seq > after).take(MAX_EVENTS).map(|s| stream::outward(s, &view, &all)).collect();
        Ok(Events { session_id: id.clone(), events })
    });
    respond(result, StatusCode::OK)
}

/// `POST /v1/sessions/{id}/cancel`: interrupts the running turn (202), here or on the replica
/// that runs it, or 409 if none runs.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/cancel",
    summary = "Interrupt the running turn (the partial text is kept)",
    params(("id" = String, Path, description = "the session")),
    responses(
        (status = 202, description = "cancelling", body = Cancelling),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 409, description = "no turn running (not_running)", body = ErrorBody),
    )
)]
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        let log = state.log()?;
        owned(&log, &id, &principal)?;
        if let Some(canceller) = state.running.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
            canceller.cancel();
            return Ok(Cancelling { session_id: id.clone(), cancelling: true });
        }
        // On a shared log, the turn may run on another replica: it is told.
        if log.cancel_elsewhere(&id)? {
            return Ok(Cancelling { session_id: id.clone(), cancelling: true });
        }
        Err(ApiError::conflict("not_running", format!("session {id} has no turn running")))
    });
    respond(result, StatusCode::ACCEPTED)
}

/// What `POST /v1/sessions/{id}/cancel` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Cancelling {
    /// The session.
    session_id: String,
    /// Always true: the turn is told to stop.
    cancelling: bool,
}

/// Longest feedback comment accepted.
const MAX_COMMENT_CHARS: usize = 2_000;

/// What `POST /v1/sessions/{id}/feedback` takes.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackBody {
    /// The seq of the `answer` event rated.
    #[schema(minimum = 1)]
    answer_seq: u64,
    /// Whether it helped.
    helpful: bool,
    /// What the person says about it (at most 2,000 characters).
    #[serde(default)]
    #[schema(max_length = 2000)]
    comment: String,
}

/// What `POST /v1/sessions/{id}/feedback` answers.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Rated {
    /// The session.
    session_id: String,
    /// The seq of the `feedback` event.
    seq: u64,
    /// The seq of the `answer` event rated.
    answer_seq: u64,
    /// Whether it helped.
    helpful: bool,
}

/// `POST /v1/sessions/{id}/feedback`: the owner rates an answer of the session, recorded as a
/// `feedback` event (the last rating of an answer counts). `report gaps` lists the answers rated
/// not helpful.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/feedback",
    summary = "Rate an answer of the session: helpful or not, with an optional comment (a `feedback` event; `report gaps` lists answers rated not helpful)",
    params(("id" = String, Path, description = "the session")),
    request_body = FeedbackBody,
    responses(
        (status = 201, description = "recorded", body = Rated),
        (status = 400, description = "bad request: the body, a comment too long, or answer_seq not an answer of the session", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "not found, or not yours (not_found)", body = ErrorBody),
        (status = 409, description = "a turn is running (turn_in_progress)", body = ErrorBody),
    )
)]
pub async fn feedback(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    body: Result<Json<FeedbackBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        // Whose session first: for anyone else it does not exist, whatever the body says.
        let mut log = state.log()?;
        let events = owned(&log, &id, &principal)?;
        let Json(body) =
            body.map_err(|e| ApiError::body(e, "{\"answer_seq\": 7, \"helpful\": false, \"comment\": \"...\"}"))?;
        let comment = body.comment.trim().to_string();
        if comment.chars().count() > MAX_COMMENT_CHARS {
            return Err(ApiError::bad_request(format!("comment must be at most {MAX_COMMENT_CHARS} characters")));
        }
        if crate::session::verify::answer_at(&events, body.answer_seq).is_none() {
            return Err(ApiError::bad_request(format!(
                "answer_seq {} is not an answer of session {id}: give the seq of an `answer` event (GET /v1/sessions/{id}/events)",
                body.answer_seq
            )));
        }
        // Appended as the session's one writer: not while a turn runs.
        let _lock = log.lock(&id)?;
        let event =
            crate::session::event::Event::Feedback { answer_seq: body.answer_seq, helpful: body.helpful, comment };
        let seq = log.append(&id, event)?;
        Ok(Rated { session_id: id.clone(), seq, answer_seq: body.answer_seq, helpful: body.helpful })
    });
    respond(result, StatusCode::CREATED)
}
