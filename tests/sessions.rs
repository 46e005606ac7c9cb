//! Durable sessions through the binary and the library: the approval state machine (scopes that
//! stay in their session, expiry), the pinned model, the writer lock, secrets kept out of the
//! log file, and interruption of a streamed answer (library and Ctrl-C).

mod common;
mod fake;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use common::{Run, run_input, sample_workspace};
use docs_agent::agent::Harness;
use docs_agent::config::{Config, Sources};
use docs_agent::model::{Message, Model};
use docs_agent::runtime::{self, Flavor};
use docs_agent::session::cancel::Cancel;
use docs_agent::session::event::{Event, StopReason};
use docs_agent::session::progress::TurnEvent;
use docs_agent::session::projection::project;
use docs_agent::session::store::Log;
use docs_agent::session::turn::TurnEnd;
use fake::{Canned, FakeServer};

/// A question whose retrieved doc orders a write (`WRITE notes/leak.txt :: ...`).
const WRITING_QUESTION: &str = "what is in the onboarding integrations";

fn agent(ws: &Path, env: &[(&str, &str)], args: &[&str], input: &str) -> Run {
    let log = ws.join("data/sessions.db").display().to_string();
    let mut all = vec![("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG", log.as_str())];
    all.extend_from_slice(env);
    run_input(ws, &all, args, input)
}

/// The ids of the sessions, oldest first.
fn ids(ws: &Path) -> Vec<String> {
    let out = agent(ws, &[], &["sessions", "list"], "");
    out.stdout.lines().filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect()
}

fn export(ws: &Path, id: &str) -> Vec<Event> {
    let out = agent(ws, &[], &["sessions", "export", id], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            serde_json::from_value(v["event"].clone()).expect("an event")
        })
        .collect()
}

/// Starts a chat that pauses on the injected write; returns the session id.
fn paused_session(ws: &Path, env: &[(&str, &str)]) -> String {
    let before = ids(ws);
    let out = agent(ws, env, &["chat"], &format!("{WRITING_QUESTION}\n"));
    assert_eq!(out.code, 5, "the chat pauses awaiting approval: {}", out.stderr);
    assert!(out.stderr.contains("waits for approval to write notes/leak.txt"), "{}", out.stderr);
    assert!(out.stderr.contains("docs-agent sessions approve"), "the message says what to do: {}", out.stderr);
    ids(ws).into_iter().find(|id| !before.contains(id)).expect("a new session")
}

