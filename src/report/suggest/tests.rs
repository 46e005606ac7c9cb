use super::*;
use crate::session::event::{CallRecord, Origin as CallOrigin, StopReason};
use crate::tools::Decision;

fn stored(seq: u64, event: Event) -> Stored {
    Stored { seq, at_ms: seq * 1000, event }
}

/// A session of `principal`: each question answered from a search that found a section,
/// but for those in `unfound`, whose search found nothing.
fn session(principal: Option<&str>, questions: &[&str], unfound: &[&str]) -> Vec<Stored> {
    let mut events = vec![stored(
        1,
        Event::SessionStarted {
            model: "m".into(),
            workspace: "w".into(),
            config_fingerprint: "f".into(),
            principal: principal.map(String::from),
            collection: None,
        },
    )];
    for question in questions {
        let seq = events.len() as u64 + 1;
        let result = if unfound.contains(question) {
            format!("{} Try other words.", crate::tools::NO_HITS)
        } else {
            "1 sections matched:\n<untrusted source=\"docs/refunds.md#window\">\n14 days\n</untrusted>".to_string()
        };
        let call = CallRecord { id: format!("c{seq}"), name: "search_docs".into(), arguments: "{}".into() };
        events.extend([
            stored(seq, Event::UserMessage { text: (*question).into() }),
            stored(
                seq + 1,
                Event::AssistantMessage {
                    text: String::new(),
                    tool_calls: vec![call],
                    usage: None,
                    estimated: None,
                    origin: CallOrigin::Harness,
                },
            ),
            stored(
                seq + 2,
                Event::ToolResult { call_id: format!("c{}", seq), text: result, decision: Decision::Allowed },
            ),
            stored(seq + 3, Event::Answer { text: "14 days [docs/refunds.md#window]".into(), revision: None }),
            stored(seq + 4, Event::Stopped { reason: StopReason::Answered, detail: String::new() }),
        ]);
    }
    events
}

/// A session's answered questions, with its owner; a gap's question is not one.
#[test]
fn answered_questions_are_those_that_are_no_gap() {
    let events = session(Some("ana"), &["How long is the refund window?", "export to Xero"], &["export to Xero"]);
    assert_eq!(answered("s", &events, 0), vec![("How long is the refund window?".to_string(), "ana".to_string())]);
    // Too old for the window: none.
    assert!(answered("s", &events, u64::MAX).is_empty());
    // The local CLI's sessions are nobody's: they never count as a person.
    let local = session(None, &["refund window"], &[]);
    assert!(answered("s", &local, 0).is_empty());
}

/// The same words, whatever the case, spacing or closing punctuation.
#[test]
fn questions_match_on_their_words() {
    assert_eq!(key("  How long is the   REFUND window?? "), "how long is the refund window");
    assert_eq!(key("how long is the refund window"), key("How long is the refund window!"));
    assert_ne!(key("refund window for ACME"), key("refund window"));
}

/// A topic per file: its first section under the title, top-level files first.
#[test]
fn topics_are_each_files_first_nested_heading() {
    let listed = |path: &str, anchor: &str, heading: &str| Listed {
        path: path.into(),
        anchor: anchor.into(),
        heading: heading.into(),
    };
    let sections = vec![
        listed("docs/admin/roles.md", "roles", "Roles"),
        listed("docs/admin/roles.md", "refunds", "Roles > Refunds"),
        listed("docs/faq.txt", "", "faq.txt"),
        listed("docs/refunds.md", "refunds", "Refunds"),
        listed("docs/refunds.md", "window", "Refunds > Window"),
        listed("docs/refunds.md", "how-to-issue", "Refunds > How to issue"),
    ];
    let found = topics(&sections, 5, &|_| true);
    let shown: Vec<(&str, Option<&str>)> = found.iter().map(|s| (s.label.as_str(), s.section.as_deref())).collect();
    assert_eq!(
        shown,
        [
            ("Refunds > Window", Some("docs/refunds.md#window")),
            ("Roles > Refunds", Some("docs/admin/roles.md#refunds"))
        ]
    );
    assert_eq!(found[0].question, "Refunds: Window");
    assert_eq!(topic("API keys > Key types > Secret keys"), "API keys: Secret keys");
    assert_eq!(found[0].origin, Origin::Docs);
    assert_eq!(topics(&sections, 1, &|_| true).len(), 1);
    // A section the rules hide is passed over, and the next file's taken.
    let shown = topics(&sections, 5, &|s| s.path != "docs/refunds.md");
    assert_eq!(shown.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["Roles > Refunds"]);
}

/// A popular question as `people` asked it: (who, wording) pairs.
fn popular(asked: &[(&str, &str)]) -> Popular {
    let mut p = Popular { key: key(asked[0].1), people: BTreeSet::new(), wordings: BTreeMap::new() };
    for (who, wording) in asked {
        p.people.insert((*who).to_string());
        p.wordings.entry((*wording).to_string()).or_default().insert((*who).to_string());
    }
    p
}

/// A question shows only when enough people besides the caller asked it, in a wording that
/// many typed, else in its key's words; most people first.
#[test]
fn a_caller_sees_what_others_asked_in_shared_words() {
    let refund = popular(&[
        ("ana", "How long is the refund window?"),
        ("bo", "How long is the refund window?"),
        ("cy", "How long is the refund window?"),
        ("di", "how long is the REFUND window"),
    ]);
    let fees = popular(&[("ana", "Fees for ACME GmbH?"), ("bo", "fees for acme gmbh"), ("cy", "FEES FOR ACME GMBH")]);
    let all = [fees, refund];
    let shown = |caller: &str, asked_by: usize| -> Vec<(String, Option<usize>)> {
        asked(&all, caller, asked_by, 10).into_iter().map(|s| (s.question, s.people)).collect()
    };
    // Someone outside both groups: the refund question in the words three typed, then the fees
    // one in its key's words (nobody's wording was shared by three).
    assert_eq!(
        shown("eve", 3),
        [("How long is the refund window?".to_string(), Some(4)), ("fees for acme gmbh".to_string(), Some(3))]
    );
    // One of the askers needs three others: only the refund question, counted without them,
    // and in the key's words when their leaving makes the shared wording one of two.
    assert_eq!(shown("ana", 3), [("how long is the refund window".to_string(), Some(3))]);
    assert!(shown("eve", 0).is_empty(), "0 suggests no one's questions");
    assert_eq!(shown("eve", 5), []);
}

/// A question asked in one collection is never offered in another: `popular` reads only the
/// sessions of the collection it is asked for (a session from before collections reads
/// `default`).
#[test]
fn popular_questions_stay_in_their_collection() {
    use crate::session::store::{Location, Store};
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open(&Location::File(dir.path().join("log.db"))).expect("log");
    let mut log = store.log().expect("log");
    for (n, who) in ["ana", "bo", "cy"].into_iter().enumerate() {
        let mut events = session(Some(who), &["How long is the refund window?"], &[]);
        if let Event::SessionStarted { collection, .. } = &mut events[0].event {
            *collection = Some("hr".into());
        }
        for stored in events {
            log.append(&format!("s-hr-{n}"), stored.event).expect("append");
        }
    }
    let hr = super::popular(&log, 30, 2, "hr").expect("hr");
    assert_eq!(hr.len(), 1, "three people asked it in hr");
    assert!(super::popular(&log, 30, 2, "billing").expect("billing").is_empty(), "nobody asked it in billing");
    assert!(super::popular(&log, 30, 2, "default").expect("default").is_empty());
}
