//! Reading a streamed chat completion (`"stream": true`): server-sent events whose `data:` lines
//! are JSON chunks with `choices[0].delta`. Text deltas are handed on as they come; tool calls
//! arrive in pieces keyed by `index` and are joined; `data: [DONE]` ends the stream.

use serde_json::Value;

use super::MAX_STREAMED_CALLS as MAX_CALLS;
use super::reply_error::ReplyError;
use super::{Reply, ToolCall, Usage};

/// A streamed reply being put together.
#[derive(Debug, Default)]
pub struct Stream {
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// `data:` lines of the event being read.
    data: String,
    /// True when the event being read is named `error` (`event: error`).
    error_event: bool,
    /// The text so far.
    content: String,
    /// Tool calls by index: id, name, arguments.
    calls: Vec<(String, String, String)>,
    /// Token counts, when the server sends them.
    usage: Option<Usage>,
    /// True after `[DONE]`.
    done: bool,
    /// True once a chunk gave a `finish_reason`: the reply is complete even without `[DONE]`.
    finished: bool,
}

/// Characters of a server's error kept in the message.
const ERROR_CHARS: usize = 300;

/// What a server's error object says: its `message` (the error may be the object itself or
/// hold it under `error`), else the whole JSON; scrubbed and cut, as every error from outside.
pub(super) fn told(error: &Value) -> String {
    let inner = error.get("error").unwrap_or(error);
    let text = match inner.get("message").and_then(Value::as_str).or(inner.as_str()) {
        Some(message) => message.to_string(),
        None => inner.to_string(),
    };
    crate::guard::clip(&text, ERROR_CHARS)
}

