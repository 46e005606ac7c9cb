//! What the CLI shows while a turn runs: the answer as it is written (a guarded paragraph at a
//! time) and a progress line, reconciled with what the harness finally answers. The fake model
//! server on 127.0.0.1 streams its replies; `--stream always` turns the view on for piped output,
//! and `script` gives the binary a real pseudo-terminal for `auto`.

mod common;
mod fake;

use std::process::{Command, Stdio};

use common::{run, run_input, sample_workspace};
use fake::{Canned, FakeServer};

const SECRET: &str = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
const ANSWER: &str = "Refunds are possible within 14 days [docs/refunds.md#window].";

/// Runs `docs-agent --stream WHEN QUESTION` against a fake model giving `replies` in order.
fn ask(replies: Vec<Canned>, when: &str) -> common::Run {
    let server = FakeServer::start(replies);
    let ws = sample_workspace();
    let base = server.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")];
    run(ws.path(), &env, &["--stream", when, "how long is the refund window"])
}

/// A two-paragraph answer streamed in pieces, with a secret split across two of them.
fn two_paragraphs() -> Canned {
    Canned::streamed(
        &[
            "Refunds are possible ",
            "within 14 days of the first payment.\n",
            "\nThe key sk_live_4eC39Hq",
            "LyjWDarjtT1zdp7dc is never needed.\n\n",
            "Ask within the window ",
            "[docs/refunds.md#window].",
        ],
        false,
    )
}

