//! `docs-agent mcp` spoken to over stdio as a client would, in raw JSON-RPC.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

/// `docs-agent mcp`, started as a client starts it, and initialized.
pub struct McpChild {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Every line the server wrote on stdout.
    pub lines: Vec<String>,
}

impl McpChild {
    pub fn start(workspace: &std::path::Path, env: &[(&str, &str)]) -> McpChild {
        McpChild::spawn(workspace, env, Stdio::null())
    }

    /// [`McpChild::start`], keeping its stderr for [`McpChild::finish`].
    pub fn start_logged(workspace: &std::path::Path, env: &[(&str, &str)]) -> McpChild {
        McpChild::spawn(workspace, env, Stdio::piped())
    }

    /// Closes stdin, waits for the server to end and returns everything it wrote on stderr.
    pub fn finish(mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        let Some(mut stderr) = self.child.stderr.take() else {
            return text;
        };
        let _ = self.child.kill();
        let _ = stderr.read_to_string(&mut text);
        text
    }

    fn spawn(workspace: &std::path::Path, env: &[(&str, &str)], stderr: Stdio) -> McpChild {
        let mut child = super::command(workspace, env, &["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start docs-agent mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = McpChild { child, stdin, stdout, next: 0, lines: Vec::new() };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "docs-agent", "{init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write a message");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request; its response (the other lines read on the way are kept too).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read a line");
            assert!(read > 0, "the server closed stdout before answering {method}");
            self.lines.push(line.clone());
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `tools/call NAME ARGUMENTS`: its result.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        reply["result"].clone()
    }
}

impl Drop for McpChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result.
pub fn text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("\n")
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// `POST /mcp` with `token`: the status and the JSON body.
pub async fn post_mcp(url: &str, token: Option<&str>, message: Value) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = client
        .post(format!("{url}/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&message);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let reply = request.send().await.expect("the server answers");
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or_default())
}
