//! A stand-in for Ollama, for the compose test (issue 14): a small OpenAI-compatible server
//! built from this repository, so the stack can be run where no registry can be reached. It is
//! not a model: it answers a question with the first sentence of the first section the harness
//! put in context, citing that section, which is what a grounded answer looks like.
//!
//! It plays the parts of Ollama that docs-agent and the compose file use:
//! - `GET /v1/models` and `GET /api/tags`: the models pulled so far;
//! - `POST /api/pull`: "pulls" a model, with Ollama's newline-delimited JSON progress;
//! - `POST /v1/chat/completions`, streamed (SSE) or not; a model not pulled is a 404, as in
//!   Ollama;
//! - `GET /api/version`.
//!
//! It also plays the compose file's `reranker` (Hugging Face text-embeddings-inference, TEI)
//! for the `rerank` profile: `POST /rerank` in TEI's shape (`query`, `texts`; a bare list of
//! `index` and `score`, best first), scoring each text by the share of the question's words it
//! holds. A body with `documents` in place of `texts` is refused as TEI refuses it (HTTP 422,
//! naming `texts`), so docs-agent's switch to TEI's shape runs too.
//!
//! Usage: `ollama-stand-in [serve]` listens on `OLLAMA_HOST` (default `0.0.0.0:11434`);
//! `ollama-stand-in list` exits 0 when the server on `OLLAMA_HOST`'s port of 127.0.0.1 answers
//! (the compose health check runs `ollama list`, which asks `OLLAMA_HOST` as well).
//! `STAND_IN_MODELS` (comma-separated) are pulled at start.
//!
//! Build: `cargo build --release --bin ollama-stand-in`.

// A small server of its own: it prints its address and errors itself.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The models pulled so far.
type Pulled = Arc<Mutex<BTreeSet<String>>>;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("serve") => serve(),
        Some("list") => list(),
        Some("probe") => probe(&args[1..]),
        Some(other) => {
            eprintln!("ollama-stand-in: unknown command `{other}`; use `serve`, `list` or `probe`");
            std::process::ExitCode::from(2)
        }
    }
}

/// Where the server listens: `OLLAMA_HOST`, else `0.0.0.0:11434`.
fn listen_address() -> String {
    let listen = std::env::var("OLLAMA_HOST").unwrap_or_else(|_| "0.0.0.0:11434".into());
    listen.trim_start_matches("http://").to_string()
}

/// Serves until killed.
fn serve() -> std::process::ExitCode {
    let listen = listen_address();
    let pulled: Pulled = Arc::new(Mutex::new(
        std::env::var("STAND_IN_MODELS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect(),
    ));
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("ollama-stand-in: cannot start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&listen).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("ollama-stand-in: cannot listen on {listen}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        if let Ok(address) = listener.local_addr() {
            eprintln!("ollama-stand-in: listening on {address}");
        }
        match axum::serve(listener, app(pulled)).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ollama-stand-in: {e}");
                std::process::ExitCode::FAILURE
            }
        }
    })
}

