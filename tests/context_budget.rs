//! The context budget holds for every request of a turn, through the real binary against a
//! fake model server that records what it is sent: a model that reads a 360 KB document four
//! times a step, for seven steps, never sends more than `session.context_budget_tokens`, and the
//! rules and the question reach it whole every time. Unset, the budget comes from the context
//! length the server reports (llama.cpp's `/props`, vLLM's model list, Ollama's `/api/ps`).

mod common;
mod fake;

use common::{run, sample_workspace};
use fake::{Canned, FakeServer};
use serde_json::{Value, json};

const QUESTION: &str = "what does the ledger record for each invoice";

/// A reply that reads `docs/ledger.md` four times, `lines` lines each, from `step`'s part of it.
fn four_reads(step: usize, lines: usize) -> Canned {
    let calls: Vec<Value> = (0..4)
        .map(|i| {
            let offset = 1 + (step * 4 + i) * 200;
            json!({"id": format!("r{step}_{i}"), "type": "function", "function": {
                "name": "read_file",
                "arguments": json!({"path": "docs/ledger.md", "offset": offset, "limit": lines}).to_string()
            }})
        })
        .collect();
    Canned::message(json!({"role": "assistant", "content": "", "tool_calls": calls}))
}

/// Six steps of four short reads (2 KB each), one of four long ones (12 KB each, the most a
/// result may be), then an answer.
fn long_turn() -> Vec<Canned> {
    let mut replies: Vec<Canned> = (0..6).map(|step| four_reads(step, 25)).collect();
    replies.push(four_reads(6, 200));
    replies.push(Canned::text("Each invoice gets a ledger line [docs/ledger.md]."));
    replies
}

/// A workspace with a 360 KB document among the sample docs.
fn workspace() -> tempfile::TempDir {
    let ws = sample_workspace();
    let lines: Vec<String> = (1..=6000)
        .map(|n| format!("Ledger line {n}: the invoice ledger records the amount, tax and currency."))
        .collect();
    std::fs::write(ws.path().join("docs/ledger.md"), format!("# Ledger\n\n{}\n", lines.join("\n"))).expect("write doc");
    ws
}

/// A request's tokens as the harness estimates them: each message's bytes / 4 and 4 more,
/// and the tool schemas' bytes / 4.
fn estimate(request: &Value) -> u64 {
    let text = |v: &Value| v.as_str().map_or(0, str::len);
    let messages: u64 = request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let calls: usize = m["tool_calls"].as_array().map_or(0, |calls| {
                        calls
                            .iter()
                            .map(|c| text(&c["id"]) + text(&c["function"]["name"]) + text(&c["function"]["arguments"]))
                            .sum()
                    });
                    (text(&m["content"]) + text(&m["tool_call_id"]) + calls) as u64 / 4 + 4
                })
                .sum()
        })
        .unwrap_or(0);
    let tools: u64 = request["tools"].as_array().map_or(0, |tools| {
        tools
            .iter()
            .map(|t| {
                let f = &t["function"];
                (text(&f["name"]) + text(&f["description"]) + f["parameters"].to_string().len()) as u64 / 4
            })
            .sum()
    });
    messages + tools
}

