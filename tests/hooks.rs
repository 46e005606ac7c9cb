//! Policy hooks (issue 15, part 4) through the real binary, against a fake model server that
//! does what the test scripts: a pre-tool rule refuses a read however the model spells the
//! path; post-tool rules redact and cut what the model is shown; a stop rule sends an answer
//! back, then replaces it; every decision is in the trace and the session log with its rule;
//! `check` reports the rules and names a bad one.

mod common;
mod fake;

use serde_json::{Value, json};

/// The hook lines of a run's trace.
fn hook_lines(out: &common::Run) -> Vec<Value> {
    out.stderr.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["event"] == "hook").collect()
}

/// The tool messages the model was sent in its `n`th request.
fn tool_messages(fake: &fake::FakeServer, n: usize) -> Vec<String> {
    let requests = fake.requests();
    let messages = requests.get(n).and_then(|r| r["messages"].as_array().cloned()).unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "tool").filter_map(|m| m["content"].as_str().map(str::to_string)).collect()
}

/// A rule that denies reading docs/refunds.md, as `workspace`'s configuration.
fn deny_the_refund_file(workspace: &std::path::Path) {
    let rules = "[[hooks.pre_tool]]\nname = \"no-refund-file\"\ntool = \"read_file\"\npath = \"docs/refunds.md\"\n\
                 decision = \"deny\"\nreason = \"refunds are answered by the billing team\"\n";
    std::fs::write(workspace.join("docs-agent.toml"), rules).expect("config");
}

#[test]
fn a_pre_tool_rule_refuses_a_read_however_the_path_is_written() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::tool("read_file", json!({"path": "./docs//refunds.md"})),
        fake::Canned::text("I could not read it."),
    ]);
    let ws = common::sample_workspace();
    deny_the_refund_file(ws.path());
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    let hooks = hook_lines(&out);
    assert_eq!(hooks.len(), 1, "{}", out.stderr);
    assert_eq!((hooks[0]["stage"].as_str(), hooks[0]["rule"].as_str()), (Some("pre_tool"), Some("no-refund-file")));
    assert_eq!(hooks[0]["decision"], "deny");
    let tools = out.tool_lines();
    assert_eq!(tools[0]["decision"], "denied", "{}", out.stderr);
    let shown = tool_messages(&fake, 1);
    assert!(
        shown.iter().any(|t| t.contains("refused by the operator's rule `no-refund-file`: refunds are answered")),
        "{shown:?}"
    );
    assert!(!shown.iter().any(|t| t.contains("14 days")), "the file was not read: {shown:?}");
}

#[test]
fn post_tool_rules_redact_and_cut_what_the_model_is_shown() {
    let fake = fake::FakeServer::start(vec![fake::Canned::text(
        "Refunds are possible within 14 days of the first payment. [docs/refunds.md#window]",
    )]);
    let ws = common::sample_workspace();
    let rules = "[hooks.post_tool]\nredact = [\"(?i)first payment\"]\nmax_result_bytes = 400\n";
    std::fs::write(ws.path().join("docs-agent.toml"), rules).expect("config");
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    let shown = tool_messages(&fake, 0).join("\n");
    assert!(shown.contains("[REDACTED:hook]") && !shown.to_lowercase().contains("first payment"), "{shown}");
    assert!(shown.contains("[cut at 400 bytes by hooks.post_tool.max_result_bytes]"), "{shown}");
    let rules: Vec<String> =
        hook_lines(&out).iter().filter_map(|h| h["decision"].as_str().map(str::to_string)).collect();
    assert!(rules.iter().any(|d| d.contains("redacted") && d.contains("hooks.post_tool.redact[0]")), "{rules:?}");
    assert!(rules.iter().any(|d| d.contains("cut to 400 bytes")), "{rules:?}");
}

#[tokio::test]
async fn a_stop_rule_sends_an_answer_back_then_replaces_it_and_the_log_records_each_decision() {
    let cites_refunds = "Refunds are possible within 14 days. [docs/refunds.md#window]";
    let fake = fake::FakeServer::start(vec![fake::Canned::text(cites_refunds), fake::Canned::text(cites_refunds)]);
    let ws = common::sample_workspace();
    let token = "hooks-token-0123456789";
    let stop = "[hooks.stop]\nrequire_citation_from = [\"docs/api-keys.md\"]\n";
    common::serve_config(ws.path(), &[("ana", token, &["ask"])], stop);
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")];
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &env);
    let api = common::Api::new(&url, token);
    let id = api.new_session().await;
    let (_, outcome) =
        api.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "how long is the refund window"})).await;
    let (_, events) = api.get(&format!("/v1/sessions/{id}/events")).await;
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(outcome["stop"], "answered", "{outcome}");
    let answer = outcome["answer"].as_str().unwrap_or_default();
    assert_ne!(answer, cites_refunds, "the model's answer was replaced: {answer}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "sent back once");
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("docs/api-keys.md"), "the correction names where to cite from: {second}");
    let hooks: Vec<(String, String)> = events["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|e| e["event"]["type"] == "hook")
        .map(|e| {
            (e["event"]["rule"].as_str().unwrap_or("").into(), e["event"]["decision"].as_str().unwrap_or("").into())
        })
        .collect();
    let rule = "hooks.stop.require_citation_from".to_string();
    assert_eq!(
        hooks,
        vec![
            (rule.clone(), "sent back to the model".to_string()),
            (rule, "replaced by the retrieval-only answer".to_string())
        ],
        "{events}"
    );
}