/// `ollama list`: exit 0 when the local server, on the port it listens on, answers
/// `GET /api/tags`.
fn list() -> std::process::ExitCode {
    use std::io::{Read, Write};
    let listen = listen_address();
    let port = listen.rsplit_once(':').map_or("11434", |(_, port)| port);
    let answered = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).and_then(|mut stream| {
        stream.write_all(b"GET /api/tags HTTP/1.0\r\nhost: localhost\r\n\r\n")?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    });
    match answered {
        Ok(reply) if reply.starts_with("HTTP/1.0 200") || reply.starts_with("HTTP/1.1 200") => {
            println!("{}", reply.split("\r\n\r\n").nth(1).unwrap_or_default());
            std::process::ExitCode::SUCCESS
        }
        Ok(reply) => {
            eprintln!("ollama-stand-in list: {}", reply.lines().next().unwrap_or_default());
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("ollama-stand-in list: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `probe ATTEMPT...` (for the compose test, run inside the agent's container): prints who
/// the process is (uid, effective capabilities) and makes each attempt with a plain system
/// call, one line each: `write:PATH`, `read:PATH`, `connect:HOST:PORT`. No sandbox of
/// docs-agent's is involved, so what it shows is the container's confinement.
fn probe(attempts: &[String]) -> std::process::ExitCode {
    use std::io::Write;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        // The first value: the real uid or gid of the four, the one mask of the others.
        let line = status.lines().find_map(|l| l.strip_prefix(name)).unwrap_or("?");
        line.split_whitespace().next().unwrap_or("?").to_string()
    };
    println!(
        "uid {} gid {} CapEff {} NoNewPrivs {}",
        field("Uid:"),
        field("Gid:"),
        field("CapEff:"),
        field("NoNewPrivs:")
    );
    for attempt in attempts {
        let Some((kind, target)) = attempt.split_once(':') else {
            eprintln!("ollama-stand-in probe: `{attempt}`: expected KIND:TARGET");
            return std::process::ExitCode::from(2);
        };
        let result = match kind {
            "write" => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(target)
                .and_then(|mut f| f.write_all(b"probe\n")),
            "read" => std::fs::read(target).map(drop),
            "connect" => {
                use std::net::ToSocketAddrs;
                target.to_socket_addrs().and_then(|mut addrs| {
                    let addr = addrs.next().ok_or_else(|| std::io::Error::other("no address"))?;
                    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(3)).map(drop)
                })
            }
            other => {
                eprintln!("ollama-stand-in probe: unknown attempt `{other}` (write, read, connect)");
                return std::process::ExitCode::from(2);
            }
        };
        match result {
            Ok(()) => println!("{kind} {target} ok"),
            Err(e) => println!("{kind} {target} refused: {e}"),
        }
    }
    std::process::ExitCode::SUCCESS
}

/// The routes.
fn app(pulled: Pulled) -> Router {
    Router::new()
        .route("/api/version", get(|| async { axum::Json(json!({"version": "0.0.0-stand-in"})) }))
        .route("/api/tags", get(tags))
        .route("/v1/models", get(models))
        .route("/api/pull", post(pull))
        .route("/v1/chat/completions", post(chat))
        .route("/rerank", post(rerank))
        .with_state(pulled)
}

/// The pulled models, by name.
fn names(pulled: &Pulled) -> Vec<String> {
    pulled.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
}

/// `GET /api/tags`, as Ollama lists its models.
async fn tags(State(pulled): State<Pulled>) -> Response {
    let models: Vec<Value> = names(&pulled).into_iter().map(|name| json!({"name": name, "model": name})).collect();
    axum::Json(json!({"models": models})).into_response()
}

/// `GET /v1/models`, the OpenAI list.
async fn models(State(pulled): State<Pulled>) -> Response {
    let data: Vec<Value> = names(&pulled).into_iter().map(|id| json!({"id": id, "object": "model"})).collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// `POST /api/pull`: progress as newline-delimited JSON, then the model is there.
async fn pull(State(pulled): State<Pulled>, axum::Json(request): axum::Json<Value>) -> Response {
    let Some(model) = request.get("model").or_else(|| request.get("name")).and_then(Value::as_str) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "missing model"}))).into_response();
    };
    pulled.lock().unwrap_or_else(|p| p.into_inner()).insert(model.to_string());
    let total = 4_000_000_u64;
    let mut lines = vec![json!({"status": "pulling manifest"})];
    for step in 1..=4 {
        lines.push(json!({"status": "pulling 0123456789ab", "digest": "sha256:0123456789ab", "total": total, "completed": total * step / 4}));
    }
    lines.extend([json!({"status": "verifying sha256 digest"}), json!({"status": "success"})]);
    let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// `POST /v1/chat/completions`.
async fn chat(State(pulled): State<Pulled>, axum::Json(request): axum::Json<Value>) -> Response {
    let model = request.get("model").and_then(Value::as_str).unwrap_or_default().to_string();
    // As in Ollama, a name without a tag is the `latest` one.
    let tagged = if model.contains(':') { model.clone() } else { format!("{model}:latest") };
    if !names(&pulled).iter().any(|name| *name == model || *name == tagged) {
        let message = format!("model \"{model}\" not found, try pulling it first");
        return (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"message": message, "type": "api_error"}})))
            .into_response();
    }
    let answer = answer(request.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice));
    let usage =
        json!({"prompt_tokens": 100, "completion_tokens": answer.len() / 4, "total_tokens": 100 + answer.len() / 4});
    if request.get("stream").and_then(Value::as_bool) != Some(true) {
        return axum::Json(json!({
            "id": "stand-in", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": usage,
        }))
        .into_response();
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "stand-in", "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in answer.split_inclusive(' ') {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    events.push(chunk(json!({}), json!("stop")));
    events.push(
        json!({"id": "stand-in", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage}),
    );
    let mut body: String = events.iter().map(|event| format!("data: {event}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// A TEI `POST /rerank` body: what the stand-in reads of it. As in TEI, a body without
/// `texts` (another server's `documents`) is refused by the extractor: HTTP 422, "missing
/// field `texts`".
#[derive(serde::Deserialize)]
struct RerankRequest {
    /// The question.
    query: String,
    /// The sections to score, in order.
    texts: Vec<String>,
}

/// `POST /rerank`, as TEI answers it: a bare list of `index` and `score`, best first.
async fn rerank(axum::Json(request): axum::Json<RerankRequest>) -> Response {
    axum::Json(ranked(&request.query, &request.texts)).into_response()
}

/// Each of `texts` scored for `query`, best first (ties in their order): the share of the
/// question's words (lower-cased, three letters or more) the text holds, as a logit from -5
/// (none) to 5 (all), the way a cross-encoder's raw scores look.
fn ranked(query: &str, texts: &[String]) -> Vec<Value> {
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3).map(str::to_lowercase).collect()
    };
    let asked = words(query);
    let mut scored: Vec<(usize, f64)> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let held = words(text);
            let share = match asked.len() {
                0 => 0.0,
                n => asked.iter().filter(|w| held.contains(*w)).count() as f64 / n as f64,
            };
            (index, 10.0 * share - 5.0)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(index, score)| json!({"index": index, "score": score})).collect()
}

