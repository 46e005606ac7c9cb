use super::*;
use crate::session::event::{CallRecord, Origin};

fn stored(seq: u64, event: Event) -> Stored {
    Stored { seq, at_ms: 0, event }
}

fn call(id: &str, name: &str) -> CallRecord {
    CallRecord { id: id.into(), name: name.into(), arguments: "{}".into() }
}

/// A turn that searched (two sections) and read one file whole.
fn turn() -> Vec<Stored> {
    let search = "2 sections matched, best first:\n\
        <untrusted source=\"docs/refunds.md#window\">\n# Refunds > Window\nRefunds are possible within **14 days** of the first payment.\n</untrusted>\n\
        <untrusted source=\"docs/taxes.md\">\n# Taxes\nVAT is charged at the customer's rate.\n</untrusted>\n";
    let read =
        "<untrusted source=\"docs/disputes.md\">\nlines 1-3 of 3\n# Disputes\nA 15 EUR fee applies.\n</untrusted>";
    vec![
        stored(
            2,
            Event::AssistantMessage {
                text: String::new(),
                tool_calls: vec![call("a", "search_docs"), call("b", "read_file"), call("c", "load_skill")],
                usage: None,
                estimated: None,
                origin: Origin::Harness,
            },
        ),
        stored(3, Event::ToolResult { call_id: "a".into(), text: search.into(), decision: Decision::Allowed }),
        stored(4, Event::ToolResult { call_id: "b".into(), text: read.into(), decision: Decision::Allowed }),
        stored(
            5,
            Event::ToolResult {
                call_id: "c".into(),
                text: "<untrusted source=\"docs/secret.md#x\">\nfrom a skill\n</untrusted>".into(),
                decision: Decision::Allowed,
            },
        ),
    ]
}

/// A citation as expected: (source, verified, heading).
type Expected = (&'static str, bool, &'static str);

#[test]
fn a_citation_counts_only_when_its_section_was_retrieved_in_the_turn() {
    let events = turn();
    let cases: &[(&str, &[Expected])] = &[
        ("14 days [docs/refunds.md#window].", &[("docs/refunds.md#window", true, "Refunds > Window")]),
        ("See docs/refunds.md.", &[("docs/refunds.md", true, "Refunds > Window")]),
        ("See docs/refunds.md#how-to-issue.", &[("docs/refunds.md#how-to-issue", false, "")]),
        ("VAT (docs/taxes.md).", &[("docs/taxes.md", true, "Taxes")]),
        ("A fee (docs/disputes.md#disputes).", &[("docs/disputes.md#disputes", true, "")]),
        // A file read in part backs only the sections whose headings it showed.
        ("A fee (docs/disputes.md#how-disputes-work).", &[("docs/disputes.md#how-disputes-work", false, "")]),
        ("A fee (docs/disputes.md).", &[("docs/disputes.md", true, "")]),
        ("Made up: docs/roadmap.md#launch.", &[("docs/roadmap.md#launch", false, "")]),
        ("Only a skill showed it: docs/secret.md#x.", &[("docs/secret.md#x", false, "")]),
        (
            "Two: docs/refunds.md#window and docs/roadmap.md, then docs/refunds.md#window again.",
            &[("docs/refunds.md#window", true, "Refunds > Window"), ("docs/roadmap.md", false, "")],
        ),
        ("No citation at all.", &[]),
    ];
    for (answer, expected) in cases {
        let verdict = check(answer, "how long is the refund window", &events);
        let got: Vec<(String, bool, String)> =
            verdict.citations.iter().map(|c| (c.source(), c.verified, c.heading.clone())).collect();
        let want: Vec<(String, bool, String)> =
            expected.iter().map(|(s, v, h)| (s.to_string(), *v, h.to_string())).collect();
        assert_eq!(got, want, "answer {answer:?}");
    }
}

#[test]
fn a_quoted_span_must_be_in_the_retrieved_text() {
    let events = turn();
    let cases: &[(&str, &[&str])] = &[
        ("The docs say \"Refunds are possible within 14 days of the first payment\" [docs/refunds.md#window].", &[]),
        ("They say “refunds are possible   within 14 DAYS” (docs/refunds.md).", &[]),
        ("\"Refunds are possible within 14 days … of the first payment\" docs/refunds.md", &[]),
        (
            "The docs say \"refunds are possible within 30 days of any payment\" [docs/refunds.md#window].",
            &["refunds are possible within 30 days of any payment"],
        ),
        ("Click \"Refund\" or \"Issue a refund\" (docs/refunds.md).", &[]),
        // The user's own words quoted back are not a misquote.
        ("You asked what \"refund in thirty days\" means: it is 14 days (docs/refunds.md).", &[]),
    ];
    for (answer, expected) in cases {
        assert_eq!(
            check(answer, "what does \"refund in thirty days\" mean", &events).misquotes,
            *expected,
            "answer {answer:?}"
        );
    }
}

#[test]
fn an_answer_holds_with_a_verified_citation_and_no_misquote_or_when_nothing_was_found() {
    let events = turn();
    let cases: &[(&str, bool)] = &[
        ("14 days [docs/refunds.md#window].", true),
        ("14 days.", false),
        ("14 days [docs/roadmap.md].", false),
        ("\"Refunds are possible within 30 days of any payment\" [docs/refunds.md#window].", false),
        ("I could not find this in the docs.", false),
    ];
    for (answer, holds) in cases {
        assert_eq!(check(answer, "q", &events).holds(), *holds, "answer {answer:?}");
    }
    let nothing = vec![stored(
        3,
        Event::ToolResult {
            call_id: "a".into(),
            text: "No section of the docs matched.".into(),
            decision: Decision::Allowed,
        },
    )];
    let nothing = [turn()[..1].to_vec(), nothing].concat();
    assert!(check("I could not find this in the docs.", "q", &nothing).holds(), "no hits: nothing to cite");
    assert!(!check("x", "q", &nothing).had_hits);
}
