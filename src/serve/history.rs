//! A person's earlier sessions, for the page's list: `GET /v1/sessions` gives the caller's own,
//! the most recently active first, each with its first question as a title. Only sessions made
//! over HTTP have an owner, so the CLI's sessions never show here.

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
/// A title longer than this is cut (with an ellipsis).
const TITLE_CHARS: usize = 120;

/// `GET /v1/sessions` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// How many sessions, 1 to 100 (default 30).
    #[param(minimum = 1, maximum = 100, default = 30)]
    pub limit: Option<usize>,
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
    /// Its first question, on one line, cut to 120 characters (`TITLE_CHARS`); empty before
    /// the first one.
    pub title: String,
    /// How many questions it holds.
    pub turns: usize,
    /// `idle`, `in_turn` or `awaiting_approval`.
    #[schema(value_type = crate::session::state::Status)]
    pub status: &'static str,
    /// When it began (ms since the epoch).
    pub started_ms: u64,
    /// When it last changed.
    pub last_ms: u64,
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
        Summary {
            id: id.to_string(),
            title: questions.first().map(|q| title(q)).unwrap_or_default(),
            turns: questions.len(),
            status: state::status(events).as_str(),
            started_ms: events.first().map_or(0, |s| s.at_ms),
            last_ms: events.last().map_or(0, |s| s.at_ms),
        }
    }
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
    summary = "The caller's own sessions, the most recently active first, each titled by its first question",
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
        let log = state.log()?;
        let mut sessions = Vec::new();
        for id in log.started_by(&principal.name, limit)? {
            let events = log.events_after(&id, 0)?;
            // The owner is checked again on the events themselves, as every session route does.
            if state::owner(&events) == Some(principal.name.as_str()) {
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
