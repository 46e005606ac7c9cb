//! The events of a session, a closed set. The log of these events is the session's state; the
//! messages sent to the model are a projection of it (see `projection`). Every text in an
//! event is scrubbed before it is stored: [`Event::scrubbed`] is applied by the store itself.

use serde::{Deserialize, Serialize};

use crate::guard;
use crate::tools::Decision;

/// One tool call as the model asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The id the result must carry.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them (scrubbed).
    pub arguments: String,
}

/// Where a policy hook applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookStage {
    /// Before a tool call runs.
    PreTool,
    /// On a tool call's result.
    PostTool,
    /// Before an answer is taken.
    Stop,
}

impl HookStage {
    /// The word in the log and the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            HookStage::PreTool => "pre_tool",
            HookStage::PostTool => "post_tool",
            HookStage::Stop => "stop",
        }
    }
}

/// Tokens one model call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tokens {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// Who asked for an assistant message's tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The model: the message is one of its replies, a step of the turn.
    #[default]
    Model,
    /// The harness: the search it runs for the user's message before the first model call
    /// (retrieve-first). It is not a step, and the model sees it as a call it made.
    Harness,
}

impl Origin {
    /// True for the model's own messages (the stored default, left out of the JSON).
    pub fn is_model(&self) -> bool {
        *self == Origin::Model
    }
}

/// Why the harness sent a reply back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CorrectionKind {
    /// The answer cites no section retrieved in this turn, or quotes text that is not in one.
    Unverified,
    /// The reply looks like a tool call the harness could not read unambiguously.
    ToolCall,
    /// The reply copies the tool's output (a fence tag) instead of answering.
    Copied,
}

impl CorrectionKind {
    /// The word shown in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            CorrectionKind::Unverified => "unverified",
            CorrectionKind::ToolCall => "tool_call",
            CorrectionKind::Copied => "copied",
        }
    }
}

/// How far an approval reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This one write.
    Once,
    /// Writes under this path prefix, in this session only.
    Session {
        /// The folder (`notes/faq/`), matched component by component.
        prefix: String,
    },
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Once => f.write_str("once"),
            Scope::Session { prefix } => write!(f, "for the session under {prefix}"),
        }
    }
}

/// Why a turn or a session stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
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
}

impl StopReason {
    /// The word used in traces, messages and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::StepLimit => "step_limit",
            StopReason::TimeLimit => "time_limit",
            StopReason::ModelError => "model_error",
            StopReason::Cancelled => "cancelled",
            StopReason::Budget => "budget",
        }
    }
}

