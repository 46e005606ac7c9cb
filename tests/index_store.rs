//! The index file: built by the first question, updated incrementally by the next ones, never
//! a wrong answer from a stale, foreign or broken file; `docs-agent index status|rebuild|verify`.

mod common;

use std::path::Path;

use common::{run, sample_workspace};

/// The first line of `search QUERY`, empty when nothing matches (exit 1, said on stderr).
fn top(ws: &Path, env: &[(&str, &str)], query: &str) -> String {
    let out = run(ws, env, &["search", query]);
    if out.code == 1 && out.stderr.contains("no section matches") {
        return String::new();
    }
    assert_eq!(out.code, 0, "{query}: {}", out.stderr);
    out.stdout.lines().next().unwrap_or_default().to_string()
}

/// The extractive (no model) answer to `question`: it quotes the best sections.
fn quote(ws: &Path, env: &[(&str, &str)], question: &str) -> String {
    let mut env = env.to_vec();
    env.push(("LLM_MODEL", "extractive"));
    let out = run(ws, &env, &[question]);
    assert_eq!(out.code, 0, "{question}: {}", out.stderr);
    out.stdout
}

/// Sets every doc's modification time a minute back: a time that fresh is not trusted by an
/// update (the file may change again within the same tick), and the tests compare counts.
fn age(ws: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for entry in std::fs::read_dir(ws.join("docs")).expect("docs") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::File::options().write(true).open(&path).and_then(|f| f.set_modified(old)).expect("age");
        }
    }
}

fn status(ws: &Path, env: &[(&str, &str)]) -> String {
    let out = run(ws, env, &["index", "status"]);
    assert_eq!(out.code, 0, "status: {}", out.stderr);
    out.stdout
}

#[test]
fn the_first_question_builds_the_file_and_later_ones_see_every_change() {
    let ws = sample_workspace();
    let root = ws.path();
    age(root);
    let file = root.join(".docs-agent/index.db");
    assert!(status(root, &[]).contains("not built yet"));
    assert!(quote(root, &[], "how long is the refund window").contains("14 days"));
    assert!(file.exists(), "the index file is beside the session log");
    let first = status(root, &[]);
    assert!(first.contains("generation: 1 ") && first.contains("out of date: 0 docs"), "{first}");

    // An edit: the next question reads the new text, and only that file was read again.
    let refunds = root.join("docs/refunds.md");
    let text = std::fs::read_to_string(&refunds).expect("read refunds");
    std::fs::write(&refunds, text.replace("14 days", "45 days")).expect("edit");
    assert!(status(root, &[]).contains("out of date: 1 docs new or changed, 0 gone"));
    let answer = quote(root, &[], "how long is the refund window");
    assert!(answer.contains("45 days") && !answer.contains("14 days"), "{answer}");
    assert!(status(root, &[]).contains("generation: 2 "));

    // Added, renamed and deleted documents.
    std::fs::write(root.join("docs/zebra.md"), "# Zebra crossings\n\nA quagga policy applies.\n").expect("add");
    assert!(top(root, &[], "quagga policy").starts_with("docs/zebra.md#zebra-crossings"));
    std::fs::rename(root.join("docs/zebra.md"), root.join("docs/okapi.md")).expect("rename");
    assert!(top(root, &[], "quagga policy").starts_with("docs/okapi.md#zebra-crossings"));
    std::fs::remove_file(root.join("docs/okapi.md")).expect("delete");
    assert_eq!(top(root, &[], "quagga policy"), "", "a deleted doc is never found");

    // Same content written again (new time): nothing is chunked, the generation stays.
    let before = status(root, &[]);
    std::fs::write(root.join("docs/disputes.md"), std::fs::read(root.join("docs/disputes.md")).expect("read"))
        .expect("touch");
    top(root, &[], "refund");
    let after = status(root, &[]);
    let generation =
        |s: &str| s.lines().find(|l| l.starts_with("generation:")).map(|l| l.split(' ').nth(1).map(str::to_string));
    assert_eq!(generation(&before), generation(&after), "{before}\n{after}");
    assert!(after.contains("out of date: 0 docs"), "{after}");
}

