//! The harness: everything built once per process (workspace handles, index, skills, prompt),
//! and the one-shot question, which runs as an ephemeral session through `session::turn`.

use std::io::Write;

use crate::approval::Approver;
use crate::config::Config;
use crate::index::Index;
use crate::model::{Model, ModelError};
use crate::prompt;
use crate::session::{
    self,
    cancel::Cancel,
    event::Event,
    store::{Log, LogError, Stored},
    turn::{Turn, TurnEnd, TurnError, Undecided},
};
use crate::skills::Skills;
use crate::trace::Trace;
use crate::workspace::policy::{Area, check_read};
use crate::workspace::{Workspace, WorkspaceError};

/// Largest AGENTS.md read into the prompt.
const MAX_AGENTS_MD_BYTES: u64 = 64 * 1024;

/// Everything built once per process: config, workspace handles, index, skills, prompt.
pub struct Harness {
    /// The merged configuration.
    pub config: Config,
    /// The workspace's area handles.
    pub workspace: Workspace,
    /// The docs index.
    pub index: Index,
    /// Valid skills and the problems of invalid ones.
    pub skills: Skills,
    /// The stable system prompt.
    pub system_prompt: String,
    /// In-memory logs for one-shot questions, reused (a server answers thousands a second).
    ephemeral: std::sync::Mutex<Vec<Log>>,
}

/// Why a run stopped: the same closed set a session records.
pub use crate::session::event::StopReason as Stop;

/// The result of one question.
#[derive(Debug, Clone)]
pub struct Run {
    /// The final answer (redacted, links neutralised), or the reason there is none.
    pub answer: String,
    /// Why the run stopped.
    pub stop: Stop,
    /// Model calls made.
    pub steps: u32,
    /// The run's ephemeral session (held in memory, never stored).
    pub session: String,
    /// Every event of that session, as stored: scrubbed.
    pub events: Vec<Stored>,
}

/// Why a question could not be answered at all.
#[derive(Debug)]
pub enum AskError {
    /// The model or the async runtime could not be set up.
    Setup(String),
    /// The model server failed.
    Model(ModelError),
    /// The session log failed.
    Log(String),
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskError::Setup(message) => f.write_str(message),
            AskError::Model(error) => write!(f, "{error}"),
            AskError::Log(message) => f.write_str(message),
        }
    }
}

impl Harness {
    /// Opens the workspace, builds the index, loads skills and the prompt.
    pub fn open(config: Config) -> Result<Harness, WorkspaceError> {
        let workspace = Workspace::open(&config.workspace)?;
        let index = match workspace.docs() {
            Some(docs) => Index::build(docs, config.index.max_file_bytes),
            None => Index::empty(),
        }
        .map_err(|e| WorkspaceError(e.to_string()))?;
        let skills = Skills::load(workspace.root());
        let agents_md = check_read("AGENTS.md")
            .ok()
            .filter(|p| p.area() == Area::AgentsMd)
            .and_then(|p| workspace.read_text(&p, MAX_AGENTS_MD_BYTES).ok());
        let system_prompt = prompt::system_prompt(agents_md.as_deref(), &skills.catalog());
        Ok(Harness { config, workspace, index, skills, system_prompt, ephemeral: Default::default() })
    }

    /// Answers one question with the configured model on a single-threaded runtime: what the
    /// CLI and the eval runner both do.
    pub fn ask_blocking<W: Write>(
        &self,
        approver: Approver,
        question: &str,
        trace: &mut Trace<W>,
    ) -> Result<Run, AskError> {
        let model =
            Model::from_config(&self.config.llm, self.config.limits.max_output_tokens).map_err(AskError::Setup)?;
        let runtime =
            crate::runtime::build(crate::runtime::Flavor::OneThread).map_err(|e| AskError::Setup(e.to_string()))?;
        runtime.block_on(self.ask(&model, approver, question, trace))
    }

    /// Answers one question with `model` in an ephemeral session (a log in memory), writing a
    /// trace line per tool call. A write is decided at once by `approver`.
    pub async fn ask<W: Write>(
        &self,
        model: &Model,
        approver: Approver,
        question: &str,
        trace: &mut Trace<W>,
    ) -> Result<Run, AskError> {
        let log_error = |e: LogError| AskError::Log(e.to_string());
        let pooled = self.ephemeral.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut log = match pooled {
            Some(log) => log,
            None => Log::in_memory().map_err(log_error)?,
        };
        let session = session::start(&mut log, &self.config, &model.name()).map_err(log_error)?;
        log.append(&session, Event::UserMessage { text: question.to_string() }).map_err(log_error)?;
        let mut turn = Turn {
            harness: self,
            model,
            log: &mut log,
            session: &session,
            trace,
            undecided: Undecided::Decide(approver),
            on_text: None,
        };
        let end = turn.drive(&mut Cancel::never()).await;
        let events = log.events_after(&session, 0).map_err(log_error)?;
        // The session was ephemeral: forget it, and keep the log for the next question.
        if log.forget(&session).is_ok() {
            self.ephemeral.lock().unwrap_or_else(|p| p.into_inner()).push(log);
        }
        match end {
            Ok(TurnEnd::Answered { answer, steps }) => Ok(Run { answer, stop: Stop::Answered, steps, session, events }),
            Ok(TurnEnd::Stopped { reason, message, steps }) => {
                Ok(Run { answer: message, stop: reason, steps, session, events })
            }
            Ok(TurnEnd::AwaitingApproval { .. } | TurnEnd::Idle) => {
                Err(AskError::Setup("the one-shot question ended without an answer or a stop".into()))
            }
            Err(TurnError::Model(e)) => Err(AskError::Model(e)),
            Err(TurnError::Log(e)) => Err(log_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    /// A server shares one harness between its workers.
    #[test]
    fn the_harness_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Harness>();
    }
}
