//! The trace: one JSON line per tool call on stderr (`step`, `tool`, `args`, `result`, `ms`,
//! `decision`; step 0 is the harness's own search before the first model call), plus `event`
//! lines: `model` per model call (time, tokens the server reported, the harness's estimate),
//! `correction` when the harness sends a reply back (`kind`: unverified or tool_call),
//! `replaced` when the evidence, quoted, replaces the model's answer (`why`: what failed),
//! `search` when the harness's own search was meant to be reranked (how it went),
//! `usage` when the turn answers (the question's totals), warnings and stops. It listens to a turn's events
//! ([`Trace::observe`]); [`tool_line`] is the same line for other listeners (the API's streams).
//! Every string is redacted first, the person's own question included, and long strings are
//! cut on a character boundary.

use std::io::Write;

use serde_json::{Value, json};

use crate::guard::{fence, redact};
use crate::session::progress::{Call, TurnEvent};
use crate::tools::Decision;

/// Bytes past the cut that are still cleaned, so a secret straddling the cut is seen whole.
const PRE_CUT_MARGIN: usize = 16 * 1024;
/// Arguments longer than this are not parsed for the trace, only cut.
const MAX_PARSED_ARGS: usize = 64 * 1024;
/// Characters of an argument string kept in a trace line.
const ARG_CHARS: usize = 300;

/// How trace lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line: for pipes, logs and programs.
    Json,
    /// A short readable line per tool call, warning and stop, and nothing else: for a terminal
    /// that also shows the answer, so the answer stays apart from the trace.
    Brief,
}

/// Where trace lines go.
pub struct Trace<W: Write> {
    /// The sink (stderr in the CLI, a buffer in tests).
    out: W,
    /// JSON lines, or brief ones for a terminal.
    format: Format,
    /// Bytes of a result kept.
    result_bytes: usize,
    /// Model calls and tokens since the last answer.
    used: Used,
}

/// Model calls and tokens counted for one question.
#[derive(Debug, Default)]
struct Used {
    /// Model calls.
    calls: u32,
    /// Prompt tokens the server reported.
    prompt: u64,
    /// Completion tokens the server reported.
    completion: u64,
    /// Prompt tokens the server reused from its cache.
    cached: u64,
}

/// A prompt is taken as cut short when the server counted less than half the estimate.
const TRUNCATED_BELOW: f64 = 0.5;
/// Prompts smaller than the smallest context length servers default to (2,048 tokens) are not
/// checked: no server cuts them.
const MIN_CHECKED_ESTIMATE: u64 = 2048;

/// The warning for a server that counted far fewer prompt tokens than were sent: Ollama's
/// OpenAI-compatible endpoint keeps only the end of a prompt longer than the model's context
/// length, without an error.
fn truncated(counted: u64, estimate: u64) -> Option<String> {
    (estimate >= MIN_CHECKED_ESTIMATE && (counted as f64) < estimate as f64 * TRUNCATED_BELOW).then(|| {
        format!(
            "the model server counted {counted} prompt tokens for a prompt of about {estimate}: it has probably cut the start of the prompt (the rules and the docs) to fit its context length. With Ollama, raise it: OLLAMA_CONTEXT_LENGTH=8192 for `ollama serve` (compose.yaml sets it), or a Modelfile with PARAMETER num_ctx 8192"
        )
    })
}

impl<W: Write> Trace<W> {
    /// A trace writing to `out`, keeping `result_bytes` of each result.
    pub fn new(out: W, result_bytes: usize) -> Self {
        Trace { out, format: Format::Json, result_bytes, used: Used::default() }
    }

