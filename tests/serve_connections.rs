//! `docs-agent serve`'s connection limits, over real sockets on 127.0.0.1: a client that never
//! finishes its headers (slowloris) or leaves a kept-alive connection idle is cut off after
//! `serve.header_read_timeout_secs`; when every slot is taken, a half-open connection makes
//! room for a real one; and when every slot is busy with real requests, one more is answered
//! 503 and closed, while the server goes on answering once they are gone. A body that trickles
//! in (a slow POST) holds no request slot, is answered 408 after
//! `serve.body_read_timeout_secs`, and counts as half-open until it is in. Anonymous webhook
//! bodies, held unfinished on many HTTP/2 streams, take only the webhook's own small pool: a
//! caller with a token is still served.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use docs_agent::serve::auth::hash;

const TOKEN: &str = "connections-token-0123456789";
/// The server's cap in these tests.
const MAX_CONNECTIONS: usize = 4;

/// A workspace whose config listens on port 0 with a header deadline of `header_secs` and a
/// cap of [`MAX_CONNECTIONS`].
fn server(header_secs: u64) -> (tempfile::TempDir, std::process::Child, String) {
    server_with(&format!("header_read_timeout_secs = {header_secs}\n"))
}

/// A server capped at [`MAX_CONNECTIONS`], with `extra` lines in its `[serve]` section.
fn server_with(extra: &str) -> (tempfile::TempDir, std::process::Child, String) {
    let ws = common::sample_workspace();
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\nmax_connections = {MAX_CONNECTIONS}\n{extra}\n\
         [[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        hash(TOKEN)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write config");
    let (child, url, _stderr) = common::spawn_serve(ws.path(), &[("LLM_MODEL", "scripted")]);
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    (ws, child, address)
}

/// A connection that sends a whole request head for a 64-byte body, then 11 bytes of it.
fn slow_body(address: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connect");
    let head = format!(
        "POST /v1/ask HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: 64\r\n\r\n{{\"question\""
    );
    stream.write_all(head.as_bytes()).expect("write");
    stream
}

/// Reads until the server closes the connection; the client's own deadline (30 s) only guards
/// against a server that never does, and fails the test.
fn read_to_close(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return String::from_utf8_lossy(&seen).into_owned(),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return String::from_utf8_lossy(&seen).into_owned();
            }
            Err(e) => panic!("the server kept the connection open: {e}; got {:?}", String::from_utf8_lossy(&seen)),
        }
    }
}

/// `GET /healthz` on a new connection, closed after: the status line.
fn health(address: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").expect("write");
    read_to_close(&mut stream).lines().next().unwrap_or_default().to_string()
}

/// `rounds` health checks one after another, each answered 200 (`why` says what that shows).
fn always_served(address: &str, rounds: usize, why: &str) {
    for round in 0..rounds {
        let status = health(address);
        assert!(status.starts_with("HTTP/1.1 200"), "round {round}: {why}: {status:?}");
    }
}

/// A server stopped when dropped, also when a test fails.
struct Stopped(Option<std::process::Child>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            stop(child);
        }
    }
}

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn headers_that_never_finish_and_idle_keep_alive_are_cut_off() {
    let (_ws, child, address) = server(1);
    // Slowloris: the request line and one header, never the blank line that ends them.
    let mut slow = TcpStream::connect(&address).expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").expect("write");
    let got = read_to_close(&mut slow);
    assert!(!got.contains("200 OK"), "no answer to unfinished headers: {got:?}");

    // Kept alive after an answer, then idle: closed too.
    let mut idle = TcpStream::connect(&address).expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").expect("write");
    let got = read_to_close(&mut idle);
    assert!(got.starts_with("HTTP/1.1 200"), "the request was answered before the idle cut: {got:?}");
    stop(child);
}

/// Reads one response (headers and a `content-length` body) and leaves the connection open.
fn read_response(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("a response");
        assert!(n > 0, "closed before a response: {:?}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
    }
}

#[test]
fn a_flood_of_half_open_connections_does_not_keep_a_real_client_out() {
    // A long header deadline: only eviction can make room.
    let (_ws, child, address) = server(60);
    let flood: Vec<TcpStream> = (0..MAX_CONNECTIONS * 5)
        .map(|_| {
            let mut s = TcpStream::connect(&address).expect("connect");
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n");
            s
        })
        .collect();
    always_served(&address, 10, "a real request gets in");
    drop(flood);
    stop(child);
}

#[test]
fn connections_over_the_cap_are_shed_when_all_are_busy_and_service_comes_back() {
    let (_ws, child, address) = server(60);
    // Fill every slot with kept-alive connections that have been served: not half-open, so none
    // can be closed to make room.
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut s = TcpStream::connect(&address).expect("connect");
            s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").expect("write");
            assert!(read_response(&mut s).starts_with("HTTP/1.1 200"));
            s
        })
        .collect();
    let shed = health(&address);
    assert!(shed.starts_with("HTTP/1.1 503"), "a connection over the cap is refused: {shed:?}");
    // Once the held connections go, the server answers again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    let back = loop {
        let status = health(&address);
        if status.contains("200") || Instant::now() > deadline {
            break status;
        }
        std::thread::yield_now();
    };
    assert!(back.contains("200"), "served again after the flood: {back:?}");
    stop(child);
}

