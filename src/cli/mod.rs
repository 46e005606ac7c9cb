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
//! - `ops`: `redact`, `hash-token`, `health`; `mcp`: the MCP server on stdio;
//! - `sandbox`: what each command may touch once it runs, and entering the kernel sandbox.

pub mod args;
pub mod ask;
pub mod chat;
pub mod eval;
pub mod index;
pub mod live;
pub mod mcp;
pub mod ops;
pub mod report;
pub mod sandbox;
pub mod serve;
pub mod sessions;
pub mod sources;
pub mod tokens;

use std::collections::HashMap;
use std::io::Write;

pub use args::{
    Cli, Command, Exit, Failure, Global, IndexAction, ScopeArg, SessionsAction, SourcesAction, StreamWhen, TraceWhen,
};

use crate::agent::Harness;
use crate::config::{Config, ENV_KEYS, Sources};
use crate::session::store::KillAfter;
use crate::trace::Trace;

/// The crash-test hook: `DOCS_AGENT_TEST_KILL_AFTER=POINT[#N]` makes the process SIGKILL itself
/// right after that point (see `session::store::KillAfter`). Built only into test (debug)
/// builds: a release binary ignores the variable, so no environment can make it kill itself.
#[cfg(debug_assertions)]
const KILL_AFTER_VAR: &str = "DOCS_AGENT_TEST_KILL_AFTER";

/// Runs what was parsed: the exit code, or the failure `main` prints once. Each command
/// enters its kernel sandbox (`sandbox`) once its configuration is read, before it starts a
/// thread.
pub fn run(cli: Cli) -> Result<Exit, Failure> {
    start_log(&cli.command)?;
    let ran = run_command(cli);
    // The traces not yet exported are sent before the process exits.
    crate::telemetry::otel::finish();
    ran
}

/// Runs the command, once the log is set up.
fn run_command(cli: Cli) -> Result<Exit, Failure> {
    use sandbox::Use;
    let Cli { global, command, question } = cli;
    hide_landlock_for_tests()?;
    // The configuration, then the sandbox of a command that works on the workspace.
    // A git source's docs are the tree it serves, checked out first when there is none.
    let within = |uses: Use| -> Result<Config, Failure> {
        let mut config = collection_config(&global)?;
        sandbox::enter(&global, &sandbox::for_workspace(&config, uses)?)?;
        sources::serve_from(&mut config)?;
        Ok(config)
    };
    match command {
        Some(Command::Redact) => {
            sandbox::enter(&global, &crate::sandbox::Plan::nothing())?;
            ops::redact_stdin()
        }
        Some(Command::Index { action }) => index::run(within(Use::Look)?, action),
        Some(Command::Sources { action }) => {
            let config = load_config(&global)?;
            sandbox::enter(&global, &sandbox::for_workspace(&config, Use::Look)?)?;
            sources::run(&config, action)
        }
        Some(Command::Pull) => {
            let config = load_config(&global)?;
            sandbox::enter(&global, &sandbox::for_url(&config.llm.base_url))?;
            ops::pull(config)
        }
        Some(Command::Eval { filter, junit, json, cases, jobs, retrieval }) => {
            eval::eval(&global, filter.as_deref(), junit.as_deref(), json.as_deref(), &cases, jobs, retrieval)
        }
        Some(Command::Ask { question }) => {
            ask::ask(within(Use::Answer)?, &question.join(" "), global.stream, global.trace)
        }
        Some(Command::Search { query, limit, evidence: false }) => {
            ask::search(within(Use::Look)?, &query.join(" "), limit, global.trace)
        }
        Some(Command::Search { query, evidence: true, .. }) => {
            ask::evidence(within(Use::Look)?, &query.join(" "), global.trace)
        }
        Some(Command::Check) => ask::check(within(Use::Look)?),
        Some(Command::Chat { session }) => {
            let desk = sessions::Desk::open(within(Use::Converse)?, crash_hook()?, global.trace)?;
            chat::chat(desk, session, global.model.clone(), global.stream)
        }
        Some(Command::Sessions { serve, action }) => sessions::run(&global, serve, action),
        Some(Command::Report { serve, what }) => report::run(&global, serve, what),
        Some(Command::Serve { listen, wait_for_config }) => {
            let (config, port) = serve::configured(&global, listen, wait_for_config)?;
            let cores = sandbox::cores();
            // The config file's folder stays readable where it may: a running serve takes changed
            // tokens from it.
            let plan = sandbox::for_workspace(&config, Use::Serve { port })?;
            let (plan, watch_tokens) = sandbox::with_config_file(plan, &config_file(&global));
            let status = sandbox::enter(&global, &plan)?;
            let mut config = config;
            sources::serve_from(&mut config)?;
            serve::serve(&global, config, status, cores, watch_tokens)
        }
        Some(Command::Init { to, replace }) => {
            sandbox::enter(&global, &sandbox::for_new_file(&to)?)?;
            ops::init(&to, replace)
        }
        Some(Command::Mcp) => mcp::serve_stdio(within(Use::Mcp)?),
        Some(Command::Tokens { action }) => {
            let file = config_file(&global);
            sandbox::enter(&global, &sandbox::for_new_file(&file)?)?;
            tokens::run(&file, action)
        }
        Some(Command::HashToken) => {
            sandbox::enter(&global, &crate::sandbox::Plan::nothing())?;
            ops::hash_token()
        }
        Some(Command::Health { url }) => {
            let status = sandbox::enter(&global, &sandbox::for_url(&url))?;
            ops::health(&url, &status)
        }
        #[cfg(all(debug_assertions, target_os = "linux"))]
        Some(Command::SandboxProbe { attempts }) => sandbox::probe(&global, &load_config(&global)?, &attempts),
        None if question.is_empty() => Err((
            Exit::Usage,
            "no question given; try `docs-agent \"how long is the refund window\"` or `docs-agent --help`".into(),
        )),
        None => ask::ask(within(Use::Answer)?, &question.join(" "), global.stream, global.trace),
    }
}

