//! The harness: everything built once per process (workspace handles, index, skills, prompt),
//! what a turn needs from it (`deps`), and the one-shot question, which runs as an ephemeral
//! session through `session::turn`. The configuration is not kept here: front ends hold it and
//! pass it in.

use crate::config::{Config, IndexStore};
use crate::index::live::{Live, Refreshed, Source};
use crate::index::store::Held;
use crate::index::{Index, IndexError};
use crate::model::{Model, ModelError, SetupError};
use crate::prompt;
use crate::runtime::{self, Flavor, RuntimeError};
use crate::session::{
    self,
    cancel::Cancel,
    deps::Deps,
    event::Event,
    progress::Observer,
    store::{Log, LogError, Stored},
    turn::{TurnEnd, TurnError, Undecided},
};
use crate::skills::Skills;
use crate::tools::Toolbox;
use crate::workspace::approval::Approver;
use crate::workspace::policy::{Area, Denied, check_read};
use crate::workspace::{Workspace, WorkspaceError};

/// Everything built once per process: workspace handles, index, skills, prompt.
pub struct Harness {
    /// The workspace's area handles.
    pub workspace: Workspace,
    /// The docs index: the generation searched now (`serve` replaces it when the docs change).
    pub index: Live,
    /// Where later generations come from (`refresh_index`).
    source: std::sync::Mutex<Source>,
    /// Valid skills and the problems of invalid ones.
    pub skills: Skills,
    /// The stable system prompt.
    pub system_prompt: String,
    /// In-memory logs for one-shot questions, reused (a server answers thousands a second).
    ephemeral: std::sync::Mutex<Vec<Log>>,
    /// The policy hooks (`[hooks]`), compiled.
    pub hooks: crate::hooks::Hooks,
    /// The published docs site citations link to (`[site]`), when one is configured.
    pub site: Option<crate::site::Site>,
}

/// One earlier exchange of a conversation a client keeps itself: what the user said, and what
/// the assistant answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The user's message.
    pub user: String,
    /// The assistant's answer (empty when the client sent none).
    pub assistant: String,
}

impl Exchange {
    /// The events of a finished turn: the message, the answer, the stop.
    fn events(&self) -> Vec<Event> {
        vec![
            Event::UserMessage { text: self.user.clone() },
            Event::AssistantMessage {
                text: self.assistant.clone(),
                tool_calls: Vec::new(),
                usage: None,
                estimated: None,
                origin: session::event::Origin::Model,
            },
            Event::Answer { text: self.assistant.clone(), revision: None },
            Event::Stopped { reason: Stop::Answered, detail: String::new() },
        ]
    }
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
    /// The answer's citations, each marked verified when the run retrieved its section.
    pub citations: Vec<session::verify::Citation>,
}

/// Why a question could not be answered at all.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The model's client could not be made.
    #[error(transparent)]
    Setup(SetupError),
    /// The async runtime could not start.
    #[error(transparent)]
    Runtime(RuntimeError),
    /// The model server failed.
    #[error(transparent)]
    Model(ModelError),
    /// The session log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The turn ended neither with an answer nor with a stop (a bug: a one-shot question
    /// decides its writes at once, so it never waits).
    #[error("the one-shot question ended without an answer or a stop")]
    Unfinished,
}

/// Why the harness could not be built.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The workspace folder cannot be opened.
    #[error(transparent)]
    Workspace(WorkspaceError),
    /// The docs could not be indexed.
    #[error(transparent)]
    Index(IndexError),
    /// A policy hook does not compile (a configuration read without its checks).
    #[error(transparent)]
    Hooks(crate::hooks::HooksError),
    /// AGENTS.md cannot go in the prompt, and `prompt.agents_md_unusable = "error"`.
    #[error("{0}")]
    AgentsMd(String),
    /// `[site]` does not read (a configuration read without its checks).
    #[error(transparent)]
    Site(crate::config::ConfigError),
}

