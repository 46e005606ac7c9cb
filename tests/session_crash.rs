//! The crash test (issue 4): a scripted session that writes a note is killed with SIGKILL right
//! after each kind of event (and right after the note is written, before its result is
//! logged), then resumed, sometimes killed again while resuming. Over every trial: no duplicate
//! write, no lost event, every projection of every log prefix a valid request, and the session
//! ends answered.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use docs_agent::session::event::Event;
use docs_agent::session::projection::project;
use docs_agent::session::store::Stored;

const QUESTION: &str = "what is in the onboarding integrations";
const NOTE: &str = "notes/leak.txt";
const NOTE_TEXT: &str = "staging key is [REDACTED] -->";
/// The signal the hook sends.
const SIGKILL: i32 = 9;

/// The points of one run with every write approved by APPROVE=yes, in order.
const AUTO_POINTS: &[&str] = &[
    "session_started",
    "user_message",
    "assistant_message#1",
    "tool_result#1",
    "assistant_message#2",
    "approval_requested",
    "approval_granted",
    "write",
    "tool_result#2",
    "assistant_message#3",
    "answer",
    "stopped",
];

/// The points of `sessions approve` after a chat paused awaiting approval.
const APPROVE_POINTS: &[&str] = &["approval_granted", "write", "tool_result", "assistant_message", "answer", "stopped"];

/// The points of `sessions deny` after a chat paused awaiting approval.
const DENY_POINTS: &[&str] = &["approval_denied", "assistant_message", "answer", "stopped"];

/// How the write is decided.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flow {
    /// APPROVE=yes: the whole turn runs in the chat process.
    Auto,
    /// The chat pauses; `sessions approve` decides and continues.
    Approve,
    /// The chat pauses; `sessions deny` decides and continues.
    Deny,
}

/// The points a resume (which starts at any of them) may be killed at again.
const RESUME_POINTS: &[&str] = &["approval_granted", "write", "tool_result", "assistant_message", "answer", "stopped"];

fn docs_agent(ws: &Path, log: &Path, env: &[(&str, &str)], args: &[&str], input: &str) -> common::Run {
    let log = log.display().to_string();
    let mut env = env.to_vec();
    env.extend([("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG", log.as_str())]);
    common::run_input(ws, &env, args, input)
}

/// The one session in the log, if any.
fn session_id(ws: &Path, log: &Path) -> Option<String> {
    let out = docs_agent(ws, log, &[], &["sessions", "list"], "");
    out.stdout.split_whitespace().next().map(str::to_string)
}

fn status(ws: &Path, log: &Path, id: &str) -> String {
    let out = docs_agent(ws, log, &[], &["sessions", "list"], "");
    out.stdout.split_whitespace().nth(1).unwrap_or_else(|| panic!("no status for {id}: {}", out.stdout)).to_string()
}

fn events(ws: &Path, log: &Path, id: &str) -> Vec<Stored> {
    let out = docs_agent(ws, log, &[], &["sessions", "export", id], "");
    assert!(out.code == 0, "export: {}", out.stderr);
    out.stdout
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("export line is JSON");
            Stored {
                seq: v["seq"].as_u64().expect("seq"),
                at_ms: v["at_ms"].as_u64().expect("at_ms"),
                event: serde_json::from_value::<Event>(v["event"].clone()).expect("event"),
            }
        })
        .collect()
}

fn note_inode(ws: &Path) -> Option<u64> {
    std::fs::metadata(ws.join(NOTE)).ok().map(|m| m.ino())
}

/// Resumes until the session is idle (a resume may itself be killed by `kill_again`).
fn recover(ws: &Path, log: &Path, id: &str, env: &[(&str, &str)], mut kill_again: Option<&str>, trial: &str) {
    for _ in 0..6 {
        let action: Vec<&str> = match status(ws, log, id).as_str() {
            "idle" => return,
            "awaiting_approval" => vec!["sessions", "approve", id],
            _ => vec!["sessions", "resume", id],
        };
        let mut env = env.to_vec();
        if let Some(point) = kill_again.take() {
            env.push(("DOCS_AGENT_TEST_KILL_AFTER", point));
        }
        let before = note_inode(ws);
        let out = docs_agent(ws, log, &env, &action, "");
        if before.is_some() {
            assert_eq!(note_inode(ws), before, "{trial}: {action:?} wrote the note again\n{}", out.stderr);
        }
    }
    panic!("{trial}: the session never became idle");
}

