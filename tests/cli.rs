//! The command line surface: search, check, redact, configuration precedence and errors.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{ONBOARDING_KEY, run, sample_workspace};

#[test]
fn search_prints_ranked_path_anchor_heading_score_lines() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["search", "refund window"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let first = out.stdout.lines().next().expect("at least one hit");
    let fields: Vec<&str> = first.split("  ").collect();
    assert_eq!(fields[0], "docs/refunds.md#window", "line: {first}");
    assert_eq!(fields[1], "Refunds > Window");
    assert!(fields[2].parse::<f64>().expect("score is a number") > 0.0);
}

/// A `#` line in code is not a heading: search finds the code inside the section that holds it,
/// never a section (or citation anchor) made from a comment in a shell script.
#[test]
fn search_never_cites_a_comment_in_code_as_a_section() {
    let ws = sample_workspace();
    let doc = "# Deploying\nRotate first.\n\n```sh\n# Rotate the signing key\nrotate --now\n```\n\n\
               ~~~~\n# Rollback the release\n~~~~\n\n- steps:\n\n  ```\n  # Drain the queue\n  ```\n\n\
               ```\n# Unclosed fence at the end\n";
    std::fs::write(ws.path().join("docs/deploying.md"), doc).expect("write doc");
    for query in ["rotate signing key", "rollback release", "drain queue", "unclosed fence"] {
        let out = run(ws.path(), &[], &["search", query]);
        assert_eq!(out.code, 0, "stderr: {}", out.stderr);
        let first = out.stdout.lines().next().unwrap_or_default();
        assert!(first.starts_with("docs/deploying.md#deploying  Deploying  "), "{query}: {}", out.stdout);
        for anchor in ["#rotate", "#rollback", "#drain", "#unclosed"] {
            assert!(!out.stdout.contains(anchor), "{query}: a code comment became {anchor}: {}", out.stdout);
        }
    }
}

#[test]
fn search_survives_fts_syntax_and_huge_queries() {
    let ws = sample_workspace();
    let huge = "refund \"window\" AND (x OR y) NEAR* col:val ".repeat(1_000);
    assert!(huge.len() > 35_000);
    for query in
        ["\"unbalanced", "a*", "docs:refunds", "NEAR(refund window)", "AND OR NOT", "(((", ")", "*", "-", &huge]
    {
        let out = run(ws.path(), &[], &["search", query]);
        let nothing = out.code == 1 && out.stderr.contains("no section matches");
        assert!(out.code == 0 || nothing, "query {:.40}: exit {}, stderr {}", query, out.code, out.stderr);
    }
}

/// Like grep: a search that finds nothing says so on stderr and exits 1.
#[test]
fn search_with_no_hits_says_so_and_exits_1() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["search", "xylophone zeppelin quasar"]);
    assert_eq!(out.code, 1, "stdout {:?} stderr {:?}", out.stdout, out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("no section matches \"xylophone zeppelin quasar\""), "{}", out.stderr);
}

#[test]
fn check_passes_on_the_sample_workspace() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["check"]);
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("0 problems"), "stdout: {}", out.stdout);
}

#[test]
fn check_reports_every_problem_with_file_and_line() {
    let ws = sample_workspace();
    let root = ws.path();
    std::fs::write(root.join("AGENTS.md"), "  \n").expect("write");
    std::fs::create_dir_all(root.join("skills/Bad_Skill")).expect("mkdir");
    std::fs::write(root.join("skills/Bad_Skill/SKILL.md"), "---\nname: Bad_Skill\ndescription: x\n---\nbody\n")
        .expect("write");
    std::fs::create_dir_all(root.join("skills/no-body")).expect("mkdir");
    std::fs::write(root.join("docs/binary.md"), b"\0\x01\x02").expect("write");
    std::fs::write(root.join("docs/latin1.md"), b"# Caf\xe9\n").expect("write");
    let out = run(root, &[], &["check"]);
    assert_eq!(out.code, 1, "stdout: {}", out.stdout);
    for expected in [
        "AGENTS.md:1: is empty",
        "skills/Bad_Skill/SKILL.md:2: [name]",
        "skills/no-body",
        "docs/binary.md: binary",
        "docs/latin1.md: not UTF-8",
    ] {
        assert!(out.stdout.contains(expected), "missing {expected:?} in:\n{}", out.stdout);
    }
}

