//! A fake OpenAI-compatible embedding server on 127.0.0.1, started by the test itself:
//! `POST /v1/embeddings` answers every text with a deterministic vector (its character
//! trigrams, hashed into 256 dimensions), so texts that share letters are near each other,
//! even misspelled. It records every text it embeds and can be told to fail.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// Length of the fake's vectors.
pub const DIMENSIONS: usize = 256;

#[derive(Clone, Default)]
struct Shared {
    texts: Arc<Mutex<Vec<String>>>,
    models: Arc<Mutex<Vec<String>>>,
    /// The `Authorization` header of each request, empty when there was none.
    keys: Arc<Mutex<Vec<String>>>,
    failing: Arc<AtomicBool>,
    /// Inputs longer than this many characters are refused, as llama.cpp refuses what is
    /// longer than its context (0: none are).
    max_chars: Arc<std::sync::atomic::AtomicUsize>,
    /// Vectors are cut to this many dimensions (0: [`DIMENSIONS`]), as another model file
    /// served under the same name would answer.
    cut_to: Arc<std::sync::atomic::AtomicUsize>,
    /// A request with an input holding this text is refused with a 400 (empty: none is).
    refused: Arc<Mutex<String>>,
}

/// A running fake embedding server.
pub struct FakeEmbeddings {
    pub addr: SocketAddr,
    shared: Shared,
}

impl FakeEmbeddings {
    /// Starts it on a free port of 127.0.0.1.
    pub fn start() -> FakeEmbeddings {
        let shared = Shared::default();
        let app = Router::new().route("/v1/embeddings", post(embed)).with_state(shared.clone());
        let addr = crate::common::serve_app(app);
        FakeEmbeddings { addr, shared }
    }

    /// The base URL to give docs-agent.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The environment that makes docs-agent's search hybrid with this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("DOCS_AGENT_EMBEDDINGS_MODEL", "fake-embed".into()), ("DOCS_AGENT_EMBEDDINGS_URL", self.base_url())]
    }

    /// Every text embedded so far, in order.
    pub fn texts(&self) -> Vec<String> {
        self.shared.texts.lock().expect("lock").clone()
    }

    /// Forgets the texts embedded so far.
    pub fn clear(&self) {
        self.shared.texts.lock().expect("lock").clear();
    }

    /// The `Authorization` header of every request so far, empty where there was none.
    pub fn keys(&self) -> Vec<String> {
        self.shared.keys.lock().expect("lock").clone()
    }

    /// Every model name asked for.
    pub fn models(&self) -> Vec<String> {
        self.shared.models.lock().expect("lock").clone()
    }

    /// From now on a request with an input longer than `chars` characters is refused with
    /// llama.cpp's 400 (0: none is).
    pub fn refuse_longer_than(&self, chars: usize) {
        self.shared.max_chars.store(chars, Ordering::SeqCst);
    }

    /// From now on vectors have `n` dimensions (at most [`DIMENSIONS`]; 0: all of them).
    pub fn cut_to(&self, n: usize) {
        self.shared.cut_to.store(n, Ordering::SeqCst);
    }

    /// From now on a request with an input that holds `text` is refused with a 400 that is not
    /// about its length, as a server refuses input it cannot read.
    pub fn refuse_containing(&self, text: &str) {
        *self.shared.refused.lock().expect("lock") = text.to_string();
    }

    /// From now on every request gets a 503 (`true`) or an answer (`false`).
    pub fn fail(&self, failing: bool) {
        self.shared.failing.store(failing, Ordering::SeqCst);
    }
}

/// The fake's vector of `text`: its lower-case character trigrams counted into
/// [`DIMENSIONS`] buckets by an FNV-1a hash (not scaled: the client scales).
pub fn vector(text: &str) -> Vec<f32> {
    let chars: Vec<char> = format!(" {} ", text.to_lowercase()).chars().collect();
    let mut v = vec![0.0f32; DIMENSIONS];
    for gram in chars.windows(3) {
        let mut hash: u32 = 0x811c_9dc5;
        for c in gram {
            for b in c.to_string().bytes() {
                hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
            }
        }
        v[hash as usize % DIMENSIONS] += 1.0;
    }
    v
}

async fn embed(State(shared): State<Shared>, headers: axum::http::HeaderMap, body: String) -> Response {
    let key = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    shared.keys.lock().expect("lock").push(key.clone());
    if shared.failing.load(Ordering::SeqCst) {
        // As some providers and proxies do, the error echoes the key it was sent.
        let error = serde_json::json!({"error": format!("loading model; Incorrect API key provided: {key}")});
        return (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response();
    }
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "{\"error\":\"not JSON\"}").into_response();
    };
    let texts: Vec<String> = match &json["input"] {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(items) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
        _ => return (StatusCode::BAD_REQUEST, "{\"error\":\"no input\"}").into_response(),
    };
    let refused = shared.refused.lock().expect("lock").clone();
    if !refused.is_empty() && texts.iter().any(|t| t.contains(&refused)) {
        let error = serde_json::json!({"error": {"code": 400, "message": "invalid input: tokenizer failed"}});
        return (StatusCode::BAD_REQUEST, error.to_string()).into_response();
    }
    let max = shared.max_chars.load(Ordering::SeqCst);
    if max > 0 && texts.iter().any(|t| t.chars().count() > max) {
        let error = serde_json::json!({"error": {"code": 400, "type": "exceed_context_size_error",
            "message": "input (610 tokens) is larger than the max context size (512 tokens). skipping"}});
        return (StatusCode::BAD_REQUEST, error.to_string()).into_response();
    }
    shared.models.lock().expect("lock").push(json["model"].as_str().unwrap_or("").to_string());
    shared.texts.lock().expect("lock").extend(texts.iter().cloned());
    // Answered in reverse order, each with its index, as a server may.
    let data: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            let mut v = vector(t);
            let cut = shared.cut_to.load(Ordering::SeqCst);
            if cut > 0 {
                v.truncate(cut);
            }
            serde_json::json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    let reply = serde_json::json!({"object": "list", "data": data, "model": json["model"]});
    ([("content-type", "application/json")], reply.to_string()).into_response()
}
