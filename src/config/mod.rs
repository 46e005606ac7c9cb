//! Configuration: read once at start-up into [`Config`] and passed down; nothing else reads the
//! environment. Precedence: command-line flags > environment > `docs-agent.toml` > defaults.
//! An unknown key or a bad value is an error that names it.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;

mod collections;
pub mod hooks;
mod llm;
mod load;
mod signin;
mod sources;
pub use collections::{ALL as ALL_COLLECTIONS, CollectionConfig, DEFAULT as DEFAULT_COLLECTION};
pub use load::keys;
pub use signin::MIN_COOKIE_SECRET;
pub use sources::{MIN_EVERY_SECS, SourceConfig, SourceSecrets};
mod validate;

pub use llm::{LlmConfig, Pull};

/// Everything the harness needs to know, after all sources are merged.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The workspace folder: `docs/`, `skills/`, `AGENTS.md`, `notes/`. With `docs` alone, the
    /// docs folder itself.
    pub workspace: PathBuf,
    /// A plain folder of documents to answer from in place of the workspace's `docs/` (`--docs`,
    /// `DOCS_AGENT_DOCS`; empty: the workspace's own).
    #[serde(default)]
    pub docs: Option<PathBuf>,
    /// True when `docs` was given and no workspace was: the docs folder is the whole
    /// workspace, without AGENTS.md, skills or notes (set by loading, never read from a source).
    #[serde(skip)]
    pub docs_alone: bool,
    /// Where this workspace's state is kept (its index; the command line's and `serve`'s
    /// session logs, unless `session.log_path` names one): `DOCS_AGENT_STATE_DIR`, or a folder of
    /// its own per workspace in the user's data folder (`$XDG_DATA_HOME/docs-agent/NAME-HASH`,
    /// `~/.local/share/...` without it; `~/Library/Application Support/...` on macOS), or
    /// `./.docs-agent` when no home is known.
    pub state_dir: PathBuf,
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
    pub hooks: hooks::HooksConfig,
    /// What the system prompt holds besides the harness's rules: AGENTS.md and the skills
    /// catalog, each within a limit.
    pub prompt: PromptConfig,
    /// Where the docs are published, so every citation carries its public URL.
    pub site: SiteConfig,
    /// Git repositories the docs come from (`[[sources]]`), checked out into the state folder
    /// and kept in sync; empty: the docs are the folder on disk.
    #[serde(default)]
    pub sources: Vec<SourceConfig>,
    /// Several named sets of docs served at once (`[[collections]]`), each a workspace of its
    /// own; empty: the workspace is the one collection, `default`.
    #[serde(default)]
    pub collections: Vec<CollectionConfig>,
    /// The commit of the git source whose tree `docs` is (set by the command line once it knows
    /// the tree; never read from a file): answers record it.
    #[serde(skip)]
    pub docs_revision: Option<String>,
}

/// The published docs site: a citation of `docs/guides/refunds.md#window` also carries its
/// page's URL on the site, `https://docs.acme.com/guides/refunds/#window` for mkdocs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    /// The URL the docs folder is published at (`https://docs.acme.com/`; Docusaurus: with
    /// its docs route, `https://acme.com/docs/`); empty: citations carry no URL.
    pub base_url: String,
    /// What built the site, which decides each page's path and each heading's anchor.
    pub generator: Generator,
}

impl SiteConfig {
    /// True when a base URL is set: citations carry their URL.
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty()
    }
}

/// The site generators whose page paths and heading anchors are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Generator {
    /// The files as they are (a file server, a repository's web view): `guides/refunds.md`,
    /// GitHub's anchors.
    Files,
    /// MkDocs (and Material for MkDocs) with directory URLs: `guides/refunds/`, Python-Markdown's
    /// anchors.
    Mkdocs,
    /// Docusaurus: `guides/refunds`, number prefixes and `index` pages as Docusaurus reads
    /// them, a front matter `slug` or `id`; GitHub's anchors.
    Docusaurus,
    /// mdBook: `guides/refunds.html`, `README.md` as `index.html`; mdBook's anchors.
    Mdbook,
}