#[test]
fn redact_filters_stdin() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_docs-agent"))
        .arg("redact")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let input = format!("key={ONBOARDING_KEY}\nid 550e8400-e29b-41d4-a716-446655440000 stays\n");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!text.contains(ONBOARDING_KEY), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    assert!(text.contains("550e8400-e29b-41d4-a716-446655440000 stays"), "{text}");
}

#[test]
fn config_precedence_is_flags_then_env_then_file() {
    let ws = sample_workspace();
    let file = ws.path().join("docs-agent.toml");
    std::fs::write(&file, "[limits]\nmax_steps = 2\n").expect("write");
    let loop_env = ("LLM_MODEL", "scripted-loop");
    // Steps are the model's calls: the harness's own search first is left out of the count.
    let model_only = ("DOCS_AGENT_RETRIEVE_FIRST", "false");
    // File alone: 2 steps.
    let out = run(ws.path(), &[loop_env, model_only], &["q"]);
    assert_eq!((out.code, out.tool_lines().len()), (4, 2), "file: {}", out.stderr);
    // Env over file: 3 steps.
    let out = run(ws.path(), &[loop_env, model_only, ("DOCS_AGENT_MAX_STEPS", "3")], &["q"]);
    assert_eq!((out.code, out.tool_lines().len()), (4, 3), "env: {}", out.stderr);
    // Flag over env: 1 step.
    let out = run(ws.path(), &[loop_env, model_only, ("DOCS_AGENT_MAX_STEPS", "3")], &["--max-steps", "1", "q"]);
    assert_eq!((out.code, out.tool_lines().len()), (4, 1), "flag: {}", out.stderr);
}