/// The configuration, read once: flags > environment > file > defaults. With [`config_file`]
/// and [`start_log`], the only place the process environment is read.
pub fn load_config(global: &Global) -> Result<Config, Failure> {
    let wanted = |name: &str| {
        ENV_KEYS.iter().any(|(var, _)| *var == name)
            || crate::config::DATA_HOME_VARS.contains(&name)
            || name == "DOCS_AGENT_CONFIG"
    };
    let env: HashMap<String, String> = std::env::vars().filter(|(k, _)| wanted(k)).collect();
    let sources = Sources { file: global.config.clone(), env, flags: global.overrides() };
    let mut config = crate::service::settings::load(&sources).map_err(|e| (Exit::Usage, e.to_string()))?;
    // A git source's token and webhook secret, from the file or variable its entry names.
    crate::git::read_secrets(&mut config, &|var| std::env::var(var).ok()).map_err(|e| (Exit::Usage, e))?;
    // Each PDF read from here on gets the configured time.
    crate::pdf::worker::set_time_limit(std::time::Duration::from_secs(config.index.pdf_seconds));
    Ok(config)
}

/// The configuration of the collection a command reads (`--collection`, else the first): with
/// `[[collections]]`, that collection's own; without, the configuration itself.
pub fn collection_config(global: &Global) -> Result<Config, Failure> {
    chosen_collection(load_config(global)?, global)
}

/// `config`'s collection that `--collection` names (else the first).
fn chosen_collection(config: Config, global: &Global) -> Result<Config, Failure> {
    config.for_collection(global.collection.as_deref()).map_err(|e| (Exit::Usage, format!("--collection: {e}")))
}

/// The whole configuration (every collection) of a command that reads the session log: serve's
/// log when `serve`.
fn full_log_config(global: &Global, serve: bool) -> Result<Config, Failure> {
    let mut config = load_config(global)?;
    if serve {
        config.session.log_path = config.serve_log_path();
    }
    Ok(config)
}

/// The configuration of a command that reads the session log, for the collection it reads.
fn load_log_config(global: &Global, serve: bool) -> Result<Config, Failure> {
    chosen_collection(full_log_config(global, serve)?, global)
}

