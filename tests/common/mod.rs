//! Shared test helpers: a private copy of the sample workspace and a way to run the real binary
//! against it with a controlled environment.

#![allow(dead_code)]

pub mod git_http;
pub mod mcp;
pub mod postgres;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The test key planted in the sample docs.
pub const ONBOARDING_KEY: &str = "sk-test-4eC39HqLyjWDarjtT1zdp7dc";

/// Whether a test can use `what` (a program or service outside Rust): true when `present`.
/// When it is absent the test is skipped, said on stderr with how to install it, so the README's
/// test command passes on a machine with only the Rust toolchain; unless
/// `DOCS_AGENT_TEST_REQUIRE` is set (`.ci/run` sets it), and then the test fails saying so.
pub fn available(what: &str, present: bool, install: &str) -> bool {
    use std::io::Write;
    if present {
        return true;
    }
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let required = std::env::var("DOCS_AGENT_TEST_REQUIRE").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{test}: {what} is not installed; {install} (DOCS_AGENT_TEST_REQUIRE is set, so a test that needs it fails \
         instead of being skipped)"
    );
    let mut err = docs_agent::guard::sink::stderr();
    let _ = writeln!(
        err,
        "skipped {test}: {what} is not installed ({install}); DOCS_AGENT_TEST_REQUIRE=1 makes this a failure"
    );
    false
}

/// True when `program` runs (`program ARG` exits, whatever its status).
pub fn runs(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Copies `workspace/` into a fresh temporary folder.
pub fn sample_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("create temp dir");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace"), dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read sample workspace") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The trace lines (stderr lines that are JSON objects with a `tool`).
    pub fn tool_lines(&self) -> Vec<serde_json::Value> {
        self.stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v.get("tool").is_some())
            .collect()
    }
}

