//! Client for OpenAI-compatible `/chat/completions` servers (Ollama, vLLM, llama.cpp, OpenAI):
//! tool calling, per-request timeouts, retries with backoff on 429/5xx/connect errors, and errors
//! that say what to do.

use std::time::Duration;

use serde_json::{Value, json};

use super::reply_error::ReplyError;
use super::{Message, ModelError, Reply, ToolCall, ToolSpec, Usage, textcall};
use crate::config::LlmConfig;

/// First retry delay; doubled each time.
const BACKOFF_START: Duration = Duration::from_millis(200);
/// Longest wait between retries, even when the server asks for more.
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// Largest reply body read from the server.
const MAX_BODY_BYTES: usize = 8 << 20;
/// Characters of an error body kept in messages.
const ERROR_BODY_CHARS: usize = 300;
/// Bytes of an error reply's body read at most (the start holds its message).
const ERROR_BODY_READ_BYTES: usize = 64 * 1024;

/// A configured client for one server and model.
pub struct Client {
    /// The HTTP client (rustls, timeouts set).
    http: reqwest::Client,
    /// `{base_url}/chat/completions`.
    url: String,
    /// Model name sent with each request.
    model: String,
    /// Bearer key, if any.
    api_key: Option<String>,
    /// Retries after the first attempt.
    retries: u32,
    /// `max_tokens` per call.
    max_tokens: u32,
    /// Sampling temperature.
    temperature: f32,
    /// Request timeout, for messages.
    timeout_secs: u64,
    /// What the server said of the model's context length.
    reported: std::sync::Mutex<Reported>,
    /// The server said it is llama.cpp's `llama-server` (its model list, read for the context
    /// length): requests ask it to keep their prompt's prefix cached.
    llama_cpp: std::sync::atomic::AtomicBool,
}

/// What the server said of the model's context length ([`Client::context_length`]).
#[derive(Debug, Clone, Copy)]
enum Reported {
    /// Not asked yet, or it could not be reached.
    Unasked,
    /// This many tokens: kept for the client's life.
    Known(u64),
    /// It answered without saying, at this moment: asked again after [`ASK_CONTEXT_AGAIN`].
    Silent(std::time::Instant),
}

/// What asking a server for its context length came to.
enum Said {
    /// This many tokens, for good.
    Length(u64),
    /// This many for now (Ollama's default before its model is loaded): asked again next call.
    Meanwhile(u64),
    /// It answered without saying.
    Nothing,
    /// It could not be reached.
    Unreachable,
}

/// One answer to a question about the context length.
enum Probed {
    /// A JSON reply.
    Json(Value),
    /// Anything else: an error status, a timeout, a body that is not JSON.
    Other,
    /// Nothing answered.
    Unreachable,
}

/// How long a server that did not report a context length is not asked again.
const ASK_CONTEXT_AGAIN: Duration = Duration::from_secs(300);
/// How long one question about the context length may take.
const CONTEXT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