impl Generator {
    /// The name used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Generator::Files => "files",
            Generator::Mkdocs => "mkdocs",
            Generator::Docusaurus => "docusaurus",
            Generator::Mdbook => "mdbook",
        }
    }
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
    /// are refused (429) until one is closed or idle. Unset: [`ServeConfig::shares`].
    pub max_sessions_per_principal: Option<usize>,
    /// Sessions one principal may start per minute (also the burst).
    pub sessions_per_minute: u32,
    /// Turns (session messages and one-shot questions) one principal may run at once. Unset:
    /// [`ServeConfig::shares`].
    pub max_turns_per_principal: Option<usize>,
    /// Streams following sessions that one principal may hold open at once. Unset:
    /// [`ServeConfig::shares`].
    pub max_followers_per_principal: Option<usize>,
    /// May an approver decide a write asked for in their own session?
    pub allow_self_approval: bool,
    /// The page suggests a question from the session log only once this many different people
    /// asked it in the same words (and the docs answered it); 0: only topics from the docs'
    /// headings, never people's questions.
    pub suggest_asked_by: usize,
    /// Model failures in a row that open the circuit breaker (answers become retrieval-only).
    pub breaker_failures: u32,
    /// Seconds the breaker stays open before one request tries the model again.
    pub breaker_cooldown_secs: u64,
    /// Sign-in with the company's OpenID Connect provider (the page's "Sign in" button); off
    /// while `issuer` is empty.
    pub oidc: OidcConfig,
    /// An authenticating proxy in front (oauth2-proxy): who calls, from its headers; off while
    /// `trusted` is empty.
    pub proxy: ProxyConfig,
    /// The roles that the groups of a person signed in through OIDC or the proxy give.
    pub groups: GroupRoles,
    /// The key that encrypts and authenticates sign-in cookies (`DOCS_AGENT_COOKIE_SECRET`), at
    /// least 32 bytes; replicas share it. Empty: a random key per process (a restart signs
    /// everyone out).
    pub cookie_secret: String,
}

/// What one principal may hold at once, each share with the words that name where it comes
/// from (for the refusal past it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrincipalShares {
    /// Open sessions.
    pub sessions: Share,
    /// Turns running.
    pub turns: Share,
    /// Streams following sessions.
    pub followers: Share,
}

/// One principal's share of one pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// How many.
    pub max: usize,
    /// The setting it comes from, as a refusal names it.
    pub setting: &'static str,
}

impl ServeConfig {
    /// Streams following sessions at once, for everyone: 4 × `max_concurrent`.
    pub fn max_followers(&self) -> usize {
        self.max_concurrent.saturating_mul(4)
    }

    /// What one principal may hold. A share the operator set is theirs to set; an unset one is
    /// its default (32 sessions, 4 turns, 16 followers) but never more than half of the pool
    /// it is drawn from (`max_open_sessions`, `max_concurrent`, 4 × `max_concurrent`), so that
    /// with lowered global limits one principal at full speed still leaves the other half to
    /// everyone else.
    pub fn shares(&self) -> PrincipalShares {
        let share =
            |set: Option<usize>, setting: &'static str, default: usize, pool: usize, half: &'static str| match set {
                Some(max) => Share { max, setting },
                None if default <= pool / 2 => Share { max: default, setting },
                None => Share { max: (pool / 2).max(1), setting: half },
            };
        PrincipalShares {
            sessions: share(
                self.max_sessions_per_principal,
                "serve.max_sessions_per_principal",
                32,
                self.max_open_sessions,
                "half of serve.max_open_sessions; serve.max_sessions_per_principal sets it",
            ),
            turns: share(
                self.max_turns_per_principal,
                "serve.max_turns_per_principal",
                4,
                self.max_concurrent,
                "half of serve.max_concurrent; serve.max_turns_per_principal sets it",
            ),
            followers: share(
                self.max_followers_per_principal,
                "serve.max_followers_per_principal",
                16,
                self.max_followers(),
                "half of 4 × serve.max_concurrent; serve.max_followers_per_principal sets it",
            ),
        }
    }
}

/// `[serve.oidc]`: the OpenID provider people sign in with (authorization code with PKCE).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer URL, as its discovery document names it
    /// (`https://login.acme.com/realms/support`); empty: no OIDC sign-in.
    pub issuer: String,
    /// This service's client id at the provider; ID tokens must name it as their audience.
    pub client_id: String,
    /// The client's secret (`DOCS_AGENT_OIDC_CLIENT_SECRET`; keep it out of the file); empty: a
    /// public client, PKCE alone.
    pub client_secret: String,
    /// The URL the provider sends people back to: this service's public address and
    /// `/auth/callback`, registered at the provider as is. An `https` one makes the cookies
    /// `Secure`.
    pub redirect_url: String,
    /// Scopes asked for; `openid` is always among them.
    pub scopes: Vec<String>,
    /// The claim whose value names the person (their sessions belong to it): `email`,
    /// `preferred_username`, `sub` or another claim holding a string.
    pub name_claim: String,
    /// The claim listing the person's groups (a list of strings, or one string), read from
    /// the ID token, else from the provider's userinfo.
    pub groups_claim: String,
    /// Hours a sign-in lasts; then the page asks to sign in again.
    pub session_hours: u64,
}

