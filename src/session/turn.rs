//! One turn of a session, driven from the log. Each step reads the session's events, asks
//! [`state::next`] what to do, does it, and records the result before doing anything else: the
//! log is the only state, so a process killed at any point is resumed by running this again.
//! A write happens only after its grant is durable, and is checked against the note before it
//! is done again, so it happens exactly once.

use std::time::{Duration, Instant};

use super::budget;
use super::spans::TurnSpans;
use crate::guard;
use crate::hooks::{RuleDecision, Ruled};
use crate::model::{Message, Model, ModelError, Shape};
use crate::runtime;
use crate::session::event::HookStage;
use crate::tools::{self, Decision, Outcome, Planned, Tool, Toolbox};
use crate::workspace::approval::{Approved, Approver};
use tracing::Instrument;

use super::cancel::Cancel;
use super::compact;
use super::deps::Deps;
use super::event::{CallRecord, CorrectionKind, Event, Origin, Scope, StopReason, Tokens};
use super::fallback::{self, retrieval_only};
use super::fit;
use super::progress::{self, Observer, TurnEvent};
use super::projection;
use super::state::{self, Call, Next, Pending};
use super::store::{Log, LogError, Stored};
use super::verify::{self, Fault};

/// How a write that nobody has decided yet is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecided {
    /// Decide now with this approver (one-shot questions, `APPROVE=yes`).
    Decide(Approver),
    /// Pause the turn: the session is `awaiting_approval` until a decision is logged.
    Pause,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The model answered; the text passed the outbound guard.
    Answered {
        /// The answer as shown.
        answer: String,
        /// Model calls made in the turn.
        steps: u32,
        /// The answer's citations, each marked verified when the turn retrieved its section.
        citations: Vec<verify::Citation>,
    },
    /// A limit or a cancel stopped the turn.
    Stopped {
        /// Why.
        reason: StopReason,
        /// What to tell the person.
        message: String,
        /// Model calls made in the turn.
        steps: u32,
    },
    /// A write waits for a person.
    AwaitingApproval {
        /// The call that asked.
        call_id: String,
        /// Where it wants to write.
        path: String,
        /// What it wants to write (scrubbed).
        content: String,
    },
    /// There was nothing to do: no turn is open.
    Idle,
}

/// Why a turn could not go on.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The model server failed (recorded as a `model_error` stop).
    #[error(transparent)]
    Model(ModelError),
    /// The log could not be read or written: nothing was done past the last durable event.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Even the smallest request a turn can send (the rules, the person's messages, the summary, a
/// note for each result) does not fit the context budget: what the person is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "stopped: the smallest request this turn can send (the rules, the person's messages, the conversation's \
     summary and a note for each result) is about {needed} tokens, more than the context budget leaves for it \
     ({room} of session.context_budget_tokens = {budget}); raise it (DOCS_AGENT_CONTEXT_BUDGET), or shorten \
     AGENTS.md or the question"
)]
struct OverBudget {
    /// Tokens of the smallest request.
    needed: u64,
    /// Tokens the messages may take: the budget less the tool schemas.
    room: u64,
    /// `session.context_budget_tokens`.
    budget: u64,
}

/// Why a decision was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    /// No write waits (or not the one named).
    #[error("{0}")]
    NothingWaits(String),
    /// The request expired first; the expiry was recorded instead.
    #[error("{0}")]
    Expired(String),
    /// The log failed.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// A person's decision on a pending write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allow, once or for the session within a prefix.
    Allow(Scope),
    /// Refuse, with a reason.
    Deny(String),
}

impl<'a> Deps<'a> {
    /// A turn of `session` in `log`, answered by `model`.
    pub fn turn<'t>(&'t self, model: &'t Model, log: &'t mut Log, session: &'t str) -> Turn<'t>
    where
        'a: 't,
    {
        Turn::new(self, model, log, session)
    }
}

/// One turn of one session: made by [`Deps::turn`], then driven. It holds no state of its
/// own: every step is read from the log.
pub struct Turn<'a> {
    /// The toolbox, prompt, limits and settings.
    deps: &'a Deps<'a>,
    /// The session's model.
    model: &'a Model,
    /// The log.
    log: &'a mut Log,
    /// The session id.
    session: &'a str,
    /// How an undecided write is handled.
    undecided: Undecided,
    /// Who is told what happens (the trace, metrics, a stream, the terminal), if anyone.
    observer: Option<Observer<'a>>,
    /// The turn's spans (`telemetry`), told everything the observer is, first.
    spans: TurnSpans,
    /// Hook decisions not yet in the log: committed with the next event, the one they decided
    /// about, in its transaction, so a crash between the two cannot log a decision twice.
    hooks: Vec<Event>,
}

impl<'a> Turn<'a> {
    /// A turn of `session` in `log`, answered by `model`; an undecided write pauses it, and
    /// nobody is told of its progress until [`Turn::observed`].
    pub(super) fn new(deps: &'a Deps<'a>, model: &'a Model, log: &'a mut Log, session: &'a str) -> Turn<'a> {
        let spans = TurnSpans::start(session, &model.name());
        Turn { deps, model, log, session, undecided: Undecided::Pause, observer: None, spans, hooks: Vec::new() }
    }

    /// Decides an undecided write this way instead of pausing.
    pub fn undecided(mut self, undecided: Undecided) -> Turn<'a> {
        self.undecided = undecided;
        self
    }

