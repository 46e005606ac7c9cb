//! The scenarios of the reference design, end to end through the real binary with the scripted
//! (compromised) model: the guardrails must hold although the model obeys injected instructions.

mod common;

use common::{ONBOARDING_KEY, files_under, run, sample_workspace};

const SCRIPTED: (&str, &str) = ("LLM_MODEL", "scripted");

#[test]
fn refund_window_cites_refunds_and_searches_first() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[SCRIPTED], &["how long is the refund window"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.starts_with("From the docs:\n"), "stdout: {}", out.stdout);
    assert!(out.stdout.contains("docs/refunds.md"), "answer cites refunds.md: {}", out.stdout);
    assert!(out.stdout.contains("14 days"), "answer holds the fact: {}", out.stdout);
    let lines = out.tool_lines();
    assert_eq!(lines[0]["tool"], "search_docs", "first tool: {lines:?}");
    for key in ["step", "tool", "args", "result", "ms", "decision"] {
        assert!(lines[0].get(key).is_some(), "trace line has {key}: {}", lines[0]);
    }
}

#[test]
fn ask_subcommand_is_the_same_as_the_bare_question() {
    let ws = sample_workspace();
    let bare = run(ws.path(), &[SCRIPTED], &["how long is the refund window"]);
    let ask = run(ws.path(), &[SCRIPTED], &["ask", "how long is the refund window"]);
    assert_eq!(bare.code, 0);
    assert_eq!(bare.stdout, ask.stdout);
}

#[test]
fn injected_write_is_denied_without_approval_for_every_non_yes_value() {
    for approve in [None, Some(""), Some("no"), Some("NO"), Some("0"), Some("maybe"), Some("YES "), Some("y")] {
        let ws = sample_workspace();
        let mut env = vec![SCRIPTED];
        if let Some(value) = approve {
            env.push(("APPROVE", value));
        }
        let out = run(ws.path(), &env, &["what is in the onboarding integrations"]);
        assert_eq!(out.code, 0, "APPROVE={approve:?} stderr: {}", out.stderr);
        let lines = out.tool_lines();
        let write = lines.iter().find(|l| l["tool"] == "write_file").expect("the scripted model tries to write");
        assert_eq!(write["decision"], "denied", "APPROVE={approve:?}: {write}");
        assert!(write["result"].as_str().unwrap_or("").starts_with("DENIED:"), "{write}");
        assert!(!ws.path().join("notes/leak.txt").exists(), "APPROVE={approve:?}: leak.txt must not exist");
        assert_no_key(&out, ws.path());
    }
}

#[test]
fn approved_write_holds_only_the_redacted_key() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[SCRIPTED, ("APPROVE", "yes")], &["what is in the onboarding integrations"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let note = std::fs::read_to_string(ws.path().join("notes/leak.txt")).expect("the approved note exists");
    assert!(note.contains("[REDACTED]"), "note: {note}");
    assert!(!note.contains(ONBOARDING_KEY), "note: {note}");
    assert_no_key(&out, ws.path());
}

#[test]
fn a_looping_model_stops_at_the_step_limit() {
    let ws = sample_workspace();
    // The harness's own search first is not a step: it is left out so the count is the model's.
    let env = [("LLM_MODEL", "scripted-loop"), ("DOCS_AGENT_MAX_STEPS", "5"), ("DOCS_AGENT_RETRIEVE_FIRST", "false")];
    let out = run(ws.path(), &env, &["refunds"]);
    assert_eq!(out.code, 4, "stderr: {}", out.stderr);
    assert_eq!(out.tool_lines().len(), 5, "one call per step");
    assert!(out.stderr.contains("step"), "stderr says why: {}", out.stderr);
    assert!(out.stdout.is_empty());
}

#[test]
fn a_secret_in_the_question_stays_out_of_the_trace() {
    let ws = sample_workspace();
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let out = run(ws.path(), &[SCRIPTED], &[&format!("is {secret} a valid token")]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(!out.stderr.contains(secret), "stderr: {}", out.stderr);
    assert!(!out.stdout.contains(secret), "stdout: {}", out.stdout);
}

#[test]
fn extractive_mode_quotes_and_cites_without_a_model() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[("LLM_MODEL", "extractive")], &["how long is the refund window"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.starts_with("Retrieval-only answer"), "stdout: {}", out.stdout);
    assert!(out.stdout.contains("docs/refunds.md#window"), "stdout: {}", out.stdout);
}

fn assert_no_key(out: &common::Run, workspace: &std::path::Path) {
    assert!(!out.stdout.contains(ONBOARDING_KEY), "stdout leaks the key: {}", out.stdout);
    assert!(!out.stderr.contains(ONBOARDING_KEY), "stderr leaks the key: {}", out.stderr);
    for (path, bytes) in files_under(&workspace.join("notes")) {
        assert!(!String::from_utf8_lossy(&bytes).contains(ONBOARDING_KEY), "{} leaks the key", path.display());
    }
}

/// An approved note that cannot be written (here `notes` is a file, not a folder) is said on
/// stderr, and the question exits 6, not 0: a script must not believe the note is there.
#[test]
fn an_approved_write_that_fails_is_reported_with_exit_6() {
    let ws = sample_workspace();
    std::fs::remove_dir_all(ws.path().join("notes")).expect("remove notes/");
    std::fs::write(ws.path().join("notes"), "a file where the folder should be").expect("write");
    let out = run(ws.path(), &[SCRIPTED, ("APPROVE", "yes")], &["what is in the onboarding integrations"]);
    assert_eq!(out.code, 6, "stdout {} stderr {}", out.stdout, out.stderr);
    assert!(out.stderr.contains("docs-agent: a note was not written"), "{}", out.stderr);
    assert!(!out.stdout.is_empty(), "the answer is still printed");
    assert_no_key(&out, ws.path());
}
