use super::*;
use crate::guard::fence::Fenced;
use crate::model::ToolCall;

fn read_result(path: &str, first: usize, lines: usize, total: usize) -> String {
    let body: Vec<String> = (first..first + lines).map(|n| format!("line {n} of the refund policy text")).collect();
    let header = format!("lines {first}-{} of {total}\n", first + lines - 1);
    Fenced::new(path, &format!("{header}{}", body.join("\n"))).into_string()
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

fn step(id: &str, result: String) -> [Message; 2] {
    [
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![call(id, "read_file", "{\"path\":\"docs/a.md\"}")],
        },
        Message::Tool { call_id: id.into(), content: result },
    ]
}

fn projected(messages: Vec<Message>) -> Projected {
    Projected { messages, pinned: 1 }
}

fn nowhere(_: &str) -> Option<(usize, usize)> {
    None
}

fn conversation(steps: usize, lines: usize) -> Vec<Message> {
    let mut messages = vec![Message::System("rules".into()), Message::User("how long is the refund window?".into())];
    for n in 0..steps {
        messages.extend(step(&format!("c{n}"), read_result("docs/a.md", 1 + n * lines, lines, 5000)));
    }
    messages
}

#[test]
fn a_request_within_the_room_is_left_as_it_is() {
    let messages = conversation(2, 10);
    let fitted = fit(projected(messages.clone()), 100_000, &nowhere).expect("fits");
    assert_eq!(fitted.messages, messages);
    assert!(!fitted.changed());
}

