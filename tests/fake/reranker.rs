//! A fake reranker on 127.0.0.1, started by the test itself: `POST /v1/rerank` (and `/rerank`)
//! scores each document by the needles it was told to favour (a document holding one gets its
//! logit, every other -9), in the shape llama.cpp answers, or in TEI's (`texts` in, a bare list
//! out, `documents` refused with a 422 as TEI refuses it). It records every request and can be
//! told to fail, to be slow or to answer nonsense.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// A secret the fake's error replies echo (as a server echoing the key it was sent would): it
/// must never leave docs-agent.
pub const ECHOED: &str = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";

/// How the fake behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// llama.cpp's, vLLM's, Jina's and Cohere's shape.
    Documents,
    /// Hugging Face TEI's shape.
    Texts,
    /// Every request gets a 503.
    Down,
    /// A 200 whose body is no list of scores.
    Garbage,
    /// A 200 that scores the first document only.
    Partial,
    /// Answers as `Documents`, after this long.
    Slow(Duration),
}

#[derive(Clone)]
struct Shared {
    mode: Arc<Mutex<Mode>>,
    favour: Arc<Mutex<Vec<(String, f64)>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// A running fake reranker.
pub struct FakeReranker {
    pub addr: SocketAddr,
    shared: Shared,
}

impl FakeReranker {
    /// Starts it on a free port of 127.0.0.1, answering in `mode`.
    pub fn start(mode: Mode) -> FakeReranker {
        let shared = Shared { mode: Arc::new(Mutex::new(mode)), favour: Arc::default(), requests: Arc::default() };
        let app =
            Router::new().route("/v1/rerank", post(rerank)).route("/rerank", post(rerank)).with_state(shared.clone());
        let addr = crate::common::serve_app(app);
        FakeReranker { addr, shared }
    }

    /// The base URL to give docs-agent.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A document that holds `needle` (any case) gets `logit`.
    pub fn favour(&self, needle: &str, logit: f64) {
        self.shared.favour.lock().expect("lock").push((needle.to_lowercase(), logit));
    }

    /// From now on it behaves as `mode`.
    pub fn set(&self, mode: Mode) {
        *self.shared.mode.lock().expect("lock") = mode;
    }

    /// Every request body so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().expect("lock").clone()
    }
}

async fn rerank(State(shared): State<Shared>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    shared.requests.lock().expect("lock").push(request.clone());
    let mode = *shared.mode.lock().expect("lock");
    if let Mode::Slow(delay) = mode {
        tokio::time::sleep(delay).await;
    }
    let field = if mode == Mode::Texts { "texts" } else { "documents" };
    let Some(documents) = request[field].as_array() else {
        let message = format!("Failed to deserialize the JSON body into the target type: missing field `{field}`");
        return (StatusCode::UNPROCESSABLE_ENTITY, json!({"error": message}).to_string()).into_response();
    };
    let favour = shared.favour.lock().expect("lock").clone();
    let score = |doc: &Value| {
        let doc = doc.as_str().unwrap_or_default().to_lowercase();
        favour.iter().filter(|(needle, _)| doc.contains(needle)).map(|(_, logit)| *logit).fold(-9.0, f64::max)
    };
    let mut scored: Vec<(usize, f64)> = documents.iter().map(score).enumerate().collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    match mode {
        Mode::Down => (StatusCode::SERVICE_UNAVAILABLE, format!("loading model, key {ECHOED}")).into_response(),
        Mode::Garbage => (StatusCode::OK, format!("<html>all good {ECHOED}</html>")).into_response(),
        Mode::Partial => {
            (StatusCode::OK, json!({"results": [{"index": 0, "relevance_score": 1.0}]}).to_string()).into_response()
        }
        Mode::Texts => {
            let list: Vec<Value> = scored.iter().map(|(i, s)| json!({"index": i, "score": s})).collect();
            (StatusCode::OK, Value::Array(list).to_string()).into_response()
        }
        Mode::Documents | Mode::Slow(_) => {
            let results: Vec<Value> = scored.iter().map(|(i, s)| json!({"index": i, "relevance_score": s})).collect();
            (StatusCode::OK, json!({"model": "fake-rerank", "results": results}).to_string()).into_response()
        }
    }
}
