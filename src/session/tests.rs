//! The turn over logs that tests write by hand. Exactly-once writes on resume: a log that
//! holds a granted write and no result is what a crash between the grant and the result
//! leaves; resuming it checks the note before writing and never writes twice, however often it
//! is resumed (the SIGKILL test in `tests/session_crash.rs` checks the same through the
//! binary). And the guards behind the log's scrub: an unscrubbed log still answers redacted.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::agent::Harness;
use crate::config::{Config, Sources};
use crate::model::Model;
use crate::runtime::{self, Flavor};

use super::cancel::Cancel;
use super::event::{CallRecord, Event, Origin, Scope, StopReason};
use super::store::Log;
use super::turn::TurnEnd;

/// The note the logged call writes, and what it writes.
const NOTE: &str = "notes/answer.md";
const CONTENT: &str = "Refunds: 14 days.\n";

/// A harness on a copy of the sample workspace; one model step per turn, so a turn whose
/// write is done stops at the step limit without calling the model again.
fn harness() -> (tempfile::TempDir, Config, Harness) {
    let dir = tempfile::tempdir().expect("temp dir");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace"), dir.path());
    let flags = vec![
        ("workspace", dir.path().display().to_string()),
        ("index.path", "memory".to_string()),
        ("llm.model", "scripted".to_string()),
        ("limits.max_steps", "1".to_string()),
    ];
    let config = Config::load(&Sources { file: None, env: Default::default(), flags }).expect("config");
    let harness = Harness::open(&config).expect("harness");
    (dir, config, harness)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A session whose log ends with a granted write and no result: what a crash between the
/// grant and the write's result leaves.
fn granted_write(log: &mut Log, config: &Config) -> String {
    let session = super::start(log, config, "scripted").expect("start");
    let arguments = serde_json::json!({ "path": NOTE, "content": CONTENT }).to_string();
    log.append(&session, Event::UserMessage { text: "save the refund window".into() }).expect("user");
    let call = CallRecord { id: "call_3_0".into(), name: "write_file".into(), arguments };
    let seq = log
        .append(
            &session,
            Event::AssistantMessage {
                text: String::new(),
                tool_calls: vec![call],
                usage: None,
                estimated: None,
                origin: Origin::Model,
            },
        )
        .expect("assistant");
    let key = format!("{session}/{seq}/call_3_0");
    log.append(&session, Event::ApprovalRequested { call_id: "call_3_0".into(), path: NOTE.into(), key, rule: None })
        .expect("request");
    log.append(&session, Event::ApprovalGranted { call_id: "call_3_0".into(), scope: Scope::Once, by: "user".into() })
        .expect("grant");
    session
}

/// Resumes the session's turn, as `sessions resume` and `POST .../resume` do.
fn resume(config: &Config, harness: &Harness, log: &mut Log, session: &str) -> TurnEnd {
    let model = Model::from_config(&config.llm, 64).expect("model");
    let deps = harness.deps(config);
    let runtime = runtime::build(Flavor::OneThread).expect("runtime");
    runtime.block_on(deps.turn(&model, log, session).drive(&mut Cancel::never())).expect("the turn runs")
}

/// The results logged for the write call.
fn results(log: &Log, session: &str) -> Vec<String> {
    let events = log.events_after(session, 0).expect("events");
    events
        .into_iter()
        .filter_map(|s| match s.event {
            Event::ToolResult { call_id, text, decision } if call_id == "call_3_0" => {
                Some(format!("{decision}: {text}"))
            }
            _ => None,
        })
        .collect()
}

/// The note's inode: a write replaces the file (temporary file, then rename), so a new inode
/// means it was written again.
fn inode(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(NOTE)).expect("the note exists").ino()
}

#[test]
fn a_write_found_done_on_resume_is_recorded_and_not_redone() {
    let (dir, config, harness) = harness();
    let mut log = Log::in_memory().expect("log");
    let session = granted_write(&mut log, &config);
    // The write happened; the crash came before its result was logged.
    std::fs::write(dir.path().join(NOTE), CONTENT).expect("the earlier write");
    let before = inode(dir.path());

    let end = resume(&config, &harness, &mut log, &session);
    assert!(matches!(end, TurnEnd::Stopped { reason: StopReason::StepLimit, .. }), "{end:?}");
    assert_eq!(inode(dir.path()), before, "the note was written again");
    let results = results(&log, &session);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].starts_with("allowed: OK:") && results[0].contains("not written again"), "{results:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join(NOTE)).expect("note"), CONTENT);
}

