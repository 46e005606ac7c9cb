//! Running a session's turn for a front end: in its own task (a client that disconnects does
//! not stop it), with its own log connection, under the session's writer lock, registered so a
//! cancel can reach it. The turn's events feed the metrics and, when a client follows it live,
//! its tool steps and guarded text ([`LiveEvent`]).

use std::sync::Arc;

use serde::Serialize;
use tracing::Instrument;

use super::{Conflict, Refused, Service};
use crate::guard::stream::StreamGuard;
use crate::service::answer::{Usage, usage};
use crate::session::cancel::Cancel;
use crate::session::event::{Event, StopReason};
use crate::session::progress::TurnEvent;
use crate::session::state::{self, Status};
use crate::session::turn::{TurnEnd, TurnError, Verdict, VerdictError};

/// How a turn starts.
#[derive(Debug)]
pub enum Start {
    /// With this user message (the session must be idle).
    Message(String),
    /// From where the log stands (a turn a crash or a shutdown left unfinished).
    Continue,
    /// Record that the pending write's TTL has passed (under the session's lock), tell `reply`
    /// whether it had, then go on: the model is told the write was denied.
    Expire {
        /// Told `true` once the expiry is recorded, `false` when nothing was due.
        reply: tokio::sync::oneshot::Sender<Result<bool, Refused>>,
    },
    /// Record a decision on the pending write `call` (under the same lock the turn then runs
    /// under, so nothing can slip in between), tell `reply` how it went, then go on.
    Decision {
        /// The call the approver reviewed.
        call: String,
        /// Their decision.
        verdict: Verdict,
        /// Who decided (`approver NAME`).
        by: String,
        /// Told `granted`/`denied`, or why the decision was not recorded.
        reply: tokio::sync::oneshot::Sender<Result<&'static str, Refused>>,
    },
}

/// How a turn ended, as the front ends report it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Outcome {
    /// The session.
    pub session_id: String,
    /// Why the turn stopped.
    pub stop: TurnStop,
    /// The answer, when there is one (guarded like every answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The answer's Markdown as safe nodes, for the page (`guard::markdown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_nodes: Option<Vec<crate::guard::markdown::Node>>,
    /// The seq of the answer's event (what feedback on it names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_seq: Option<u64>,
    /// The answer's citations, each marked verified when the turn retrieved its section.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<crate::session::verify::Citation>,
    /// What went wrong or why it stopped (scrubbed: it can quote a model server).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub message: Option<crate::guard::Scrubbed>,
    /// The write that waits, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<super::waiting::Pending>,
    /// True when the model server was unavailable and the retrieval-only model answered.
    pub degraded: bool,
    /// Tokens the turn's model calls used.
    pub usage: Usage,
}

/// Why a turn stopped: a stop reason of the log (`StopReason`), or it waits for a
/// decision, or there was nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStop {
    /// The model answered.
    Answered,
    /// The step limit was hit.
    StepLimit,
    /// The time limit was hit.
    TimeLimit,
    /// The model server failed.
    ModelError,
    /// A person cancelled the turn.
    Cancelled,
    /// The question's or the session's budget (tokens or cost) was spent.
    Budget,
    /// A write waits for a decision (`approval`).
    AwaitingApproval,
    /// Nothing to do: the session was idle.
    Idle,
}

impl From<StopReason> for TurnStop {
    fn from(reason: StopReason) -> TurnStop {
        match reason {
            StopReason::Answered => TurnStop::Answered,
            StopReason::StepLimit => TurnStop::StepLimit,
            StopReason::TimeLimit => TurnStop::TimeLimit,
            StopReason::ModelError => TurnStop::ModelError,
            StopReason::Cancelled => TurnStop::Cancelled,
            StopReason::Budget => TurnStop::Budget,
        }
    }
}

/// What a turn followed live tells as it happens.
#[derive(Debug)]
pub enum LiveEvent {
    /// A tool call and its result, as the trace shows it.
    Tool(serde_json::Value),
    /// More of the answer's text, guarded as the whole answer would be.
    Text(String),
}

/// Where a followed turn's live events go, as they happen, in the turn's own task (a front
/// end sends them on in its terms: `serve` as SSE events).
pub type Live = Box<dyn Fn(LiveEvent) + Send + Sync>;

