//! Where a session stands, read from its events alone: what the harness must do next, which
//! write waits for a person, which session grants are in force. Pure functions of the log, so a
//! restarted process decides exactly what the crashed one would have.

use super::event::{CallRecord, Event, Origin, Scope};
use super::store::Stored;

/// The one thing to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next<'a> {
    /// Nothing: the session waits for a user message.
    Idle,
    /// Ask the model; `steps` model calls were already made in this turn.
    CallModel {
        /// Model calls made in this turn so far.
        steps: u32,
    },
    /// Run this call (for `write_file`: check it and request approval).
    Run(Call<'a>),
    /// This write waits for a decision.
    Decide(Pending<'a>),
    /// This write (or a call a rule asked about) was allowed and has no result yet: do it (once).
    Write {
        /// The call.
        call: Call<'a>,
        /// The request's idempotency key.
        key: &'a str,
    },
    /// The model answered but the turn's end was not recorded; `shown` is the answer already
    /// recorded for it, if one was (the model's text, or what replaced it).
    Finish {
        /// The model's final text.
        text: &'a str,
        /// The `Answer` event's text, when it follows.
        shown: Option<&'a str>,
        /// Model calls made in this turn.
        steps: u32,
    },
}

/// One call of the latest assistant message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call<'a> {
    /// What the model asked for.
    pub record: &'a CallRecord,
    /// Its position in the message (calls past the per-step limit are refused by position).
    pub index: usize,
    /// The assistant message's sequence number.
    pub assistant_seq: u64,
    /// Model calls made in this turn (the step this call belongs to).
    pub step: u32,
    /// Who asked: the model, or the harness (its retrieve-first search).
    pub origin: Origin,
}

/// A write that waits for a person.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pending<'a> {
    /// The call.
    pub call: Call<'a>,
    /// The path it wants to write (or, asked about by a rule, what the call is about).
    pub path: &'a str,
    /// The operator's rule that asks a person about the call, if one does.
    pub rule: Option<&'a str>,
    /// When it was requested (ms since the epoch).
    pub requested_at_ms: u64,
    /// The request's sequence number.
    pub seq: u64,
}

impl Pending<'_> {
    /// True once `ttl_secs` have passed since the request.
    pub fn expired(&self, now_ms: u64, ttl_secs: u64) -> bool {
        now_ms >= self.requested_at_ms.saturating_add(ttl_secs.saturating_mul(1000))
    }
}

/// What the harness must do next in this session.
pub fn next(events: &[Stored]) -> Next<'_> {
    let Some(user_at) = events.iter().rposition(|s| matches!(s.event, Event::UserMessage { .. })) else {
        return Next::Idle;
    };
    let turn = &events[user_at + 1..];
    if turn.iter().any(|s| matches!(s.event, Event::Stopped { .. } | Event::Interrupted { .. })) {
        return Next::Idle;
    }
    let steps =
        turn.iter().filter(|s| matches!(s.event, Event::AssistantMessage { origin: Origin::Model, .. })).count() as u32;
    let Some(at) = turn.iter().rposition(|s| matches!(s.event, Event::AssistantMessage { .. })) else {
        return Next::CallModel { steps: 0 };
    };
    let Event::AssistantMessage { text, tool_calls, origin, .. } = &turn[at].event else {
        return Next::CallModel { steps };
    };
    let after = &turn[at + 1..];
    if tool_calls.is_empty() {
        if after.iter().any(|s| matches!(s.event, Event::Correction { .. })) {
            return Next::CallModel { steps };
        }
        let shown = after.iter().find_map(|s| match &s.event {
            Event::Answer { text, .. } => Some(text.as_str()),
            _ => None,
        });
        return Next::Finish { text, shown, steps };
    }
    let assistant_seq = turn[at].seq;
    for (index, record) in tool_calls.iter().enumerate() {
        let call = Call { record, index, assistant_seq, step: steps, origin: *origin };
        let id = record.id.as_str();
        let resolved = after.iter().any(|s| match &s.event {
            Event::ToolResult { call_id, .. }
            | Event::ApprovalDenied { call_id, .. }
            | Event::ApprovalExpired { call_id } => call_id == id,
            _ => false,
        });
        if resolved {
            continue;
        }
        let request = after.iter().find_map(|s| match &s.event {
            Event::ApprovalRequested { call_id, path, key, rule } if call_id == id => {
                Some((s, path, key, rule.as_deref()))
            }
            _ => None,
        });
        let Some((requested, path, key, rule)) = request else {
            return Next::Run(call);
        };
        let granted = after.iter().any(|s| matches!(&s.event, Event::ApprovalGranted { call_id, .. } if call_id == id));
        if granted {
            return Next::Write { call, key };
        }
        return Next::Decide(Pending { call, path, rule, requested_at_ms: requested.at_ms, seq: requested.seq });
    }
    Next::CallModel { steps }
}

