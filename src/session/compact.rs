//! Compaction: when the projected conversation nears `session.compact_at` of the context
//! budget, the older middle is replaced (in the projection only; the log keeps everything) by a
//! summary the harness builds from the original events, never from an earlier summary:
//! - the first user message is pinned verbatim (it is the session's goal);
//! - later requests are listed once each (a constraint said twice is kept once);
//! - decisions (approvals granted, denied, expired), answers given, open work;
//! - handles: the `path#anchor` sources and paths the tools touched.
//!
//! The summary never quotes tool results, so an instruction planted in a retrieved doc does not
//! survive compaction. A cut falls only just before a user or assistant message, so a tool
//! call is never separated from its results, and never after the latest user message, which
//! stays verbatim.

use std::collections::BTreeSet;

use crate::config::SessionConfig;
use crate::guard;
use crate::model::Message;

use super::event::Event;
use super::projection::project;
use super::store::Stored;

/// Characters kept of each request, answer or decision in a summary.
const ITEM_CHARS: usize = 300;
/// Characters kept of each earlier answer.
const ANSWER_CHARS: usize = 160;
/// Handles listed at most.
const MAX_HANDLES: usize = 60;
/// Items kept per section, the most recent: a summary stays small however long the session.
const MAX_REQUESTS: usize = 12;
const MAX_TOOLS: usize = 20;
const MAX_DECISIONS: usize = 12;
const MAX_ANSWERS: usize = 6;

/// Estimated tokens of a request: bytes / 4, plus a little per message.
pub fn tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let bytes = match m {
                Message::System(t) | Message::User(t) => t.len(),
                Message::Assistant { content, tool_calls } => {
                    content.len()
                        + tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + c.id.len()).sum::<usize>()
                }
                Message::Tool { call_id, content } => call_id.len() + content.len(),
            };
            bytes as u64 / 4 + 4
        })
        .sum()
}

/// The compaction event to append before the next model call, if one is due and possible.
pub fn plan(config: &SessionConfig, system_prompt: &str, events: &[Stored]) -> Option<Event> {
    let now = tokens(&project(system_prompt, events));
    plan_for(config, config.context_budget(), system_prompt, events, now)
}

/// [`plan`] within `budget` tokens (the turn's, which the model server may have given), given
/// the tokens of the request the events project to now (the turn has it).
pub fn plan_for(
    config: &SessionConfig,
    budget: u64,
    system_prompt: &str,
    events: &[Stored],
    now: u64,
) -> Option<Event> {
    if (now as f64) <= config.compact_at * budget as f64 {
        return None;
    }
    let (goal_seq, goal) = events.iter().find_map(|s| match &s.event {
        Event::UserMessage { text } => Some((s.seq, text.clone())),
        _ => None,
    })?;
    let last_user = events.iter().rev().find_map(|s| matches!(s.event, Event::UserMessage { .. }).then_some(s.seq))?;
    let done_through = events
        .iter()
        .rev()
        .find_map(|s| match s.event {
            Event::Compaction { replaces_through, .. } => Some(replaces_through),
            _ => None,
        })
        .unwrap_or(0);
    // Cut points: just before a user or assistant message, after the goal and the previous cut,
    // and never past the latest user message.
    let cuts: Vec<u64> = events
        .iter()
        .filter(|s| matches!(s.event, Event::UserMessage { .. } | Event::AssistantMessage { .. }))
        .map(|s| s.seq - 1)
        .filter(|&cut| cut > goal_seq && cut > done_through && cut < last_user)
        .collect();
    let target = budget / 2;
    let mut chosen = None;
    for &cut in &cuts {
        // A summary gets a quarter of the budget (bytes / 4 tokens).
        let event = compaction(events, goal_seq, cut, &goal, budget as usize);
        let mut with = events.to_vec();
        with.push(Stored { seq: u64::MAX, at_ms: 0, event: event.clone() });
        let after = tokens(&project(system_prompt, &with));
        if after < now {
            chosen = Some(event);
        }
        if after <= target {
            break;
        }
    }
    chosen
}

/// The compaction replacing events `goal_seq + 1 ..= through`, summarised from the originals.
fn compaction(events: &[Stored], goal_seq: u64, through: u64, goal: &str, max_bytes: usize) -> Event {
    let covered: Vec<&Stored> =
        events.iter().filter(|s| s.seq > goal_seq && s.seq <= through && !is_compaction(&s.event)).collect();
    Event::Compaction {
        summary: summarise(&covered, goal_seq + 1, through, max_bytes),
        replaces_through: through,
        pinned_goal: goal.to_string(),
    }
}

fn is_compaction(event: &Event) -> bool {
    matches!(event, Event::Compaction { .. })
}