#[test]
fn the_answer_streams_guarded_and_is_printed_once_the_same_as_piped() {
    let streamed = ask(vec![two_paragraphs()], "always");
    let plain = ask(vec![two_paragraphs()], "never");
    assert_eq!((streamed.code, plain.code), (0, 0), "{}\n{}", streamed.stderr, plain.stderr);
    assert_eq!(streamed.stdout, plain.stdout, "streaming changes when text appears, never what it says");
    let out = &streamed.stdout;
    assert_eq!(out.matches("Refunds are possible within 14 days").count(), 1, "{out}");
    assert!(!out.contains(SECRET) && !out.contains("LyjWDarjtT1zdp7dc") && out.contains("[REDACTED]"), "{out}");
    assert!(
        out.ends_with("[docs/refunds.md#window].\n\nSources:\n- docs/refunds.md#window (Refunds > Window)\n"),
        "{out}"
    );

    // The progress line: what the model reads, then what it writes, each erased in turn.
    let err = &streamed.stderr;
    assert!(err.contains("step 1: the model reads its prompt (about "), "{err}");
    assert!(err.contains("step 1: the model writes... "), "{err}");
    assert!(err.contains("step 0: searching the docs"), "{err}");
    assert!(err.contains("\r\x1b[2K"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    // Piped (and `never`), stderr is the trace alone: every line is JSON.
    assert!(!plain.stderr.contains('\x1b'), "{}", plain.stderr);
    assert!(plain.stderr.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()), "{}", plain.stderr);
}

#[test]
fn a_draft_the_harness_sends_back_is_marked_and_the_checked_answer_follows() {
    // The first reply cites nothing: the harness sends it back, and the second one answers.
    let unverified = Canned::streamed(&["Refunds take 30 days.\n\n", "Trust me on this."], false);
    let replies = vec![unverified, Canned::streamed(&[ANSWER], false)];
    let streamed = ask(replies.clone(), "always");
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    let out = &streamed.stdout;
    assert!(out.starts_with("Refunds take 30 days.\n\n"), "the first paragraph was shown as written: {out}");
    assert!(!out.contains("Trust me"), "a reply's last paragraph waits for the harness's check: {out}");
    assert!(out.contains(&format!("{ANSWER}\n\nSources:\n- docs/refunds.md#window")), "{out}");
    let err = &streamed.stderr;
    assert!(
        err.contains("(the text above is not the answer: the harness could not verify its citations"),
        "the withdrawn draft is marked: {err}"
    );

    // Piped, only the checked answer is printed.
    let plain = ask(replies, "auto");
    assert!(!plain.stdout.contains("30 days") && plain.stdout.starts_with(ANSWER), "{}", plain.stdout);
}

#[test]
fn an_answer_the_harness_replaces_is_printed_whole_under_a_note() {
    // Two replies without a citation: the harness answers with the docs' own words instead.
    let replies = vec![Canned::streamed(&["Refunds take 30 days.\n\n", "Trust me."], false)];
    let out = ask(replies, "always");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let retrieval_only = out.stdout.find("Retrieval-only answer").expect("the fallback answer is printed");
    assert!(out.stdout[..retrieval_only].contains("Refunds take 30 days."), "{}", out.stdout);
    assert!(out.stdout[retrieval_only..].contains("docs/refunds.md#window"), "{}", out.stdout);
    // The note says what happened: the draft could not be verified, the evidence is quoted.
    assert!(
        out.stderr.contains("(the text above is not the answer: the harness could not verify it against the evidence"),
        "{}",
        out.stderr
    );
}

#[test]
fn text_that_reads_as_a_tool_call_is_never_shown() {
    let call = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/refunds.md\"}}\n```\n\n";
    let out = ask(
        vec![Canned::streamed(&["Let me read it.\n\n", call], false), Canned::streamed(&[ANSWER], false)],
        "always",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("read_file") && !out.stdout.contains("```"), "{}", out.stdout);
    assert!(out.stdout.starts_with("Let me read it.\n\n"), "{}", out.stdout);
    assert!(
        out.stderr.contains("(the text above is not the answer: the model went on to use tools)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains(ANSWER), "{}", out.stdout);
    let reads = out.tool_lines_named("read_file");
    assert_eq!(reads, 1, "the call written as text was run: {}", out.stderr);
}

#[test]
fn chat_streams_each_answer_too() {
    let server = FakeServer::start(vec![two_paragraphs()]);
    let ws = sample_workspace();
    let base = server.base_url();
    let log = ws.path().join("data/sessions.db");
    let log = log.to_string_lossy();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model"), ("DOCS_AGENT_SESSION_LOG", &log)];
    let out = run_input(ws.path(), &env, &["--stream", "always", "chat"], "how long is the refund window\n/quit\n");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.matches("Refunds are possible within 14 days").count(), 1, "{}", out.stdout);
    assert!(out.stdout.contains("Sources:\n- docs/refunds.md#window"), "{}", out.stdout);
    assert!(!out.stdout.contains("LyjWDarjtT1zdp7dc"), "{}", out.stdout);
    assert!(out.stderr.contains("the model writes... "), "{}", out.stderr);
}

/// On a real (pseudo-)terminal, `auto` streams and shows the progress line; the screen never
/// shows the secret.
#[test]
fn on_a_terminal_the_answer_and_the_progress_line_show_by_default() {
    let server = FakeServer::start(vec![two_paragraphs()]);
    let ws = sample_workspace();
    let out = on_a_terminal(ws.path(), &server, "--trace json ");
    let screen = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("step 1: the model reads its prompt (about "), "{screen}");
    let first = screen.find("Refunds are possible within 14 days of the first payment.\n\n").expect("first paragraph");
    let replied = screen.find("\"event\":\"model\"").expect("the model call's trace line");
    assert!(first < replied, "the first paragraph shows while the model still writes: {screen}");
    assert!(screen.contains("Sources:\n- docs/refunds.md#window (Refunds > Window)"), "{screen}");
    assert!(!screen.contains("LyjWDarjtT1zdp7dc"), "{screen}");
}

/// `docs-agent FLAGS'how long is the refund window'` on a pseudo-terminal (`script`), against
/// `server`: what the screen showed.
fn on_a_terminal(ws: &std::path::Path, server: &FakeServer, flags: &str) -> std::process::Output {
    let binary = env!("CARGO_BIN_EXE_docs-agent");
    Command::new("script")
        .args(["-qec", &format!("{binary} {flags}'how long is the refund window'"), "/dev/null"])
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LLM_BASE_URL", server.base_url())
        .env("LLM_MODEL", "test-model")
        .env("WORKSPACE", ws)
        .env("TERM", "dumb")
        .stdin(Stdio::null())
        .output()
        .expect("run `script` (util-linux)")
}

/// Counting trace lines in a stderr that also held the progress line.
trait ToolLines {
    fn tool_lines_named(&self, name: &str) -> usize;
}

impl ToolLines for common::Run {
    /// Trace lines of tool `name`, the progress line's erasures taken out.
    fn tool_lines_named(&self, name: &str) -> usize {
        let trace = self.stderr.replace("\r\x1b[2K", "\n");
        trace
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|l| l["tool"] == name)
            .count()
    }
}

/// On a terminal (as under `docker compose run`, where stdout and stderr share one), the trace
/// is a brief line per tool call by default: no JSON line lands among the answer's lines.
#[test]
fn on_a_terminal_the_trace_is_brief_and_stays_apart_from_the_answer() {
    let server = FakeServer::start(vec![two_paragraphs()]);
    let ws = sample_workspace();
    let out = on_a_terminal(ws.path(), &server, "");
    let screen = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n").replace("\r\x1b[2K", "\n");
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("  search_docs \"how long is the refund window\": "), "a brief tool line: {screen}");
    assert!(!screen.lines().any(|l| l.trim_start().starts_with('{')), "no JSON line on the screen: {screen}");
    let tool = screen.find("  search_docs").expect("tool line");
    let answer = screen.find("Refunds are possible within 14 days").expect("answer");
    assert!(tool < answer, "the trace comes before the answer, not inside it: {screen}");
    assert!(screen.contains("Sources:\n- docs/refunds.md#window (Refunds > Window)"), "{screen}");
}
