//! Traces exported over OTLP (issue 15, part 2), through the real binary to a fake collector
//! on 127.0.0.1 that decodes the protobuf it receives: the GenAI spans and their attributes,
//! nested as they ran; no message content unless asked for, and then redacted; `serve`'s
//! request span as the turn's parent.

mod common;
mod fake;

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

/// A fake OTLP/HTTP collector: `POST /v1/traces` bodies, decoded.
struct Collector {
    url: String,
    received: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
    /// The content types the exporter sent.
    types: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    fn start() -> Collector {
        let received = Arc::new(Mutex::new(Vec::new()));
        let types = Arc::new(Mutex::new(Vec::new()));
        let (into, typed) = (received.clone(), types.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (into, typed) = (into.clone(), typed.clone());
                async move {
                    let kind = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                    typed.lock().expect("lock").push(kind);
                    match ExportTraceServiceRequest::decode(body) {
                        Ok(request) => {
                            into.lock().expect("lock").push(request);
                            axum::http::StatusCode::OK
                        }
                        Err(_) => axum::http::StatusCode::BAD_REQUEST,
                    }
                }
            }),
        );
        let url = format!("http://{}", common::serve_app(app));
        Collector { url, received, types }
    }

    /// Every span received so far, with its service name.
    fn spans(&self) -> Vec<(String, Span)> {
        let received = self.received.lock().expect("lock");
        let mut spans = Vec::new();
        for request in received.iter() {
            for resource in &request.resource_spans {
                let service = resource
                    .resource
                    .as_ref()
                    .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
                    .map(|a| text(a.value.as_ref().and_then(|v| v.value.as_ref())))
                    .unwrap_or_default();
                for scope in &resource.scope_spans {
                    spans.extend(scope.spans.iter().map(|s| (service.clone(), s.clone())));
                }
            }
        }
        spans
    }
}

/// An attribute value as text.
fn text(value: Option<&Any>) -> String {
    match value {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

/// A span's attribute, as text.
fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).map(|a| text(a.value.as_ref().and_then(|v| v.value.as_ref())))
}

/// The span named `name`.
fn named<'a>(spans: &'a [(String, Span)], name: &str) -> &'a Span {
    spans
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {:?}", spans.iter().map(|(_, s)| &s.name).collect::<Vec<_>>()))
}

