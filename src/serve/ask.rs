//! `POST /v1/ask` (one question, answered in an ephemeral session: nothing is stored, and a
//! write is refused) and `GET /v1/search` (retrieval only).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AppState;
use super::error::{ApiError, ErrorBody, respond};
use crate::agent::Stop;
use crate::config::Role;
use crate::guard;
use crate::service::Principal;
use crate::service::answer::{answer, checked_question, count_usage};

/// Most sections a search returns.
const MAX_K: usize = 50;

/// `POST /v1/ask` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    /// The question.
    pub question: String,
}

/// A citation in an answer: path, anchor, heading and whether the run retrieved it.
pub use crate::session::verify::Citation;

/// What `POST /v1/ask` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Answer {
    /// The answer, when the turn answered (guarded like every answer).
    answer: Option<String>,
    /// Why it did not answer, when it did not.
    message: Option<String>,
    /// Why the turn stopped.
    stop: Stop,
    /// The answer's citations, each verified when the turn retrieved its section.
    citations: Vec<Citation>,
    /// The ephemeral session (not stored).
    session_id: String,
    /// Always false: nothing is stored.
    stored: bool,
    /// The model server was unavailable: a retrieval-only answer.
    degraded: bool,
    /// Tokens the turn's model calls used.
    usage: crate::service::answer::Usage,
}

/// `POST /v1/ask`
#[utoipa::path(
    post,
    path = "/v1/ask",
    summary = "One question, answered in an ephemeral session (nothing stored; writes are refused)",
    params(super::pick::Pick),
    request_body = AskBody,
    responses(
        (status = 200, description = "the answer", body = Answer),
        (status = 400, description = "bad request: the body, or a question of 0 or too many characters", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 404, description = "no_collection: no collection by that name that the caller reads", body = ErrorBody),
        (status = 429, description = "rate limited, or too_many_turns: this principal runs serve.max_turns_per_principal turns already; or budget_exhausted", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 502, description = "the model server failed (model_error)", body = ErrorBody),
    )
)]
pub async fn ask(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    pick: Result<Query<super::pick::Pick>, axum::extract::rejection::QueryRejection>,
    body: Result<Json<AskBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let result = async {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(pick) = pick.map_err(|e| ApiError::bad_request(format!("{e}; use ?collection=NAME")))?;
        let (collection, _) = pick.chosen(&state, &principal)?;
        let Json(body) = body.map_err(|e| ApiError::body(e, "{\"question\": \"...\"}"))?;
        let question = checked_question("question", &body.question).map_err(ApiError::bad_request)?;
        let (run, degraded) = answer(&state, &principal.name, collection, question, None).await?;
        let used = count_usage(&state, &run, &principal.name, collection);
        let answered = run.stop == Stop::Answered;
        Ok(Answer {
            answer: answered.then(|| run.answer.clone()),
            message: (!answered).then(|| run.answer.clone()),
            stop: run.stop,
            citations: run.citations.clone(),
            session_id: run.session.clone(),
            stored: false,
            degraded,
            usage: used,
        })
    }
    .await;
    respond(result, StatusCode::OK)
}

/// `GET /v1/search` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// The words.
    pub q: String,
    /// How many sections (default `index.top_k`; more than 50 is 50).
    #[param(minimum = 1, maximum = 50)]
    pub k: Option<usize>,
    /// The collection to search (see `POST /v1/ask`); without it, the first the caller reads.
    pub collection: Option<String>,
}

/// What `GET /v1/search` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Hits {
    /// The best sections, best first.
    hits: Vec<Hit>,
}

/// A section search found.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Hit {
    /// `docs/...md`
    path: String,
    /// The section's anchor.
    anchor: String,
    /// The section's heading.
    heading: String,
    /// Its first and last line in the file.
    lines: [usize; 2],
    /// BM25 score, higher is better.
    score: f64,
    /// The words that matched, in context.
    excerpt: String,
    /// The section's page on the published docs site (`[site]`), when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
}

