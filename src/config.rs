//! Configuration: read once at start-up into [`Config`] and passed down; nothing else reads the
//! environment. Precedence: command-line flags > environment > `docs-agent.toml` > defaults.
//! An unknown key or a bad value is an error that names it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::session::store::Location;

/// The `[llm]` section belongs to `model`, which reads it (so `model` never needs `config`).
pub use crate::model::LlmConfig;

/// Everything the harness needs to know, after all sources are merged.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The workspace folder: `docs/`, `skills/`, `AGENTS.md`, `notes/`.
    pub workspace: PathBuf,
    /// `yes` approves writes; anything else asks on a TTY, or denies.
    pub approve: String,
    /// Which model answers, and how to reach it.
    pub llm: LlmConfig,
    /// Bounds on a run, so a looping or slow model always stops.
    pub limits: Limits,
    /// What the index accepts.
    pub index: IndexConfig,
    /// What the harness retrieves for a question before the model is asked, and how it checks
    /// the answer against it.
    pub retrieval: RetrievalConfig,
    /// Hosts that links and images in an answer may point to; all others are neutralised.
    pub allowed_link_hosts: Vec<String>,
    /// Durable sessions: where the log lives, how long approvals wait, when to compact.
    pub session: SessionConfig,
    /// `docs-agent serve`: address, tokens and limits.
    pub serve: ServeConfig,
    /// Tokens and cost a question and a session may use.
    pub budget: BudgetConfig,
    /// Policy hooks: rules before and after tool calls and before an answer is taken.
    #[serde(default)]
    pub hooks: crate::hooks::HooksConfig,
    /// What the system prompt holds besides the harness's rules: AGENTS.md and the skills
    /// catalog, each within a limit.
    pub prompt: PromptConfig,
}

/// The limits of what the workspace puts in the system prompt.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    /// The largest AGENTS.md put in the prompt, in bytes.
    pub agents_md_max_bytes: u64,
    /// What an AGENTS.md that cannot go in the prompt (too large, not text) is: `warn` (every
    /// command says so on stderr and answers without the project's rules) or `error` (every
    /// command stops).
    pub agents_md_unusable: Unusable,
    /// Tokens (estimated as bytes / 4) the skills catalog may take in the prompt: the skills past
    /// it are left out of the catalog, which says how many, and `check` warns.
    pub skills_catalog_tokens: usize,
}

/// What a command does with a workspace file it cannot use as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unusable {
    /// Say so on stderr and go on without it.
    Warn,
    /// Stop with the reason.
    Error,
}

/// Tokens and cost a question (one turn) and a session (all its turns) may use; 0 is no limit.
/// A turn that reaches one stops before its next model call, with the stop reason `budget`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Tokens (prompt and completion) one question may use.
    pub question_tokens: u64,
    /// Tokens a session may use over all its turns.
    pub session_tokens: u64,
    /// Cost one question may use, in the unit of `prices`.
    pub question_cost: f64,
    /// Cost a session may use over all its turns.
    pub session_cost: f64,
    /// What a model's tokens cost, by model name: `[budget.prices."qwen2.5:7b"]`.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, Price>,
}

/// What a million tokens of one model cost.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// A million prompt tokens.
    pub input_per_million: f64,
    /// A million completion tokens.
    pub output_per_million: f64,
}

/// The HTTP service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Address to listen on.
    pub listen: String,
    /// Who may call the API: one entry per bearer token, stored as its SHA-256.
    pub tokens: Vec<TokenConfig>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Seconds one request may take (a streamed reply: until its first byte).
    pub request_timeout_secs: u64,
    /// Requests handled at once; more are refused at once with 503 and Retry-After.
    pub max_concurrent: usize,
    /// Open connections at once; more are answered 503 and closed at once.
    pub max_connections: usize,
    /// Seconds a client has to send a request's headers, and that a kept-alive connection may
    /// sit idle before the next request; then the connection is closed.
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body, once its headers are in; then it
    /// is answered 408 and the connection closed.
    pub body_read_timeout_secs: u64,
    /// Requests per minute for one principal; more get 429 with Retry-After.
    pub rate_per_minute: u32,
    /// Sessions with activity in the last `session_idle_secs` that may exist at once.
    pub max_open_sessions: usize,
    /// A session idle this long no longer counts as open.
    pub session_idle_secs: u64,
    /// Open sessions one principal may hold at once (as `max_open_sessions` counts them); more
    /// are refused (429) until one is closed or idle.
    pub max_sessions_per_principal: usize,
    /// Sessions one principal may start per minute (also the burst).
    pub sessions_per_minute: u32,
    /// Turns (session messages and one-shot questions) one principal may run at once.
    pub max_turns_per_principal: usize,
    /// Streams following sessions that one principal may hold open at once.
    pub max_followers_per_principal: usize,
    /// May an approver decide a write asked for in their own session?
    pub allow_self_approval: bool,
    /// Model failures in a row that open the circuit breaker (answers become retrieval-only).
    pub breaker_failures: u32,
    /// Seconds the breaker stays open before one request tries the model again.
    pub breaker_cooldown_secs: u64,
}