/// The events of the open turn: everything after the latest user message.
pub fn this_turn(events: &[Stored]) -> &[Stored] {
    match events.iter().rposition(|s| matches!(s.event, Event::UserMessage { .. })) {
        Some(at) => &events[at + 1..],
        None => &[],
    }
}

/// The text of the latest user message.
pub fn latest_user_message(events: &[Stored]) -> Option<&str> {
    events.iter().rev().find_map(|s| match &s.event {
        Event::UserMessage { text } => Some(text.as_str()),
        _ => None,
    })
}

/// Bytes of the message before a follow-up that its search carries along.
const MAX_FOLLOWED_BYTES: usize = 1_000;

/// A user message shorter than this many words is a follow-up: retrieve-first searches for it
/// together with the user's message before it ("and for annual plans?").
const FOLLOW_UP_WORDS: usize = 6;

/// What retrieve-first searches for, when the open turn has no assistant message yet: the
/// user's message, with the one before it when it is a short follow-up.
pub fn retrieval_query(events: &[Stored]) -> Option<String> {
    let at = events.iter().rposition(|s| matches!(s.event, Event::UserMessage { .. }))?;
    let asked = events[at + 1..].iter().any(|s| matches!(s.event, Event::AssistantMessage { .. }));
    let Event::UserMessage { text } = &events[at].event else {
        return None;
    };
    if asked {
        return None;
    }
    let before = events[..at].iter().rev().find_map(|s| match &s.event {
        Event::UserMessage { text } => Some(text.as_str()),
        _ => None,
    });
    match before {
        Some(before) if text.split_whitespace().count() < FOLLOW_UP_WORDS => {
            let before = crate::guard::redact::floor_char_boundary(before, MAX_FOLLOWED_BYTES);
            // A line apart: the earlier message's first word starts a sentence (a capital
            // there is no name, `index::query::starts_sentence`).
            Some(format!("{text}\n{before}"))
        }
        _ => Some(text.clone()),
    }
}

/// The session grant that covers a write to `path`, if any: its prefix and sequence number.
pub fn covering_grant<'a>(events: &'a [Stored], path: &str) -> Option<(&'a str, u64)> {
    events.iter().find_map(|s| match &s.event {
        Event::ApprovalGranted { scope: Scope::Session { prefix }, .. } if covers(prefix, path) => {
            Some((prefix.as_str(), s.seq))
        }
        _ => None,
    })
}

/// True when `prefix` covers `path` component by component: `notes/` and `notes/faq` cover
/// `notes/faq/a.md`, but `notes/fa` does not.
pub fn covers(prefix: &str, path: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    !prefix.is_empty() && (path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/')))
}

/// A prefix for "allow for this session" that is not a clean folder under notes/ holding the
/// requested file: the prefix (clipped) and the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the prefix `{prefix}` must be a folder under notes/ that holds the requested file {path}")]
pub struct BadScope {
    /// The prefix asked for, clipped to 120 characters.
    prefix: String,
    /// The file the write asks for.
    path: String,
}

/// The scope of "allow for this session" for a write to `path`: `prefix` (default: the file's
/// folder) must be a clean folder under notes/ that holds the file.
pub fn session_scope(path: &str, prefix: Option<&str>) -> Result<Scope, BadScope> {
    let folder = path.rsplit_once('/').map_or("notes", |(folder, _)| folder);
    let prefix = prefix.unwrap_or(folder).trim_end_matches('/');
    let clean = prefix.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
    if clean && covers(prefix, path) && (prefix == "notes" || prefix.starts_with("notes/")) {
        Ok(Scope::Session { prefix: format!("{prefix}/") })
    } else {
        Err(BadScope { prefix: crate::guard::clip(prefix, 120), path: path.to_string() })
    }
}

/// The model a session uses: the latest re-pin, else the one it started with.
pub fn pinned_model(events: &[Stored]) -> Option<&str> {
    events.iter().rev().find_map(|s| match &s.event {
        Event::ModelPinned { model } | Event::SessionStarted { model, .. } => Some(model.as_str()),
        _ => None,
    })
}

/// The principal that owns the session (sessions made over HTTP), if any.
pub fn owner(events: &[Stored]) -> Option<&str> {
    match events.first().map(|s| &s.event) {
        Some(Event::SessionStarted { principal, .. }) => principal.as_deref(),
        _ => None,
    }
}

/// The collection the session recorded when it started (`serve`'s sessions), if any.
pub fn collection(events: &[Stored]) -> Option<&str> {
    match events.first().map(|s| &s.event) {
        Some(Event::SessionStarted { collection, .. }) => collection.as_deref(),
        _ => None,
    }
}

/// The collection the session reads: the one it recorded, else `default` (a session from
/// before collections, or the command line's).
pub fn reads_collection(events: &[Stored]) -> &str {
    collection(events).unwrap_or(crate::config::DEFAULT_COLLECTION)
}

/// The session's status, for listings and the API (written as `Status::as_str` says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = SessionStatus, rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a user message.
    Idle,
    /// A turn is unfinished (running elsewhere, or cut short by a crash: resume it).
    InTurn,
    /// A write waits for a person.
    AwaitingApproval,
    /// Closed: it takes no more messages, and nothing in it waits.
    Closed,
}