/// `GET /v1/search?q=...&k=...`
#[utoipa::path(
    get,
    path = "/v1/search",
    summary = "Retrieval only: the best sections",
    params(SearchQuery),
    responses(
        (status = 200, description = "hits", body = Hits),
        (status = 400, description = "no q (bad_request)", body = ErrorBody),
        (status = 404, description = "no_collection: no collection by that name that the caller reads", body = ErrorBody),
        (status = 403, description = "missing role (forbidden), or refused_by_rule: the operator's [hooks] rules refuse this search or read here (a deny, or an ask: nobody approves an HTTP read), the message naming the rule", body = ErrorBody),
    )
)]
pub async fn search(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<SearchQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(query) = query.map_err(|e| ApiError::bad_request(format!("{e}; use ?q=words")))?;
        let k = query.k.unwrap_or(state.config.index.top_k).clamp(1, MAX_K);
        let (_, collection) = super::pick::Pick { collection: query.collection.clone() }.chosen(&state, &principal)?;
        let harness = &collection.harness;
        // The operator's rules decide as they do for the model's search_docs and MCP's.
        let hooks = &harness.hooks;
        refused_by_rule(hooks, crate::tools::Tool::SearchDocs, &json!({"query": query.q}))?;
        let hits = harness.index.current().search(&query.q, k).map_err(|e| ApiError::internal(e.to_string()))?;
        let shown = |text: &str| shown(hooks, text);
        let hits = hits
            .iter()
            .map(|h| Hit {
                path: shown(&h.path),
                anchor: shown(&h.anchor),
                heading: shown(&h.heading),
                lines: [h.lines.0, h.lines.1],
                score: h.score,
                excerpt: shown(&h.excerpt),
                url: harness.site_url(&h.path, &h.anchor).filter(|url| shown(url) == *url),
            })
            .collect();
        Ok::<_, ApiError>(Hits { hits })
    });
    respond(result, StatusCode::OK)
}

/// `text` from the docs as an HTTP reading route shows it: scrubbed, then the operator's extra
/// redaction (`[hooks.post_tool] redact`), as a tool result is.
fn shown(hooks: &crate::hooks::Hooks, text: &str) -> String {
    hooks.redacted(&guard::scrub(text)).into_owned()
}

/// A 403 when the operator's rules refuse a call of `tool` with `arguments` here (a `deny`, or
/// an `ask`: nobody approves an HTTP read), logged with the rule.
fn refused_by_rule(hooks: &crate::hooks::Hooks, tool: crate::tools::Tool, arguments: &Value) -> Result<(), ApiError> {
    match hooks.refuses_unattended(tool.name(), &arguments.to_string(), "over HTTP") {
        Some((ruled, message)) => {
            tracing::info!(stage = "pre_tool", rule = %ruled.rule, decision = ruled.decision.as_str(), "hook decided");
            Err(ApiError::new(StatusCode::FORBIDDEN, "refused_by_rule", message))
        }
        None => Ok(()),
    }
}

/// `GET /v1/sections` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SectionQuery {
    /// `docs/...md`
    pub path: String,
    /// The section's anchor (empty: the file's first section).
    #[serde(default)]
    pub anchor: String,
    /// With `seq`: a session of the caller's whose answer cites the section.
    pub session: Option<String>,
    /// The seq of that answer's event: its `cited_lines` are marked.
    pub seq: Option<u64>,
    /// The collection to read (see `POST /v1/ask`); with `session`, the session's own.
    pub collection: Option<String>,
}

/// What `GET /v1/sections` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Section {
    /// `docs/...md`
    path: String,
    /// The section's anchor.
    anchor: String,
    /// The section's heading.
    heading: String,
    /// Its first and last line in the file.
    lines: [usize; 2],
    /// The section's text (scrubbed, and redacted as the operator's rules say).
    text: String,
    /// With session and seq: the lines of `text` (from 0) the answer draws on, for
    /// highlighting; a heuristic for the eye, not a check.
    cited_lines: Option<Vec<usize>>,
    /// `text` as safe Markdown nodes (as an answer's `answer_nodes`): its relative links are
    /// sections of the docs, and the blocks holding `cited_lines` are `cited` nodes. A text or
    /// HTML page's section is paragraphs of its lines.
    nodes: Vec<crate::guard::markdown::Node>,
    /// The index generation the section was read from: the one search reads.
    generation: i64,
    /// The section's page on the published docs site (`[site]`), when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
}