impl OidcConfig {
    /// True when an issuer is set.
    pub fn enabled(&self) -> bool {
        !self.issuer.trim().is_empty()
    }
}

/// `[serve.proxy]`: identity from an authenticating proxy's headers, believed only from the
/// proxy's own addresses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// The addresses the proxy connects from (`10.0.0.5`, `10.0.0.0/24`); a request from any
    /// other address that carries the identity header is refused. Empty: no proxy sign-in.
    pub trusted: Vec<String>,
    /// The header naming the person (oauth2-proxy: `X-Forwarded-Email`, or
    /// `X-Auth-Request-Email` behind nginx's auth_request).
    pub user_header: String,
    /// The header listing their groups, comma-separated (oauth2-proxy: `X-Forwarded-Groups`).
    pub groups_header: String,
}

impl ProxyConfig {
    /// True when proxy addresses are set.
    pub fn enabled(&self) -> bool {
        !self.trusted.is_empty()
    }
}

/// `[serve.groups]`: for each role, the groups that give it (`ask = ["support"]`); `*` gives it
/// to everyone who signs in. A person with none of these groups is refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRoles {
    /// Groups whose members ask, search and hold sessions.
    pub ask: Vec<String>,
    /// Groups whose members decide pending writes.
    pub approve: Vec<String>,
    /// Groups whose members read metrics and the gaps report (and ask).
    pub admin: Vec<String>,
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
    /// The collections it reads (`*`: all); with `[[collections]]` each token names its own,
    /// without them it stays empty.
    #[serde(default)]
    pub collections: Vec<String>,
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
    /// The SQLite session log (its folder is created). Unset: `sessions.db` in the state folder
    /// (`serve` keeps its own there, `serve-sessions.db`). In the container: a file on the
    /// `/data` volume.
    pub log_path: PathBuf,
    /// True when `log_path` was not set, so it is the state folder's (set by loading).
    #[serde(skip)]
    pub log_defaulted: bool,
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

/// Never with `log_url`, which may hold a password: only whether it is set. (A session's
/// configuration fingerprint shows the URL without its password: `session::fingerprint`.)
impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("log_path", &self.log_path)
            .field("log_url", &if self.log_url.trim().is_empty() { "(unset)" } else { "(set)" })
            .field("lease_secs", &self.lease_secs)
            .field("approval_ttl_secs", &self.approval_ttl_secs)
            .field("context_budget_tokens", &self.context_budget_tokens)
            .field("compact_at", &self.compact_at)
            .finish()
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
    /// Below this share of the question's weight that the docs hold anywhere, the same, when a
    /// word the docs never use is written as a name (`index::query::looks_named`).
    pub min_known: f64,
    /// `max_tokens` of the model call that answers from the evidence: answers are short.
    pub answer_tokens: u32,
    /// Check an answer's citations and quotes against what the turn retrieved; send it back
    /// once, then fall back to a retrieval-only answer.
    pub verify: bool,
    /// Vector search beside the keywords (`[retrieval.embeddings]`): off while `model` is empty.
    pub embeddings: EmbeddingsConfig,
    /// A cross-encoder that scores the best sections against the question before evidence is
    /// chosen (`[retrieval.reranker]`): off while `base_url` is empty.
    pub reranker: RerankerConfig,
}

