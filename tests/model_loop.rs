//! The loop's limits and outbound guards, driven by a fake model server on 127.0.0.1: wall time,
//! tool calls per step, output tokens, the system prompt's contents, and what an answer may carry.

mod common;
mod fake;

use std::time::Duration;

use common::{run, sample_workspace};
use fake::{Canned, FakeServer};
use serde_json::json;

/// The fake model's scripts count its own calls and answer without citations: the loop's
/// limits and guards are tested here without retrieve-first and answer verification (see
/// `retrieval.rs` for those).
fn env(base: &str) -> Vec<(&str, &str)> {
    vec![
        ("LLM_BASE_URL", base),
        ("LLM_MODEL", "test-model"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("DOCS_AGENT_VERIFY", "false"),
    ]
}

#[test]
fn wall_time_limit_stops_a_slow_model_with_exit_4() {
    let server = FakeServer::start(vec![Canned::text("late").after(Duration::from_secs(30))]);
    let ws = sample_workspace();
    let base = server.base_url();
    let mut env = env(&base);
    env.push(("DOCS_AGENT_MAX_WALL_SECS", "1"));
    let out = run(ws.path(), &env, &["q"]);
    assert_eq!(out.code, 4, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("time_limit"), "stderr: {}", out.stderr);
}

#[test]
fn tool_calls_beyond_the_per_step_limit_are_refused_but_answered() {
    let calls: Vec<_> = (0..6)
        .map(|i| json!({"id": format!("c{i}"), "type": "function", "function": {"name": "search_docs", "arguments": "{\"query\":\"refund\"}"}}))
        .collect();
    let server = FakeServer::start(vec![
        Canned::message(json!({"role": "assistant", "content": null, "tool_calls": calls})),
        Canned::text("done"),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let decisions: Vec<String> =
        out.tool_lines().iter().map(|l| l["decision"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(decisions, ["allowed", "allowed", "allowed", "allowed", "error"]);
    let refusal = &out.tool_lines()[4]["result"];
    assert!(refusal.as_str().unwrap_or("").contains("limit 4); this call and any after it were not run"), "{refusal}");
    // Every call kept in the conversation gets a result, so the next request is valid. The ids
    // are the harness's own, not the model's.
    let second = &server.requests()[1]["messages"];
    let answered: Vec<&str> =
        second.as_array().expect("messages").iter().filter_map(|m| m["tool_call_id"].as_str()).collect();
    let kept =
        second.as_array().expect("messages").iter().find_map(|m| m["tool_calls"].as_array()).expect("assistant calls");
    assert_eq!(kept.len(), 5, "calls past the refusal are dropped from the conversation");
    let kept_ids: Vec<&str> = kept.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(answered, kept_ids);
    assert!(kept_ids.iter().all(|id| id.starts_with("call_") && !id.starts_with("c0")), "{kept_ids:?}");
}

#[test]
fn request_carries_max_tokens_and_a_stable_system_prompt_with_only_the_catalog() {
    let server = FakeServer::start(vec![Canned::text("ok")]);
    let ws = sample_workspace();
    let base = server.base_url();
    let first = run(ws.path(), &env(&base), &["first question"]);
    let second = run(ws.path(), &env(&base), &["another question entirely"]);
    assert_eq!((first.code, second.code), (0, 0), "{}", first.stderr);
    let requests = server.requests();
    assert_eq!(requests[0]["max_tokens"], 512, "limits.max_output_tokens, by default");
    let system = |i: usize| requests[i]["messages"][0]["content"].as_str().unwrap_or("").to_string();
    assert_eq!(system(0), system(1), "the system prompt does not change with the question");
    let prompt = system(0);
    assert!(prompt.contains("<project_instructions source=\"AGENTS.md\">"), "{prompt}");
    assert!(prompt.contains("<name>cite-sources</name>") && prompt.contains("<name>save-note</name>"), "{prompt}");
    assert!(prompt.contains("<location>skills/save-note/SKILL.md</location>"), "{prompt}");
    let body = std::fs::read_to_string(ws.path().join("skills/save-note/SKILL.md")).expect("skill");
    let body_line =
        body.split("---").nth(2).and_then(|b| b.lines().find(|l| l.trim().len() > 30)).expect("a body line");
    assert!(!prompt.contains(body_line.trim()), "skill body must not be in the prompt: {body_line}");
}

#[test]
fn answers_lose_outside_links_images_secrets_and_escapes() {
    let answer = "See ![chart](https://evil.example/c.png?d=refunds) and [the docs](docs/refunds.md#window). \
                  <img src=\"https://evil.example/x\"> key sk_live_4eC39HqLyjWDarjtT1zdp7dc \u{1b}[2Jdone";
    let server =
        FakeServer::start(vec![Canned::tool("search_docs", json!({"query": "refund window"})), Canned::text(answer)]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(!out.stdout.contains("evil.example"), "{}", out.stdout);
    assert!(out.stdout.contains("[the docs](docs/refunds.md#window)"), "{}", out.stdout);
    assert!(!out.stdout.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{}", out.stdout);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
}

#[test]
fn allowed_link_hosts_keep_their_links() {
    let server = FakeServer::start(vec![Canned::text("![logo](https://docs.acme.example/logo.png)")]);
    let ws = sample_workspace();
    std::fs::write(ws.path().join("docs-agent.toml"), "allowed_link_hosts = [\"docs.acme.example\"]\n").expect("write");
    let base = server.base_url();
    let out = run(ws.path(), &env(&base), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("https://docs.acme.example/logo.png"), "{}", out.stdout);
}

#[test]
fn citations_of_pages_never_retrieved_are_marked() {
    let server = FakeServer::start(vec![
        Canned::tool("search_docs", json!({"query": "refund window"})),
        Canned::text("Per docs/refunds.md#window it is 14 days; docs/secret-roadmap.md says more."),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("docs/refunds.md#window it is"), "{}", out.stdout);
    assert!(out.stdout.contains("docs/secret-roadmap.md [unverified citation]"), "{}", out.stdout);
}

/// Regression: the trace once cut strings without redacting them. Secrets the model wrote
/// itself (in a search, in a note's path and content) never reach stderr, even on an
/// approved write; the note holds only the redacted content.
#[test]
fn an_approved_write_with_a_secret_leaves_no_secret_on_stderr() {
    let key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let aws = "AKIAIOSFODNN7EXAMPLE";
    let server = FakeServer::start(vec![
        Canned::message(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "search_docs",
                "arguments": json!({"query": format!("is {key} valid")}).to_string()}},
            {"id": "b", "type": "function", "function": {"name": "write_file",
                "arguments": json!({"path": "notes/keys.md", "content": format!("key {key} and {aws}")}).to_string()}},
            {"id": "c", "type": "function", "function": {"name": "read_file",
                "arguments": json!({"path": format!("docs/{aws}.md")}).to_string()}},
        ]})),
        Canned::text("saved"),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let mut env = env(&base);
    env.push(("APPROVE", "yes"));
    let out = run(ws.path(), &env, &["save the keys"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines = out.tool_lines();
    let tools: Vec<&str> = lines.iter().filter_map(|l| l["tool"].as_str()).collect();
    assert_eq!(tools.len(), 3, "one trace line per call: {}", out.stderr);
    let write = lines.iter().find(|l| l["tool"] == "write_file").expect("the write is traced");
    assert_eq!(write["decision"], "allowed", "{write}");
    for secret in [key, aws, &key[4..24], &aws[4..]] {
        assert!(!out.stderr.contains(secret), "stderr shows {secret}: {}", out.stderr);
        assert!(!out.stdout.contains(secret), "stdout shows {secret}: {}", out.stdout);
    }
    assert!(out.stderr.contains("[REDACTED]"), "the secrets are marked where they were: {}", out.stderr);
    let note = std::fs::read_to_string(ws.path().join("notes/keys.md")).expect("the approved note exists");
    assert!(!note.contains(key) && !note.contains(aws) && note.contains("[REDACTED]"), "note: {note}");
}

/// A model can write a secret it was never shown (remembered, made up, or assembled). The
/// answer is redacted on its way out, whatever the model wrote.
#[test]
fn a_secret_the_model_writes_in_its_answer_never_reaches_stdout() {
    let server = FakeServer::start(vec![Canned::text(
        "Use AKIAIOSFODNN7EXAMPLE with ghp_abcdefghijklmnopqrstuvwxyz0123456789 (docs/api-keys.md).",
    )]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base), &["which key do I use"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    for secret in ["AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"] {
        assert!(!out.stdout.contains(secret), "stdout: {}", out.stdout);
        assert!(!out.stderr.contains(secret), "stderr: {}", out.stderr);
    }
    assert!(out.stdout.starts_with("Use [REDACTED] with [REDACTED]"), "stdout: {}", out.stdout);
}
