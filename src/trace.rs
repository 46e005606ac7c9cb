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