/// The summary of `covered` (original events only), at most `max_bytes` long.
pub fn summarise(covered: &[&Stored], from: u64, through: u64, max_bytes: usize) -> String {
    let mut requests: Vec<String> = Vec::new();
    let mut tools_used: Vec<String> = Vec::new();
    let mut decisions: Vec<String> = Vec::new();
    let mut answers: Vec<String> = Vec::new();
    let mut handles: BTreeSet<String> = BTreeSet::new();
    let mut open_work: Option<String> = None;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let path_of = |id: &str, calls: &[(String, String, String)]| {
        calls.iter().find(|(c, _, _)| c == id).map_or_else(String::new, |(_, _, a)| argument(a, "path"))
    };
    for stored in covered {
        match &stored.event {
            Event::UserMessage { text } => {
                // Said again: kept once, where it was said last.
                let item = guard::clip(text, ITEM_CHARS);
                requests.retain(|r| *r != item);
                requests.push(item);
                open_work = None;
            }
            Event::AssistantMessage { tool_calls, .. } => {
                for call in tool_calls {
                    let what = match call.name.as_str() {
                        "search_docs" => format!("search_docs \"{}\"", argument(&call.arguments, "query")),
                        "load_skill" => format!("load_skill {}", argument(&call.arguments, "skill")),
                        name => format!("{name} {}", argument(&call.arguments, "path")),
                    };
                    let path = argument(&call.arguments, "path");
                    if !path.is_empty() {
                        handles.insert(path);
                    }
                    calls.push((call.id.clone(), what, call.arguments.clone()));
                }
            }
            Event::ToolResult { call_id, text, decision } => {
                let found: Vec<String> = guard::citations::handles_in(text).collect();
                let what = calls.iter().find(|(c, _, _)| c == call_id).map_or("a tool", |(_, w, _)| w.as_str());
                let detail = if found.is_empty() { decision.to_string() } else { found.join(", ") };
                tools_used.push(guard::clip(&format!("{what} → {detail}"), ITEM_CHARS));
                handles.extend(found);
            }
            Event::ApprovalGranted { call_id, scope, by } => {
                decisions.push(format!("write to {} approved {scope} by {by}", path_of(call_id, &calls)));
            }
            Event::ApprovalDenied { call_id, reason } => {
                decisions
                    .push(guard::clip(&format!("write to {} denied: {reason}", path_of(call_id, &calls)), ITEM_CHARS));
            }
            Event::ApprovalExpired { call_id } => {
                decisions.push(format!("write to {} expired undecided", path_of(call_id, &calls)));
            }
            Event::Answer { text, .. } => answers.push(guard::clip(text, ANSWER_CHARS)),
            Event::Interrupted { .. } => open_work = Some("the last request was interrupted before an answer".into()),
            Event::Stopped { reason, .. } if reason.as_str() != "answered" => {
                open_work = Some(format!("the last request stopped without an answer ({})", reason.as_str()));
            }
            Event::SessionStarted { .. }
            | Event::SessionClosed { .. }
            | Event::SessionRenamed { .. }
            | Event::ApprovalRequested { .. }
            | Event::Correction { .. }
            | Event::Compaction { .. }
            | Event::ModelPinned { .. }
            | Event::Hook { .. }
            | Event::Feedback { .. }
            | Event::Stopped { .. } => {}
        }
    }
    let open_work: Vec<String> = open_work.into_iter().collect();
    let handles: Vec<String> = handles.into_iter().collect();
    // Most recent items first to go last: halve every section until the summary fits.
    let mut share = 1.0_f64;
    loop {
        let keep = |n: usize| ((n as f64 * share).ceil() as usize).max(1);
        let mut out = format!(
            "Events {from}-{through} summarised by the harness (the log keeps them in full). Tool results are not quoted.\n"
        );
        section(&mut out, "Later requests from the user", last(&requests, keep(MAX_REQUESTS)));
        section(&mut out, "Tools used", last(&tools_used, keep(MAX_TOOLS)));
        section(&mut out, "Decisions", last(&decisions, keep(MAX_DECISIONS)));
        section(&mut out, "Answers given", last(&answers, keep(MAX_ANSWERS)));
        section(&mut out, "Open work", &open_work);
        let shown = last(&handles, keep(MAX_HANDLES));
        if !shown.is_empty() {
            out.push_str(&format!("Handles: {}\n", shown.join(", ")));
        }
        if out.len() <= max_bytes || share < 0.05 {
            return if out.len() <= max_bytes { out } else { guard::clip(&out, max_bytes) };
        }
        share /= 2.0;
    }
}

/// The last `n` items.
fn last(items: &[String], n: usize) -> &[String] {
    &items[items.len().saturating_sub(n)..]
}

/// A titled list; tag-like text in an item (an answer may quote a fence) is neutralised.
fn section(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(title);
    out.push_str(":\n");
    for item in items {
        out.push_str("- ");
        out.push_str(&guard::fence::neutralize_tags(&item.replace('\n', " ")));
        out.push('\n');
    }
}

/// One string argument of a call, clipped; empty when absent or not JSON.
fn argument(arguments: &str, key: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| v.get(key).and_then(|x| x.as_str()).map(|s| guard::clip(s, 120)))
        .unwrap_or_default()
}
