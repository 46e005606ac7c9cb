//! `docs-agent chat`: an interactive, multi-turn conversation in a durable session. Every step
//! is in the log before it is acted on, so Ctrl-C, a crash or closing the terminal loses
//! nothing: `chat --session ID` or `sessions resume ID` picks it up.

use std::io::BufRead;

use tokio::sync::mpsc;

use super::live::Live;
use super::sessions::{self, Desk};
use super::{Exit, Failure, StreamWhen};
use crate::guard;
use crate::model::Model;
use crate::runtime::{self, Flavor};
use crate::session;
use crate::session::cancel::Cancel;
use crate::session::event::{Event, Scope};
use crate::session::progress::TurnEvent;
use crate::session::state::{self, Status};
use crate::session::turn::{TurnEnd, TurnError, Verdict};
use crate::workspace::approval::Terminal;

/// Runs the chat until `/quit`, end of input or Ctrl-C at the prompt.
/// Answers are shown as they are written when `when` says so.
pub fn chat(desk: Desk, session: Option<String>, repin: Option<String>, when: StreamWhen) -> Result<Exit, Failure> {
    // A new conversation uses the configured model (`--model` included); an old one keeps its
    // pinned model, which was there when it started.
    if session.is_none() {
        super::require_docs(&desk.harness, &desk.config)?;
        super::ops::pull_if_missing(&desk.config.llm)?;
    }
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    runtime.block_on(run(desk, session, repin, when))
}

async fn run(
    mut desk: Desk,
    session: Option<String>,
    repin: Option<String>,
    when: StreamWhen,
) -> Result<Exit, Failure> {
    // A new session is written to the log with its first message, so leaving at once leaves
    // no empty session behind.
    let (mut id, mut unstarted) = match session {
        Some(id) => {
            desk.events(&id)?;
            (id, false)
        }
        None => (session::new_id().map_err(|e| (Exit::Failure, e.to_string()))?, true),
    };
    let mut _lock = desk.lock(&id)?;
    // The last answer's citations, for /sources.
    let mut sources = Vec::new();
    let mut model = if unstarted { desk.configured_model()? } else { desk.model(&id, repin.as_deref())? };
    let terminal = Terminal::detect() == Terminal::Attached;
    crate::guard::sink::err_line!(
        "session {id} (model {}); /help lists commands, /quit or Ctrl-D leaves, Ctrl-C interrupts an answer",
        model.name()
    );
    let mut lines = read_lines();
    // The exit code of the last turn, as a one-shot question would have exited.
    let mut last: Option<Exit> = None;
    if !unstarted && state::status(&desk.events(&id)?) != Status::Idle {
        crate::guard::sink::err_line!("finishing the turn this session left unfinished");
        last = turn(&mut desk, &id, &model, &mut lines, terminal, when, &mut sources).await?;
    }
    loop {
        crate::guard::sink::err_part!("you> ");
        let line = tokio::select! {
            line = lines.recv() => line,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            crate::guard::sink::err_line!();
            return Ok(last.unwrap_or(Exit::Ok));
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        // A command is the chat's, never a question: nothing of it goes in the log.
        if let Some(command) = Command::parse(text) {
            match command {
                Command::Quit => return Ok(last.unwrap_or(Exit::Ok)),
                Command::Help => crate::guard::sink::err_line!("{HELP}"),
                Command::Sources if sources.is_empty() => {
                    crate::guard::sink::err_line!(
                        "no sources: nothing answered yet in this chat, or the answer cited none"
                    )
                }
                Command::Sources => crate::guard::sink::err_line!("{}", super::sources(&sources)),
                Command::New => {
                    if !unstarted {
                        id = session::new_id().map_err(|e| (Exit::Failure, e.to_string()))?;
                        unstarted = true;
                        sources.clear();
                        _lock = desk.lock(&id)?;
                        // A new session takes the configured model, as `chat` does.
                        model = desk.configured_model()?;
                    }
                    crate::guard::sink::err_line!(
                        "new session {id}; the earlier one stays in `docs-agent sessions list`"
                    );
                }
                Command::Unknown(word) => crate::guard::sink::err_line!(
                    "docs-agent: {} is not a chat command; /help lists them (a question cannot start with /)",
                    guard::clip(&guard::scrub(word), 40)
                ),
            }
            continue;
        }
        // A new message starts a turn only when the last one is over (a write it was granted
        // must not be cut off by the next question).
        if !unstarted && state::status(&desk.events(id.as_str())?) != Status::Idle {
            return Err((
                Exit::Failure,
                format!("session {id} has an unfinished turn; continue it with `docs-agent sessions resume {id}`"),
            ));
        }
        let mut events = vec![Event::UserMessage { text: text.to_string() }];
        if unstarted {
            events.insert(0, session::started(&desk.config, &model.name(), None, None));
            unstarted = false;
        }
        desk.log.append_all(&id, events).map_err(|e| (Exit::Failure, e.to_string()))?;
        last = turn(&mut desk, &id, &model, &mut lines, terminal, when, &mut sources).await?;
    }
}

/// Drives one turn, asking about writes on a terminal. `Some(exit)` when the turn failed the
/// way a one-shot question would exit with that code (the model server is down, a limit was
/// hit, a note could not be written): the chat goes on, and exits with the last turn's code,
/// as `ask` would have.
async fn turn(
    desk: &mut Desk,
    id: &str,
    model: &Model,
    lines: &mut mpsc::UnboundedReceiver<String>,
    terminal: bool,
    when: StreamWhen,
    sources: &mut Vec<crate::session::verify::Citation>,
) -> Result<Option<Exit>, Failure> {
    loop {
        let (canceller, mut cancel) = Cancel::pair();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                canceller.cancel();
            }
        });
        let mut live = Live::new(when, &desk.config.allowed_link_hosts);
        // Without a progress line, one word says the answer is being written (Ctrl-C stops it).
        let mut announce = !live.shows_progress();
        let mut on_event = |event: &TurnEvent<'_>| {
            if matches!(event, TurnEvent::TextDelta(_)) && std::mem::replace(&mut announce, false) {
                crate::guard::sink::err_line!("(answering…)");
            }
            live.hear(event);
        };
        let end = desk.drive(id, model, &mut cancel, Some(&mut on_event)).await;
        watcher.abort();
        let (call_id, path, content) = match end {
            Ok(TurnEnd::AwaitingApproval { call_id, path, content }) => (call_id, path, content),
            Ok(TurnEnd::Answered { answer, citations, .. }) => {
                live.answered(&answer, &citations);
                *sources = citations;
                let events = desk.events(id)?;
                return Ok(super::report_failed_writes(&super::failed_writes(&events)));
            }
            // The log failed: nothing past its last event is known to be durable, so the chat
            // stops rather than take more input (`chat --session ID` picks it up).
            Err(TurnError::Log(e)) => {
                return Err((Exit::Failure, format!("{e}; continue with `docs-agent chat --session {id}`")));
            }
            other => {
                return Ok(match sessions::report(id, other) {
                    Err((code, message)) => {
                        crate::guard::sink::err_line!("docs-agent: {}", guard::scrub(&message));
                        Some(code)
                    }
                    Ok(_) => None,
                });
            }
        };
        if !terminal {
            return Err((Exit::Awaiting, sessions::awaiting(id, &call_id, &path, &content)));
        }
        let folder = path.rsplit_once('/').map_or("notes", |(folder, _)| folder).to_string();
        crate::guard::sink::err_part!(
            "\nThe model wants to write {path} ({} bytes):\n----\n{}\n----\nallow? [y] once / [s] every write under {folder}/ in this session / [N] no: ",
            content.len(),
            guard::scrub(&content)
        );
        let answer = tokio::select! {
            line = lines.recv() => line.unwrap_or_default(),
            _ = tokio::signal::ctrl_c() => String::new(),
        };
        let verdict = match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Verdict::Allow(Scope::Once),
            "s" | "session" => Verdict::Allow(Scope::Session { prefix: format!("{folder}/") }),
            _ => Verdict::Deny("write not approved: the user declined".into()),
        };
        if let Err(e) = desk.decide(id, model, Some(&call_id), verdict) {
            crate::guard::sink::err_line!("docs-agent: {}", guard::scrub(&e.to_string()));
        }
    }
}