impl Client {
    /// Builds a client; fails only when the TLS stack cannot start.
    pub fn new(llm: &LlmConfig, max_tokens: u32) -> Result<Client, super::SetupError> {
        // reqwest is built without a default TLS provider; a second install attempt is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(llm.request_timeout_secs))
            .connect_timeout(Duration::from_secs(llm.request_timeout_secs.min(10)))
            .build()?;
        Ok(Client {
            http,
            url: format!("{}/chat/completions", llm.base_url.trim_end_matches('/')),
            model: llm.model.clone(),
            api_key: llm.api_key.clone().filter(|k| !k.is_empty()).inspect(|k| crate::guard::redact::remember(k)),
            retries: llm.retries,
            max_tokens,
            temperature: llm.temperature,
            timeout_secs: llm.request_timeout_secs,
            reported: std::sync::Mutex::new(Reported::Unasked),
            llama_cpp: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Asks the server for its model list (`GET {base}/models`): is it up, and does it have
    /// this model? Used by readiness checks.
    pub async fn ping(&self) -> Result<(), ModelError> {
        let url = self.url.replace("/chat/completions", "/models");
        let mut request = self.http.get(&url).timeout(Duration::from_secs(3));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response =
            request.send().await.map_err(|e| ModelError::Unreachable { url: url.clone(), detail: root_cause(&e) })?;
        if !response.status().is_success() {
            return Err(ModelError::Http { url, status: response.status().as_u16(), body: String::new() });
        }
        let body = response.text().await.unwrap_or_default();
        // Ollama lists a model named without a tag as `name:latest`.
        let tagged = super::context::tagged(&self.model);
        if !body.contains(&format!("\"{}\"", self.model)) && !body.contains(&format!("\"{tagged}\"")) {
            return Err(ModelError::UnknownModel { model: self.model.clone(), detail: "not in GET /models".into() });
        }
        Ok(())
    }

    /// The model's context length in tokens, as the server reports it (`model::context`
    /// says where each kind of server does): asked once and kept. A server that could not be
    /// reached is asked again at the next call; one that did not say, after
    /// [`ASK_CONTEXT_AGAIN`]; an Ollama whose model is not loaded yet, at the next call (its
    /// default context meanwhile).
    pub async fn context_length(&self) -> Option<u64> {
        let known = *self.reported.lock().unwrap_or_else(|p| p.into_inner());
        match known {
            Reported::Known(n) => return Some(n),
            Reported::Silent(at) if at.elapsed() < ASK_CONTEXT_AGAIN => return None,
            Reported::Unasked | Reported::Silent(_) => {}
        }
        let said = self.ask_context_length().await;
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        match said {
            Said::Length(n) => {
                *reported = Reported::Known(n);
                Some(n)
            }
            Said::Meanwhile(n) => Some(n),
            Said::Nothing => {
                *reported = Reported::Silent(std::time::Instant::now());
                None
            }
            Said::Unreachable => None,
        }
    }

    /// Asks the places this kind of server says its context length, and no others: the model
    /// list first (vLLM and others put it there), then llama.cpp's `/props` when the list is
    /// llama.cpp's, then Ollama's `/api/ps` and `/api/show` when `/api/version` says it is Ollama.
    async fn ask_context_length(&self) -> Said {
        use super::context;
        let base = self.url.trim_end_matches("/chat/completions");
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let listing = match self.probe(self.http.get(format!("{base}/models"))).await {
            Probed::Json(listing) => listing,
            Probed::Other => Value::Null,
            Probed::Unreachable => return Said::Unreachable,
        };
        if context::is_llama_cpp(&listing) {
            self.llama_cpp.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(n) = context::from_models(&listing, &self.model) {
            return Said::Length(n);
        }
        if self.is_llama_cpp() {
            return match self.probe(self.http.get(format!("{root}/props"))).await {
                Probed::Json(props) => context::from_props(&props).map_or(Said::Nothing, Said::Length),
                Probed::Other => Said::Nothing,
                Probed::Unreachable => Said::Unreachable,
            };
        }
        let Probed::Json(version) = self.probe(self.http.get(format!("{root}/api/version"))).await else {
            return Said::Nothing;
        };
        if version.get("version").is_none() {
            return Said::Nothing;
        }
        if let Probed::Json(ps) = self.probe(self.http.get(format!("{root}/api/ps"))).await
            && let Some(n) = context::from_ollama_ps(&ps, &self.model)
        {
            return Said::Length(n);
        }
        let show = self.http.post(format!("{root}/api/show")).json(&json!({ "model": self.model }));
        if let Probed::Json(show) = self.probe(show).await
            && let Some(n) = context::from_ollama_show(&show)
        {
            return Said::Length(n);
        }
        Said::Meanwhile(context::OLLAMA_DEFAULT)
    }

    /// One question of [`Client::context_length`].
    async fn probe(&self, request: reqwest::RequestBuilder) -> Probed {
        let mut request = request.timeout(CONTEXT_PROBE_TIMEOUT);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_connect() => return Probed::Unreachable,
            // A timeout is an answer too: this server does not say (asked again later).
            Err(_) => return Probed::Other,
        };
        if !response.status().is_success() {
            return Probed::Other;
        }
        match self.read_body(response).await.ok().and_then(|b| serde_json::from_str(&b).ok()) {
            Some(json) => Probed::Json(json),
            None => Probed::Other,
        }
    }

    /// True once the server's model list showed it is llama.cpp's `llama-server`.
    fn is_llama_cpp(&self) -> bool {
        self.llama_cpp.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One chat completion, streamed (SSE): `on_delta` gets the text as it arrives. Retried on
    /// 429, 5xx and connect errors when the server fails before it starts answering; a stream
    /// that breaks halfway is an error, never retried (its text was already handed on). A server
    /// that ignores `stream` and sends one JSON reply is read as such.
    pub async fn complete_streaming(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        shape: super::Shape<'_>,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, ModelError> {
        let mut body = self.request_body(messages, tools, shape);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let mut delay = BACKOFF_START;
        let mut attempt = 0;
        loop {
            match self.attempt(&body, on_delta).await {
                Ok(reply) => return Ok(self.accept_text_calls(reply, tools)),
                Err(Attempt::Retry { error, after }) if attempt < self.retries => {
                    attempt += 1;
                    tracing::debug!("model call failed ({error}); retry {attempt} of {}", self.retries);
                    tokio::time::sleep(after.unwrap_or(delay).min(BACKOFF_MAX)).await;
                    delay = (delay * 2).min(BACKOFF_MAX);
                }
                Err(Attempt::Retry { error, .. }) | Err(Attempt::Fatal(error)) => return Err(error),
            }
        }
    }

    async fn attempt(&self, body: &Value, on_delta: &mut (dyn FnMut(&str) + Send)) -> Result<Reply, Attempt> {
        let response = self.send(body).await?;
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !response.status().is_success() || !streamed {
            let reply = self.finish(response).await?;
            on_delta(&reply.content);
            return Ok(reply);
        }
        let malformed = |problem: ReplyError| Attempt::Fatal(self.unreadable(problem));
        let mut response = response;
        let mut stream = super::sse::Stream::default();
        let mut read = 0usize;
        while let Some(chunk) = response.chunk().await.map_err(|e| match self.transport_error(e) {
            Attempt::Retry { error, .. } => Attempt::Fatal(error),
            fatal => fatal,
        })? {
            read += chunk.len();
            if read > MAX_BODY_BYTES {
                return Err(malformed(ReplyError::TooLarge("the streamed reply", MAX_BODY_BYTES >> 20)));
            }
            if stream.feed(&chunk, on_delta).map_err(malformed)? {
                break;
            }
        }
        stream.finish(on_delta).map_err(malformed)
    }

    fn request_body(&self, messages: &[Message], tools: &[ToolSpec], shape: super::Shape<'_>) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        let mut body = json!({
            "model": self.model,
            "messages": messages.iter().map(to_wire).collect::<Vec<_>>(),
            "tools": tools,
            "max_tokens": shape.max_tokens.unwrap_or(self.max_tokens),
            "temperature": self.temperature,
            "stream": false,
        });
        if !shape.stop.is_empty() {
            body["stop"] = json!(shape.stop.iter().take(4).collect::<Vec<_>>());
        }
        // llama.cpp keeps the slot's cache for the prompt's longest common prefix (the system
        // prompt and the tools) only when asked; other servers are sent nothing they do not know.
        if self.is_llama_cpp() {
            body["cache_prompt"] = json!(true);
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, Attempt> {
        let mut request = self.http.post(&self.url).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        request.send().await.map_err(|e| self.transport_error(e))
    }

    /// Reads a whole (non-streamed) response: the reply, or the error its status means.
    async fn finish(&self, response: reqwest::Response) -> Result<Reply, Attempt> {
        let status = response.status();
        let after = retry_after(&response);
        if status.is_success() {
            let text = self.read_body(response).await?;
            return parse_reply(&text).map_err(|problem| Attempt::Fatal(self.unreadable(problem)));
        }
        // An error's status is what matters: only the start of its body is read, however large.
        let text = read_error_start(response).await;
        let snippet = crate::guard::redact::redact_truncated(&text, ERROR_BODY_CHARS);
        let lower = text.to_ascii_lowercase();
        if status.as_u16() == 404
            && lower.contains("model")
            && (lower.contains("not found") || lower.contains("does not exist"))
        {
            return Err(Attempt::Fatal(ModelError::UnknownModel { model: self.model.clone(), detail: snippet }));
        }
        let error = ModelError::Http { url: self.url.clone(), status: status.as_u16(), body: snippet };
        if status.as_u16() == 429 || status.is_server_error() {
            Err(Attempt::Retry { error, after })
        } else {
            Err(Attempt::Fatal(error))
        }
    }

    /// The body as text, refusing one larger than [`MAX_BODY_BYTES`] before it fills memory.
    /// (An error's body is read with [`read_error_start`] instead.)
    async fn read_body(&self, response: reqwest::Response) -> Result<String, Attempt> {
        let malformed = |problem| Attempt::Fatal(self.unreadable(problem));
        read_capped(response, MAX_BODY_BYTES).await.map_err(|e| match e {
            Capped::TooLarge => malformed(ReplyError::TooLarge("the reply", MAX_BODY_BYTES >> 20)),
            Capped::NotUtf8 => malformed(ReplyError::NotUtf8("the reply")),
            Capped::Transport(e) => self.transport_error(e),
        })
    }

    /// The error for a reply that could not be read: the server's own words when it reported
    /// an error, else what was wrong with the reply.
    fn unreadable(&self, problem: ReplyError) -> ModelError {
        match problem {
            ReplyError::Reported(message) => ModelError::Reported { url: self.url.clone(), message },
            problem => ModelError::Malformed { url: self.url.clone(), problem },
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> Attempt {
        if e.is_timeout() {
            Attempt::Fatal(ModelError::Timeout { url: self.url.clone(), secs: self.timeout_secs })
        } else if e.is_connect() {
            Attempt::Retry {
                error: ModelError::Unreachable { url: self.url.clone(), detail: root_cause(&e) },
                after: None,
            }
        } else if e.is_decode() || e.is_body() {
            Attempt::Fatal(self.unreadable(ReplyError::Body(root_cause(&e))))
        } else {
            Attempt::Retry {
                error: ModelError::Unreachable { url: self.url.clone(), detail: root_cause(&e) },
                after: None,
            }
        }
    }

    /// A reply with no `tool_calls` whose text holds tool calls for known tools (in the forms
    /// `textcall` reads) becomes those calls.
    fn accept_text_calls(&self, mut reply: Reply, tools: &[ToolSpec]) -> Reply {
        if reply.tool_calls.is_empty() {
            let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
            if let Some(calls) = textcall::parse(&reply.content, &names) {
                reply.tool_calls = calls;
                reply.content.clear();
            }
        }
        reply
    }
}

/// The outcome of one failed attempt.
enum Attempt {
    /// Worth trying again (after the server's Retry-After, when given).
    Retry { error: ModelError, after: Option<Duration> },
    /// Not worth trying again.
    Fatal(ModelError),
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Why [`read_capped`] read no text.
pub(crate) enum Capped {
    /// The body is longer than allowed.
    TooLarge,
    /// The body is not UTF-8.
    NotUtf8,
    /// The connection failed while the body was read.
    Transport(reqwest::Error),
}

/// A reply's body as text, refused past `max` bytes before it fills memory (the declared length
/// first, then as it arrives): the one reader of the model server's and the embedding server's
/// replies.
pub(crate) async fn read_capped(mut response: reqwest::Response, max: usize) -> Result<String, Capped> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(Capped::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Capped::Transport)? {
        if body.len() + chunk.len() > max {
            return Err(Capped::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| Capped::NotUtf8)
}

pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The wire form of one message.
fn to_wire(message: &Message) -> Value {
    match message {
        Message::System(text) => json!({"role": "system", "content": text}),
        Message::User(text) => json!({"role": "user", "content": text}),
        Message::Assistant { content, tool_calls } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        Message::Assistant { content, tool_calls } => json!({
            "role": "assistant",
            "content": content,
            "tool_calls": tool_calls.iter().map(|c| json!({
                "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}
            })).collect::<Vec<_>>(),
        }),
        Message::Tool { call_id, content } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// Reads the first choice of a chat completion; a body that holds an error object instead (some
/// servers answer 200 with one) is the server's error.
pub fn parse_reply(text: &str) -> Result<Reply, ReplyError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ReplyError::NotJson("the reply", e.to_string()))?;
    let message = match (value.pointer("/choices/0/message"), value.get("error")) {
        (Some(message), _) => message,
        (None, Some(error)) if !error.is_null() => return Err(ReplyError::Reported(super::sse::told(&value))),
        (None, _) => return Err(ReplyError::NoMessage),
    };
    let content = message.get("content").and_then(Value::as_str).unwrap_or("").to_string();
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let function = call.get("function").ok_or(ReplyError::NoFunction(i))?;
            let name = function.get("name").and_then(Value::as_str).ok_or(ReplyError::NoName(i))?;
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "{}".to_string(),
                Some(v) => v.to_string(),
            };
            let id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{i}"), str::to_string);
            tool_calls.push(ToolCall { id, name: name.to_string(), arguments });
        }
    }
    let usage = value.get("usage").map(Usage::from_json);
    Ok(Reply { content, tool_calls, usage })
}

/// The start of an error reply's body: at most [`ERROR_BODY_READ_BYTES`], the rest left unread
/// (a 500 with a 50 MB body is a 500), bytes that are not UTF-8 replaced, and a body that breaks
/// off taken as far as it came.
async fn read_error_start(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_READ_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_READ_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole reply is read, or told apart by what is wrong: the server's own error (its
    /// message, clipped), not JSON, no message, a tool call without its function or name.
    #[test]
    fn a_reply_is_read_or_its_problem_named() {
        let reply = parse_reply(r#"{"choices":[{"message":{"content":"14 days"}}],"usage":{"prompt_tokens":3}}"#);
        assert_eq!(reply.map(|r| r.content), Ok("14 days".to_string()));
        let cases = [
            (
                r#"{"error":{"message":"Incorrect API key provided"}}"#,
                ReplyError::Reported("Incorrect API key provided".into()),
            ),
            (r#"{"error":"model is loading"}"#, ReplyError::Reported("model is loading".into())),
            (r#"{"choices":[]}"#, ReplyError::NoMessage),
            (r#"{"choices":[],"error":null}"#, ReplyError::NoMessage),
            (r#"{"choices":[{"message":{"tool_calls":[{"id":"a"}]}}]}"#, ReplyError::NoFunction(0)),
            (r#"{"choices":[{"message":{"tool_calls":[{"function":{}}]}}]}"#, ReplyError::NoName(0)),
        ];
        for (body, want) in cases {
            assert_eq!(parse_reply(body).map(|r| r.content), Err(want), "{body}");
        }
        assert!(matches!(parse_reply("this is not json"), Err(ReplyError::NotJson("the reply", _))));
    }

    /// The server's own error is told as its words; a broken reply as what is wrong with it.
    #[test]
    fn a_reported_error_is_told_apart_from_a_broken_reply() {
        let llm = LlmConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: None,
            request_timeout_secs: 5,
            retries: 0,
            temperature: 0.0,
            pull: crate::config::Pull::Never,
        };
        let client = Client::new(&llm, 100).expect("client");
        let reported = client.unreadable(ReplyError::Reported("model is loading".into())).to_string();
        assert!(reported.contains("reported an error instead of a reply: model is loading"), "{reported}");
        let broken = client.unreadable(ReplyError::CutOff).to_string();
        assert!(broken.contains("not a chat completion: the stream ended before"), "{broken}");
    }
}