#[test]
fn a_body_that_trickles_holds_no_slot_and_is_answered_408() {
    // One request slot: were the slow body holding it, the health check would be shed (503).
    let (_ws, child, address) = server_with("max_concurrent = 1\nbody_read_timeout_secs = 1\n");
    let mut slow = slow_body(&address);
    always_served(&address, 20, "a slow body holds no slot");
    let got = read_to_close(&mut slow);
    assert!(got.starts_with("HTTP/1.1 408"), "the body's deadline: {got:?}");
    assert!(got.contains("body_read_timeout_secs"), "{got:?}");
    stop(child);
}

#[test]
fn connections_still_sending_their_body_make_room_for_a_real_client() {
    // A long body deadline: only eviction can make room.
    let (_ws, child, address) = server_with("body_read_timeout_secs = 60\n");
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS * 2).map(|_| slow_body(&address)).collect();
    // Many rounds: once the server has read the held requests' heads, a server that counted
    // them as arrived would refuse every round.
    always_served(&address, 20, "a real request gets in");
    drop(held);
    stop(child);
}

#[test]
fn a_body_over_the_limit_is_refused_as_soon_as_it_is_known_to_be() {
    let (_ws, child, address) = server_with("max_body_bytes = 1024\nbody_read_timeout_secs = 60\n");
    let head = |framing: &str| {
        format!(
            "POST /v1/ask HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
             content-type: application/json\r\n{framing}\r\n"
        )
    };
    // Declared too large: refused before any of the body is sent (the body deadline is 60 s).
    let mut declared = TcpStream::connect(&address).expect("connect");
    declared.write_all(head("content-length: 4096\r\n").as_bytes()).expect("write");
    let got = read_to_close(&mut declared);
    assert!(got.starts_with("HTTP/1.1 413") && got.contains("max_body_bytes"), "{got:?}");
    // Chunked, with no length given: refused once the chunks pass the limit, the rest unsent.
    let mut chunked = TcpStream::connect(&address).expect("connect");
    let chunk = format!("320\r\n{}\r\n", "x".repeat(0x320));
    chunked.write_all(format!("{}{chunk}{chunk}", head("transfer-encoding: chunked\r\n")).as_bytes()).expect("write");
    let got = read_to_close(&mut chunked);
    assert!(got.starts_with("HTTP/1.1 413"), "{got:?}");
    // Without a token: refused before any of the body is read.
    let mut anonymous = TcpStream::connect(&address).expect("connect");
    anonymous.write_all(b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-length: 64\r\n\r\n").expect("write");
    let got = read_to_close(&mut anonymous);
    assert!(got.starts_with("HTTP/1.1 401"), "{got:?}");
    stop(child);
}

/// Issue 51, finding 2: HTTP/2 connections each holding 8 unfinished webhook bodies (no token
/// needed to send one) once took every body slot, and every authenticated POST got 503. They
/// now share the webhook's pool of 8: the rest are refused at once, and a caller with a token
/// is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_webhook_bodies_on_http2_streams_cannot_take_an_authenticated_callers_slot() {
    use axum::body::Bytes;
    use axum::http::{Request, StatusCode};
    // 16 body slots; 4 connections × 8 streams = 32 unfinished webhook bodies, twice as many.
    const SLOTS: usize = 16;
    const CONNECTIONS: usize = 4;
    const STREAMS: usize = 8;
    let ws = common::sample_workspace();
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\nmax_connections = {SLOTS}\nbody_read_timeout_secs = 120\n\
         [[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        hash(TOKEN)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write config");
    let (child, url, _stderr) = common::spawn_serve(ws.path(), &[("LLM_MODEL", "scripted")]);
    let guard = Stopped(Some(child));
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_string();

    let (answered, mut statuses) = tokio::sync::mpsc::unbounded_channel::<StatusCode>();
    let mut held = Vec::new();
    for _ in 0..CONNECTIONS {
        let tcp = tokio::net::TcpStream::connect(&address).await.expect("connect");
        let (client, connection) = h2::client::handshake(tcp).await.expect("an HTTP/2 connection");
        tokio::spawn(connection);
        for _ in 0..STREAMS {
            let request = Request::post(format!("http://{address}/v1/sources/docs/sync"))
                .header("content-type", "application/json")
                .header("content-length", "4096")
                .header("x-hub-signature-256", format!("sha256={}", "0".repeat(64)))
                .body(())
                .expect("a request");
            let mut ready = client.clone().ready().await.expect("a stream");
            let (response, mut body) = ready.send_request(request, false).expect("sent");
            body.send_data(Bytes::from_static(b"{\"ref\": \"refs/heads/main\""), false).expect("part of the body");
            // The rest of the body never comes: the stream is held as long as `body` lives.
            held.push(body);
            let answered = answered.clone();
            tokio::spawn(async move {
                if let Ok(response) = response.await {
                    let _ = answered.send(response.status());
                }
            });
        }
    }
    // All but the webhook's own pool are refused at once.
    let mut refused = 0;
    while refused < CONNECTIONS * STREAMS - docs_agent::serve::body::WEBHOOK_BODIES {
        let status = tokio::time::timeout(Duration::from_secs(60), statuses.recv()).await;
        let status = status.expect("the webhook bodies past the pool are answered").expect("a status");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "a webhook body past the pool");
        refused += 1;
    }
    // The held bodies are still unfinished; a caller with a token is served all the same.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let asked = reqwest::Client::new()
        .post(format!("{url}/v1/ask"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"question": "how long is the refund window"}))
        .send()
        .await
        .expect("an answer");
    let status = asked.status().as_u16();
    let body = asked.text().await.unwrap_or_default();
    assert_eq!(status, 200, "{body}");
    assert!(statuses.try_recv().is_err(), "the pool's bodies are still held");
    drop(held);
    drop(guard);
}
