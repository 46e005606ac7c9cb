//! `docs-agent pull` against a fake Ollama on 127.0.0.1: progress as it streams, Ollama's errors
//! named, a server without the pull API named as not Ollama.

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::post;
use common::{run, sample_workspace};

/// A fake `/api/pull` answering `status` with `body`; records the request bodies.
fn fake_ollama(status: u16, body: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = Router::new().route(
        "/api/pull",
        post(move |request: String| {
            let record = record.clone();
            async move {
                record.lock().expect("lock").push(request);
                (axum::http::StatusCode::from_u16(status).expect("status"), body)
            }
        }),
    );
    let addr = common::serve_app(app);
    (format!("http://{addr}/v1"), seen)
}

const PROGRESS: &str = "{\"status\":\"pulling manifest\"}\n\
{\"status\":\"pulling 6a0746a1ec1a\",\"digest\":\"sha256:6a07\",\"total\":2000000,\"completed\":1000000}\n\
{\"status\":\"pulling 6a0746a1ec1a\",\"digest\":\"sha256:6a07\",\"total\":2000000,\"completed\":2000000}\n\
{\"status\":\"verifying sha256 digest\"}\n{\"status\":\"success\"}\n";

#[test]
fn pull_reports_progress_and_succeeds() {
    let (base, seen) = fake_ollama(200, PROGRESS);
    let ws = sample_workspace();
    let out = run(ws.path(), &[("LLM_BASE_URL", &base), ("LLM_MODEL", "qwen2.5:1.5b")], &["pull"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    for step in
        ["pulling manifest", "pulling 6a0746a1ec1a: 50% of 2.0 MB", "100% of 2.0 MB", "success", "pulled qwen2.5:1.5b"]
    {
        assert!(out.stderr.contains(step), "{step} missing: {}", out.stderr);
    }
    let request: serde_json::Value =
        serde_json::from_str(seen.lock().expect("lock").first().expect("one request")).expect("JSON request");
    assert_eq!(request["model"], "qwen2.5:1.5b");
}

#[test]
fn pull_names_what_went_wrong() {
    let ws = sample_workspace();
    let cases: &[(u16, &'static str, &str)] = &[
        (
            200,
            "{\"status\":\"pulling manifest\"}\n{\"error\":\"pull model manifest: file does not exist\"}\n",
            "file does not exist; check the name (llm.model, LLM_MODEL)",
        ),
        (200, "{\"status\":\"pulling manifest\"}\n", "ended before `success`"),
        (500, "{\"error\":\"disk full\"}", "could not pull `nope:1b`: HTTP 500 Internal Server Error: disk full"),
        (400, "{\"error\":\"invalid model name\"}", "invalid model name; check the name"),
        (404, "404 page not found", "it is not Ollama"),
    ];
    for (status, body, says) in cases {
        let (base, _) = fake_ollama(*status, body);
        let out = run(ws.path(), &[("LLM_BASE_URL", &base), ("LLM_MODEL", "nope:1b")], &["pull"]);
        assert_eq!(out.code, 3, "{body}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{body}: {}", out.stderr);
    }
    let out = run(ws.path(), &[("LLM_BASE_URL", "http://127.0.0.1:9/v1"), ("LLM_MODEL", "nope:1b")], &["pull"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("ollama serve"), "{}", out.stderr);
    let out = run(ws.path(), &[("LLM_MODEL", "extractive")], &["pull"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("built into docs-agent"), "{}", out.stderr);
}

/// A server that lists models but is not Ollama (no `/api/version`: llama-server, vLLM, a
/// gateway) is never asked to pull a model it does not list under that name: the question goes
/// to it as it is.
#[test]
fn a_server_that_is_not_ollama_is_never_asked_to_pull() {
    let pulls = Arc::new(Mutex::new(0));
    let counted = pulls.clone();
    let app = Router::new()
        .route(
            "/v1/models",
            axum::routing::get(|| async { axum::Json(serde_json::json!({"data": [{"id": "local"}]})) }),
        )
        .route(
            "/api/pull",
            post(move || {
                let counted = counted.clone();
                async move {
                    *counted.lock().expect("lock") += 1;
                    "{\"status\":\"success\"}\n"
                }
            }),
        );
    let addr = common::serve_app(app);
    let ws = sample_workspace();
    let base = format!("http://{addr}/v1");
    let out = run(ws.path(), &[("LLM_BASE_URL", &base), ("LLM_MODEL", "qwen2.5-coder")], &["refund window"]);
    assert_eq!(*pulls.lock().expect("lock"), 0, "never asked to pull: {}", out.stderr);
    assert!(!out.stderr.contains("pulling") && !out.stderr.contains("pull failed"), "{}", out.stderr);
    assert!(out.stderr.contains("chat/completions answered HTTP 404"), "the question went to it: {}", out.stderr);
}