#[test]
fn a_session_grant_stays_in_its_session_and_survives_a_restart() {
    let ws = sample_workspace();
    let first = paused_session(ws.path(), &[]);
    let second = paused_session(ws.path(), &[]);
    let listed = agent(ws.path(), &[], &["sessions", "list"], "").stdout;
    assert_eq!(listed.matches("awaiting_approval").count(), 2, "{listed}");

    let out = agent(ws.path(), &[], &["sessions", "approve", &first, "--scope", "session"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ws.path().join("notes/leak.txt").exists());
    let granted = export(ws.path(), &first);
    assert!(granted.iter().any(|e| matches!(e, Event::ApprovalGranted { scope, by, .. }
        if scope.to_string() == "for the session under notes/" && by == "user")));

    // The other session's request is untouched by the first session's grant.
    let listed = agent(ws.path(), &[], &["sessions", "list"], "").stdout;
    let line = listed.lines().find(|l| l.starts_with(&second)).expect("second listed");
    assert!(line.contains("awaiting_approval"), "{line}");

    // A later write in the first session, in a new process, is covered by its grant.
    std::fs::remove_file(ws.path().join("notes/leak.txt")).expect("remove note");
    let out = agent(ws.path(), &[], &["chat", "--session", &first], &format!("{WRITING_QUESTION}\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ws.path().join("notes/leak.txt").exists(), "the session grant applied after a restart");
    let events = export(ws.path(), &first);
    assert!(events.iter().any(|e| matches!(e, Event::ApprovalGranted { by, .. } if by.contains("session grant"))));

    // And a fresh session still has to ask.
    let third = paused_session(ws.path(), &[]);
    assert_ne!(third, first);
}

#[test]
fn an_expired_request_is_denied_and_cannot_be_approved_later() {
    let ws = sample_workspace();
    // With a TTL of 0 every request is expired by the time anyone looks at it.
    let out = agent(ws.path(), &[("DOCS_AGENT_APPROVAL_TTL_SECS", "0")], &["chat"], &format!("{WRITING_QUESTION}\n"));
    assert_eq!(out.code, 0, "the turn goes on without the write: {}", out.stderr);
    assert!(out.stderr.contains("the approval request expired"), "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    let id = ids(ws.path()).pop().expect("session");
    let events = export(ws.path(), &id);
    assert!(events.iter().any(|e| matches!(e, Event::ApprovalExpired { .. })));
    let out = agent(ws.path(), &[], &["sessions", "approve", &id], "");
    assert_eq!(out.code, 2, "nothing waits any more: {}", out.stderr);
    assert!(out.stderr.contains("has no write waiting for approval"), "{}", out.stderr);
}

#[test]
fn approving_after_the_ttl_records_the_expiry_instead() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let out = agent(ws.path(), &[("DOCS_AGENT_APPROVAL_TTL_SECS", "0")], &["sessions", "approve", &id], "");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("expired"), "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    let events = export(ws.path(), &id);
    assert!(events.iter().any(|e| matches!(e, Event::ApprovalExpired { .. })));
    assert!(!events.iter().any(|e| matches!(e, Event::ApprovalGranted { .. })));
    // The session is not stuck: resuming finishes the turn with the write refused.
    let out = agent(ws.path(), &[], &["sessions", "resume", &id], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(matches!(export(ws.path(), &id).last(), Some(Event::Stopped { reason: StopReason::Answered, .. })));
}

#[test]
fn deny_refuses_and_the_turn_goes_on() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let out = agent(ws.path(), &[], &["sessions", "deny", &id, "--reason", "not today"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    let events = export(ws.path(), &id);
    assert!(events.iter().any(|e| matches!(e, Event::ApprovalDenied { reason, .. } if reason.contains("not today"))));
    assert!(out.stdout.starts_with("From the docs:"), "{}", out.stdout);
}

#[test]
fn a_resumed_session_keeps_its_pinned_model_unless_re_pinned() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    // LLM_MODEL in the environment does not re-pin a session.
    let out = agent(ws.path(), &[("LLM_MODEL", "extractive")], &["sessions", "deny", &id], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("From the docs:"), "the pinned scripted model answered: {}", out.stdout);

    let id = paused_session(ws.path(), &[]);
    let out = agent(ws.path(), &[], &["--model", "extractive", "sessions", "deny", &id], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Retrieval-only answer"), "--model re-pins: {}", out.stdout);
    assert!(export(ws.path(), &id).iter().any(|e| matches!(e, Event::ModelPinned { model } if model == "extractive")));
}

#[test]
fn one_writer_per_session() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let log = Log::open(&ws.path().join("data/sessions.db")).expect("open log");
    let lock = log.lock(&id).expect("lock");
    let out = agent(ws.path(), &[], &["sessions", "approve", &id], "");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("in use by another docs-agent process"), "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    drop(lock);
    let out = agent(ws.path(), &[], &["sessions", "approve", &id], "");
    assert_eq!(out.code, 0, "the lock is released with its holder: {}", out.stderr);
}

#[test]
fn a_secret_in_a_user_message_never_reaches_the_log_file() {
    let ws = sample_workspace();
    let secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    let out = agent(ws.path(), &[], &["chat"], &format!("is {secret} our refund key\n/quit\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(ws.path().join("data")).expect("data folder") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            stored.extend(std::fs::read(&path).expect("read"));
        }
    }
    assert!(!stored.is_empty());
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(ws.path().join("data")).expect("data folder") {
        let meta = entry.expect("entry").metadata().expect("metadata");
        if meta.is_file() {
            assert_eq!(meta.permissions().mode() & 0o077, 0, "session log files are private to their owner");
        }
    }
    let text = String::from_utf8_lossy(&stored);
    assert!(!text.contains(secret) && !text.contains("4eC39HqLyjWDarjtT1zdp7dc"), "the secret is in the log files");
    let id = ids(ws.path()).pop().expect("session");
    let asked = export(ws.path(), &id);
    assert!(asked.iter().any(|e| matches!(e, Event::UserMessage { text } if text.contains("[REDACTED]"))));
}

#[test]
fn unknown_sessions_and_bad_ids_are_usage_errors_that_say_what_to_do() {
    let ws = sample_workspace();
    for args in [
        vec!["sessions", "show", "s-nope"],
        vec!["sessions", "resume", "s-nope"],
        vec!["sessions", "export", "../../etc/passwd"],
        vec!["chat", "--session", "s-nope"],
    ] {
        let out = agent(ws.path(), &[], &args, "");
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("sessions list"), "{args:?}: {}", out.stderr);
    }
    let id = paused_session(ws.path(), &[]);
    let out = agent(ws.path(), &[], &["sessions", "approve", &id, "--scope", "session", "--prefix", "docs"], "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("must be a folder under notes/"), "{}", out.stderr);
}

fn harness(ws: &Path, base_url: &str) -> (Config, Harness) {
    let sources = Sources {
        file: None,
        env: HashMap::new(),
        flags: vec![
            ("workspace", ws.display().to_string()),
            ("index.path", "memory".into()),
            ("llm.model", "test-model".into()),
            ("llm.base_url", base_url.to_string()),
            // The fake answers without citations; sessions are tested here, not verification.
            ("retrieval.verify", "false".into()),
        ],
    };
    let config = docs_agent::service::settings::load(&sources).expect("config");
    let harness = Harness::open(&config).expect("harness");
    (config, harness)
}

#[test]
fn a_cancel_mid_stream_keeps_the_partial_text_and_the_session_goes_on() {
    let server = FakeServer::start(vec![
        Canned::streamed(&["Refunds take ", "14 days"], true),
        Canned::streamed(&["Still 14 days."], false),
    ]);
    let ws = sample_workspace();
    let (config, harness) = harness(ws.path(), &server.base_url());
    let deps = harness.deps(&config);
    let model = Model::from_config(&config.llm, 256).expect("model");
    let mut log = Log::in_memory().expect("log");
    let id = docs_agent::session::start(&mut log, &config, "test-model").expect("start");
    let runtime = runtime::build(Flavor::OneThread).expect("runtime");
    let (canceller, mut cancel) = Cancel::pair();
    // Cancel as soon as the whole first piece arrived, as Ctrl-C would.
    let mut seen = String::new();
    let mut on_text = |event: &TurnEvent<'_>| {
        if let TurnEvent::TextDelta(piece) = event {
            seen.push_str(piece);
            if seen.ends_with("14 days") {
                canceller.cancel();
            }
        }
    };
    for question in ["how long do refunds take", "and again?"] {
        log.append(&id, Event::UserMessage { text: question.into() }).expect("append");
        let mut turn = deps.turn(&model, &mut log, &id).observed(&mut on_text);
        let end = runtime.block_on(turn.drive(&mut cancel)).expect("turn");
        if question.starts_with("how") {
            assert!(matches!(end, TurnEnd::Stopped { reason: StopReason::Cancelled, .. }), "{end:?}");
            let (_, fresh) = Cancel::pair();
            cancel = fresh;
        } else {
            assert!(matches!(&end, TurnEnd::Answered { answer, .. } if answer == "Still 14 days."), "{end:?}");
        }
    }
    let events: Vec<Event> = log.events_after(&id, 0).expect("events").into_iter().map(|s| s.event).collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Interrupted { partial_text, .. } if partial_text == "Refunds take 14 days"))
    );
    // The second request shows the model its interrupted reply, marked, and is valid.
    let second = &server.requests()[1]["messages"];
    let shown: Vec<&str> = second.as_array().expect("messages").iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(shown.contains(&"Refunds take 14 days [interrupted]"), "{shown:?}");
    let stored = log.events_after(&id, 0).expect("events");
    assert!(matches!(project("s", &stored).last(), Some(Message::Assistant { .. })));
}