#[test]
fn check_reports_the_rules_and_names_a_bad_one() {
    let ws = common::sample_workspace();
    let good = "[[hooks.pre_tool]]\nname = \"no-internal\"\npath = \"docs/internal/**\"\ndecision = \"deny\"\n\
                reason = \"internal\"\n\n[hooks.stop]\nrequire_citation = true\n";
    std::fs::write(ws.path().join("docs-agent.toml"), good).expect("config");
    let out = common::run(ws.path(), &[], &["check"]);
    assert!(
        out.stdout.contains(
            "hooks: 1 pre-tool rule(s), 0 post-tool redaction pattern(s), an answer needs a verified citation"
        ),
        "{}",
        out.stdout
    );
    let bad = "[[hooks.pre_tool]]\nname = \"typo\"\ntool = \"read_files\"\ndecision = \"deny\"\nreason = \"x\"\n";
    std::fs::write(ws.path().join("docs-agent.toml"), bad).expect("config");
    let out = common::run(ws.path(), &[], &["check"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("hooks.pre_tool[0] (typo): no tool is named `read_files`"), "{}", out.stderr);
}

/// `ask` on a read: a one-shot question without a person to ask is refused (fail closed) with
/// the rule named; with `APPROVE=yes` the read runs.
#[test]
fn an_ask_rule_needs_a_person_before_a_read_runs() {
    let ws = common::sample_workspace();
    let rules = "[[hooks.pre_tool]]\nname = \"ask-before-reading\"\ntool = \"read_file\"\ndecision = \"ask\"\n";
    std::fs::write(ws.path().join("docs-agent.toml"), rules).expect("config");
    let replies = || {
        vec![
            fake::Canned::tool("read_file", json!({"path": "docs/refunds.md"})),
            fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
        ]
    };
    let env = |base: &str, approve: &str| {
        vec![
            ("LLM_BASE_URL".to_string(), base.to_string()),
            ("LLM_MODEL".into(), "m".into()),
            ("DOCS_AGENT_RETRIEVE_FIRST".into(), "false".into()),
            ("APPROVE".into(), approve.into()),
        ]
    };
    let run = |approve: &str| {
        let fake = fake::FakeServer::start(replies());
        let pairs = env(&fake.base_url(), approve);
        let env: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let out = common::run(ws.path(), &env, &["how long is the refund window"]);
        (out, tool_messages(&fake, 1).join("\n"))
    };
    let (refused, shown) = run("");
    assert_eq!(hook_lines(&refused)[0]["decision"], "ask", "{}", refused.stderr);
    assert!(shown.contains("the rule `ask-before-reading` asks a person first"), "{shown}");
    assert!(!shown.contains("14 days"), "not read: {shown}");
    let (approved, shown) = run("yes");
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    assert!(shown.contains("14 days"), "read once approved: {shown}");
}

/// `ask` over HTTP: the session waits; the pending approval names the tool and the rule; an
/// approver's decision runs the call and the turn goes on.
#[tokio::test]
async fn an_ask_rule_waits_for_an_approver_over_http() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::tool("search_docs", json!({"query": "internal refund escalation"})),
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
    ]);
    let ws = common::sample_workspace();
    let (asker, approver) = ("hooks-asker-0123456789", "hooks-approver-0123456789");
    let rule = "[[hooks.pre_tool]]\nname = \"internal-searches\"\narguments = \"internal\"\ndecision = \"ask\"\n";
    common::serve_config(ws.path(), &[("ana", asker, &["ask"]), ("bo", approver, &["approve"])], rule);
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &env);
    let (asks, approves) = (common::Api::new(&url, asker), common::Api::new(&url, approver));
    let id = asks.new_session().await;
    let (_, waiting) =
        asks.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "how long is the refund window"})).await;
    let (_, pending) = approves.get("/v1/approvals?state=pending").await;
    let entry = pending["approvals"].as_array().and_then(|a| a.first().cloned()).unwrap_or_default();
    let approval = entry["id"].as_str().unwrap_or_default().to_string();
    let (decided, _) = approves.post(&format!("/v1/approvals/{approval}"), json!({"decision": "once"})).await;
    // The turn goes on in its own task: wait for the model's second call.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while fake.requests().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(waiting["stop"], "awaiting_approval", "{waiting}");
    assert_eq!(
        (entry["tool"].as_str(), entry["rule"].as_str()),
        (Some("search_docs"), Some("internal-searches")),
        "{pending}"
    );
    assert_eq!(decided, 200);
    let shown = tool_messages(&fake, 1).join("\n");
    assert!(shown.contains("sections matched") || shown.contains("docs/"), "the search ran once approved: {shown}");
}

