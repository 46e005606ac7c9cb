//! The loop: send the conversation to the model, run the tools it asks for through the
//! [`Toolbox`], hand back the results, and stop when it answers or a limit is hit. The answer
//! leaves through `guard::outbound`, like everything else.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::approval::Approver;
use crate::config::Config;
use crate::guard;
use crate::index::Index;
use crate::model::{Message, Model, ModelError};
use crate::prompt;
use crate::skills::Skills;
use crate::tools::{self, Toolbox};
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
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model answered.
    Answered,
    /// The model used every step without answering.
    StepLimit,
    /// The run took longer than `limits.max_wall_secs`.
    TimeLimit,
}

impl Stop {
    /// The word used in traces and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::Answered => "answered",
            Stop::StepLimit => "step_limit",
            Stop::TimeLimit => "time_limit",
        }
    }
}

/// The result of one question.
#[derive(Debug, Clone)]
pub struct Run {
    /// The final answer (redacted, links neutralised), or the reason there is none.
    pub answer: String,
    /// Why the run stopped.
    pub stop: Stop,
    /// Model calls made.
    pub steps: u32,
}

/// Why a question could not be answered at all.
#[derive(Debug)]
pub enum AskError {
    /// The model or the async runtime could not be set up.
    Setup(String),
    /// The model server failed.
    Model(ModelError),
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskError::Setup(message) => f.write_str(message),
            AskError::Model(error) => write!(f, "{error}"),
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
        Ok(Harness { config, workspace, index, skills, system_prompt })
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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| AskError::Setup(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(self.ask(&model, approver, question, trace)).map_err(AskError::Model)
    }

    /// Answers one question with `model`, writing a trace line per tool call.
    pub async fn ask<W: Write>(
        &self,
        model: &Model,
        approver: Approver,
        question: &str,
        trace: &mut Trace<W>,
    ) -> Result<Run, ModelError> {
        let limits = &self.config.limits;
        let deadline = Instant::now() + Duration::from_secs(limits.max_wall_secs);
        let toolbox = Toolbox {
            workspace: &self.workspace,
            index: &self.index,
            skills: &self.skills,
            approver,
            top_k: self.config.index.top_k,
            max_result_bytes: limits.max_tool_result_bytes,
        };
        let specs = tools::specs();
        // Files whose text a tool showed the model in this run: what the answer may cite.
        let mut retrieved = std::collections::BTreeSet::new();
        let mut messages = vec![Message::System(self.system_prompt.clone()), Message::User(question.to_string())];
        for step in 1..=limits.max_steps {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let reply = match tokio::time::timeout(remaining, model.complete(&messages, &specs)).await {
                Ok(reply) => reply?,
                Err(_) => return Ok(self.stopped(Stop::TimeLimit, step - 1, trace)),
            };
            if reply.tool_calls.is_empty() {
                let answer = guard::outbound_answer(&reply.content, &self.config.allowed_link_hosts, &retrieved);
                return Ok(Run { answer, stop: Stop::Answered, steps: step });
            }
            // Calls past the limit are not run; the first of them carries the refusal and the
            // rest are dropped from the conversation, so a flood cannot grow it.
            let allowed = limits.max_tool_calls_per_step as usize;
            let dropped = reply.tool_calls.len().saturating_sub(allowed + 1);
            let mut calls = reply.tool_calls;
            calls.truncate(allowed + 1);
            messages.push(Message::Assistant { content: reply.content, tool_calls: calls.clone() });
            for (i, call) in calls.iter().enumerate() {
                let (outcome, ms) = if i < allowed {
                    toolbox.run(&call.name, &call.arguments)
                } else {
                    let text = format!(
                        "ERROR: too many tool calls in one step (limit {allowed}); this call and {dropped} more were not run"
                    );
                    (tools::Outcome { text, decision: tools::Decision::Error }, 0)
                };
                if outcome.decision == tools::Decision::Allowed {
                    retrieved.extend(guard::citations::sources_in(&outcome.text));
                }
                trace.tool(step, &call.name, &call.arguments, &outcome.text, ms, outcome.decision.as_str());
                messages.push(Message::Tool { call_id: call.id.clone(), content: outcome.text });
            }
            if Instant::now() >= deadline {
                return Ok(self.stopped(Stop::TimeLimit, step, trace));
            }
        }
        Ok(self.stopped(Stop::StepLimit, limits.max_steps, trace))
    }

    fn stopped<W: Write>(&self, stop: Stop, steps: u32, trace: &mut Trace<W>) -> Run {
        let limits = &self.config.limits;
        let answer = match stop {
            Stop::StepLimit => format!(
                "stopped: the model used all {} steps without answering (limits.max_steps); it may be looping",
                limits.max_steps
            ),
            Stop::TimeLimit => {
                format!("stopped: the run took longer than {} s (limits.max_wall_secs)", limits.max_wall_secs)
            }
            Stop::Answered => String::new(),
        };
        trace.event("stop", &format!("{}: {answer}", stop.as_str()));
        Run { answer, stop, steps }
    }
}
