//! The command line's words: flags, subcommands, help text and exit codes. Parsing only;
//! `cli::run` runs what was parsed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Exit codes, documented in `--help` and the book (book/src/commands.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Answered (or the subcommand succeeded).
    Ok = 0,
    /// Something else failed: the workspace cannot be opened, `check` found problems, `search`
    /// found nothing.
    Failure = 1,
    /// Bad command line or configuration.
    Usage = 2,
    /// The model server is unreachable, lacks the model, or answered with an error.
    Model = 3,
    /// The step or time limit was hit before an answer.
    Limit = 4,
    /// A session's write waits for a person (`docs-agent sessions approve|deny ID`).
    Awaiting = 5,
    /// The answer came, but a note it wrote could not be written (stderr says why).
    WriteFailed = 6,
    /// The kernel sandbox is required (`--require-sandbox`) but cannot be entered.
    Sandbox = 7,
    /// The question's or the session's budget (`[budget]`: tokens or cost) was spent.
    Budget = 8,
}

/// A failed command: its exit code and the message for the person.
pub type Failure = (Exit, String);

const EXIT_CODES: &str = "\
Exit codes:
  0  answered (or the subcommand succeeded)
  1  other failure (workspace cannot be opened; `check` found problems; `search` found nothing)
  2  bad command line or configuration
  3  model server unreachable, model missing, or model error
  4  step or time limit hit before an answer
  5  a session's write awaits approval (docs-agent sessions approve|deny ID)
  6  answered, but an approved note could not be written (stderr says why)
  7  the kernel sandbox is required (--require-sandbox) but this kernel cannot enforce it
  8  the question's or the session's budget (tokens or cost, [budget]) was spent

Environment: LLM_BASE_URL, LLM_MODEL (scripted | extractive | a model name), LLM_API_KEY,
APPROVE (yes approves writes; otherwise ask on a terminal, else deny), WORKSPACE,
DOCS_AGENT_CONFIG, DOCS_AGENT_REQUIRE_SANDBOX, DOCS_AGENT_MAX_STEPS, DOCS_AGENT_MAX_WALL_SECS,
DOCS_AGENT_SESSION_LOG (default .docs-agent/sessions.db), DOCS_AGENT_APPROVAL_TTL_SECS,
DOCS_AGENT_CONTEXT_BUDGET, DOCS_AGENT_QUESTION_TOKENS, DOCS_AGENT_SESSION_TOKENS.
Logs: DOCS_AGENT_LOG (or RUST_LOG), DOCS_AGENT_LOG_FORMAT (text | json); libraries' own events
are capped at warnings unless DOCS_AGENT_LOG_DEPENDENCIES=1; traces over OTLP when
OTEL_EXPORTER_OTLP_ENDPOINT is set.
Precedence: flags > environment > docs-agent.toml > defaults.";

/// Answers questions about a product's docs, citing them; every guardrail is held by code.
#[derive(Debug, Parser)]
#[command(
    name = "docs-agent",
    version,
    after_help = EXIT_CODES,
    long_about = "Answers questions about the Markdown docs in WORKSPACE/docs with an LLM served by \
                  Ollama or any OpenAI-compatible server. The model only asks for tools; the harness \
                  confines paths, fences retrieved text as untrusted, redacts secrets at every boundary \
                  and asks a human before any write under notes/.\n\n\
                  `docs-agent \"question\"` is the same as `docs-agent ask \"question\"`; use `ask` \
                  when the question starts with a subcommand's name (search, check, redact)."
)]
pub struct Cli {
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub global: Global,
    /// What to do; without one, the words are a question.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The question (same as `docs-agent ask QUESTION`).
    pub question: Vec<String>,
}