/// One API token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Who the token speaks for; sessions belong to it.
    pub principal: String,
    /// The token's SHA-256, in hex (`docs-agent hash-token` prints it); the token itself is never stored.
    pub sha256: String,
    /// What it may do.
    pub roles: Vec<Role>,
}

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Ask, search, hold sessions.
    Ask,
    /// Decide pending writes.
    Approve,
    /// Read metrics; also ask.
    Admin,
}

impl Role {
    /// The name used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Ask => "ask",
            Role::Approve => "approve",
            Role::Admin => "admin",
        }
    }
}

/// Durable sessions.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// The SQLite session log (its folder is created). In the container: a file on the `/data` volume.
    pub log_path: PathBuf,
    /// A `postgres://USER:PASSWORD@HOST:PORT/DATABASE` URL: sessions are kept there instead,
    /// shared by every `serve` replica that names it. Empty: the SQLite file at `log_path`.
    pub log_url: String,
    /// Seconds a replica's writer lease on a session lasts unless renewed (PostgreSQL only):
    /// how long a session waits after its replica died before another can take it over.
    pub lease_secs: u64,
    /// Seconds an undecided write request waits before it expires (and is denied).
    pub approval_ttl_secs: u64,
    /// The model's context budget, in tokens (estimated as bytes / 4): every request a turn
    /// sends fits in it. Unset: from the context length the model server reports
    /// ([`SessionConfig::context_budget_for`]), or [`DEFAULT_CONTEXT_BUDGET`] when it reports
    /// none.
    #[serde(default)]
    pub context_budget_tokens: Option<u64>,
    /// The fraction of the budget at which the older middle of a conversation is compacted.
    pub compact_at: f64,
}

/// The context budget when neither the configuration nor the model server gives one.
pub const DEFAULT_CONTEXT_BUDGET: u64 = 8192;
/// The share of a server's context (less the reply) a budget derived from it takes: the
/// budget counts bytes / 4, and a real tokenizer counts more on Markdown and JSON (Qwen2.5's
/// counted 1,225 tokens for a request estimated at 1,021, 1.2x).
pub const REPORTED_SHARE: f64 = 0.8;
/// The smallest context budget: the rules, a question and one tool result.
pub const MIN_CONTEXT_BUDGET: u64 = 512;

impl SessionConfig {
    /// The context budget in tokens when the model server is not asked: as set, or the default.
    pub fn context_budget(&self) -> u64 {
        self.context_budget_tokens.unwrap_or(DEFAULT_CONTEXT_BUDGET)
    }

    /// The context budget for a model whose server reports `context_length` tokens: as set,
    /// else [`REPORTED_SHARE`] of that length less `max_output_tokens` (the reply shares the
    /// context; at most half of it), else the default.
    pub fn context_budget_for(&self, context_length: Option<u64>, max_output_tokens: u32) -> u64 {
        match (self.context_budget_tokens, context_length) {
            (Some(set), _) => set,
            (None, Some(length)) => {
                let reply = u64::from(max_output_tokens).min(length / 2);
                ((length - reply) as f64 * REPORTED_SHARE) as u64
            }
            (None, None) => DEFAULT_CONTEXT_BUDGET,
        }
    }
}

/// Shown as it was before `log_url` existed when it is unset (a session's configuration
/// fingerprint hashes this, and must not change for SQLite users), and with the URL's password
/// left out when it is set.
impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = f.debug_struct("SessionConfig");
        shown
            .field("log_path", &self.log_path)
            .field("approval_ttl_secs", &self.approval_ttl_secs)
            .field("context_budget_tokens", &self.context_budget())
            .field("compact_at", &self.compact_at);
        let url = self.log_url.trim();
        if !url.is_empty() {
            let target = crate::session::store::postgres::Target::parse(url);
            shown.field("log_url", &target.as_ref().map_or("(not a postgres:// URL)", |t| t.shown()));
            shown.field("lease_secs", &self.lease_secs);
        }
        shown.finish()
    }
}

