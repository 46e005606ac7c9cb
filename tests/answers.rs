//! The answer path of issue 32, through the binary against a fake model server on 127.0.0.1:
//! numbered evidence and numbered citations, the answer call's shape, "the docs do not cover
//! this" (from weak evidence without a model call, and from the model), and the answers the
//! harness never passes on (a copied fence tag, a cited answer the evidence does not back, a
//! number it does not hold, a citation alone).

mod common;
mod fake;

use common::{run, sample_workspace};
use fake::{Canned, ask};
use serde_json::Value;

fn tool_message(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().find(|m| m["role"] == "tool").and_then(|m| m["content"].as_str()).unwrap_or("").to_string()
}

fn corrections(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "correction")
        .filter_map(|v| v["kind"].as_str().map(str::to_string))
        .collect()
}

const REFUND: &str = "how long is the refund window";

#[test]
fn the_model_cites_a_number_and_the_answer_names_its_source() {
    let (server, out) =
        ask(vec![Canned::text("Refunds are possible within 14 days of the first payment. Source: [1]")], REFUND);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one model call when the evidence answers");
    let evidence = tool_message(&requests[0]);
    assert!(
        evidence.starts_with(
            "Evidence from the docs, numbered:\n[1] <untrusted source=\"docs/refunds.md#window\">\n# Refunds > Window\n"
        ),
        "{evidence}"
    );
    assert!(evidence.len() < 2_400, "about 300 tokens of evidence, not whole sections: {} bytes", evidence.len());
    // The call that answers from the evidence is short and stops before copying it.
    assert_eq!(requests[0]["max_tokens"], 200, "{}", requests[0]);
    let stops: Vec<&str> = requests[0]["stop"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(stops.contains(&"<untrusted") && stops.len() <= 4, "{stops:?}");
    assert!(
        out.stdout
            .starts_with("Refunds are possible within 14 days of the first payment. Source: [docs/refunds.md#window]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\n\nSources:\n- docs/refunds.md#window (Refunds > Window)\n"), "{}", out.stdout);
}

#[test]
fn a_number_the_evidence_did_not_give_is_no_citation() {
    let (server, out) = ask(
        vec![
            Canned::text("Refunds are possible within 14 days of the first payment [7]."),
            Canned::text("Refunds are possible within 14 days of the first payment [1]."),
        ],
        REFUND,
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "[7] cites nothing, so the answer is sent back: {}", out.stderr);
    assert_eq!(requests[1]["max_tokens"], 512, "only the first answer from the evidence is capped");
    assert_eq!(corrections(&out.stderr), ["unverified"]);
    assert!(
        out.stdout.starts_with("Refunds are possible within 14 days of the first payment [docs/refunds.md#window].")
    );
}

#[test]
fn an_off_topic_question_is_not_covered_without_asking_the_model() {
    let (server, out) =
        ask(vec![Canned::text("Yes, Helm charts are supported [1].")], "does it support kubernetes helm");
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(server.requests().is_empty(), "the model is not asked when the evidence is this weak");
    assert!(
        out.stdout.starts_with("The docs do not cover this.\n\nThese sections came closest and might help:\n- "),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("Helm charts are supported"), "{}", out.stdout);
    // The sections that might help are not its sources.
    assert!(!out.stdout.contains("Sources:"), "{}", out.stdout);
}

#[test]
fn an_order_number_in_a_question_does_not_make_it_off_topic() {
    let (server, out) = ask(
        vec![Canned::text("Refunds are possible within 14 days of the first payment [1].")],
        "order 88123 was paid on 2026-11-02, how long is the refund window for it",
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 1, "the model is asked: {}", out.stdout);
    assert!(out.stdout.contains("Sources:\n- docs/refunds.md#window"), "{}", out.stdout);
}

#[test]
fn a_negative_fact_without_its_citation_is_sent_back_not_called_silence() {
    let (server, out) = ask(
        vec![
            Canned::text("Refunds are not available after 14 days."),
            Canned::text("Refunds are not available after 14 days [1]."),
        ],
        REFUND,
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 2, "sent back once: {}", out.stderr);
    assert!(
        out.stdout.starts_with("Refunds are not available after 14 days [docs/refunds.md#window]."),
        "{}",
        out.stdout
    );
}

#[test]
fn the_model_saying_the_docs_are_silent_is_answered_plainly() {
    let (server, out) = ask(
        vec![Canned::text("The docs do not mention a limit on refunds per customer.")],
        "how many refunds can one customer get per year",
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 1, "not sent back: {}", out.stderr);
    assert!(
        out.stdout.starts_with("The docs do not cover this.\n\nThese sections came closest and might help:\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_copied_fence_tag_never_reaches_the_person() {
    let parrot =
        "3 sections matched, best first:\n<untrusted source=\"docs/refunds.md#window\">\n14 days\n</untrusted>";
    let (server, out) = ask(vec![Canned::text(parrot)], REFUND);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 2, "sent back once: {}", out.stderr);
    assert_eq!(corrections(&out.stderr), ["copied"]);
    assert!(out.stdout.starts_with("Retrieval-only answer"), "{}", out.stdout);
    assert!(!out.stdout.contains("<untrusted") && !out.stdout.contains("</untrusted"), "{}", out.stdout);
}

#[test]
fn a_cited_answer_the_evidence_does_not_back_is_replaced_at_once() {
    for (answer, why) in [
        // It restates the question and adds what no retrieved text says.
        (
            "Yes, the refund window stretches whenever shoppers complain loudly. Source: [1]",
            "says mostly what the evidence does not",
        ),
        // A number the evidence does not hold.
        (
            "Refunds are possible within 30 days of the first payment. Source: [1]",
            "states 30, which the evidence does not hold",
        ),
    ] {
        let (server, out) = ask(vec![Canned::text(answer)], REFUND);
        assert_eq!(out.code, 0, "stderr: {}", out.stderr);
        assert_eq!(server.requests().len(), 1, "not sent back: telling a small model does not mend it");
        assert!(out.stdout.starts_with("Retrieval-only answer (the model's answer did not cite"), "{}", out.stdout);
        assert!(!out.stdout.contains("shoppers") && !out.stdout.contains("30 days"), "{}", out.stdout);
        assert!(
            out.stdout.contains("   > Refunds are possible within 14 days"),
            "the evidence is quoted: {}",
            out.stdout
        );
        assert!(
            out.stderr.contains(&format!("replaced by the evidence: the model's answer {why}")),
            "the log says why: {}",
            out.stderr
        );
    }
}

/// A product, feature or number the evidence does not hold and the docs never use ("Yes, the
/// QuickBooks integration extends it [1]") is no fact of the docs: the answer is "not covered",
/// naming it, at once (told so, a small model repeats it).
#[test]
fn an_answer_naming_what_the_docs_never_mention_is_not_covered() {
    for (answer, term) in [
        ("Yes, the refund window can be extended by the QuickBooks integration. Source: [1]", "QuickBooks"),
        ("Refunds are possible within 14 days, or 4096 days on Enterprise plans. Source: [1]", "Enterprise"),
        (
            "Refunds are possible within 14 days of the first payment, and 4096 days for annual plans. Source: [1]",
            "4096",
        ),
    ] {
        let (server, out) = ask(vec![Canned::text(answer)], REFUND);
        assert_eq!(out.code, 0, "stderr: {}", out.stderr);
        assert_eq!(server.requests().len(), 1, "not sent back: {}", out.stderr);
        let first = out.stdout.lines().next().unwrap_or_default();
        assert_eq!(first, format!("The docs do not cover this. The docs never mention {term}."), "{}", out.stdout);
        assert!(out.stdout.contains("might help"), "the closest sections are listed: {}", out.stdout);
        assert!(
            out.stderr
                .contains(&format!("not covered: the model's answer names {term}, which no evidence passage holds")),
            "the trace says why: {}",
            out.stderr
        );
    }
}

#[test]
fn why_an_answer_was_replaced_never_carries_a_secret_it_quoted() {
    let secret = "AKIAIOSFODNN7EXAMPLE";
    let answer = format!("The docs say \"refunds need the key {secret} to pass\" [1].");
    let (server, out) = ask(vec![Canned::text(&answer), Canned::text(&answer)], REFUND);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 2, "a misquote is sent back once: {}", out.stderr);
    let why: Vec<String> = out
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "replaced")
        .filter_map(|v| v["why"].as_str().map(str::to_string))
        .collect();
    assert_eq!(why.len(), 1, "one replaced line: {}", out.stderr);
    assert!(why[0].contains("quotes \"refunds need the key "), "the quote is named: {}", why[0]);
    assert!(!out.stderr.contains(secret) && !out.stdout.contains(secret), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_citation_alone_is_sent_back() {
    let (server, out) = ask(
        vec![Canned::text("Source: [1]"), Canned::text("Refunds are possible within 14 days. Source: [1]")],
        REFUND,
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    let messages = server.requests()[1]["messages"].as_array().cloned().unwrap_or_default();
    let reminder = messages.last().and_then(|m| m["content"].as_str()).unwrap_or("").to_string();
    assert!(reminder.contains("gives a source but no answer"), "{reminder}");
    assert!(
        out.stdout.starts_with("Refunds are possible within 14 days. Source: [docs/refunds.md#window]"),
        "{}",
        out.stdout
    );
}

#[test]
fn search_shows_the_evidence_and_whether_it_is_enough() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["search", "--evidence", REFUND]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("enough to ask the model"), "{}", out.stdout);
    assert!(out.stdout.contains("\n[1] docs/refunds.md#window  Refunds > Window  "), "{}", out.stdout);
    let weak = run(ws.path(), &[], &["search", "--evidence", "does it support kubernetes helm"]);
    assert!(weak.stdout.contains("too weak"), "{}", weak.stdout);
}
