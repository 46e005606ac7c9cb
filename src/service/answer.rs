//! One question answered by the whole harness in an ephemeral session (nothing is stored, a
//! write is refused), as `POST /v1/ask`, `/v1/chat/completions` and the MCP tool `ask` take it:
//! the principal's share of turns held, the breaker's fallback, the metrics told.

use super::{Refused, Service};
use crate::agent::AskError;
use crate::session::progress::TurnEvent;
use crate::session::store::Stored;
use crate::workspace::approval::Approver;

/// Longest question accepted.
pub const MAX_QUESTION_CHARS: usize = 8_000;

/// The tokens a turn used.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// The tokens the model calls among `events` used: as the server reported them, or as the
/// harness estimated them where it did not (what budgets count too).
pub fn usage(events: &[Stored]) -> Usage {
    let spent = crate::session::budget::Spent::of(events);
    Usage { prompt_tokens: spent.input, completion_tokens: spent.output }
}

/// A question (or a search's words) as `POST /v1/ask` and the MCP tools take it: trimmed, 1 to
/// [`MAX_QUESTION_CHARS`] characters; the message names `what` was wrong.
pub fn checked_question<'a>(what: &str, text: &'a str) -> Result<&'a str, String> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > MAX_QUESTION_CHARS {
        return Err(format!("{what} must be 1 to {MAX_QUESTION_CHARS} characters"));
    }
    Ok(text)
}

/// The tokens a one-shot `run` in `collection` used, counted in `/metrics` for its model and
/// `principal`.
pub fn count_usage(
    state: &Service,
    run: &crate::agent::Run,
    principal: &str,
    collection: super::collections::Which,
) -> Usage {
    let used = usage(&run.events);
    let model = crate::session::state::pinned_model(&run.events).unwrap_or(&state.config.llm.model);
    let collection = &state.collections.get(collection).name;
    state.metrics.tokens(model, principal, collection, used.prompt_tokens, used.completion_tokens);
    used
}

/// Answers `question` in an ephemeral session with the configured model; while the breaker is
/// open, or when the model fails, with the retrieval-only model instead (`true`: degraded).
/// `also` hears what happens, as the metrics do (the MCP server's progress). It is answered
/// from `collection`'s docs alone.
pub async fn answer(
    state: &Service,
    principal: &str,
    collection: super::collections::Which,
    question: &str,
    also: Option<crate::session::progress::Observer<'_>>,
) -> Result<(crate::agent::Run, bool), Refused> {
    answer_after(state, principal, collection, &[], question, also).await
}

/// [`answer`], after the `earlier` exchanges of a conversation the client keeps.
pub async fn answer_after(
    state: &Service,
    principal: &str,
    collection: super::collections::Which,
    earlier: &[crate::agent::Exchange],
    question: &str,
    mut also: Option<crate::session::progress::Observer<'_>>,
) -> Result<(crate::agent::Run, bool), Refused> {
    // `principal`'s share of turns, held while it is answered.
    let _share = state.shares.turn(principal)?;
    let (model, mut degraded) = state.model_or_fallback(&state.config.llm.model)?;
    let mut count = |event: &TurnEvent<'_>| {
        match event {
            TurnEvent::ToolResult { decision, .. } => state.metrics.tool_call(*decision),
            TurnEvent::Answer(text) => state.metrics.answer(text),
            _ => {}
        }
        if let Some(also) = also.as_mut() {
            also(event);
        }
    };
    // A request that times out drops this future mid-call: the model counts as failed then.
    let mut pending = ModelCall { state, model: &model, done: false, started: std::time::Instant::now() };
    let harness = &state.collections.get(collection).harness;
    let mut result =
        harness.ask_after(&state.config, &model, Approver::NotInOneShot, earlier, question, Some(&mut count)).await;
    pending.done = true;
    state.model_result(&model, !matches!(result, Err(AskError::Model(_))));
    if matches!(result, Err(AskError::Model(_))) {
        let fallback = state.model(super::FALLBACK_MODEL)?;
        result = harness
            .ask_after(&state.config, &fallback, Approver::NotInOneShot, earlier, question, Some(&mut count))
            .await;
        degraded = true;
    }
    match result {
        Ok(run) => Ok((run, degraded)),
        Err(AskError::Model(e)) => Err(Refused::Model(e.to_string())),
        Err(AskError::Log(e)) => Err(Refused::Log(e)),
        Err(e @ (AskError::Setup(_) | AskError::Runtime(_) | AskError::Unfinished)) => {
            Err(Refused::Internal(e.to_string()))
        }
    }
}

/// A model call in flight: if it is dropped unfinished after running to the request's time
/// limit (the request timed out), the breaker hears of a failure. One dropped sooner was given
/// up by its client (a hangup, an MCP cancel): no failure of the model's, so no client can
/// open the breaker for everyone by dropping its own requests.
struct ModelCall<'a> {
    state: &'a Service,
    model: &'a crate::model::Model,
    done: bool,
    started: std::time::Instant,
}

/// How much sooner than the request's time limit a dropped call still counts as timed out.
const TIMEOUT_SLACK: std::time::Duration = std::time::Duration::from_millis(500);

impl Drop for ModelCall<'_> {
    fn drop(&mut self) {
        let limit = std::time::Duration::from_secs(self.state.config.serve.request_timeout_secs);
        if !self.done && self.started.elapsed() + TIMEOUT_SLACK >= limit {
            self.state.model_result(self.model, false);
        }
    }
}