/// Checks one trial's final state against what the log said before recovery.
fn check(ws: &Path, log: &Path, id: &str, before: &[Stored], flow: Flow, trial: &str) {
    let after = events(ws, log, id);
    assert!(after.len() >= before.len(), "{trial}: events were lost");
    assert_eq!(&after[..before.len()], before, "{trial}: durable events changed or were lost");
    for (n, s) in after.iter().enumerate() {
        assert_eq!(s.seq, n as u64 + 1, "{trial}: sequence has a gap");
    }
    for k in 1..=after.len() {
        common::assert_valid_request(&project("system", &after[..k]), &format!("{trial}, prefix of {k} events"));
    }
    if !after.iter().any(|s| matches!(s.event, Event::UserMessage { .. })) {
        // Killed before the question was durable: it was never accepted, and nothing happened.
        assert!(note_inode(ws).is_none(), "{trial}: a note without a question");
        return;
    }
    let denials = after.iter().filter(|s| matches!(s.event, Event::ApprovalDenied { .. })).count();
    if flow == Flow::Deny {
        assert_eq!(denials, 1, "{trial}: {denials} denials");
        assert!(note_inode(ws).is_none(), "{trial}: a denied write happened");
    }
    let answers = after.iter().filter(|s| matches!(s.event, Event::Answer { .. })).count();
    assert_eq!(answers, 1, "{trial}: {answers} answers");
    assert!(
        matches!(after.last().map(|s| &s.event), Some(Event::Stopped { reason, .. }) if reason.as_str() == "answered"),
        "{trial}: the session did not end answered: {:?}",
        after.last()
    );
    if flow == Flow::Deny {
        return;
    }
    let writes = after
        .iter()
        .filter(|s| matches!(&s.event, Event::ToolResult { text, .. } if text.contains(NOTE) && text.starts_with("OK")))
        .count();
    assert_eq!(writes, 1, "{trial}: the write's result is logged {writes} times");
    let grants = after.iter().filter(|s| matches!(s.event, Event::ApprovalGranted { .. })).count();
    assert_eq!(grants, 1, "{trial}: {grants} grants");
    assert_eq!(std::fs::read_to_string(ws.join(NOTE)).expect("note written").trim_end(), NOTE_TEXT, "{trial}");
}

fn trial(point: &str, flow: Flow, kill_again: Option<&str>) -> bool {
    let approve_by_env = flow == Flow::Auto;
    let ws = common::sample_workspace();
    let log = ws.path().join("data/sessions.db");
    let trial = format!("{flow:?}: kill after {point}, again after {kill_again:?}");
    let env: Vec<(&str, &str)> = if approve_by_env { vec![("APPROVE", "yes")] } else { Vec::new() };
    let input = format!("{QUESTION}\n");
    let mut killed = false;
    if approve_by_env {
        let mut first = env.clone();
        first.push(("DOCS_AGENT_TEST_KILL_AFTER", point));
        let out = docs_agent(ws.path(), &log, &first, &["chat"], &input);
        killed = out.signal == Some(SIGKILL);
        assert!(killed, "{trial}: the process was not killed ({:?}): {}", out.signal, out.stderr);
    } else {
        let out = docs_agent(ws.path(), &log, &env, &["chat"], &input);
        assert_eq!(out.code, 5, "{trial}: chat pauses awaiting approval: {}", out.stderr);
        let id = session_id(ws.path(), &log).expect("a session");
        let decide = if flow == Flow::Deny { "deny" } else { "approve" };
        let out = docs_agent(ws.path(), &log, &[("DOCS_AGENT_TEST_KILL_AFTER", point)], &["sessions", decide, &id], "");
        killed |= out.signal == Some(SIGKILL);
        assert!(killed, "{trial}: approve was not killed ({:?}): {}{}", out.signal, out.stdout, out.stderr);
    }
    let Some(id) = session_id(ws.path(), &log) else {
        return killed;
    };
    let before = events(ws.path(), &log, &id);
    recover(ws.path(), &log, &id, &env, kill_again, &trial);
    check(ws.path(), &log, &id, &before, flow, &trial);
    killed
}

#[test]
fn sigkill_after_every_kind_of_event_then_resume_writes_once_and_loses_nothing() {
    let mut trials = 0;
    for (flow, points) in [(Flow::Auto, AUTO_POINTS), (Flow::Approve, APPROVE_POINTS), (Flow::Deny, DENY_POINTS)] {
        for point in points {
            assert!(trial(point, flow, None));
            trials += 1;
            for again in RESUME_POINTS {
                trial(point, flow, Some(again));
                trials += 1;
            }
        }
    }
    eprintln!("crash test: {trials} trials, each checked for duplicate writes, lost events and valid projections");
    let points = AUTO_POINTS.len() + APPROVE_POINTS.len() + DENY_POINTS.len();
    assert_eq!(trials, points * (RESUME_POINTS.len() + 1));
}
