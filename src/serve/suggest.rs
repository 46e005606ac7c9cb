//! `GET /v1/suggestions`: what the page offers to ask on an empty conversation
//! (`report::suggest`): questions several people asked that the docs answered, then topics from
//! the docs' headings. Worked out at most once per [`FRESH`] and index generation, and shared
//! by every caller (each caller's list leaves the caller out): reading the log's last 30 days
//! is not a per-page-load cost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::{ApiError, ErrorBody, respond};
use crate::config::Role;
use crate::report::suggest::{self, Suggestion};
use crate::service::Principal;

/// How long a worked-out list is served before the log is read again.
const FRESH: Duration = Duration::from_secs(300);
/// The log's window: questions of the last 30 days.
const DAYS: u64 = 30;
/// Most suggestions kept (and the most `limit` may ask for).
const MOST: usize = 12;

/// What was last worked out, when, for which index generation: the popular questions (each
/// caller's list is picked from them, without the caller) and the docs' topics.
pub struct Cached {
    at: Instant,
    generation: i64,
    popular: Arc<Vec<suggest::Popular>>,
    topics: Arc<Vec<Suggestion>>,
}

/// The suggestions last worked out for each collection, and a lock held while they are worked out again, so that
/// requests arriving as they go stale wait for one reading of the log instead of each making
/// their own.
#[derive(Default)]
pub struct SuggestionCache {
    cached: std::sync::Mutex<std::collections::HashMap<String, Cached>>,
    working: std::sync::Mutex<()>,
}

/// `GET /v1/suggestions` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SuggestQuery {
    /// How many (default 4, at most 12).
    #[param(minimum = 1, maximum = 12, default = 4)]
    limit: Option<usize>,
    /// The collection (see `POST /v1/ask`): its topics, and questions asked in it.
    collection: Option<String>,
}

/// What `GET /v1/suggestions` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Suggestions {
    /// Asked questions first (most people first), then topics from the docs' headings.
    suggestions: Vec<Suggestion>,
}

/// `GET /v1/suggestions`: questions to offer on an empty conversation.
#[utoipa::path(
    get,
    path = "/v1/suggestions",
    summary = "Questions to offer on an empty conversation: those several people asked in the same words and the docs answered (serve.suggest_asked_by), then topics from the docs' headings",
    params(SuggestQuery),
    responses(
        (status = 200, description = "the suggestions", body = Suggestions),
        (status = 400, description = "limit out of range, or an unknown parameter (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "no_collection: no collection by that name that the caller reads", body = ErrorBody),
    )
)]
pub async fn suggestions(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<SuggestQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| -> Result<Suggestions, ApiError> {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(query) =
            query.map_err(|e| ApiError::bad_request(format!("{}; the form is ?limit=4", e.body_text())))?;
        let limit = query.limit.unwrap_or(4);
        if !(1..=MOST).contains(&limit) {
            return Err(ApiError::bad_request(format!("limit must be 1 to {MOST}, got {limit}")));
        }
        let (_, collection) = super::pick::Pick { collection: query.collection.clone() }.chosen(&state, &principal)?;
        let (popular, topics) = current(&state, collection)?;
        let asked_by = state.config.serve.suggest_asked_by;
        let mut list = suggest::asked(&popular, &principal.name, asked_by, limit);
        list.extend(topics.iter().take(limit.saturating_sub(list.len())).cloned());
        Ok(Suggestions { suggestions: list })
    });
    respond(result, StatusCode::OK)
}

type Lists = (Arc<Vec<suggest::Popular>>, Arc<Vec<Suggestion>>);

/// The popular questions and the topics of `collection`, worked out again when older than
/// [`FRESH`] or its index changed. Questions asked in another collection are never counted.
fn current(state: &AppState, collection: &crate::service::collections::Collection) -> Result<Lists, ApiError> {
    let index = collection.harness.index.current();
    let generation = index.version.generation;
    let cache = &state.suggestions;
    let fresh = || {
        let cached = cache.cached.lock().unwrap_or_else(|e| e.into_inner());
        cached
            .get(&collection.name)
            .filter(|c| c.generation == generation && c.at.elapsed() < FRESH)
            .map(|c| (c.popular.clone(), c.topics.clone()))
    };
    if let Some(lists) = fresh() {
        return Ok(lists);
    }
    let _working = cache.working.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(lists) = fresh() {
        return Ok(lists); // another request worked them out meanwhile
    }
    let hooks = &collection.harness.hooks;
    // As every reading route shows text: scrubbed, then the operator's redaction; whatever
    // either would change is left out rather than shown cut.
    let clean = |text: &str| hooks.redacted(&crate::guard::scrub(text)) == text;
    let mut popular = suggest::popular(&state.log()?, DAYS, state.config.serve.suggest_asked_by, &collection.name)?;
    popular.retain(|p| p.words().all(clean));
    // Sections a read_file rule keeps from being read, or whose names the rules redact, are
    // not offered (as MCP's list of resources), nor one whose heading they would change.
    let readable = |s: &crate::index::section::Listed| hooks.lists(&s.path, &s.anchor) && clean(&s.heading);
    let sections = index.all_sections(&|_| true).map_err(|e| ApiError::internal(e.to_string()))?;
    let topics = suggest::topics(&sections, MOST, &readable);
    let lists = (Arc::new(popular), Arc::new(topics));
    cache.cached.lock().unwrap_or_else(|e| e.into_inner()).insert(
        collection.name.clone(),
        Cached { at: Instant::now(), generation, popular: lists.0.clone(), topics: lists.1.clone() },
    );
    Ok(lists)
}
