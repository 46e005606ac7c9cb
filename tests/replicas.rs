//! Several `docs-agent serve` processes on one PostgreSQL session log (a real server started
//! for the test on 127.0.0.1), as replicas behind one address would be: a session made on one
//! takes messages on another, a follower on one sees a turn run on another live, an approval
//! decided on one goes on there, a cancel asked on one stops the turn running on another, and
//! when a replica is killed (SIGKILL) in the middle of a turn,
//! another takes the turn over once its lease lapses and finishes it exactly once.

mod common;
mod fake;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use common::Api;
use common::postgres::{Cluster, PASSWORD};
use serde_json::{Value, json};

const ASKER: &str = "replica-asker-token-0123456789";
const APPROVER: &str = "replica-approver-token-0123456789";
/// A question whose retrieved doc orders a write (`WRITE notes/leak.txt :: ...`).
const WRITING_QUESTION: &str = "what is in the onboarding integrations";

/// A replica: its process, its URL, its stderr, its own data folder (index).
struct Replica {
    child: std::process::Child,
    url: String,
    log: common::Log,
    _data: tempfile::TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a replica on `ws` and the database, with `env` added.
fn replica(ws: &Path, env: &[(&str, &str)]) -> Replica {
    let data = tempfile::tempdir().expect("tempdir");
    let log_path = data.path().join("sessions.db").display().to_string();
    let mut all = vec![("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG", log_path.as_str())];
    all.extend_from_slice(env);
    let (child, url, log) = common::spawn_serve_logged(ws, &all);
    Replica { child, url, log, _data: data }
}

fn workspace(cluster: &Cluster) -> tempfile::TempDir {
    let ws = common::sample_workspace();
    common::serve_config(
        ws.path(),
        &[("ana", ASKER, &["ask"]), ("cy", APPROVER, &["ask", "approve"])],
        &format!("[session]\nlog_url = \"{}\"\nlease_secs = 3\n", cluster.url()),
    );
    ws
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `within`.
async fn until<T>(within: Duration, what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "waited {within:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kinds(events: &Value) -> Vec<String> {
    events["events"].as_array().map_or_else(Vec::new, |all| {
        all.iter().filter_map(|e| e["event"]["type"].as_str().map(str::to_string)).collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_between_replicas_and_followers_see_it_live() {
    let Some(cluster) = Cluster::start_or_skip() else { return };
    let ws = workspace(&cluster);
    let (a, b) = (replica(ws.path(), &[]), replica(ws.path(), &[]));
    let on_a = Api::new(&a.url, ASKER);
    let on_b = Api::new(&b.url, ASKER);
    let id = on_a.new_session().await;

    // A follower on A, from the start, on its own thread.
    let follow = format!("{}/v1/sessions/{id}/events", a.url);
    let (seen_tx, seen) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let reply = reqwest::blocking::Client::new()
            .get(follow)
            .bearer_auth(ASKER)
            .header("Accept", "text/event-stream")
            .timeout(Duration::from_secs(60))
            .send()
            .expect("follow");
        for line in BufReader::new(reply).lines().map_while(Result::ok) {
            if let Some(kind) = line.strip_prefix("event: ")
                && seen_tx.send(kind.to_string()).is_err()
            {
                break;
            }
        }
    });
    assert_eq!(seen.recv_timeout(Duration::from_secs(10)).as_deref(), Ok("session_started"));

    // The message goes to B: the turn runs there.
    let (status, outcome) =
        on_b.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "how long is the refund window"})).await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["stop"], "answered", "{outcome}");

    // A's follower saw B's turn, to its end, without asking again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut kinds_seen = Vec::new();
    while !kinds_seen.iter().any(|k| k == "stopped") {
        let left = deadline.checked_duration_since(Instant::now()).expect("the follower on A never saw B's turn end");
        kinds_seen.push(seen.recv_timeout(left).expect("an event"));
    }
    assert!(
        kinds_seen.contains(&"user_message".to_string()) && kinds_seen.contains(&"answer".to_string()),
        "{kinds_seen:?}"
    );

    // Back on A, the session goes on, with both turns in it.
    let (status, outcome) =
        on_a.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "and for annual plans?"})).await;
    assert_eq!(status, 200, "{outcome}");
    let (_, events) = on_a.get(&format!("/v1/sessions/{id}/events")).await;
    assert_eq!(kinds(&events).iter().filter(|k| *k == "user_message").count(), 2, "{events}");
    let seqs: Vec<u64> =
        events["events"].as_array().expect("events").iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "one numbering across replicas");

    // A follower that lost its connection resumes on the other replica with Last-Event-ID: from
    // the end of the first turn (B's), it gets the second one (A's), and nothing before.
    let list = events["events"].as_array().expect("events");
    let first_end =
        list.iter().find(|e| e["event"]["type"] == "stopped").and_then(|e| e["seq"].as_u64()).expect("a stop");
    let mut reply = reqwest::Client::new()
        .get(format!("{}/v1/sessions/{id}/events", b.url))
        .bearer_auth(ASKER)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", first_end.to_string())
        .send()
        .await
        .expect("resume on B");
    let (mut text, mut resumed) = (String::new(), Vec::new());
    while resumed.last() != Some(&seqs[seqs.len() - 1]) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), reply.chunk())
            .await
            .expect("the resumed follower stalled")
            .expect("a chunk")
            .expect("the stream ended");
        text.push_str(&String::from_utf8_lossy(&chunk));
        resumed = text.lines().filter_map(|l| l.strip_prefix("id: ")).filter_map(|n| n.trim().parse().ok()).collect();
    }
    assert_eq!(resumed, (first_end + 1..=seqs[seqs.len() - 1]).collect::<Vec<u64>>(), "{text}");
}

