//! The reranking stage through the binary (and its client in-process), against a fake
//! reranker on 127.0.0.1 (`fake::reranker`): what it reorders and what it is sent, both reply
//! shapes, a reranker that is down, slow or answers nonsense (the search's own order stands and
//! the trace says why), "not covered" decided by its relevance at either end, and `check` and
//! `/readyz` reporting it.

mod common;
mod fake;

use std::time::Duration;

use common::{run, sample_workspace};
use fake::reranker::{FakeReranker, Mode};

/// A question in words the sample docs do not use: they say "roll" ("Rolling and revoking keys").
const ROTATE: &str = "how do I rotate an API key";

/// The sources `search` printed, best first.
fn sources(stdout: &str) -> Vec<String> {
    stdout.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

/// The messages of the trace's `search` lines.
fn search_notes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "search")
        .filter_map(|v| v["message"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_section_the_reranker_finds_relevant_comes_first_for_every_shape() {
    let ws = sample_workspace();
    let keywords = run(ws.path(), &[], &["search", "-n", "8", ROTATE]);
    assert_eq!(keywords.code, 0, "{}", keywords.stderr);
    let before = sources(&keywords.stdout);
    assert_ne!(before.first().map(String::as_str), Some("docs/api-keys.md#rolling-and-revoking-keys"), "{before:?}");
    for mode in [Mode::Documents, Mode::Texts] {
        let reranker = FakeReranker::start(mode);
        reranker.favour("Roll key", 8.0);
        let url = reranker.base_url();
        let out = run(ws.path(), &[("DOCS_AGENT_RERANKER_URL", url.as_str())], &["search", "-n", "8", ROTATE]);
        assert_eq!(out.code, 0, "{mode:?}: {}", out.stderr);
        let after = sources(&out.stdout);
        assert_eq!(after.first().map(String::as_str), Some("docs/api-keys.md#rolling-and-revoking-keys"), "{mode:?}");
        let mut same = after.clone();
        same.sort();
        let mut was = before.clone();
        was.sort();
        assert_eq!(same, was, "{mode:?}: the same sections, reordered");

        let requests = reranker.requests();
        let last = requests.last().expect("a request");
        assert_eq!(last["query"], ROTATE, "{mode:?}");
        let field = if mode == Mode::Texts { "texts" } else { "documents" };
        let documents: Vec<&str> =
            last[field].as_array().expect("documents").iter().filter_map(|d| d.as_str()).collect();
        let count = documents.len();
        assert!(count > before.len() && count <= 12, "{mode:?}: up to 12 candidates, more than the 8 shown: {count}");
        let rolling =
            documents.iter().find(|d| d.starts_with("API keys > Rolling and revoking keys. ")).expect("heading");
        assert!(rolling.contains("the customer clicks Roll key."), "plain words, no markup: {rolling}");
        assert!(documents.iter().all(|d| d.chars().count() <= 600), "within input_chars");
        if mode == Mode::Texts {
            assert!(requests[0].get("documents").is_some(), "asked in the common shape first");
            assert_eq!(last["raw_scores"], true, "TEI is asked for logits");
        }
    }
}

#[test]
fn a_reranker_that_fails_leaves_the_search_its_order_and_the_trace_says_why() {
    let ws = sample_workspace();
    let keywords = run(ws.path(), &[], &["search", "-n", "8", ROTATE]);
    let cases = [
        (Mode::Down, "HTTP 503"),
        (Mode::Garbage, "not a list of scores"),
        (Mode::Partial, "scores 1 of the"),
        (Mode::Slow(Duration::from_secs(600)), "no answer"),
    ];
    for (mode, says) in cases {
        let reranker = FakeReranker::start(mode);
        reranker.favour("Roll key", 8.0);
        let url = reranker.base_url();
        // Only the slow reranker meets the timeout; the others answer, however busy the machine.
        let timeout = if matches!(mode, Mode::Slow(_)) { "300" } else { "30000" };
        let env = [("DOCS_AGENT_RERANKER_URL", url.as_str()), ("DOCS_AGENT_RERANKER_TIMEOUT_MS", timeout)];
        let out = run(ws.path(), &env, &["search", "-n", "8", ROTATE]);
        assert_eq!(out.code, 0, "{mode:?}: {}", out.stderr);
        assert_eq!(out.stdout, keywords.stdout, "{mode:?}: the keyword order stands");
        assert!(out.stderr.contains("kept its own order") && out.stderr.contains(says), "{mode:?}: {}", out.stderr);
        assert!(!out.stderr.contains(fake::reranker::ECHOED), "{mode:?}: the reply's secret stays: {}", out.stderr);
        if matches!(mode, Mode::Down | Mode::Garbage) {
            assert!(
                out.stderr.contains("[REDACTED]"),
                "{mode:?}: the reply is told, its secret hidden: {}",
                out.stderr
            );
        }

        // A question: answered, and the trace's search line says why it was not reranked.
        let asked = run(ws.path(), &[("LLM_MODEL", "scripted"), env[0], env[1]], &["how long is the refund window"]);
        assert_eq!(asked.code, 0, "{mode:?}: {}", asked.stderr);
        assert!(asked.stdout.contains("14 days"), "{mode:?}: {}", asked.stdout);
        let notes = search_notes(&asked.stderr);
        assert!(notes.iter().any(|n| n.starts_with("not reranked, the search's own order was kept")), "{notes:?}");
        assert!(!asked.stderr.contains(fake::reranker::ECHOED), "{mode:?}: {}", asked.stderr);
    }
    // Reranked: the trace says how many sections and how long.
    let reranker = FakeReranker::start(Mode::Documents);
    let url = reranker.base_url();
    let asked = run(ws.path(), &[("LLM_MODEL", "scripted"), ("DOCS_AGENT_RERANKER_URL", &url)], &["refund window"]);
    let notes = search_notes(&asked.stderr);
    assert!(notes.iter().any(|n| n.starts_with("reranked the best ") && n.ends_with(" ms")), "{notes:?}");
}

/// In one process, a reranker that failed is not asked again for a while: a reranker that is
/// down does not cost every question its timeout.
#[test]
fn a_failed_reranker_is_not_asked_again_at_once() {
    let reranker = FakeReranker::start(Mode::Down);
    let settings = docs_agent::config::RerankerConfig {
        base_url: reranker.base_url(),
        model: String::new(),
        api_key: None,
        candidates: 12,
        input_chars: 600,
        timeout_ms: 2_000,
        scores: docs_agent::config::RerankScores::Auto,
        min_relevance: 0.0,
        covers_at: 1.0,
    };
    let client = docs_agent::index::rerank::Reranker::new(&settings, Default::default());
    let documents = ["Refunds are possible within 14 days.".to_string()];
    let first = client.scores("refund window", &documents).expect_err("down");
    assert!(first.to_string().contains("HTTP 503"), "{first}");
    reranker.set(Mode::Documents);
    let second = client.scores("refund window", &documents).expect_err("paused");
    assert!(second.to_string().contains("not asked again yet"), "{second}");
    assert_eq!(reranker.requests().len(), 1, "the paused call sent nothing");
    // check's probe is not paused, and tells the truth.
    assert!(client.probe().is_ok(), "the reranker answers again");
}

#[test]
fn the_rerankers_relevance_decides_not_covered_at_either_end() {
    let ws = sample_workspace();
    let reranker = FakeReranker::start(Mode::Documents);
    reranker.favour("Roll key", 8.0);
    let url = reranker.base_url();
    // "rotate" is nowhere in the docs, but an everyday word, not a name: the words answer, from
    // sections that never say how to roll a key.
    let words = run(ws.path(), &[("LLM_MODEL", "extractive")], &[ROTATE]);
    assert!(words.stdout.starts_with("Retrieval-only answer (no language model"), "{}", words.stdout);
    assert!(!words.stdout.contains("Roll key"), "{}", words.stdout);
    let with = [("LLM_MODEL", "extractive"), ("DOCS_AGENT_RERANKER_URL", url.as_str())];
    let meaning = run(ws.path(), &with, &[ROTATE]);
    assert!(meaning.stdout.contains("Roll key"), "the reranker puts Rolling first: {}", meaning.stdout);
    // Where the words call it too weak (a demanding min_coverage here), a section the reranker
    // is sure of (covers_at 0.5 by default) is answered from.
    std::fs::write(ws.path().join("docs-agent.toml"), "[retrieval]\nmin_coverage = 0.9\n").expect("config");
    let words = run(ws.path(), &[("LLM_MODEL", "extractive")], &[ROTATE]);
    assert!(words.stdout.starts_with("The docs do not cover this."), "{}", words.stdout);
    let meaning = run(ws.path(), &with, &[ROTATE]);
    assert!(meaning.stdout.starts_with("Retrieval-only answer (no language model"), "{}", meaning.stdout);
    assert!(meaning.stdout.contains("Roll key"), "{}", meaning.stdout);
    // Below min_relevance, a question the words cover is not covered.
    std::fs::write(ws.path().join("docs-agent.toml"), "[retrieval.reranker]\nmin_relevance = 0.5\n").expect("config");
    let env = [("LLM_MODEL", "extractive"), ("DOCS_AGENT_RERANKER_URL", url.as_str())];
    let low = run(ws.path(), &env, &["how long is the refund window"]);
    assert!(low.stdout.starts_with("The docs do not cover this."), "{}", low.stdout);
    let evidence = run(ws.path(), &env, &["search", "--evidence", "how long is the refund window"]);
    assert!(evidence.stdout.contains("the reranker rates the most relevant section 0.00"), "{}", evidence.stdout);
    assert!(evidence.stdout.contains("too weak"), "{}", evidence.stdout);
}

#[tokio::test]
async fn check_and_readyz_say_whether_the_reranker_answers() {
    let ws = sample_workspace();
    let reranker = FakeReranker::start(Mode::Documents);
    let url = reranker.base_url();
    let up = run(ws.path(), &[("DOCS_AGENT_RERANKER_URL", &url)], &["check"]);
    assert_eq!(up.code, 0, "{}", up.stdout);
    assert!(up.stdout.contains(&format!("info: retrieval.reranker: {url}/rerank answers (")), "{}", up.stdout);
    let down = run(ws.path(), &[("DOCS_AGENT_RERANKER_URL", "http://127.0.0.1:9/v1")], &["check"]);
    assert_ne!(down.code, 0, "a reranker that does not answer is a problem: {}", down.stdout);
    assert!(
        down.stdout.contains("retrieval.reranker: the reranker at http://127.0.0.1:9/v1/rerank"),
        "{}",
        down.stdout
    );
    assert!(down.stdout.contains("DOCS_AGENT_RERANKER_URL"), "says what to set: {}", down.stdout);

    let token = "rerank-admin-0123456789";
    common::serve_config(ws.path(), &[("ops", token, &["admin", "ask"])], "");
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_RERANKER_URL", url.as_str())];
    let (mut child, base, _log) = common::spawn_serve_logged(ws.path(), &env);
    let (admin, anyone) = (common::Api::new(&base, token), common::Api::new(&base, ""));
    let asked = reranker.requests().len();
    let (status, before) = admin.get("/readyz").await;
    let after_readyz = reranker.requests().len();
    let (_, _) = admin.get("/v1/search?q=refund+window").await;
    let (_, up) = anyone.get("/readyz").await;
    reranker.set(Mode::Down);
    let (_, _) = admin.get("/v1/search?q=card+payment+fails").await;
    let (_, down) = anyone.get("/readyz").await;
    let (_, why) = admin.get("/readyz").await;
    let _ = child.kill();
    assert_eq!(status, 200, "{before}");
    assert_eq!(after_readyz, asked, "/readyz never asks the reranker itself");
    assert!(before["reranker"]["answers"].is_null(), "no search yet: {before}");
    assert_eq!(up["reranker"]["answers"], true, "{up}");
    assert_eq!(down["reranker"]["answers"], false, "{down}");
    assert!(down["reranker"].get("error").is_none(), "why is for an admin: {down}");
    assert!(why["reranker"]["error"].as_str().is_some_and(|e| e.contains("503")), "{why}");
    assert!(!why.to_string().contains(fake::reranker::ECHOED), "the reply's secret stays: {why}");
    assert!(why.to_string().contains("[REDACTED]"), "the reply is told, its secret hidden: {why}");
}