/// Sets up the process's log (`telemetry::log`) from `DOCS_AGENT_LOG` (or `RUST_LOG`) and
/// `DOCS_AGENT_LOG_FORMAT`: by default warnings only, and `serve`'s own progress too (`info`);
/// text on a terminal, JSON lines otherwise. With `OTEL_EXPORTER_OTLP_ENDPOINT`, the trace
/// export's layer too (`telemetry::otel`), started once the sandbox is entered.
fn start_log(command: &Option<Command>) -> Result<(), Failure> {
    use crate::telemetry::{Format, LogSettings};
    let default = match command {
        Some(Command::Serve { .. }) => "warn,docs_agent=info",
        _ => "warn",
    };
    let var = |name: &'static str| std::env::var(name).ok().filter(|v| !v.trim().is_empty()).map(|v| (name, v));
    let (from, filter) = var("DOCS_AGENT_LOG").or_else(|| var("RUST_LOG")).unwrap_or(("the default", default.into()));
    let terminal = crate::guard::sink::stderr_is_terminal();
    let format = match var("DOCS_AGENT_LOG_FORMAT") {
        Some((_, value)) => Format::parse(value.trim()).map_err(|e| (Exit::Usage, e.to_string()))?,
        None if terminal => Format::Text,
        None => Format::Json,
    };
    let dependencies =
        var("DOCS_AGENT_LOG_DEPENDENCIES").is_some_and(|(_, v)| matches!(v.trim(), "1" | "true" | "yes"));
    let settings = LogSettings { filter, from, format, colour: terminal, dependencies };
    let otel = crate::telemetry::otel::OtelSettings::from_env(|name| std::env::var(name).ok())
        .map_err(|e| (Exit::Usage, e.to_string()))?;
    let extra = otel.map(crate::telemetry::otel::layer).into_iter().collect();
    crate::telemetry::log::init(&settings, extra).map_err(|e| (Exit::Usage, e.to_string()))
}

/// The config file that [`load_config`] reads: `--config`, `DOCS_AGENT_CONFIG`, or
/// `./docs-agent.toml`.
pub fn config_file(global: &Global) -> std::path::PathBuf {
    global
        .config
        .clone()
        .or_else(|| std::env::var_os("DOCS_AGENT_CONFIG").map(std::path::PathBuf::from))
        .unwrap_or_else(|| crate::config::DEFAULT_FILE.into())
}

/// In a test (debug) build, `DOCS_AGENT_TEST_HIDE_LANDLOCK=1` makes the Landlock system calls
/// fail (`ENOSYS`) for this process, as on a kernel without Landlock, so tests can show that
/// every command enters the sandbox (with `--require-sandbox`, each exits 7) and what happens
/// without it. A release binary ignores the variable.
#[cfg(all(debug_assertions, target_os = "linux"))]
fn hide_landlock_for_tests() -> Result<(), Failure> {
    match std::env::var("DOCS_AGENT_TEST_HIDE_LANDLOCK").as_deref() {
        Ok("1") => crate::sandbox::probe::hide_landlock().map_err(|e| (Exit::Failure, e.to_string())),
        _ => Ok(()),
    }
}

/// A release build has no test hooks (nor has a system without Landlock this one).
#[cfg(not(all(debug_assertions, target_os = "linux")))]
fn hide_landlock_for_tests() -> Result<(), Failure> {
    Ok(())
}

/// The crash-test hook asked for by `DOCS_AGENT_TEST_KILL_AFTER`, in a test (debug) build.
#[cfg(debug_assertions)]
fn crash_hook() -> Result<Option<KillAfter>, Failure> {
    match std::env::var(KILL_AFTER_VAR) {
        Ok(spec) => Ok(Some(KillAfter::parse(&spec).map_err(|e| (Exit::Usage, format!("{KILL_AFTER_VAR}: {e}")))?)),
        Err(_) => Ok(None),
    }
}

/// A release build has no crash-test hook.
#[cfg(not(debug_assertions))]
fn crash_hook() -> Result<Option<KillAfter>, Failure> {
    Ok(None)
}

