//! `POST /v1/chat/completions` and `GET /v1/models`, OpenAI-compatible, so chat front ends that
//! speak that API (Open WebUI and others) can use docs-agent as a model. The last user message
//! is the question; the client's earlier user and assistant messages are the conversation
//! before it (a short follow-up is retrieved for with the question before it). It is answered
//! like `POST /v1/ask` (ephemeral, no writes, guarded, degraded to retrieval-only when the model
//! server is down). Client-sent `system` (and `developer`, `tool`) messages are dropped: the
//! operator's rules and AGENTS.md are the only instructions. `"stream": true` sends the answer
//! as `chat.completion.chunk` events, a paragraph at a time, then `data: [DONE]`. With
//! `[[collections]]`, the model name picks the collection (`"model": "billing"`); any other
//! name reads the first collection the caller reads, and `GET /v1/models` lists the caller's.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::{ApiError, ErrorBody};
use crate::agent::{Exchange, Stop};
use crate::config::Role;
use crate::service::Principal;

/// The model name docs-agent answers to.
pub const MODEL_NAME: &str = "docs-agent";

/// The request (fields a front end may send that docs-agent does not use are accepted and ignored).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChatRequest {
    /// The model asked for: the name of a collection the caller reads reads that collection; any
    /// other name is answered by docs-agent from the first collection the caller reads.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Stream the answer.
    #[serde(default)]
    pub stream: bool,
}

/// One message.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, `tool`.
    pub role: String,
    /// Text, or a list of parts (`{"type": "text", "text": ...}`).
    #[serde(default)]
    pub content: Value,
}

impl ChatMessage {
    fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        }
    }
}

/// `GET /v1/models`
#[utoipa::path(
    get,
    path = "/v1/models",
    summary = "OpenAI-compatible model list (docs-agent, and with [[collections]] each collection the caller reads)",
    responses(
        (status = 200, description = "the list: docs-agent, then the caller's collections", body = Object),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
    )
)]
pub async fn models(State(state): State<Arc<AppState>>, Extension(principal): Extension<Principal>) -> Response {
    if let Err(e) = principal.require(Role::Ask) {
        return e.into_response();
    }
    let mut data = vec![json!({"id": MODEL_NAME, "object": "model", "owned_by": "docs-agent"})];
    if !state.config.collections.is_empty() {
        data.extend(
            state
                .collections
                .readable(&principal)
                .map(|c| json!({"id": c.name, "object": "model", "owned_by": "docs-agent"})),
        );
    }
    Json(json!({"object": "list", "data": data})).into_response()
}

/// `POST /v1/chat/completions`
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    summary = "OpenAI-compatible chat completion: the last user message is answered like /v1/ask (set \"stream\": true for chat.completion.chunk events and [DONE])",
    request_body = ChatRequest,
    responses(
        (status = 200, description = "a chat.completion, or a text/event-stream of chunks", content(
            (Object = "application/json"),
            (String = "text/event-stream"),
        )),
        (status = 400, description = "no user message, or one too long (bad_request)", body = ErrorBody),
        (status = 403, description = "missing role (forbidden)", body = ErrorBody),
        (status = 429, description = "rate limited, or too_many_turns: this principal runs serve.max_turns_per_principal turns already (Retry-After)", body = ErrorBody,
         headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 502, description = "the model server failed (model_error)", body = ErrorBody),
    )
)]
pub async fn completions(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    body: Result<Json<ChatRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let request = match principal.require(Role::Ask).map_err(ApiError::from).and_then(|()| {
        body.map_err(|e| {
            ApiError::body(e, "{\"model\": \"docs-agent\", \"messages\": [{\"role\": \"user\", \"content\": \"...\"}]}")
        })
    }) {
        Ok(Json(request)) => request,
        Err(e) => return e.into_response(),
    };
    let Some(last) = request.messages.iter().rposition(|m| m.role == "user") else {
        return ApiError::bad_request("messages has no user message").into_response();
    };
    let question = request.messages[last].text();
    let earlier = exchanges(&request.messages[..last]);
    let limit = crate::service::answer::MAX_QUESTION_CHARS;
    if earlier.iter().any(|e| e.user.chars().count() > limit || e.assistant.chars().count() > 4 * limit) {
        return ApiError::bad_request(format!(
            "an earlier message is too long: user messages may be at most {limit} characters, assistant messages {}",
            4 * limit
        ))
        .into_response();
    }
    if question.trim().is_empty() || question.chars().count() > crate::service::answer::MAX_QUESTION_CHARS {
        return ApiError::bad_request(format!(
            "the last user message must be 1 to {} characters",
            crate::service::answer::MAX_QUESTION_CHARS
        ))
        .into_response();
    }
    // A model named as a collection the caller reads is that collection; any other name, the
    // first the caller reads.
    // One the caller may not read is any other name: it leaks no collection's existence.
    let named = request.model.as_deref().filter(|m| state.collections.named(m).is_some() && principal.reads(m));
    let collection = match state.collections.chosen(&principal, named) {
        Ok(which) => which,
        Err(e) => return e.into_response(),
    };
    let model_name = named.unwrap_or(MODEL_NAME).to_string();
    let answered =
        crate::service::answer::answer_after(&state, &principal.name, collection, &earlier, question.trim(), None)
            .await;
    let (run, degraded) = match answered {
        Ok(done) => done,
        Err(e) => return e.into_response(),
    };
    let usage = crate::service::answer::count_usage(&state, &run, &principal.name, collection);
    let text = match run.stop {
        Stop::Answered => run.answer,
        _ => format!("docs-agent could not answer: {}", run.answer),
    };
    let id = format!("chatcmpl-{}", run.session);
    let created = crate::session::turn::now_ms() / 1000;
    let usage = json!({"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                       "total_tokens": usage.prompt_tokens + usage.completion_tokens});
    if !request.stream {
        return Json(json!({
            "id": id, "object": "chat.completion", "created": created, "model": model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage,
            "docs_agent": {"degraded": degraded, "stop": run.stop.as_str()},
        }))
        .into_response();
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        Event::default().data(
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model_name,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.extend(paragraphs(&text).into_iter().map(|p| chunk(json!({"content": p}), None)));
    events.push(chunk(json!({}), Some("stop")));
    events.push(Event::default().data("[DONE]"));
    Sse::new(futures_util::stream::iter(events.into_iter().map(Ok::<_, Infallible>))).into_response()
}

/// Most earlier exchanges kept from a client's conversation (the newest); older ones are left
/// out, as compaction would summarise them anyway.
const MAX_EXCHANGES: usize = 20;

/// The client's conversation before its last user message, as exchanges: each user message
/// with the assistant messages after it. System, developer and tool messages are dropped.
fn exchanges(messages: &[ChatMessage]) -> Vec<Exchange> {
    let mut out: Vec<Exchange> = Vec::new();
    for message in messages {
        match message.role.as_str() {
            "user" => out.push(Exchange { user: message.text(), assistant: String::new() }),
            "assistant" => {
                if let Some(last) = out.last_mut() {
                    if !last.assistant.is_empty() {
                        last.assistant.push_str("\n\n");
                    }
                    last.assistant.push_str(&message.text());
                }
            }
            _ => {}
        }
    }
    let skip = out.len().saturating_sub(MAX_EXCHANGES);
    out.into_iter().skip(skip).filter(|e| !e.user.trim().is_empty()).collect()
}

/// `text` cut after each blank line, so the pieces join back to it exactly.
fn paragraphs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\n\n") {
        out.push(&rest[..at + 2]);
        rest = &rest[at + 2..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}
