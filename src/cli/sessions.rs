//! The session commands: `docs-agent sessions list|show|resume|approve|deny|export`, and what
//! `chat` shares with them: opening the log, picking a session's model, driving its turn and
//! reporting how the turn ended. Output is scrubbed like everything else.

use std::io::Write;

use serde_json::json;

use super::{Exit, Failure, Global, ScopeArg, SessionsAction};
use crate::agent::Harness;
use crate::config::Config;
use crate::guard;
use crate::model::Model;
use crate::runtime::{self, Flavor};
use crate::session::cancel::Cancel;
use crate::session::event::{Event, Scope};
use crate::session::progress::{Observer, TurnEvent};
use crate::session::state::{self, Next};
use crate::session::store::{KillAfter, Log, SessionLock, Store, Stored};
use crate::session::turn::{TurnEnd, TurnError, Undecided, Verdict, VerdictError, now_ms};
use crate::session::{self, check_id};
use crate::trace::Trace;

/// `docs-agent sessions ACTION`, in the sandbox of a conversation.
pub fn run(global: &Global, serve: bool, action: SessionsAction) -> Result<Exit, Failure> {
    let mut out = crate::guard::sink::stdout();
    // The sandbox lets in every collection: `show` reads the index of the session's own.
    let full = super::full_log_config(global, serve)?;
    super::sandbox::enter(global, &super::sandbox::for_workspace(&full, super::sandbox::Use::Converse)?)?;
    let config = super::chosen_collection(full.clone(), global)?;
    // Reading commands open the log alone; the others need the harness (index, model).
    let log_only = |config: Config| -> Result<(Config, Log), Failure> {
        let log = open_log(&config)?;
        Ok((config, log))
    };
    let desk = |config: Config| Desk::open(config, super::crash_hook()?, global.trace);
    let repin = global.model.as_deref();
    match action {
        SessionsAction::List => {
            let (config, log) = log_only(config)?;
            list(&log, &config, &mut out)
        }
        SessionsAction::Show { id } => {
            let (config, log) = log_only(config)?;
            // The docs of the session's collection as they are now, to flag answers whose
            // sources changed since; without them, the answers are shown unflagged.
            let recorded = state::collection(&events(&log, &config, &id)?).map(str::to_string);
            let now = docs_now(&full, recorded.as_deref().or(global.collection.as_deref()))
                .and_then(|own| Harness::open_unembedded(&own).ok());
            show(&log, &config, &id, now.as_ref(), &mut out)
        }
        SessionsAction::Export { id } => {
            let (config, log) = log_only(config)?;
            export(&log, &config, &id, &mut out)
        }
        SessionsAction::Resume { id } => continue_turn(&mut desk(config)?, &id, None, repin),
        SessionsAction::Approve { id, scope, prefix, call } => {
            let decision = Decision::Approve { scope, prefix };
            continue_turn(&mut desk(config)?, &id, Some((decision, call)), repin)
        }
        SessionsAction::Deny { id, reason, call } => {
            let decision = Decision::Deny { reason };
            continue_turn(&mut desk(config)?, &id, Some((decision, call)), repin)
        }
    }
}

/// Characters of an event's text shown by `sessions show`.
const SHOW_CHARS: usize = 160;

/// The harness with the session log open.
pub struct Desk {
    /// The configuration, read once.
    pub config: Config,
    /// Everything built once.
    pub harness: Harness,
    /// The session log.
    pub log: Log,
    /// Trace lines (stderr, below any progress line).
    trace: Trace<super::live::Stderr>,
}

impl Desk {
    /// Opens the workspace and the session log, arming the crash-test hook if given.
    pub fn open(config: Config, kill_after: Option<KillAfter>, trace: super::TraceWhen) -> Result<Desk, Failure> {
        let mut log = open_log(&config)?;
        if let Some(hook) = kill_after {
            log.kill_after(hook);
        }
        let harness = super::open(&config)?;
        let trace = Trace::new(super::live::Stderr, config.limits.trace_result_chars).with_format(trace.format());
        Ok(Desk { config, harness, log, trace })
    }