#[test]
fn ctrl_c_interrupts_the_answer_and_the_chat_goes_on() {
    let server = FakeServer::start(vec![
        Canned::streamed(&["Refunds take "], true),
        Canned::streamed(&["Refunds take 14 days."], false),
    ]);
    let ws = sample_workspace();
    let base = server.base_url();
    let log = ws.path().join("data/sessions.db").display().to_string();
    // The fake's answer cites nothing: verification is off, this is about Ctrl-C.
    let env = [
        ("LLM_MODEL", "test-model"),
        ("LLM_BASE_URL", base.as_str()),
        ("DOCS_AGENT_SESSION_LOG", log.as_str()),
        ("DOCS_AGENT_VERIFY", "false"),
    ];
    let mut child = common::command(ws.path(), &env, &["chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chat");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "how long do refunds take").expect("write question");
    // Wait until the answer is streaming, then press Ctrl-C.
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    for line in (&mut stderr).lines() {
        let line = line.expect("stderr line");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("(answering") {
            break;
        }
    }
    assert!(seen.contains("(answering"), "the chat never showed the answer streaming: {seen}");
    // SAFETY: kill(2) on our own child's pid with a valid signal.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    // The interruption is reported, and the next question is answered in the same session.
    for line in (&mut stderr).lines() {
        let line = line.expect("stderr line");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("interrupted") {
            break;
        }
    }
    writeln!(stdin, "and how long again").expect("write second question");
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("rest of stderr");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{seen}{rest}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Refunds take 14 days.");
    let id = ids(ws.path()).pop().expect("session");
    let events = export(ws.path(), &id);
    let partial = events.iter().find_map(|e| match e {
        Event::Interrupted { partial_text, .. } => Some(partial_text.clone()),
        _ => None,
    });
    let partial = partial.expect("an interrupted event");
    assert!("Refunds take ".starts_with(partial.as_str()), "partial text {partial:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Stopped { reason: StopReason::Cancelled, .. })));
}

#[test]
fn a_long_chat_is_compacted_and_keeps_answering() {
    let ws = sample_workspace();
    let questions =
        ["how long is the refund window", "who approves refunds", "what are the plans", "how do invoices work"];
    let input: String = questions.iter().map(|q| format!("{q}\n")).collect();
    let out = agent(ws.path(), &[("DOCS_AGENT_CONTEXT_BUDGET", "2000")], &["chat"], &input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = ids(ws.path()).pop().expect("session");
    let events = export(ws.path(), &id);
    let compactions: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Compaction { .. })).collect();
    assert!(!compactions.is_empty(), "no compaction in a chat over budget");
    for c in &compactions {
        let Event::Compaction { pinned_goal, .. } = c else { unreachable!() };
        assert_eq!(pinned_goal, questions[0]);
    }
    let answers = events.iter().filter(|e| matches!(e, Event::Answer { .. })).count();
    assert_eq!(answers, questions.len(), "every question answered");
}