/// The approver decides on B, which is killed right after it wrote the note and before it
/// recorded the result. A takes the turn over once B's lease lapses: the result is recorded
/// once, the note is not written again, and the turn ends with its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_turn_is_taken_over_exactly_once() {
    let Some(cluster) = Cluster::start_or_skip() else { return };
    let ws = workspace(&cluster);
    let mut a = replica(ws.path(), &[]);
    let mut b = replica(ws.path(), &[("DOCS_AGENT_TEST_KILL_AFTER", "write")]);
    let asker = Api::new(&a.url, ASKER);
    let id = asker.new_session().await;
    let (status, outcome) = asker.post(&format!("/v1/sessions/{id}/messages"), json!({"text": WRITING_QUESTION})).await;
    assert_eq!((status, outcome["stop"].as_str()), (200, Some("awaiting_approval")), "{outcome}");
    let approval = outcome["approval"]["id"].as_str().expect("approval id").to_string();

    // Decided on B, which dies after the write. Its answer may or may not leave before it dies.
    let _ = reqwest::Client::new()
        .post(format!("{}/v1/approvals/{approval}", b.url))
        .bearer_auth(APPROVER)
        .json(&json!({"decision": "once"}))
        .timeout(Duration::from_secs(20))
        .send()
        .await;
    let died = until(Duration::from_secs(20), "B to die", async || b.child.try_wait().ok().flatten()).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(died.signal(), Some(libc::SIGKILL), "B was killed by its crash hook: {}", b.log.text());
    let note = std::fs::read_to_string(ws.path().join("notes/leak.txt")).expect("B wrote the note");

    // A takes the turn over (B's lease lapses after 3 s) and finishes it.
    let events = until(Duration::from_secs(30), "A to finish B's turn", async || {
        let (_, events) = asker.get(&format!("/v1/sessions/{id}/events")).await;
        kinds(&events).iter().any(|k| k == "stopped").then_some(events)
    })
    .await;
    let all = events["events"].as_array().expect("events");
    let call = all
        .iter()
        .find(|e| e["event"]["type"] == "approval_requested")
        .and_then(|e| e["event"]["call_id"].as_str())
        .expect("the write's call");
    let write_results: Vec<&Value> =
        all.iter().filter(|e| e["event"]["type"] == "tool_result" && e["event"]["call_id"] == call).collect();
    assert_eq!(write_results.len(), 1, "the write's result is recorded once: {events}");
    assert!(
        write_results[0]["event"]["text"].as_str().unwrap_or("").contains("not written again"),
        "A found the note already written: {events}"
    );
    assert_eq!(kinds(&events).iter().filter(|k| *k == "answer").count(), 1, "{events}");
    assert_eq!(std::fs::read_to_string(ws.path().join("notes/leak.txt")).expect("note"), note, "written once");
    assert!(!note.contains("4eC39HqLyjWDarjtT1zdp7dc"), "the note is redacted");
    assert!(a.log.until("taking over", Duration::from_secs(1)), "A says it took the turn over: {}", a.log.text());
    // The database's password is in no replica's output.
    assert!(!a.log.text().contains(PASSWORD) && !b.log.text().contains(PASSWORD));
}

/// A turn runs on B, its model call hanging; the owner's cancel goes to A: A has no such turn,
/// tells B through the database, and B stops the turn, model call included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_asked_on_one_replica_stops_the_turn_on_another() {
    let Some(cluster) = Cluster::start_or_skip() else { return };
    let ws = workspace(&cluster);
    let model = fake::FakeServer::start(vec![fake::Canned::streamed(&["Refunds are"], true)]);
    let base = model.base_url();
    let env = [("LLM_MODEL", "test-model"), ("LLM_BASE_URL", base.as_str())];
    let (a, b) = (replica(ws.path(), &env), replica(ws.path(), &env));
    let on_a = Api::new(&a.url, ASKER);
    let id = on_a.new_session().await;
    let on_b = Api::new(&b.url, ASKER);
    let path = format!("/v1/sessions/{id}/messages");
    let turn = tokio::spawn(async move { on_b.post(&path, json!({"text": "how long is the refund window"})).await });
    until(Duration::from_secs(20), "B's model call", async || (!model.requests().is_empty()).then_some(())).await;

    let (status, body) = on_a.post(&format!("/v1/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 202, "A passes the cancel on: {body}");
    let (status, outcome) = tokio::time::timeout(Duration::from_secs(20), turn).await.expect("B stops").expect("task");
    assert_eq!((status, outcome["stop"].as_str()), (200, Some("cancelled")), "{outcome}");
    assert!(model.wait_dropped(1, Duration::from_secs(10)), "B dropped its model call");
    // With no turn running anywhere, a cancel is refused on either replica.
    let (status, _) = on_a.post(&format!("/v1/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 409);
}