/// The workspace's skills and the system prompt made from them and `AGENTS.md`.
fn system_prompt(workspace: &Workspace, config: &Config) -> Result<(Skills, String), OpenError> {
    let skills = if workspace.docs_alone() { Skills::default() } else { Skills::load(workspace.root()) };
    let agents_md = project_rules(workspace, &config.prompt)?;
    let catalog = skills.catalog_within(config.prompt.skills_catalog_tokens);
    if catalog.left_out > 0 {
        tracing::warn!(
            "{} of {} skills are left out of the prompt: the catalog is capped at {} tokens \
             (prompt.skills_catalog_tokens); raise it, or merge skills",
            catalog.left_out,
            skills.skills.len(),
            config.prompt.skills_catalog_tokens
        );
    }
    let text = prompt::system_prompt(agents_md.as_deref(), &catalog.text);
    Ok((skills, text))
}

/// AGENTS.md as it goes in the prompt: none when there is none. One that cannot be used (over
/// `prompt.agents_md_max_bytes`, binary, not UTF-8) is never left out silently: a warning on
/// stderr says so, or, with `prompt.agents_md_unusable = "error"`, the command stops.
fn project_rules(workspace: &Workspace, prompt: &crate::config::PromptConfig) -> Result<Option<String>, OpenError> {
    let Some(path) = check_read("AGENTS.md").ok().filter(|p| p.area() == Area::AgentsMd) else {
        return Ok(None);
    };
    match workspace.read_text(&path, prompt.agents_md_max_bytes) {
        Ok(text) => Ok(Some(text)),
        Err(crate::workspace::FileError::Failed(m)) if m.ends_with("no such file") => Ok(None),
        Err(crate::workspace::FileError::Failed(m) | crate::workspace::FileError::Denied(Denied(m))) => {
            let problem = unusable_agents_md(&m, prompt.agents_md_max_bytes);
            match prompt.agents_md_unusable {
                crate::config::Unusable::Error => {
                    Err(OpenError::AgentsMd(format!("{problem} (prompt.agents_md_unusable = \"error\")")))
                }
                crate::config::Unusable::Warn => {
                    tracing::warn!("{problem}; answering without the project's rules");
                    Ok(None)
                }
            }
        }
    }
}

/// What is wrong with an AGENTS.md that cannot be read as `error` says, and what to do.
pub fn unusable_agents_md(error: &str, limit: u64) -> String {
    format!(
        "{error}: AGENTS.md is not in the prompt; keep it under prompt.agents_md_max_bytes ({limit} bytes), \
         as UTF-8 text, or raise that limit"
    )
}

/// The index of `docs` where `config` keeps it: the file, brought up to date (a progress
/// line on a terminal while many documents are read), or memory. A file that cannot be
/// used (a read-only folder, say) gives an index built in memory and a warning naming it.
/// With it, where its later generations come from.
/// It is searched by `readers` threads at once.
fn open_index(
    docs: &cap_std::fs::Dir,
    config: &Config,
    readers: usize,
    embed: Embed,
    hidden: &crate::workspace::hidden::Hidden,
    outbound: &crate::guard::outbound::Outbound,
) -> Result<(Index, Source), IndexError> {
    let (mut index, source) = open_keywords(docs, config, readers)?;
    // What the rules hide is never sent to the embedding server either.
    index.hidden = hidden.clone();
    if let Some(embedder) = embedder(config, outbound).filter(|_| embed == Embed::Now) {
        let cache = match &source {
            Source::File { path, .. } => Some(crate::index::vectors::cache_path(path)),
            Source::Memory { .. } => None,
        };
        let mut line = crate::index::progress::Line::on_stderr();
        let mut show = |done, total| line.show_as("embedding sections", "sections", done, total);
        let filled = index.embed(embedder, cache.as_deref(), None, &mut show)?;
        index.warnings.extend(filled.cache_warning.clone());
        index.warnings.extend(filled.failure_warning(index.stats.sections));
        index.semantic = Some(filled.semantic);
    }
    Ok((index, source))
}