/// What `/help` says.
const HELP: &str = "commands:\n  /sources  the sources of the last answer\n  /new      start a new session (this one \
                    is kept)\n  /help     this list\n  /quit     leave (also /exit, Ctrl-D)\nanything else is a question";

/// A line of the chat that is a command, not a question.
#[derive(Debug, PartialEq, Eq)]
enum Command<'a> {
    /// `/quit`, `/exit`: leave.
    Quit,
    /// `/help`: the commands.
    Help,
    /// `/sources`: the last answer's citations.
    Sources,
    /// `/new`: a new session.
    New,
    /// A word after `/` that is none of them.
    Unknown(&'a str),
}

impl<'a> Command<'a> {
    /// The command `line` (trimmed) is, when it starts with `/`.
    fn parse(line: &'a str) -> Option<Command<'a>> {
        let word = line.strip_prefix('/')?.split_whitespace().next().unwrap_or_default();
        Some(match word.to_ascii_lowercase().as_str() {
            "quit" | "exit" | "q" => Command::Quit,
            "help" | "?" | "h" => Command::Help,
            "sources" | "src" => Command::Sources,
            "new" => Command::New,
            _ => Command::Unknown(line),
        })
    }
}

/// Lines of stdin, read on their own thread so a prompt can wait for a line or Ctrl-C.
fn read_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::Command;

    /// A line that starts with `/` is a command (known or not), never a question.
    #[test]
    fn slash_lines_are_commands() {
        assert_eq!(Command::parse("/quit"), Some(Command::Quit));
        assert_eq!(Command::parse("/EXIT"), Some(Command::Quit));
        assert_eq!(Command::parse("/help"), Some(Command::Help));
        assert_eq!(Command::parse("/sources"), Some(Command::Sources));
        assert_eq!(Command::parse("/new please"), Some(Command::New));
        assert_eq!(Command::parse("/refund window"), Some(Command::Unknown("/refund window")));
        assert_eq!(Command::parse("/"), Some(Command::Unknown("/")));
        assert_eq!(Command::parse("how long is the refund window"), None);
    }
}