    /// The same trace, written in `format`.
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Writes the lines a turn's event makes: a tool line per decided call, an `event` line
    /// per stop; nothing for the rest.
    pub fn observe(&mut self, event: &TurnEvent<'_>) {
        match event {
            TurnEvent::ToolResult { call, result, ms, decision } => match self.format {
                Format::Json => {
                    let line = tool_line(call, result, *ms, *decision, self.result_bytes);
                    self.write(&line);
                }
                Format::Brief => {
                    let line = brief_tool_line(call, result);
                    self.line(&line);
                }
            },
            TurnEvent::Stopped { reason, message } => {
                // The next question starts its own count.
                self.used = Used::default();
                self.event("stop", &format!("{}: {message}", reason.as_str()));
            }
            TurnEvent::ModelReplied { step, ms, usage, cached, estimate } => {
                let (prompt, completion) =
                    usage.map_or((Value::Null, Value::Null), |u| (u.prompt.into(), u.completion.into()));
                self.used.calls += 1;
                self.used.prompt += usage.map_or(0, |u| u.prompt);
                self.used.completion += usage.map_or(0, |u| u.completion);
                self.used.cached += cached;
                if self.format == Format::Json {
                    self.write(&json!({"event": "model", "step": step, "ms": ms, "prompt_tokens": prompt,
                        "cached_tokens": cached, "completion_tokens": completion, "prompt_estimate": estimate}));
                }
                if let Some(warning) = usage.and_then(|u| truncated(u.prompt, *estimate)) {
                    self.event("warning", &warning);
                }
            }
            TurnEvent::SentBack(kind) => match self.format {
                Format::Json => self.write(&json!({"event": "correction", "kind": kind.as_str()})),
                Format::Brief => {
                    self.line(&format!("  the answer was sent back to the model ({})", kind.as_str()));
                }
            },
            TurnEvent::Replaced(why) => match self.format {
                Format::Json => self.write(&json!({"event": "replaced", "why": clean(why, 2_000)})),
                Format::Brief => {
                    self.line(&format!("  {}", clean(why, 2_000)));
                }
            },
            TurnEvent::Answer(_) => {
                let used = std::mem::take(&mut self.used);
                if self.format == Format::Json {
                    self.write(&json!({"event": "usage", "model_calls": used.calls, "prompt_tokens": used.prompt,
                        "cached_tokens": used.cached, "completion_tokens": used.completion}));
                }
            }
            TurnEvent::Searched(note) => match self.format {
                Format::Json => self.write(&json!({"event": "search", "message": clean(note, 2_000)})),
                Format::Brief => {}
            },
            TurnEvent::Hook { stage, rule, decision, call_id } => match self.format {
                Format::Json => self.write(&json!({"event": "hook", "stage": stage.as_str(), "rule": rule,
                    "decision": decision, "call_id": call_id})),
                Format::Brief => {
                    self.line(&format!("  hook {} {rule}: {decision}", stage.as_str()));
                }
            },
            TurnEvent::ModelCall { .. }
            | TurnEvent::TextDelta(_)
            | TurnEvent::ToolCall(_)
            | TurnEvent::ApprovalRequired { .. } => {}
        }
    }

    /// Records a harness event (a warning, a stop).
    pub fn event(&mut self, event: &str, message: &str) {
        match self.format {
            Format::Json => self.write(&json!({"event": event, "message": clean(message, 2_000)})),
            Format::Brief => {
                self.line(&format!("docs-agent: {event}: {}", clean(message, 2_000)));
            }
        }
    }

    fn write(&mut self, line: &Value) {
        self.line(&line.to_string());
    }

    /// Writes `text` and a line break in one write: one system call on an unbuffered stderr,
    /// and a writer that redacts what it is given sees the line whole, not the pieces a
    /// formatter writes.
    fn line(&mut self, text: &str) {
        let mut whole = String::with_capacity(text.len() + 1);
        whole.push_str(text);
        whole.push('\n');
        // A trace that cannot be written must not stop the answer.
        let _ = self.out.write_all(whole.as_bytes());
    }