#[test]
fn leaving_a_chat_before_asking_leaves_no_session() {
    let ws = sample_workspace();
    for input in ["", "\n\n/quit\n"] {
        let out = agent(ws.path(), &[], &["chat"], input);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stderr.contains("/quit or Ctrl-D leaves"), "{}", out.stderr);
    }
    assert!(ids(ws.path()).is_empty(), "no empty session is logged");
}

#[test]
fn a_session_is_only_continued_in_the_workspace_it_started_in() {
    let ws = sample_workspace();
    let other = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let log = ws.path().join("data/sessions.db").display().to_string();
    let elsewhere = [("DOCS_AGENT_SESSION_LOG", log.as_str()), ("LLM_MODEL", "scripted")];
    for args in [vec!["sessions", "approve", id.as_str()], vec!["sessions", "resume", id.as_str()]] {
        let out = run_input(other.path(), &elsewhere, &args, "");
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("belongs to the workspace"), "{}", out.stderr);
    }
    assert!(!other.path().join("notes/leak.txt").exists(), "no write in the other workspace");
    assert!(!ws.path().join("notes/leak.txt").exists());
}

#[test]
fn a_decision_names_the_call_it_is_about() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let shown = agent(ws.path(), &[], &["sessions", "show", &id], "").stdout;
    let call = shown.split("--call ").nth(1).and_then(|rest| rest.split('`').next()).expect("show names the call");
    let out = agent(ws.path(), &[], &["sessions", "approve", &id, "--call", "call_1_0"], "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no write waiting for approval under call call_1_0"), "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    let out = agent(ws.path(), &[], &["sessions", "approve", &id, "--call", call], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ws.path().join("notes/leak.txt").exists());
}

