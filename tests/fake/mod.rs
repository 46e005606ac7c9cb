//! A fake OpenAI-compatible server on 127.0.0.1, started by the test itself: it serves canned
//! replies in order and records every request body.

#![allow(dead_code)]

pub mod embeddings;
pub mod reranker;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// One canned reply.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
    /// When set, the reply is streamed (SSE): these text pieces, then `[DONE]`, or nothing
    /// more (the stream hangs) when `hang` is true.
    pub stream: Option<(Vec<String>, bool)>,
    /// When set, `body` is sent as it is as an event stream (with `{api_key}` and
    /// `{authorization}` filled in as for [`Canned::raw`]).
    pub raw_events: bool,
}

impl Canned {
    /// A 200 with a chat completion whose message is `message` (JSON).
    pub fn message(message: serde_json::Value) -> Canned {
        let body = serde_json::json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        });
        Canned { status: 200, body: body.to_string(), delay: Duration::ZERO, stream: None, raw_events: false }
    }

    /// A 200 streamed as server-sent events: one chunk per text piece, then `[DONE]`; with
    /// `hang`, the stream stays open after the pieces and never finishes.
    pub fn streamed(pieces: &[&str], hang: bool) -> Canned {
        let pieces = pieces.iter().map(|p| p.to_string()).collect();
        Canned {
            status: 200,
            body: String::new(),
            delay: Duration::ZERO,
            stream: Some((pieces, hang)),
            raw_events: false,
        }
    }

    /// A 200 whose message is plain text.
    pub fn text(text: &str) -> Canned {
        Canned::message(serde_json::json!({"role": "assistant", "content": text}))
    }

    /// A 200 whose message calls one tool.
    pub fn tool(name: &str, arguments: serde_json::Value) -> Canned {
        Canned::message(serde_json::json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": format!("call_{name}"), "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
        ]}))
    }

    /// Any status with a raw body; `{authorization}` in it becomes the request's
    /// `Authorization` header and `{api_key}` its bearer token, as some providers and proxies
    /// echo them in their errors.
    pub fn raw(status: u16, body: &str) -> Canned {
        Canned { status, body: body.to_string(), delay: Duration::ZERO, stream: None, raw_events: false }
    }

    /// A 200 event stream written as it is (`data: ...` lines and blank lines), with
    /// `{authorization}` and `{api_key}` filled in as for [`Canned::raw`]: a server that reports
    /// an error mid-stream, say.
    pub fn events(raw: &str) -> Canned {
        Canned { status: 200, body: raw.to_string(), delay: Duration::ZERO, stream: None, raw_events: true }
    }

    /// The same reply after a delay (for timeouts).
    pub fn after(mut self, delay: Duration) -> Canned {
        self.delay = delay;
        self
    }
}

#[derive(Clone, Default)]
struct Shared {
    replies: Arc<Mutex<Vec<Canned>>>,
    requests: Arc<Mutex<Vec<serde_json::Value>>>,
    /// How many hanging streams the client closed, told to whoever waits for one.
    dropped: Arc<(Mutex<usize>, std::sync::Condvar)>,
}

/// Counts a hanging stream closed by the client, when the stream is dropped.
struct Dropped(Arc<(Mutex<usize>, std::sync::Condvar)>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let (count, changed) = &*self.0;
        *count.lock().expect("lock") += 1;
        changed.notify_all();
    }
}

/// A running fake server; it stops when dropped with the test process.
pub struct FakeServer {
    pub addr: SocketAddr,
    shared: Shared,
}

impl FakeServer {
    /// Starts serving `replies` in order (the last one repeats) on 127.0.0.1 with a free port.
    pub fn start(replies: Vec<Canned>) -> FakeServer {
        FakeServer::start_with(replies, &[])
    }

