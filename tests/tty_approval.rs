//! The approval prompt on a real terminal: `script` gives the binary a pseudo-terminal, so the
//! approver asks `allow? [y/N]`, showing the exact path and the redacted content.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{ONBOARDING_KEY, sample_workspace};

/// Runs `docs-agent ARGS` (scripted model) on a pseudo-terminal and types `typed` at it; returns
/// the screen.
fn on_terminal_with(workspace: &std::path::Path, args: &str, env: &[(&str, &std::path::Path)], typed: &str) -> String {
    let binary = env!("CARGO_BIN_EXE_docs-agent");
    let mut command = Command::new("script");
    command
        .args(["-qec", &format!("{binary} {args}"), "/dev/null"])
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LLM_MODEL", "scripted")
        .env("WORKSPACE", workspace)
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("run `script` (util-linux)");
    child.stdin.take().expect("stdin").write_all(typed.as_bytes()).expect("type the answer");
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one-shot question on a pseudo-terminal.
fn on_terminal(workspace: &std::path::Path, typed: &str) -> String {
    on_terminal_with(workspace, "'what is in the onboarding integrations'", &[], typed)
}

#[test]
fn yes_at_the_prompt_writes_the_redacted_note() {
    let ws = sample_workspace();
    let screen = on_terminal(ws.path(), "y\n");
    assert!(screen.contains("allow? [y/N]"), "{screen}");
    assert!(screen.contains("notes/leak.txt"), "prompt shows the path: {screen}");
    assert!(!screen.contains(ONBOARDING_KEY), "prompt shows redacted content: {screen}");
    let note = std::fs::read_to_string(ws.path().join("notes/leak.txt")).expect("note written after yes");
    assert!(note.contains("[REDACTED]") && !note.contains(ONBOARDING_KEY), "{note}");
}

#[test]
fn anything_else_at_the_prompt_denies() {
    for typed in ["n\n", "\n", "sure\n"] {
        let ws = sample_workspace();
        let screen = on_terminal(ws.path(), typed);
        assert!(screen.contains("allow? [y/N]"), "{screen}");
        assert!(screen.contains("declined"), "typed {typed:?}: {screen}");
        assert!(!ws.path().join("notes/leak.txt").exists(), "typed {typed:?}");
    }
}

#[test]
fn chat_on_a_terminal_asks_and_a_session_grant_covers_the_next_write() {
    let ws = sample_workspace();
    let log = ws.path().join("data/sessions.db");
    let question = "what is in the onboarding integrations";
    let typed = format!("{question}\ns\n{question}\n/quit\n");
    let screen = on_terminal_with(ws.path(), "chat", &[("DOCS_AGENT_SESSION_LOG", &log)], &typed);
    assert_eq!(screen.matches("allow? [y] once").count(), 1, "asked once, the grant covers the second: {screen}");
    assert!(screen.contains("every write under notes/ in this session"), "{screen}");
    assert!(!screen.contains(ONBOARDING_KEY), "{screen}");
    assert_eq!(screen.matches("write_file \"notes/leak.txt\": OK: ").count(), 2, "both writes allowed: {screen}");
    assert!(ws.path().join("notes/leak.txt").exists());
}

/// Without a terminal (stdin a pipe, as in CI or a script) and without `APPROVE=yes`, nobody
/// can be asked: the write is refused, said, and nothing is written.
#[test]
fn without_a_terminal_a_write_is_refused() {
    let ws = sample_workspace();
    let out = Command::new(env!("CARGO_BIN_EXE_docs-agent"))
        .arg("what is in the onboarding integrations")
        .current_dir(ws.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LLM_MODEL", "scripted")
        .env("WORKSPACE", ws.path())
        .stdin(Stdio::piped())
        .output()
        .expect("run docs-agent");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("APPROVE is not `yes` and there is no terminal to ask"), "{said}");
    assert!(!said.contains("allow? [y/N]"), "{said}");
    assert!(!ws.path().join("notes/leak.txt").exists(), "{said}");
}