#[test]
fn a_question_exports_genai_spans_nested_as_they_ran_without_content() {
    let collector = Collector::start();
    let ws = common::sample_workspace();
    let env = [("LLM_MODEL", "scripted"), ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str())];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = collector.spans();
    let turn = named(&spans, "invoke_agent docs-agent");
    let chat = named(&spans, "chat scripted");
    let tool = named(&spans, "execute_tool search_docs");

    assert!(spans.iter().all(|(service, _)| service == "docs-agent"), "service.name");
    assert!(collector.types.lock().expect("lock").iter().all(|t| t == "application/x-protobuf"));
    for child in [chat, tool] {
        assert_eq!(child.parent_span_id, turn.span_id, "{} under the turn", child.name);
        assert_eq!(child.trace_id, turn.trace_id);
    }
    assert!(turn.parent_span_id.is_empty(), "the turn is the root of a question's trace");
    assert_eq!(attr(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
    // The conventions' kind: a call to a model server is a client span; the others are internal.
    assert_eq!(chat.kind, SpanKind::Client as i32, "{chat:?}");
    assert_eq!(tool.kind, SpanKind::Internal as i32, "{tool:?}");
    assert_eq!(attr(chat, "gen_ai.request.model").as_deref(), Some("scripted"));
    assert_eq!(attr(tool, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attr(tool, "gen_ai.tool.name").as_deref(), Some("search_docs"));
    assert!(attr(tool, "gen_ai.tool.call.id").is_some_and(|id| id.starts_with("call_")), "{tool:?}");
    assert_eq!(attr(tool, "docs_agent.decision").as_deref(), Some("allowed"));
    assert_eq!(attr(turn, "gen_ai.conversation.id").map(|s| s.starts_with("s-")), Some(true));
    assert_eq!(attr(turn, "docs_agent.stop_reason").as_deref(), Some("answered"));
    // No message content by default: not the question, not the answer.
    for (_, span) in &spans {
        for a in &span.attributes {
            let value = text(a.value.as_ref().and_then(|v| v.value.as_ref()));
            assert!(!value.contains("refund window") && !value.contains("14 days"), "{}: {value}", a.key);
        }
    }
}

/// A model that reports usage: the chat span carries the tokens.
#[test]
fn the_chat_span_carries_the_tokens_the_server_reported() {
    let collector = Collector::start();
    let (mut server, address) = common::stand_in_at("127.0.0.1:0", "stand-in:1b");
    let ws = common::sample_workspace();
    let base = format!("http://{address}/v1");
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "stand-in:1b"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
    ];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = collector.spans();
    let chat = named(&spans, "chat stand-in:1b");
    // Integers, as the GenAI conventions type them (a collector sums them), not text.
    let int = |span: &Span, key: &str| {
        span.attributes.iter().find(|a| a.key == key).and_then(|a| {
            match a.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::IntValue(i)) => Some(*i),
                _ => None,
            }
        })
    };
    let (input, output) = (int(chat, "gen_ai.usage.input_tokens"), int(chat, "gen_ai.usage.output_tokens"));
    assert!(input.is_some_and(|t| t > 0) && output.is_some_and(|t| t > 0), "{chat:?}");
    assert!(int(chat, "docs_agent.step").is_some_and(|s| s >= 1), "{chat:?}");
    let turn = named(&spans, "invoke_agent docs-agent");
    assert_eq!(int(turn, "gen_ai.usage.input_tokens"), input, "the turn's total of its one call: {turn:?}");
    keep_sample(&[turn, chat, named(&spans, "execute_tool search_docs")]);
}

/// Writes the decoded spans to `target/otel/sample-spans.txt`, to show what a collector receives
/// (an issue's closing note quotes it). A failure to write fails nothing.
fn keep_sample(spans: &[&Span]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/otel");
    let mut out = String::new();
    for span in spans {
        out.push_str(&format!(
            "span {:?} kind={} parent={}\n",
            span.name,
            SpanKind::try_from(span.kind).map_or("?", |k| k.as_str_name()),
            hex(&span.parent_span_id)
        ));
        out.push_str(&format!("  trace_id={} span_id={}\n", hex(&span.trace_id), hex(&span.span_id)));
        for a in &span.attributes {
            out.push_str(&format!("  {} = {:?}\n", a.key, a.value.as_ref().and_then(|v| v.value.as_ref())));
        }
    }
    let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("sample-spans.txt"), out));
}