/// Opens the harness (workspace, index, skills, prompt), after pulling the embedding model
/// when the server lacks it (`llm.pull = missing`): the index's new sections are embedded as
/// it opens. A pull that fails is a warning; search then uses keywords only.
fn open(config: &Config) -> Result<Harness, Failure> {
    if let Some(embeddings) = config.embeddings_llm()
        && let Err((_, message)) = ops::pull_if_missing(&embeddings)
    {
        crate::guard::sink::err_line!("docs-agent: warning: {message}");
    }
    Harness::open(config).map_err(|e| (Exit::Failure, e.to_string()))
}

/// A question needs documents: a workspace without any is a usage error (exit 2) that says
/// where it looked and what to pass, never "no section matched".
fn require_docs(harness: &Harness, config: &Config) -> Result<(), Failure> {
    if harness.index.current().stats.files > 0 {
        return Ok(());
    }
    let message = match harness.workspace.docs() {
        None => format!(
            "{} has no docs/ folder, so there is nothing to answer from; pass --docs DIR (a folder of \
             documents) or --workspace DIR (a folder with docs/)",
            config.workspace.display()
        ),
        Some(_) => format!(
            "{} holds no document docs-agent reads ({} files); `docs-agent check` lists what was \
             skipped and why",
            config.docs_path().display(),
            crate::doc_kind::extensions_listed()
        ),
    };
    Err((Exit::Usage, message))
}

/// Says which docs the index skipped, on the trace.
fn warn_skipped(harness: &Harness, trace: &mut Trace<impl Write>) {
    for warning in &harness.index.current().warnings {
        trace.event("warning", warning);
    }
}

/// The results of the last turn's `write_file` calls that failed (the note was not written:
/// the folder is not writable, the disk is full, the arguments were malformed), as the model
/// was told them. A one-shot question or a chat reports them and exits with
/// [`Exit::WriteFailed`], so a script sees that the note it asked for is not there.
fn failed_writes(events: &[crate::session::store::Stored]) -> Vec<String> {
    use crate::session::event::Event;
    let turn_start = events.iter().rposition(|s| matches!(s.event, Event::UserMessage { .. })).unwrap_or(0);
    let turn = events.get(turn_start..).unwrap_or_default();
    let writes: Vec<&str> = turn
        .iter()
        .filter_map(|s| match &s.event {
            Event::AssistantMessage { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .filter(|call| call.name == "write_file")
        .map(|call| call.id.as_str())
        .collect();
    turn.iter()
        .filter_map(|s| match &s.event {
            Event::ToolResult { call_id, text, decision: crate::tools::Decision::Error }
                if writes.contains(&call_id.as_str()) =>
            {
                Some(text.clone())
            }
            _ => None,
        })
        .collect()
}

/// Says on stderr which notes were not written; the exit code for them.
fn report_failed_writes(failed: &[String]) -> Option<Exit> {
    for text in failed {
        crate::guard::sink::err_line!("docs-agent: a note was not written: {text}");
    }
    (!failed.is_empty()).then_some(Exit::WriteFailed)
}

/// The answer, then a `Sources:` list of what it cites: each verified source with its
/// heading, each other one marked. Nothing is added for an answer that cites nothing.
fn with_sources(answer: &str, citations: &[crate::session::verify::Citation]) -> String {
    if citations.is_empty() {
        return answer.to_string();
    }
    format!("{}\n\n{}", answer.trim_end(), sources(citations))
}

/// `Sources:` and a line per citation (its heading when verified, else why it is not), with
/// its page on the docs site on the next line when `[site]` is configured.
fn sources(citations: &[crate::session::verify::Citation]) -> String {
    let mut out = String::from("Sources:");
    for citation in citations {
        let mut line = match (citation.verified, citation.heading.is_empty()) {
            (true, false) => format!("\n- {} ({})", citation.source(), citation.heading),
            (true, true) => format!("\n- {}", citation.source()),
            (false, _) => format!("\n- {} (not verified: not retrieved for this question)", citation.source()),
        };
        // The page on the docs site, to paste into a ticket.
        if let Some(url) = &citation.url {
            line.push_str(&format!("\n  {url}"));
        }
        out.push_str(&crate::guard::scrub(&line));
    }
    out
}
