//! A person's earlier sessions, for the page's list: `GET /v1/sessions` gives the caller's own,
//! the most recently active first, each titled by its first question or the name its owner gave
//! it (`PATCH /v1/sessions/{id}`, a `session_renamed` event), searchable by words (`?q=`).
//! A closed session (deleted from the list: `DELETE /v1/sessions/{id}`, a `session_closed` event)
//! is left out; its log stays for an admin's audit. Only sessions made over HTTP have an owner,
//! so the CLI's sessions never show here.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::{ApiError, ErrorBody, respond};
use crate::config::Role;
use crate::service::Principal;
use crate::session::event::Event;
use crate::session::state;
use crate::session::store::Stored;

/// Sessions listed when the caller does not say.
const DEFAULT_LIMIT: usize = 30;
/// Most sessions one call lists.
const MAX_LIMIT: usize = 100;
/// A title longer than this is cut (with an ellipsis); a name given longer is refused.
const TITLE_CHARS: usize = 120;
/// Sessions looked at for the list (closed ones skipped) or a search: a person's latest this
/// many, newest first.
const SEARCH_SESSIONS: usize = 500;

/// `GET /v1/sessions` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// How many sessions, 1 to 100 (default 30).
    #[param(minimum = 1, maximum = 100, default = 30)]
    pub limit: Option<usize>,
    /// Words every listed session must hold, in its title or its questions (any case).
    pub q: Option<String>,
}

/// What `GET /v1/sessions` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Sessions {
    /// The caller's sessions, the most recently active first.
    sessions: Vec<Summary>,
}

/// One session in the list (`GET /v1/sessions`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = SessionSummary)]
pub struct Summary {
    /// The session's id.
    pub id: String,
    /// The name its owner gave it, else its first question, on one line, cut to 120 characters
    /// (`TITLE_CHARS`); empty before the first question.
    pub title: String,
    /// True when its owner named it.
    pub renamed: bool,
    /// How many questions it holds.
    pub turns: usize,
    /// `idle`, `in_turn` or `awaiting_approval`.
    #[schema(value_type = crate::session::state::Status)]
    pub status: &'static str,
    /// When it began (ms since the epoch).
    pub started_ms: u64,
    /// When it last changed.
    pub last_ms: u64,
    /// The collection it reads (`default` without `[[collections]]`).
    pub collection: String,
}

