//! `docs-agent serve` as a process on 127.0.0.1: it refuses to start without tokens, answers
//! over a real socket, and on SIGTERM interrupts a running turn (recorded, so it can be
//! resumed), drains and exits 0.

mod common;
mod fake;

use std::io::BufReader;
use std::process::Child;

use docs_agent::serve::auth::hash;
use serde_json::{Value, json};

const TOKEN: &str = "process-token-0123456789";

fn config(ws: &std::path::Path) {
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\n\n[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        hash(TOKEN)
    );
    std::fs::write(ws.join("docs-agent.toml"), toml).expect("write config");
}

/// Starts `serve` and returns the child and its base URL (read from its first stderr line).
fn start(ws: &std::path::Path, env: &[(&str, &str)]) -> (Child, String, BufReader<std::process::ChildStderr>) {
    common::spawn_serve(ws, env)
}

fn sigterm(child: &Child) {
    // SAFETY: kill(2) on our own child's pid with a valid signal.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
}

#[test]
fn hash_token_prints_the_digest_and_health_fails_when_nothing_answers() {
    let ws = common::sample_workspace();
    let out = common::run_input(ws.path(), &[], &["hash-token"], &format!("{TOKEN}\n"));
    assert_eq!((out.code, out.stdout.trim()), (0, hash(TOKEN).as_str()), "{}", out.stderr);
    let out = common::run_input(ws.path(), &[], &["hash-token"], "short\n");
    assert_eq!(out.code, 2, "a short token is refused: {}", out.stderr);
    let out = common::run(ws.path(), &[], &["health", "--url", "http://127.0.0.1:9/healthz"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("did not answer"), "{}", out.stderr);
}

#[test]
fn serve_refuses_to_start_without_tokens() {
    let ws = common::sample_workspace();
    let out = common::run(ws.path(), &[("LLM_MODEL", "scripted")], &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("docs-agent tokens add NAME --role ask") && out.stderr.contains("docs-agent init"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn serve_answers_on_a_socket_and_stops_cleanly_on_sigterm_interrupting_a_turn() {
    let fake = fake::FakeServer::start(vec![fake::Canned::streamed(&["Refunds take "], true)]);
    let ws = common::sample_workspace();
    config(ws.path());
    let log = ws.path().join("data/sessions.db").display().to_string();
    let base = fake.base_url();
    let env = [("LLM_MODEL", "test-model"), ("LLM_BASE_URL", base.as_str()), ("DOCS_AGENT_SESSION_LOG", log.as_str())];
    let (mut child, url, mut stderr) = start(ws.path(), &env);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    let health: Value = http.get(format!("{url}/healthz")).send().await.expect("healthz").json().await.expect("JSON");
    assert_eq!(health["status"], "ok");
    // The container's health check: the binary itself (the image has no curl).
    let probe = common::run(ws.path(), &[], &["health", "--url", &format!("{url}/healthz")]);
    assert_eq!(probe.code, 0, "{}", probe.stderr);
    let created: Value = http
        .post(format!("{url}/v1/sessions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("JSON");
    let id = created["id"].as_str().expect("id").to_string();

    // A turn whose model stream hangs is running when SIGTERM comes.
    let message = {
        let http = http.clone();
        let url = format!("{url}/v1/sessions/{id}/messages");
        tokio::spawn(async move {
            http.post(url).bearer_auth(TOKEN).json(&json!({"text": "how long do refunds take"})).send().await
        })
    };
    for _ in 0..2_000 {
        if !fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(fake.requests().len(), 1, "the turn reached the model");
    // Someone follows the session's events: shutting down must end their stream, not wait on it.
    let mut follower = http
        .get(format!("{url}/v1/sessions/{id}/events"))
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("follow");
    assert!(follower.status().is_success());
    let follow = tokio::spawn(async move { while let Ok(Some(_)) = follower.chunk().await {} });
    sigterm(&child);
    let outcome: Value =
        message.await.expect("task").expect("the request is answered, not dropped").json().await.expect("JSON");
    assert_eq!(outcome["stop"], "cancelled", "{outcome}");
    follow.await.expect("the follower's stream ended");
    let status = child.wait().expect("wait");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("stderr");
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("shutting down"), "{rest}");

    // The interruption is in the log, and the session is ready for its next turn.
    let out = common::run(ws.path(), &[("DOCS_AGENT_SESSION_LOG", log.as_str())], &["sessions", "export", &id]);
    assert!(out.stdout.contains("\"type\":\"interrupted\""), "{}", out.stdout);
    assert!(out.stdout.contains("\"reason\":\"cancelled\""), "{}", out.stdout);
}

/// `docs-agent init` writes a config `serve` starts with, whose one admin token it prints once;
/// it never replaces a file that exists.
#[tokio::test]
async fn init_writes_a_config_serve_starts_with_and_prints_its_token_once() {
    let ws = common::sample_workspace();
    let data = ws.path().join("data");
    std::fs::create_dir(&data).expect("data");
    let file = data.join("docs-agent.toml");
    let to = file.display().to_string();
    let out = common::run(ws.path(), &[], &["init", "--to", &to]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let token = out.stdout.trim().to_string();
    assert_eq!(token.len(), 48, "24 random bytes in hex: {token:?}");
    let written = std::fs::read_to_string(&file).expect("the file");
    assert!(written.contains(&hash(&token)) && !written.contains(&token), "only the hash is kept: {written}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777, 0o600);

    let again = common::run(ws.path(), &[], &["init", "--to", &to]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again.stderr.contains("already exists")
            && again.stderr.contains("tokens add")
            && again.stderr.contains("--replace"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).expect("the file"), written, "left as it was");

    // --replace: a new token, the old one's hash gone; still private; no draft left behind.
    let replaced = common::run(ws.path(), &[], &["init", "--to", &to, "--replace"]);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    let new_token = replaced.stdout.trim();
    let rewritten = std::fs::read_to_string(&file).expect("the file");
    assert!(new_token.len() == 48 && new_token != token, "{new_token}");
    assert!(rewritten.contains(&hash(new_token)) && !rewritten.contains(&hash(&token)), "{rewritten}");
    assert_eq!(std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777, 0o600);
    let left: Vec<_> = std::fs::read_dir(&data).expect("data").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "only the config: {left:?}");
    std::fs::write(&file, &written).expect("the first config back, for the rest of the test");

    // serve starts with it (listening where the test says) and the printed token is an admin's.
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_CONFIG", to.as_str()), ("DOCS_AGENT_LISTEN", "127.0.0.1:0")];
    let (mut child, url, _stderr) = start(ws.path(), &env);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = reqwest::Client::new().get(format!("{url}/metrics")).bearer_auth(&token).send().await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(metrics.expect("GET /metrics").status().as_u16(), 200, "the token has the admin role");
}

/// `serve --wait-for-config` (compose's `api`, started before `init`): a missing or unusable
/// config is said and waited out, and `serve` starts once `init` writes a good one. Without the
/// flag a missing config is exit 2.
#[tokio::test]
async fn serve_waits_for_a_usable_config_then_starts() {
    use std::time::Duration;
    let ws = common::sample_workspace();
    let file = ws.path().join("data").join("docs-agent.toml");
    std::fs::create_dir(file.parent().expect("parent")).expect("data");
    let to = file.display().to_string();
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_CONFIG", to.as_str()), ("DOCS_AGENT_LISTEN", "127.0.0.1:0")];
    let without = common::run(ws.path(), &env, &["serve"]);
    assert_eq!(without.code, 2, "{}", without.stderr);

    let (mut child, mut log) = common::spawn_logged(ws.path(), &env, &["serve", "--wait-for-config"]);
    let wait = Duration::from_secs(30);
    let missing = log.until("waiting for", wait);
    // A config without tokens is not enough either.
    std::fs::write(&file, "[limits]\nmax_steps = 3\n").expect("write");
    let no_tokens = log.until("waiting for", wait);
    std::fs::remove_file(&file).expect("remove");
    let init = common::run(ws.path(), &[], &["init", "--to", &to]);
    let started = log.until("serving on", wait);
    let token = init.stdout.trim();
    let url = log.serving_on();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = match &url {
        Some(url) => Some(reqwest::Client::new().get(format!("{url}/metrics")).bearer_auth(token).send().await),
        None => None,
    }
    .map(|reply| reply.map(|r| r.status().as_u16()).ok());
    let _ = child.kill();
    let _ = child.wait();
    let text = log.text();
    assert!(missing && text.contains("does not exist"), "{text}");
    assert!(no_tokens && text.contains("no API tokens") && text.contains("docs-agent tokens add"), "{text}");
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(started && text.contains("is usable now; starting"), "{text}");
    assert_eq!(metrics, Some(Some(200)), "the new token works: {metrics:?}; {text}");
}

/// Over a real socket, one principal's requests past `serve.rate_per_minute` get 429 with when
/// to try again, while another principal's bucket is its own.
#[tokio::test]
async fn the_rate_limit_is_per_principal_over_a_real_socket() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ws = common::sample_workspace();
    common::serve_config(
        ws.path(),
        &[("ana", "rate-ana-0123456789", &["ask"]), ("bo", "rate-bo-0123456789", &["ask"])],
        "",
    );
    let toml = std::fs::read_to_string(ws.path().join("docs-agent.toml")).expect("config");
    std::fs::write(ws.path().join("docs-agent.toml"), toml.replace("[serve]\n", "[serve]\nrate_per_minute = 3\n"))
        .expect("config");
    let (mut child, url, _log) = common::spawn_serve_logged(ws.path(), &[("LLM_MODEL", "scripted")]);
    let client = reqwest::Client::new();
    let search = |token: &'static str| client.get(format!("{url}/v1/search?q=refund")).bearer_auth(token).send();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(search("rate-ana-0123456789").await.expect("answer").status().as_u16());
    }
    let limited = search("rate-ana-0123456789").await.expect("answer");
    let retry = limited.headers().get("retry-after").is_some();
    let other = search("rate-bo-0123456789").await.expect("answer").status().as_u16();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(statuses, [200, 200, 200, 429], "three a minute for ana");
    assert!(retry, "a 429 says when to try again");
    assert_eq!(other, 200, "bo's bucket is bo's own");
}