/// When the first generation's rows are embedded, with an embedding model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Embed {
    /// Before the harness is returned (a progress line on a terminal while it takes long).
    Now,
    /// By the index updater of `serve`, after it starts: it answers by keywords meanwhile;
    /// or never, for a command that does not search (`check`).
    Later,
}

/// What the operator's reading rules (`hooks`) keep from being found or read in the
/// workspace's `docs/`: nothing when there are no rules or no docs.
pub fn hidden_by(workspace: &Workspace, hooks: &crate::hooks::Hooks) -> crate::workspace::hidden::Hidden {
    match workspace.docs() {
        Some(docs) if hooks.has_rules() => {
            let rules = hooks.clone();
            crate::workspace::hidden::Hidden::new(&docs, move |path| rules.hides(path))
        }
        _ => crate::workspace::hidden::Hidden::default(),
    }
}

/// The embedding model `[retrieval.embeddings]` names, if it names one; what it sends passes
/// `outbound` (the operator's patterns: `hooks::Hooks::outbound`).
pub fn embedder(
    config: &Config,
    outbound: &crate::guard::outbound::Outbound,
) -> Option<std::sync::Arc<crate::index::embed::Embedder>> {
    let settings = &config.retrieval.embeddings;
    settings.enabled().then(|| {
        std::sync::Arc::new(crate::index::embed::Embedder::new(
            settings,
            config.embeddings_base_url(),
            config.embeddings_api_key(),
            config.llm.retries,
            outbound.clone(),
        ))
    })
}

/// The reranker `[retrieval.reranker]` names, if it names one; what it sends passes `outbound`.
pub fn reranker(
    config: &Config,
    outbound: &crate::guard::outbound::Outbound,
) -> Option<std::sync::Arc<crate::index::rerank::Reranker>> {
    let settings = &config.retrieval.reranker;
    settings.enabled().then(|| std::sync::Arc::new(crate::index::rerank::Reranker::new(settings, outbound.clone())))
}

/// [`open_index`] before its rows are embedded.
fn open_keywords(docs: &cap_std::fs::Dir, config: &Config, readers: usize) -> Result<(Index, Source), IndexError> {
    let max = crate::index::Limits::of(&config.index);
    let IndexStore::File(file) = config.index_store() else {
        // Listed first: a change made while the index is built shows in the next refresh.
        let source = Source::memory(docs);
        return Ok((Index::build(docs, max)?.with_readers(readers)?, source));
    };
    let workspace = crate::session::workspace_of(config);
    let mut progress = crate::index::progress::Line::on_stderr();
    match Index::open(docs, &workspace, &file, max, readers, &mut |done, total| progress.show(done, total)) {
        Ok((index, _)) => Ok((index, Source::File { path: file, workspace })),
        Err(e) => {
            let source = Source::memory(docs);
            let mut index = Index::build(docs, max)?.with_readers(readers)?;
            index.warnings.push(format!("{e}; this process searches an index built in memory instead"));
            Ok((index, source))
        }
    }
}

impl Harness {
    /// Opens the workspace, builds the index, loads skills and the prompt.
    pub fn open(config: &Config) -> Result<Harness, OpenError> {
        Harness::open_with(config, 1, Embed::Now)
    }

    /// [`Harness::open`] for `readers` threads that search at once (a server's workers): each
    /// generation of the index gets as many read-only databases.
    /// With an embedding model, the index's rows are embedded by the first refresh
    /// ([`Harness::refresh_index`], which `serve` runs at start and on every change), so a
    /// long first embedding does not hold up the start: search uses keywords meanwhile. A
    /// server that neither watches nor rescans `docs/` embeds them before it starts.
    pub fn open_for(config: &Config, readers: usize) -> Result<Harness, OpenError> {
        let refreshed = config.index.watch || config.index.rescan_secs > 0;
        Harness::open_with(config, readers, if refreshed { Embed::Later } else { Embed::Now })
    }