/// Options shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// The workspace folder (docs/, skills/, AGENTS.md, notes/) [env: WORKSPACE]
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A plain folder of documents to answer from (Markdown, MDX, text, HTML). Alone, it is
    /// the whole workspace (no AGENTS.md, skills or notes needed); with --workspace, it
    /// replaces that workspace's docs/ [env: DOCS_AGENT_DOCS]
    #[arg(long, global = true, value_name = "DIR")]
    pub docs: Option<PathBuf>,
    /// With [[collections]] in the config: the collection a command reads (default: the
    /// first); `serve` serves them all
    #[arg(long, global = true, value_name = "NAME")]
    pub collection: Option<String>,
    /// A docs-agent.toml to read (default: ./docs-agent.toml when present) [env: DOCS_AGENT_CONFIG]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Model name: one the model server has (e.g. qwen2.5-coder:1.5b), or `extractive` (no
    /// server: the best sections, quoted and cited; `scripted` is the tests' deliberately
    /// compromised model, not for answers); for `eval`, a name or a URL; for
    /// an existing session (chat --session, sessions resume|approve|deny), re-pins it
    /// (LLM_MODEL does not) [env: LLM_MODEL]
    #[arg(long, global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// OpenAI-compatible base URL, e.g. http://localhost:11434/v1 [env: LLM_BASE_URL]
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model calls allowed for one question [env: DOCS_AGENT_MAX_STEPS]
    #[arg(long, global = true, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Show the answer as it is written (a guarded paragraph at a time) and a progress line
    /// while the model reads and writes: `auto` does so on a terminal only (the answer when
    /// stdout is one, the progress line when stderr is one); piped output is the final answer,
    /// printed once
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = StreamWhen::Auto)]
    pub stream: StreamWhen,
    /// How the trace is written on stderr: `auto` writes one JSON line per tool call and model
    /// call when stderr is not a terminal, and a short readable line per tool call when it is
    /// (so on a terminal shared with the answer, as in `docker compose run`, the answer stays
    /// apart); `json` and `brief` choose
    #[arg(long, global = true, value_enum, value_name = "FORMAT", default_value_t = TraceWhen::Auto)]
    pub trace: TraceWhen,
    /// Refuse to run unless the kernel sandbox (Landlock) can be entered; without this flag a
    /// kernel without Landlock gets a warning and the command goes on. The image sets it
    #[arg(
        long,
        global = true,
        env = "DOCS_AGENT_REQUIRE_SANDBOX",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub require_sandbox: bool,
    /// Do not enter the kernel sandbox (to find out whether it is what breaks a setup; the
    /// container's confinement remains). Refused while the sandbox is required: set
    /// DOCS_AGENT_REQUIRE_SANDBOX=0 first
    #[arg(long, global = true)]
    pub no_sandbox: bool,
}

/// What `docs-agent tokens` does.
#[derive(Debug, Subcommand)]
pub enum TokensAction {
    /// A new token for NAME (a person or a client), printed once on stdout.
    Add {
        /// Who it is for (letters, digits, `.`, `_`, `-`, `@`).
        name: String,
        /// What it may do: ask, approve, admin (repeat --role for several).
        #[arg(long = "role", value_enum, value_name = "ROLE", default_value = "ask")]
        roles: Vec<TokenRole>,
        /// With [[collections]] in the config: a collection it reads (repeat for several; `*`:
        /// all). Required there, refused without them
        #[arg(long = "reads", value_name = "COLLECTION")]
        collections: Vec<String>,
    },
    /// The callers and their roles (never the tokens; only a prefix of each hash).
    List,
    /// Removes NAME's tokens: they stop working at once on a running serve.
    Revoke {
        /// Whose tokens.
        name: String,
    },
}

/// A role a token may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TokenRole {
    /// Ask, search, hold sessions.
    Ask,
    /// Decide pending writes.
    Approve,
    /// Read metrics and reports; also ask.
    Admin,
}

impl TokenRole {
    /// The configuration's role.
    pub fn role(self) -> crate::config::Role {
        match self {
            TokenRole::Ask => crate::config::Role::Ask,
            TokenRole::Approve => crate::config::Role::Approve,
            TokenRole::Admin => crate::config::Role::Admin,
        }
    }
}