    /// The events of session `id`, which must exist.
    pub fn events(&self, id: &str) -> Result<Vec<Stored>, Failure> {
        events(&self.log, &self.config, id)
    }

    /// Session `id`'s events, after checking that it belongs to this workspace: its grants,
    /// writes and citations are about the workspace it started in. A changed configuration is
    /// only a warning.
    pub fn events_here(&self, id: &str) -> Result<Vec<Stored>, Failure> {
        let events = self.events(id)?;
        if let Some(Event::SessionStarted { workspace, config_fingerprint, .. }) = events.first().map(|s| &s.event) {
            let here = session::workspace_of(&self.config);
            if *workspace != here {
                return Err((
                    Exit::Usage,
                    format!(
                        "session {id} belongs to the workspace {workspace}, not {here}; run it with --workspace {workspace} (WORKSPACE), or with --collection NAME for a collection's"
                    ),
                ));
            }
            if *config_fingerprint != session::fingerprint(&self.config) {
                crate::guard::sink::err_line!(
                    "docs-agent: note: the configuration changed since session {id} started (limits, model server or index settings)"
                );
            }
        }
        Ok(events)
    }

    /// Takes session `id`'s writer lock.
    pub fn lock(&self, id: &str) -> Result<SessionLock, Failure> {
        self.log.lock(id).map_err(|e| (Exit::Failure, e.to_string()))
    }

    /// The configured model, for a new session.
    pub fn configured_model(&self) -> Result<Model, Failure> {
        Model::from_config(&self.config.llm, self.config.limits.max_output_tokens)
            .map_err(|e| (Exit::Failure, e.to_string()))
    }

    /// The model session `id` uses: its pinned one, or `repin` (recorded, and said) when the
    /// user named another with --model.
    pub fn model(&mut self, id: &str, repin: Option<&str>) -> Result<Model, Failure> {
        let events = self.events_here(id)?;
        let pinned = state::pinned_model(&events).unwrap_or(&self.config.llm.model).to_string();
        let name = repin.unwrap_or(&pinned).to_string();
        let llm = crate::config::LlmConfig { model: name.clone(), ..self.config.llm.clone() };
        let model = Model::from_config(&llm, self.config.limits.max_output_tokens)
            .map_err(|e| (Exit::Failure, e.to_string()))?;
        if name != pinned {
            self.log
                .append(id, Event::ModelPinned { model: name.clone() })
                .map_err(|e| (Exit::Failure, e.to_string()))?;
            crate::guard::sink::err_line!("docs-agent: session {id} is now pinned to the model {name} (was {pinned})");
        }
        Ok(model)
    }

    /// How a write nobody decided is handled outside a terminal prompt: `APPROVE=yes` allows it,
    /// anything else pauses the session.
    pub fn undecided(&self) -> Undecided {
        if self.config.approve_all() {
            Undecided::Decide(crate::workspace::approval::Approver::Always)
        } else {
            Undecided::Pause
        }
    }

    /// Drives session `id`'s open turn to its end, tracing to stderr and telling `terminal`
    /// (the chat's progress display) what happens too.
    pub async fn drive(
        &mut self,
        id: &str,
        model: &Model,
        cancel: &mut Cancel,
        mut terminal: Option<Observer<'_>>,
    ) -> Result<TurnEnd, TurnError> {
        let undecided = self.undecided();
        let Desk { config, harness, log, trace } = self;
        let mut observe = |event: &TurnEvent<'_>| {
            // The terminal first: a progress line it ends is gone before the trace line.
            if let Some(terminal) = terminal.as_mut() {
                terminal(event);
            }
            trace.observe(event);
        };
        let deps = harness.deps(config);
        deps.turn(model, log, id).undecided(undecided).observed(&mut observe).drive(cancel).await
    }

    /// Records a decision on the write session `id` waits for (`call`, when given, must be it).
    pub fn decide(
        &mut self,
        id: &str,
        model: &Model,
        call: Option<&str>,
        verdict: Verdict,
    ) -> Result<(), VerdictError> {
        let deps = self.harness.deps(&self.config);
        deps.turn(model, &mut self.log, id).record_verdict(call, verdict, "user")
    }

    /// Records the expiry of session `id`'s pending write if its TTL has passed (true then).
    pub fn expire_due(&mut self, id: &str, model: &Model) -> Result<bool, Failure> {
        let deps = self.harness.deps(&self.config);
        deps.turn(model, &mut self.log, id).expire_due().map_err(|e| (Exit::Failure, e.to_string()))
    }
}

