//! Budgets (issue 15, part 3), through the real binary against a fake model server that
//! reports 10 prompt and 5 completion tokens per call: a question stops at its token budget
//! (exit 8, no further model call); a cost cap stops it at its price; a session's budget spans
//! its turns, and `serve` then refuses a new message with 429 `budget_exhausted`; the session's
//! usage shows in the API, `sessions show` and `/metrics` (by model and principal).

mod common;
mod fake;

use serde_json::json;

const TOKEN: &str = "budget-token-0123456789";

/// Model replies that search forever: the model never answers by itself.
fn searching(calls: usize) -> Vec<fake::Canned> {
    (0..calls).map(|i| fake::Canned::tool("search_docs", json!({"query": format!("refund {i}")}))).collect()
}

#[test]
fn a_question_stops_at_its_token_budget_before_the_next_model_call() {
    let fake = fake::FakeServer::start(searching(6));
    let ws = common::sample_workspace();
    let base = fake.base_url();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("DOCS_AGENT_QUESTION_TOKENS", "40"),
    ];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 8, "{}", out.stderr);
    assert!(out.stderr.contains("this question used 45 tokens, its budget is 40 (budget.question_tokens)"));
    assert_eq!(fake.requests().len(), 3, "three calls of 15 tokens reach 40; no fourth is made");
    let stopped = out.tool_lines();
    assert_eq!(stopped.len(), 3, "{}", out.stderr);
    // Each call was bounded before it was made: its reply may use what the budget leaves.
    let caps: Vec<u64> = fake.requests().iter().filter_map(|r| r["max_tokens"].as_u64()).collect();
    assert_eq!(caps, [40, 25, 10], "each call's reply is bounded by what the budget leaves");
}

#[test]
fn a_cost_cap_stops_a_question_at_its_price_and_needs_one() {
    let fake = fake::FakeServer::start(searching(6));
    let ws = common::sample_workspace();
    // 1 per prompt token, 2 per completion token: 20 a call.
    let priced = "[budget]\nquestion_cost = 50.0\n\n[budget.prices.m]\ninput_per_million = 1000000.0\n\
                  output_per_million = 2000000.0\n";
    std::fs::write(ws.path().join("docs-agent.toml"), priced).expect("config");
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 8, "{}", out.stderr);
    assert!(out.stderr.contains("this question cost 60.0000, its cap is 50 (budget.question_cost)"), "{}", out.stderr);
    assert_eq!(fake.requests().len(), 3);

    // A cap without the model's price is refused at start, naming what to add.
    let other = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "other"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let out = common::run(ws.path(), &other, &["refund window"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("[budget.prices.\"other\"]"), "{}", out.stderr);
}

#[tokio::test]
async fn a_session_budget_spans_its_turns_then_serve_refuses_new_messages() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
        fake::Canned::text("never asked"),
    ]);
    let ws = common::sample_workspace();
    common::serve_config(ws.path(), &[("ana", TOKEN, &["ask", "admin"])], "[budget]\nsession_tokens = 20\n");
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")];
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &env);
    let api = common::Api::new(&url, TOKEN);
    let id = api.new_session().await;
    let messages = format!("/v1/sessions/{id}/messages");
    let first = api.post(&messages, json!({"text": "how long is the refund window"})).await;
    let second = api.post(&messages, json!({"text": "and for annual plans?"})).await;
    let third = api.post(&messages, json!({"text": "and one more?"})).await;
    let (_, shown) = api.get(&format!("/v1/sessions/{id}")).await;
    let client = reqwest::Client::new();
    let metrics = client.get(format!("{url}/metrics")).bearer_auth(TOKEN).send().await.expect("metrics");
    let metrics = metrics.text().await.unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!((first.0, first.1["stop"].as_str()), (200, Some("answered")), "{first:?}");
    assert_eq!((second.0, second.1["stop"].as_str()), (200, Some("answered")), "15 < 20: room for one more");
    assert_eq!(third.0, 429, "{third:?}");
    assert_eq!(third.1["error"]["code"], "budget_exhausted", "{third:?}");
    assert!(third.1["error"]["message"].as_str().is_some_and(|m| m.contains("budget.session_tokens")));
    assert_eq!(fake.requests().len(), 2, "the refused message reached no model");
    let usage = &shown["usage"];
    assert_eq!(
        (usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64(), usage["model_calls"].as_u64()),
        (Some(20), Some(10), Some(2)),
        "{shown}"
    );
    assert_eq!(usage["tokens_left"].as_u64(), Some(0), "{shown}");
    assert!(metrics.contains("docs_agent_tokens_total{kind=\"prompt\",model=\"m\",principal=\"ana\"} 20"), "{metrics}");
    assert!(metrics.contains("docs_agent_tokens_total{kind=\"completion\",model=\"m\",principal=\"ana\"} 10"));

    // `sessions --serve show` reads serve's log (the command line keeps its own).
    let out = common::run(ws.path(), &env, &["sessions", "--serve", "show", &id]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("usage: 20 tokens in, 10 out, over 2 model calls; 0 tokens left"), "{}", out.stdout);
}

/// A model server that reports no usage: budgets count the harness's estimate, said as such.
#[test]
fn without_reported_usage_the_estimate_counts() {
    let ws = common::sample_workspace();
    let env = [("LLM_MODEL", "scripted-loop"), ("DOCS_AGENT_QUESTION_TOKENS", "1")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 8, "the first call's estimate already spends a 1-token budget: {}", out.stderr);
    assert!(out.stderr.contains("budget.question_tokens"), "{}", out.stderr);
}

/// A reply sent back for a correction when no budget is left for another call: the turn
/// answers from what it retrieved instead of stopping without an answer.
#[test]
fn a_spent_budget_after_a_send_back_answers_from_the_retrieved_sections() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
        fake::Canned::text("never asked"),
    ]);
    let ws = common::sample_workspace();
    let stop = "[hooks.stop]\nrequire_citation_from = [\"docs/api-keys.md\"]\n";
    std::fs::write(ws.path().join("docs-agent.toml"), stop).expect("config");
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_QUESTION_TOKENS", "15")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(fake.requests().len(), 1, "no second call: the budget was spent");
    assert!(out.stdout.starts_with("Retrieval-only answer"), "{}", out.stdout);
    assert!(out.stdout.contains("14 days"), "{}", out.stdout);
}

/// Without a budget, a call keeps the configured cap on its reply.
#[test]
fn without_a_budget_a_call_keeps_its_configured_cap() {
    let ws = common::sample_workspace();
    let roomy = fake::FakeServer::start(searching(1).into_iter().chain([fake::Canned::text("14 days.")]).collect());
    let base = roomy.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let _ = common::run(ws.path(), &env, &["how long is the refund window"]);
    let caps: Vec<u64> = roomy.requests().iter().filter_map(|r| r["max_tokens"].as_u64()).collect();
    assert!(!caps.is_empty() && caps.iter().all(|&c| c > 40), "no budget, the configured cap: {caps:?}");
}
