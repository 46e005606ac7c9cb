//! What a turn tells its front end as it happens: one typed channel that the trace (stderr),
//! the metrics, the HTTP streams and the terminal all listen to, so nothing is parsed back
//! from text. The log records what happened; this only shows it. Texts are given as they are,
//! not all scrubbed (a call decided on its raw arguments, the model's streamed text): a listener
//! that lets one leave the process guards it first (`trace` redacts every string, streamed text
//! goes through `guard::stream`).

use crate::session::event::{CorrectionKind, HookStage, StopReason, Tokens};
use crate::tools::Decision;

/// One thing that happened in a turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TurnEvent<'a> {
    /// A model call starts (its streamed text follows; a stream guard starts afresh).
    ModelCall {
        /// The call's number in the turn, from 1.
        step: u32,
        /// The harness's estimate of the prompt it sends (bytes / 4, tool schemas included):
        /// what the model reads before it writes a word.
        estimate: u64,
    },
    /// A model call answered: how long it took and the tokens it used.
    ModelReplied {
        /// The call's number in the turn, from 1.
        step: u32,
        /// How long the call took, from request to the end of the reply.
        ms: u128,
        /// The tokens the server reported, when it did.
        usage: Option<Tokens>,
        /// Of its prompt tokens, those the server reused from its cache (0 when it did not say).
        cached: u64,
        /// The harness's estimate of the prompt it sent (bytes / 4, tool schemas included).
        estimate: u64,
    },
    /// A piece of the model's text, as it streams: progress only, never the answer itself.
    TextDelta(&'a str),
    /// The harness is about to decide and run a tool call.
    ToolCall(Call<'a>),
    /// A tool call was decided, and done when allowed.
    ToolResult {
        /// The call.
        call: Call<'a>,
        /// What the model is shown (redacted).
        result: &'a str,
        /// How long it took.
        ms: u128,
        /// Allowed, denied or error.
        decision: Decision,
    },
    /// How the harness's own search ran, for the trace: the reranker's scores, or why the
    /// search kept its own order.
    Searched(&'a str),
    /// A write waits for a person (the session pauses).
    ApprovalRequired {
        /// The call that asked.
        call_id: &'a str,
        /// Where it wants to write.
        path: &'a str,
    },
    /// The harness sent the model's reply back with a correction instead of taking it as the
    /// answer (a citation it could not verify, a tool call it could not read); the model is
    /// asked again.
    SentBack(CorrectionKind),
    /// The model's answer did not pass the check and the evidence, quoted, replaces it: why
    /// ("replaced by the evidence: the model's answer states 3, which the evidence does not hold").
    Replaced(&'a str),
    /// A policy hook (`[hooks]`) decided or changed something (also in the session log).
    Hook {
        /// Where.
        stage: HookStage,
        /// The rule or setting.
        rule: &'a str,
        /// What it decided or did.
        decision: &'a str,
        /// The call it was about, if any.
        call_id: Option<&'a str>,
    },
    /// The turn answered; the text passed the outbound guard.
    Answer(&'a str),
    /// The turn stopped without an answer: a limit or a cancel.
    Stopped {
        /// Why.
        reason: StopReason,
        /// What to tell the person.
        message: &'a str,
    },
}

/// A tool call as the front ends show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call<'a> {
    /// The model call that asked for it.
    pub step: u32,
    /// The call's id (the harness's own, not the model's).
    pub id: &'a str,
    /// The tool's name, as the model wrote it.
    pub name: &'a str,
    /// The arguments, as the model wrote them (JSON text, perhaps malformed; not yet redacted
    /// when the harness decided on the raw arguments).
    pub arguments: &'a str,
}

/// Where a turn's events go: a front end's listener. It must be quick: the turn waits for it.
pub type Observer<'a> = &'a mut (dyn FnMut(&TurnEvent<'_>) + Send + 'a);