/// Limits of one run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model calls in one run.
    pub max_steps: u32,
    /// Tool calls honoured in one model reply; the rest are refused.
    pub max_tool_calls_per_step: u32,
    /// Seconds a whole run may take.
    pub max_wall_secs: u64,
    /// `max_tokens` sent with each model call.
    pub max_output_tokens: u32,
    /// Characters of a tool result kept in a trace line.
    pub trace_result_chars: usize,
    /// Bytes of a tool result handed to the model.
    pub max_tool_result_bytes: usize,
}

/// Retrieve-first and answer verification.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Search the docs for every user message before the first model call, and put the best
    /// sections in context (logged as a `search_docs` call the harness made).
    pub first: bool,
    /// Tokens (estimated as bytes / 4) of evidence that search puts in context: the passages
    /// of the best sections that bear on the question, with their headings and sources.
    pub context_tokens: usize,
    /// Sections (of several files) searched for evidence.
    pub sections: usize,
    /// Files of the best sections whose every section is read for evidence.
    pub files: usize,
    /// Sections the evidence may draw from at most.
    pub evidence_items: usize,
    /// Below this share of the question's weight (its words, each by how rare it is in the
    /// docs) found in the evidence, the docs are taken not to cover the question: the answer
    /// says so without asking the model (0: never).
    pub min_coverage: f64,
    /// Below this share of the question's weight that the docs hold anywhere, the same.
    pub min_known: f64,
    /// `max_tokens` of the model call that answers from the evidence: answers are short.
    pub answer_tokens: u32,
    /// Check an answer's citations and quotes against what the turn retrieved; send it back
    /// once, then fall back to a retrieval-only answer.
    pub verify: bool,
    /// Vector search beside the keywords (`[retrieval.embeddings]`): off while `model` is empty.
    pub embeddings: EmbeddingsConfig,
}

/// The embedding model that hybrid search asks for vectors, through the OpenAI-compatible
/// `POST {base_url}/embeddings` (Ollama, llama.cpp's `llama-server --embedding`, vLLM, OpenAI).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// The model's name on that server (`nomic-embed-text`); empty: search by keywords only.
    pub model: String,
    /// The server's base URL, e.g. `http://localhost:11434/v1`; empty: `llm.base_url`.
    pub base_url: String,
    /// Bearer key for that server. Unset: `llm.api_key` when the embeddings come from the model
    /// server (`base_url` empty or the same origin), none otherwise: the model server's key is
    /// never sent to another host.
    pub api_key: Option<String>,
    /// Length of the vectors kept: 0 keeps what the model returns; fewer cuts them (models
    /// trained for it, such as nomic-embed-text v1.5, keep most of their quality cut in half).
    pub dimensions: usize,
    /// Sections sent in one request while the index is embedded.
    pub batch: usize,
    /// Text put before a question, as the model was trained (`search_query: ` for
    /// nomic-embed-text, `query: ` for e5); unset: the prefix of a model known by its name
    /// (`index::embed::known_prefixes`), else none.
    pub query_prefix: Option<String>,
    /// Text put before a section (`search_document: `, `passage: `); unset: as for the question.
    pub passage_prefix: Option<String>,
    /// Characters of a section (its heading path and text) sent at most: the model reads a
    /// few hundred tokens, and a server refuses a longer input.
    pub input_chars: usize,
    /// Seconds one request may take.
    pub timeout_secs: u64,
    /// What the vectors weigh in the fused ranking, from 0 (keywords alone) to 1 (vectors
    /// alone): each list's scores scaled to 0..1, then weighed. 0.5 was best on the dev halves
    /// of both corpora across three models (`cargo bench --bench retrieval`); a strong model
    /// (EmbeddingGemma) did better at 0.7.
    pub weight: f64,
}

impl EmbeddingsConfig {
    /// True when a model is named: search is hybrid.
    pub fn enabled(&self) -> bool {
        !self.model.trim().is_empty()
    }
}

/// What the indexer reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Files larger than this are skipped with a warning.
    pub max_file_bytes: u64,
    /// How many sections a search returns.
    pub top_k: usize,
    /// The index file: empty for `index.db` beside the session log, `memory` for an index
    /// built in memory by every process (nothing written), or a file path.
    pub path: String,
    /// `serve` watches `docs/` for changes (inotify) and updates its index at once.
    pub watch: bool,
    /// `serve` also looks for changes this often, in seconds, for filesystems that send no
    /// events; `docs-agent mcp` looks this often, before a call (0: never).
    pub rescan_secs: u64,
}

/// Where the search index is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexStore {
    /// Built in memory by every process; nothing is written.
    Memory,
    /// Kept in this SQLite file and updated incrementally.
    File(PathBuf),
}

