//! The Ollama stand-in the compose test runs (`src/bin/ollama_stand_in.rs`), against the real
//! binary: a question pulls the model the server lacks first, with progress (`llm.pull =
//! missing`; `never` makes that exit 3), then is answered from the docs with a verified
//! citation; `docs-agent pull` pulls on its own.

mod common;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// Starts the stand-in on a free port of 127.0.0.1 with `models` (comma-separated) already
/// pulled; the process and its address.
fn stand_in(models: &str) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_ollama-stand-in"))
        .env("OLLAMA_HOST", "127.0.0.1:0")
        .env("STAND_IN_MODELS", models)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the stand-in");
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.take().expect("stderr")).read_line(&mut line).expect("its address");
    let address = line.trim().rsplit(' ').next().expect("address").to_string();
    (server, address)
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
    let ws = common::sample_workspace();
    let token = "stand-in-serve-token-0123456789";
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\n\n[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        docs_agent::serve::auth::hash(token)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("config");
    let base = format!("http://{address}/v1");
    let mut serve =
        common::command(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "stand-in:1b")], &["serve"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve");
    // Its log, read on a thread as it comes.
    let (lines, log) = std::sync::mpsc::channel::<String>();
    let stderr = serve.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut url = None;
    let mut ready = false;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let pulled = |seen: &[String]| seen.iter().any(|l| l.contains("pulled stand-in:1b"));
    while std::time::Instant::now() < deadline && !(ready && pulled(&seen)) {
        if let Ok(line) = log.recv_timeout(std::time::Duration::from_millis(200)) {
            if let Some(rest) = line.split("serving on ").nth(1) {
                url = rest.split_whitespace().next().map(str::to_string);
            }
            seen.push(line);
        }
        if let (Some(url), false) = (&url, ready) {
            ready = common::http_status(&format!("{url}/readyz")) == Some(200);
        }
    }
    let _ = serve.kill();
    let _ = serve.wait();
    let _ = server.kill();
    let _ = server.wait();
    let log = seen.join("\n");
    assert!(ready, "/readyz never became ready: {log}");
    assert!(
        log.contains("lacks stand-in:1b; pulling it")
            && log.contains("pulling stand-in:1b: pulling 0123456789ab: 100%"),
        "{log}"
    );
    assert!(log.contains("pulled stand-in:1b"), "{log}");
}