    /// [`Harness::open`] for what never searches (`check`): the index's rows are not embedded.
    pub fn open_unembedded(config: &Config) -> Result<Harness, OpenError> {
        Harness::open_with(config, 1, Embed::Later)
    }

    fn open_with(config: &Config, readers: usize, embed: Embed) -> Result<Harness, OpenError> {
        let hooks = crate::hooks::Hooks::compile(&config.hooks).map_err(OpenError::Hooks)?;
        let workspace = Workspace::of(config).map_err(OpenError::Workspace)?;
        let hidden = hidden_by(&workspace, &hooks);
        let outbound = hooks.outbound();
        // The prompt (skills, AGENTS.md, both scrubbed: the redactor's first use, which builds
        // its automaton and compiles rules) is made on a second thread while this one brings
        // the index up to date; neither reads what the other makes.
        let (opened, prompted) = std::thread::scope(|scope| {
            let prompted = scope.spawn(|| system_prompt(&workspace, config));
            let opened = match workspace.docs() {
                Some(docs) => open_index(&docs, config, readers, embed, &hidden, &outbound).map_err(OpenError::Index),
                None => Index::empty()
                    .map(|index| (index, Source::Memory { built_from: Vec::new() }))
                    .map_err(OpenError::Index),
            };
            (opened, prompted.join())
        });
        let (skills, system_prompt) = prompted.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let (mut index, source) = opened?;
        index.revision = std::sync::Mutex::new(config.docs_revision.clone());
        let reranker = reranker(config, &outbound);
        index.reranker = reranker.clone();
        let workspace = workspace.hiding(hidden.clone());
        Ok(Harness {
            workspace,
            index: Live::hiding(index, readers, hidden).embedded(embedder(config, &outbound)).reranked(reranker),
            source: source.into(),
            skills,
            system_prompt,
            ephemeral: Default::default(),
            hooks,
            site: crate::site::Site::of(config).map_err(OpenError::Site)?,
        })
    }

    /// The public URL of section `anchor` of the document at `path` on the docs site
    /// (`[site]`); `None` without one.
    pub fn site_url(&self, path: &str, anchor: &str) -> Option<String> {
        self.site.as_ref().and_then(|site| site.url(&self.workspace, path, anchor))
    }

    /// Reads the docs from `folder` from now on (a git source's new tree, whole, of commit
    /// `revision`), and brings the index up to date with it (each new generation stamped with
    /// the commit): the workspace switches first, so a section read meanwhile
    /// is the new tree's (one the new commit deleted is missing until the index catches up); then only the documents that
    /// changed are read (an unchanged one is the same file, linked).
    pub fn switch_docs(
        &self,
        folder: &std::path::Path,
        revision: &str,
        limits: crate::index::Limits,
    ) -> Result<Refreshed, String> {
        self.workspace.switch_docs_to(folder).map_err(|e| e.to_string())?;
        self.index.set_revision(Some(revision.to_string()));
        let refreshed = self.refresh_index(limits, &|_| false).map_err(|e| e.to_string())?;
        if !refreshed.replaced {
            self.index.restamp(Some(revision.to_string()));
        }
        Ok(refreshed)
    }

    /// Brings the index up to date with `docs/` as it is now, leaving `held` documents (still
    /// being written) as they are: a new generation replaces the one searched only when
    /// something changed. Nothing to do without `docs/`.
    pub fn refresh_index(&self, limits: crate::index::Limits, held: Held<'_>) -> Result<Refreshed, IndexError> {
        let Some(docs) = self.workspace.docs() else {
            return Ok(Refreshed { version: self.index.current().version, ..Refreshed::default() });
        };
        let mut source = self.source.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        source.refresh(&self.index, &docs, limits, held)
    }