/// `GET /v1/sections?path=docs/x.md&anchor=y`: the cited section, as text and safe nodes (what a citation in
/// an answer points to), from the index generation searched now. Only docs/ is readable here,
/// through the same policy as `read_file`. With `&session=ID&seq=SEQ` (an answer of the
/// caller's), `cited_lines` lists the lines of `text` (from 0) that answer draws on.
#[utoipa::path(
    get,
    path = "/v1/sections",
    summary = "The section a citation points to, as text (docs/ only), from the index generation searched now",
    params(SectionQuery),
    responses(
        (status = 200, description = "the section", body = Section),
        (status = 400, description = "session without seq, or seq not an answer (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden), or refused_by_rule: the operator's [hooks] rules refuse this search or read here (a deny, or an ask: nobody approves an HTTP read), the message naming the rule", body = ErrorBody),
        (status = 404, description = "no such section, or a session not yours (not_found); no_collection: no collection by that name that the caller reads", body = ErrorBody),
    )
)]
pub async fn section(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<SectionQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = crate::runtime::blocking(|| -> Result<Section, ApiError> {
        principal.require(Role::Ask).map_err(ApiError::from)?;
        let Query(query) = query.map_err(|e| {
            ApiError::bad_request(format!(
                "{e}; use ?path=docs/x.md&anchor=y, with &session=ID&seq=SEQ for the lines an answer draws on"
            ))
        })?;
        let path = crate::workspace::policy::check_read(&query.path)
            .ok()
            .filter(|p| p.area() == crate::workspace::policy::Area::Docs)
            .ok_or_else(|| ApiError::not_found("section"))?;
        // A session's answer cites its session's collection; else the one the query picks.
        let session = match (&query.session, query.seq) {
            (Some(session), Some(seq)) => {
                Some((crate::service::owner::owned(&state.log()?, session, &principal)?, seq))
            }
            (None, None) => None,
            _ => return Err(ApiError::bad_request("session and seq go together: ?session=ID&seq=SEQ of an answer")),
        };
        let collection = match &session {
            Some((events, _)) => {
                let reads = crate::session::state::reads_collection(events);
                state.collections.get(state.collections.of_session(reads)?)
            }
            None => super::pick::Pick { collection: query.collection.clone() }.chosen(&state, &principal)?.1,
        };
        let harness = &collection.harness;
        // As a read_file of it: the operator's rules decide, and what they hide is not found.
        let hooks = &harness.hooks;
        refused_by_rule(hooks, crate::tools::Tool::ReadFile, &json!({"path": query.path, "anchor": query.anchor}))?;
        // The generation searches read, not the file as it is now: a citation opens the text
        // that was found, and an edit shows here when it shows in search.
        let index = harness.index.current();
        let section = index
            .section(&path.display(), &query.anchor)
            .map_err(|e| ApiError::internal(e.to_string()))?
            .ok_or_else(|| ApiError::not_found("section"))?;
        let shown = |text: &str| shown(hooks, text);
        let text = shown(&section.text);
        let cited = match &session {
            Some((events, seq)) => {
                let (_, answer) = crate::session::verify::answer_at(events, *seq).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "seq {seq} is not an answer of session {}: give the seq of an `answer` event",
                        query.session.as_deref().unwrap_or_default()
                    ))
                })?;
                Some(crate::session::verify::cited_lines(answer, &text))
            }
            None => None,
        };
        let nodes = crate::guard::markdown::render_source(
            &text,
            &path.display(),
            &state.config.allowed_link_hosts,
            cited.as_deref().unwrap_or_default(),
            &|text| hooks.redacted(text).into_owned(),
        );
        Ok(Section {
            path: shown(&query.path),
            anchor: shown(&section.anchor),
            heading: shown(&section.heading),
            lines: [section.lines.0, section.lines.1],
            text,
            cited_lines: cited,
            nodes,
            generation: index.version.generation,
            url: harness.site_url(&path.display(), &section.anchor).filter(|url| shown(url) == *url),
        })
    });
    respond(result, StatusCode::OK)
}