/// Runs session `id`'s turn in its own task and waits for its outcome.
pub async fn run(state: Arc<Service>, id: String, start: Start) -> Result<Outcome, Refused> {
    run_live(state, id, start, None).await
}

/// Like [`run`], sending tool steps and guarded text to `live` as they happen.
pub async fn run_live(state: Arc<Service>, id: String, start: Start, live: Option<Live>) -> Result<Outcome, Refused> {
    tokio::spawn(drive(state, id, start, live).in_current_span())
        .await
        .map_err(|e| Refused::Internal(format!("the turn's task failed: {e}")))?
}

/// What a turn needs, checked under the session's lock.
struct Ready {
    /// The task's own log connection.
    log: crate::session::store::Log,
    /// The session's writer lock, held for the turn.
    _lock: crate::session::store::SessionLock,
    /// The session's model, or the retrieval-only one.
    model: Arc<crate::model::Model>,
    /// True when it is the retrieval-only fallback.
    degraded: bool,
    /// The last seq before the turn (its usage is counted after it).
    before: u64,
    /// The session's owner (its principal), for the metrics.
    owner: String,
    /// The collection the session reads.
    collection: super::collections::Which,
    /// The turn's slot, held for the turn.
    _slot: tokio::sync::OwnedSemaphorePermit,
    /// The owner's share of turns, held for the turn.
    _share: crate::service::shares::Held,
}

fn prepare(state: &Arc<Service>, id: &str, start: Start) -> Result<Ready, Refused> {
    let busy = || Refused::conflict(Conflict::TurnInProgress, format!("session {id} has a turn running"));
    if state.running.lock().unwrap_or_else(|p| p.into_inner()).contains_key(id) {
        return fail(start, busy());
    }
    let Ok(slot) = state.turn_slots.clone().try_acquire_owned() else {
        let error = Refused::Overloaded {
            message: "serve.max_concurrent turns are running; try again shortly".into(),
            retry_after: 1,
        };
        return fail(start, error);
    };
    let mut log = match state.log() {
        Ok(log) => log,
        Err(e) => return fail(start, e.into()),
    };
    let lock = match log.lock(id) {
        Ok(lock) => lock,
        Err(e) => return fail(start, e.into()),
    };
    let events = match log.events_after(id, 0) {
        Ok(events) => events,
        Err(e) => return fail(start, e.into()),
    };
    if state::closed(&events) {
        return fail(start, closed(id));
    }
    let collection = match state.collections.of_session(state::reads_collection(&events)) {
        Ok(which) => which,
        Err(e) => return fail(start, e),
    };
    let harness = &state.collections.get(collection).harness;
    // The owner's share of turns, held for the turn: one user's turns cannot take every slot.
    let owner = state::owner(&events).unwrap_or_default().to_string();
    let share = match state.shares.turn(&owner) {
        Ok(share) => share,
        Err(e) => return fail(start, e),
    };
    let before = events.last().map_or(0, |s| s.seq);
    let pinned = state::pinned_model(&events).unwrap_or(&state.config.llm.model).to_string();
    let (model, degraded) = match state.model_or_fallback(&pinned) {
        Ok(found) => found,
        Err(e) => return fail(start, e),
    };
    match start {
        Start::Message(text) => {
            match state::status(&events) {
                Status::Idle => {}
                Status::AwaitingApproval => {
                    return Err(Refused::conflict(
                        Conflict::AwaitingApproval,
                        format!("session {id} waits for a decision on a write; see GET /v1/approvals?state=pending"),
                    ));
                }
                Status::InTurn => {
                    return Err(Refused::conflict(
                        Conflict::TurnInProgress,
                        format!("session {id} has an unfinished turn; finish it with POST /v1/sessions/{id}/resume"),
                    ));
                }
                Status::Closed => return Err(closed(id)),
            }
            // A session whose budget is spent takes no new message (the turn would stop at once).
            let budget = &state.config.budget;
            if let Some(why) = crate::session::budget::reached_by_session(budget, &pinned, &events) {
                return Err(Refused::BudgetExhausted(why));
            }
            log.append(id, Event::UserMessage { text })?;
        }
        Start::Continue => {}
        Start::Expire { reply } => {
            let deps = harness.deps(&state.config);
            match deps.turn(&model, &mut log, id).expire_due() {
                Ok(true) => {
                    state.metrics.approval("expired");
                    let _ = reply.send(Ok(true));
                }
                Ok(false) => {
                    let _ = reply.send(Ok(false));
                    return Err(Refused::conflict(Conflict::NotPending, format!("session {id} has no expired write")));
                }
                Err(e) => {
                    let _ = reply.send(Err(e.into()));
                    return Err(untold());
                }
            }
        }
        Start::Decision { call, verdict, by, reply } => {
            let outcome = match &verdict {
                Verdict::Allow(_) => "granted",
                Verdict::Deny(_) => "denied",
            };
            let deps = harness.deps(&state.config);
            let recorded = deps.turn(&model, &mut log, id).record_verdict(Some(&call), verdict, &by);
            let answer = match recorded {
                Ok(()) => {
                    state.metrics.approval(outcome);
                    Ok(outcome)
                }
                Err(VerdictError::Expired(message)) => {
                    state.metrics.approval("expired");
                    Err(Refused::conflict(Conflict::Expired, message))
                }
                Err(VerdictError::NothingWaits(message)) => Err(Refused::conflict(Conflict::NotPending, message)),
                Err(VerdictError::Log(e)) => Err(e.into()),
            };
            // An expired request was recorded as denied: the turn goes on without the write.
            let stop = matches!(&answer, Err(e) if !matches!(e, Refused::Conflict { conflict: Conflict::Expired, .. }));
            let _ = reply.send(answer);
            if stop {
                return Err(untold());
            }
        }
    }
    Ok(Ready { log, _lock: lock, model, degraded, before, owner, collection, _slot: slot, _share: share })
}

