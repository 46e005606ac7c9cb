//! The `docs-agent` binary: parses the command line, loads the configuration once, runs the
//! subcommand, prints any error once and picks the exit code. All logic lives in the library.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::ExitCode;

use clap::Parser;

use docs_agent::agent::{AskError, Harness, Stop};
use docs_agent::approval::{Approver, Terminal};
use docs_agent::cli::{Cli, Command, Exit, Failure, SessionsAction};
use docs_agent::config::{Config, ENV_KEYS, Sources};
use docs_agent::guard::redact;
use docs_agent::session::store::KillAfter;
use docs_agent::sessions::{self, Desk};
use docs_agent::trace::Trace;
use docs_agent::{check, guard};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err((code, message)) => {
            eprintln!("docs-agent: {}", guard::scrub(&message));
            code
        }
    };
    ExitCode::from(code as u8)
}

/// The crash-test hook: `DOCS_AGENT_TEST_KILL_AFTER=POINT[#N]` makes the process SIGKILL itself
/// right after that point (see `session::store::KillAfter`).
const KILL_AFTER_VAR: &str = "DOCS_AGENT_TEST_KILL_AFTER";

fn run(cli: Cli) -> Result<Exit, Failure> {
    let Cli { global, command, question } = cli;
    match command {
        Some(Command::Redact) => redact_stdin(),
        Some(Command::Eval { filter, junit, json, cases, jobs }) => {
            eval(&global, filter.as_deref(), junit.as_deref(), json.as_deref(), &cases, jobs)
        }
        Some(Command::Ask { question }) => ask(load_config(&global)?, &question.join(" ")),
        Some(Command::Search { query, limit }) => search(load_config(&global)?, &query.join(" "), limit),
        Some(Command::Check) => check(load_config(&global)?),
        Some(Command::Chat { session }) => {
            let desk = desk(&global)?;
            docs_agent::chat::chat(desk, session, global.model.clone())
        }
        Some(Command::Sessions { action }) => sessions(&global, action),
        Some(Command::Serve { listen }) => serve(&global, listen),
        Some(Command::HashToken) => hash_token(),
        Some(Command::Health { url }) => health(&url),
        None if question.is_empty() => Err((
            Exit::Usage,
            "no question given; try `docs-agent \"how long is the refund window\"` or `docs-agent --help`".into(),
        )),
        None => ask(load_config(&global)?, &question.join(" ")),
    }
}

fn load_config(global: &docs_agent::cli::Global) -> Result<Config, Failure> {
    let wanted = |name: &str| ENV_KEYS.iter().any(|(var, _)| *var == name) || name == "DOCS_AGENT_CONFIG";
    let env: HashMap<String, String> = std::env::vars().filter(|(k, _)| wanted(k)).collect();
    let sources = Sources { file: global.config.clone(), env, flags: global.overrides() };
    Config::load(&sources).map_err(|e| (Exit::Usage, e.to_string()))
}

fn desk(global: &docs_agent::cli::Global) -> Result<Desk, Failure> {
    let kill_after = match std::env::var(KILL_AFTER_VAR) {
        Ok(spec) => Some(KillAfter::parse(&spec).map_err(|e| (Exit::Usage, format!("{KILL_AFTER_VAR}: {e}")))?),
        Err(_) => None,
    };
    Desk::open(load_config(global)?, kill_after)
}