impl Stream {
    /// Feeds received bytes; text deltas go to `on_delta`. True once the stream said `[DONE]`.
    pub fn feed(&mut self, bytes: &[u8], on_delta: &mut (dyn FnMut(&str) + Send)) -> Result<bool, ReplyError> {
        for &byte in bytes {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = std::str::from_utf8(&line).map_err(|_| ReplyError::NotUtf8("a streamed line"))?;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                self.dispatch(on_delta)?;
            } else if let Some(data) = line.strip_prefix("data:") {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(data.strip_prefix(' ').unwrap_or(data));
            } else if let Some(kind) = line.strip_prefix("event:") {
                self.error_event = kind.trim() == "error";
            }
            // `id:`, `retry:` and `:` comment lines carry nothing a reply needs.
            if self.done {
                return Ok(true);
            }
        }
        Ok(self.done)
    }

    /// The reply once the body ended (a last event without its blank line still counts). A
    /// stream that ends before `[DONE]` or a `finish_reason` was cut off: that is an error, not
    /// a shorter answer.
    pub fn finish(mut self, on_delta: &mut (dyn FnMut(&str) + Send)) -> Result<Reply, ReplyError> {
        if !self.line.is_empty() {
            self.feed(b"\n", on_delta)?;
        }
        self.dispatch(on_delta)?;
        if !(self.done || self.finished) {
            return Err(ReplyError::CutOff);
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(_, (_, name, _))| !name.is_empty())
            .map(|(i, (id, name, arguments))| ToolCall {
                id: if id.is_empty() { format!("call_{i}") } else { id },
                name,
                arguments: if arguments.trim().is_empty() { "{}".into() } else { arguments },
            })
            .collect();
        Ok(Reply { content: self.content, tool_calls, usage: self.usage })
    }

    fn dispatch(&mut self, on_delta: &mut (dyn FnMut(&str) + Send)) -> Result<(), ReplyError> {
        let data = std::mem::take(&mut self.data);
        let data = data.trim();
        if std::mem::take(&mut self.error_event) {
            let error = serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_string()));
            return Err(ReplyError::Reported(told(&error)));
        }
        if data.is_empty() || self.done {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| ReplyError::NotJson("a streamed chunk", e.to_string()))?;
        if let Some(error) = chunk.get("error") {
            return Err(ReplyError::Reported(told(error)));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage::from_json(u));
        }
        if chunk.pointer("/choices/0/finish_reason").is_some_and(|r| !r.is_null()) {
            self.finished = true;
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.content.push_str(text);
            on_delta(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
            // Without an `index`, a new id starts a new call; a fragment without one continues
            // the last call.
            let index = match call.get("index").and_then(Value::as_u64) {
                Some(i) => i as usize,
                None => match (id, self.calls.last()) {
                    (Some(id), Some(last)) if last.0 != id => self.calls.len(),
                    (_, None) => 0,
                    _ => self.calls.len() - 1,
                },
            };
            if index >= MAX_CALLS {
                return Err(ReplyError::TooManyCalls(index));
            }
            if self.calls.len() <= index {
                self.calls.resize(index + 1, Default::default());
            }
            let slot = &mut self.calls[index];
            if let Some(id) = id {
                slot.0 = id.to_string();
            }
            if let Some(function) = call.get("function") {
                // Most servers send the name once; some repeat it whole in every fragment.
                if let Some(name) = function.get("name").and_then(Value::as_str).filter(|n| *n != slot.1) {
                    slot.1.push_str(name);
                }
                match function.get("arguments") {
                    Some(Value::String(piece)) => slot.2.push_str(piece),
                    Some(Value::Null) | None => {}
                    Some(other) => slot.2.push_str(&other.to_string()),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: &str, split: usize) -> (Reply, Vec<String>) {
        let mut stream = Stream::default();
        let mut deltas = Vec::new();
        let mut on_delta = |d: &str| deltas.push(d.to_string());
        for piece in body.as_bytes().chunks(split) {
            if stream.feed(piece, &mut on_delta).expect("feed") {
                break;
            }
        }
        let reply = stream.finish(&mut on_delta).expect("finish");
        (reply, deltas)
    }

    #[test]
    fn text_and_tool_calls_are_joined_whatever_the_chunking() {
        let body = concat!(
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Refunds \"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"take 14 days\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"search_docs\",\"arguments\":\"{\\\"query\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"refunds\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"after done\"}}]}\n\n",
        );
        for split in [1, 2, 7, 64, body.len()] {
            let (reply, deltas) = read(body, split);
            assert_eq!(reply.content, "Refunds take 14 days", "split {split}");
            assert_eq!(deltas, ["Refunds ", "take 14 days"], "split {split}");
            assert_eq!(reply.tool_calls.len(), 1);
            assert_eq!(reply.tool_calls[0].name, "search_docs");
            assert_eq!(reply.tool_calls[0].arguments, "{\"query\":\"refunds\"}");
            assert_eq!(reply.usage, Some(Usage { prompt: 7, completion: 3, cached: 0 }));
        }
    }

    #[test]
    fn bad_chunks_are_errors_that_say_so() {
        let mut on_delta = |_: &str| {};
        let mut stream = Stream::default();
        let error = stream.feed(b"data: {not json\n\n", &mut on_delta).expect_err("not JSON");
        assert!(matches!(error, ReplyError::NotJson("a streamed chunk", _)), "{error}");
        let mut stream = Stream::default();
        let error =
            stream.feed(b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n", &mut on_delta).expect_err("error");
        assert_eq!(error, ReplyError::Reported("overloaded".into()));
        let mut stream = Stream::default();
        let huge = b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":100000}]}}]}\n\n";
        let refused = stream.feed(huge, &mut on_delta);
        assert_eq!(refused, Err(ReplyError::TooManyCalls(100_000)), "a huge index is refused, not allocated");
    }

    #[test]
    fn an_error_event_is_an_error_told_by_its_message_scrubbed_and_cut() {
        let mut on_delta = |_: &str| {};
        let long = "x".repeat(2_000);
        for body in [
            format!(
                "event: error\ndata: {{\"message\":\"bad key ghp_abcdefghijklmnopqrstuvwxyz0123456789 {long}\"}}\n\n"
            ),
            format!(
                "data: {{\"error\":{{\"message\":\"bad key ghp_abcdefghijklmnopqrstuvwxyz0123456789 {long}\"}}}}\n\n"
            ),
            format!("event: error\ndata: bad key ghp_abcdefghijklmnopqrstuvwxyz0123456789 {long}\n\n"),
        ] {
            let error = Stream::default().feed(body.as_bytes(), &mut on_delta).expect_err("an error");
            let ReplyError::Reported(told) = error else { panic!("not told as reported: {error}") };
            assert!(told.starts_with("bad key [REDACTED]"), "{told}");
            assert!(told.len() < 400 && told.ends_with('…'), "cut: {told}");
        }
        // An event named otherwise is read as a chunk.
        let body =
            "event: message\ndata: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
        assert_eq!(read(body, 5).0.content, "ok");
    }

    #[test]
    fn an_unterminated_last_event_still_counts_but_a_cut_stream_is_an_error() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"end\"},\"finish_reason\":\"stop\"}]}";
        let (reply, _) = read(body, 5);
        assert_eq!(reply.content, "end");
        let mut on_delta = |_: &str| {};
        let mut stream = Stream::default();
        stream
            .feed(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"refunds are possible except for\"}}]}\n\n",
                &mut on_delta,
            )
            .expect("feed");
        let error = stream.finish(&mut on_delta).expect_err("cut off");
        assert_eq!(error, ReplyError::CutOff);
    }

    #[test]
    fn calls_without_an_index_are_told_apart_by_id_and_a_repeated_name_is_kept_once() {
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"search_docs\",\"arguments\":\"{\\\"query\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"search_docs\",\"arguments\":\"\\\"x\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"load_skill\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (reply, _) = read(body, 9);
        let calls: Vec<(&str, &str)> =
            reply.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("search_docs", "{\"query\":\"x\"}"), ("load_skill", "{}")]);
    }
}