/// The reranker search asks, through the `POST {base_url}/rerank` that llama.cpp
/// (`llama-server --reranking`), Hugging Face TEI, vLLM, Jina and Cohere serve: it reads the
/// question with each candidate section and says how relevant that section is.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RerankerConfig {
    /// The server's base URL, e.g. `http://reranker:8080/v1`; empty: no reranking.
    pub base_url: String,
    /// The model's name on that server (llama.cpp and TEI serve one model and ignore it).
    pub model: String,
    /// Bearer key for that server; never the model server's.
    pub api_key: Option<String>,
    /// Sections of the search's best that are scored: the more, the likelier the one that
    /// answers is among them, and the longer a question waits.
    pub candidates: usize,
    /// Characters of a section (its heading path, then its text) sent at most: a question and
    /// a section are read as one pair of at most 512 tokens by the usual cross-encoders.
    pub input_chars: usize,
    /// Milliseconds the scores may take; past it, the search keeps its own order.
    pub timeout_ms: u64,
    /// What the server's scores are: logits (llama.cpp, TEI's raw scores), probabilities
    /// (Cohere, Jina), or `auto`: logits once a score falls outside 0..1 or TEI's shape is used.
    pub scores: RerankScores,
    /// Below this relevance (0 to 1) of the best section, the docs are taken not to cover the
    /// question, whatever words they share with it (0: never).
    pub min_relevance: f64,
    /// At or above this relevance of the best section, the docs are taken to cover the
    /// question even when few of its words are theirs (a question in other words; 1: never).
    pub covers_at: f64,
}

/// What a reranker's scores are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankScores {
    /// Logits once one score falls outside 0..1 (and from TEI, asked for raw scores);
    /// probabilities until then.
    Auto,
    /// Logits: a relevance is their sigmoid.
    Logits,
    /// Probabilities from 0 to 1, taken as they are.
    Probabilities,
}