/// Bytes as lower-case hex ("-" when empty).
fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".into();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// With `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` the question, the answer and
/// the tool's arguments and result are exported, and a secret in them is redacted.
#[test]
fn content_is_exported_only_when_asked_and_then_guarded() {
    let collector = Collector::start();
    let ws = common::sample_workspace();
    let question = format!("how long is the refund window, my key is {}", common::ONBOARDING_KEY);
    let env = [
        ("LLM_MODEL", "scripted"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ("DOCS_AGENT_LOG", "info"),
    ];
    let out = common::run(ws.path(), &env, &[question.as_str()]);
    // Content goes to the collector only, never into a log line (which lists its spans' fields).
    assert!(out.stderr.contains("tool call done"), "{}", out.stderr);
    for key in ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.result"] {
        assert!(!out.stderr.contains(key), "{key} in the log: {}", out.stderr);
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = collector.spans();
    let turn = named(&spans, "invoke_agent docs-agent");
    let tool = named(&spans, "execute_tool search_docs");
    let input = attr(turn, "gen_ai.input.messages").expect("the question");
    let asked: serde_json::Value = serde_json::from_str(&input).expect("JSON messages");
    let content = asked[0]["parts"][0]["content"].as_str().unwrap_or_default();
    assert_eq!(asked[0]["role"], "user");
    assert!(content.contains("how long is the refund window") && content.contains("[REDACTED"), "{content}");
    assert!(attr(turn, "gen_ai.output.messages").is_some_and(|a| a.contains("14 days")), "{turn:?}");
    assert!(attr(tool, "gen_ai.tool.call.result").is_some_and(|r| r.contains("docs/refunds.md")), "{tool:?}");
    assert!(attr(tool, "gen_ai.tool.call.arguments").is_some(), "{tool:?}");
    let all = format!("{spans:?}");
    assert!(!all.contains("4eC39HqLyjWDarjtT1zdp7dc"), "the key is never exported");
}

/// A model that writes a secret into a tool call's arguments (which the harness decides on as
/// written): the exported arguments are scrubbed.
#[test]
fn tool_arguments_a_model_wrote_are_exported_scrubbed() {
    let collector = Collector::start();
    let fake = fake::FakeServer::start(vec![
        fake::Canned::tool("search_docs", serde_json::json!({"query": format!("refund {}", common::ONBOARDING_KEY)})),
        fake::Canned::text("Refunds are possible within 14 days. [docs/refunds.md#window]"),
    ]);
    let ws = common::sample_workspace();
    let base = fake.base_url();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
    ];
    let out = common::run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let spans = collector.spans();
    let tool = named(&spans, "execute_tool search_docs");
    let arguments = attr(tool, "gen_ai.tool.call.arguments").expect("the arguments");
    assert!(arguments.contains("refund") && arguments.contains("[REDACTED"), "{arguments}");
    assert!(!format!("{spans:?}").contains("4eC39HqLyjWDarjtT1zdp7dc"), "the key is never exported");
}

/// Under `serve`, the request's span (kind server) is the turn's parent, in one trace.
#[tokio::test]
async fn serve_exports_the_request_as_the_turns_parent() {
    let collector = Collector::start();
    let ws = common::sample_workspace();
    let token = "otel-serve-token-0123456789";
    common::serve_config(ws.path(), &[("ana", token, &["ask"])], "");
    let env = [("LLM_MODEL", "scripted"), ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str())];
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &env);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let asked = reqwest::Client::new()
        .post(format!("{url}/v1/ask"))
        .bearer_auth(token)
        .json(&serde_json::json!({"question": "how long is the refund window"}))
        .send()
        .await
        .map(|r| r.status().as_u16());
    // SIGTERM: serve drains and exits, sending the traces it holds.
    // SAFETY: kill(2) on our own child's pid with a valid signal.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("serve exits");
    assert_eq!(asked.ok(), Some(200));
    assert!(status.success(), "{status:?}");
    let spans = collector.spans();
    let request = named(&spans, "POST /v1/ask");
    let turn = named(&spans, "invoke_agent docs-agent");
    assert_eq!(turn.parent_span_id, request.span_id, "the turn under its request");
    assert_eq!(turn.trace_id, request.trace_id);
    assert_eq!(request.kind, opentelemetry_proto::tonic::trace::v1::span::SpanKind::Server as i32);
    assert_eq!(attr(request, "http.response.status_code").as_deref(), Some("200"));
    assert!(attr(request, "request_id").is_some(), "{request:?}");
}

/// A bad endpoint or protocol is a usage error that names the variable.
#[test]
fn a_bad_endpoint_is_named() {
    let ws = common::sample_workspace();
    let out = common::run(ws.path(), &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")], &["search", "refund"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT: `collector:4318`"), "{}", out.stderr);
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
    let out = common::run(ws.path(), &env, &["search", "refund"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported"), "{}", out.stderr);
}
