//! The context budget inside a turn, as a property: for random sessions (earlier turns, then a
//! turn of up to 8 steps of up to 4 tool calls whose results are up to 24 KB, with a reply sent
//! back on the way), the request the turn would send, compacted as the turn compacts it and
//! fitted, never exceeds the budget, pairs every call with exactly one result, and keeps the
//! rules and every message the person wrote as they were.

mod common;

use docs_agent::guard::fence::Fenced;
use docs_agent::model::Message;
use docs_agent::session::compact::{plan_for, tokens};
use docs_agent::session::event::{CallRecord, CorrectionKind, Event, Origin, StopReason};
use docs_agent::session::fit::{self, Fitted};
use docs_agent::session::projection::projected;
use docs_agent::session::store::Stored;
use docs_agent::tools::Decision;
use proptest::prelude::*;

const SYSTEM: &str = "You answer questions about the product's docs. Cite [path#anchor].";

/// One tool call the model makes, and how large its result is.
#[derive(Debug, Clone)]
enum Call {
    Read { offset: usize, lines: usize },
    Search { sections: usize, bytes: usize },
    Skill { bytes: usize },
}

/// One turn: the question's length, its steps, and whether a reply was sent back midway.
#[derive(Debug, Clone)]
struct TurnPlan {
    question: usize,
    steps: Vec<Vec<Call>>,
    sent_back: Option<usize>,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (1..400usize, 1..400usize).prop_map(|(offset, lines)| Call::Read { offset, lines }),
        (1..6usize, 0..24_000usize).prop_map(|(sections, bytes)| Call::Search { sections, bytes }),
        (0..8_000usize).prop_map(|bytes| Call::Skill { bytes }),
    ]
}

fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    let question = prop_oneof![4 => 10..600usize, 1 => 600..3_000usize];
    (question, prop::collection::vec(prop::collection::vec(call(), 1..=4), 0..=8), prop::option::of(0..8usize))
        .prop_map(|(question, steps, sent_back)| TurnPlan { question, steps, sent_back })
}

/// The result a call gets, as the tools make it: fenced text with read_file's header.
fn result(call: &Call) -> String {
    match call {
        Call::Read { offset, lines } => {
            let body: Vec<String> =
                (*offset..offset + lines).map(|n| format!("line {n}: refunds are issued in 30 days")).collect();
            let header = format!("lines {offset}-{} of 900\n", offset + lines - 1);
            Fenced::new("docs/refunds.md", &format!("{header}{}", body.join("\n"))).into_string()
        }
        Call::Search { sections, bytes } => {
            let mut text = format!("{sections} sections matched, best first:\n");
            for s in 0..*sections {
                let body = format!(
                    "# Refunds > Part {s}\n{}",
                    "The refund window is thirty days. ".repeat(bytes / sections / 34 + 1)
                );
                text.push_str(Fenced::new(&format!("docs/refunds.md#part-{s}"), &body).as_str());
                text.push('\n');
            }
            text
        }
        Call::Skill { bytes } => {
            format!(
                "<skill name=\"cite\" location=\"skills/cite/SKILL.md\">\n{}\n</skill>",
                "Cite every fact. ".repeat(bytes / 17)
            )
        }
    }
}

fn name(call: &Call) -> &'static str {
    match call {
        Call::Read { .. } => "read_file",
        Call::Search { .. } => "search_docs",
        Call::Skill { .. } => "load_skill",
    }
}

/// Appends `plan`'s events, the turn left open (no answer) when `last`.
fn append(events: &mut Vec<Event>, plan: &TurnPlan, n: usize, last: bool) {
    events.push(Event::UserMessage { text: format!("question {n}: {}", "why ".repeat(plan.question / 4)) });
    for (s, step) in plan.steps.iter().enumerate() {
        let calls: Vec<CallRecord> = step
            .iter()
            .enumerate()
            .map(|(i, c)| CallRecord { id: format!("c{n}_{s}_{i}"), name: name(c).into(), arguments: "{}".into() })
            .collect();
        let results: Vec<Event> = step
            .iter()
            .zip(&calls)
            .map(|(c, r)| Event::ToolResult { call_id: r.id.clone(), text: result(c), decision: Decision::Allowed })
            .collect();
        events.push(Event::AssistantMessage {
            text: String::new(),
            tool_calls: calls,
            usage: None,
            estimated: None,
            origin: Origin::Model,
        });
        events.extend(results);
        if plan.sent_back == Some(s) {
            events.push(Event::AssistantMessage {
                text: "The window is 30 days.".into(),
                tool_calls: Vec::new(),
                usage: None,
                estimated: None,
                origin: Origin::Model,
            });
            events.push(Event::Correction { kind: CorrectionKind::Unverified, text: "Cite the sections.".into() });
        }
    }
    if !last {
        events.push(Event::Answer { text: "It is 30 days [docs/refunds.md#part-0].".into(), revision: None });
        events.push(Event::Stopped { reason: StopReason::Answered, detail: String::new() });
    }
}

fn stored(events: Vec<Event>) -> Vec<Stored> {
    events.into_iter().enumerate().map(|(i, event)| Stored { seq: i as u64 + 1, at_ms: 0, event }).collect()
}