/// Opens the log at `session.log_url` or `session.log_path` (no index is built).
pub fn open_log(config: &Config) -> Result<Log, Failure> {
    Store::open(&crate::session::store::Location::of(&config.session))
        .and_then(|store| store.log())
        .map_err(|e| (Exit::Failure, e.to_string()))
}

/// The events of session `id`, which must exist.
pub fn events(log: &Log, config: &Config, id: &str) -> Result<Vec<Stored>, Failure> {
    check_id(id).map_err(|e| (Exit::Usage, e.to_string()))?;
    let events = log.events_after(id, 0).map_err(|e| (Exit::Failure, e.to_string()))?;
    if events.is_empty() {
        return Err((
            Exit::Usage,
            format!(
                "there is no session `{id}` in {}; `docs-agent sessions list` shows the sessions",
                crate::session::store::Location::of(&config.session).shown()
            ),
        ));
    }
    Ok(events)
}

/// `sessions list`
pub fn list(log: &Log, config: &Config, out: &mut impl Write) -> Result<Exit, Failure> {
    let ids = log.sessions().map_err(|e| (Exit::Failure, e.to_string()))?;
    if ids.is_empty() {
        crate::guard::sink::err_line!(
            "no sessions in {} yet; start one with `docs-agent chat`",
            crate::session::store::Location::of(&config.session).shown()
        );
    }
    let now = now_ms();
    for id in ids {
        let events = log.events_after(&id, 0).map_err(|e| (Exit::Failure, e.to_string()))?;
        let last = events.last().map_or(0, |s| s.at_ms);
        let first_question = events.iter().find_map(|s| match &s.event {
            Event::UserMessage { text } => Some(guard::clip(&text.replace('\n', " "), 60)),
            _ => None,
        });
        let line = format!(
            "{id}  {:<17}  {:>4} events  {:>8}  {}  {}",
            shown_status(&events, config, now),
            events.len(),
            age(now, last),
            state::pinned_model(&events).unwrap_or("?"),
            first_question.unwrap_or_default()
        );
        let _ = writeln!(out, "{}", guard::scrub(&line));
    }
    Ok(Exit::Ok)
}

/// A session's status as a person should read it now: a write that waited past its TTL is
/// `write_expired` (denied; the turn goes on when resumed, as `serve` goes on by itself).
fn shown_status(events: &[Stored], config: &Config, now: u64) -> &'static str {
    match state::next(events) {
        Next::Decide(pending) if pending.expired(now, config.session.approval_ttl_secs) => "write_expired",
        _ => state::status(events).as_str(),
    }
}

/// The configuration whose docs collection `name` reads now (a git source's served tree), or
/// `None` when there is none to read.
fn docs_now(full: &Config, name: Option<&str>) -> Option<Config> {
    let name = name.filter(|_| !full.collections.is_empty());
    let mut own = full.for_collection(name).ok()?;
    super::sources::serve_from(&mut own).ok()?;
    Some(own)
}

