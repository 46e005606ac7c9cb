//! The Ollama stand-in the compose test runs (`src/bin/ollama_stand_in.rs`), against the real
//! binary: a model not pulled is refused, `docs-agent pull` pulls it with progress, and a
//! question is then answered from the docs with a verified citation.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

#[test]
fn the_stand_in_is_pulled_then_answers_with_a_verified_citation() {
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

    let missing = common::run(ws.path(), &env, &["how long is the refund window"]);
    let pulled = common::run(ws.path(), &env, &["pull"]);
    let answered = common::run(ws.path(), &env, &["how long is the refund window"]);
    let _ = server.kill();
    let _ = server.wait();

    assert_eq!(missing.code, 3, "a model not pulled: {}", missing.stderr);
    assert_eq!(pulled.code, 0, "{}", pulled.stderr);
    assert!(pulled.stderr.contains("stand-in:1b") && pulled.stderr.contains("100%"), "{}", pulled.stderr);
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    assert!(answered.stdout.contains("14 days"), "{}", answered.stdout);
    assert!(answered.stdout.contains("- docs/refunds.md#window (Refunds > Window)"), "verified: {}", answered.stdout);
}