/// Rules hold however the model writes its arguments (a JSON escape is read as the toolbox
/// reads it), for the harness's own first search too, and an `ask` on a call whose arguments
/// hold a secret is refused rather than asked about on other arguments.
#[test]
fn rules_hold_for_escapes_the_harness_search_and_secret_arguments() {
    let ws = common::sample_workspace();
    let rules = "[[hooks.pre_tool]]\nname = \"no-windows\"\narguments = \"(?i)window\"\ndecision = \"deny\"\n\
                 reason = \"not about windows\"\n\n[[hooks.pre_tool]]\nname = \"ask-reads\"\ntool = \"read_file\"\n\
                 decision = \"ask\"\n";
    std::fs::write(ws.path().join("docs-agent.toml"), rules).expect("config");

    // The harness's own search of the question.
    let out = common::run(ws.path(), &[("LLM_MODEL", "extractive")], &["how long is the refund window"]);
    let hooks = hook_lines(&out);
    assert!(hooks.iter().any(|h| h["rule"] == "no-windows" && h["decision"] == "deny"), "{}", out.stderr);
    assert_eq!(out.tool_lines()[0]["decision"], "denied", "{}", out.stderr);
    assert!(!out.stdout.contains("14 days"), "nothing was retrieved: {}", out.stdout);

    // A JSON escape, and a read whose path holds a secret.
    let escaped = fake::Canned::message(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "search_docs", "arguments": "{\"query\":\"refund \\u0077indow\"}"}},
        {"id": "b", "type": "function", "function": {"name": "read_file",
            "arguments": format!("{{\"path\":\"docs/{}.md\"}}", common::ONBOARDING_KEY)}}
    ]}));
    let fake = fake::FakeServer::start(vec![escaped, fake::Canned::text("I could not look.")]);
    let base = fake.base_url();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("APPROVE", "yes"),
    ];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    let shown = tool_messages(&fake, 1);
    assert!(shown.iter().any(|t| t.contains("refused by the operator's rule `no-windows`")), "{shown:?}");
    assert!(
        shown.iter().any(|t| t.contains("`ask-reads` asks a person first") && t.contains("cannot be shown")),
        "{shown:?}"
    );
    assert!(!out.stderr.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{}", out.stderr);
}

/// A hook's decision is committed with the event it decided about: a crash right after the
/// decision is durable (SIGKILL, from the crash-test hook) and a resume leave one decision in
/// the log, not one per attempt.
#[test]
fn a_crash_after_a_hook_decision_never_logs_it_twice() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::tool("read_file", json!({"path": "docs/refunds.md"})),
        fake::Canned::text("I could not read it."),
    ]);
    let ws = common::sample_workspace();
    deny_the_refund_file(ws.path());
    let base = fake.base_url();
    let log = ws.path().join("data/sessions.db").display().to_string();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("DOCS_AGENT_VERIFY", "false"),
        ("DOCS_AGENT_SESSION_LOG", log.as_str()),
    ];
    let mut killed = env.to_vec();
    killed.push(("DOCS_AGENT_TEST_KILL_AFTER", "hook"));
    let crashed = common::run_input(ws.path(), &killed, &["chat"], "how long is the refund window\n");
    assert_eq!(crashed.signal, Some(9), "killed right after the decision was durable: {}", crashed.stderr);
    let listed = common::run(ws.path(), &env, &["sessions", "list"]);
    let id = listed.stdout.split_whitespace().next().expect("a session").to_string();
    let resumed = common::run(ws.path(), &env, &["sessions", "resume", &id]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let exported = common::run(ws.path(), &env, &["sessions", "export", &id]);
    let events: Vec<Value> = exported.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let hooks: Vec<&Value> = events.iter().filter(|e| e["event"]["type"] == "hook").collect();
    let results: Vec<&Value> = events.iter().filter(|e| e["event"]["type"] == "tool_result").collect();
    assert_eq!((hooks.len(), results.len()), (1, 1), "one decision, one result: {}", exported.stdout);
    assert_eq!(hooks[0]["seq"].as_u64().map(|s| s + 1), results[0]["seq"].as_u64(), "committed together, in order");
    assert!(events.iter().any(|e| e["event"]["type"] == "answer"), "the resumed turn answered: {}", exported.stdout);
}