/// A model list as llama.cpp's `llama-server` gives it.
fn llama_cpp() -> Value {
    json!({"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]})
}

/// The estimated tokens of every request the server received, in order.
fn sizes_of(server: &FakeServer) -> Vec<u64> {
    server.requests().iter().map(estimate).collect()
}

#[test]
fn every_request_of_a_long_turn_fits_the_budget_and_keeps_the_rules_and_the_question() {
    let ws = workspace();
    let server = FakeServer::start(long_turn());
    let base = server.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model"), ("DOCS_AGENT_CONTEXT_BUDGET", "4000")];
    let out = run(ws.path(), &env, &[QUESTION]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 8, "seven steps of reads and the answer");
    let sizes = sizes_of(&server);
    assert!(sizes.iter().all(|&s| s <= 4000), "every request within 4,000 tokens: {sizes:?}");
    assert!(sizes[7] > 3000, "the room is used, not emptied: {sizes:?}");
    let system = requests[0]["messages"][0]["content"].as_str().expect("a system prompt").to_string();
    for (n, request) in requests.iter().enumerate() {
        let messages = request["messages"].as_array().expect("messages");
        assert_eq!(messages[0]["content"].as_str(), Some(system.as_str()), "request {n} keeps the rules whole");
        assert_eq!(messages[1]["content"].as_str(), Some(QUESTION), "request {n} keeps the question whole");
    }
    // Before the long reads, older reads are stubs pointing at read_file with their offsets.
    let before = requests[6]["messages"].to_string();
    std::fs::create_dir_all("target/context").ok();
    std::fs::write("target/context/request-6.json", serde_json::to_string_pretty(&requests[6]).unwrap_or_default())
        .ok();
    assert!(before.contains("shortened to fit the context budget"), "{before}");
    assert!(before.contains(r#"read_file {\"limit\":25,\"offset\":3801,\"path\":\"docs/ledger.md\"}"#), "{before}");
    // After them, each long read is cut with a note saying how to read on.
    let last = requests[7]["messages"].to_string();
    std::fs::create_dir_all("target/context").ok();
    std::fs::write("target/context/last-request.json", serde_json::to_string_pretty(&requests[7]).unwrap_or_default())
        .ok();
    assert_eq!(last.matches("cut to fit the context budget").count(), 4, "{last}");
    assert!(last.contains(r#"\"offset\":4801"#) && last.contains(r#"\"path\":\"docs/ledger.md\""#), "{last}");
}

/// The sizes of the requests of a long turn asked of a fake server that also answers `gets`,
/// with `budget` set or not.
fn long_turn_sizes(ws: &tempfile::TempDir, gets: &[(&str, Value)], budget: Option<&str>) -> Vec<u64> {
    let server = FakeServer::start_with(long_turn(), gets);
    let base = server.base_url();
    let mut env = vec![("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")];
    env.extend(budget.map(|b| ("DOCS_AGENT_CONTEXT_BUDGET", b)));
    let out = run(ws.path(), &env, &[QUESTION]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    sizes_of(&server)
}

#[test]
fn unset_the_budget_is_the_context_length_the_server_reports_less_the_reply() {
    let ws = workspace();
    let props = json!({"default_generation_settings": {"n_ctx": 2048}});
    let ollama = ("/api/version", json!({"version": "0.12.0"}));
    // llama.cpp's llama-server (its model list says `owned_by: llamacpp`) says it in /props:
    // 2,048 tokens a slot, so 80% of 2,048 - 512 (the reply's tokens), 1,228: bytes / 4 counts
    // fewer tokens than a real tokenizer.
    let sizes = long_turn_sizes(&ws, &[("/v1/models", llama_cpp()), ("/props", props.clone())], None);
    assert!(sizes.iter().all(|&s| s <= 1228) && sizes.len() == 8, "{sizes:?}");

    // vLLM says it in its model list: 80% of 3,000 - 512, 1,990.
    let models = json!({"object": "list", "data": [{"id": "test-model", "max_model_len": 3000}]});
    let sizes = long_turn_sizes(&ws, &[("/v1/models", models)], None);
    assert!(sizes.iter().all(|&s| s <= 1990) && sizes.iter().any(|&s| s > 1228), "{sizes:?}");

    // Ollama (it answers /api/version) says it in /api/ps once the model is loaded: 3,000.
    let ps = json!({"models": [{"name": "test-model:latest", "model": "test-model:latest", "context_length": 3000}]});
    let sizes = long_turn_sizes(&ws, &[ollama.clone(), ("/api/ps", ps)], None);
    assert!(sizes.iter().all(|&s| s <= 1990) && sizes.iter().any(|&s| s > 1228), "{sizes:?}");
    // Before it is loaded, Ollama's default context, 4,096: 80% of 4,096 - 512, 2,867.
    let sizes = long_turn_sizes(&ws, &[ollama], None);
    assert!(sizes.iter().all(|&s| s <= 2867) && sizes.iter().any(|&s| s > 1990), "{sizes:?}");

    // A server that says nothing (/props unasked: the model list is not llama.cpp's): 8,192.
    let sizes = long_turn_sizes(&ws, &[("/props", props.clone())], None);
    assert!(sizes.iter().all(|&s| s <= 8192) && sizes.iter().any(|&s| s > 3000), "{sizes:?}");

    // Set, the configuration wins over what the server says.
    let sizes = long_turn_sizes(&ws, &[("/v1/models", llama_cpp()), ("/props", props)], Some("5000"));
    assert!(sizes.iter().all(|&s| s <= 5000) && sizes.iter().any(|&s| s > 2048), "{sizes:?}");
}

#[test]
fn a_question_too_large_for_the_budget_is_never_cut_nor_sent() {
    let ws = workspace();
    let server = FakeServer::start(long_turn());
    let base = server.base_url();
    let question = format!("{QUESTION} {}", "please ".repeat(600));
    // What the search found answers, labelled with why the model was not asked.
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model"), ("DOCS_AGENT_CONTEXT_BUDGET", "600")];
    let out = run(ws.path(), &env, &[&question]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Retrieval-only answer"), "{}", out.stdout);
    assert!(out.stdout.contains("session.context_budget_tokens") && out.stdout.contains("docs/"), "{}", out.stdout);
    assert!(server.requests().is_empty(), "no request over the budget is sent");
    // Without retrieve-first, the harness searches once all the same.
    let first_off = [env[0], env[1], env[2], ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let out = run(ws.path(), &first_off, &[&question]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Retrieval-only answer"), "{}", out.stdout);
    // When that search finds nothing, the turn stops and says what to raise.
    let nothing = "zqxv ".repeat(700);
    let out = run(ws.path(), &first_off, &[&nothing]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("session.context_budget_tokens = 600") && out.stderr.contains("DOCS_AGENT_CONTEXT_BUDGET")
    );
    assert!(server.requests().is_empty(), "no request over the budget is sent");
}