/// Everything that can happen in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session began: what it is pinned to.
    SessionStarted {
        /// The model every turn uses unless the user re-pins it.
        model: String,
        /// The workspace folder.
        workspace: String,
        /// A fingerprint of the configuration the session started with.
        config_fingerprint: String,
        /// Who owns it, for sessions made over HTTP (none for the local CLI).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<String>,
        /// The collection it reads (`serve`); none for the command line's and for sessions from
        /// before collections.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        collection: Option<String>,
    },
    /// The session was closed (`DELETE /v1/sessions/{id}`): it takes no more messages, a write
    /// it waited on is no longer pending, and it no longer counts as open.
    SessionClosed {
        /// Who closed it: its owner, or an admin.
        by: String,
    },
    /// The session's owner named it (`PATCH /v1/sessions/{id}`): the list of conversations shows
    /// this title in place of its first question. Never shown to the model.
    SessionRenamed {
        /// The title, one line.
        title: String,
    },
    /// A policy hook (`[hooks]`) decided or changed something.
    Hook {
        /// Where: before a tool call, after one, or before an answer is taken.
        stage: HookStage,
        /// The rule or setting that decided (`no-internal`, `hooks.post_tool.redact[0]`).
        rule: String,
        /// What it decided or did (`deny`, `allow`, `redacted 2 matches…`, `sent back`).
        decision: String,
        /// The tool call it was about, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// The person said something.
    UserMessage {
        /// What they said.
        text: String,
    },
    /// The model replied: text, tool calls, or both.
    AssistantMessage {
        /// The reply's text.
        text: String,
        /// The tools it asked for.
        tool_calls: Vec<CallRecord>,
        /// Tokens the call used, when the server said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Tokens>,
        /// The harness's estimate of the tokens a model call used when the server did not say
        /// (prompt and reply as bytes / 4): what budgets count instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated: Option<Tokens>,
        /// Who asked: the model, or the harness retrieving before the first model call.
        #[serde(default, skip_serializing_if = "Origin::is_model")]
        origin: Origin,
    },
    /// A tool ran (or was refused) for one call.
    ToolResult {
        /// The call this answers.
        call_id: String,
        /// What the model was shown.
        text: String,
        /// allowed, denied or error.
        decision: Decision,
    },
    /// A call waits for a person: a write, or a call an operator's rule asks about.
    ApprovalRequested {
        /// The call that asked.
        call_id: String,
        /// The path it wants to write (or read); for a call without a path, the tool and its
        /// arguments.
        path: String,
        /// The write's idempotency key: `{session}/{seq of the requesting assistant message}/{call id}`.
        /// It comes from the event that asked, so a resumed session never does the write twice.
        key: String,
        /// The pre-tool rule that asks for a person (`[[hooks.pre_tool]]` with `decision =
        /// "ask"`): then no session grant decides it, only a person.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
    },
    /// A write was allowed.
    ApprovalGranted {
        /// The call that asked.
        call_id: String,
        /// How far the grant reaches.
        scope: Scope,
        /// Who or what allowed it: `user`, `APPROVE=yes`, or the earlier session grant that covers it.
        by: String,
    },
    /// A person refused a write.
    ApprovalDenied {
        /// The call that asked.
        call_id: String,
        /// Why, if they said.
        reason: String,
    },
    /// Nobody decided in time.
    ApprovalExpired {
        /// The call that asked.
        call_id: String,
    },
    /// The harness sent the model's final reply back with a short instruction: an answer that
    /// cites no section retrieved in the turn, or a tool call written in a form it cannot read.
    Correction {
        /// Why.
        kind: CorrectionKind,
        /// What the model is told (the harness's own words).
        text: String,
    },
    /// The older middle of the conversation, summarised.
    Compaction {
        /// The summary that replaces the events it covers.
        summary: String,
        /// The last sequence number the summary replaces.
        replaces_through: u64,
        /// The first user message, verbatim.
        pinned_goal: String,
    },
    /// A turn was interrupted; the partial text is kept.
    Interrupted {
        /// What the model had said so far.
        partial_text: String,
        /// The harness's estimate of the tokens the cut call used (its prompt and what it wrote
        /// so far): a server bills a call it was not let finish, and budgets count it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated: Option<Tokens>,
    },
    /// The answer shown to the person: the model's final text after the outbound guard.
    Answer {
        /// What was shown.
        text: String,
        /// The commit of the git source the docs it drew on came from (`[[sources]]`), so an
        /// old answer says which revision it was drawn from; none for docs on disk.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        revision: Option<String>,
    },
    /// The user re-pinned the session to another model.
    ModelPinned {
        /// The model every later turn uses.
        model: String,
    },
    /// A person rated an answer: helpful or not, with an optional comment. Never shown to the
    /// model; `report gaps` reads it.
    Feedback {
        /// The seq of the `answer` event it rates.
        answer_seq: u64,
        /// Whether the answer helped.
        helpful: bool,
        /// What the person said about it (may be empty).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        comment: String,
    },
    /// A turn stopped.
    Stopped {
        /// Why.
        reason: StopReason,
        /// What went wrong, for a model error or a limit.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
}

/// A grant in the log is the one proof a session's write is made from.
impl crate::workspace::approval::Grant for Event {
    fn granted_call(&self) -> Option<&str> {
        match self {
            Event::ApprovalGranted { call_id, .. } => Some(call_id),
            _ => None,
        }
    }
}

impl Event {
    /// The event with every text scrubbed (sanitised, then redacted).
    pub fn scrubbed(self) -> Event {
        let s = |t: String| guard::scrub(&t).into_owned();
        match self {
            Event::SessionStarted { model, workspace, config_fingerprint, principal, collection } => {
                Event::SessionStarted {
                    model: s(model),
                    workspace: s(workspace),
                    config_fingerprint,
                    principal: principal.map(s),
                    collection,
                }
            }
            Event::UserMessage { text } => Event::UserMessage { text: s(text) },
            Event::AssistantMessage { text, tool_calls, usage, estimated, origin } => Event::AssistantMessage {
                usage,
                estimated,
                origin,
                text: s(text),
                tool_calls: tool_calls
                    .into_iter()
                    .map(|c| CallRecord { id: c.id, name: s(c.name), arguments: s(c.arguments) })
                    .collect(),
            },
            Event::ToolResult { call_id, text, decision } => Event::ToolResult { call_id, text: s(text), decision },
            Event::ApprovalRequested { call_id, path, key, rule } => {
                Event::ApprovalRequested { call_id, path: s(path), key: s(key), rule: rule.map(s) }
            }
            Event::ApprovalGranted { call_id, scope, by } => {
                let scope = match scope {
                    Scope::Session { prefix } => Scope::Session { prefix: s(prefix) },
                    Scope::Once => Scope::Once,
                };
                Event::ApprovalGranted { call_id, scope, by: s(by) }
            }
            Event::Answer { text, revision } => Event::Answer { text: s(text), revision },
            Event::ModelPinned { model } => Event::ModelPinned { model: s(model) },
            Event::Stopped { reason, detail } => Event::Stopped { reason, detail: s(detail) },
            Event::ApprovalDenied { call_id, reason } => Event::ApprovalDenied { call_id, reason: s(reason) },
            Event::Compaction { summary, replaces_through, pinned_goal } => {
                Event::Compaction { summary: s(summary), replaces_through, pinned_goal: s(pinned_goal) }
            }
            Event::Interrupted { partial_text, estimated } => {
                Event::Interrupted { partial_text: s(partial_text), estimated }
            }
            Event::Correction { kind, text } => Event::Correction { kind, text: s(text) },
            Event::Hook { stage, rule, decision, call_id } => {
                Event::Hook { stage, rule: s(rule), decision: s(decision), call_id }
            }
            Event::Feedback { answer_seq, helpful, comment } => {
                Event::Feedback { answer_seq, helpful, comment: s(comment) }
            }
            other @ Event::ApprovalExpired { .. } => other,
            Event::SessionClosed { by } => Event::SessionClosed { by: s(by) },
            Event::SessionRenamed { title } => Event::SessionRenamed { title: s(title) },
        }
    }

    /// The event's type name, as stored.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::SessionClosed { .. } => "session_closed",
            Event::SessionRenamed { .. } => "session_renamed",
            Event::UserMessage { .. } => "user_message",
            Event::AssistantMessage { .. } => "assistant_message",
            Event::ToolResult { .. } => "tool_result",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ApprovalGranted { .. } => "approval_granted",
            Event::ApprovalDenied { .. } => "approval_denied",
            Event::ApprovalExpired { .. } => "approval_expired",
            Event::Compaction { .. } => "compaction",
            Event::Interrupted { .. } => "interrupted",
            Event::Correction { .. } => "correction",
            Event::Answer { .. } => "answer",
            Event::ModelPinned { .. } => "model_pinned",
            Event::Stopped { .. } => "stopped",
            Event::Hook { .. } => "hook",
            Event::Feedback { .. } => "feedback",
        }
    }
}
