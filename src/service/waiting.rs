//! What a session waits for: the write (or a call a rule asks about) pending a decision, with
//! the conversation it came from, and when it expires. The routes that list and decide
//! (`approvals`), the turns that pause (`turns`) and the timer that expires (`expiry`) read it
//! here, below all three.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::Service;
use crate::session::event::Event;
use crate::session::state::{self, Next};
use crate::session::store::Stored;
use crate::tools::Toolbox;

/// A write (or a call an operator's rule asks about) waiting for a decision.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    /// The conversation it came from: the session's latest questions and answers (at most 6,
    /// `CONTEXT_MESSAGES`, each cut to 2,000 bytes, `CONTEXT_BYTES`), oldest first, ending with
    /// the question whose turn asks, so an approver sees why the write is wanted.
    pub conversation: Vec<Said>,
}

/// Messages of the conversation a pending write shows.
pub const CONTEXT_MESSAGES: usize = 6;
/// Bytes of each (a longer message is cut, with an ellipsis).
pub const CONTEXT_BYTES: usize = 2_000;

/// One message of a conversation: the person's question or the answer they were shown.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Said {
    /// `user` or `assistant`.
    #[schema(value_type = Speaker)]
    pub role: &'static str,
    /// What was said (scrubbed in the log; answers were guarded when shown).
    pub text: String,
}

/// Who said a message of the conversation (`Said`'s `role`; this names the values in the OpenAPI
/// document).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum Speaker {
    /// The person.
    User,
    /// The answer they were shown.
    Assistant,
}

/// The latest questions and answers among `events`, oldest first.
fn conversation(events: &[Stored]) -> Vec<Said> {
    let said: Vec<Said> = events
        .iter()
        .filter_map(|s| match &s.event {
            Event::UserMessage { text } => Some(("user", text)),
            Event::Answer { text, .. } => Some(("assistant", text)),
            _ => None,
        })
        .map(|(role, text)| Said { role, text: crate::guard::clip(text, CONTEXT_BYTES) })
        .collect();
    said[said.len().saturating_sub(CONTEXT_MESSAGES)..].to_vec()
}

/// The write session `id` waits for, if any.
pub fn pending(state: &Service, id: &str, events: &[Stored]) -> Option<Pending> {
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

/// The pending writes this replica will expire: (when, session).
#[derive(Default)]
pub struct Schedule {
    /// Due times (ms since the epoch) and sessions, soonest first.
    pub(super) due: Mutex<BTreeSet<(u64, String)>>,
    /// Wakes the timer when an earlier expiry is added. Shared, so the sleeping timer holds it
    /// and not the server's state.
    pub(super) changed: Arc<tokio::sync::Notify>,
}

/// When the write session `events` wait for expires (ms since the epoch), if one waits.
pub fn expires_at(state: &Service, events: &[Stored]) -> Option<u64> {
    let Next::Decide(pending) = state::next(events) else { return None };
    let ttl_ms = state.config.session.approval_ttl_secs.saturating_mul(1000);
    Some(pending.requested_at_ms.saturating_add(ttl_ms))
}

/// True when the write session `events` wait for has passed its TTL.
pub fn is_due(state: &Service, events: &[Stored]) -> bool {
    expires_at(state, events).is_some_and(|at| crate::session::turn::now_ms() >= at)
}

/// Schedules session `id`'s pending write (as `events` show it) to expire on time.
pub fn schedule(state: &Service, id: &str, events: &[Stored]) {
    if let Some(at) = expires_at(state, events) {
        state.expiry.due.lock().unwrap_or_else(|p| p.into_inner()).insert((at, id.to_string()));
        state.expiry.changed.notify_one();
    }
}

/// For readers that list many sessions without waiting: a due write is handed to the timer
/// (expired at once) and never shown as pending; true when `events` show one.
pub fn hand_over_if_due(state: &Service, id: &str, events: &[Stored]) -> bool {
    let due = is_due(state, events);
    if due {
        schedule(state, id, events);
    }
    due
}