/// `docs-agent ARGS` with only the given environment (plus PATH and WORKSPACE), in `workspace`.
pub fn command(workspace: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("WORKSPACE", workspace)
        .current_dir(workspace)
        .args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// Starts `docs-agent serve` in `workspace` (its config listening on port 0) and returns the
/// child, its base URL (read from its first stderr line) and the rest of its stderr.
pub fn spawn_serve(
    workspace: &Path,
    env: &[(&str, &str)],
) -> (std::process::Child, String, std::io::BufReader<std::process::ChildStderr>) {
    serve_child(command(workspace, env, &["serve"]))
}

/// Starts `command` (a `docs-agent serve`), and returns the child, its base URL (read from its
/// first stderr line) and the rest of its stderr.
pub fn serve_child(
    mut command: Command,
) -> (std::process::Child, String, std::io::BufReader<std::process::ChildStderr>) {
    use std::io::BufRead;
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn serve");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("first line");
    let url = line.split("serving on ").nth(1).and_then(|rest| rest.split_whitespace().next()).map(str::to_string);
    let url = url.unwrap_or_else(|| panic!("no address in {line:?}"));
    (child, url, stderr)
}

/// Runs `docs-agent ARGS` with only the given environment (plus PATH), stdin closed.
pub fn run(workspace: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let output = command(workspace, env, args).stdin(Stdio::null()).output().expect("run docs-agent");
    finished(output)
}

/// Runs `docs-agent ARGS` with `input` on stdin.
pub fn run_input(workspace: &Path, env: &[(&str, &str)], args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut child = command(workspace, env, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn docs-agent");
    if let Some(mut stdin) = child.stdin.take() {
        // The process may exit (or be killed) before reading everything.
        let _ = stdin.write_all(input.as_bytes());
    }
    finished(child.wait_with_output().expect("wait for docs-agent"))
}

/// What a finished run of the binary produced.
pub fn finished(output: Output) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let Output { status, stdout, stderr } = output;
    Run {
        code: status.code().unwrap_or(-1),
        signal: status.signal(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Every file under `dir`, recursively, with its bytes.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

/// A request is valid when every tool call is followed, before the next user or assistant
/// message, by exactly one result per id, and no result answers a call that is not open.
pub fn assert_valid_request(messages: &[docs_agent::model::Message], context: &str) {
    use docs_agent::model::Message;
    let mut open: Vec<&str> = Vec::new();
    for m in messages {
        match m {
            Message::User(_) | Message::Assistant { .. } => {
                assert!(open.is_empty(), "{context}: calls {open:?} left without results in {messages:#?}");
                if let Message::Assistant { tool_calls, .. } = m {
                    open = tool_calls.iter().map(|c| c.id.as_str()).collect();
                }
            }
            Message::Tool { call_id, .. } => {
                let at = open.iter().position(|o| o == call_id);
                let at = at.unwrap_or_else(|| panic!("{context}: stray result {call_id}"));
                open.remove(at);
            }
            Message::System(_) => {}
        }
    }
    assert!(open.is_empty(), "{context}: calls {open:?} left without results at the end");
}

/// The status of a plain `GET url` (`http://host:port/path`), or `None` when nothing answers.
pub fn http_status(url: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok()?;
    stream.write_all(format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.split_whitespace().nth(1)?.parse().ok()
}

/// A child's stderr, read line by line on a thread as it comes, so a test can wait for a line
/// with a deadline instead of blocking on a read that may never end.
pub struct Log {
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

/// Starts `docs-agent ARGS` in `workspace` (stdin and stdout closed) with its stderr read as a
/// [`Log`] from its first byte.
pub fn spawn_logged(workspace: &Path, env: &[(&str, &str)], args: &[&str]) -> (std::process::Child, Log) {
    let mut child = command(workspace, env, args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn docs-agent");
    let log = Log::of(child.stderr.take().expect("stderr"));
    (child, log)
}

/// [`spawn_logged`] for `serve`, once it says where it serves: the child, its base URL, its log.
pub fn spawn_serve_logged(workspace: &Path, env: &[(&str, &str)]) -> (std::process::Child, String, Log) {
    let (child, mut log) = spawn_logged(workspace, env, &["serve"]);
    let url = log.until("serving on", std::time::Duration::from_secs(30)).then(|| log.serving_on()).flatten();
    let url = url.unwrap_or_else(|| panic!("serve never said where it serves: {}", log.text()));
    (child, url, log)
}

impl Log {
    /// Starts reading `stderr`.
    pub fn of(stderr: std::process::ChildStderr) -> Log {
        use std::io::BufRead;
        let (send, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Log { lines, seen: Vec::new() }
    }

    /// Reads until a line contains `needle` (true), or the stream ends or `within` passes
    /// (false).
    pub fn until(&mut self, needle: &str, within: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.seen.push(line);
                    if found {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    /// The lines read so far, for a failure message.
    pub fn text(&self) -> String {
        self.seen.join("\n")
    }

    /// The base URL `serve` said it serves on, if it has said so.
    pub fn serving_on(&self) -> Option<String> {
        self.seen.iter().find_map(|line| {
            line.split("serving on ").nth(1).and_then(|rest| rest.split_whitespace().next()).map(str::to_string)
        })
    }
}

/// `q` for a query string: every byte but letters and digits percent-encoded.
pub fn percent(q: &str) -> String {
    q.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// Writes `workspace/docs-agent.toml` for `serve` on a port of its choosing: one
/// `[[serve.tokens]]` entry per `(principal, token, roles)` (only the token's hash is kept),
/// then `extra` (more sections).
pub fn serve_config(workspace: &Path, tokens: &[(&str, &str, &[&str])], extra: &str) {
    let mut toml = String::from("[serve]\nlisten = \"127.0.0.1:0\"\n\n");
    for (principal, token, roles) in tokens {
        let roles: Vec<String> = roles.iter().map(|r| format!("\"{r}\"")).collect();
        toml.push_str(&format!(
            "[[serve.tokens]]\nprincipal = \"{principal}\"\nsha256 = \"{}\"\nroles = [{}]\n\n",
            docs_agent::serve::auth::hash(token),
            roles.join(", ")
        ));
    }
    toml.push_str(extra);
    std::fs::write(workspace.join("docs-agent.toml"), toml).expect("write docs-agent.toml");
}

/// Starts `ollama-stand-in` on `host` (`127.0.0.1:0` for any free port) with `models`
/// (comma-separated) already pulled; the process and its address.
pub fn stand_in_at(host: &str, models: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut server = Command::new(env!("CARGO_BIN_EXE_ollama-stand-in"))
        .env("OLLAMA_HOST", host)
        .env("STAND_IN_MODELS", models)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the stand-in");
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.take().expect("stderr")).read_line(&mut line).expect("its address");
    let address = line.trim().rsplit(' ').next().expect("address").to_string();
    (server, address)
}

/// A client of a `serve` on `url`, with one bearer token.
pub struct Api {
    client: reqwest::Client,
    url: String,
    token: String,
}

impl Api {
    /// A client for `url` that sends `token`.
    pub fn new(url: &str, token: &str) -> Api {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Api { client: reqwest::Client::new(), url: url.to_string(), token: token.to_string() }
    }

    /// `GET path`: the status and the JSON body (null when there is none).
    pub async fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let reply = self.client.get(format!("{}{path}", self.url)).bearer_auth(&self.token).send().await;
        Api::read(reply).await
    }

    /// `POST path` with `body`: the status and the JSON body (null when there is none).
    pub async fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let reply = self.client.post(format!("{}{path}", self.url)).bearer_auth(&self.token).json(&body).send().await;
        Api::read(reply).await
    }

    /// A new session's id.
    pub async fn new_session(&self) -> String {
        let (status, created) = self.post("/v1/sessions", serde_json::json!({})).await;
        assert_eq!(status, 201, "create a session: {created}");
        created["id"].as_str().expect("a session id").to_string()
    }

    async fn read(reply: reqwest::Result<reqwest::Response>) -> (u16, serde_json::Value) {
        let reply = reply.expect("the server answers");
        let status = reply.status().as_u16();
        (status, reply.json().await.unwrap_or_default())
    }
}

/// Serves `app` on a free port of 127.0.0.1 on its own thread (a fake of an outside
/// service): its address, `127.0.0.1:PORT`.
pub fn serve_app(app: axum::Router) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    addr
}

/// A child process (a `docs-agent serve`) killed and waited for when dropped, so a test that
/// fails half-way leaves no server running behind it.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