#[test]
fn a_granted_write_is_done_once_however_often_it_is_resumed() {
    let (dir, config, harness) = harness();
    let mut log = Log::in_memory().expect("log");
    let session = granted_write(&mut log, &config);
    assert!(!dir.path().join(NOTE).exists());

    resume(&config, &harness, &mut log, &session);
    let written = inode(dir.path());
    assert_eq!(std::fs::read_to_string(dir.path().join(NOTE)).expect("note"), CONTENT);
    for _ in 0..3 {
        assert_eq!(resume(&config, &harness, &mut log, &session), TurnEnd::Idle);
        assert_eq!(inode(dir.path()), written, "a resumed turn wrote again");
    }
    let results = results(&log, &session);
    assert_eq!(results.len(), 1, "one result for the one write: {results:?}");
    assert!(results[0].starts_with("allowed: OK:") && !results[0].contains("not written again"), "{results:?}");
}

#[test]
fn a_note_that_differs_is_written_once_with_the_granted_content() {
    let (dir, config, harness) = harness();
    let mut log = Log::in_memory().expect("log");
    let session = granted_write(&mut log, &config);
    std::fs::write(dir.path().join(NOTE), "an older note\n").expect("an older note");
    let before = inode(dir.path());

    resume(&config, &harness, &mut log, &session);
    assert_ne!(inode(dir.path()), before, "the granted write replaces the older note");
    assert_eq!(std::fs::read_to_string(dir.path().join(NOTE)).expect("note"), CONTENT);
    let written = inode(dir.path());
    assert_eq!(resume(&config, &harness, &mut log, &session), TurnEnd::Idle);
    assert_eq!(inode(dir.path()), written);
    assert_eq!(results(&log, &session).len(), 1);
}

/// Defence in depth behind the log's scrub: a log written by hand, or by a version from before
/// the scrub, may hold a secret in the model's reply; the answer made from it is still guarded.
#[test]
fn an_answer_from_an_unscrubbed_log_is_redacted_on_its_way_out() {
    let (_dir, config, harness) = harness();
    let mut log = Log::in_memory().expect("log");
    let session = super::start(&mut log, &config, "scripted").expect("start");
    log.append(&session, Event::UserMessage { text: "which key".into() }).expect("user");
    let text = "The key is AKIAIOSFODNN7EXAMPLE.".to_string();
    log.append_unscrubbed(
        &session,
        Event::AssistantMessage { text, tool_calls: Vec::new(), usage: None, estimated: None, origin: Origin::Model },
    )
    .expect("an unscrubbed reply");
    match resume(&config, &harness, &mut log, &session) {
        TurnEnd::Answered { answer, .. } => assert_eq!(answer, "The key is [REDACTED]."),
        other => panic!("the turn should answer from the log: {other:?}"),
    }
}

/// An id a person gives is letters, digits, `-` and `_`, at most 64; anything else is refused
/// with what an id looks like, the bad one shown clipped.
#[test]
fn a_session_id_is_checked_and_a_bad_one_told_clipped() {
    for id in ["s-0123abc", "my_session-2", &"a".repeat(64)] {
        assert_eq!(super::check_id(id), Ok(()), "{id}");
    }
    for id in ["", "../etc", "s 1", "s;drop", &"a".repeat(65)] {
        let error = super::check_id(id).expect_err(id).to_string();
        assert!(error.contains("is not a session id") && error.contains("sessions list"), "{error}");
    }
    let long = super::check_id(&format!("{}/", "x".repeat(500))).expect_err("long").to_string();
    assert!(long.len() < 250, "the bad id is clipped: {long}");
}

/// Unset, `log_url` leaves the shown configuration (and so the sessions' fingerprints) as it
/// was; set, it is shown without its password.
#[test]
fn the_session_config_is_shown_as_before_and_never_with_a_password() {
    assert_eq!(
        format!("{:?}", super::Shown(&crate::config::SessionConfig::sample(""))),
        "SessionConfig { log_path: \".docs-agent/sessions.db\", approval_ttl_secs: 3600, \
             context_budget_tokens: 8192, compact_at: 0.75 }"
    );
    let shown =
        format!("{:?}", super::Shown(&crate::config::SessionConfig::sample("postgres://agent:pw-9f8e7d@db:5432/s")));
    assert!(shown.contains("postgres://agent@db:5432/s") && !shown.contains("pw-9f8e7d"), "{shown}");
}