/// How the CLI writes its trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceWhen {
    /// JSON lines, or brief lines on a terminal.
    Auto,
    /// Always JSON lines.
    Json,
    /// Always brief lines.
    Brief,
}

impl TraceWhen {
    /// The format for this process's stderr.
    pub fn format(self) -> crate::trace::Format {
        match self {
            TraceWhen::Json => crate::trace::Format::Json,
            TraceWhen::Brief => crate::trace::Format::Brief,
            TraceWhen::Auto if crate::guard::sink::stderr_is_terminal() => crate::trace::Format::Brief,
            TraceWhen::Auto => crate::trace::Format::Json,
        }
    }
}

/// When the CLI shows an answer as it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamWhen {
    /// On a terminal.
    Auto,
    /// Always, even into a pipe (the progress line too, on stderr).
    Always,
    /// Never: the final answer only.
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Answer a question: the answer on stdout, the trace on stderr (JSON lines, or brief lines
    /// on a terminal).
    Ask {
        /// The question.
        #[arg(required = true)]
        question: Vec<String>,
    },
    /// Search the docs without a model: `path#anchor  heading  score` lines, best first.
    Search {
        /// Words to search for.
        #[arg(required = true)]
        query: Vec<String>,
        /// How many sections to show.
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        /// Show the evidence a model would be given for this question instead: the numbered
        /// passages of the best sections within retrieval.context_tokens, and how much of the
        /// question they cover (below retrieval.min_coverage, the answer is "not covered").
        #[arg(long)]
        evidence: bool,
    },
    /// Validate the workspace (AGENTS.md, every SKILL.md, docs) and report every problem with file and line.
    Check,
    /// Show, rebuild or verify the search index file (index.path; by default index.db beside
    /// the session log). Every question brings the file up to date by itself: only new and
    /// changed documents are read.
    Index {
        /// What to do.
        #[command(subcommand)]
        action: IndexAction,
    },
    /// Bring the git sources (`[[sources]]`) up to date, or show what each serves.
    ///
    /// Every command that reads the docs checks out a source's branch the first time by
    /// itself, and `serve` keeps it in sync; this syncs by hand (from cron, or after a push).
    Sources {
        /// What to do.
        #[command(subcommand)]
        action: SourcesAction,
    },
    /// Copy stdin to stdout with secrets replaced by [REDACTED].
    Redact,
    /// Ask Ollama to pull the configured model (llm.model, --model), with progress on stderr.
    ///
    /// Uses Ollama's own API (`/api/pull` beside llm.base_url's `/v1`); other
    /// OpenAI-compatible servers are named as such. Built-in models need no pull.
    Pull,
    /// Talk with the docs over many turns, in a durable session (saved after every step).
    ///
    /// Type a question per line; `/quit` or Ctrl-D leaves, Ctrl-C interrupts the answer being
    /// written. A write the model asks for is shown and asked about on a terminal (y: once, s:
    /// for the session under that folder, N: deny); without a terminal the session pauses
    /// awaiting approval and the command exits with 5. `--session ID` continues a session,
    /// finishing any turn a crash cut short (with its pinned model, unless --model re-pins it).
    Chat {
        /// Continue this session instead of starting one.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// What the sessions say about the docs. `report gaps`: the questions the docs could not
    /// answer (every search found nothing, the answer fell back to quoting the docs, or a
    /// person rated it not helpful), alike questions grouped and counted, most asked first,
    /// with the sections that came closest: a to-do list for the docs' writers.
    Report {
        /// Read serve's sessions (serve-sessions.db in the state folder) instead of the command
        /// line's; the same when session.log_path names one log for both.
        #[arg(long)]
        serve: bool,
        /// Which report.
        #[command(subcommand)]
        what: ReportWhat,
    },
    /// List, inspect, resume, approve, deny or export durable sessions.
    Sessions {
        /// Serve's sessions (serve-sessions.db in the state folder) instead of the command
        /// line's; the same when session.log_path names one log for both.
        #[arg(long)]
        serve: bool,
        /// What to do.
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Serve the HTTP API (and its web page) for support teams: tokens, roles and limits come
    /// from the [serve] section of docs-agent.toml. SIGTERM or Ctrl-C stops accepting, interrupts
    /// running turns (they can be resumed) and exits 0.
    Serve {
        /// Address to listen on (default: serve.listen, 127.0.0.1:8080) [env: DOCS_AGENT_LISTEN]
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// When the config file is missing or unusable (no tokens, a bad value), say why and
        /// wait for it to change, then start; without it, `serve` exits 2. For a container
        /// started before its config is written (compose's `api` before `init`).
        #[arg(long)]
        wait_for_config: bool,
    },
    /// Serve the docs to another agent (Claude Code, codex, an IDE) over MCP on stdin and
    /// stdout: tools search_docs, read_section and ask, and the docs' sections as resources
    /// (docs-agent://docs/file.md#anchor). The client starts this command; stdout carries only
    /// the protocol, and logs go to stderr. `ask` answers in a session that is never stored
    /// and may not write. `serve` offers the same at /mcp, over HTTP with bearer tokens.
    Mcp,
    /// Print the SHA-256 of the token read from stdin, for a [[serve.tokens]] entry.
    HashToken,
    /// Add, list or revoke the callers of `serve` in its config file (--config,
    /// DOCS_AGENT_CONFIG, or ./docs-agent.toml): `tokens add NAME --role ask` prints a new token
    /// once and keeps only its SHA-256; a running serve picks the change up within seconds.
    Tokens {
        /// What to do.
        #[command(subcommand)]
        action: TokensAction,
    },
    /// Write a docs-agent.toml for `serve` with a fresh admin token, and print the token once
    /// (only its SHA-256 is kept). Refuses to replace a file that exists, unless --replace.
    Init {
        /// Where to write it.
        #[arg(long, value_name = "FILE", default_value = "docs-agent.toml")]
        to: PathBuf,
        /// Replace FILE if it exists (a lost token): its tokens stop working.
        #[arg(long)]
        replace: bool,
    },
    /// Exit 0 when a running server answers its health check (for container health checks:
    /// the image has no shell or curl).
    Health {
        /// The URL to GET.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080/healthz")]
        url: String,
    },
    /// Run the eval and red-team pack (evals/*.toml): a table per category, JUnit and JSON.
    ///
    /// With the built-in models every case must pass; with a real model (`--model URL`, or a
    /// model name the server has) what the model chose to do is reported as pass rates and
    /// only breaches (a secret in a sink, a forbidden file or write, a change outside notes/)
    /// decide the exit code.
    Eval {
        /// Only categories whose name contains this.
        #[arg(long, value_name = "CATEGORY")]
        filter: Option<String>,
        /// Write JUnit XML here (CI systems read it).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the results as JSON here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// The folder of case files; workspaces in cases are relative to its parent.
        #[arg(long, value_name = "DIR", default_value = "evals")]
        cases: PathBuf,
        /// Cases run at once (default: one per core).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Run every case with retrieve-first and answer verification on (the defaults of a
        /// question), unless the case's env says otherwise. Without it they are off, so the
        /// guards are tested on what the model itself says; cases that test retrieval turn
        /// them on in their env.
        #[arg(long)]
        retrieval: bool,
    },
    /// Test builds only: enter the sandbox `serve` would (from the same configuration), then
    /// make each attempt with a plain system call and print one JSON line per attempt, after
    /// a first line with the sandbox's status. For tests that show the kernel refusing.
    #[cfg(all(debug_assertions, target_os = "linux"))]
    #[command(hide = true)]
    SandboxProbe {
        /// `read:PATH`, `write:PATH`, `connect:ADDR`, `bind:ADDR` or `exec:PATH [ARG...]`.
        attempts: Vec<String>,
    },
}

/// `docs-agent index ...`
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum IndexAction {
    /// Where the file is, its generation and last update, what it holds, and how many
    /// documents changed since (by size and time; nothing is read or written).
    Status,
    /// Delete the file and build it again from docs/, with progress on a terminal.
    Rebuild,
    /// Check the file (SQLite's and FTS5's integrity checks) and every document's content
    /// against it; exit 1 with one line per problem.
    Verify,
}

/// `docs-agent sources ...`
#[derive(Debug, Clone, Subcommand)]
pub enum SourcesAction {
    /// Fetch each source's branch (or the one named) and check out its tip when it moved; a
    /// failure keeps the tree served before, and exits 1 saying why.
    Sync {
        /// Only this source.
        name: Option<String>,
    },
    /// Each source's URL and branch, the commit served and when it was synced, what its tree
    /// leaves out, and the last failure.
    Status,
}

/// `docs-agent report ...`
#[derive(Debug, Subcommand)]
pub enum ReportWhat {
    /// The questions the docs could not answer, grouped, most asked first.
    Gaps {
        /// Only questions asked in the last DAYS days.
        #[arg(long, value_name = "DAYS", default_value_t = 30)]
        days: u64,
        /// Show at most N groups.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
        /// One JSON document on stdout (what GET /v1/reports/gaps answers), instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `docs-agent sessions ...`
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Every session: id, status, events, last activity, model, first question.
    List,
    /// One session's events, readable, and any write waiting for approval.
    Show {
        /// The session id.
        id: String,
    },
    /// Finish the turn a crash or a restart cut short, from the last durable event.
    ///
    /// Uses the session's pinned model unless --model re-pins it. A write that completed is
    /// never done again; one that did not is done once.
    Resume {
        /// The session id.
        id: String,
    },
    /// Allow the write the session waits for, then continue the turn.
    Approve {
        /// The session id.
        id: String,
        /// once: this write only; session: every later write under --prefix in this session.
        #[arg(long, value_enum, default_value_t = ScopeArg::Once)]
        scope: ScopeArg,
        /// For --scope session: the folder writes may go to (default: the requested file's folder).
        #[arg(long, value_name = "PATH")]
        prefix: Option<String>,
        /// The call whose write you reviewed (shown by `sessions show`); refused if another waits.
        #[arg(long, value_name = "CALL")]
        call: Option<String>,
    },
    /// Refuse the write the session waits for, then continue the turn.
    Deny {
        /// The session id.
        id: String,
        /// Why (the model is told).
        #[arg(long, default_value = "the user declined")]
        reason: String,
        /// The call whose write you reviewed (shown by `sessions show`); refused if another waits.
        #[arg(long, value_name = "CALL")]
        call: Option<String>,
    },
    /// Every event of a session as JSON lines, on stdout.
    Export {
        /// The session id.
        id: String,
    },
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// This write only.
    Once,
    /// Later writes under a path prefix, in this session only.
    Session,
}

impl Global {
    /// The flags that set configuration keys, as `(key, value)`.
    pub fn overrides(&self) -> Vec<(&'static str, String)> {
        let mut flags = Vec::new();
        if let Some(w) = &self.workspace {
            flags.push(("workspace", w.display().to_string()));
        }
        if let Some(d) = &self.docs {
            flags.push(("docs", d.display().to_string()));
        }
        if let Some(m) = &self.model {
            flags.push(("llm.model", m.clone()));
        }
        if let Some(u) = &self.base_url {
            flags.push(("llm.base_url", u.clone()));
        }
        if let Some(n) = self.max_steps {
            flags.push(("limits.max_steps", n.to_string()));
        }
        flags
    }
}

#[cfg(test)]
mod tests {
    /// clap's own checks of the definitions (a long option given twice in one command, a
    /// global flag a subcommand's argument shadows), which otherwise fail only when that
    /// command is run from a debug build.
    #[test]
    fn the_command_line_definitions_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
