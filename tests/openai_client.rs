//! The OpenAI-compatible client against a fake server on 127.0.0.1: tool calls, text, retries,
//! malformed bodies, timeouts and clear errors, through the real binary.

mod common;
mod fake;

use std::time::Duration;

use common::{run, sample_workspace};
use fake::{Canned, FakeServer};
use serde_json::json;

fn env<'a>(server: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    // The client is tested here, without retrieve-first and answer verification (see
    // `retrieval.rs` for those): the fake's scripts count calls and answer without citations.
    let mut env = vec![
        ("LLM_BASE_URL", server),
        ("LLM_MODEL", "test-model"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("DOCS_AGENT_VERIFY", "false"),
    ];
    env.extend_from_slice(extra);
    env
}

#[test]
fn tool_call_then_text_answer() {
    let server = FakeServer::start(vec![
        Canned::tool("search_docs", json!({"query": "refund window"})),
        Canned::text("Refunds are possible within 14 days (docs/refunds.md#window)."),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["how long is the refund window"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("14 days"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "test-model");
    let tools: Vec<&str> =
        requests[0]["tools"].as_array().expect("tools").iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["search_docs", "read_file", "write_file", "load_skill"]);
    let second = requests[1]["messages"].as_array().expect("messages");
    let tool_msg = second.iter().find(|m| m["role"] == "tool").expect("tool result sent back");
    let asked = second.iter().find_map(|m| m["tool_calls"].as_array()).expect("assistant message with its call");
    assert_eq!(tool_msg["tool_call_id"], asked[0]["id"], "the result answers the call the harness recorded");
    assert_eq!(requests[0]["stream"], true, "the client asks for a streamed reply");
    assert!(tool_msg["content"].as_str().unwrap_or("").contains("<untrusted source=\"docs/refunds.md#window\">"));
}

#[test]
fn server_error_is_retried_then_succeeds() {
    let server =
        FakeServer::start(vec![Canned::raw(500, "{\"error\":\"busy\"}"), Canned::raw(429, "{}"), Canned::text("fine")]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "fine");
    assert_eq!(server.requests().len(), 3);
}

/// A 5xx with a body far over the reply limit is that 5xx: retried like any other, and named by
/// its status when it persists (not "the reply is larger than 8 MiB").
#[test]
fn a_server_error_with_a_huge_body_is_retried_and_named_by_its_status() {
    let huge = format!("{{\"error\":\"overloaded\"}}{}", " ".repeat(12 << 20));
    let server = FakeServer::start(vec![Canned::raw(500, &huge), Canned::text("fine")]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["q"]);
    assert_eq!(out.code, 0, "retried: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "fine");

    let server = FakeServer::start(vec![Canned::raw(503, &huge), Canned::raw(503, &huge), Canned::raw(503, &huge)]);
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[("DOCS_AGENT_MAX_WALL_SECS", "60")]), &["q"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("503") && out.stderr.contains("overloaded"), "named by its status: {}", out.stderr);
    assert!(!out.stderr.contains("larger than"), "{}", out.stderr);
}

#[test]
fn an_error_that_echoes_the_api_key_is_told_without_it() {
    let key = "llm-Zq81xPq0aaWk3";
    let echo = r#"{"error":{"message":"Incorrect API key provided: {api_key}","headers":{"authorization":"{authorization}"}}}"#;
    let server = FakeServer::start(vec![Canned::raw(401, echo)]);
    let ws = sample_workspace();
    let base = server.base_url();
    for args in [&["refund window"][..], &["chat"][..]] {
        let out = common::run_input(ws.path(), &env(&base, &[("LLM_API_KEY", key)]), args, "refund window\n");
        assert!(out.stderr.contains("Incorrect API key"), "{args:?}: the error is told: {}", out.stderr);
        assert!(!out.stdout.contains(key) && !out.stderr.contains(key), "{args:?}: {}\n{}", out.stdout, out.stderr);
    }
}

/// Every way a model server's error can arrive (an error status, an error object, an error
/// mid-stream, a stream that is not JSON, a plain-text 5xx), echoing the configured key, its
/// header and a cloud key pair: the question and the chat tell the error, never the secrets.
#[test]
fn no_way_of_reporting_an_error_shows_the_keys_it_echoes() {
    let key = "llm-Zq81xPq0aaWk3";
    let ws = sample_workspace();
    let mut leaks = Vec::new();
    for (way, canned) in fake::echoing_errors() {
        let server = FakeServer::start(vec![canned]);
        let base = server.base_url();
        for args in [&["refund window"][..], &["chat"][..]] {
            let vars = env(&base, &[("LLM_API_KEY", key), ("LLM_RETRIES", "0")]);
            let out = common::run_input(ws.path(), &vars, args, "refund window\n");
            let all = format!("{}\n{}", out.stdout, out.stderr);
            assert!(all.contains("model server"), "{way}, {args:?}: the error is told: {all}");
            // A server that reports an error where the reply should be is told in its words.
            if matches!(way, "an error object in a 200 reply" | "an error mid-stream" | "an error event") {
                assert!(all.contains("reported an error instead of a reply"), "{way}, {args:?}: {all}");
            }
            for secret in [key, fake::ECHOED_CLOUD_KEY, fake::ECHOED_CLOUD_SECRET] {
                if all.contains(secret) {
                    leaks.push(format!("{way}, {args:?}: {secret} leaked: {all}"));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}

#[test]
fn malformed_body_is_a_model_error() {
    let server = FakeServer::start(vec![Canned::raw(200, "this is not json")]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["q"]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("not a chat completion"), "stderr: {}", out.stderr);
}

#[test]
fn slow_server_times_out() {
    let server = FakeServer::start(vec![Canned::text("late").after(Duration::from_secs(30))]);
    let ws = sample_workspace();
    let base = server.base_url();
    let config = ws.path().join("docs-agent.toml");
    std::fs::write(&config, "[llm]\nrequest_timeout_secs = 1\nretries = 0\n").expect("write config");
    let out = run(ws.path(), &env(&base, &[]), &["--config", config.to_str().expect("utf-8"), "q"]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("did not answer within 1 s"), "stderr: {}", out.stderr);
}

#[test]
fn unknown_model_says_how_to_pull_it() {
    let server = FakeServer::start(vec![Canned::raw(
        404,
        "{\"error\":\"model \\\"test-model\\\" not found, try pulling it first\"}",
    )]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["q"]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("ollama pull test-model"), "stderr: {}", out.stderr);
}

#[test]
fn unreachable_server_names_the_url_and_how_to_start_ollama() {
    // Bind then drop a listener: the port is free and nothing answers on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let ws = sample_workspace();
    let out = run(ws.path(), &[("LLM_BASE_URL", &base), ("LLM_MODEL", "m")], &["q"]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stderr.contains(&base), "names the URL: {}", out.stderr);
    assert!(out.stderr.contains("ollama serve"), "says how to start Ollama: {}", out.stderr);
}

#[test]
fn tool_call_written_as_json_text_is_accepted_and_policed() {
    let server = FakeServer::start(vec![
        Canned::text(r#"{"name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}}"#),
        Canned::text("done"),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[("APPROVE", "yes")]), &["q"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines = out.tool_lines();
    assert_eq!(lines[0]["tool"], "write_file");
    assert_eq!(lines[0]["decision"], "denied");
    assert!(!ws.path().join("../escape.txt").exists());
}

#[test]
fn an_oversized_reply_is_refused_before_it_fills_memory() {
    let huge = format!("{{\"choices\": [{{\"message\": {{\"content\": \"{}\"}}}}]}}", "a".repeat(9 << 20));
    let server = FakeServer::start(vec![Canned::raw(200, &huge)]);
    let ws = sample_workspace();
    let base = server.base_url();
    let out = run(ws.path(), &env(&base, &[]), &["q"]);
    assert_eq!(out.code, 3, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("larger than 8 MiB"), "stderr: {}", out.stderr);
}
