//! The process's log (issue 15, part 1), through the real binary: JSON lines when stderr is not
//! a terminal, text when asked; `DOCS_AGENT_LOG` filters them and an unreadable filter is a
//! usage error; `serve` logs each request in a span with its request id, and the turn's model
//! and tool calls nest under it with the session id; no secret reaches a log line.

mod common;
mod fake;

use serde_json::Value;

const TOKEN: &str = "logging-token-0123456789";

/// A workspace whose config has one token with the ask role.
fn workspace() -> tempfile::TempDir {
    let ws = common::sample_workspace();
    common::serve_config(ws.path(), &[("ana", TOKEN, &["ask"])], "");
    ws
}

/// The JSON log lines in `text`.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("level").is_some()).collect()
}

/// The names of the spans a log line was written in, outermost first.
fn span_names(line: &Value) -> Vec<String> {
    let spans = line["spans"].as_array().cloned().unwrap_or_default();
    spans.iter().filter_map(|s| s["name"].as_str().map(str::to_string)).collect()
}

/// The value of `field` in the span named `name` of a log line.
fn span_field(line: &Value, name: &str, field: &str) -> Option<String> {
    let spans = line["spans"].as_array()?;
    let span = spans.iter().find(|s| s["name"] == name)?;
    span.get(field).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

#[tokio::test]
async fn serve_logs_each_request_with_its_id_and_nests_the_turn_under_it() {
    let ws = workspace();
    let (mut child, url, mut log) = common::spawn_serve_logged(ws.path(), &[("LLM_MODEL", "scripted")]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let ask = |id: Option<&str>| {
        let mut request = client
            .post(format!("{url}/v1/ask"))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({"question": "how long is the refund window"}));
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        request.send()
    };
    let given = ask(Some("support-ticket-4711")).await.expect("ask");
    let unusable = ask(Some("two words")).await.expect("ask");
    let session = given.headers().get("x-request-id").cloned();
    let fresh = unusable.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body: Value = given.json().await.expect("json");
    // Two "request done" lines: one per ask.
    let done = log.until("request done", std::time::Duration::from_secs(20))
        && log.until("request done", std::time::Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let text = log.text();
    assert!(done, "{text}");
    assert_eq!(session.as_ref().and_then(|v| v.to_str().ok()), Some("support-ticket-4711"), "echoed");
    let fresh = fresh.expect("a fresh id for an unusable one");
    assert!(fresh.starts_with("r-") && fresh != "two words", "{fresh}");

    let lines = json_lines(&text);
    assert!(!lines.is_empty() && lines.len() == text.lines().count(), "every line is JSON: {text}");
    let ended: Vec<&Value> = lines.iter().filter(|l| l["fields"]["message"] == "request done").collect();
    let ids: Vec<Option<String>> = ended.iter().map(|l| span_field(l, "request", "request_id")).collect();
    assert_eq!(ids, vec![Some("support-ticket-4711".to_string()), Some(fresh.clone())], "{text}");
    assert_eq!(ended[0]["fields"]["status"], 200, "{text}");
    assert_eq!(span_field(ended[0], "request", "http.route").as_deref(), Some("/v1/ask"));

    let session_id = body["session_id"].as_str().expect("session id").to_string();
    let tool = lines
        .iter()
        .find(|l| l["fields"]["message"] == "tool call done")
        .unwrap_or_else(|| panic!("a tool call line: {text}"));
    assert_eq!(span_names(tool), ["request", "turn", "execute_tool"], "{tool}");
    assert_eq!(span_field(tool, "request", "request_id").as_deref(), Some("support-ticket-4711"));
    assert_eq!(span_field(tool, "turn", "gen_ai.conversation.id"), Some(session_id));
    assert_eq!(span_field(tool, "execute_tool", "gen_ai.tool.name").as_deref(), Some("search_docs"));
    assert_eq!(span_field(tool, "execute_tool", "otel.name").as_deref(), Some("execute_tool search_docs"));
    let chat = lines.iter().find(|l| l["fields"]["message"] == "model call done").expect("a model call line");
    assert_eq!(span_names(chat), ["request", "turn", "chat"], "{chat}");
    assert_eq!(span_field(chat, "chat", "otel.name").as_deref(), Some("chat scripted"));
}

/// Text from outside (a path a client chose) is redacted in the log like everywhere else.
#[test]
fn a_secret_in_a_request_never_reaches_the_log() {
    let ws = workspace();
    let (mut child, url, mut log) = common::spawn_serve_logged(ws.path(), &[("LLM_MODEL", "scripted")]);
    let status = common::http_status(&format!("{url}/v1/sessions/{}", common::ONBOARDING_KEY));
    let done = log.until("request done", std::time::Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let text = log.text();
    assert_eq!(status, Some(401), "no token");
    assert!(done && text.contains("/v1/sessions/"), "the path is logged: {text}");
    assert!(!text.contains(common::ONBOARDING_KEY), "the key is redacted: {text}");
}

/// `DOCS_AGENT_LOG` filters; `DOCS_AGENT_LOG_FORMAT=text` writes text; an unreadable filter or
/// format is a usage error naming its variable.
#[test]
fn the_log_filter_and_format_come_from_the_environment() {
    let ws = workspace();
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_LOG", "docs_agent=debug"), ("DOCS_AGENT_LOG_FORMAT", "text")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let tool = out.stderr.lines().find(|l| l.contains("tool call done")).unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(tool.contains("INFO") && tool.contains("execute_tool") && serde_json::from_str::<Value>(tool).is_err());

    let quiet = common::run(ws.path(), &[("LLM_MODEL", "scripted")], &["how long is the refund window"]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("tool call done"), "by default a question logs warnings only: {}", quiet.stderr);
    let rust_log = common::run(ws.path(), &[("LLM_MODEL", "scripted"), ("RUST_LOG", "info")], &["refund window"]);
    assert!(json_lines(&rust_log.stderr).iter().any(|l| l["fields"]["message"] == "tool call done"));

    let bad = common::run(ws.path(), &[("DOCS_AGENT_LOG", "docs_agent=loud")], &["search", "refund"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("DOCS_AGENT_LOG: `docs_agent=loud` is not a log filter"), "{}", bad.stderr);
    let bad = common::run(ws.path(), &[("DOCS_AGENT_LOG_FORMAT", "xml")], &["search", "refund"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("DOCS_AGENT_LOG_FORMAT: `xml`"), "{}", bad.stderr);
}

/// A library's line reaches the log: the OpenAI client's retry after a 5xx, at debug, in the
/// model call's span, with the server's error redacted on its way out (the sink's last step).
#[test]
fn the_model_clients_retries_are_logged_redacted() {
    let busy = format!("busy; debug key {}", common::ONBOARDING_KEY);
    let fake = fake::FakeServer::start(vec![
        fake::Canned::raw(503, &busy),
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
    ]);
    let ws = workspace();
    let base = fake.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "m"), ("DOCS_AGENT_LOG", "docs_agent=debug")];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let retry = json_lines(&out.stderr)
        .into_iter()
        .find(|l| l["fields"]["message"].as_str().is_some_and(|m| m.contains("retry 1")))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(retry["level"], "DEBUG");
    assert_eq!(span_names(&retry), ["turn", "chat"], "{retry}");
    assert!(retry.to_string().contains("busy; debug key"), "the server's words are logged: {retry}");
    assert!(!out.stderr.contains(common::ONBOARDING_KEY), "but not the key: {}", out.stderr);
}

/// Every command at `trace`, with secrets planted in every input: the docs (a private key, a
/// password with symbols), the question (a quoted password, a private key), the configuration's
/// API key, the model server's and the trace collector's URLs with credentials, the collector's
/// headers. Not one of them is in any byte of stderr, whatever the libraries log.
#[tokio::test]
async fn at_trace_no_planted_secret_reaches_stderr_from_any_command() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    const PEM_BODY: &str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCq0FaKe2mXyzPEM1234567";
    let pem = format!("-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----");
    let secrets = [
        "Tr0ub4dor&3xyzzyQ",
        PEM_BODY,
        "correct horse battery",
        "llm-Zq81xPq0aaWk3",
        "Llm-Pa55word9",
        "Otel-Pa55word9",
        "otel-header-tok3n-9f8e7d",
    ];
    let ws = workspace();
    std::fs::write(
        ws.path().join("docs/ops.md"),
        format!("# Operations\n\n## Database\n\nDB_PASSWORD=Tr0ub4dor&3xyzzyQ for the refund window job.\n\n{pem}\n"),
    )
    .expect("doc");
    let asker = "trace-asker-0123456789";
    common::serve_config(ws.path(), &[("ana", asker, &["ask"])], "[llm]\napi_key = \"llm-Zq81xPq0aaWk3\"\n");
    let fake = fake::FakeServer::start(vec![fake::Canned::text("Refunds take 14 days. [docs/refunds.md#window]")]);
    let base = fake.base_url().replace("http://", "http://llmuser:Llm-Pa55word9@");
    // A collector that is not there: the exporter's failures are logged too.
    let unused = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let otel = format!("http://otel-user:Otel-Pa55word9@{unused}");
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_LOG", "trace"),
        ("DOCS_AGENT_LOG_FORMAT", "json"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otel.as_str()),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer otel-header-tok3n-9f8e7d"),
    ];
    let question = format!("why does password: \"correct horse battery\" fail for the refund window job with {pem}");
    let mut stderr = Vec::new();
    for args in
        [vec!["ask", question.as_str()], vec!["search", question.as_str()], vec!["check"], vec!["index", "rebuild"]]
    {
        let out = common::run(ws.path(), &env, &args);
        stderr.push((args[0].to_string(), out.stderr));
    }
    // MCP over stdio: a client's question, which the library logs at debug.
    let mut mcp = common::mcp::McpChild::start_logged(ws.path(), &env);
    let _ = mcp.call("search_docs", serde_json::json!({"query": question}));
    stderr.push(("mcp".into(), mcp.finish()));
    // serve, asked over HTTP and over /mcp.
    let (mut child, url, log) = common::spawn_serve_logged(ws.path(), &env);
    let client = reqwest::Client::new();
    let asked =
        client.post(format!("{url}/v1/ask")).bearer_auth(asker).json(&serde_json::json!({"question": question}));
    let _ = asked.send().await.expect("ask");
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "search_docs", "arguments": {"query": question}}});
    let _ = common::mcp::post_mcp(&url, Some(asker), call).await;
    let _ = child.kill();
    let _ = child.wait();
    stderr.push(("serve".into(), log.text()));
    assert!(fake.requests().len() >= 2, "the model was asked");
    let mut leaks = Vec::new();
    let all: String = stderr.iter().map(|(_, text)| text.as_str()).collect();
    assert!(all.contains("\"level\":\"DEBUG\""), "the commands logged below info: {all}");
    for (command, text) in &stderr {
        for secret in secrets {
            if text.contains(secret) {
                let at = text.find(secret).unwrap_or(0);
                let from = text[..at].char_indices().rev().nth(300).map_or(0, |(i, _)| i);
                leaks.push(format!("{command}: {secret} in …{}…", &text[from..(at + secret.len()).min(text.len())]));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}
