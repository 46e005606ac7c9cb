//! Followers of a session share the server's log handles: with the file descriptors of a
//! common `ulimit -n` cut to 400, the full number of followers allowed (4 × max_concurrent =
//! 256) follow one session while sessions are made and messages answered, and the server's
//! descriptors grow by about one socket per follower, not by a log connection each. The counts
//! are written to target/serve/followers-descriptors.txt. (One principal follows them all here,
//! so its own share, `serve.max_followers_per_principal`, is raised to the server's.)

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use docs_agent::serve::auth::hash;

const TOKEN: &str = "followers-token-0123456789";
/// serve.max_concurrent here: 4 × this many followers are allowed.
const MAX_CONCURRENT: usize = 64;
/// The server's descriptor limit.
const NOFILE: u64 = 400;

/// One HTTP/1.1 request on its own connection; the status and body.
fn request(address: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    let status = reply.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// A follower of session `id`: the connection, once the server has answered its head.
fn follow(address: &str, id: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let head = format!(
        "GET /v1/sessions/{id}/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\naccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("write");
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).expect("a reply"), 1, "the server closed a follower");
        seen.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&seen);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn the_full_number_of_followers_share_the_logs_handles_under_a_low_descriptor_limit() {
    let ws = common::sample_workspace();
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\nmax_concurrent = {MAX_CONCURRENT}\n\
         max_followers_per_principal = {}\nsessions_per_minute = 1000\nmax_sessions_per_principal = 1000\n\
         [[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        4 * MAX_CONCURRENT,
        hash(TOKEN)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write config");
    let mut command = common::command(ws.path(), &[("LLM_MODEL", "scripted")], &["serve"]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child about to exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: NOFILE, rlim_max: NOFILE };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let (mut child, url, mut stderr) = common::serve_child(command);
    // Its log (a line per request) is read away, so the pipe never fills and blocks it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_string();

    let (status, created) = request(&address, "POST", "/v1/sessions", "");
    assert_eq!(status, 201, "{created}");
    let id = created.split("\"id\":\"").nth(1).and_then(|r| r.split('"').next()).expect("an id").to_string();
    let before = descriptors(child.id());
    let followers: Vec<TcpStream> = (0..4 * MAX_CONCURRENT).map(|_| follow(&address, &id)).collect();
    let with = descriptors(child.id());
    // For the record (the closing note quotes it).
    let report = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/serve");
    std::fs::create_dir_all(&report).expect("target/serve");
    let line =
        format!("descriptors: {before} before, {with} with {} followers (ulimit -n {NOFILE})\n", followers.len());
    std::fs::write(report.join("followers-descriptors.txt"), line).expect("write the record");
    assert!(
        with - before <= followers.len() + 16,
        "about one socket per follower, no log handle each: {before} -> {with} with {} followers",
        followers.len()
    );

    // The server goes on: a new session, and a message answered, with every follower open.
    let (status, body) = request(&address, "POST", "/v1/sessions", "");
    assert_eq!(status, 201, "{body}");
    let (status, body) =
        request(&address, "POST", &format!("/v1/sessions/{id}/messages"), "{\"text\": \"refund window?\"}");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"stop\""), "{body}");
    // The followers see it.
    for mut follower in followers.into_iter().step_by(64) {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("event: stopped") {
            let n = follower.read(&mut buf).expect("events");
            assert!(n > 0, "the follower's stream ended early: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
