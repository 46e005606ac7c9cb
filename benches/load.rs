//! `cargo bench --bench load`: the server (release build, scripted model) on 127.0.0.1, driven
//! by concurrent clients from this process. Reports throughput, p50/p99 latency, errors and the
//! server's peak RSS, against a baseline timed in the same run (`GET /healthz`: the HTTP floor
//! of this machine and client), and checks that a session followed over SSE loses no event.
//! Aims (issue 5): 5,000 scripted asks/s on 2 cores, p99 under 20 ms, under 64 MiB RSS.
//!
//! Knobs: LOAD_REQUESTS (default 20000), LOAD_CLIENTS (default 32), LOAD_SESSIONS (default 200).

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TOKEN: &str = "load-bench-token-0123456789";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Result<Server, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = dir.path().join("ws");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace");
    let status = Command::new("cp").arg("-r").arg(&source).arg(&ws).status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("cannot copy the sample workspace".into());
    }
    // LOAD_DOCS: a real docs set in place of the sample's (a search then costs what it costs
    // there), e.g. ../shared/corpora/business-central-docs.
    if let Ok(docs) = std::env::var("LOAD_DOCS") {
        std::fs::remove_dir_all(ws.join("docs")).map_err(|e| e.to_string())?;
        let status =
            Command::new("cp").arg("-r").arg(&docs).arg(ws.join("docs")).status().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("cannot copy LOAD_DOCS={docs}"));
        }
    }
    let digest: String = Sha256::digest(TOKEN.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let config = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\nrate_per_minute = 100000000\nmax_concurrent = 1024\nmax_open_sessions = 100000\nmax_sessions_per_principal = 100000000\nsessions_per_minute = 100000000\nmax_turns_per_principal = 100000\nmax_followers_per_principal = 100000\n\n\
         [[serve.tokens]]\nprincipal = \"load\"\nsha256 = \"{digest}\"\nroles = [\"ask\"]\n"
    );
    std::fs::write(dir.path().join("docs-agent.toml"), config).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_docs-agent"))
        .arg("serve")
        .current_dir(dir.path())
        .env_clear()
        .env("WORKSPACE", &ws)
        .env("LLM_MODEL", "scripted")
        .env("DOCS_AGENT_SESSION_LOG", dir.path().join("data/sessions.db"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let mut line = String::new();
    let stderr = child.stderr.take().ok_or("no stderr")?;
    BufReader::new(stderr).read_line(&mut line).map_err(|e| e.to_string())?;
    let url = line.split("serving on ").nth(1).and_then(|r| r.split_whitespace().next()).ok_or(format!("{line:?}"))?;
    Ok(Server { url: url.to_string(), child, _dir: dir })
}

/// Peak resident set of `pid` (VmHWM), in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

struct Run {
    latencies: Vec<f64>,
    errors: usize,
    secs: f64,
}

/// `requests` requests made by `clients` concurrent clients.
async fn drive(client: &reqwest::Client, url: &str, ask: bool, requests: usize, clients: usize) -> Run {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0);
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                let t = Instant::now();
                let response = if ask {
                    client
                        .post(format!("{url}/v1/ask"))
                        .bearer_auth(TOKEN)
                        .json(&json!({"question": "how long is the refund window"}))
                        .send()
                        .await
                } else {
                    client.get(format!("{url}/healthz")).send().await
                };
                let ok = match response {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
                if !ok {
                    errors += 1;
                }
            }
            (latencies, errors)
        }));
    }
    let mut run = Run { latencies: Vec::new(), errors: 0, secs: 0.0 };
    for task in tasks {
        if let Ok((latencies, errors)) = task.await {
            run.latencies.extend(latencies);
            run.errors += errors;
        }
    }
    run.secs = started.elapsed().as_secs_f64();
    run.latencies.sort_by(|a, b| a.total_cmp(b));
    run
}

/// The JSON body of an authorised request.
async fn json_of(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let response = request.bearer_auth(TOKEN).send().await.map_err(|e| e.to_string())?;
    response.json().await.map_err(|e| e.to_string())
}

