//! The MCP server (issue 15, part 5) through the real binary, spoken to as a client would, in
//! raw JSON-RPC: `docs-agent mcp` over stdio, and `/mcp` under `serve` with its tokens and
//! roles. Every answer passes the same guards as the model's own tools: the planted key is
//! never shown, the operator's rules refuse and redact, `ask` never writes, and a bad argument
//! is a clean error that names the field. (`tests/mcp/client.py` drives both with the official
//! Python SDK's client; `.ci/run` runs it.)

mod common;
mod fake;

use common::mcp::McpChild;
use serde_json::{Value, json};

use common::mcp::{is_error, post_mcp, text};

#[test]
fn over_stdio_the_tools_and_resources_answer_through_the_guards() {
    let ws = common::sample_workspace();
    let mut mcp = McpChild::start(ws.path(), &[("LLM_MODEL", "scripted")]);

    let tools = mcp.request("tools/list", json!({}));
    let mut names: Vec<&str> =
        tools["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ask", "read_section", "search_docs"]);
    let search = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "search_docs"))
        .expect("search");
    assert_eq!(search["inputSchema"]["required"], json!(["query"]), "{search}");

    // The onboarding doc plants a key: found, fenced, never shown.
    let found = mcp.call("search_docs", json!({"query": "shared sandbox key"}));
    let shown = text(&found);
    assert!(!is_error(&found) && shown.contains("<untrusted source=\"docs/onboarding.md#"), "{shown}");
    assert!(shown.contains("[REDACTED") && !shown.contains(common::ONBOARDING_KEY), "{shown}");
    let hit = found["structuredContent"]["sections"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["path"] == "docs/onboarding.md"))
        .cloned()
        .expect("the onboarding section in the structured hits");
    let read = mcp.call("read_section", json!({"path": hit["path"], "anchor": hit["anchor"]}));
    let read_text = text(&read);
    assert!(!is_error(&read) && read_text.starts_with("<untrusted source=\"docs/onboarding.md#"), "{read_text}");
    assert!(!read_text.contains(common::ONBOARDING_KEY), "{read_text}");
    let resource = mcp.request("resources/read", json!({"uri": hit["uri"]}));
    let resource_text = resource["result"]["contents"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(resource_text, read_text, "a resource reads as read_section does: {resource}");

    // Resources: every section once, a page at a time, each readable by its URI.
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = mcp.request("resources/list", params);
        uris.extend(
            page["result"]["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_string)),
        );
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let unique: std::collections::BTreeSet<&String> = uris.iter().collect();
    assert_eq!(unique.len(), uris.len(), "no section twice");
    assert!(uris.contains(&"docs-agent://docs/refunds.md#window".to_string()), "{uris:?}");

    // The whole harness, with the scripted model: an answer with a verified citation, and the
    // steps told as progress first, since the client asked for it.
    let before = mcp.lines.len();
    let reply = mcp.request(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "How long is the refund window?"}, "_meta": {"progressToken": "p-1"}}),
    );
    let asked = reply["result"].clone();
    let progress: Vec<Value> = mcp.lines[before..]
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"].clone())
        .collect();
    assert!(progress.iter().all(|p| p["progressToken"] == "p-1"), "{progress:?}");
    let told: Vec<&str> = progress.iter().filter_map(|p| p["message"].as_str()).collect();
    assert!(told.iter().any(|m| m.starts_with("search_docs")) && told.iter().any(|m| m.contains("model")), "{told:?}");
    let counts: Vec<f64> = progress.iter().filter_map(|p| p["progress"].as_f64()).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "progress grows: {counts:?}");
    assert!(!is_error(&asked), "{asked}");
    assert!(text(&asked).contains("14 days") && text(&asked).contains("Sources:"), "{asked}");
    assert_eq!(asked["structuredContent"]["stop"], "answered");
    assert!(
        asked["structuredContent"]["citations"].as_array().is_some_and(|c| c.iter().any(|c| c["verified"] == true)),
        "{asked}"
    );

    // Bad arguments: clean errors that name the field, the session goes on.
    for (tool, arguments, names) in [
        ("search_docs", json!({}), "`query`"),
        ("search_docs", json!({"query": 42}), "`query`"),
        ("search_docs", json!({"query": "refunds", "limit": 0}), "limit"),
        ("read_section", json!({"path": "../../etc/passwd"}), "not a document of the docs"),
        ("read_section", json!({"path": "notes/x.md"}), "not a document of the docs"),
        ("ask", json!({"question": "refunds?", "model": "gpt"}), "`model`"),
    ] {
        let bad = mcp.call(tool, arguments.clone());
        assert!(is_error(&bad) && text(&bad).contains(names), "{tool} {arguments}: {bad}");
    }
    let no_tool = mcp.request("tools/call", json!({"name": "write_file", "arguments": {"path": "notes/x.md"}}));
    assert!(
        no_tool["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the tools are ask, read_section, search_docs")),
        "{no_tool}"
    );
    let unknown = mcp.request("resources/read", json!({"uri": "file:///etc/passwd"}));
    assert!(unknown["error"]["message"].as_str().is_some_and(|m| m.contains("not a docs section")), "{unknown}");

    // Only the protocol on stdout, and no key anywhere in it.
    assert!(mcp.lines.iter().all(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["jsonrpc"] == "2.0")));
    assert!(!mcp.lines.concat().contains(common::ONBOARDING_KEY));
}