    /// The sink, for tests.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// One decided tool call as a trace line, every string cleaned; `result_bytes` of the result
/// are kept.
pub fn tool_line(call: &Call<'_>, result: &str, ms: u128, decision: Decision, result_bytes: usize) -> Value {
    json!({
        "step": call.step,
        "tool": clean(call.name, 64),
        "args": clean_args(call.arguments),
        "result": clean(result, result_bytes),
        "ms": ms,
        "decision": decision.as_str(),
    })
}

/// A tool call in one readable line: `  search_docs "refund window": 3 sections matched, best
/// first: docs/refunds.md#window, ...` (a listing's first sources after its colon); every
/// string cleaned as in a JSON line. (Also what an MCP client's progress shows.)
pub fn brief_tool_line(call: &Call<'_>, result: &str) -> String {
    // The argument that says what the call is about: a path, a query, a skill's name.
    let argument = match clean_args(call.arguments) {
        Value::Object(fields) => ["path", "query", "name"]
            .iter()
            .find_map(|key| fields.get(*key).and_then(Value::as_str))
            .or_else(|| fields.values().find_map(Value::as_str))
            .unwrap_or_default()
            .to_string(),
        Value::String(text) => text,
        _ => String::new(),
    };
    let argument = redact::floor_char_boundary(&argument, 60).to_string();
    let summary = clean(result, 400);
    let summary = summary.lines().next().unwrap_or_default();
    let summary = redact::floor_char_boundary(summary, 100);
    // A listing's first line ends with a colon: what it lists follows (the sources found).
    let listed = match summary.strip_suffix(':') {
        Some(head) => {
            let found: Vec<String> =
                crate::guard::fence::found_in(result).take(3).map(|f| clean(&f.source, 80)).collect();
            match found.as_slice() {
                [] => head.to_string(),
                found => format!("{head}: {}", found.join(", ")),
            }
        }
        None => summary.to_string(),
    };
    format!("  {} {argument:?}: {listed}", clean(call.name, 64))
}

/// Redacted, sanitised and cut.
/// Huge input is first cut to a margin past `max`, so cleaning costs no more than the line
/// can show; the margin is longer than the secrets the rules match whole, and the final cut
/// happens after redaction.
fn clean(text: &str, max: usize) -> String {
    let head = redact::floor_char_boundary(text, max.saturating_add(PRE_CUT_MARGIN));
    redact::redact_truncated(&fence::sanitize(head), max)
}

/// The arguments as JSON with every string value cleaned; the raw text, cleaned, when not JSON.
fn clean_args(args: &str) -> Value {
    if args.len() > MAX_PARSED_ARGS {
        return Value::String(clean(args, ARG_CHARS));
    }
    match serde_json::from_str::<Value>(args) {
        Ok(value) => map_strings(value),
        Err(_) => Value::String(clean(args, ARG_CHARS)),
    }
}

fn map_strings(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(clean(&s, ARG_CHARS)),
        Value::Array(items) => Value::Array(items.into_iter().map(map_strings).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (clean(&k, 64), map_strings(v))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::{StopReason, Tokens};

    /// The `usage` line counts one question: a turn that stopped before answering does not
    /// add to the next one's totals.
    #[test]
    fn usage_is_counted_per_question() {
        let mut trace = Trace::new(Vec::new(), 200);
        let replied = |prompt| TurnEvent::ModelReplied {
            step: 1,
            ms: 5,
            usage: Some(Tokens { prompt, completion: 3 }),
            cached: 0,
            estimate: 100,
        };
        trace.observe(&replied(1000));
        trace.observe(&TurnEvent::Stopped { reason: StopReason::StepLimit, message: "stopped" });
        trace.observe(&replied(40));
        trace.observe(&replied(60));
        trace.observe(&TurnEvent::Answer("ok"));
        let text = String::from_utf8(trace.into_inner()).expect("UTF-8");
        let usage: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["event"] == "usage")
            .collect();
        assert_eq!(usage.len(), 1, "{text}");
        assert_eq!(
            (usage[0]["model_calls"].as_u64(), usage[0]["prompt_tokens"].as_u64()),
            (Some(2), Some(100)),
            "{text}"
        );
    }

    #[test]
    fn brief_lines_are_one_per_tool_call_cleaned_and_leave_out_model_calls() {
        let mut trace = Trace::new(Vec::new(), 200).with_format(Format::Brief);
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let args = format!(r#"{{"content":"{secret}","path":"notes/a.md"}}"#);
        tool(&mut trace, "write_file", &args, &format!("OK: wrote notes/a.md with {secret}\nmore"), Decision::Allowed);
        trace.observe(&TurnEvent::ModelReplied {
            step: 1,
            ms: 5,
            usage: Some(Tokens { prompt: 9, completion: 3 }),
            cached: 0,
            estimate: 9,
        });
        trace.observe(&TurnEvent::Answer("ok"));
        trace.event("warning", &format!("a {secret} here"));
        let text = String::from_utf8(trace.into_inner()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "a tool line and the warning, no model or usage line: {text}");
        assert!(lines[0].starts_with("  write_file \"notes/a.md\": OK: wrote notes/a.md with [REDACTED"), "{text}");
        assert!(lines[1].starts_with("docs-agent: warning: a [REDACTED"), "{text}");
        assert!(!text.contains(secret) && !text.contains("more"), "{text}");
    }

    /// A search's brief line names what it found after its colon, not a dangling "best first:";
    /// a source holding a secret is redacted there too.
    #[test]
    fn a_brief_search_line_names_the_sources_found() {
        let mut trace = Trace::new(Vec::new(), 200).with_format(Format::Brief);
        let found = "2 sections matched, best first:\n<untrusted source=\"docs/refunds.md#window\">\n# Window\n\
                     </untrusted>\n<untrusted source=\"docs/ghp_abcdefghijklmnopqrstuvwxyz0123456789.md#a\">\nx\n</untrusted>\n";
        tool(&mut trace, "search_docs", r#"{"query":"refund window"}"#, found, Decision::Allowed);
        tool(&mut trace, "search_docs", r#"{"query":"nothing"}"#, "No section of the docs matched.", Decision::Allowed);
        let text = String::from_utf8(trace.into_inner()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with(
                "  search_docs \"refund window\": 2 sections matched, best first: docs/refunds.md#window, docs/[REDACTED"
            ),
            "{text}"
        );
        assert!(!text.contains("ghp_abc"), "{text}");
        assert_eq!(lines[1], "  search_docs \"nothing\": No section of the docs matched.", "{text}");
    }

    /// Secrets of several formats; each must never reach a trace line, whole or in part.
    const SECRETS: &[&str] = &[
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    ];

    /// A decided call, as a turn tells it.
    fn tool(t: &mut Trace<Vec<u8>>, name: &str, arguments: &str, result: &str, decision: Decision) {
        let call = Call { step: 1, id: "h1", name, arguments };
        t.observe(&TurnEvent::ToolResult { call, result, ms: 1, decision });
    }

    /// What a writer was given, write by write.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The CLI's stderr redacts each write it is given, so each line must come in one write,
    /// never as the pieces JSON's escapes cut it into.
    #[test]
    fn every_line_reaches_the_sink_in_one_write() {
        for format in [Format::Json, Format::Brief] {
            let mut trace = Trace::new(Writes::default(), 200).with_format(format);
            let call = Call { step: 1, id: "h1", name: "search_docs", arguments: r#"{"query":"a \"quoted\"\nline"}"# };
            let result = "first \"line\"\nsecond\tline";
            trace.observe(&TurnEvent::ToolResult { call, result, ms: 1, decision: Decision::Allowed });
            trace.event("warning", "a \"quoted\" warning\nover two lines");
            let writes = trace.into_inner().0;
            assert_eq!(writes.len(), 2, "{format:?}: one write per line: {writes:?}");
            for write in &writes {
                let text = String::from_utf8_lossy(write);
                assert!(text.ends_with('\n'), "{format:?}: a piece: {text:?}");
            }
        }
    }

    /// Each way a secret can reach the trace: the line it makes, from a fresh trace.
    fn lines_with(secret: &str) -> Vec<(&'static str, String)> {
        let with = |f: &dyn Fn(&mut Trace<Vec<u8>>)| {
            let mut trace = Trace::new(Vec::new(), 200);
            f(&mut trace);
            String::from_utf8(trace.into_inner()).expect("UTF-8")
        };
        vec![
            ("tool name", with(&|t| tool(t, &format!("tool_{secret}"), "{}", "ok", Decision::Allowed))),
            (
                "JSON args, a string value",
                with(&|t| {
                    tool(
                        t,
                        "search_docs",
                        &json!({ "query": format!("is {secret} valid") }).to_string(),
                        "",
                        Decision::Allowed,
                    )
                }),
            ),
            (
                "JSON args, nested in an array",
                with(&|t| tool(t, "x", &json!({ "a": [1, { "b": secret }] }).to_string(), "ok", Decision::Allowed)),
            ),
            ("JSON args, a key", with(&|t| tool(t, "x", &json!({ secret: 1 }).to_string(), "ok", Decision::Allowed))),
            ("args that are not JSON", with(&|t| tool(t, "x", &format!("{{query: {secret}"), "ok", Decision::Denied))),
            ("result", with(&|t| tool(t, "read_file", "{}", &format!("key = {secret}\n"), Decision::Allowed))),
            (
                "result, the secret across the cut",
                with(&|t| tool(t, "read_file", "{}", &format!("{}{secret}", "a".repeat(190)), Decision::Allowed)),
            ),
            ("event message", with(&|t| t.event("warning", &format!("skipped a file: Bearer {secret}")))),
            (
                "stop message",
                with(&|t| {
                    let message = format!("the server said Bearer {secret}");
                    t.observe(&TurnEvent::Stopped { reason: StopReason::TimeLimit, message: &message })
                }),
            ),
        ]
    }

    #[test]
    fn no_secret_reaches_the_trace_from_any_field() {
        for secret in SECRETS {
            for (place, out) in lines_with(secret) {
                // No part as long as a third of the secret (and at least 8 characters) is shown.
                let part = (secret.len() / 3).max(8);
                let leaked = (0..=secret.len() - part).map(|i| &secret[i..i + part]).find(|p| out.contains(p));
                assert_eq!(leaked, None, "{place}: part of {secret} leaked in {out}");
                let line: Value =
                    serde_json::from_str(out.trim_end()).unwrap_or_else(|e| panic!("{place}: {e}: {out}"));
                assert!(line.is_object(), "{place}: one JSON object per line: {out}");
            }
        }
    }

    #[test]
    fn a_redacted_secret_is_marked_where_it_was() {
        let (_, out) = lines_with(SECRETS[0]).swap_remove(1);
        let line: Value = serde_json::from_str(out.trim_end()).expect("JSON");
        assert_eq!(line["args"]["query"], "is [REDACTED] valid", "{out}");
    }

    #[test]
    fn long_strings_are_cut_after_redaction() {
        let mut trace = Trace::new(Vec::new(), 50);
        let arguments = json!({ "path": "é".repeat(400) }).to_string();
        let call = Call { step: 2, id: "h2", name: "read_file", arguments: &arguments };
        let result = "ü".repeat(100);
        trace.observe(&TurnEvent::ToolResult { call, result: &result, ms: 3, decision: Decision::Allowed });
        let line: Value = serde_json::from_slice(&trace.into_inner()).expect("JSON");
        let cut = |v: &Value, max: usize| v.as_str().is_some_and(|s| s.len() <= max + 14 && s.ends_with("[truncated]"));
        assert!(cut(&line["result"], 50), "{line}");
        assert!(cut(&line["args"]["path"], ARG_CHARS), "{line}");
        assert_eq!((line["step"].as_u64(), line["ms"].as_u64()), (Some(2), Some(3)));
    }
}
