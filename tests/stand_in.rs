//! The Ollama stand-in the compose test runs (`src/bin/ollama_stand_in.rs`), against the real
//! binary: a question pulls the model the server lacks first, with progress (`llm.pull =
//! missing`; `never` makes that exit 3), then is answered from the docs with a verified
//! citation; `docs-agent pull` pulls on its own.

mod common;

use std::process::Child;

/// Starts the stand-in on a free port of 127.0.0.1 with `models` (comma-separated) already
/// pulled; the process and its address.
fn stand_in(models: &str) -> (Child, String) {
    common::stand_in_at("127.0.0.1:0", models)
}

#[test]
fn a_question_pulls_the_missing_model_then_the_stand_in_answers_with_a_verified_citation() {
    let (mut server, address) = stand_in("");
    let ws = common::sample_workspace();
    let base = format!("http://{address}/v1");
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "stand-in:1b")];

    let never = [env[0], env[1], ("LLM_PULL", "never")];
    let missing = common::run(ws.path(), &never, &["how long is the refund window"]);
    let answered = common::run(ws.path(), &env, &["how long is the refund window"]);
    let again = common::run(ws.path(), &env, &["how long is the refund window"]);
    let pulled = common::run(ws.path(), &env, &["pull"]);
    let _ = server.kill();
    let _ = server.wait();

    assert_eq!(missing.code, 3, "llm.pull = never: a model not pulled is an error: {}", missing.stderr);
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    assert!(answered.stderr.contains("lacks stand-in:1b; pulling it first"), "{}", answered.stderr);
    assert!(answered.stderr.contains("stand-in:1b: pulling 0123456789ab: 100%"), "progress: {}", answered.stderr);
    assert!(answered.stdout.contains("14 days"), "{}", answered.stdout);
    assert!(answered.stdout.contains("- docs/refunds.md#window (Refunds > Window)"), "verified: {}", answered.stdout);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("pulling"), "pulled once: {}", again.stderr);
    assert_eq!(pulled.code, 0, "`docs-agent pull` itself: {}", pulled.stderr);
    assert!(pulled.stderr.contains("pulled stand-in:1b"), "{}", pulled.stderr);
}

/// A model named without a tag is the server's `name:latest`: not pulled again before every
/// question (the server lists only the tagged name).
#[test]
fn a_model_named_without_a_tag_is_its_latest() {
    let (mut server, address) = stand_in("llama3.2:latest");
    let ws = common::sample_workspace();
    let base = format!("http://{address}/v1");
    let out = common::run(
        ws.path(),
        &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "llama3.2")],
        &["how long is the refund window"],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("pulling"), "nothing pulled: {}", out.stderr);
    assert!(out.stdout.contains("14 days"), "{}", out.stdout);
}

/// `serve` pulls the model the server lacks in the background (logging its progress), and
/// `/readyz` turns ready once it is there.
#[test]
fn serve_pulls_the_missing_model_and_becomes_ready() {
    let (mut server, address) = stand_in("");
    let (ready, log) = serve_until_pulled(&address, || {});
    let _ = server.kill();
    let _ = server.wait();
    assert!(ready, "/readyz never became ready: {log}");
    assert!(
        log.contains("lacks stand-in:1b; pulling it")
            && log.contains("pulling stand-in:1b: pulling 0123456789ab: 100%"),
        "{log}"
    );
    assert!(log.contains("pulled stand-in:1b"), "{log}");
    assert!(!log.contains("trying again"), "the server was up: {log}");
}

/// A model server that comes up after `serve` (outside compose, nothing orders them): `serve`
/// says it cannot reach it and asks again later, then pulls once it answers.
#[test]
fn serve_asks_again_until_the_model_server_is_up_then_pulls() {
    let address = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        free.local_addr().expect("address").to_string()
    };
    let mut server = None;
    let (ready, log) = serve_until_pulled(&address, || server = Some(common::stand_in_at(&address, "")));
    if let Some((mut server, _)) = server {
        let _ = server.kill();
        let _ = server.wait();
    }
    assert!(log.contains("cannot ask the model server whether it has stand-in:1b"), "{log}");
    assert!(log.contains("trying again in 1 s"), "{log}");
    assert!(ready && log.contains("pulled stand-in:1b"), "pulled once it was up: {log}");
}

/// Starts `serve` against the model server at `address` with `stand-in:1b` configured; once
/// `serve` has logged that it serves and its first check of the model, runs `then`; waits for
/// the pull and a ready `/readyz`. Whether it became ready, and its log.
fn serve_until_pulled(address: &str, then: impl FnOnce()) -> (bool, String) {
    use std::time::Duration;
    let ws = common::sample_workspace();
    let token = "stand-in-serve-token-0123456789";
    common::serve_config(ws.path(), &[("ana", token, &["ask"])], "");
    let base = format!("http://{address}/v1");
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "stand-in:1b")];
    let (mut serve, mut log) = common::spawn_logged(ws.path(), &env, &["serve"]);
    let wait = Duration::from_secs(30);
    let first = log.until("serving on", wait) && log.until("stand-in:1b", wait);
    then();
    let pulled = first && log.until("pulled stand-in:1b", wait);
    let deadline = std::time::Instant::now() + wait;
    let readyz = log.serving_on().map(|url| format!("{url}/readyz"));
    let mut ready = false;
    while pulled && !ready && std::time::Instant::now() < deadline {
        ready = readyz.as_deref().and_then(common::http_status) == Some(200);
        if !ready {
            // a pause between polls, not a timing assumption: the deadline decides
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = serve.kill();
    let _ = serve.wait();
    (ready, log.text())
}