fn sessions(global: &docs_agent::cli::Global, action: SessionsAction) -> Result<Exit, Failure> {
    use docs_agent::sessions::Decision;
    let mut out = std::io::stdout().lock();
    // Reading commands open the log alone; the others need the harness (index, model).
    let log_only = || -> Result<(Config, docs_agent::session::store::Log), Failure> {
        let config = load_config(global)?;
        let log = sessions::open_log(&config)?;
        Ok((config, log))
    };
    let repin = global.model.as_deref();
    match action {
        SessionsAction::List => {
            let (config, log) = log_only()?;
            sessions::list(&log, &config, &mut out)
        }
        SessionsAction::Show { id } => {
            let (config, log) = log_only()?;
            sessions::show(&log, &config, &id, &mut out)
        }
        SessionsAction::Export { id } => {
            let (config, log) = log_only()?;
            sessions::export(&log, &config, &id, &mut out)
        }
        SessionsAction::Resume { id } => sessions::continue_turn(&mut desk(global)?, &id, None, repin),
        SessionsAction::Approve { id, scope, prefix, call } => {
            let decision = Decision::Approve { scope, prefix };
            sessions::continue_turn(&mut desk(global)?, &id, Some((decision, call)), repin)
        }
        SessionsAction::Deny { id, reason, call } => {
            let decision = Decision::Deny { reason };
            sessions::continue_turn(&mut desk(global)?, &id, Some((decision, call)), repin)
        }
    }
}

fn serve(global: &docs_agent::cli::Global, listen: Option<String>) -> Result<Exit, Failure> {
    use std::sync::Arc;
    let mut config = load_config(global)?;
    if let Some(listen) = listen {
        config.serve.listen = listen;
    }
    if config.serve.tokens.is_empty() {
        return Err((
            Exit::Usage,
            "no API tokens: add a [[serve.tokens]] entry (principal, sha256, roles) to docs-agent.toml; \
             `docs-agent hash-token` prints the sha256 of a token"
                .into(),
        ));
    }
    let listen = config.serve.listen.clone();
    docs_agent::serve::tune_sqlite();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut harness = open(config)?;
    harness.index = harness.index.with_readers(workers).map_err(|e| (Exit::Failure, e.to_string()))?;
    let state = Arc::new(docs_agent::serve::AppState::new(harness));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| (Exit::Failure, format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(docs_agent::serve::serve(state, &listen, shutdown_signal())).map_err(|e| (Exit::Failure, e))?;
    Ok(Exit::Ok)
}

/// Completes on SIGTERM (a container stop) or Ctrl-C.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn health(url: &str) -> Result<Exit, Failure> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| (Exit::Failure, format!("cannot start the async runtime: {e}")))?;
    let status = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(3))
            .build()
            .map_err(|e| (Exit::Failure, format!("cannot start the HTTP client: {e}")))?;
        let response =
            client.get(url).send().await.map_err(|e| (Exit::Failure, format!("{url} did not answer: {e}")))?;
        Ok::<_, Failure>(response.status())
    })?;
    if status.is_success() { Ok(Exit::Ok) } else { Err((Exit::Failure, format!("{url} answered {status}"))) }
}

fn hash_token() -> Result<Exit, Failure> {
    let mut token = String::new();
    std::io::stdin()
        .read_line(&mut token)
        .map_err(|e| (Exit::Failure, format!("cannot read the token from stdin: {e}")))?;
    let token = token.trim();
    if token.len() < 16 {
        return Err((Exit::Usage, "a token must be at least 16 characters (e.g. `openssl rand -hex 24`)".into()));
    }
    println!("{}", docs_agent::serve::auth::hash(token));
    Ok(Exit::Ok)
}

fn open(config: Config) -> Result<Harness, Failure> {
    let harness = Harness::open(config).map_err(|e| (Exit::Failure, e.to_string()))?;
    Ok(harness)
}

fn warn_skipped(harness: &Harness, trace: &mut Trace<impl Write>) {
    for warning in &harness.index.warnings {
        trace.event("warning", warning);
    }
}

fn ask(config: Config, question: &str) -> Result<Exit, Failure> {
    if question.trim().is_empty() {
        return Err((Exit::Usage, "the question is empty; ask something about the docs".into()));
    }
    let approver = Approver::new(&config, Terminal::detect());
    let harness = open(config)?;
    let mut trace = Trace::new(std::io::stderr().lock(), harness.config.limits.trace_result_chars);
    warn_skipped(&harness, &mut trace);
    let run = harness.ask_blocking(approver, question, &mut trace).map_err(|e| match e {
        AskError::Setup(message) | AskError::Log(message) => (Exit::Failure, message),
        AskError::Model(error) => (Exit::Model, error.to_string()),
    })?;
    match run.stop {
        Stop::Answered => {
            println!("{}", run.answer);
            Ok(Exit::Ok)
        }
        Stop::StepLimit | Stop::TimeLimit => Err((Exit::Limit, run.answer)),
        Stop::ModelError | Stop::Cancelled => Err((Exit::Failure, run.answer)),
    }
}