#[test]
fn older_results_become_stubs_that_point_at_read_file_with_offsets() {
    let messages = conversation(3, 100);
    let whole = tokens(&messages);
    let latest = tokens(&messages[6..]);
    let room = whole - latest / 2;
    let fitted = fit(projected(messages.clone()), room, &nowhere).expect("fits");
    assert!(fitted.tokens <= room && tokens(&fitted.messages) <= room);
    assert!(fitted.stubbed >= 1 && fitted.dropped == 0 && fitted.cut == 0, "{fitted:?}");
    let Message::Tool { content, .. } = &fitted.messages[3] else { panic!("not a result: {:?}", fitted.messages[3]) };
    assert!(content.contains("docs/a.md lines 1-100 of 5000"), "{content}");
    assert!(content.contains(r#"read_file {"limit":100,"offset":1,"path":"docs/a.md"}"#), "{content}");
    // The latest step's result is whole.
    assert_eq!(fitted.messages.last(), messages.last());
}

#[test]
fn a_search_stub_points_at_the_lines_of_its_sections() {
    let search = format!(
        "2 sections matched, best first:\n{}\n{}\n",
        Fenced::new("docs/refunds.md#window", &"# Refunds > Window\nThirty days.\n".repeat(40)).into_string(),
        Fenced::new("docs/plans.md", &"# Plans\nPro and Team.\n".repeat(40)).into_string()
    );
    let mut messages = vec![Message::System("rules".into()), Message::User("refund window?".into())];
    messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call("s", "search_docs", "{\"query\":\"refund\"}")],
    });
    messages.push(Message::Tool { call_id: "s".into(), content: search });
    messages.extend(step("r", read_result("docs/refunds.md", 1, 30, 30)));
    let locate = |source: &str| (source == "docs/refunds.md#window").then_some((12, 40));
    let room = tokens(&messages) - 100;
    let fitted = fit(projected(messages), room, &locate).expect("fits");
    let Message::Tool { content, .. } = &fitted.messages[3] else { panic!("not a result") };
    assert!(content.contains("docs/refunds.md#window (lines 12-40); docs/plans.md"), "{content}");
    assert!(content.contains(r#"read_file {"limit":29,"offset":12,"path":"docs/refunds.md"}"#), "{content}");
    assert!(!content.contains("<untrusted"), "a stub quotes no fenced text: {content}");
}

#[test]
fn older_steps_are_dropped_with_their_calls_when_stubs_are_not_enough() {
    let messages = conversation(6, 40);
    let keep = tokens(&messages[..2]) + tokens(&messages[12..]);
    let fitted = fit(projected(messages.clone()), keep + 60, &nowhere).expect("fits");
    assert!(fitted.dropped >= 1, "{fitted:?}");
    assert_eq!(fitted.messages[..2], messages[..2], "the rules and the question stay");
    assert_eq!(fitted.messages.last(), messages.last(), "the latest result stays whole");
    let calls = fitted.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
    let results = fitted.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
    assert_eq!(calls, results, "a call goes with its result");
}

#[test]
fn a_result_larger_than_the_room_is_cut_with_its_fence_closed_and_a_note_to_read_on() {
    let mut messages = vec![Message::System("rules".into()), Message::User("refund window?".into())];
    messages.extend(step("big", read_result("docs/a.md", 1, 2000, 2000)));
    let room = tokens(&messages[..3]) + 400;
    let fitted = fit(projected(messages), room, &nowhere).expect("fits");
    assert_eq!(fitted.cut, 1);
    assert!(fitted.tokens <= room);
    let Message::Tool { content, .. } = &fitted.messages[3] else { panic!("not a result") };
    assert_eq!(content.matches("<untrusted ").count(), content.matches("</untrusted>").count(), "{content}");
    let found: Vec<_> = fence::found_in(content).collect();
    assert!(found.len() == 1 && found[0].closed, "{content}");
    let last_shown: usize = found[0]
        .body
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("line "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a line shown");
    let next = last_shown + 1;
    assert!(
        content.contains(&format!("read_file {{\"limit\":{},\"offset\":{next},\"path\":\"docs/a.md\"}}", 2001 - next)),
        "the note reads on from line {next}: {content}"
    );
    assert!(content.ends_with(']'), "the note comes last, outside the fence");
}

#[test]
fn the_rules_and_the_question_are_never_cut_and_too_large_a_question_is_an_overflow() {
    let mut messages = vec![Message::System("rules".into()), Message::User("why? ".repeat(2000))];
    messages.extend(step("c", read_result("docs/a.md", 1, 50, 50)));
    let Err(overflow) = fit(projected(messages), 1000, &nowhere) else {
        panic!("fitted a question larger than the room")
    };
    assert!(overflow.needed > 1000 && overflow.room == 1000, "{overflow:?}");
}

#[test]
fn a_cut_never_splits_a_redaction_marker_or_a_fence_opening() {
    let body = format!("{}{}", "x".repeat(500), redact::REDACTED.repeat(200));
    let content = Fenced::new("docs/k.md", &body).into_string();
    for max in (NOTE_RESERVE..content.len()).step_by(7) {
        let out = cut(&content, max, &nowhere);
        let without = out.replace(redact::REDACTED, "");
        assert!(!without.contains("[REDAC") && !without.contains("ACTED]"), "split marker at {max}: {out}");
        assert_eq!(out.matches("<untrusted ").count(), out.matches("</untrusted>").count(), "at {max}: {out}");
    }
    // So little room that no text fits: the note alone, never half an opening tag.
    let out = cut(&content, 10, &nowhere);
    assert!(!out.contains('<'), "{out}");
}

#[test]
fn a_cut_search_result_keeps_the_question_repeated_after_its_sections() {
    let hint = "Question: how long is the refund window?\nAnswer it in one or two sentences from these sections.";
    let content = format!(
        "1 sections matched, best first:\n{}\n{hint}",
        Fenced::new("docs/refunds.md#window", &"Refunds within 14 days.\n".repeat(200)).into_string()
    );
    let out = cut(&content, 1200, &|_| Some((3, 40)));
    assert!(out.len() <= 1200, "{} bytes", out.len());
    assert!(out.ends_with(hint), "{out}");
    assert!(out.contains("Not shown: docs/refunds.md#window (lines 3-40)"), "{out}");
    assert_eq!(fence::found_in(&out).filter(|f| f.closed).count(), 1, "{out}");
}