/// The default session settings (the budget unset: each case gives its own).
fn config() -> docs_agent::config::SessionConfig {
    let sources = docs_agent::config::Sources { file: None, env: Default::default(), flags: Vec::new() };
    docs_agent::service::settings::load_isolated(&sources).expect("the defaults load").session
}

/// Tokens of the tool schemas sent with every request, counted as the turn counts them.
fn tool_tokens() -> u64 {
    docs_agent::tools::specs_tokens(&docs_agent::tools::specs())
}

/// The request the turn sends after `events`: compacted as the turn does (a compaction
/// appended while one is planned), then fitted.
fn request(mut events: Vec<Stored>, budget: u64) -> (Vec<Stored>, Result<Fitted, fit::Overflow>) {
    let config = config();
    loop {
        let size = tokens(&projected(SYSTEM, &events).messages);
        match plan_for(&config, budget, SYSTEM, &events, size) {
            Some(event) => {
                let seq = events.len() as u64 + 1;
                events.push(Stored { seq, at_ms: 0, event });
            }
            None => break,
        }
    }
    let projection = projected(SYSTEM, &events);
    // Searched sections are found in the index half the time.
    let fitted = fit::fit(projection, budget.saturating_sub(tool_tokens()), &|source: &str| {
        source.ends_with(['0', '2', '4']).then_some((3, 40))
    });
    (events, fitted)
}

/// The person's messages in the log after the last compaction (the pinned goal included when
/// there is one): each must be in the request, as it was, in order.
fn persons(messages: &[Message]) -> Vec<&str> {
    messages.iter().filter_map(|m| if let Message::User(t) = m { Some(t.as_str()) } else { None }).collect()
}

/// What the fit did over every case: each way of fitting must have been tried.
#[derive(Debug, Default)]
struct Seen {
    untouched: usize,
    stubbed: usize,
    dropped: usize,
    cut: usize,
    overflows: usize,
}

/// One random session: checks the request its open turn would send.
fn check(earlier: &[TurnPlan], now: &TurnPlan, budget: u64, seen: &mut Seen) -> Result<(), TestCaseError> {
    let mut events = Vec::new();
    for (n, plan) in earlier.iter().enumerate() {
        append(&mut events, plan, n, false);
    }
    append(&mut events, now, earlier.len(), true);
    let (events, fitted) = request(stored(events), budget);
    let unfitted = projected(SYSTEM, &events).messages;
    let room = budget - tool_tokens();
    match fitted {
        Ok(fitted) => {
            let sent = tokens(&fitted.messages);
            prop_assert!(sent <= room, "{sent} tokens sent, room {room} ({fitted:?})");
            prop_assert_eq!(sent, fitted.tokens);
            common::assert_valid_request(&fitted.messages, "fitted");
            prop_assert_eq!(&fitted.messages[0], &Message::System(SYSTEM.into()));
            prop_assert_eq!(persons(&fitted.messages), persons(&unfitted), "the person's words stay");
            for message in &fitted.messages {
                if let Message::Tool { content, .. } = message {
                    let opened = content.matches("<untrusted ").count();
                    prop_assert_eq!(opened, content.matches("</untrusted>").count(), "{}", content);
                    let closed = docs_agent::guard::fence::found_in(content).filter(|f| f.closed).count();
                    prop_assert_eq!(opened, closed, "every fence closed: {}", content);
                }
            }
            if tokens(&unfitted) <= room {
                prop_assert_eq!(&fitted.messages, &unfitted, "a request within the room is left alone");
                seen.untouched += 1;
            }
            seen.stubbed += usize::from(fitted.stubbed > 0);
            seen.dropped += usize::from(fitted.dropped > 0);
            seen.cut += usize::from(fitted.cut > 0);
        }
        Err(overflow) => {
            // Only what the fit may not touch is too large: the rules, the person's messages,
            // the model's text replies, the latest step's calls and a note per result of it.
            let kept: u64 = unfitted
                .iter()
                .map(|m| match m {
                    Message::Tool { .. } => 0,
                    Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => 0,
                    other => tokens(std::slice::from_ref(other)),
                })
                .sum();
            // The latest step's results, when the request ends with them.
            let latest = unfitted.iter().rev().take_while(|m| matches!(m, Message::Tool { .. })).count() as u64;
            prop_assert!(overflow.needed > room);
            prop_assert!(kept + latest * 120 > room, "overflow with {kept} untouchable tokens, room {room}");
            seen.overflows += 1;
        }
    }
    Ok(())
}

#[test]
fn no_request_exceeds_the_budget_and_every_call_keeps_its_result() {
    // A fixed seed: the same 256 sessions every run, so the coverage below holds every run.
    let config = ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() };
    let rng = proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(config, rng);
    let seen = std::cell::RefCell::new(Seen::default());
    let sessions = (prop::collection::vec(turn_plan(), 0..3), turn_plan(), 600u64..9_000);
    let outcome = runner.run(&sessions, |(earlier, now, budget)| check(&earlier, &now, budget, &mut seen.borrow_mut()));
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    // The cases tried every way of fitting, or the property says little.
    let seen = seen.into_inner();
    assert!(
        seen.untouched > 10 && seen.stubbed > 10 && seen.dropped > 10 && seen.cut > 10 && seen.overflows > 0,
        "{seen:?}"
    );
}