impl RerankerConfig {
    /// True when a server is named: search results are reranked.
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty()
    }
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
    /// The most text the index reads from one docs folder, all documents together: a
    /// document that would take it over is skipped with a warning.
    pub max_total_bytes: u64,
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
    /// Longest one PDF may take to read, in seconds (in its worker process); one that takes
    /// longer is left out with a warning. 1 to 600.
    pub pdf_seconds: u64,
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
    /// The folder the documents are read from: the docs folder given (alone, the workspace
    /// itself), else the workspace's `docs/`.
    pub fn docs_path(&self) -> PathBuf {
        match &self.docs {
            Some(docs) => docs.clone(),
            None => self.workspace.join("docs"),
        }
    }

    /// The session log `serve` keeps: its own in the state folder (`serve-sessions.db`), apart
    /// from the command line's, unless `session.log_path` names one for both.
    pub fn serve_log_path(&self) -> PathBuf {
        match self.session.log_defaulted {
            true => self.state_dir.join("serve-sessions.db"),
            false => self.session.log_path.clone(),
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

/// The environment variables that say where the user's data folder is (read from
/// [`Sources::env`] like the others; they set no key).
pub const DATA_HOME_VARS: [&str; 2] = ["XDG_DATA_HOME", "HOME"];

/// The names of the environment variables the harness reads, and the keys they set.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("WORKSPACE", "workspace"),
    ("DOCS_AGENT_DOCS", "docs"),
    ("DOCS_AGENT_STATE_DIR", "state_dir"),
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
    ("DOCS_AGENT_PDF_SECONDS", "index.pdf_seconds"),
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
    ("DOCS_AGENT_RERANKER_URL", "retrieval.reranker.base_url"),
    ("DOCS_AGENT_RERANKER_MODEL", "retrieval.reranker.model"),
    ("DOCS_AGENT_RERANKER_API_KEY", "retrieval.reranker.api_key"),
    ("DOCS_AGENT_RERANKER_CANDIDATES", "retrieval.reranker.candidates"),
    ("DOCS_AGENT_RERANKER_TIMEOUT_MS", "retrieval.reranker.timeout_ms"),
    ("DOCS_AGENT_RERANKER_SCORES", "retrieval.reranker.scores"),
    ("DOCS_AGENT_LISTEN", "serve.listen"),
    ("DOCS_AGENT_QUESTION_TOKENS", "budget.question_tokens"),
    ("DOCS_AGENT_SESSION_TOKENS", "budget.session_tokens"),
    ("DOCS_AGENT_AGENTS_MD_UNUSABLE", "prompt.agents_md_unusable"),
    ("DOCS_AGENT_SITE_URL", "site.base_url"),
    ("DOCS_AGENT_SITE_GENERATOR", "site.generator"),
    ("DOCS_AGENT_OIDC_ISSUER", "serve.oidc.issuer"),
    ("DOCS_AGENT_OIDC_CLIENT_ID", "serve.oidc.client_id"),
    ("DOCS_AGENT_OIDC_CLIENT_SECRET", "serve.oidc.client_secret"),
    ("DOCS_AGENT_OIDC_REDIRECT_URL", "serve.oidc.redirect_url"),
    ("DOCS_AGENT_COOKIE_SECRET", "serve.cookie_secret"),
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
    /// The process environment (or a test's map): only [`ENV_KEYS`] and [`DATA_HOME_VARS`] are
    /// read from it.
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
    pub fn embeddings_llm(&self) -> Option<LlmConfig> {
        self.retrieval.embeddings.enabled().then(|| LlmConfig {
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

#[cfg(test)]
impl SessionConfig {
    /// The defaults' session settings with `log_url`, for tests here and in `session`.
    pub(crate) fn sample(log_url: &str) -> SessionConfig {
        SessionConfig {
            log_path: ".docs-agent/sessions.db".into(),
            log_defaulted: false,
            log_url: log_url.into(),
            lease_secs: 15,
            approval_ttl_secs: 3600,
            context_budget_tokens: None,
            compact_at: 0.75,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Config, SessionConfig, Sources};

    /// `serve.suggest_asked_by = 1` would offer anyone's question to everyone: refused, naming
    /// the setting; 0 and 2 are fine.
    #[test]
    fn suggesting_one_persons_questions_is_refused() {
        let load = |n: &str| {
            let flags = vec![("workspace", ".".to_string()), ("serve.suggest_asked_by", n.to_string())];
            Config::load(&Sources { file: None, env: Default::default(), flags })
        };
        let refused = load("1").expect_err("1 is refused");
        assert!(refused.0.contains("serve.suggest_asked_by") && refused.0.contains("at least 2"), "{refused}");
        for fine in ["0", "2", "3"] {
            assert!(load(fine).is_ok(), "{fine}");
        }
    }

    /// A per-principal share left unset is its default, or half of a lowered pool; one the
    /// operator set is theirs, even the whole pool (one bench user); 0 is refused.
    #[test]
    fn unset_shares_are_at_most_half_of_their_pool() {
        let load = |extra: &[(&'static str, &str)]| {
            let mut flags = vec![("workspace", ".".to_string())];
            flags.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
            Config::load(&Sources { file: None, env: Default::default(), flags })
        };
        let max = |config: &Config| {
            let shares = config.serve.shares();
            (shares.sessions.max, shares.turns.max, shares.followers.max)
        };
        assert_eq!(max(&load(&[]).expect("defaults")), (32, 4, 16));
        let lowered = load(&[("serve.max_open_sessions", "20"), ("serve.max_concurrent", "4")]).expect("lowered");
        assert_eq!(max(&lowered), (10, 2, 8));
        assert!(lowered.serve.shares().sessions.setting.starts_with("half of serve.max_open_sessions"));
        let tiny = load(&[("serve.max_open_sessions", "1"), ("serve.max_concurrent", "1")]).expect("tiny");
        assert_eq!(max(&tiny), (1, 1, 2), "a share is never 0");
        let set = load(&[
            ("serve.max_concurrent", "4"),
            ("serve.max_followers_per_principal", "16"),
            ("serve.max_turns_per_principal", "3"),
        ])
        .expect("set");
        assert_eq!((max(&set).1, max(&set).2), (3, 16));
        assert_eq!(set.serve.shares().followers.setting, "serve.max_followers_per_principal");
        let zero = load(&[("serve.max_turns_per_principal", "0")]).expect_err("0 is refused");
        assert!(zero.0.contains("serve.max_turns_per_principal"), "{zero}");
    }

    /// The time each PDF may take is 1 to 600 s, and a refusal names the setting.
    #[test]
    fn the_time_per_pdf_is_bounded() {
        let load = |n: &str| {
            let flags = vec![("workspace", ".".to_string()), ("index.pdf_seconds", n.to_string())];
            Config::load(&Sources { file: None, env: Default::default(), flags })
        };
        for refused in ["0", "601"] {
            let e = load(refused).expect_err(refused);
            assert!(e.0.contains("index.pdf_seconds"), "{e}");
        }
        assert_eq!(load("600").expect("600").index.pdf_seconds, 600);
    }

    /// The session settings' debug form (in a log, a panic) never holds `log_url`, which may
    /// hold a password: only whether it is set.
    #[test]
    fn the_session_settings_are_never_shown_with_their_url() {
        let session = SessionConfig::sample;
        let shown = format!("{:?}", session("postgres://agent:pw-9f8e7d@db:5432/s"));
        assert!(
            shown.contains("log_url: \"(set)\"") && !shown.contains("pw-9f8e7d") && !shown.contains("db:5432"),
            "{shown}"
        );
        assert!(format!("{:?}", session("")).contains("log_url: \"(unset)\""));
    }
}