impl Status {
    /// The word shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::InTurn => "in_turn",
            Status::AwaitingApproval => "awaiting_approval",
            Status::Closed => "closed",
        }
    }
}

/// True once the session was closed.
pub fn closed(events: &[Stored]) -> bool {
    events.iter().rev().any(|s| matches!(s.event, Event::SessionClosed { .. }))
}

/// The status of the session whose events these are.
pub fn status(events: &[Stored]) -> Status {
    if closed(events) {
        return Status::Closed;
    }
    match next(events) {
        Next::Idle => Status::Idle,
        Next::Decide(_) => Status::AwaitingApproval,
        _ => Status::InTurn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(seq: u64, text: &str) -> Stored {
        Stored { seq, at_ms: 0, event: Event::UserMessage { text: text.into() } }
    }

    #[test]
    fn retrieve_first_searches_a_short_follow_up_with_the_question_before_it() {
        let answered = |seq| Stored { seq, at_ms: 0, event: Event::Answer { text: "14 days".into(), revision: None } };
        let cases: &[(Vec<Stored>, Option<&str>)] = &[
            (vec![], None),
            (vec![user(1, "how long is the refund window")], Some("how long is the refund window")),
            (
                vec![user(1, "how long is the refund window"), answered(2), user(3, "and for annual plans?")],
                Some("and for annual plans?\nhow long is the refund window"),
            ),
            (
                vec![user(1, "refunds"), answered(2), user(3, "which webhook events are sent when an invoice is paid")],
                Some("which webhook events are sent when an invoice is paid"),
            ),
            (
                vec![
                    user(1, "q"),
                    Stored {
                        seq: 2,
                        at_ms: 0,
                        event: Event::AssistantMessage {
                            text: String::new(),
                            tool_calls: Vec::new(),
                            usage: None,
                            estimated: None,
                            origin: Origin::Harness,
                        },
                    },
                ],
                None,
            ),
        ];
        for (events, expected) in cases {
            assert_eq!(retrieval_query(events).as_deref(), *expected, "{events:?}");
        }
    }

    #[test]
    fn prefixes_cover_whole_components() {
        for (prefix, path, expected) in [
            ("notes/", "notes/a.md", true),
            ("notes", "notes/a.md", true),
            ("notes/faq", "notes/faq/a.md", true),
            ("notes/faq/", "notes/faq", true),
            ("notes/fa", "notes/faq/a.md", false),
            ("notes/a.md", "notes/a.md.bak", false),
            ("", "notes/a.md", false),
            ("/", "notes/a.md", false),
            ("docs/", "notes/a.md", false),
        ] {
            assert_eq!(covers(prefix, path), expected, "{prefix} covers {path}");
        }
    }

    /// "Allow for this session" takes a clean folder under notes/ that holds the file, and
    /// says which prefix and file when it is not one.
    #[test]
    fn a_session_scope_is_a_folder_under_notes_that_holds_the_file() {
        assert_eq!(session_scope("notes/faq/a.md", None), Ok(Scope::Session { prefix: "notes/faq/".into() }));
        assert_eq!(session_scope("notes/faq/a.md", Some("notes/")), Ok(Scope::Session { prefix: "notes/".into() }));
        for prefix in ["docs", "notes/../docs", "notes/other", "notes//faq", "notes/fa"] {
            let error = session_scope("notes/faq/a.md", Some(prefix)).expect_err(prefix);
            assert_eq!(
                error.to_string(),
                format!(
                    "the prefix `{prefix}` must be a folder under notes/ that holds the requested file notes/faq/a.md"
                )
            );
        }
    }
}