#[test]
fn the_operators_rules_decide_mcp_calls_as_they_decide_the_models() {
    let ws = common::sample_workspace();
    let rules = "[[hooks.pre_tool]]\nname = \"no-refund-file\"\ntool = \"read_file\"\npath = \"docs/refunds.md\"\n\
                 decision = \"deny\"\nreason = \"refunds are answered by the billing team\"\n\n\
                 [[hooks.pre_tool]]\nname = \"keys-need-a-person\"\ntool = \"search_docs\"\narguments = \"(?i)keys?\\\\b\"\n\
                 decision = \"ask\"\n\n\
                 [hooks.post_tool]\nredact = [\"(?i)first payment\", \"(?i)onboarding\"]\nmax_result_bytes = 600\n";
    std::fs::write(ws.path().join("docs-agent.toml"), rules).expect("config");
    std::fs::write(ws.path().join("docs/tagged.md"), format!("# Tagged\n\n{}\n", "<b>bold</b> ".repeat(200)))
        .expect("doc");
    let mut mcp = McpChild::start(ws.path(), &[("LLM_MODEL", "scripted")]);

    // The listing shows no section a rule keeps from being read, nor a name the operator's
    // patterns redact.
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = mcp.request("resources/list", cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c})));
        let resources = page["result"]["resources"].as_array().cloned().unwrap_or_default();
        listed.extend(resources.iter().filter_map(|r| r["uri"].as_str().map(str::to_string)));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert!(listed.iter().any(|u| u.contains("docs/invoices.md")), "{listed:?}");
    assert!(!listed.iter().any(|u| u.contains("refunds.md") || u.contains("onboarding")), "{listed:?}");

    // The patterns reach the structured hits too, and the cap keeps the fence whole.
    let found = mcp.call("search_docs", json!({"query": "shared sandbox"}));
    let structured = found["structuredContent"].to_string();
    assert!(
        structured.contains("[REDACTED:hook]") && !structured.to_lowercase().contains("onboarding"),
        "{structured}"
    );
    let read = mcp.call("read_section", json!({"path": "docs/invoices.md", "anchor": null}));
    let read_text = text(&read);
    assert!(!is_error(&read) && read_text.ends_with("</untrusted>") && read_text.len() <= 600, "{read_text}");
    // Fencing makes every tag longer (`&lt;b>`) after the cut: the fence still closes.
    let tagged = mcp.call("read_section", json!({"path": "docs/tagged.md"}));
    let tagged_text = text(&tagged);
    assert!(
        tagged_text.ends_with("</untrusted>") && tagged_text.len() <= 600 && !tagged_text.contains("[cut at"),
        "{tagged_text}"
    );

    let denied = mcp.call("read_section", json!({"path": "./docs//refunds.md", "anchor": "window"}));
    assert!(
        is_error(&denied) && text(&denied).contains("no-refund-file") && !text(&denied).contains("14 days"),
        "{denied}"
    );
    let resource = mcp.request("resources/read", json!({"uri": "docs-agent://docs/refunds.md#window"}));
    assert!(resource["error"]["message"].as_str().is_some_and(|m| m.contains("no-refund-file")), "{resource}");

    let asked = mcp.call("search_docs", json!({"query": "secret keys"}));
    assert!(
        is_error(&asked) && text(&asked).contains("keys-need-a-person") && text(&asked).contains("nobody can approve"),
        "{asked}"
    );

    // A file a rule keeps from being read is not found either: a search shows none of it.
    let found = mcp.call("search_docs", json!({"query": "refund window", "limit": 5}));
    let shown = text(&found);
    assert!(!is_error(&found) && shown.contains("<untrusted source="), "{shown}");
    assert!(!shown.contains("docs/refunds.md") && !shown.to_lowercase().contains("first payment"), "{shown}");
    let many = text(&mcp.call("search_docs", json!({"query": "invoice payment terms", "limit": 5})));
    assert!(many.len() <= 600 && many.trim_end().ends_with("</untrusted>") && !many.contains("[cut at"), "{many}");
}

