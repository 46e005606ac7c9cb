//! Whether a recorded answer's sources still say what they said: reopened later, an answer
//! whose cited section changed (or is gone) is flagged, so nobody pastes an out-of-date answer
//! into a ticket. What the answer's turn read of each section is in its log (the fenced tool
//! results); each line of it must still be in the section as the index holds it now.

use super::store::Stored;
use super::verify::{Citation, answer_at, retrieved};
use crate::guard::fence;
use crate::guard::redact::TRUNCATED;

/// Marks `stale` each verified citation of the answer at `answer_seq` whose section changed
/// since, against `index`, the generation searched now, its sections redacted by the operator's
/// `hooks` as the turn's results were. Nothing is marked when the answer was drawn from the
/// commit `index` holds (a git source's docs did not move).
pub fn mark(
    events: &[Stored],
    answer_seq: u64,
    citations: &mut [Citation],
    index: &crate::index::Index,
    hooks: Option<&crate::hooks::Hooks>,
) {
    let drawn_from = events.iter().find(|s| s.seq == answer_seq).and_then(|s| match &s.event {
        super::event::Event::Answer { revision, .. } => revision.clone(),
        _ => None,
    });
    if drawn_from.is_some() && drawn_from == index.revision() {
        return;
    }
    let now = |path: &str, anchor: &str| {
        let section = index.section(path, anchor).ok().flatten()?;
        Some(hooks.map_or_else(|| section.text.clone(), |h| h.redacted(&section.text).into_owned()))
    };
    mark_with(events, answer_seq, citations, &now);
}

/// [`mark`], with `now(path, anchor)` the section's text now (`None`: no such section any
/// more). A section the turn searched is stale when a line of what it read is no longer in
/// it; one only read whole with `read_file` is stale when it is gone. Citations the turn did
/// not retrieve are not judged (they are unverified already).
fn mark_with(
    events: &[Stored],
    answer_seq: u64,
    citations: &mut [Citation],
    now: &dyn Fn(&str, &str) -> Option<String>,
) {
    let Some((at, _)) = answer_at(events, answer_seq) else { return };
    let read = retrieved(super::state::this_turn(&events[..at]));
    for citation in citations.iter_mut().filter(|c| c.verified) {
        let source = citation.source();
        let Some(text) = now(&citation.path, &citation.anchor) else {
            citation.stale = true;
            continue;
        };
        // As the turn's text was shown: sanitised and its tags made inert by the fence.
        let text = squashed(&fence::neutralize_tags(&fence::sanitize(&text)));
        let lines = read.iter().filter(|s| s.searched && s.source == source).flat_map(|s| passage_lines(&s.body));
        citation.stale = lines.into_iter().any(|line| !text.contains(&squashed(line)));
    }
}

/// The lines of a searched section's fenced text that come from the section: not its first
/// line (the heading path the harness writes), nor the `…` that join passages left out, nor a
/// line's own `…` where a passage was cut or the `…[truncated]` where a result was.
fn passage_lines(body: &str) -> Vec<&str> {
    body.lines()
        .skip(usize::from(body.starts_with("# ")))
        .map(|line| {
            let line = line.trim();
            line.strip_suffix(TRUNCATED).unwrap_or(line).trim().trim_matches('…').trim()
        })
        .filter(|line| !line.is_empty())
        .collect()
}

/// `text` with every run of whitespace one space, so a rewrapped line is the same line.
fn squashed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::{CallRecord, Event, Origin};
    use crate::tools::Decision;

    fn stored(seq: u64, event: Event) -> Stored {
        Stored { seq, at_ms: seq, event }
    }

    /// A turn that searched and read `docs/refunds.md#window` as `body`, then answered citing it
    /// and `docs/fees.md#late` (never retrieved).
    fn turn(body: &str) -> Vec<Stored> {
        let call = CallRecord { id: "c1".into(), name: "search_docs".into(), arguments: "{}".into() };
        let result = crate::guard::fence::Fenced::new("docs/refunds.md#window", body).into_string();
        vec![
            stored(1, Event::UserMessage { text: "refund window?".into() }),
            stored(
                2,
                Event::AssistantMessage {
                    text: String::new(),
                    tool_calls: vec![call],
                    usage: None,
                    estimated: None,
                    origin: Origin::Harness,
                },
            ),
            stored(3, Event::ToolResult { call_id: "c1".into(), text: result, decision: Decision::Allowed }),
            stored(
                4,
                Event::Answer {
                    text: "14 days [docs/refunds.md#window], fees [docs/fees.md#late]".into(),
                    revision: None,
                },
            ),
        ]
    }

    fn judged(body: &str, now: Option<&str>) -> Vec<(String, bool)> {
        let events = turn(body);
        let mut citations = crate::session::verify::answer_citations(&events, 4);
        mark_with(&events, 4, &mut citations, &|path, anchor| {
            (path == "docs/refunds.md" && anchor == "window").then(|| now.map(str::to_string)).flatten()
        });
        citations.into_iter().map(|c| (c.source(), c.stale)).collect()
    }

    #[test]
    fn a_section_that_still_holds_what_was_read_is_current() {
        let body = "# Refunds > Window\nRefunds are possible within 14 days.\n…\nAfter that, only billing errors.";
        let now =
            "Refunds are possible within\n14 days.\n\nSomething new was added.\n\nAfter that, only billing errors.";
        assert_eq!(
            judged(body, Some(now)),
            vec![("docs/refunds.md#window".to_string(), false), ("docs/fees.md#late".to_string(), false)],
            "rewrapped and added to, what was read still stands; an unverified citation is not judged"
        );
    }

    #[test]
    fn a_section_whose_read_lines_changed_or_that_is_gone_is_stale() {
        let body = "# Refunds > Window\nRefunds are possible within 14 days.";
        let changed = judged(body, Some("Refunds are possible within 30 days."));
        assert_eq!(changed[0], ("docs/refunds.md#window".to_string(), true));
        let gone = judged(body, None);
        assert_eq!(gone[0], ("docs/refunds.md#window".to_string(), true));
        let cut = judged(
            "# Refunds > Window\nRefunds are possible within 14 days, and…",
            Some("Refunds are possible within 14 days, and more."),
        );
        assert!(!cut[0].1, "a passage cut with … matches what it was cut from");
        let tags = "# Refunds > Window\nCall `load::<Vec<String>>()` or see <b>this</b>.";
        let now = "Call `load::<Vec<String>>()` or see <b>this</b>.";
        assert!(!judged(tags, Some(now))[0].1, "tags the fence made inert are the same text");
        let truncated = format!("# Refunds > Window\nRefunds are possible within 14 da{}", TRUNCATED);
        assert!(!judged(&truncated, Some("Refunds are possible within 14 days."))[0].1, "a result cut short");
    }
}