/// `sessions show ID`; with the harness of the docs `now`, each answer whose cited sections
/// changed since (or are gone) says which.
pub fn show(
    log: &Log,
    config: &Config,
    id: &str,
    now: Option<&Harness>,
    out: &mut impl Write,
) -> Result<Exit, Failure> {
    let events = events(log, config, id)?;
    let mut text = format!(
        "session {id}: {}, model {}, {} events\n",
        shown_status(&events, config, now_ms()),
        state::pinned_model(&events).unwrap_or("?"),
        events.len()
    );
    let model = state::pinned_model(&events).unwrap_or(&config.llm.model);
    let usage = crate::session::budget::Usage::of(&config.budget, model, &events);
    text.push_str(&format!("usage: {}\n", usage.describe()));
    for stored in &events {
        text.push_str(&format!("{:>5}  {:<18}  {}\n", stored.seq, stored.event.kind(), describe(&stored.event)));
        if let (Some(harness), Event::Answer { .. }) = (now, &stored.event) {
            let mut citations = crate::session::verify::answer_citations(&events, stored.seq);
            let index = harness.index.current();
            crate::session::stale::mark(&events, stored.seq, &mut citations, &index, Some(&harness.hooks));
            let stale: Vec<String> = citations.iter().filter(|c| c.stale).map(|c| c.source()).collect();
            if !stale.is_empty() {
                text.push_str(&format!("{:>5}  {:<18}  {}\n", "", "stale", stale.join(", ")));
                text.push_str(&format!(
                    "{:>5}  {:<18}  these sources changed since this answer (or are gone): it may be out of date\n",
                    "", ""
                ));
            }
        }
    }
    if let Next::Decide(pending) = state::next(&events) {
        let ttl = config.session.approval_ttl_secs;
        let left = pending.requested_at_ms.saturating_add(ttl.saturating_mul(1000)).saturating_sub(now_ms()) / 1000;
        let call = &pending.call.record.id;
        if pending.expired(now_ms(), ttl) {
            text.push_str(&format!(
                "expired: the write to {} was not decided within session.approval_ttl_secs ({ttl} s), so it is denied; `docs-agent sessions resume {id}` tells the model and goes on\n",
                pending.path
            ));
        } else {
            text.push_str(&format!(
                "waiting: write to {} (expires in {left} s); `docs-agent sessions approve {id} --call {call}` or `docs-agent sessions deny {id} --call {call}`\n",
                pending.path
            ));
        }
    }
    let _ = out.write_all(guard::scrub(&text).as_bytes());
    Ok(Exit::Ok)
}

/// `sessions export ID`: one JSON object per event.
pub fn export(log: &Log, config: &Config, id: &str, out: &mut impl Write) -> Result<Exit, Failure> {
    for stored in events(log, config, id)? {
        let line = json!({"session": id, "seq": stored.seq, "at_ms": stored.at_ms, "event": stored.event});
        let going = crate::guard::sink::reader_gone(writeln!(out, "{line}"))
            .map_err(|e| (Exit::Failure, format!("cannot write stdout: {e}")))?;
        if !going {
            break;
        }
    }
    Ok(Exit::Ok)
}

/// What a person decided with `sessions approve|deny`.
#[derive(Debug, Clone)]
pub enum Decision {
    /// `sessions approve ID [--scope] [--prefix]`
    Approve {
        /// Once, or for the session.
        scope: ScopeArg,
        /// For a session grant: the folder (default: the requested file's).
        prefix: Option<String>,
    },
    /// `sessions deny ID [--reason]`
    Deny {
        /// Why, for the model.
        reason: String,
    },
}