impl Config {
    /// Where sessions are kept: `session.log_url` when set (checked when the configuration was
    /// loaded), else the SQLite file at `session.log_path`.
    pub fn session_location(&self) -> Location {
        let url = self.session.log_url.trim();
        match crate::session::store::postgres::Target::parse(url) {
            Ok(target) if !url.is_empty() => Location::Postgres {
                target: Box::new(target),
                lease: std::time::Duration::from_secs(self.session.lease_secs),
            },
            _ => Location::File(self.session.log_path.clone()),
        }
    }

    /// Where the index is kept: `index.path`, or by default `index.db` beside the session log
    /// (`.docs-agent/index.db`; `/data/index.db` in the image).
    pub fn index_store(&self) -> IndexStore {
        match self.index.path.trim() {
            "memory" => IndexStore::Memory,
            "" => IndexStore::File(
                self.session.log_path.parent().map_or_else(|| PathBuf::from("index.db"), |dir| dir.join("index.db")),
            ),
            path => IndexStore::File(PathBuf::from(path)),
        }
    }
}

/// The names of the environment variables the harness reads, and the keys they set.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("WORKSPACE", "workspace"),
    ("APPROVE", "approve"),
    ("LLM_BASE_URL", "llm.base_url"),
    ("LLM_MODEL", "llm.model"),
    ("LLM_API_KEY", "llm.api_key"),
    ("LLM_PULL", "llm.pull"),
    ("DOCS_AGENT_MAX_STEPS", "limits.max_steps"),
    ("DOCS_AGENT_MAX_WALL_SECS", "limits.max_wall_secs"),
    ("DOCS_AGENT_SESSION_LOG", "session.log_path"),
    ("DOCS_AGENT_SESSION_LOG_URL", "session.log_url"),
    ("DOCS_AGENT_INDEX", "index.path"),
    ("DOCS_AGENT_INDEX_WATCH", "index.watch"),
    ("DOCS_AGENT_INDEX_RESCAN_SECS", "index.rescan_secs"),
    ("DOCS_AGENT_APPROVAL_TTL_SECS", "session.approval_ttl_secs"),
    ("DOCS_AGENT_CONTEXT_BUDGET", "session.context_budget_tokens"),
    ("DOCS_AGENT_RETRIEVE_FIRST", "retrieval.first"),
    ("DOCS_AGENT_VERIFY", "retrieval.verify"),
    ("DOCS_AGENT_CONTEXT_TOKENS", "retrieval.context_tokens"),
    ("DOCS_AGENT_MIN_COVERAGE", "retrieval.min_coverage"),
    ("DOCS_AGENT_MIN_KNOWN", "retrieval.min_known"),
    ("DOCS_AGENT_EMBEDDINGS_MODEL", "retrieval.embeddings.model"),
    ("DOCS_AGENT_EMBEDDINGS_URL", "retrieval.embeddings.base_url"),
    ("DOCS_AGENT_EMBEDDINGS_WEIGHT", "retrieval.embeddings.weight"),
    ("DOCS_AGENT_EMBEDDINGS_API_KEY", "retrieval.embeddings.api_key"),
    ("DOCS_AGENT_LISTEN", "serve.listen"),
    ("DOCS_AGENT_QUESTION_TOKENS", "budget.question_tokens"),
    ("DOCS_AGENT_SESSION_TOKENS", "budget.session_tokens"),
    ("DOCS_AGENT_AGENTS_MD_UNUSABLE", "prompt.agents_md_unusable"),
];

/// The longest an approval request may wait: 30 days.
pub const MAX_APPROVAL_TTL_SECS: u64 = 30 * 24 * 3600;

/// The config file name looked for in the current directory when none is named.
pub const DEFAULT_FILE: &str = "docs-agent.toml";

/// The sources of one load: what the command line and the environment said.
#[derive(Debug, Default)]
pub struct Sources {
    /// `--config FILE`, or `DOCS_AGENT_CONFIG`.
    pub file: Option<PathBuf>,
    /// The process environment (or a test's map): only [`ENV_KEYS`] are read from it.
    pub env: HashMap<String, String>,
    /// Values given as flags, by key (`workspace`, `llm.model`...).
    pub flags: Vec<(&'static str, String)>,
}

/// A configuration problem, written for the person who has to fix it. One message, written for the person who meets it: what failed, on which input,
/// what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl Config {
    /// Merges defaults, the file, the environment and the flags, in rising precedence.
    pub fn load(sources: &Sources) -> Result<Config, ConfigError> {
        Self::merge(sources, true)
    }

