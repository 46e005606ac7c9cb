//! A plain folder of documents is a workspace (`--docs DIR`, `DOCS_AGENT_DOCS`): answered from
//! without AGENTS.md, skills or notes; a workspace with no documents is a usage error (exit 2)
//! that says what to pass, never "no section matched".

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Run, sample_workspace};

/// A folder of the person's own docs, written here: nothing of the sample in it.
fn my_docs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("webhooks.md"),
        "# Webhooks\n\nEvents are sent as signed POST requests.\n\n## Retries\n\n\
         A failed webhook delivery is retried 7 times over 24 hours, with exponential backoff.\n",
    )
    .expect("write doc");
    std::fs::create_dir_all(dir.path().join("guides")).expect("mkdir");
    std::fs::write(dir.path().join("guides/keys.md"), "# API keys\n\nRotate API keys every 90 days.\n")
        .expect("write doc");
    dir
}

/// `docs-agent ARGS` run in `cwd` with only `env` (no WORKSPACE: a person who never heard of one).
fn run_in(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(cwd).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    common::finished(command.stdin(Stdio::null()).output().expect("run docs-agent"))
}

#[test]
fn a_docs_folder_alone_is_answered_from_with_its_citation() {
    let docs = my_docs();
    let cwd = tempfile::tempdir().expect("temp dir");
    let folder = docs.path().to_str().expect("utf-8 path");
    let by_flag = run_in(cwd.path(), &[("LLM_MODEL", "extractive")], &["--docs", folder, "how many retries"]);
    let by_env = run_in(cwd.path(), &[("LLM_MODEL", "extractive"), ("DOCS_AGENT_DOCS", folder)], &["how many retries"]);
    for out in [by_flag, by_env] {
        assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
        assert!(out.stdout.contains("retried 7 times"), "the answer quotes the doc: {}", out.stdout);
        assert!(out.stdout.contains("docs/webhooks.md#retries"), "the answer cites its section: {}", out.stdout);
    }
    // Nested folders are read too.
    let out = run_in(cwd.path(), &[], &["--docs", folder, "search", "rotate api keys"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("docs/guides/keys.md#api-keys"), "{}", out.stdout);
}

/// With a workspace named too, the docs folder replaces only its docs/: the workspace's rules
/// stay, its own docs are not searched.
#[test]
fn a_docs_folder_with_a_workspace_replaces_only_its_docs() {
    let ws = sample_workspace();
    let docs = my_docs();
    let folder = docs.path().to_str().expect("utf-8 path");
    let workspace = ws.path().to_str().expect("utf-8 path");
    let out = run_in(ws.path(), &[], &["--workspace", workspace, "--docs", folder, "search", "refund window"]);
    assert!(!out.stdout.contains("refunds.md"), "the workspace's own docs are not searched: {}", out.stdout);
    let out = run_in(ws.path(), &[], &["--workspace", workspace, "--docs", folder, "search", "webhook retries"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("docs/webhooks.md#retries"), "{}", out.stdout);
    let out = run_in(ws.path(), &[], &["--workspace", workspace, "--docs", folder, "check"]);
    assert!(!out.stdout.contains("info: AGENTS.md"), "the workspace's AGENTS.md is read: {}", out.stdout);
}

/// `check` on a docs folder: AGENTS.md and notes/ are optional, said as info, and it passes.
#[test]
fn check_on_a_docs_folder_passes_and_says_what_is_optional() {
    let docs = my_docs();
    let cwd = tempfile::tempdir().expect("temp dir");
    let out = run_in(cwd.path(), &[], &["--docs", docs.path().to_str().expect("utf-8 path"), "check"]);
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("info: AGENTS.md: none"), "{}", out.stdout);
    assert!(out.stdout.contains("info: notes: none"), "{}", out.stdout);
    assert!(out.stdout.contains("2 docs") && out.stdout.contains("0 problems"), "{}", out.stdout);
}

/// No documents: exit 2 with what to pass, for a question, a chat and a search alike, never
/// "no section matched".
#[test]
fn no_documents_is_a_usage_error_that_says_what_to_pass() {
    let cwd = tempfile::tempdir().expect("temp dir");
    let empty = tempfile::tempdir().expect("temp dir");
    std::fs::write(empty.path().join("notes.docx"), b"PK\x03\x04").expect("write");
    let empty_path = empty.path().to_str().expect("utf-8 path");
    // The docs folder itself passed as the workspace (a mistake the README's old wording invited).
    let docs = my_docs();
    let docs_path = docs.path().to_str().expect("utf-8 path");
    let extractive = [("LLM_MODEL", "extractive")];
    for (args, names, hint) in [
        (vec!["--docs", empty_path, "how many retries"], empty_path, "check"),
        (vec!["--docs", empty_path, "search", "retries"], empty_path, "check"),
        (vec!["--workspace", docs_path, "how many retries"], docs_path, "--docs DIR"),
        (vec!["--workspace", docs_path, "chat"], docs_path, "--docs DIR"),
    ] {
        let out = run_in(cwd.path(), &extractive, &args);
        assert_eq!(out.code, 2, "{args:?}: stdout {}\nstderr {}", out.stdout, out.stderr);
        assert!(out.stderr.contains(names) && out.stderr.contains(hint), "{args:?}: {}", out.stderr);
        assert!(!out.stdout.contains("matched"), "{args:?}: {}", out.stdout);
    }
}

/// The workspace's own docs/ given as the docs folder, by any path (compose mounts the
/// sample's at /docs unless DOCS_DIR names another), is that workspace, read whole: its
/// AGENTS.md and skills apply. An empty WORKSPACE names none.
#[test]
fn the_workspaces_own_docs_folder_is_the_workspace_read_whole() {
    let ws = sample_workspace();
    let alias = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(ws.path().join("docs"), alias.path().join("docs-alias")).expect("link");
    let workspace = ws.path().to_str().expect("utf-8 path");
    let alias_path = alias.path().join("docs-alias");
    let by_alias = alias_path.to_str().expect("utf-8 path");
    let out = run_in(ws.path(), &[("WORKSPACE", workspace), ("DOCS_AGENT_DOCS", by_alias)], &["check"]);
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("info: AGENTS.md"), "its AGENTS.md is read: {}", out.stdout);
    assert!(out.stdout.contains("2 skills valid"), "its skills are read: {}", out.stdout);
    // No workspace named (WORKSPACE empty), run beside the sample as ./workspace.
    let beside = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(ws.path(), beside.path().join("workspace")).expect("link");
    let out = run_in(beside.path(), &[("WORKSPACE", ""), ("DOCS_AGENT_DOCS", by_alias)], &["check"]);
    assert!(out.stdout.contains("2 skills valid"), "the sample workspace, read whole: {}", out.stdout);
    // Another folder, no workspace named: read alone, the sample's rules do not apply.
    let docs = my_docs();
    let out = run_in(
        beside.path(),
        &[("WORKSPACE", ""), ("DOCS_AGENT_DOCS", docs.path().to_str().expect("utf-8 path"))],
        &["check"],
    );
    assert!(out.stdout.contains("info: AGENTS.md: none") && out.stdout.contains("0 skills valid"), "{}", out.stdout);
}

