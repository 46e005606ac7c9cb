//! The projection: the messages sent to the model, rebuilt from the log on every turn. The
//! stable prefix (system prompt, then a compaction's pinned goal and summary) comes first. A
//! tool call that never got a result (an interrupted turn, a denied or expired approval) is
//! closed explicitly, and a result without its call is dropped, so every request is valid.

use crate::model::{Message, ToolCall};

use super::event::Event;
use super::store::Stored;

/// What an open call is closed with when the log has no result for it.
const NO_RESULT: &str = "ERROR: this call has no result: the turn was interrupted before it ran";
/// What a call whose approval expired is answered with.
pub const EXPIRED: &str = "DENIED: write not approved: the approval request expired";

/// The messages for the next model request.
pub fn project(system_prompt: &str, events: &[Stored]) -> Vec<Message> {
    projected(system_prompt, events).messages
}

/// A projection, with where its pinned prefix ends: what the context budget (`fit`) may not touch.
#[derive(Debug, Clone, PartialEq)]
pub struct Projected {
    /// The messages for the next model request.
    pub messages: Vec<Message>,
    /// How many messages open the request and stay as they are: the system prompt, then a
    /// compaction's pinned goal and summary.
    pub pinned: usize,
}

/// [`project`], saying where the pinned prefix ends.
pub fn projected(system_prompt: &str, events: &[Stored]) -> Projected {
    let mut out = vec![Message::System(system_prompt.to_string())];
    let compaction = events.iter().rev().find_map(|s| match &s.event {
        Event::Compaction { summary, replaces_through, pinned_goal } => Some((summary, *replaces_through, pinned_goal)),
        _ => None,
    });
    let first = match compaction {
        Some((summary, through, goal)) => {
            out.push(Message::User(goal.clone()));
            out.push(Message::Assistant {
                content: format!("Summary of the conversation so far:\n{summary}"),
                tool_calls: Vec::new(),
            });
            through
        }
        None => 0,
    };
    let pinned = out.len();
    // Calls of the latest assistant message that still wait for a result, in order.
    let mut open: Vec<String> = Vec::new();
    for stored in events.iter().filter(|s| s.seq > first) {
        match &stored.event {
            Event::UserMessage { text } => {
                close(&mut open, &mut out, NO_RESULT);
                out.push(Message::User(text.clone()));
            }
            Event::AssistantMessage { text, tool_calls, .. } => {
                close(&mut open, &mut out, NO_RESULT);
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
                out.push(Message::Assistant {
                    content: text.clone(),
                    tool_calls: tool_calls
                        .iter()
                        .map(|c| ToolCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
                        .collect(),
                });
            }
            Event::ToolResult { call_id, text, .. } => answer(&mut open, &mut out, call_id, text.clone()),
            Event::ApprovalDenied { call_id, reason } => {
                answer(&mut open, &mut out, call_id, denial(reason));
            }
            Event::ApprovalExpired { call_id } => {
                answer(&mut open, &mut out, call_id, EXPIRED.into());
            }
            Event::Correction { text, .. } => {
                close(&mut open, &mut out, NO_RESULT);
                out.push(Message::User(text.clone()));
            }
            Event::Interrupted { partial_text, .. } => {
                close(&mut open, &mut out, NO_RESULT);
                if !partial_text.is_empty() {
                    out.push(Message::Assistant {
                        content: format!("{partial_text} [interrupted]"),
                        tool_calls: Vec::new(),
                    });
                }
            }
            Event::SessionStarted { .. }
            | Event::SessionClosed { .. }
            | Event::SessionRenamed { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalGranted { .. }
            | Event::Compaction { .. }
            | Event::Answer { .. }
            | Event::ModelPinned { .. }
            | Event::Hook { .. }
            | Event::Feedback { .. }
            | Event::Stopped { .. } => {}
        }
    }
    close(&mut open, &mut out, NO_RESULT);
    Projected { messages: out, pinned }
}

/// Gives the open call `id` its result; a result for a call that is not open is dropped.
fn answer(open: &mut Vec<String>, out: &mut Vec<Message>, id: &str, text: String) {
    if let Some(at) = open.iter().position(|o| o == id) {
        open.remove(at);
        out.push(Message::Tool { call_id: id.to_string(), content: text });
    }
}

/// Closes every open call with `text`.
fn close(open: &mut Vec<String>, out: &mut Vec<Message>, text: &str) {
    for id in open.drain(..) {
        out.push(Message::Tool { call_id: id, content: text.to_string() });
    }
}

/// The text a denied call is answered with.
pub fn denial(reason: &str) -> String {
    format!("DENIED: {reason}")
}