    /// Tells `observer` what happens, as it happens.
    pub fn observed(mut self, observer: Observer<'a>) -> Turn<'a> {
        self.observer = Some(observer);
        self
    }

    /// Drives the session's open turn until it answers, stops, or waits for a person.
    pub async fn drive(&mut self, cancel: &mut Cancel) -> Result<TurnEnd, TurnError> {
        let limits = self.deps.limits;
        let deadline = Instant::now() + Duration::from_secs(limits.max_wall_secs);
        let toolbox = &self.deps.toolbox;
        let specs = tools::specs();
        let specs_tokens = tools::specs_tokens(&specs);
        loop {
            let events = self.log.events_after(self.session, 0)?;
            if let Some(question) = state::latest_user_message(&events) {
                self.spans.question(question);
            }
            match state::next(&events) {
                Next::Idle => return Ok(TurnEnd::Idle),
                Next::Finish { text, shown, steps } => {
                    let question = state::latest_user_message(&events).unwrap_or_default();
                    let turn = state::this_turn(&events);
                    let text = match shown {
                        Some(shown) => return self.answered(&events, Answer::Recorded(shown), String::new(), steps),
                        None => match self.checked(text, question, turn, steps) {
                            Checked::SendBack { kind, text, hook } => {
                                if let Some(rule) = hook {
                                    self.hook(HookStage::Stop, &rule, "sent back to the model", None);
                                }
                                self.append(Event::Correction { kind, text })?;
                                self.emit(TurnEvent::SentBack(kind));
                                continue;
                            }
                            Checked::Replaced { text, rule } => {
                                self.hook(HookStage::Stop, &rule, "replaced by the retrieval-only answer", None);
                                text
                            }
                            Checked::Answer(text) => text,
                            Checked::Quoted { text, why } => {
                                self.emit(TurnEvent::Replaced(&why));
                                return self.answered(&events, Answer::New(&text), why, steps);
                            }
                        },
                    };
                    return self.answered(&events, Answer::New(&text), String::new(), steps);
                }
                Next::CallModel { steps } => {
                    if self.deps.retrieval.first
                        && let Some(query) = state::retrieval_query(&events)
                    {
                        self.search_first(&events, query)?;
                        continue;
                    }
                    // Evidence too weak to answer from: the docs do not cover it, said without
                    // asking the model (which would answer from whatever it was given).
                    if steps == 0 && verify::weak_evidence(state::this_turn(&events)) {
                        let text = fallback::not_covered(state::this_turn(&events));
                        let why =
                            "not covered: the docs hold too little of the question (retrieval.min_coverage, min_known)";
                        return self.answered(&events, Answer::New(&text), why.to_string(), steps);
                    }
                    if steps >= limits.max_steps {
                        return self.stop(StopReason::StepLimit, steps);
                    }
                    if Instant::now() >= deadline {
                        return self.stop(StopReason::TimeLimit, steps);
                    }
                    let model = self.model.name();
                    if let Some(why) = budget::reached(self.deps.budget, &model, state::this_turn(&events), &events) {
                        // A reply was sent back and no call is left to mend it: the turn still
                        // answers, from what it retrieved.
                        if matches!(events.last().map(|s| &s.event), Some(Event::Correction { .. })) {
                            let text = retrieval_only(state::this_turn(&events), UNCHECKED);
                            return self.answered(&events, Answer::New(&text), why, steps);
                        }
                        return self.stop_for_budget(why, steps);
                    }
                    let projected = projection::projected(self.deps.system_prompt, &events);
                    let size = compact::tokens(&projected.messages);
                    let budget = context_budget(self.deps.session, self.model, limits.max_output_tokens).await;
                    let (session, prompt) = (self.deps.session, self.deps.system_prompt);
                    if let Some(event) = compact::plan_for(session, budget, prompt, &events, size) {
                        self.append(event)?;
                        continue;
                    }
                    let fitted = match self.fitted(projected, budget, specs_tokens) {
                        Ok(fitted) => fitted,
                        // The model cannot be asked: what the search found still answers,
                        // labelled with why.
                        Err(over) => {
                            let why = over.to_string();
                            let turn = state::this_turn(&events);
                            if verify::retrieved(turn).iter().any(|s| s.searched) {
                                let text = retrieval_only(turn, crate::model::builtin::OVERFLOW_HEADER);
                                return self.answered(&events, Answer::New(&text), why, steps);
                            }
                            // Nothing searched yet: the harness searches, once, then answers.
                            let searched = turn
                                .iter()
                                .any(|s| matches!(s.event, Event::AssistantMessage { origin: Origin::Harness, .. }));
                            if let (false, Some(question)) = (searched, state::latest_user_message(&events)) {
                                self.search_first(&events, question.to_string())?;
                                continue;
                            }
                            return self.stop_for_budget(why, steps);
                        }
                    };
                    let next_seq = events.last().map_or(1, |s| s.seq + 1);
                    let (messages, estimate) = (fitted.messages, fitted.tokens + specs_tokens);
                    let started = Instant::now();
                    let numbered = verify::numbered(state::this_turn(&events));
                    // The call that answers from the evidence writes a short answer.
                    let mut shape = if steps == 0 && !numbered.is_empty() {
                        Shape { max_tokens: Some(self.deps.retrieval.answer_tokens), stop: ANSWER_STOPS }
                    } else {
                        Shape::default()
                    };
                    // A token budget bounds the call before it is made: its reply may use no
                    // more than the budget leaves, so the call that crosses the budget passes it
                    // by its prompt at most (which the server, not the harness, counts).
                    if let Some(left) = budget::tokens_left(self.deps.budget, state::this_turn(&events), &events) {
                        let cap = shape.max_tokens.unwrap_or(limits.max_output_tokens);
                        shape.max_tokens = Some(cap.min(u32::try_from(left).unwrap_or(u32::MAX)).max(1));
                    }
                    let call = ModelCall { messages: &messages, specs: &specs, shape, numbered: &numbered };
                    match self.call_model(call, estimate, deadline, steps + 1, cancel).await {
                        Called::Reply(reply) => {
                            let usage = reply.usage.map(|u| Tokens { prompt: u.prompt, completion: u.completion });
                            let ms = started.elapsed().as_millis();
                            let cached = reply.usage.map_or(0, |u| u.cached);
                            self.emit(TurnEvent::ModelReplied { step: steps + 1, ms, usage, cached, estimate });
                            self.record_reply(toolbox, next_seq, reply, steps + 1, estimate)?
                        }
                        Called::Failed(error) => {
                            self.append(Event::Stopped { reason: StopReason::ModelError, detail: error.to_string() })?;
                            // The spans only: the front ends report the error themselves.
                            let message = error.to_string();
                            self.spans.hear(&TurnEvent::Stopped { reason: StopReason::ModelError, message: &message });
                            return Err(TurnError::Model(error));
                        }
                        Called::TimedOut => return self.stop(StopReason::TimeLimit, steps),
                        Called::Cancelled(partial) => return self.cut(partial, steps, estimate),
                    }
                }
                Next::Run(call) => {
                    if cancel.is_cancelled() {
                        return self.interrupted(String::new(), call.step);
                    }
                    let question = state::latest_user_message(&events).unwrap_or_default();
                    self.run(toolbox, call, question)?;
                }
                Next::Decide(pending) => {
                    if let Some(end) = self.decide(&events, pending)? {
                        return Ok(end);
                    }
                }
                Next::Write { call, key } => self.write(toolbox, &events, call, key)?,
            }
        }
    }

    /// Records a person's decision on the pending write (`call_id`, when given, must be it).
    /// Refuses when nothing waits, or when the request has expired (the expiry is recorded).
    pub fn record_verdict(&mut self, call_id: Option<&str>, verdict: Verdict, by: &str) -> Result<(), VerdictError> {
        let events = self.log.events_after(self.session, 0)?;
        let pending = match state::next(&events) {
            Next::Decide(pending) if call_id.is_none_or(|id| id == pending.call.record.id) => pending,
            _ => {
                return Err(VerdictError::NothingWaits(format!(
                    "session {} has no write waiting for approval{} (it is {})",
                    self.session,
                    call_id.map(|id| format!(" under call {id}")).unwrap_or_default(),
                    state::status(&events).as_str()
                )));
            }
        };
        let ttl = self.deps.session.approval_ttl_secs;
        if pending.expired(now_ms(), ttl) {
            self.expire(pending)?;
            return Err(VerdictError::Expired(format!(
                "the request to write {} expired (session.approval_ttl_secs = {ttl}); it was denied",
                pending.path
            )));
        }
        Ok(self.verdict(pending, verdict, by)?)
    }

    /// Records the expiry of the write the session waits for, if its TTL has passed: the model
    /// is then told it was denied, and the turn can go on. False when nothing waits or the
    /// request is still in time.
    pub fn expire_due(&mut self) -> Result<bool, LogError> {
        let events = self.log.events_after(self.session, 0)?;
        match state::next(&events) {
            Next::Decide(pending) if pending.expired(now_ms(), self.deps.session.approval_ttl_secs) => {
                self.expire(pending)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// One model call; its text is told as it comes, the evidence's numbers resolved to their
    /// sources (as the answer will hold them; a citation still being written is held back).
    async fn call_model(
        &mut self,
        call: ModelCall<'_>,
        estimate: u64,
        deadline: Instant,
        step: u32,
        cancel: &mut Cancel,
    ) -> Called {
        self.emit(TurnEvent::ModelCall { step, estimate });
        let partial = std::sync::Mutex::new(String::new());
        let observer = &mut self.observer;
        let numbered = call.numbered;
        let mut pieces = verify::Pieces::default();
        let mut on_delta = |delta: &str| {
            partial.lock().unwrap_or_else(|p| p.into_inner()).push_str(delta);
            if let Some(observe) = observer.as_mut().filter(|_| !delta.is_empty()) {
                if numbered.is_empty() {
                    observe(&TurnEvent::TextDelta(delta));
                } else if let Some(resolved) = pieces.push(delta, numbered) {
                    observe(&TurnEvent::TextDelta(&resolved));
                }
            }
        };
        let reply = self.model.complete_streaming(call.messages, call.specs, call.shape, &mut on_delta);
        let result = tokio::select! {
            reply = reply.instrument(self.spans.chat()) => reply,
            () = tokio::time::sleep_until(deadline.into()) => return Called::TimedOut,
            () = cancel.cancelled() => {
                return Called::Cancelled(partial.lock().unwrap_or_else(|p| p.into_inner()).clone());
            }
        };
        if let Some(rest) = pieces.finish(numbered) {
            self.emit(TurnEvent::TextDelta(&rest));
        }
        match result {
            Ok(reply) => Called::Reply(reply),
            Err(error) => Called::Failed(error),
        }
    }

    /// Records the model's reply. Call ids are the harness's own (`call_{seq}_{i}`), so a model
    /// cannot repeat one or smuggle text through it; calls past the per-step limit are cut to one
    /// that carries the refusal. The log keeps scrubbed arguments, so a call whose arguments the
    /// scrub would change (a control character or a secret in a path) is decided now, on what
    /// the model really sent, without side effects, and its result is stored with the message
    /// in one transaction.
    fn record_reply(
        &mut self,
        toolbox: &Toolbox<'_>,
        seq: u64,
        reply: crate::model::Reply,
        step: u32,
        estimate: u64,
    ) -> Result<(), LogError> {
        let allowed = self.deps.limits.max_tool_calls_per_step as usize;
        let hooks = self.deps.hooks;
        let mut early = Vec::new();
        let tool_calls: Vec<CallRecord> = reply
            .tool_calls
            .into_iter()
            .take(allowed + 1)
            .enumerate()
            .map(|(i, c)| {
                let record = CallRecord { id: format!("call_{seq}_{i}"), name: c.name, arguments: c.arguments };
                if i < allowed && guard::scrub(&record.arguments) != record.arguments.as_str() {
                    let started = Instant::now();
                    let ruled = hooks.before(&record.name, &record.arguments);
                    let planned = match &ruled {
                        Some(ruled) if ruled.decision == RuleDecision::Deny => Planned::Done(refused(ruled)),
                        // A person cannot be shown what the scrub would change: refused, failing
                        // closed, rather than asked about on other arguments than the model sent.
                        Some(ruled) if ruled.decision == RuleDecision::Ask => Planned::Done(Outcome::denied(format!(
                            "refused: the operator's rule `{}` asks a person first, and this call's arguments hold \
                             text that cannot be shown (a secret); ask without it",
                            ruled.rule
                        ))),
                        _ => toolbox.plan(&record.name, &record.arguments),
                    };
                    if let Planned::Done(outcome) = planned {
                        let trimmed = hooks.after(&outcome.text);
                        let outcome = Outcome { text: trimmed.text, ..outcome };
                        early.push((record.clone(), outcome, started.elapsed().as_millis(), ruled, trimmed.changes));
                    }
                }
                record
            })
            .collect();
        let usage = reply.usage.map(|u| Tokens { prompt: u.prompt, completion: u.completion });
        // Without the server's count, budgets count the harness's estimate.
        let reply_bytes =
            reply.content.len() + tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
        let estimated = usage.is_none().then(|| budget::estimate(estimate, reply_bytes));
        let mut events =
            vec![Event::AssistantMessage { text: reply.content, tool_calls, usage, estimated, origin: Origin::Model }];
        for (record, outcome, _, ruled, changes) in &early {
            if let Some(ruled) = ruled {
                events.push(Event::Hook {
                    stage: HookStage::PreTool,
                    rule: ruled.rule.clone(),
                    decision: ruled.decision.as_str().to_string(),
                    call_id: Some(record.id.clone()),
                });
            }
            events.extend(changes.iter().map(|change| Event::Hook {
                stage: HookStage::PostTool,
                rule: "hooks.post_tool".into(),
                decision: change.clone(),
                call_id: Some(record.id.clone()),
            }));
            events.push(Event::ToolResult {
                call_id: record.id.clone(),
                text: outcome.text.clone(),
                decision: outcome.decision,
            });
        }
        self.append_all(events)?;
        for (record, outcome, ms, ruled, changes) in &early {
            let call = shown(step, record);
            self.emit(TurnEvent::ToolCall(call));
            if let Some(ruled) = ruled {
                let decision = ruled.decision.as_str();
                self.emit(TurnEvent::Hook {
                    stage: HookStage::PreTool,
                    rule: &ruled.rule,
                    decision,
                    call_id: Some(&record.id),
                });
            }
            for change in changes {
                let id = Some(record.id.as_str());
                self.emit(TurnEvent::Hook {
                    stage: HookStage::PostTool,
                    rule: "hooks.post_tool",
                    decision: change,
                    call_id: id,
                });
            }
            self.emit(TurnEvent::ToolResult { call, result: &outcome.text, ms: *ms, decision: outcome.decision });
        }
        Ok(())
    }

    /// Runs one call; `question` is the user's message the turn answers (retrieve-first's
    /// hint repeats it).
    fn run(&mut self, toolbox: &Toolbox<'_>, call: Call<'_>, question: &str) -> Result<(), LogError> {
        let allowed = self.deps.limits.max_tool_calls_per_step as usize;
        self.emit(TurnEvent::ToolCall(shown(call.step, call.record)));
        // What the tool logs is logged in its span.
        let span = self.spans.tool(&call.record.id);
        let _in_tool = span.enter();
        let started = Instant::now();
        let session = self.session;
        let key = || format!("{session}/{}/{}", call.assistant_seq, call.record.id);
        // The operator's rule that asks a person about this call, if one does.
        let mut asked_by: Option<String> = None;
        let outcome = if call.index >= allowed {
            Outcome::error(format!(
                "too many tool calls in one step (limit {allowed}); this call and any after it were not run"
            ))
        } else {
            let planned = match call.origin {
                // The harness's own first search passes the rules too; a rule that asks a person
                // refuses it (the model may still ask for the search, and a person decides).
                Origin::Harness => match self.deps.hooks.before(&call.record.name, &call.record.arguments) {
                    Some(ruled) if ruled.decision != RuleDecision::Allow => {
                        self.hook(HookStage::PreTool, &ruled.rule, "deny", Some(&call.record.id));
                        Planned::Done(refused(&ruled))
                    }
                    _ => Planned::Done(runtime::blocking(|| {
                        toolbox.retrieve(
                            &call.record.arguments,
                            question,
                            tools::evidence_budget(self.deps.retrieval),
                            tools::Weak::from(self.deps.retrieval),
                        )
                    })),
                },
                Origin::Model => match self.deps.hooks.before(&call.record.name, &call.record.arguments) {
                    Some(ruled) => {
                        self.hook(HookStage::PreTool, &ruled.rule, ruled.decision.as_str(), Some(&call.record.id));
                        match ruled.decision {
                            RuleDecision::Deny => Planned::Done(refused(&ruled)),
                            RuleDecision::Allow => toolbox.plan(&call.record.name, &call.record.arguments),
                            // A write plans (and is checked) as always; any other call waits
                            // for a person before it runs.
                            RuleDecision::Ask if Tool::from_name(&call.record.name) == Some(Tool::WriteFile) => {
                                asked_by = Some(ruled.rule);
                                toolbox.plan(&call.record.name, &call.record.arguments)
                            }
                            RuleDecision::Ask => {
                                self.append(Event::ApprovalRequested {
                                    call_id: call.record.id.clone(),
                                    path: crate::hooks::target(&call.record.name, &call.record.arguments),
                                    key: key(),
                                    rule: Some(ruled.rule),
                                })?;
                                return Ok(());
                            }
                        }
                    }
                    None => toolbox.plan(&call.record.name, &call.record.arguments),
                },
            };
            match planned {
                Planned::Done(outcome) => outcome,
                Planned::Write(request) => {
                    self.append(Event::ApprovalRequested {
                        call_id: call.record.id.clone(),
                        path: request.path.display(),
                        key: key(),
                        rule: asked_by,
                    })?;
                    return Ok(());
                }
            }
        };
        if let Some(note) = outcome.note.as_deref() {
            self.emit(TurnEvent::Searched(note));
        }
        self.result(call, outcome, started.elapsed().as_millis())
    }

    /// Decides a pending write when the log or the configuration can; otherwise pauses. A
    /// session grant or a configured approver decides at once; only a request left waiting for
    /// a person can expire.
    fn decide(&mut self, events: &[Stored], pending: Pending<'_>) -> Result<Option<TurnEnd>, LogError> {
        // A call an operator's rule asks about is decided by a person only, never by a grant.
        if pending.rule.is_none()
            && let Some((prefix, seq)) = state::covering_grant(events, pending.path)
        {
            let by = format!("the session grant for {prefix} (event {seq})");
            self.verdict(pending, Verdict::Allow(Scope::Once), &by)?;
            return Ok(None);
        }
        if Tool::from_name(&pending.call.record.name) != Some(Tool::WriteFile) {
            return self.decide_call(pending);
        }
        let request = match Toolbox::plan_write(&pending.call.record.arguments) {
            Ok(request) => request,
            Err(outcome) => {
                // The logged arguments no longer pass the policy: refuse rather than guess.
                self.verdict(pending, Verdict::Deny(outcome.text), "the path policy")?;
                return Ok(None);
            }
        };
        let content = request.content.clone();
        self.settle(pending, content, |approver| approver.decide(&request.path, &request.content))
    }

    /// What becomes of a pending call no grant decided: it expires, pauses for a person (the
    /// front end shows `content`), or `ask` decides it (`APPROVE=yes` approves at once).
    fn settle(
        &mut self,
        pending: Pending<'_>,
        content: String,
        ask: impl FnOnce(&Approver) -> Result<Approved, crate::workspace::policy::Denied>,
    ) -> Result<Option<TurnEnd>, LogError> {
        match self.undecided {
            Undecided::Pause if pending.expired(now_ms(), self.deps.session.approval_ttl_secs) => {
                self.expire(pending)?;
            }
            Undecided::Pause => {
                self.emit(TurnEvent::ApprovalRequired { call_id: &pending.call.record.id, path: pending.path });
                return Ok(Some(TurnEnd::AwaitingApproval {
                    call_id: pending.call.record.id.clone(),
                    path: pending.path.to_string(),
                    content,
                }));
            }
            Undecided::Decide(Approver::Always) => self.verdict(pending, Verdict::Allow(Scope::Once), "APPROVE=yes")?,
            Undecided::Decide(approver) => match ask(&approver) {
                Ok(_) => self.verdict(pending, Verdict::Allow(Scope::Once), "user")?,
                Err(crate::workspace::policy::Denied(reason)) => {
                    self.verdict(pending, Verdict::Deny(reason), "user")?
                }
            },
        }
        Ok(None)
    }

    /// Decides a call that is not a write but that an operator's rule asks a person about: as
    /// a write is decided, the person shown the tool and what it is about.
    fn decide_call(&mut self, pending: Pending<'_>) -> Result<Option<TurnEnd>, LogError> {
        let rule = pending.rule.unwrap_or("hooks.pre_tool");
        self.settle(pending, String::new(), |approver| approver.decide_call(pending.path, rule))
    }

    fn verdict(&mut self, pending: Pending<'_>, verdict: Verdict, by: &str) -> Result<(), LogError> {
        let call_id = pending.call.record.id.clone();
        match verdict {
            Verdict::Allow(scope) => {
                self.append(Event::ApprovalGranted { call_id, scope, by: by.to_string() })?;
            }
            Verdict::Deny(reason) => {
                let shown = projection::denial(&reason);
                self.append(Event::ApprovalDenied { call_id, reason })?;
                self.tell_result(pending.call, &shown, 0, Decision::Denied);
            }
        }
        Ok(())
    }

    fn expire(&mut self, pending: Pending<'_>) -> Result<(), LogError> {
        self.append(Event::ApprovalExpired { call_id: pending.call.record.id.clone() })?;
        self.tell_result(pending.call, projection::EXPIRED, 0, Decision::Denied);
        Ok(())
    }

    /// Does a granted write exactly once: if the note already holds the content, the write
    /// finished before a crash and is only recorded.
    fn write(&mut self, toolbox: &Toolbox<'_>, events: &[Stored], call: Call<'_>, key: &str) -> Result<(), LogError> {
        let started = Instant::now();
        let id = call.record.id.as_str();
        let grant = events.iter().find_map(|s| Approved::from_grant(&s.event, id));
        if Tool::from_name(&call.record.name) != Some(Tool::WriteFile) {
            // A call a rule asked about, now decided: run it (a read has no effect to repeat).
            let outcome = match grant.map(|_| toolbox.plan(&call.record.name, &call.record.arguments)) {
                None => Outcome::denied("not approved: no grant in the session log"),
                Some(Planned::Done(outcome)) => outcome,
                Some(Planned::Write(_)) => Outcome::error("a write cannot be run as another tool"),
            };
            return self.result(call, outcome, started.elapsed().as_millis());
        }
        let outcome = match (Toolbox::plan_write(&call.record.arguments), grant) {
            (Err(outcome), _) => outcome,
            (Ok(_), None) => Outcome::denied("write not approved: no grant in the session log"),
            // A crash between the write and its result leaves the note holding the content:
            // the write happened, so it is only recorded (an identical note is never rewritten).
            (Ok(request), Some(_)) if runtime::blocking(|| toolbox.already_written(&request)) => Outcome::allowed(
                format!("OK: {} already holds exactly this content; not written again (write {key})", request.path),
            ),
            (Ok(request), Some(approved)) => {
                let outcome = runtime::blocking(|| toolbox.commit_write(&request, approved));
                self.log.reached("write");
                outcome
            }
        };
        self.result_of(call, outcome, started.elapsed().as_millis(), Some(key))
    }

    /// What becomes of the model's final text, its evidence numbers resolved to their sources:
    /// sent back (at most once per kind) with a one-line correction when it looks like a tool
    /// call the harness could not read, when it copies the tool's output (a fence tag) instead
    /// of answering, or when it cites no section retrieved in this turn (or quotes what none
    /// holds) though the docs had hits; after one such correction, a retrieval-only answer of
    /// the turn's evidence replaces it (for a call it cannot read or a copy, whatever the text
    /// cites). When the model says the docs do not cover the question and cites nothing it was
    /// given, the answer says so plainly, with the closest sections as might-help.
    fn checked(&self, text: &str, question: &str, turn: &[Stored], steps: u32) -> Checked {
        let sent = |kind: CorrectionKind| {
            turn.iter().any(|s| matches!(&s.event, Event::Correction { kind: k, .. } if *k == kind))
        };
        let can_retry = steps < self.deps.limits.max_steps;
        // No model wrote it: the evidence quoted by the harness's code, labelled as such (the
        // model-answer check would take its label for words the evidence does not hold). The
        // operator's stop rules still hold: one it cannot meet is recorded as not met.
        if self.model.quotes_only() {
            let verdict = verify::check(text, question, turn);
            if let Some((rule, _)) =
                self.deps.hooks.lacking(verdict.citations.iter().map(|c| (c.path.as_str(), c.verified)))
            {
                return Checked::Replaced { text: text.to_string(), rule };
            }
            return Checked::Answer(text.to_string());
        }
        if let Some(problem) = crate::model::textcall::unreadable(text, &tools::names()) {
            if can_retry && !sent(CorrectionKind::ToolCall) {
                return Checked::SendBack { kind: CorrectionKind::ToolCall, text: problem, hook: None };
            }
            // Still a call the harness cannot read after its correction (or no step left for
            // one): JSON meant for a tool is no answer, even when it names a retrieved section.
            return Checked::Answer(retrieval_only(turn, UNCHECKED));
        }
        if crate::guard::fence::holds_tag(text) {
            if can_retry && !sent(CorrectionKind::Copied) {
                return Checked::SendBack { kind: CorrectionKind::Copied, text: COPIED.to_string(), hook: None };
            }
            // A fence tag in an answer never passes: the evidence is quoted instead.
            return quoted(turn, "it copied the evidence's fence tags".into());
        }
        let text = verify::resolve(text, &verify::numbered(turn));
        if !self.deps.retrieval.verify && !self.deps.hooks.checks_stop() {
            return Checked::Answer(text.into_owned());
        }
        let verdict = verify::check(&text, question, turn);
        if self.deps.retrieval.verify
            && !verdict.citations.iter().any(|c| c.verified)
            && verify::says_not_covered(&text)
        {
            return Checked::Answer(fallback::not_covered(turn));
        }
        // A name, product or number that no passage holds and the docs never use: the model
        // filled silence (told so, a small model repeats it), and the docs do not cover it.
        if self.deps.retrieval.verify
            && let Some(invented) = verify::invented::invented(&text, question, turn, &self.deps.toolbox.index)
        {
            let text = fallback::not_covered_saying(turn, Some(&invented.sentence()));
            return Checked::Quoted { text, why: invented.logged() };
        }
        if self.deps.retrieval.verify && !verdict.holds() {
            // A cited answer that says what the evidence does not is not sent back: measured
            // with Qwen2.5-Coder-1.5B, told so, it repeated itself or said the docs do not cover
            // it whatever they held; the evidence is quoted at once instead.
            if verdict.correctable() && can_retry && !sent(CorrectionKind::Unverified) {
                return Checked::SendBack { kind: CorrectionKind::Unverified, text: reminder(&verdict), hook: None };
            }
            let faults: Vec<String> = verdict.faults().iter().map(Fault::logged).collect();
            return quoted(turn, faults.join("; "));
        }
        // The operator's stop rules: what the answer must cite.
        if let Some((rule, correction)) =
            self.deps.hooks.lacking(verdict.citations.iter().map(|c| (c.path.as_str(), c.verified)))
        {
            if can_retry && !sent(CorrectionKind::Unverified) {
                return Checked::SendBack { kind: CorrectionKind::Unverified, text: correction, hook: Some(rule) };
            }
            return Checked::Replaced { text: retrieval_only(turn, UNCHECKED), rule };
        }
        Checked::Answer(text.into_owned())
    }

    /// Ends the turn with an answer: a new one (guarded on its way out) recorded with the
    /// turn's end in one commit, or the one already recorded before a crash, whose end is
    /// recorded now. `detail` says why it ended there (empty: the model answered).
    fn answered(
        &mut self,
        events: &[Stored],
        answer: Answer<'_>,
        detail: String,
        steps: u32,
    ) -> Result<TurnEnd, TurnError> {
        let stopped = Event::Stopped { reason: StopReason::Answered, detail };
        let answer = match answer {
            Answer::Recorded(text) => {
                self.append(stopped)?;
                text.to_string()
            }
            Answer::New(text) => {
                let answer = guard::outbound_answer(text, self.deps.link_hosts, &retrieved(events));
                let revision = self.deps.toolbox.index.revision();
                self.append_all(vec![Event::Answer { text: answer.clone(), revision }, stopped])?;
                answer
            }
        };
        self.emit(TurnEvent::Answer(&answer));
        let question = state::latest_user_message(events).unwrap_or_default();
        let citations = verify::sources_of(&answer, question, state::this_turn(events));
        let citations = verify::linked(citations, self.deps.site.map(|site| (site, self.deps.toolbox.workspace)));
        Ok(TurnEnd::Answered { answer, steps, citations })
    }

    /// Records the harness's own search for `query` (retrieve-first), to be run next.
    fn search_first(&mut self, events: &[Stored], query: String) -> Result<(), LogError> {
        let seq = events.last().map_or(1, |s| s.seq + 1);
        let search = CallRecord {
            id: format!("call_{seq}_0"),
            name: Tool::SearchDocs.name().to_string(),
            arguments: serde_json::json!({ "query": query }).to_string(),
        };
        self.append(Event::AssistantMessage {
            text: String::new(),
            tool_calls: vec![search],
            usage: None,
            estimated: None,
            origin: Origin::Harness,
        })?;
        Ok(())
    }

    /// The request fitted to the context budget (`fit`), with `tools` tokens of tool schemas
    /// sent beside it; what to tell the person when even the rules and the question do not fit.
    fn fitted(&self, projected: projection::Projected, budget: u64, tools: u64) -> Result<fit::Fitted, OverBudget> {
        let index = &self.deps.toolbox.index;
        let locate = |source: &str| {
            let (path, anchor) = source.split_once('#').unwrap_or((source, ""));
            index.section(path, anchor).ok().flatten().map(|s| s.lines)
        };
        match fit::fit(projected, budget.saturating_sub(tools), &locate) {
            Ok(fitted) => {
                if fitted.changed() {
                    tracing::info!(
                        stubbed = fitted.stubbed,
                        dropped = fitted.dropped,
                        cut = fitted.cut,
                        tokens = fitted.tokens + tools,
                        budget,
                        "the request was fitted to the context budget"
                    );
                }
                Ok(fitted)
            }
            Err(overflow) => Err(OverBudget { needed: overflow.needed, room: overflow.room, budget }),
        }
    }

    /// Records a hook's decision, committed with the next event (what it decided about), and
    /// tells it.
    fn hook(&mut self, stage: HookStage, rule: &str, decision: &str, call_id: Option<&str>) {
        self.hooks.push(Event::Hook {
            stage,
            rule: rule.to_string(),
            decision: decision.to_string(),
            call_id: call_id.map(str::to_string),
        });
        self.emit(TurnEvent::Hook { stage, rule, decision, call_id });
    }

    fn result(&mut self, call: Call<'_>, outcome: Outcome, ms: u128) -> Result<(), LogError> {
        self.result_of(call, outcome, ms, None)
    }

    /// Records a call's result; a write's result carries its idempotency `key`, which the log
    /// takes once.
    fn result_of(&mut self, call: Call<'_>, outcome: Outcome, ms: u128, key: Option<&str>) -> Result<(), LogError> {
        // The operator's post-tool rules: extra redaction, a size cap.
        let trimmed = self.deps.hooks.after(&outcome.text);
        for change in &trimmed.changes {
            self.hook(HookStage::PostTool, "hooks.post_tool", change, Some(&call.record.id));
        }
        let outcome = Outcome { text: trimmed.text, ..outcome };
        let event = Event::ToolResult {
            call_id: call.record.id.clone(),
            text: outcome.text.clone(),
            decision: outcome.decision,
        };
        match key {
            None => self.append(event)?,
            Some(key) => {
                let (log, session, hooks) = (&mut *self.log, self.session, std::mem::take(&mut self.hooks));
                runtime::blocking(|| log.append_once_after(session, hooks, key, event))?
            }
        };
        self.tell_result(call, &outcome.text, ms, outcome.decision);
        Ok(())
    }

    /// Tells the observer how a call was decided.
    fn tell_result(&mut self, call: Call<'_>, text: &str, ms: u128, decision: Decision) {
        self.emit(TurnEvent::ToolResult { call: shown(call.step, call.record), result: text, ms, decision });
    }

    /// Tells the spans, then the observer, if there is one.
    fn emit(&mut self, event: TurnEvent<'_>) {
        self.spans.hear(&event);
        if let Some(observe) = self.observer.as_mut() {
            observe(&event);
        }
    }

    /// Stops the turn because `why` (a budget's message) says no model call is left.
    fn stop_for_budget(&mut self, why: String, steps: u32) -> Result<TurnEnd, TurnError> {
        self.append(Event::Stopped { reason: StopReason::Budget, detail: why.clone() })?;
        self.emit(TurnEvent::Stopped { reason: StopReason::Budget, message: &why });
        Ok(TurnEnd::Stopped { reason: StopReason::Budget, message: why, steps })
    }

    fn stop(&mut self, reason: StopReason, steps: u32) -> Result<TurnEnd, TurnError> {
        let limits = self.deps.limits;
        let message = match reason {
            StopReason::StepLimit => format!(
                "stopped: the model used all {} steps without answering (limits.max_steps); it may be looping",
                limits.max_steps
            ),
            StopReason::TimeLimit => {
                format!("stopped: the run took longer than {} s (limits.max_wall_secs)", limits.max_wall_secs)
            }
            StopReason::Cancelled => {
                "stopped: the turn was interrupted; the session is ready for the next message".into()
            }
            StopReason::Answered | StopReason::ModelError | StopReason::Budget => String::new(),
        };
        self.append(Event::Stopped { reason, detail: message.clone() })?;
        self.emit(TurnEvent::Stopped { reason, message: &message });
        Ok(TurnEnd::Stopped { reason, message, steps })
    }

    fn interrupted(&mut self, partial_text: String, steps: u32) -> Result<TurnEnd, TurnError> {
        self.append(Event::Interrupted { partial_text, estimated: None })?;
        self.stop(StopReason::Cancelled, steps)
    }

    /// A model call cut by a cancel: its partial text, and the tokens it is estimated to have
    /// used (`prompt` sent, what it wrote), which budgets count.
    fn cut(&mut self, partial_text: String, steps: u32, prompt: u64) -> Result<TurnEnd, TurnError> {
        let estimated = Some(budget::estimate(prompt, partial_text.len()));
        self.append(Event::Interrupted { partial_text, estimated })?;
        self.stop(StopReason::Cancelled, steps)
    }

    fn append(&mut self, event: Event) -> Result<u64, LogError> {
        self.append_all(vec![event])
    }

    /// Appends `events` in one commit. A commit to a log on disk waits for the disk, so it runs
    /// off the async workers (`runtime::blocking`); one in memory is too quick to bother, and so
    /// are the turn's reads (cached pages: moving them off measured no better).
    fn append_all(&mut self, events: Vec<Event>) -> Result<u64, LogError> {
        // The hook decisions about these events go in the same commit, first.
        let mut events = events;
        if !self.hooks.is_empty() {
            events.splice(0..0, std::mem::take(&mut self.hooks));
        }
        let (log, session) = (&mut *self.log, self.session);
        if log.on_disk() {
            runtime::blocking(|| log.append_all(session, events))
        } else {
            log.append_all(session, events)
        }
    }
}

/// What the check of a final text decided.
enum Checked {
    /// Record this correction and ask the model again.
    SendBack {
        /// Why.
        kind: CorrectionKind,
        /// What the model is told.
        text: String,
        /// The operator's stop rule that sent it back, if one did.
        hook: Option<String>,
    },
    /// Answer with this text (the model's, or that the docs do not cover the question).
    Answer(String),
    /// Answer with the retrieval-only text: the model's answer did not pass the check.
    Quoted {
        /// The retrieval-only answer.
        text: String,
        /// What was wrong with the model's answer, recorded with the turn's end.
        why: String,
    },
    /// An operator's stop rule was still not met after a correction: answer with the
    /// retrieval-only text instead.
    Replaced {
        /// The retrieval-only answer.
        text: String,
        /// The rule.
        rule: String,
    },
}

/// The retrieval-only answer that replaces the model's, and why (recorded as the turn end's
/// detail: "replaced by the evidence: it states 3, which the evidence does not hold").
fn quoted(turn: &[Stored], why: String) -> Checked {
    Checked::Quoted {
        text: retrieval_only(turn, UNCHECKED),
        why: format!("replaced by the evidence: the model's answer {why}"),
    }
}

/// The context budget of `model`: `session.context_budget_tokens`, or what the model's
/// server reports (asked only when it is unset).
async fn context_budget(session: &crate::config::SessionConfig, model: &Model, max_output_tokens: u32) -> u64 {
    let reported = match session.context_budget_tokens {
        Some(_) => None,
        None => model.context_length().await,
    };
    let budget = session.context_budget_for(reported, max_output_tokens);
    tracing::debug!(budget, reported, set = session.context_budget_tokens, "the context budget");
    budget
}

/// The one-line reminder for an answer that failed the check: what was wrong with it.
fn reminder(verdict: &verify::Verdict) -> String {
    let mut said: Vec<String> = verdict
        .faults()
        .into_iter()
        .map(|fault| match fault {
            Fault::Bare => "Your reply gives a source but no answer: answer the question in a sentence, then give the evidence number you used, like: Source: [1].".into(),
            Fault::Uncited => "Your answer must cite the evidence above that states each fact: its number, like [1], or its [path#anchor] exactly as its source attribute shows.".into(),
            Fault::Ungrounded => "Answer with what the evidence says, in its words.".into(),
            Fault::Unsupported(numbers) => format!(
                "The evidence does not say \"{}\": state only what it says.",
                crate::guard::clip(numbers.first().map_or("", String::as_str), 40)
            ),
            Fault::Misquote(quote) => {
                format!("This quote is not in it: \"{}\"; quote only its words.", crate::guard::clip(quote, 120))
            }
        })
        .collect();
    said.push("Answer again.".into());
    said.join(" ")
}

/// What the model is told when its reply copies the tool's output instead of answering.
const COPIED: &str = "Your reply copied the evidence's tags instead of answering. Answer the question in your own words from the evidence, citing its numbers like [1].";

/// Why a retrieval-only answer replaces the model's: its answer could not be checked.
const UNCHECKED: &str = crate::model::builtin::UNCHECKED_HEADER;

/// The answer a turn ends with.
enum Answer<'a> {
    /// Made now: guarded, then recorded.
    New(&'a str),
    /// Recorded already (an `Answer` event whose turn end was not).
    Recorded(&'a str),
}

/// What one model call sends, and the evidence numbers its text may cite.
struct ModelCall<'c> {
    /// The fitted request.
    messages: &'c [Message],
    /// The tools offered.
    specs: &'c [crate::model::ToolSpec],
    /// Its token cap and stop sequences.
    shape: Shape<'c>,
    /// The sources of the turn's numbered evidence, `[1]` first.
    numbered: &'c [String],
}

/// Where the call that answers from the evidence stops: before it copies the evidence's fences
/// or the harness's own lines back.
const ANSWER_STOPS: &[&str] = &["<untrusted", "</untrusted", "\nQuestion:", tools::EVIDENCE_HEADER];

/// What one model call came to.
enum Called {
    Reply(crate::model::Reply),
    Failed(ModelError),
    TimedOut,
    Cancelled(String),
}

/// A logged call of model call `step`, as the observer sees it.
fn shown(step: u32, record: &CallRecord) -> progress::Call<'_> {
    progress::Call { step, id: &record.id, name: &record.name, arguments: &record.arguments }
}

/// Files whose text a tool showed the model in this session: what an answer may cite.
fn retrieved(events: &[Stored]) -> std::collections::BTreeSet<String> {
    events
        .iter()
        .filter_map(|s| match &s.event {
            Event::ToolResult { text, decision: Decision::Allowed, .. } => Some(text),
            _ => None,
        })
        .flat_map(|text| guard::citations::sources_in(text))
        .collect()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// What the model is shown when an operator's rule refuses its call.
fn refused(ruled: &Ruled) -> Outcome {
    Outcome::denied(format!("refused by the operator's rule `{}`: {}", ruled.rule, ruled.reason))
}

#[cfg(test)]
mod tests {
    use super::OverBudget;

    /// The message a person reads when even the smallest request does not fit, word for word.
    #[test]
    fn over_budget_says_what_to_raise() {
        let over = OverBudget { needed: 9000, room: 7000, budget: 8000 };
        assert_eq!(
            over.to_string(),
            "stopped: the smallest request this turn can send (the rules, the person's messages, the conversation's \
             summary and a note for each result) is about 9000 tokens, more than the context budget leaves for it \
             (7000 of session.context_budget_tokens = 8000); raise it (DOCS_AGENT_CONTEXT_BUDGET), or shorten \
             AGENTS.md or the question"
        );
    }
}