/// A docs folder may not overlap where things are written: the workspace's notes/ (notes the
/// model writes would become documents it cites), or a data folder (an index or a log in it).
#[test]
fn a_docs_folder_that_overlaps_what_is_written_is_refused() {
    let ws = sample_workspace();
    let workspace = ws.path().to_str().expect("utf-8 path");
    let notes = ws.path().join("notes");
    std::fs::write(notes.join("note.md"), "# A note\n\nA note.\n").expect("write");
    // The state elsewhere, so only the notes are in the way.
    let home = tempfile::tempdir().expect("home");
    let extractive = [("LLM_MODEL", "extractive"), ("HOME", home.path().to_str().expect("utf-8 path"))];
    for docs in [notes.to_str().expect("utf-8 path"), workspace] {
        let out = run_in(ws.path(), &extractive, &["--workspace", workspace, "--docs", docs, "a note"]);
        assert_eq!(out.code, 2, "{docs}: {}", out.stderr);
        assert!(out.stderr.contains("notes/"), "{docs}: {}", out.stderr);
    }
    let mine = my_docs();
    let inside = mine.path().join(".state/sessions.db");
    let env = [("LLM_MODEL", "extractive"), ("DOCS_AGENT_SESSION_LOG", inside.to_str().expect("utf-8 path"))];
    let out = run_in(ws.path(), &env, &["--docs", mine.path().to_str().expect("utf-8 path"), "chat"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is in the docs folder"), "{}", out.stderr);
    assert!(!mine.path().join(".state").exists(), "refused before anything is made");
}

/// With no language model (`LLM_MODEL=extractive`), a folder of one document is answered with
/// its passage quoted under the label that says no model was used, on every path (the command
/// line, HTTP, MCP): never as a model's answer the harness replaced, which no model wrote.
#[tokio::test]
async fn the_extractive_answer_on_a_folder_of_one_document_says_no_model_was_used() {
    let docs = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        docs.path().join("guide.md"),
        "# Widget guide\n\n## Charging\n\nCharge the widget for 2 hours before first use. A full charge lasts about \
         9 hours.\n\n## Cleaning\n\nWipe the widget with a dry cloth.\n",
    )
    .expect("write doc");
    let (cwd, state) = (tempfile::tempdir().expect("temp dir"), tempfile::tempdir().expect("temp dir"));
    let (folder, state_dir) = (docs.path().to_str().expect("utf-8"), state.path().to_str().expect("utf-8"));
    let env = [
        ("WORKSPACE", ""),
        ("DOCS_AGENT_DOCS", folder),
        ("DOCS_AGENT_STATE_DIR", state_dir),
        ("LLM_MODEL", "extractive"),
    ];
    let question = "how long does a full charge last";
    let header = docs_agent::model::builtin::EXTRACTIVE_HEADER;
    let labelled = |answer: &str, path: &str| {
        assert!(answer.starts_with(header), "{path}: the answer is not labelled as extractive: {answer}");
        assert!(answer.contains("about 9 hours") && answer.contains("docs/guide.md#charging"), "{path}: {answer}");
        assert!(!answer.contains("did not cite"), "{path}: called a model's answer: {answer}");
    };

    let out = common::run(cwd.path(), &env, &[question]);
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    labelled(&out.stdout, "the command line");
    assert!(!out.stderr.contains("\"replaced\""), "the trace says a model's answer was replaced: {}", out.stderr);

    let mut mcp = common::mcp::McpChild::start(cwd.path(), &env);
    let asked = mcp.call("ask", serde_json::json!({"question": question}));
    labelled(&common::mcp::text(&asked), "MCP");

    let token = "extractive-asker-0123456789";
    common::serve_config(cwd.path(), &[("ana", token, &["ask"])], "");
    let (mut child, url, _log) = common::spawn_serve_logged(cwd.path(), &env);
    let (_, reply) = common::Api::new(&url, token).post("/v1/ask", serde_json::json!({"question": question})).await;
    let _ = child.kill();
    labelled(reply["answer"].as_str().unwrap_or_default(), "HTTP");
}
