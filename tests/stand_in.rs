//! The Ollama stand-in the compose test runs (`src/bin/ollama_stand_in.rs`), against the real
//! binary: a question pulls the model the server lacks first, with progress (`llm.pull =
//! missing`; `never` makes that exit 3), then is answered from the docs with a verified
//! citation; `docs-agent pull` pulls on its own.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

#[test]
fn a_question_pulls_the_missing_model_then_the_stand_in_answers_with_a_verified_citation() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_ollama-stand-in"))
        .env("OLLAMA_HOST", "127.0.0.1:0")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the stand-in");
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.take().expect("stderr")).read_line(&mut line).expect("its address");
    let address = line.trim().rsplit(' ').next().expect("address").to_string();
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