fn search(config: Config, query: &str, limit: usize) -> Result<Exit, Failure> {
    let harness = open(config)?;
    let mut trace = Trace::new(std::io::stderr().lock(), harness.config.limits.trace_result_chars);
    warn_skipped(&harness, &mut trace);
    let hits = harness.index.search(query, limit.max(1)).map_err(|e| (Exit::Failure, e.to_string()))?;
    let mut out = std::io::stdout().lock();
    for hit in hits {
        let line = format!("{}  {}  {:.3}", hit.source(), hit.heading, hit.score);
        let _ = writeln!(out, "{}", guard::scrub(&line));
    }
    Ok(Exit::Ok)
}

fn check(config: Config) -> Result<Exit, Failure> {
    let harness = open(config)?;
    let report = check::check(&harness);
    let mut out = std::io::stdout().lock();
    for problem in &report.problems {
        let _ = writeln!(out, "{}", guard::scrub(&problem.to_string()));
    }
    let _ = writeln!(out, "{}", report.summary);
    Ok(if report.problems.is_empty() { Exit::Ok } else { Exit::Failure })
}

fn redact_stdin() -> Result<Exit, Failure> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| (Exit::Failure, format!("cannot read stdin as UTF-8 text: {e}")))?;
    std::io::stdout()
        .write_all(redact::redact(&input).as_bytes())
        .map_err(|e| (Exit::Failure, format!("cannot write stdout: {e}")))?;
    Ok(Exit::Ok)
}

fn eval(
    global: &docs_agent::cli::Global,
    filter: Option<&str>,
    junit: Option<&std::path::Path>,
    json: Option<&std::path::Path>,
    cases: &std::path::Path,
    jobs: Option<usize>,
) -> Result<Exit, Failure> {
    use docs_agent::eval::{self, report, run::ModelChoice};
    if global.workspace.is_some() || global.max_steps.is_some() || global.config.is_some() {
        return Err((
            Exit::Usage,
            "eval takes no --workspace, --max-steps or --config: each case names its workspace and sets its limits in its `env`".into(),
        ));
    }
    let categories = eval::case::load(cases).map_err(|e| (Exit::Usage, e))?;
    let mut models = ModelChoice { name: None, base_url: global.base_url.clone() };
    match global.model.as_deref() {
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            models.base_url = Some(url.to_string())
        }
        Some(name) => models.name = Some(name.to_string()),
        None => {}
    }
    if models.base_url.is_some() && models.name.is_none() {
        models.name = std::env::var("LLM_MODEL").ok().or(Some("llama3.2:3b".to_string()));
    }
    let root = cases.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    for category in &categories {
        for case in &category.cases {
            if !root.join(&case.workspace).is_dir() {
                return Err((
                    Exit::Usage,
                    format!(
                        "{}: case `{}`: workspace {} is not a folder",
                        category.name,
                        case.name,
                        root.join(&case.workspace).display()
                    ),
                ));
            }
        }
    }
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let mut progress = std::io::stderr();
    let results = eval::run_all(&categories, filter, root, &models, jobs, &mut progress);
    if results.is_empty() {
        return Err((Exit::Usage, format!("no eval case matches the filter {filter:?} in {}", cases.display())));
    }
    let mut out = std::io::stdout().lock();
    let _ = report::table(&results, &mut out);
    if let Some(path) = junit {
        report::junit(&results, path).map_err(|e| (Exit::Failure, e))?;
    }
    if let Some(path) = json {
        report::json(&results, path).map_err(|e| (Exit::Failure, e))?;
    }
    Ok(if eval::failed(&results, &models) { Exit::Failure } else { Exit::Ok })
}