    /// [`Config::load`] without any file, not even `./docs-agent.toml`: an eval case's
    /// configuration is its own `env` and nothing from the folder it runs in.
    pub fn load_isolated(sources: &Sources) -> Result<Config, ConfigError> {
        Self::merge(sources, false)
    }

    /// Defaults, then the file (when `files`), the environment and the flags.
    fn merge(sources: &Sources, files: bool) -> Result<Config, ConfigError> {
        let mut builder = defaults()?;
        let named = sources.file.clone().or_else(|| sources.env.get("DOCS_AGENT_CONFIG").map(PathBuf::from));
        match named.filter(|_| files) {
            Some(path) => {
                if !path.is_file() {
                    return Err(ConfigError(format!(
                        "config file {} does not exist; pass an existing file with --config or remove the option",
                        path.display()
                    )));
                }
                builder = builder.add_source(file_source(&path));
            }
            None if files && Path::new(DEFAULT_FILE).is_file() => {
                builder = builder.add_source(file_source(Path::new(DEFAULT_FILE)));
            }
            None => {}
        }
        for (var, key) in ENV_KEYS {
            if let Some(value) = sources.env.get(*var) {
                builder = set(builder, key, value.clone())?;
            }
        }
        for (key, value) in &sources.flags {
            builder = set(builder, key, value.clone())?;
        }
        let merged =
            builder.build().map_err(|e| ConfigError(format!("configuration: {}", without_source(&e.to_string()))))?;
        // A closed set's word is checked first, so its error names the words it takes.
        for (key, var, words) in CLOSED_SETS {
            if let Ok(word) = merged.get_string(key)
                && !words.contains(&word.as_str())
            {
                let words = words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(" or ");
                return Err(ConfigError(format!("{key} ({var}) must be {words}, got `{word}`")));
            }
        }
        let config: Config = merged.try_deserialize().map_err(|e| ConfigError(format!("configuration: {e}")))?;
        config.validate()?;
        // The model server's key is redacted wherever it shows, whatever its shape, and the
        // embedding server's.
        for key in [&config.llm.api_key, &config.retrieval.embeddings.api_key].into_iter().flatten() {
            crate::guard::redact::remember(key);
        }
        // So is the session database's password.
        if let Location::Postgres { target, .. } = config.session_location()
            && let Some(password) = target.config().get_password()
        {
            crate::guard::redact::remember(&String::from_utf8_lossy(password));
        }
        Ok(config)
    }

    /// Cost caps are numbers a price can reach: not negative, and with a price for the model
    /// (a built-in one costs nothing).
    fn validate_budget(&self) -> Result<(), ConfigError> {
        let budget = &self.budget;
        for (key, value) in
            [("budget.question_cost", budget.question_cost), ("budget.session_cost", budget.session_cost)]
        {
            if !(value.is_finite() && value >= 0.0) {
                return Err(ConfigError(format!("{key} must be 0 (no cap) or more, got {value}")));
            }
        }
        for (model, price) in &budget.prices {
            if ![price.input_per_million, price.output_per_million].iter().all(|p| p.is_finite() && *p >= 0.0) {
                return Err(ConfigError(format!("budget.prices.\"{model}\": prices must be 0 or more")));
            }
        }
        let capped = budget.question_cost > 0.0 || budget.session_cost > 0.0;
        let builtin = crate::model::builtin::Builtin::from_name(&self.llm.model).is_some();
        if capped && !builtin && !budget.prices.contains_key(&self.llm.model) {
            return Err(ConfigError(format!(
                "a cost cap (budget.question_cost or budget.session_cost) needs the price of the model `{0}`: \
                 add [budget.prices.\"{0}\"] with input_per_million and output_per_million",
                self.llm.model
            )));
        }
        Ok(())
    }