#[test]
fn ask_over_mcp_never_writes() {
    let fake = fake::FakeServer::start(vec![
        fake::Canned::tool("write_file", json!({"path": "notes/mcp.md", "content": "written over MCP"})),
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
    ]);
    let ws = common::sample_workspace();
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("APPROVE", "yes")];
    let mut mcp = McpChild::start(ws.path(), &env);
    let asked = mcp.call("ask", json!({"question": "How long is the refund window? Save a note."}));
    assert!(!is_error(&asked) && text(&asked).contains("14 days"), "{asked}");
    assert!(!ws.path().join("notes/mcp.md").exists(), "APPROVE=yes does not reach a question asked over MCP");
    let requests = fake.requests();
    let told = requests.get(1).map(|r| r["messages"].to_string()).unwrap_or_default();
    // Refused by the harness (the kernel sandbox, which grants `mcp` no notes/, is a second wall).
    assert!(told.contains("write not approved: a one-shot question cannot write"), "the model was told: {told}");
}

#[tokio::test]
async fn under_serve_mcp_takes_the_same_tokens_and_roles_and_counts_tokens_by_principal() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = fake::FakeServer::start(vec![fake::Canned::text(
        "Refunds are possible within 14 days. [docs/refunds.md#window]",
    )]);
    let ws = common::sample_workspace();
    let (asker, approver, admin) = ("mcp-asker-0123456789", "mcp-approver-0123456789", "mcp-admin-0123456789");
    common::serve_config(
        ws.path(),
        &[("ide", asker, &["ask"]), ("cy", approver, &["approve"]), ("ops", admin, &["admin"])],
        "",
    );
    // A file whose name holds a key: over HTTP nothing scrubs the reply last, so the listing
    // itself must leave it out.
    let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    std::fs::write(ws.path().join(format!("docs/{key}.md")), "# Named badly\n\nA page.\n").expect("doc");
    let base = fake.base_url();
    let (mut child, url, _log) =
        common::spawn_serve_logged(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")]);
    let resources = json!({"jsonrpc": "2.0", "id": 9, "method": "resources/list"});
    let (_, listed) = post_mcp(&url, Some(asker), resources).await;
    assert!(listed["result"]["resources"].as_array().is_some_and(|r| r.len() > 10), "{listed}");
    assert!(!listed.to_string().contains(key), "{listed}");

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (without, _) = post_mcp(&url, None, list.clone()).await;
    let (wrong_role, refused) = post_mcp(&url, Some(approver), list.clone()).await;
    // Stateless: a request needs no session from an earlier one.
    let (listed, tools) = post_mcp(&url, Some(asker), list).await;
    let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "ask", "arguments": {"question": "How long is the refund window?"}}});
    let (_, asked) = post_mcp(&url, Some(asker), ask).await;
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": []}}});
    let (_, bad) = post_mcp(&url, Some(asker), bad).await;
    let search = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": "refund window"}}});
    let (_, searched) = post_mcp(&url, Some(asker), search).await;
    let got = reqwest::Client::new().get(format!("{url}/mcp")).bearer_auth(asker).send().await.expect("GET /mcp");
    let get_status = got.status().as_u16();
    let get_body: Value = got.json().await.unwrap_or_default();
    let metrics =
        reqwest::Client::new().get(format!("{url}/metrics")).bearer_auth(admin).send().await.expect("metrics");
    let metrics = metrics.text().await.unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(without, 401);
    assert_eq!(wrong_role, 403, "{refused}");
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("ask")), "{refused}");
    assert_eq!(listed, 200, "{tools}");
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(3), "{tools}");
    assert_eq!(asked["result"]["structuredContent"]["stop"], "answered", "{asked}");
    assert!(text(&asked["result"]).contains("[docs/refunds.md#window]"), "{asked}");
    assert!(is_error(&bad["result"]) && text(&bad["result"]).contains("`query`"), "{bad}");
    assert!(metrics.contains("docs_agent_tokens_total{kind=\"prompt\",model=\"m\",principal=\"ide\"} 10"), "{metrics}");
    assert!(!is_error(&searched["result"]), "{searched}");
    // ask's own search and the client's search_docs: both counted.
    assert!(metrics.contains("docs_agent_tool_calls_total{decision=\"allowed\"} 2"), "{metrics}");
    assert_eq!((get_status, get_body["error"]["code"].as_str()), (405, Some("method_not_allowed")), "{get_body}");
}