/// The first sentence of the first section in context, citing it; or a plain "not found".
fn answer(messages: &[Value]) -> String {
    let texts = messages.iter().rev().filter_map(|m| m.get("content").and_then(Value::as_str));
    for text in texts {
        let Some(start) = text.find("<untrusted source=\"") else { continue };
        let rest = &text[start + "<untrusted source=\"".len()..];
        let Some((source, rest)) = rest.split_once('"') else { continue };
        let body = rest.split_once('>').map_or("", |(_, body)| body);
        let body = body.split("</untrusted>").next().unwrap_or_default();
        // The section's text, past its heading line.
        let prose: String =
            body.lines().filter(|line| !line.trim_start().starts_with('#')).collect::<Vec<_>>().join(" ");
        let sentence = prose.split_inclusive(". ").next().unwrap_or_default().trim();
        if !sentence.is_empty() {
            return format!("{sentence} [{source}]");
        }
    }
    "The docs I was given do not say.".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_answers_with_the_first_sentence_of_the_first_section_in_context() {
        let messages = [
            json!({"role": "system", "content": "rules"}),
            json!({"role": "user", "content": "how long is the refund window"}),
            json!({"role": "tool", "content": "2 sections:\n<untrusted source=\"docs/refunds.md#window\">\n# Refunds > Window\nRefunds are possible within 14 days. Later text.\n</untrusted>"}),
        ];
        assert_eq!(answer(&messages), "Refunds are possible within 14 days. [docs/refunds.md#window]");
        assert_eq!(answer(&messages[..2]), "The docs I was given do not say.");
    }

    #[test]
    fn it_ranks_texts_by_the_share_of_the_questions_words_they_hold() {
        let texts = ["How shipping works.", "The refund window is 14 days.", "Refunds: the WINDOW."].map(String::from);
        let got = ranked("How long is the refund window?", &texts);
        let order: Vec<u64> = got.iter().filter_map(|s| s["index"].as_u64()).collect();
        // how, long, the, refund, window: 3 of 5 words, then 2 (refunds is not refund), then 1
        assert_eq!(order, [1, 2, 0], "best first: {got:?}");
        let scores: Vec<f64> = got.iter().filter_map(|s| s["score"].as_f64()).collect();
        assert_eq!(scores, [1.0, -1.0, -3.0], "logits from -5 to 5: {got:?}");
        assert_eq!(ranked("is it", &texts[..1]), [json!({"index": 0, "score": -5.0})], "no word to share");
    }

    /// docs-agent asks in the `documents` shape first and switches to TEI's `texts` on a 422
    /// that names the field, as TEI refuses it.
    #[test]
    fn a_rerank_body_without_texts_is_refused_naming_texts() {
        use tower::ServiceExt;
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let ask = |body: Value| {
            let request = axum::http::Request::post("/rerank")
                .header(header::CONTENT_TYPE, "application/json")
                .body(axum::body::Body::from(body.to_string()))
                .expect("a request");
            runtime.block_on(async {
                let response = app(Pulled::default()).oneshot(request).await.expect("an answer");
                let status = response.status();
                let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("a body");
                (status, String::from_utf8_lossy(&bytes).into_owned())
            })
        };
        let (status, body) = ask(json!({"query": "refund window", "documents": ["a"], "top_n": 1}));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body.contains("missing field `texts`"), "{body}");
        let (status, body) = ask(json!({"query": "refund window", "texts": ["shipping", "the refund window"],
                                        "raw_scores": true, "truncate": true}));
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, r#"[{"index":1,"score":5.0},{"index":0,"score":-5.0}]"#);
    }
}