/// One session: a streamed turn, then the log followed over SSE from the start; returns whether
/// the streamed events equal the session's events, and the turn's latency.
async fn session(client: &reqwest::Client, url: &str) -> Result<(bool, f64), String> {
    let created = json_of(client.post(format!("{url}/v1/sessions"))).await?;
    let id = created["id"].as_str().ok_or("no id")?.to_string();
    let t = Instant::now();
    let turn = client
        .post(format!("{url}/v1/sessions/{id}/messages"))
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .json(&json!({"text": "who approves refunds"}))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let latency = t.elapsed().as_secs_f64() * 1e3;
    if !turn.contains("event: done") {
        return Err(format!("the streamed turn did not finish: {turn}"));
    }
    let listed = json_of(client.get(format!("{url}/v1/sessions/{id}/events"))).await?;
    let expected: Vec<u64> =
        listed["events"].as_array().ok_or("no events")?.iter().filter_map(|e| e["seq"].as_u64()).collect();
    // Follow from the start until the turn's `stopped` event.
    let mut response = client
        .get(format!("{url}/v1/sessions/{id}/events?after=0"))
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let (mut buffer, mut seen) = (String::new(), Vec::new());
    while seen.len() < expected.len() {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk()).await.map_err(|_| "stalled")?;
        let Some(chunk) = chunk.map_err(|e| e.to_string())? else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            seen.extend(
                block.lines().filter_map(|l| l.strip_prefix("id:")).filter_map(|v| v.trim().parse::<u64>().ok()),
            );
        }
    }
    Ok((seen == expected, latency))
}

fn main() -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let requests = env_usize("LOAD_REQUESTS", 20_000);
    let clients = env_usize("LOAD_CLIENTS", 32);
    let sessions = env_usize("LOAD_SESSIONS", 200);
    let server = start()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build().map_err(|e| e.to_string())?;
        // Warm up connections and caches.
        drive(&client, &server.url, true, 500, clients).await;
        let floor = drive(&client, &server.url, false, requests, clients).await;
        // While the asks run, one client asks /healthz every 5 ms: how long a request that needs
        // no search waits behind the searches on the server's workers.
        let probing = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let probe = {
            let (client, url, probing) = (client.clone(), server.url.clone(), probing.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while probing.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = Instant::now();
                    if client.get(format!("{url}/healthz")).send().await.is_ok() {
                        latencies.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                latencies.sort_by(|a, b| a.total_cmp(b));
                latencies
            })
        };
        let asks = drive(&client, &server.url, true, requests, clients).await;
        probing.store(false, std::sync::atomic::Ordering::Relaxed);
        let probed = probe.await.unwrap_or_default();
        println!("## Load: {requests} requests from {clients} concurrent clients on 127.0.0.1 (2 cores shared with the client)\n");
        println!("| what | requests/s | p50 ms | p99 ms | errors | x baseline (throughput) |\n|---|---:|---:|---:|---:|---:|");
        let rate = |r: &Run| r.latencies.len() as f64 / r.secs;
        println!(
            "| POST /v1/ask (scripted model: search + answer) | {:.0} | {:.2} | {:.2} | {} | {:.2} |",
            rate(&asks),
            percentile(&asks.latencies, 0.5),
            percentile(&asks.latencies, 0.99),
            asks.errors,
            rate(&asks) / rate(&floor)
        );
        println!(
            "| baseline: GET /healthz | {:.0} | {:.2} | {:.2} | {} | 1.00 |",
            rate(&floor),
            percentile(&floor.latencies, 0.5),
            percentile(&floor.latencies, 0.99),
            floor.errors
        );
        println!(
            "| GET /healthz while the asks run (one client, every 5 ms; {} probes) | | {:.2} | {:.2} | | |",
            probed.len(),
            percentile(&probed, 0.5),
            percentile(&probed, 0.99)
        );
        // Durable sessions, streamed, in parallel batches.
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..sessions {
            let (client, url) = (client.clone(), server.url.clone());
            tasks.push(tokio::spawn(async move { session(&client, &url).await }));
        }
        let (mut intact, mut failed, mut latencies) = (0, 0, Vec::new());
        for task in tasks {
            match task.await {
                Ok(Ok((true, latency))) => {
                    intact += 1;
                    latencies.push(latency);
                }
                Ok(Ok((false, _))) => failed += 1,
                Ok(Err(e)) => {
                    failed += 1;
                    eprintln!("session failed: {e}");
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("session task failed: {e}");
                }
            }
        }
        latencies.sort_by(|a, b| a.total_cmp(b));
        println!(
            "\n## Sessions: {sessions} at once, each a streamed turn (durable log) then followed over SSE from event 0\n\n\
             {intact} intact (every event streamed once, in order), {failed} lost or failed; {:.0} sessions/s; \
             streamed turn p50 {:.1} ms, p99 {:.1} ms",
            sessions as f64 / started.elapsed().as_secs_f64(),
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        );
        println!("\nServer peak RSS: {:.1} MiB", peak_rss_mib(server.child.id()));
        println!("Aims (issue 5): 5,000 asks/s, p99 under 20 ms, under 64 MiB.");
        Ok::<_, String>(())
    })
}