/// `sessions resume|approve|deny ID`: under the session's lock, decide (when asked to: on the
/// write `call`, when given, so a person approves only what they saw), then drive the open turn.
/// A request that expired before the decision is recorded as expired and the turn goes on.
pub fn continue_turn(
    desk: &mut Desk,
    id: &str,
    decision: Option<(Decision, Option<String>)>,
    repin: Option<&str>,
) -> Result<Exit, Failure> {
    desk.events(id)?;
    let _lock = desk.lock(id)?;
    let model = desk.model(id, repin)?;
    let mut expired = None;
    // A write past its TTL is expired, as `serve` does at the TTL: the model is told, and the
    // turn goes on without it.
    if decision.is_none() && desk.expire_due(id, &model)? {
        crate::guard::sink::err_line!("docs-agent: the write waited past session.approval_ttl_secs; it was denied");
    }
    if let Some((decision, call)) = decision {
        let verdict = verdict(desk, id, decision, call.as_deref())?;
        match desk.decide(id, &model, call.as_deref(), verdict) {
            Ok(()) => {}
            Err(VerdictError::Expired(message)) => {
                crate::guard::sink::err_line!("docs-agent: {message}; the turn goes on without the write");
                expired = Some(message);
            }
            Err(VerdictError::NothingWaits(message)) => return Err((Exit::Usage, message)),
            Err(VerdictError::Log(e)) => return Err((Exit::Failure, e.to_string())),
        }
    }
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    let end = runtime.block_on(desk.drive(id, &model, &mut Cancel::never(), None));
    let exit = report(id, end)?;
    // The approved write may have failed (notes/ not writable): the answer came, the note not.
    let exit = match exit {
        Exit::Ok => super::report_failed_writes(&super::failed_writes(&desk.events(id)?)).unwrap_or(Exit::Ok),
        other => other,
    };
    // The person's approval did not take effect: say so in the exit code too.
    match expired {
        Some(message) => Err((Exit::Failure, message)),
        None => Ok(exit),
    }
}

/// The verdict for what a person decided, checked against the pending write.
fn verdict(desk: &Desk, id: &str, decision: Decision, call: Option<&str>) -> Result<Verdict, Failure> {
    let events = desk.events(id)?;
    let pending = match state::next(&events) {
        Next::Decide(pending) if call.is_none_or(|c| c == pending.call.record.id) => pending,
        _ => {
            return Err((
                Exit::Usage,
                format!(
                    "session {id} has no write waiting for approval{} (it is {}); `docs-agent sessions show {id}` shows it",
                    call.map(|c| format!(" under call {c}")).unwrap_or_default(),
                    state::status(&events).as_str()
                ),
            ));
        }
    };
    let prefix = match decision {
        Decision::Deny { reason } => return Ok(Verdict::Deny(format!("write not approved: {reason}"))),
        Decision::Approve { scope: ScopeArg::Once, .. } => return Ok(Verdict::Allow(Scope::Once)),
        Decision::Approve { scope: ScopeArg::Session, prefix } => prefix,
    };
    state::session_scope(pending.path, prefix.as_deref())
        .map(Verdict::Allow)
        .map_err(|e| (Exit::Usage, format!("--prefix: {e}")))
}

/// Prints how a turn ended and picks the exit code.
pub fn report(id: &str, end: Result<TurnEnd, TurnError>) -> Result<Exit, Failure> {
    match end {
        Ok(TurnEnd::Answered { answer, citations, .. }) => {
            crate::guard::sink::out_line!("{}", super::with_sources(&answer, &citations));
            Ok(Exit::Ok)
        }
        Ok(TurnEnd::Stopped { reason, message, .. }) => match reason {
            crate::agent::Stop::Cancelled => {
                crate::guard::sink::err_line!("{message}");
                Ok(Exit::Ok)
            }
            crate::agent::Stop::Budget => Err((Exit::Budget, message)),
            _ => Err((Exit::Limit, message)),
        },
        Ok(TurnEnd::AwaitingApproval { call_id, path, content }) => {
            Err((Exit::Awaiting, awaiting(id, &call_id, &path, &content)))
        }
        Ok(TurnEnd::Idle) => {
            crate::guard::sink::err_line!(
                "session {id} has no unfinished turn; continue it with `docs-agent chat --session {id}`"
            );
            Ok(Exit::Ok)
        }
        Err(TurnError::Model(e)) => Err((Exit::Model, e.to_string())),
        Err(TurnError::Log(e)) => Err((Exit::Failure, e.to_string())),
    }
}

