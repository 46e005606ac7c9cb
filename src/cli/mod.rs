//! The command-line front end: the words (`args`), what each command does, and how it ends.
//! Only `cli` knows about exit codes and printing; the core returns values and typed errors.
//!
//! - `args`: clap definitions, `--help`, the [`Exit`] codes;
//! - `ask`: a one-shot question, `search`, `check`;
//! - `chat`: the terminal conversation; `sessions`: `docs-agent sessions ...` and what chat
//!   shares with it (the [`sessions::Desk`]);
//! - `live`: what a terminal shows while a turn runs (the answer as it is written, a progress
//!   line);
//! - `eval`: the eval and red-team pack; `serve`: the HTTP service's start and shutdown;
//! - `ops`: `redact`, `hash-token`, `health`.

pub mod args;
pub mod ask;
pub mod chat;
pub mod eval;
pub mod index;
pub mod live;
pub mod ops;
pub mod serve;
pub mod sessions;

use std::collections::HashMap;
use std::io::Write;

pub use args::{Cli, Command, Exit, Failure, Global, IndexAction, ScopeArg, SessionsAction, StreamWhen};

use crate::agent::Harness;
use crate::config::{Config, ENV_KEYS, Sources};
use crate::session::store::KillAfter;
use crate::trace::Trace;

/// The crash-test hook: `DOCS_AGENT_TEST_KILL_AFTER=POINT[#N]` makes the process SIGKILL itself
/// right after that point (see `session::store::KillAfter`).
const KILL_AFTER_VAR: &str = "DOCS_AGENT_TEST_KILL_AFTER";

/// Runs what was parsed: the exit code, or the failure `main` prints once.
pub fn run(cli: Cli) -> Result<Exit, Failure> {
    let Cli { global, command, question } = cli;
    match command {
        Some(Command::Redact) => ops::redact_stdin(),
        Some(Command::Index { action }) => index::run(load_config(&global)?, action),
        Some(Command::Pull) => ops::pull(load_config(&global)?),
        Some(Command::Eval { filter, junit, json, cases, jobs, retrieval }) => {
            eval::eval(&global, filter.as_deref(), junit.as_deref(), json.as_deref(), &cases, jobs, retrieval)
        }
        Some(Command::Ask { question }) => ask::ask(load_config(&global)?, &question.join(" "), global.stream),
        Some(Command::Search { query, limit }) => ask::search(load_config(&global)?, &query.join(" "), limit),
        Some(Command::Check) => ask::check(load_config(&global)?),
        Some(Command::Chat { session }) => chat::chat(desk(&global)?, session, global.model.clone(), global.stream),
        Some(Command::Sessions { action }) => sessions::run(&global, action),
        Some(Command::Serve { listen }) => serve::serve(load_config(&global)?, listen),
        Some(Command::HashToken) => ops::hash_token(),
        Some(Command::Health { url }) => ops::health(&url),
        None if question.is_empty() => Err((
            Exit::Usage,
            "no question given; try `docs-agent \"how long is the refund window\"` or `docs-agent --help`".into(),
        )),
        None => ask::ask(load_config(&global)?, &question.join(" "), global.stream),
    }
}

/// The configuration, read once: flags > environment > file > defaults. The only place the
/// process environment is read.
pub fn load_config(global: &Global) -> Result<Config, Failure> {
    let wanted = |name: &str| ENV_KEYS.iter().any(|(var, _)| *var == name) || name == "DOCS_AGENT_CONFIG";
    let env: HashMap<String, String> = std::env::vars().filter(|(k, _)| wanted(k)).collect();
    let sources = Sources { file: global.config.clone(), env, flags: global.overrides() };
    Config::load(&sources).map_err(|e| (Exit::Usage, e.to_string()))
}

/// The session desk (harness + log on disk), with the crash-test hook armed when asked.
fn desk(global: &Global) -> Result<sessions::Desk, Failure> {
    let kill_after = match std::env::var(KILL_AFTER_VAR) {
        Ok(spec) => Some(KillAfter::parse(&spec).map_err(|e| (Exit::Usage, format!("{KILL_AFTER_VAR}: {e}")))?),
        Err(_) => None,
    };
    sessions::Desk::open(load_config(global)?, kill_after)
}

/// Opens the harness (workspace, index, skills, prompt).
fn open(config: &Config) -> Result<Harness, Failure> {
    Harness::open(config).map_err(|e| (Exit::Failure, e.to_string()))
}

/// Says which docs the index skipped, on the trace.
fn warn_skipped(harness: &Harness, trace: &mut Trace<impl Write>) {
    for warning in &harness.index.current().warnings {
        trace.event("warning", warning);
    }
}

/// The answer, then a `Sources:` list of what it cites: each verified source with its
/// heading, each other one marked. Nothing is added for an answer that cites nothing.
fn with_sources(answer: &str, citations: &[crate::session::verify::Citation]) -> String {
    if citations.is_empty() {
        return answer.to_string();
    }
    let mut out = format!("{}\n\nSources:", answer.trim_end());
    for citation in citations {
        let line = match (citation.verified, citation.heading.is_empty()) {
            (true, false) => format!("\n- {} ({})", citation.source(), citation.heading),
            (true, true) => format!("\n- {}", citation.source()),
            (false, _) => format!("\n- {} (not verified: not retrieved for this question)", citation.source()),
        };
        out.push_str(&crate::guard::scrub(&line));
    }
    out
}