#[test]
fn a_broken_or_foreign_file_is_rebuilt_and_never_answers() {
    let ws = sample_workspace();
    let root = ws.path();
    let shared = root.join(".docs-agent/shared-index.db");
    let env = [("DOCS_AGENT_INDEX", shared.to_str().expect("utf-8 path"))];
    assert!(quote(root, &env, "how long is the refund window").contains("14 days"));

    // The same file for another workspace: rebuilt for it, so nothing of the first answers.
    let other = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(other.path().join("docs")).expect("docs");
    std::fs::write(other.path().join("docs/only.md"), "# Only\n\nThe capybara rule.\n").expect("doc");
    assert!(top(other.path(), &env, "capybara").starts_with("docs/only.md#only"));
    assert_eq!(top(other.path(), &env, "refund window"), "", "no row of the other workspace");
    assert!(quote(root, &env, "how long is the refund window").contains("14 days"));

    // Garbage in the file: rebuilt, and the answer is right.
    std::fs::write(&shared, b"this is not a database at all, not even close to one......").expect("corrupt");
    assert!(quote(root, &env, "how long is the refund window").contains("14 days"));
    assert!(status(root, &env).contains("generation: 1 "), "rebuilt from scratch");
}

#[test]
fn verify_finds_what_size_and_time_hide_and_rebuild_mends_it() {
    let ws = sample_workspace();
    let root = ws.path();
    assert_eq!(top(root, &[], "refund window").split("  ").next(), Some("docs/refunds.md#window"));
    let ok = run(root, &[], &["index", "verify"]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    assert!(ok.stdout.contains(" 0 problems"), "{}", ok.stdout);

    // Same size, same modification time, other content: updates trust size and time, verify does not.
    let refunds = root.join("docs/refunds.md");
    let modified = std::fs::metadata(&refunds).and_then(|m| m.modified()).expect("mtime");
    let text = std::fs::read_to_string(&refunds).expect("read");
    std::fs::write(&refunds, text.replace("14 days", "41 days")).expect("same size");
    let file = std::fs::File::options().write(true).open(&refunds).expect("open");
    file.set_modified(modified).expect("set mtime back");
    let bad = run(root, &[], &["index", "verify"]);
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(bad.stdout.contains("docs/refunds.md: the index holds an older version"), "{}", bad.stdout);

    let rebuilt = run(root, &[], &["index", "rebuild"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert!(rebuilt.stdout.starts_with("rebuilt ") && rebuilt.stdout.contains(" docs, "), "{}", rebuilt.stdout);
    assert_eq!(run(root, &[], &["index", "verify"]).code, 0);
    assert!(quote(root, &[], "how long is the refund window").contains("41 days"));
}

#[test]
fn an_unusable_file_falls_back_to_memory_and_memory_writes_nothing() {
    let ws = sample_workspace();
    let root = ws.path();
    // A path under a regular file can never be created.
    std::fs::write(root.join("blocker"), "x").expect("write");
    let out = run(root, &[("DOCS_AGENT_INDEX", "blocker/index.db")], &["search", "refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("docs/refunds.md#window"), "{}", out.stdout);
    assert!(out.stderr.contains("blocker") && out.stderr.contains("built in memory"), "{}", out.stderr);

    let out = run(root, &[("DOCS_AGENT_INDEX", "memory")], &["search", "refund window"]);
    assert!(out.stdout.starts_with("docs/refunds.md#window"), "{}", out.stdout);
    assert!(!root.join(".docs-agent/index.db").exists(), "memory writes no file");
    let status = run(root, &[("DOCS_AGENT_INDEX", "memory")], &["index", "status"]);
    assert_eq!(status.code, 2, "{}", status.stdout);
    assert!(status.stderr.contains("index.path is `memory`"), "{}", status.stderr);
}

/// `index.max_total_bytes` bounds the text of one docs folder whatever it holds, in an index
/// built in memory and in the index file, on the first build and on every update: a document
/// that would take the total over it is left out with a warning naming the setting, and the
/// documents after it are still read. A PDF counts by its text, not its size on disk.
#[test]
fn the_docs_text_is_capped_as_a_whole_in_memory_and_in_the_file() {
    for store in ["memory", ""] {
        let ws = sample_workspace();
        let root = ws.path();
        let docs = root.join("docs");
        std::fs::remove_dir_all(&docs).expect("the sample's docs go");
        std::fs::create_dir(&docs).expect("docs");
        let doc = |word: &str, bytes: usize| {
            let line = format!("The {word} setting keeps its value.\n");
            format!("# {word}\n\n{}", line.repeat(bytes / line.len()))
        };
        std::fs::write(docs.join("a-alpha.md"), doc("alpha", 3000)).expect("write");
        std::fs::write(docs.join("b-bravo.md"), doc("bravo", 4000)).expect("write");
        std::fs::write(docs.join("c-charlie.md"), doc("charlie", 500)).expect("write");
        // A few kB on disk, 64 KiB of text once read.
        let bomb = docs_agent::pdf::fixtures::text_bomb(64);
        assert!(bomb.len() < 5000, "{} bytes", bomb.len());
        std::fs::write(docs.join("d-bomb.pdf"), bomb).expect("write");
        let config = format!("[index]\npath = \"{store}\"\nmax_total_bytes = 5000\n");
        std::fs::write(root.join("docs-agent.toml"), config).expect("config");
        age(root);

        let over = |path: &str| format!("{path}: the docs' text would be over index.max_total_bytes (5000 bytes)");
        let out = run(root, &[], &["search", "charlie setting"]);
        assert_eq!(out.code, 0, "{store}: {}", out.stderr);
        assert!(out.stdout.starts_with("docs/c-charlie.md"), "{store}: the ones after it are read: {}", out.stdout);
        let out = run(root, &[], &["check"]);
        let said = format!("{}{}", out.stdout, out.stderr);
        for left_out in ["docs/b-bravo.md", "docs/d-bomb.pdf"] {
            assert!(said.contains(&over(left_out)), "{store}: {said}");
        }
        assert!(!said.contains(&over("docs/a-alpha.md")), "{store}: {said}");
        assert_eq!(top(root, &[], "bravo"), "", "{store}: a document left out is not searched");
        assert!(top(root, &[], "alpha setting").starts_with("docs/a-alpha.md"), "{store}");

        // An update: with alpha gone there is room, and bravo is read again once it changes.
        std::fs::remove_file(docs.join("a-alpha.md")).expect("remove");
        std::fs::write(docs.join("b-bravo.md"), doc("bravo", 4100)).expect("write");
        age(root);
        assert!(top(root, &[], "bravo setting").starts_with("docs/b-bravo.md"), "{store}");
        // And a new one that does not fit is left out, the others kept (and counted, unread).
        let echo = docs.join("e-echo.md");
        std::fs::write(&echo, doc("echo", 2000)).expect("write");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options().write(true).open(&echo).and_then(|f| f.set_modified(old)).expect("age");
        let out = run(root, &[], &["search", "echo setting"]);
        assert!(out.stderr.contains(&over("docs/e-echo.md")), "{store}: {}", out.stderr);
        assert!(!out.stdout.contains("docs/e-echo.md"), "{store}: {}", out.stdout);
        assert!(top(root, &[], "bravo setting").starts_with("docs/b-bravo.md"), "{store}");
        if store.is_empty() {
            let out = run(root, &[], &["index", "verify"]);
            assert_eq!(out.code, 0, "a document left out is no problem for verify: {}{}", out.stdout, out.stderr);
        }
    }
}