impl Summary {
    /// The summary of session `id`, from its events.
    pub fn of(id: &str, events: &[Stored]) -> Summary {
        let questions: Vec<&str> = events
            .iter()
            .filter_map(|s| match &s.event {
                Event::UserMessage { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let named = events.iter().rev().find_map(|s| match &s.event {
            Event::SessionRenamed { title } => Some(title.as_str()),
            _ => None,
        });
        Summary {
            id: id.to_string(),
            title: named.or(questions.first().copied()).map(title).unwrap_or_default(),
            renamed: named.is_some(),
            turns: questions.len(),
            status: state::status(events).as_str(),
            started_ms: events.first().map_or(0, |s| s.at_ms),
            last_ms: events.last().map_or(0, |s| s.at_ms),
            collection: state::reads_collection(events).to_string(),
        }
    }
}

/// True when the session's name or questions hold every one of `words` (lower-cased).
fn holds(events: &[Stored], words: &[String]) -> bool {
    if words.is_empty() {
        return true;
    }
    let text: String = events
        .iter()
        .filter_map(|s| match &s.event {
            Event::UserMessage { text } | Event::SessionRenamed { title: text } => Some(text.to_lowercase()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    words.iter().all(|w| text.contains(w.as_str()))
}

/// A question as a one-line title.
fn title(question: &str) -> String {
    let line = question.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// `GET /v1/sessions?limit=30`: the caller's sessions, the most recently active first.
#[utoipa::path(
    get,
    path = "/v1/sessions",
    operation_id = "list_sessions",
    tag = "sessions",
    summary = "The caller's own open sessions, the most recently active first, each titled by its name or first question; ?q= searches",
    params(ListQuery),
    responses(
        (status = 200, description = "the sessions", body = Sessions),
        (status = 400, description = "a bad limit (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(query) =
            query.map_err(|e| ApiError::bad_request(format!("{}; the form is ?limit=30", e.body_text())))?;
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::bad_request(format!("limit must be 1 to {MAX_LIMIT}")));
        }
        let words: Vec<String> =
            query.q.as_deref().unwrap_or_default().split_whitespace().map(str::to_lowercase).collect();
        let log = state.log()?;
        let mut sessions = Vec::new();
        // Closed ones and those a search passes over are skipped, so more ids are read than
        // listed; each session's events are read only until the list is full.
        for id in log.started_by(&principal.name, SEARCH_SESSIONS)? {
            if sessions.len() == limit {
                break;
            }
            let events = log.events_after(&id, 0)?;
            // The owner is checked again on the events themselves, as every session route does,
            // and so is the collection: one the owner no longer reads is not listed.
            if state::owner(&events) == Some(principal.name.as_str())
                && crate::service::owner::reads_its_collection(&principal, &events)
                && !state::closed(&events)
                && holds(&events, &words)
            {
                let mut summary = Summary::of(&id, &events);
                // A write past its TTL is expired now: its turn goes on.
                if crate::service::waiting::hand_over_if_due(&state, &id, &events) {
                    summary.status = state::Status::InTurn.as_str();
                }
                sessions.push(summary);
            }
        }
        Ok(Sessions { sessions })
    });
    respond(result, StatusCode::OK)
}

/// `PATCH /v1/sessions/{id}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RenameBody {
    /// The session's new name, 1 to 120 characters, on one line (spaces are folded).
    pub title: String,
}

/// What a rename answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Renamed {
    /// The session.
    session_id: String,
    /// The `session_renamed` event's seq.
    seq: u64,
    /// The name, as the list shows it.
    title: String,
}

/// `PATCH /v1/sessions/{id}`: its owner names the session; the list shows the name in place of
/// its first question. Recorded as a `session_renamed` event, so the log keeps every name.
#[utoipa::path(
    patch,
    path = "/v1/sessions/{id}",
    operation_id = "rename_session",
    tag = "sessions",
    summary = "Name a session (its owner): the list shows the name in place of its first question",
    params(("id" = String, Path, description = "the session")),
    request_body = RenameBody,
    responses(
        (status = 200, description = "renamed", body = Renamed),
        (status = 400, description = "no title, or one longer than 120 characters (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "no such session, or not the caller's (not_found)", body = ErrorBody),
        (status = 409, description = "the session is closed (session_closed), or a turn is writing to it", body = ErrorBody),
    )
)]
pub async fn rename(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    axum::extract::Path(id): axum::extract::Path<String>,
    body: Result<axum::Json<RenameBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        // Whose session first: for anyone else it does not exist, whatever the body says.
        let mut log = state.log()?;
        crate::service::owner::owned(&log, &id, &principal)?;
        let axum::Json(body) = body.map_err(|e| ApiError::body(e, "{\"title\": \"Refunds for annual plans\"}"))?;
        let name = body.title.split_whitespace().collect::<Vec<_>>().join(" ");
        if name.is_empty() || name.chars().count() > TITLE_CHARS {
            return Err(ApiError::bad_request(format!("title must be 1 to {TITLE_CHARS} characters")));
        }
        // Appended as the session's one writer: not while a turn runs, nor a close between the
        // check and the append.
        let _lock = log.lock(&id)?;
        if state::closed(&log.events_after(&id, 0)?) {
            return Err(ApiError::from(crate::service::Refused::conflict(
                crate::service::Conflict::SessionClosed,
                format!("session {id} is closed: it is no longer listed, and keeps its name"),
            )));
        }
        let seq = log.append(&id, Event::SessionRenamed { title: name.clone() })?;
        Ok(Renamed { session_id: id.clone(), seq, title: name })
    });
    respond(result, StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long question becomes a one-line title of at most TITLE_CHARS characters.
    #[test]
    fn a_title_is_one_line_and_cut() {
        assert_eq!(title("How long\n  is the   refund window?"), "How long is the refund window?");
        let long = "word ".repeat(100);
        let cut = title(&long);
        assert_eq!(cut.chars().count(), TITLE_CHARS);
        assert!(cut.ends_with('…'), "{cut}");
    }
}