    /// What a turn needs from the harness and `config`: the one place it is put together.
    pub fn deps<'a>(&'a self, config: &'a Config) -> Deps<'a> {
        Deps {
            toolbox: Toolbox {
                workspace: &self.workspace,
                index: self.index.current(),
                skills: &self.skills,
                top_k: config.index.top_k,
                // A post-tool cap cuts whole fenced sections here, before the hook's own cut.
                max_result_bytes: self.hooks.result_cap(config.limits.max_tool_result_bytes),
            },
            system_prompt: &self.system_prompt,
            limits: &config.limits,
            session: &config.session,
            link_hosts: &config.allowed_link_hosts,
            retrieval: &config.retrieval,
            budget: &config.budget,
            hooks: &self.hooks,
            site: self.site.as_ref(),
        }
    }

    /// Answers one question with the configured model on a single-threaded runtime: what the
    /// CLI and the eval runner both do.
    pub fn ask_blocking(
        &self,
        config: &Config,
        approver: Approver,
        question: &str,
        observer: Option<Observer<'_>>,
    ) -> Result<Run, AskError> {
        let model = Model::from_config(&config.llm, config.limits.max_output_tokens).map_err(AskError::Setup)?;
        let runtime = runtime::build(Flavor::OneThread).map_err(AskError::Runtime)?;
        runtime.block_on(self.ask(config, &model, approver, question, observer))
    }

    /// Answers one question with `model` in an ephemeral session (a log in memory), telling
    /// `observer` what happens. A write is decided at once by `approver`.
    pub async fn ask(
        &self,
        config: &Config,
        model: &Model,
        approver: Approver,
        question: &str,
        observer: Option<Observer<'_>>,
    ) -> Result<Run, AskError> {
        self.ask_after(config, model, approver, &[], question, observer).await
    }

    /// [`Harness::ask`], after `earlier` exchanges of a conversation the client kept (the
    /// OpenAI-compatible API): they are the ephemeral session's first turns, so the model sees
    /// them and retrieve-first reads a short follow-up with the question before it.
    pub async fn ask_after(
        &self,
        config: &Config,
        model: &Model,
        approver: Approver,
        earlier: &[Exchange],
        question: &str,
        observer: Option<Observer<'_>>,
    ) -> Result<Run, AskError> {
        let pooled = self.ephemeral.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut log = match pooled {
            Some(log) => log,
            None => Log::in_memory()?,
        };
        let session = session::start(&mut log, config, &model.name())?;
        for exchange in earlier {
            log.append_all(&session, exchange.events())?;
        }
        log.append(&session, Event::UserMessage { text: question.to_string() })?;
        let deps = self.deps(config);
        let mut turn = deps.turn(model, &mut log, &session).undecided(Undecided::Decide(approver));
        if let Some(observer) = observer {
            turn = turn.observed(observer);
        }
        let end = turn.drive(&mut Cancel::never()).await;
        let events = log.events_after(&session, 0)?;
        // The session was ephemeral: forget it, and keep the log for the next question.
        if log.forget(&session).is_ok() {
            self.ephemeral.lock().unwrap_or_else(|p| p.into_inner()).push(log);
        }
        match end {
            Ok(TurnEnd::Answered { answer, steps, citations }) => {
                Ok(Run { answer, stop: Stop::Answered, steps, session, events, citations })
            }
            Ok(TurnEnd::Stopped { reason, message, steps }) => {
                Ok(Run { answer: message, stop: reason, steps, session, events, citations: Vec::new() })
            }
            Ok(TurnEnd::AwaitingApproval { .. } | TurnEnd::Idle) => Err(AskError::Unfinished),
            Err(TurnError::Model(e)) => Err(AskError::Model(e)),
            Err(TurnError::Log(e)) => Err(AskError::Log(e)),
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