    /// Checks values the types alone cannot.
    fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("limits.max_steps", self.limits.max_steps as u64),
            ("limits.max_tool_calls_per_step", self.limits.max_tool_calls_per_step as u64),
            ("limits.max_wall_secs", self.limits.max_wall_secs),
            ("limits.max_output_tokens", self.limits.max_output_tokens as u64),
            ("llm.request_timeout_secs", self.llm.request_timeout_secs),
            ("index.top_k", self.index.top_k as u64),
            ("retrieval.context_tokens", self.retrieval.context_tokens as u64),
            ("retrieval.sections", self.retrieval.sections as u64),
            ("retrieval.files", self.retrieval.files as u64),
            ("retrieval.evidence_items", self.retrieval.evidence_items as u64),
            ("retrieval.answer_tokens", u64::from(self.retrieval.answer_tokens)),
            ("retrieval.embeddings.batch", self.retrieval.embeddings.batch as u64),
            ("retrieval.embeddings.input_chars", self.retrieval.embeddings.input_chars as u64),
            ("retrieval.embeddings.timeout_secs", self.retrieval.embeddings.timeout_secs),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!("{key} must be at least 1, got 0")));
            }
        }
        let url = self.session.log_url.trim();
        // The URL, and its CA file (read here, so that a bad one is named before anything starts).
        if !url.is_empty()
            && let Err(e) = crate::session::store::postgres::Target::parse(url).and_then(|t| t.tls().check())
        {
            return Err(ConfigError(format!("session.log_url (DOCS_AGENT_SESSION_LOG_URL): {e}")));
        }
        if !url.is_empty() && !(3..=3600).contains(&self.session.lease_secs) {
            return Err(ConfigError(format!(
                "session.lease_secs must be 3 to 3600 (a replica renews its leases every third of it), got {}",
                self.session.lease_secs
            )));
        }
        if self.limits.max_tool_result_bytes < 256 {
            return Err(ConfigError(format!(
                "limits.max_tool_result_bytes must be at least 256, got {}",
                self.limits.max_tool_result_bytes
            )));
        }
        if !(self.session.compact_at > 0.0 && self.session.compact_at < 1.0) {
            return Err(ConfigError(format!(
                "session.compact_at must be a fraction between 0 and 1 (e.g. 0.75), got {}",
                self.session.compact_at
            )));
        }
        for (key, env, value) in [
            ("retrieval.min_coverage", "DOCS_AGENT_MIN_COVERAGE", self.retrieval.min_coverage),
            ("retrieval.min_known", "DOCS_AGENT_MIN_KNOWN", self.retrieval.min_known),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError(format!(
                    "{key} ({env}) must be a fraction from 0 to 1 (0 turns the check off), got {value}"
                )));
            }
        }
        if self.session.approval_ttl_secs > MAX_APPROVAL_TTL_SECS {
            return Err(ConfigError(format!(
                "session.approval_ttl_secs (DOCS_AGENT_APPROVAL_TTL_SECS) must be at most {MAX_APPROVAL_TTL_SECS} (30 days), got {}",
                self.session.approval_ttl_secs
            )));
        }
        if let Some(budget) = self.session.context_budget_tokens
            && budget < MIN_CONTEXT_BUDGET
        {
            return Err(ConfigError(format!(
                "session.context_budget_tokens (DOCS_AGENT_CONTEXT_BUDGET) must be at least {MIN_CONTEXT_BUDGET}, got {budget}; \
                 leave it unset to use the model's context length"
            )));
        }
        self.validate_budget()?;
        crate::hooks::Hooks::compile(&self.hooks).map_err(ConfigError)?;
        for (i, token) in self.serve.tokens.iter().enumerate() {
            let hex = token.sha256.len() == 64 && token.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex {
                return Err(ConfigError(format!(
                    "serve.tokens[{i}] ({}): sha256 must be 64 hex digits; `docs-agent hash-token` prints it for a token",
                    token.principal
                )));
            }
            if token.principal.trim().is_empty() || token.roles.is_empty() {
                return Err(ConfigError(format!(
                    "serve.tokens[{i}] needs a principal and at least one role (ask, approve, admin)"
                )));
            }
        }
        for (key, value) in [
            ("serve.max_body_bytes", self.serve.max_body_bytes as u64),
            ("serve.request_timeout_secs", self.serve.request_timeout_secs),
            ("serve.max_concurrent", self.serve.max_concurrent as u64),
            ("serve.max_connections", self.serve.max_connections as u64),
            ("serve.header_read_timeout_secs", self.serve.header_read_timeout_secs),
            ("serve.body_read_timeout_secs", self.serve.body_read_timeout_secs),
            ("serve.rate_per_minute", self.serve.rate_per_minute as u64),
            ("serve.max_open_sessions", self.serve.max_open_sessions as u64),
            ("serve.session_idle_secs", self.serve.session_idle_secs),
            ("serve.max_sessions_per_principal", self.serve.max_sessions_per_principal as u64),
            ("serve.sessions_per_minute", u64::from(self.serve.sessions_per_minute)),
            ("serve.max_turns_per_principal", self.serve.max_turns_per_principal as u64),
            ("serve.max_followers_per_principal", self.serve.max_followers_per_principal as u64),
            ("serve.breaker_failures", self.serve.breaker_failures as u64),
        ] {
            if value == 0 {
                return Err(ConfigError(format!("{key} must be at least 1, got 0")));
            }
        }
        let embeddings = &self.retrieval.embeddings;
        if !(0.0..=1.0).contains(&embeddings.weight) {
            return Err(ConfigError(format!(
                "retrieval.embeddings.weight (DOCS_AGENT_EMBEDDINGS_WEIGHT) must be a fraction from 0 (keywords alone) \
                 to 1 (vectors alone), got {}",
                embeddings.weight
            )));
        }
        let url = embeddings.base_url.trim();
        if embeddings.enabled() && !url.is_empty() && !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError(format!(
                "retrieval.embeddings.base_url (DOCS_AGENT_EMBEDDINGS_URL) must start with http:// or https://, got `{url}`; \
                 leave it empty to use llm.base_url"
            )));
        }
        if self.llm.model.trim().is_empty() {
            return Err(ConfigError("llm.model (LLM_MODEL) must not be empty".into()));
        }
        let builtin = crate::model::builtin::Builtin::from_name(&self.llm.model).is_some();
        let http = self.llm.base_url.starts_with("http://") || self.llm.base_url.starts_with("https://");
        if !(builtin || http) {
            return Err(ConfigError(format!(
                "llm.base_url (LLM_BASE_URL) must start with http:// or https://, got `{}`",
                self.llm.base_url
            )));
        }
        Ok(())
    }

    /// The server asked for embeddings: `retrieval.embeddings.base_url`, or the model's.
    pub fn embeddings_base_url(&self) -> &str {
        match self.retrieval.embeddings.base_url.trim() {
            "" => &self.llm.base_url,
            url => url,
        }
    }

    /// The key sent to the embedding server: its own, or the model server's when it is the
    /// model server (the same scheme, host and port), else none.
    pub fn embeddings_api_key(&self) -> Option<&str> {
        let embeddings = &self.retrieval.embeddings;
        if let Some(key) = embeddings.api_key.as_deref().filter(|k| !k.is_empty()) {
            return Some(key);
        }
        let origin = |url: &str| reqwest::Url::parse(url).ok().map(|u| u.origin());
        let same =
            embeddings.base_url.trim().is_empty() || origin(embeddings.base_url.trim()) == origin(&self.llm.base_url);
        self.llm.api_key.as_deref().filter(|k| same && !k.is_empty())
    }

    /// The embedding model as a model to pull (`llm.pull`): the embeddings' server and name,
    /// the model server's key and timeouts. None when search is by keywords only.
    pub fn embeddings_llm(&self) -> Option<crate::model::LlmConfig> {
        self.retrieval.embeddings.enabled().then(|| crate::model::LlmConfig {
            base_url: self.embeddings_base_url().to_string(),
            model: self.retrieval.embeddings.model.trim().to_string(),
            api_key: self.embeddings_api_key().map(str::to_string),
            ..self.llm.clone()
        })
    }

    /// True when writes are approved without asking.
    pub fn approve_all(&self) -> bool {
        self.approve == "yes"
    }
}