/// Session `id` takes nothing more.
fn closed(id: &str) -> Refused {
    Refused::conflict(
        Conflict::SessionClosed,
        format!("session {id} is closed; start a new one with POST /v1/sessions"),
    )
}

/// Fails a start, telling a waiting decision or expiry why (the turn's own result then only
/// says it did not run: whoever waited on the reply was told).
fn fail(start: Start, error: Refused) -> Result<Ready, Refused> {
    match start {
        Start::Decision { reply, .. } => {
            let _ = reply.send(Err(error));
            Err(untold())
        }
        Start::Expire { reply } => {
            let _ = reply.send(Err(error));
            Err(untold())
        }
        _ => Err(error),
    }
}

/// The result of a decision's or an expiry's turn that did not go on: why was sent on its
/// reply, and nobody reads this.
fn untold() -> Refused {
    Refused::conflict(Conflict::NotPending, "the decision was not recorded")
}

async fn drive(state: Arc<Service>, id: String, start: Start, live: Option<Live>) -> Result<Outcome, Refused> {
    let Ready { mut log, _lock, model, degraded, before, owner, collection, _slot, _share } =
        crate::runtime::blocking(|| prepare(&state, &id, start))?;
    let (canceller, mut cancel) = Cancel::pair();
    state.running.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), canceller);
    let mut listener =
        Listener { state: &state, live: live.as_ref(), text: StreamGuard::new(&state.config.allowed_link_hosts) };
    // A write waits for an approver (the turn's default), whatever APPROVE says in the
    // server's environment.
    let harness = &state.collections.get(collection).harness;
    let deps = harness.deps(&state.config);
    let end = deps.turn(&model, &mut log, &id).observed(&mut |event| listener.hear(event)).drive(&mut cancel).await;
    listener.finish_text();
    state.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    state.model_result(&model, !matches!(end, Err(TurnError::Model(_))));
    let turn_events = crate::runtime::blocking(|| log.events_after(&id, before))?;
    let usage = usage(&turn_events);
    let name = &state.collections.get(collection).name;
    state.metrics.tokens(&model.name(), &owner, name, usage.prompt_tokens, usage.completion_tokens);
    let mut outcome = Outcome {
        session_id: id.clone(),
        stop: TurnStop::Idle,
        answer: None,
        answer_nodes: None,
        answer_seq: None,
        citations: Vec::new(),
        message: None,
        approval: None,
        degraded,
        usage,
    };
    match end {
        Ok(TurnEnd::Answered { answer, citations, .. }) => {
            outcome.stop = TurnStop::Answered;
            outcome.answer_seq =
                turn_events.iter().rev().find(|s| matches!(s.event, Event::Answer { .. })).map(|s| s.seq);
            outcome.citations = citations;
            let hooks = &harness.hooks;
            let redact = |text: &str| hooks.redacted(text).into_owned();
            outcome.answer_nodes =
                Some(crate::guard::markdown::render(&answer, &state.config.allowed_link_hosts, &redact));
            outcome.answer = Some(answer);
        }
        Ok(TurnEnd::Stopped { reason, message, .. }) => {
            outcome.stop = reason.into();
            outcome.message = Some(crate::guard::Scrubbed::new(&message));
        }
        Ok(TurnEnd::AwaitingApproval { .. }) => {
            outcome.stop = TurnStop::AwaitingApproval;
            let events = log.events_after(&id, 0)?;
            // It expires on time, whether or not anyone looks.
            super::waiting::schedule(&state, &id, &events);
            outcome.approval = super::waiting::pending(&state, &id, &events);
        }
        Ok(TurnEnd::Idle) => outcome.stop = TurnStop::Idle,
        Err(TurnError::Model(e)) => {
            outcome.stop = TurnStop::ModelError;
            outcome.message = Some(crate::guard::Scrubbed::new(&e.to_string()));
        }
        Err(TurnError::Log(e)) => return Err(e.into()),
    }
    Ok(outcome)
}

