//! The trace: one JSON line per tool call on stderr (`step`, `tool`, `args`, `result`, `ms`,
//! `decision`), plus `event` lines for warnings and stops. Every string is redacted first, the
//! person's own question included, and long strings are cut on a character boundary.

use std::io::Write;

use serde_json::{Value, json};

use crate::guard::{fence, redact};

/// Bytes past the cut that are still cleaned, so a secret straddling the cut is seen whole.
const PRE_CUT_MARGIN: usize = 16 * 1024;
/// Arguments longer than this are not parsed for the trace, only cut.
const MAX_PARSED_ARGS: usize = 64 * 1024;
/// Characters of an argument string kept in a trace line.
const ARG_CHARS: usize = 300;

/// Where trace lines go.
pub struct Trace<W: Write> {
    /// The sink (stderr in the CLI, a buffer in tests).
    out: W,
    /// Bytes of a result kept.
    result_bytes: usize,
}

impl<W: Write> Trace<W> {
    /// A trace writing to `out`, keeping `result_bytes` of each result.
    pub fn new(out: W, result_bytes: usize) -> Self {
        Trace { out, result_bytes }
    }

    /// Records one tool call.
    pub fn tool(&mut self, step: u32, tool: &str, args: &str, result: &str, ms: u128, decision: &str) {
        let line = json!({
            "step": step,
            "tool": clean(tool, 64),
            "args": clean_args(args),
            "result": clean(result, self.result_bytes),
            "ms": ms,
            "decision": decision,
        });
        self.write(&line);
    }

    /// Records a harness event (a warning, a stop).
    pub fn event(&mut self, event: &str, message: &str) {
        self.write(&json!({"event": event, "message": clean(message, 2_000)}));
    }

    fn write(&mut self, line: &Value) {
        // A trace that cannot be written must not stop the answer.
        let _ = writeln!(self.out, "{line}");
    }

    /// The sink, for tests.
    pub fn into_inner(self) -> W {
        self.out
    }
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

    /// Secrets of several formats; each must never reach a trace line, whole or in part.
    const SECRETS: &[&str] = &[
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    ];

    /// Each way a secret can reach the trace: the line it makes, from a fresh trace.
    fn lines_with(secret: &str) -> Vec<(&'static str, String)> {
        let with = |f: &dyn Fn(&mut Trace<Vec<u8>>)| {
            let mut trace = Trace::new(Vec::new(), 200);
            f(&mut trace);
            String::from_utf8(trace.into_inner()).expect("UTF-8")
        };
        vec![
            ("tool name", with(&|t| t.tool(1, &format!("tool_{secret}"), "{}", "ok", 1, "allowed"))),
            (
                "JSON args, a string value",
                with(&|t| {
                    t.tool(1, "search_docs", &json!({ "query": format!("is {secret} valid") }).to_string(), "", 1, "")
                }),
            ),
            (
                "JSON args, nested in an array",
                with(&|t| t.tool(1, "x", &json!({ "a": [1, { "b": secret }] }).to_string(), "ok", 1, "allowed")),
            ),
            ("JSON args, a key", with(&|t| t.tool(1, "x", &json!({ secret: 1 }).to_string(), "ok", 1, "allowed"))),
            ("args that are not JSON", with(&|t| t.tool(1, "x", &format!("{{query: {secret}"), "ok", 1, "denied"))),
            ("result", with(&|t| t.tool(1, "read_file", "{}", &format!("key = {secret}\n"), 1, "allowed"))),
            (
                "result, the secret across the cut",
                with(&|t| t.tool(1, "read_file", "{}", &format!("{}{secret}", "a".repeat(190)), 1, "allowed")),
            ),
            ("event message", with(&|t| t.event("stop", &format!("model_error: server said Bearer {secret}")))),
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
        trace.tool(2, "read_file", &json!({ "path": "é".repeat(400) }).to_string(), &"ü".repeat(100), 3, "allowed");
        let line: Value = serde_json::from_slice(&trace.into_inner()).expect("JSON");
        let cut = |v: &Value, max: usize| v.as_str().is_some_and(|s| s.len() <= max + 14 && s.ends_with("[truncated]"));
        assert!(cut(&line["result"], 50), "{line}");
        assert!(cut(&line["args"]["path"], ARG_CHARS), "{line}");
        assert_eq!((line["step"].as_u64(), line["ms"].as_u64()), (Some(2), Some(3)));
    }
}