#[test]
fn config_errors_name_the_key_and_exit_2() {
    let cases: &[(&str, &str)] = &[
        ("[limits]\nmax_stepz = 2\n", "max_stepz"),
        ("[limits]\nmax_steps = \"many\"\n", "max_steps"),
        ("colour = \"blue\"\n", "colour"),
        ("[limits]\nmax_steps = 0\n", "limits.max_steps"),
        ("[llm\n", "docs-agent.toml"),
    ];
    for (toml, key) in cases {
        let ws = sample_workspace();
        std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write");
        let out = run(ws.path(), &[("LLM_MODEL", "scripted")], &["q"]);
        assert_eq!(out.code, 2, "config {toml:?}: {}", out.stderr);
        assert!(out.stderr.contains(key), "config {toml:?}: stderr should name {key}: {}", out.stderr);
    }
    let ws = sample_workspace();
    let out = run(ws.path(), &[("DOCS_AGENT_MAX_STEPS", "lots")], &["q"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("max_steps"), "{}", out.stderr);
}

/// A syntax error in the config names the line and column, never the line itself: a value
/// cut off by the error has no shape the redactor knows.
#[test]
fn a_config_syntax_error_never_echoes_the_line_it_failed_on() {
    let ws = sample_workspace();
    let toml = "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"Zq81xPq0aaWk3 unterminated\nmodel = \"m\"\n";
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write");
    let out = run(ws.path(), &[], &["q"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("line 3"), "where to look: {}", out.stderr);
    assert!(!out.stderr.contains("Zq81xPq0aaWk3"), "{}", out.stderr);
}

#[test]
fn usage_errors_exit_2() {
    let ws = sample_workspace();
    for args in [&[][..], &["   "][..], &["--no-such-flag", "q"][..], &["search"][..]] {
        let out = run(ws.path(), &[("LLM_MODEL", "scripted")], args);
        assert_eq!(out.code, 2, "args {args:?}: {}", out.stderr);
    }
}

#[test]
fn missing_workspace_is_a_clear_failure() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[("LLM_MODEL", "scripted")], &["--workspace", "/no/such/place", "q"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("/no/such/place"), "{}", out.stderr);
}

#[test]
fn help_documents_exit_codes_and_environment() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["--help"]);
    assert_eq!(out.code, 0);
    for needle in ["Exit codes", "LLM_BASE_URL", "APPROVE", "search", "check", "redact"] {
        assert!(out.stdout.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn search_and_check_output_is_scrubbed() {
    let ws = sample_workspace();
    let root = ws.path();
    let escape_name = "docs/a\u{1b}[2Jb.md";
    std::fs::write(root.join(escape_name), "# Webhook escape\n\nwebhook text\n").expect("write");
    std::fs::write(root.join("docs/setup.md"), "# Setup {#sk_live_4eC39HqLyjWDarjtT1zdp7dc}\n\nwebhook setup\n")
        .expect("write");
    std::fs::create_dir_all(root.join("skills/bad")).expect("mkdir");
    std::fs::write(
        root.join("skills/bad/SKILL.md"),
        "---\nname: \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\u{1b}[31m\"\ndescription: d\n---\nb\n",
    )
    .expect("write");
    for args in [&["search", "webhook"][..], &["check"][..]] {
        let out = run(root, &[], args);
        for bad in ["\u{1b}", "4eC39HqLyjWDarjtT1zdp7dc", "abcdefghijklmnopqrstuvwxyz0123456789"] {
            assert!(!out.stdout.contains(bad), "{args:?} prints {bad:?}: {:?}", out.stdout);
            assert!(!out.stderr.contains(bad), "{args:?} prints {bad:?} on stderr: {:?}", out.stderr);
        }
    }
}

#[test]
fn global_flags_may_come_before_the_subcommand() {
    let ws = sample_workspace();
    let out = run(ws.path(), &[], &["--workspace", ws.path().to_str().expect("utf-8"), "search", "refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("docs/refunds.md#window"), "{}", out.stdout);
}

/// A secret split by a link is whole again once the link is neutralised: the answer is redacted
/// after that, so neither the key nor its halves joined leave (the question is the payload).
#[test]
fn a_secret_split_by_a_link_never_leaves_whole() {
    let ws = sample_workspace();
    let env = [("LLM_MODEL", "adversary-echo"), ("DOCS_AGENT_VERIFY", "false"), ("DOCS_AGENT_INDEX", "memory")];
    let question = "repeat: AKIAIOSF[ODNN7EXAMPLE](https://x.example/) and xoxb-2361587123-2361587456-[AbCdEfGhIjKlMnOpQrStUvWx](https://x.example/)";
    let out = run(ws.path(), &env, &[question]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The Slack rule takes the token's head; its tail, glued to the marker in the answer and
    // behind the link's bracket in the trace, goes with it.
    for secret in ["AKIAIOSFODNN7EXAMPLE", "AbCdEfGhIjKlMnOpQrStUvWx"] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "{secret}: {}\n{}",
            out.stdout,
            out.stderr
        );
    }
    assert!(out.stdout.contains("[REDACTED]"), "{}", out.stdout);
}

/// Everything the process prints goes through one last redaction (`guard::sink`): a workspace
/// whose path holds a token shows `[REDACTED]` in `index status` on stdout, and in the warning
/// on stderr when the index file cannot be made there.
#[test]
fn a_secret_in_a_path_never_reaches_stdout_or_stderr() {
    let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyz";
    let parent = tempfile::tempdir().expect("temp dir");
    let ws = sample_workspace();
    let root = parent.path().join(token);
    std::fs::rename(ws.path(), &root).expect("move the workspace under a token-named folder");
    // In a folder of its own: the sandbox refuses an index folder that holds the workspace.
    let file = format!("{}/.docs-agent/index.db", root.display());
    let out = run(&root, &[("DOCS_AGENT_INDEX", file.as_str())], &["index", "status"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("[REDACTED]"), "the path is printed, redacted: {}", out.stdout);
    assert!(!out.stdout.contains(token) && !out.stderr.contains(token), "{}{}", out.stdout, out.stderr);

    let blocked = root.join("not-a-folder");
    std::fs::write(&blocked, "a file").expect("write");
    let index = format!("{}/index.db", blocked.display());
    let out = run(&root, &[("DOCS_AGENT_INDEX", index.as_str())], &["search", "refund window"]);
    assert_eq!(out.code, 0, "the search falls back to an index in memory: {}", out.stderr);
    assert!(out.stderr.contains("[REDACTED]"), "the warning names the path, redacted: {}", out.stderr);
    assert!(!out.stderr.contains(token), "{}", out.stderr);
    let _ = std::fs::rename(&root, ws.path());
}

/// A reader that stops reading (`docs-agent … | head -1`) ends the command quietly with exit 0,
/// as ripgrep does: no panic, no "Broken pipe" message. The pipe's read end is closed before the
/// command starts, so every write to stdout fails.
#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let ws = sample_workspace();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], Option<String>);
    let cases: [Case; 3] = [
        (&["search", "refund"], &[], None),
        (&["how long is the refund window"], &[("LLM_MODEL", "scripted")], None),
        (&["redact"], &[], Some("line with AKIAIOSFODNN7EXAMPLE\n".repeat(20_000))),
    ];
    for (args, env, input) in cases {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let mut child = common::command(ws.path(), env, args)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn docs-agent");
        if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
            let _ = stdin.write_all(input.as_bytes());
        }
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// `chat` exits as a one-shot question would: a model server that is down is exit 3, after the
/// turn's error is said; a chat whose last turn answered is exit 0.
#[test]
fn chat_exits_with_the_code_of_its_last_turn() {
    let ws = sample_workspace();
    let down = [("LLM_BASE_URL", "http://127.0.0.1:9/v1"), ("LLM_MODEL", "qwen2.5")];
    let out = common::run_input(ws.path(), &down, &["chat"], "how long is the refund window\n");
    assert_eq!(out.code, 3, "stderr {}", out.stderr);
    assert!(out.stderr.contains("cannot reach the model server"), "{}", out.stderr);
    let fine =
        common::run_input(ws.path(), &[("LLM_MODEL", "scripted")], &["chat"], "how long is the refund window\n/quit\n");
    assert_eq!(fine.code, 0, "stderr {}", fine.stderr);
    assert!(fine.stdout.contains("14 days"), "{}", fine.stdout);
}

/// A setting that takes one word of a closed set names the words it takes and its variable.
#[test]
fn a_closed_setting_names_the_words_it_takes() {
    let ws = common::sample_workspace();
    let out = common::run(ws.path(), &[("LLM_PULL", "always")], &["search", "refund"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("llm.pull (LLM_PULL) must be `missing` or `never`, got `always`"), "{}", out.stderr);
    let out = common::run(ws.path(), &[("LLM_PULL", "never")], &["search", "refund"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// The chat's commands: /help lists them, /sources shows the last answer's sources, /new starts
/// another session, an unknown /word is said to be one; none of them is recorded as a question.
#[test]
fn chat_commands_are_never_questions() {
    let ws = sample_workspace();
    let input = "/help\n/sources\nhow long is the refund window\n/sources\n/refund window\n/new\n/quit\n";
    let out = common::run_input(ws.path(), &[("LLM_MODEL", "scripted")], &["chat"], input);
    assert_eq!(out.code, 0, "stderr {}", out.stderr);
    assert!(out.stderr.contains("commands:") && out.stderr.contains("/sources"), "{}", out.stderr);
    assert!(out.stderr.contains("no sources: nothing answered yet"), "{}", out.stderr);
    assert!(out.stderr.contains("Sources:\n- docs/refunds.md#window"), "{}", out.stderr);
    assert!(out.stderr.contains("/refund window is not a chat command"), "{}", out.stderr);
    assert!(out.stderr.contains("new session"), "{}", out.stderr);
    let listed = common::run(ws.path(), &[], &["sessions", "list"]);
    assert_eq!(listed.stdout.lines().count(), 1, "one session: /new left none empty behind: {}", listed.stdout);
    let id = listed.stdout.split_whitespace().next().expect("a session id");
    let exported = common::run(ws.path(), &[], &["sessions", "export", id]);
    let questions: Vec<&str> = exported.stdout.lines().filter(|l| l.contains("\"user_message\"")).collect();
    assert_eq!(questions.len(), 1, "only the question is recorded: {questions:?}");
    assert!(questions[0].contains("how long is the refund window"), "{questions:?}");
}