type Builder = config::ConfigBuilder<config::builder::DefaultState>;

/// A parse error without the lines of the file it quotes (`3 | api_key = "…`): the line may
/// hold a secret no rule can recognise (an unterminated value), and the line and column say
/// where to look.
fn without_source(error: &str) -> String {
    error
        .lines()
        .filter(|line| {
            let rest = line.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
            !rest.starts_with('|')
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn file_source(path: &Path) -> config::File<config::FileSourceFile, config::FileFormat> {
    config::File::from(path).format(config::FileFormat::Toml).required(true)
}

/// Settings that take one word of a closed set: the key, its environment variable, the words.
const CLOSED_SETS: &[(&str, &str, &[&str])] = &[
    ("llm.pull", "LLM_PULL", &["missing", "never"]),
    ("prompt.agents_md_unusable", "DOCS_AGENT_AGENTS_MD_UNUSABLE", &["warn", "error"]),
];

fn set(builder: Builder, key: &str, value: String) -> Result<Builder, ConfigError> {
    builder.set_override(key, value).map_err(|e| ConfigError(format!("configuration key {key}: {e}")))
}

fn defaults() -> Result<Builder, ConfigError> {
    let workspace = if Path::new("./workspace").is_dir() { "./workspace" } else { "/workspace" };
    let pairs: Vec<(&str, config::Value)> = vec![
        ("workspace", workspace.into()),
        ("approve", "".into()),
        ("llm.base_url", "http://localhost:11434/v1".into()),
        ("llm.model", "llama3.2:3b".into()),
        ("llm.request_timeout_secs", 120_i64.into()),
        ("llm.retries", 3_i64.into()),
        ("llm.temperature", 0.0_f64.into()),
        ("llm.pull", "missing".into()),
        ("limits.max_steps", 8_i64.into()),
        ("limits.max_tool_calls_per_step", 4_i64.into()),
        ("limits.max_wall_secs", 300_i64.into()),
        ("limits.max_output_tokens", 512_i64.into()),
        ("limits.trace_result_chars", 200_i64.into()),
        ("limits.max_tool_result_bytes", 12_000_i64.into()),
        ("index.max_file_bytes", (4_i64 * 1024 * 1024).into()),
        ("index.top_k", 5_i64.into()),
        ("index.path", "".into()),
        ("index.watch", true.into()),
        ("index.rescan_secs", 10_i64.into()),
        ("retrieval.first", true.into()),
        ("retrieval.context_tokens", 300_i64.into()),
        ("retrieval.sections", 8_i64.into()),
        ("retrieval.files", 3_i64.into()),
        ("retrieval.evidence_items", 5_i64.into()),
        ("retrieval.min_coverage", 0.2_f64.into()),
        ("retrieval.min_known", 0.6_f64.into()),
        ("retrieval.answer_tokens", 200_i64.into()),
        ("retrieval.verify", true.into()),
        ("retrieval.embeddings.model", "".into()),
        ("retrieval.embeddings.base_url", "".into()),
        ("retrieval.embeddings.dimensions", 0_i64.into()),
        ("retrieval.embeddings.batch", 32_i64.into()),
        ("retrieval.embeddings.input_chars", 1_000_i64.into()),
        ("retrieval.embeddings.timeout_secs", 60_i64.into()),
        ("retrieval.embeddings.weight", 0.5_f64.into()),
        ("allowed_link_hosts", Vec::<String>::new().into()),
        ("session.log_path", ".docs-agent/sessions.db".into()),
        ("session.log_url", "".into()),
        ("session.lease_secs", 15_i64.into()),
        ("session.approval_ttl_secs", 3600_i64.into()),
        ("session.compact_at", 0.75_f64.into()),
        ("serve.listen", "127.0.0.1:8080".into()),
        ("budget.question_tokens", 0_i64.into()),
        ("budget.session_tokens", 0_i64.into()),
        ("budget.question_cost", 0.0_f64.into()),
        ("budget.session_cost", 0.0_f64.into()),
        ("serve.tokens", Vec::<config::Value>::new().into()),
        ("serve.max_body_bytes", 65_536_i64.into()),
        ("serve.request_timeout_secs", 120_i64.into()),
        ("serve.max_concurrent", 64_i64.into()),
        ("serve.max_connections", 512_i64.into()),
        ("serve.header_read_timeout_secs", 10_i64.into()),
        ("serve.body_read_timeout_secs", 10_i64.into()),
        ("serve.rate_per_minute", 600_i64.into()),
        ("serve.max_open_sessions", 1000_i64.into()),
        ("serve.session_idle_secs", 1_800_i64.into()),
        ("serve.max_sessions_per_principal", 32_i64.into()),
        ("serve.sessions_per_minute", 10_i64.into()),
        ("serve.max_turns_per_principal", 4_i64.into()),
        ("serve.max_followers_per_principal", 16_i64.into()),
        ("serve.allow_self_approval", false.into()),
        ("serve.breaker_failures", 3_i64.into()),
        ("serve.breaker_cooldown_secs", 30_i64.into()),
        ("prompt.agents_md_max_bytes", 65_536_i64.into()),
        ("prompt.agents_md_unusable", "warn".into()),
        ("prompt.skills_catalog_tokens", 2_000_i64.into()),
    ];
    let mut builder = config::Config::builder();
    for (key, value) in pairs {
        builder = builder.set_default(key, value).map_err(|e| ConfigError(format!("default for {key}: {e}")))?;
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::SessionConfig;

    fn session(log_url: &str) -> SessionConfig {
        SessionConfig {
            log_path: ".docs-agent/sessions.db".into(),
            log_url: log_url.into(),
            lease_secs: 15,
            approval_ttl_secs: 3600,
            context_budget_tokens: None,
            compact_at: 0.75,
        }
    }

    /// Unset, `log_url` leaves the shown configuration (and so the sessions' fingerprints) as it
    /// was; set, it is shown without its password.
    #[test]
    fn the_session_config_is_shown_as_before_and_never_with_a_password() {
        assert_eq!(
            format!("{:?}", session("")),
            "SessionConfig { log_path: \".docs-agent/sessions.db\", approval_ttl_secs: 3600, \
             context_budget_tokens: 8192, compact_at: 0.75 }"
        );
        let shown = format!("{:?}", session("postgres://agent:pw-9f8e7d@db:5432/s"));
        assert!(shown.contains("postgres://agent@db:5432/s") && !shown.contains("pw-9f8e7d"), "{shown}");
    }
}