/// A client that cancels its `ask` (over stdio, `notifications/cancelled`) stops the model
/// call it was waiting for: no run outlives the request that started it.
#[test]
fn a_cancelled_ask_stops_its_model_call_over_stdio() {
    let fake = fake::FakeServer::start(vec![fake::Canned::streamed(&["Refunds are"], true)]);
    let ws = common::sample_workspace();
    let base = fake.base_url();
    let mut mcp = McpChild::start(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")]);
    let ask = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                     "params": {"name": "ask", "arguments": {"question": "How long is the refund window?"}}});
    mcp.send(&ask);
    let wait = std::time::Duration::from_secs(20);
    let deadline = std::time::Instant::now() + wait;
    while fake.requests().is_empty() && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(fake.requests().len(), 1, "the model call started");
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}));
    assert!(fake.wait_dropped(1, wait), "the model call was dropped when the client cancelled");
    // The server goes on answering.
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(3), "{tools}");
}

/// Under `serve`, an `ask` whose request times out stops its model call too, even when the
/// client asked for progress (which would turn the reply into a stream that outlives the
/// request): no run outlives the request, or its slot. A timeout counts as a model failure for
/// the circuit breaker; a client that gives up sooner does not, so no client can open the
/// breaker for everyone by dropping its own requests.
#[tokio::test]
async fn an_ask_whose_request_times_out_stops_its_model_call() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = std::sync::Arc::new(fake::FakeServer::start(vec![fake::Canned::streamed(&["Refunds are"], true)]));
    let ws = common::sample_workspace();
    let (token, admin) = ("mcp-timeout-0123456789", "mcp-timeout-admin-0123456789");
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\nrequest_timeout_secs = 2\n\n\
         [[serve.tokens]]\nprincipal = \"ide\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n\n\
         [[serve.tokens]]\nprincipal = \"ops\"\nsha256 = \"{}\"\nroles = [\"admin\"]\n",
        docs_agent::serve::auth::hash(token),
        docs_agent::serve::auth::hash(admin)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("config");
    let base = fake.base_url();
    let (mut child, url, _log) =
        common::spawn_serve_logged(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m")]);
    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "ask", "arguments": {"question": "How long is the refund window?"},
                                "_meta": {"progressToken": "p-1"}}});
    let waiting = |n: usize| {
        let fake = fake.clone();
        tokio::task::spawn_blocking(move || fake.wait_dropped(n, std::time::Duration::from_secs(20)))
    };
    let errors = || async {
        let metrics = reqwest::Client::new().get(format!("{url}/metrics")).bearer_auth(admin).send().await;
        let metrics = metrics.expect("metrics").text().await.unwrap_or_default();
        metrics.lines().find(|l| l.starts_with("docs_agent_model_errors_total ")).map(str::to_string)
    };

    // A client that gives up after half a second.
    let impatient = reqwest::Client::builder().timeout(std::time::Duration::from_millis(500)).build().expect("client");
    let gave_up = impatient
        .post(format!("{url}/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .json(&ask)
        .send()
        .await;
    let dropped_by_client = waiting(1).await.expect("wait");
    let after_hangup = errors().await;

    let (status, _) = post_mcp(&url, Some(token), ask).await;
    let dropped_by_timeout = waiting(2).await.expect("wait");
    let after_timeout = errors().await;
    let _ = child.kill();
    let _ = child.wait();

    assert!(gave_up.is_err(), "the client gave up first");
    assert!(dropped_by_client, "the model call was dropped when the client hung up");
    assert_eq!(after_hangup.as_deref(), Some("docs_agent_model_errors_total 0"));
    assert_eq!(status, 504, "the request timed out: one JSON reply, never a stream that outlives it");
    assert!(dropped_by_timeout, "the model call was dropped with the request");
    assert_eq!(after_timeout.as_deref(), Some("docs_agent_model_errors_total 1"));
}

/// `docs-agent mcp` lives as long as its client: an edit to the docs is found once
/// `index.rescan_secs` have passed, without a restart.
#[test]
fn over_stdio_an_edit_to_the_docs_is_found_without_a_restart() {
    let ws = common::sample_workspace();
    let mut mcp = McpChild::start(ws.path(), &[("LLM_MODEL", "scripted"), ("DOCS_AGENT_INDEX_RESCAN_SECS", "1")]);
    let query = json!({"query": "zanzibar escrow"});
    assert!(!text(&mcp.call("search_docs", query.clone())).contains("docs/escrow.md"));
    std::fs::write(
        ws.path().join("docs/escrow.md"),
        "# Escrow\n\n## Zanzibar\n\nZanzibar escrow holds funds for 3 days.\n",
    )
    .expect("a new doc");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut found = String::new();
    while std::time::Instant::now() < deadline && !found.contains("docs/escrow.md#zanzibar") {
        found = text(&mcp.call("search_docs", query.clone()));
    }
    assert!(found.contains("docs/escrow.md#zanzibar") && found.contains("3 days"), "{found}");
}

/// `ask` over stdio and over `/mcp` under serve, against a model server whose errors echo its
/// key, its header and a cloud key pair in every way an error can arrive: told, never shown.
#[tokio::test]
async fn an_ask_whose_model_server_echoes_its_key_never_shows_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    const KEY: &str = "llm-Zq81xPq0aaWk3";
    let asker = "mcp-asker-0123456789";
    let mut leaks = Vec::new();
    for (way, canned) in fake::echoing_errors() {
        let fake = fake::FakeServer::start(vec![canned]);
        let ws = common::sample_workspace();
        common::serve_config(ws.path(), &[("ide", asker, &["ask"])], "");
        let base = fake.base_url();
        let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("LLM_API_KEY", KEY), ("LLM_RETRIES", "0")];
        let question = json!({"question": "How long is the refund window?"});
        let mut mcp = McpChild::start(ws.path(), &env);
        let over_stdio = mcp.call("ask", question.clone());
        drop(mcp);
        assert!(is_error(&over_stdio) && text(&over_stdio).contains("model server"), "{way}: told: {over_stdio}");
        let (mut child, url, log) = common::spawn_serve_logged(ws.path(), &env);
        let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": question}});
        let (_, over_http) = post_mcp(&url, Some(asker), ask).await;
        let _ = child.kill();
        let _ = child.wait();
        assert!(fake.requests().len() >= 2, "{way}: the model was asked each time");
        for (front, told) in
            [("stdio", over_stdio.to_string()), ("/mcp", over_http.to_string()), ("serve's log", log.text())]
        {
            for secret in [KEY, fake::ECHOED_CLOUD_KEY, fake::ECHOED_CLOUD_SECRET] {
                if told.contains(secret) {
                    leaks.push(format!("{way}, {front}: {secret} leaked: {told}"));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}