/// What a turn tells: tool calls counted by decision for the metrics, and, when a
/// client streams the turn, its `tool` steps and its text, guarded one model call at a time as
/// the call's answer would be.
struct Listener<'a> {
    /// Where the counters are.
    state: &'a Service,
    /// A stream following the turn, if any.
    live: Option<&'a Live>,
    /// The current model call's text, let out only as far as guarding it whole allows.
    text: StreamGuard,
}

impl Listener<'_> {
    fn hear(&mut self, event: &TurnEvent<'_>) {
        match event {
            TurnEvent::ToolResult { call, result, ms, decision } => {
                self.state.metrics.tool_call(*decision);
                if let Some(live) = self.live {
                    let chars = self.state.config.limits.trace_result_chars;
                    let line = crate::trace::tool_line(call, result, *ms, *decision, chars);
                    live(LiveEvent::Tool(line));
                }
            }
            TurnEvent::ModelCall { .. } => {
                self.finish_text();
                self.text = StreamGuard::new(&self.state.config.allowed_link_hosts);
            }
            TurnEvent::TextDelta(delta) => {
                let piece = self.text.push(delta);
                self.send_text(piece);
            }
            TurnEvent::ToolCall(_)
            | TurnEvent::ModelReplied { .. }
            | TurnEvent::SentBack(_)
            | TurnEvent::Replaced(_)
            | TurnEvent::ApprovalRequired { .. }
            | TurnEvent::Hook { .. }
            | TurnEvent::Searched(_)
            | TurnEvent::Stopped { .. } => {}
            TurnEvent::Answer(text) => self.state.metrics.answer(text),
        }
    }

    /// Lets out what the guard still holds of the current call's text.
    fn finish_text(&mut self) {
        let piece = self.text.finish();
        self.send_text(piece);
    }

    fn send_text(&self, piece: Option<String>) {
        if let (Some(live), Some(piece)) = (self.live, piece) {
            live(LiveEvent::Text(piece));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API's stop words are the ones the log and the CLI use.
    #[test]
    fn a_turn_stop_is_written_as_its_reason_or_status() {
        let reasons = [
            StopReason::Answered,
            StopReason::StepLimit,
            StopReason::TimeLimit,
            StopReason::ModelError,
            StopReason::Cancelled,
            StopReason::Budget,
        ];
        for reason in reasons {
            assert_eq!(serde_json::to_value(TurnStop::from(reason)).ok(), Some(reason.as_str().into()));
        }
        for (stop, status) in [(TurnStop::AwaitingApproval, Status::AwaitingApproval), (TurnStop::Idle, Status::Idle)] {
            assert_eq!(serde_json::to_value(stop).ok(), Some(status.as_str().into()));
        }
    }
}