/// The message for a write that waits.
pub fn awaiting(id: &str, call_id: &str, path: &str, content: &str) -> String {
    // A call an operator's rule asks about names its tool first (`read_file docs/x.md`).
    if !path.starts_with("notes/") {
        return format!(
            "session {id} waits for approval to run {} (call {call_id}; an operator's rule asks a person first): \
             allow it with `docs-agent sessions approve {id} --call {call_id}`, \
             or refuse it with `docs-agent sessions deny {id} --call {call_id}`",
            guard::clip(path, 300)
        );
    }
    format!(
        "session {id} waits for approval to write {path} ({} bytes, call {call_id}):\n----\n{}\n----\n\
         allow it with `docs-agent sessions approve {id} --call {call_id}` (add --scope session for later writes in that folder), \
         or refuse it with `docs-agent sessions deny {id} --call {call_id}`",
        content.len(),
        guard::clip(content, 2000)
    )
}

/// One event, readable, on one line.
fn describe(event: &Event) -> String {
    let one = |t: &str| guard::clip(&t.replace('\n', " "), SHOW_CHARS);
    match event {
        Event::SessionStarted { model, workspace, config_fingerprint, .. } => {
            format!("model {model}, workspace {workspace}, config {config_fingerprint}")
        }
        Event::UserMessage { text } | Event::Answer { text, revision: None } => one(text),
        Event::Answer { text, revision: Some(commit) } => {
            format!("{} (docs at commit {})", one(text), commit.get(..12).unwrap_or(commit))
        }
        Event::AssistantMessage { text, tool_calls, .. } => {
            let calls: Vec<String> = tool_calls.iter().map(|c| format!("{} {}", c.name, one(&c.arguments))).collect();
            if calls.is_empty() { one(text) } else { format!("{} {}", one(text), calls.join("; ")).trim().to_string() }
        }
        Event::ToolResult { call_id, text, decision } => format!("{call_id} {decision}: {}", one(text)),
        Event::ApprovalRequested { call_id, path, key, rule: None } => format!("{call_id} write {path} (key {key})"),
        Event::ApprovalRequested { call_id, path, rule: Some(rule), .. } => {
            format!("{call_id} {path}: the rule `{rule}` asks a person first")
        }
        Event::ApprovalGranted { call_id, scope, by } => format!("{call_id} approved {scope} by {by}"),
        Event::ApprovalDenied { call_id, reason } => format!("{call_id}: {}", one(reason)),
        Event::ApprovalExpired { call_id } => call_id.clone(),
        Event::Compaction { replaces_through, .. } => format!("summarises events up to {replaces_through}"),
        Event::Interrupted { partial_text, .. } => format!("partial: {}", one(partial_text)),
        Event::Correction { kind, text } => format!("{}: {}", kind.as_str(), one(text)),
        Event::ModelPinned { model } => model.clone(),
        Event::SessionClosed { by } => format!("closed by {by}"),
        Event::SessionRenamed { title } => format!("renamed “{}”", one(title)),
        Event::Hook { stage, rule, decision, call_id } => {
            let about = call_id.as_deref().map(|id| format!(" ({id})")).unwrap_or_default();
            format!("{} {rule}: {}{about}", stage.as_str(), one(decision))
        }
        Event::Stopped { reason, detail } => format!("{} {}", reason.as_str(), one(detail)).trim().to_string(),
        Event::Feedback { answer_seq, helpful, comment } => {
            let rated = if *helpful { "helpful" } else { "not helpful" };
            format!("answer {answer_seq} {rated} {}", one(comment)).trim().to_string()
        }
    }
}

/// `12s ago`, `5m ago`, `3h ago`, `2d ago`.
fn age(now_ms: u64, at_ms: u64) -> String {
    let secs = now_ms.saturating_sub(at_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}
