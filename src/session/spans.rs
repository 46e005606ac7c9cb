//! A turn's spans, made from the turn's own events (`session::progress::TurnEvent`), so the CLI,
//! chat and `serve` all get the same ones:
//!
//! ```text
//! request (serve only: method, route, request id)
//! └─ turn            invoke_agent docs-agent · gen_ai.conversation.id = the session id
//!    ├─ chat         chat {model} · gen_ai.usage.input_tokens / output_tokens
//!    └─ execute_tool execute_tool {name} · gen_ai.tool.name, gen_ai.tool.call.id
//! ```
//!
//! `otel.name` carries the OpenTelemetry span name (`chat llama3.2:3b`), the other `gen_ai.*`
//! fields the GenAI semantic conventions' attributes. By default no span field holds message
//! content: only names, ids, counts and decisions, and names the model wrote (a tool's) are
//! scrubbed and clipped first. With `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`,
//! the question, the answer and tool arguments and results are added to the *exported* spans
//! (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
//! `gen_ai.tool.call.result`), each scrubbed and clipped to 4 KiB, as OpenTelemetry
//! attributes, never as `tracing` fields: a log line never shows them. A line is logged (`info`) as each model and tool call ends, and when a turn
//! stops without an answer.

use tracing::Span;
use tracing::field::Empty;
// Message content goes to the exported span only, as OpenTelemetry attributes: never a
// `tracing` field, which every log line in the span would print.
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::event::StopReason;
use super::progress::TurnEvent;

/// The longest name from the model (a tool's) a span records.
const NAME_CHARS: usize = 64;

/// The spans of one turn: the turn's own, the model call in flight, the tool calls in flight.
/// Dropping it ends them all.
#[derive(Debug)]
pub struct TurnSpans {
    /// The model asked, for the `chat {model}` spans.
    model: String,
    /// `turn`: the whole turn.
    turn: Span,
    /// The model call in flight.
    chat: Option<Span>,
    /// Tool calls in flight, by call id.
    tools: Vec<(String, Span)>,
    /// Tokens the server reported in this turn: prompt, completion.
    used: (u64, u64),
    /// Whether message content goes into the spans (guarded):
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    content: bool,
    /// Whether the question was recorded.
    asked: bool,
}

impl TurnSpans {
    /// Opens the turn's span for `session`, asking `model`, as a child of the current span
    /// (an HTTP request's, under `serve`).
    pub fn start(session: &str, model: &str) -> TurnSpans {
        let turn = tracing::info_span!(
            "turn",
            otel.name = "invoke_agent docs-agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = "docs-agent",
            gen_ai.conversation.id = %session,
            gen_ai.request.model = %model,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            docs_agent.stop_reason = Empty,
        );
        let content = crate::telemetry::otel::capture_content();
        TurnSpans { model: model.to_string(), turn, chat: None, tools: Vec::new(), used: (0, 0), content, asked: false }
    }

    /// The turn's span, for work done on its behalf.
    pub fn turn(&self) -> &Span {
        &self.turn
    }

    /// Records the question the turn answers, once, when message content may be recorded.
    pub fn question(&mut self, text: &str) {
        if self.content && !self.asked {
            self.turn.set_attribute("gen_ai.input.messages", messages("user", text));
            self.asked = true;
        }
    }

    /// The model call in flight's span (none between calls), for the call's own work.
    pub fn chat(&self) -> Span {
        self.chat.clone().unwrap_or_else(Span::none)
    }

    /// Tool call `id`'s span while it runs (none when it is not in flight).
    pub fn tool(&self, id: &str) -> Span {
        self.tools.iter().find(|(open, _)| open == id).map_or_else(Span::none, |(_, span)| span.clone())
    }