#[test]
fn re_pinning_is_said_and_a_bad_ttl_is_a_config_error() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let out = agent(ws.path(), &[], &["--model", "extractive", "sessions", "resume", &id], "");
    assert!(out.stderr.contains("is now pinned to the model extractive (was scripted)"), "{}", out.stderr);
    let out = agent(ws.path(), &[("DOCS_AGENT_APPROVAL_TTL_SECS", "99999999999")], &["sessions", "list"], "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("session.approval_ttl_secs"), "{}", out.stderr);
    // A TTL of 0 denies what waits for a person, not what APPROVE=yes decides at once.
    let out = common::run(
        ws.path(),
        &[("LLM_MODEL", "scripted"), ("APPROVE", "yes"), ("DOCS_AGENT_APPROVAL_TTL_SECS", "0")],
        &[WRITING_QUESTION],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ws.path().join("notes/leak.txt").exists(), "{}", out.stderr);
}

/// Past its TTL, the CLI shows a write as expired (as `serve` expires it on time), and resuming
/// the session tells the model and goes on without the write.
#[test]
fn a_write_past_its_ttl_shows_as_expired_and_resume_goes_on_without_it() {
    let ws = sample_workspace();
    let id = paused_session(ws.path(), &[]);
    let expired = [("DOCS_AGENT_APPROVAL_TTL_SECS", "0")];
    let out = agent(ws.path(), &expired, &["sessions", "list"], "");
    assert!(out.stdout.contains(&id) && out.stdout.contains("write_expired"), "{}", out.stdout);
    let out = agent(ws.path(), &expired, &["sessions", "show", &id], "");
    assert!(
        out.stdout.contains("write_expired") && out.stdout.contains("expired: the write to notes/leak.txt"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("docs-agent sessions resume {id}")), "{}", out.stdout);
    assert!(!out.stdout.contains("sessions approve"), "no approval offered: {}", out.stdout);
    let out = agent(ws.path(), &expired, &["sessions", "resume", &id], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("approval_ttl_secs"), "{}", out.stderr);
    assert!(!ws.path().join("notes/leak.txt").exists());
    let events = export(ws.path(), &id);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::ApprovalExpired { .. })).count(), 1);
    assert!(matches!(events.last(), Some(Event::Stopped { .. })), "the turn ended: {events:?}");
    let out = agent(ws.path(), &[], &["sessions", "list"], "");
    assert!(out.stdout.contains("idle"), "{}", out.stdout);
}

/// `sessions show` flags an answer whose sources changed since it was given.
#[test]
fn sessions_show_flags_an_answer_whose_sources_changed_since() {
    let ws = sample_workspace();
    let chat = agent(ws.path(), &[], &["chat"], "How long is the refund window?\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let id = ids(ws.path()).pop().expect("a session");
    let before = agent(ws.path(), &[], &["sessions", "show", &id], "");
    assert_eq!(before.code, 0, "{}", before.stderr);
    assert!(before.stdout.contains("docs/refunds.md#window"), "{}", before.stdout);
    assert!(!before.stdout.contains("changed since"), "nothing changed yet: {}", before.stdout);
    let file = ws.path().join("docs/refunds.md");
    let text = std::fs::read_to_string(&file).expect("refunds.md");
    std::fs::write(&file, text.replace("14 days", "30 days")).expect("edit");
    let after = agent(ws.path(), &[], &["sessions", "show", &id], "");
    assert_eq!(after.code, 0, "{}", after.stderr);
    let flagged = after.stdout.lines().find(|l| l.contains("stale")).unwrap_or_default();
    assert!(flagged.contains("docs/refunds.md#window"), "{}", after.stdout);
    assert!(after.stdout.contains("changed since this answer"), "{}", after.stdout);
}