    /// [`FakeServer::start`], also answering `GET path` with JSON for each of `gets` (a
    /// server's `/props` or model list, say).
    pub fn start_with(replies: Vec<Canned>, gets: &[(&str, serde_json::Value)]) -> FakeServer {
        let shared =
            Shared { replies: Arc::new(Mutex::new(replies)), requests: Arc::default(), dropped: Arc::default() };
        let mut app = Router::new().route("/v1/chat/completions", post(reply)).with_state(shared.clone());
        for (path, body) in gets {
            let body = body.to_string();
            app = app
                .route(path, axum::routing::get(move || async move { ([("content-type", "application/json")], body) }));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
                tx.send(listener.local_addr().expect("local addr")).expect("send addr");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr = rx.recv().expect("server started");
        FakeServer { addr, shared }
    }

    /// The base URL to give docs-agent.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Waits up to `within` for the client to close `n` hanging streams (a cancelled model
    /// call); whether it did.
    pub fn wait_dropped(&self, n: usize, within: Duration) -> bool {
        let (count, changed) = &*self.shared.dropped;
        let guard = count.lock().expect("lock");
        let (guard, _) = changed.wait_timeout_while(guard, within, |dropped| *dropped < n).expect("lock");
        *guard >= n
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.shared.requests.lock().expect("lock").clone()
    }
}

async fn reply(State(shared): State<Shared>, headers: axum::http::HeaderMap, body: String) -> Response {
    let json = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
    shared.requests.lock().expect("lock").push(json);
    let canned = {
        let mut replies = shared.replies.lock().expect("lock");
        if replies.len() > 1 { replies.remove(0) } else { replies[0].clone() }
    };
    if !canned.delay.is_zero() {
        tokio::time::sleep(canned.delay).await;
    }
    if let Some((pieces, hang)) = canned.stream {
        use futures_util::StreamExt;
        let mut events: Vec<Result<String, std::convert::Infallible>> = pieces
            .iter()
            .map(|p| {
                Ok(format!("data: {}\n\n", serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}}]})))
            })
            .collect();
        if !hang {
            events.push(Ok("data: [DONE]\n\n".to_string()));
        }
        let tail = if hang {
            let guard = Dropped(shared.dropped.clone());
            futures_util::stream::pending()
                .map(move |x| {
                    let _held = &guard;
                    x
                })
                .boxed()
        } else {
            futures_util::stream::empty().boxed()
        };
        let body = axum::body::Body::from_stream(futures_util::stream::iter(events).chain(tail));
        return (StatusCode::OK, [("content-type", "text/event-stream")], body).into_response();
    }
    let status = StatusCode::from_u16(canned.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let api_key = authorization.strip_prefix("Bearer ").unwrap_or(authorization);
    let body = canned.body.replace("{authorization}", authorization).replace("{api_key}", api_key);
    let kind = if canned.raw_events { "text/event-stream" } else { "application/json" };
    (status, [("content-type", kind)], body).into_response()
}

/// The environment that points the binary at a fake server at `base`.
pub fn model_env(base: &str) -> Vec<(&str, &str)> {
    vec![("LLM_BASE_URL", base), ("LLM_MODEL", "test-model")]
}

/// Asks `question` through the binary in a fresh sample workspace, a fake server giving
/// `replies` in order (the last repeats); the server keeps the requests it got.
pub fn ask(replies: Vec<Canned>, question: &str) -> (FakeServer, super::common::Run) {
    let server = FakeServer::start(replies);
    let ws = super::common::sample_workspace();
    let out = super::common::run(ws.path(), &model_env(&server.base_url()), &[question]);
    (server, out)
}

/// A cloud key pair that a server's error may echo beside the configured key (as a proxy that
/// prints its own upstream credentials does).
pub const ECHOED_CLOUD_KEY: &str = "AKIAZ7Q3LMNOPQRSTU2X";
/// The secret half of [`ECHOED_CLOUD_KEY`], 40 characters.
pub const ECHOED_CLOUD_SECRET: &str = "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";

/// Each way a model server's error can arrive, echoing the request's key (`{api_key}`, and the
/// whole `Authorization` header) and a cloud key pair: an error status, an error object in a
/// 200 reply, an error event mid-stream (as `data:` and as `event: error`), a stream that is
/// not JSON, and a plain-text 5xx. Named for the assertion messages.
pub fn echoing_errors() -> Vec<(&'static str, Canned)> {
    let message = format!(
        "Incorrect API key provided: {{authorization}} (key {{api_key}}); upstream aws {ECHOED_CLOUD_KEY} {ECHOED_CLOUD_SECRET}"
    );
    let object = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string();
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "Refunds "}}]}).to_string();
    vec![
        ("an error status", Canned::raw(401, &object)),
        ("an error object in a 200 reply", Canned::raw(200, &object)),
        ("an error mid-stream", Canned::events(&format!("data: {delta}\n\ndata: {object}\n\n"))),
        ("an error event", Canned::events(&format!("event: error\ndata: {object}\n\n"))),
        ("a stream that is not JSON", Canned::events(&format!("data: {message}\n\n"))),
        ("a plain-text 5xx", Canned::raw(502, &message)),
    ]
}