    /// Opens, fills or ends a span for what happened.
    pub fn hear(&mut self, event: &TurnEvent<'_>) {
        match *event {
            TurnEvent::ModelCall { step, estimate } => {
                self.chat = Some(tracing::info_span!(
                    parent: &self.turn,
                    "chat",
                    otel.name = %format!("chat {}", self.model),
                    otel.kind = "client",
                    gen_ai.operation.name = "chat",
                    gen_ai.request.model = %self.model,
                    gen_ai.usage.input_tokens = Empty,
                    gen_ai.usage.output_tokens = Empty,
                    docs_agent.step = count(step),
                    docs_agent.prompt_estimate = count(estimate),
                    error.type = Empty,
                ));
            }
            TurnEvent::ModelReplied { step, ms, usage, .. } => {
                let Some(span) = self.chat.take() else { return };
                let (input, output) = usage.map_or((None, None), |u| (Some(u.prompt), Some(u.completion)));
                if let (Some(input), Some(output)) = (input, output) {
                    span.record("gen_ai.usage.input_tokens", count(input));
                    span.record("gen_ai.usage.output_tokens", count(output));
                    self.used = (self.used.0 + input, self.used.1 + output);
                }
                span.in_scope(|| {
                    tracing::info!(
                        step = count(step),
                        ms = count(ms),
                        input_tokens = input.map(count),
                        output_tokens = output.map(count),
                        "model call done"
                    )
                });
            }
            TurnEvent::ToolCall(call) => {
                let span = self.tool_span(&call);
                if self.content {
                    span.set_attribute("gen_ai.tool.call.arguments", guarded(call.arguments));
                }
                self.tools.push((call.id.to_string(), span));
            }
            TurnEvent::ToolResult { call, result, ms, decision } => {
                // A call approved or resumed in a later turn has no open span yet: it gets one.
                let span = match self.tools.iter().position(|(id, _)| id == call.id) {
                    Some(at) => self.tools.remove(at).1,
                    None => self.tool_span(&call),
                };
                if self.content {
                    span.set_attribute("gen_ai.tool.call.result", guarded(result));
                }
                span.record("docs_agent.decision", decision.as_str());
                span.in_scope(|| tracing::info!(decision = decision.as_str(), ms = count(ms), "tool call done"));
            }
            TurnEvent::ApprovalRequired { call_id, .. } => {
                self.turn.in_scope(|| tracing::info!(call_id, "a write waits for approval"));
            }
            TurnEvent::SentBack(kind) => {
                self.turn.in_scope(|| tracing::info!(correction = kind.as_str(), "reply sent back to the model"));
            }
            TurnEvent::Replaced(why) => {
                self.turn.in_scope(|| tracing::info!(why, "the model's answer was replaced by the evidence"));
            }
            TurnEvent::Answer(text) => {
                if self.content {
                    self.turn.set_attribute("gen_ai.output.messages", messages("assistant", text));
                }
                self.end(StopReason::Answered);
            }
            TurnEvent::Stopped { reason, message } => {
                if let Some(chat) = self.chat.take() {
                    chat.record("error.type", reason.as_str());
                }
                self.end(reason);
                // info, not warn: the front end tells the person already.
                self.turn.in_scope(|| tracing::info!(reason = reason.as_str(), "{message}"));
            }
            TurnEvent::Hook { stage, rule, decision, call_id } => {
                let span = call_id.and_then(|id| self.tools.iter().find(|(open, _)| open == id)).map(|(_, s)| s);
                let span = span.unwrap_or(&self.turn);
                span.in_scope(|| tracing::info!(stage = stage.as_str(), rule, decision, "hook decided"));
            }
            TurnEvent::Searched(note) => {
                self.turn.in_scope(|| tracing::info!(note, "search"));
            }
            TurnEvent::TextDelta(_) => {}
        }
    }

    /// A new `execute_tool` span for `call`, under the turn.
    fn tool_span(&self, call: &super::progress::Call<'_>) -> Span {
        let name = crate::guard::clip(&crate::guard::scrub(call.name), NAME_CHARS);
        tracing::info_span!(
            parent: &self.turn,
            "execute_tool",
            otel.name = %format!("execute_tool {name}"),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %name,
            gen_ai.tool.call.id = %call.id,
            docs_agent.step = count(call.step),
            docs_agent.decision = Empty,
        )
    }

    /// Records how the turn ended and the tokens it used.
    fn end(&mut self, reason: StopReason) {
        self.turn.record("docs_agent.stop_reason", reason.as_str());
        self.turn.record("gen_ai.usage.input_tokens", count(self.used.0));
        self.turn.record("gen_ai.usage.output_tokens", count(self.used.1));
    }
}

/// A count as a span records it: `i64`, which the OpenTelemetry bridge exports as an integer
/// (it exports an unsigned field as text; the GenAI conventions' token counts are integers).
fn count<T: TryInto<i64>>(n: T) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The longest message content a span records.
const CONTENT_BYTES: usize = 4096;

/// Message content as a span may hold it: scrubbed (invisible characters, secrets) and clipped.
fn guarded(text: &str) -> String {
    crate::guard::clip(text, CONTENT_BYTES)
}

/// One message in the GenAI conventions' shape (`[{"role", "parts": [{"type": "text",
/// "content"}]}]`), its text guarded.
fn messages(role: &str, text: &str) -> String {
    serde_json::json!([{"role": role, "parts": [{"type": "text", "content": guarded(text)}]}]).to_string()
}
