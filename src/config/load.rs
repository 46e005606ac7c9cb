//! Loading: defaults, then the file, the environment and the flags, in rising precedence; then
//! the values checked (`validate`). What a subsystem makes of its part (a store location,
//! compiled hook rules) is checked by that subsystem, through `service::settings::load`.

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, DEFAULT_FILE, ENV_KEYS, Sources};

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
        let mut config: Config = merged.try_deserialize().map_err(|e| ConfigError(format!("configuration: {e}")))?;
        resolve_places(&mut config, &sources.env);
        config.validate()?;
        Ok(config)
    }
}

type Builder = config::ConfigBuilder<config::builder::DefaultState>;

/// What follows from the merged settings where they were left empty: the workspace (named,
/// the sample, or a docs folder alone), the state folder and the session log in it.
fn resolve_places(config: &mut Config, env: &std::collections::HashMap<String, String>) {
    config.docs = config.docs.take().filter(|d| !d.as_os_str().is_empty());
    let named = !config.workspace.as_os_str().is_empty();
    // No workspace named: the sample beside the current folder, or the image's.
    let workspace = match named {
        true => config.workspace.clone(),
        false if Path::new("./workspace").is_dir() => PathBuf::from("./workspace"),
        false => PathBuf::from("/workspace"),
    };
    // The workspace's own docs/ given as the docs folder (compose mounts the sample's
    // there unless DOCS_DIR names another) is that workspace, read whole.
    if config.docs.as_deref().is_some_and(|docs| same_folder(docs, &workspace.join("docs"))) {
        config.docs = None;
    }
    // Else a docs folder given with no workspace named is the whole workspace.
    config.docs_alone = !named && config.docs.is_some();
    config.workspace = match (&config.docs, config.docs_alone) {
        (Some(docs), true) => docs.clone(),
        _ => workspace,
    };
    // Docs from a git source with no workspace named: a docs folder alone, whose place (for the
    // index and the sessions) is the source's folder in the state folder, the same whatever
    // commit is served; `git::serve_from` points `docs` at the tree.
    // Named by the source's name and repository: changing its branch or folder keeps the
    // sessions and the index (which a changed tree updates).
    let sourced = config
        .sources
        .first()
        .filter(|_| !named && config.collections.is_empty())
        .map(|s| (s.name.clone(), s.git.trim().to_string()));
    if config.state_dir.as_os_str().is_empty() {
        let name = match &sourced {
            Some((name, origin)) => source_state_name(name, origin),
            None => state_name(&config.workspace, config.docs.as_deref()),
        };
        config.state_dir = match data_home(env) {
            Some(home) => home.join("docs-agent").join(name),
            None => PathBuf::from(".docs-agent"),
        };
    }
    if let Some((name, _)) = sourced {
        config.docs_alone = true;
        config.workspace = config.state_dir.join("sources").join(name);
    }
    if config.session.log_path.as_os_str().is_empty() {
        config.session.log_path = config.state_dir.join("sessions.db");
        config.session.log_defaulted = true;
    }
}

/// The user's data folder, from the environment: `$XDG_DATA_HOME` (when absolute, as the XDG
/// base directory rules say), else `$HOME/.local/share` (`$HOME/Library/Application Support`
/// on macOS); `None` without a home. Read from the sources, not the process, so a test's map
/// decides it; a crate for this would read the process environment and fall back to the
/// password database, which a test cannot keep apart.
fn data_home(env: &std::collections::HashMap<String, String>) -> Option<PathBuf> {
    let set = |var: &str| env.get(var).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = set("XDG_DATA_HOME").filter(|_| !cfg!(target_os = "macos")) {
        return Some(xdg);
    }
    let home = set("HOME")?;
    Some(if cfg!(target_os = "macos") { home.join("Library/Application Support") } else { home.join(".local/share") })
}

/// The state folder's name for a workspace (and a docs folder given beside it): its folder's
/// name, readable, then 8 hex digits of the SHA-256 of its real path, so two workspaces of one
/// name never share an index or a log.
fn state_name(workspace: &Path, docs: Option<&Path>) -> String {
    use sha2::{Digest, Sha256};
    let real =
        |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or(p.to_path_buf()));
    let workspace = real(workspace);
    let mut hasher = Sha256::new();
    hasher.update(workspace.as_os_str().as_encoded_bytes());
    if let Some(docs) = docs {
        hasher.update(b"\0");
        hasher.update(real(docs).as_os_str().as_encoded_bytes());
    }
    let hash: String = hasher.finalize().iter().take(4).map(|b| format!("{b:02x}")).collect();
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '-' })
        .take(40)
        .collect();
    let name = name.trim_matches(|c| c == '.' || c == '-');
    if name.is_empty() { format!("workspace-{hash}") } else { format!("{name}-{hash}") }
}

/// The state folder's name for the docs of a git source: its name and a hash of where it is.
fn source_state_name(name: &str, origin: &str) -> String {
    use sha2::{Digest, Sha256};
    let hash: String = Sha256::digest(origin.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("source-{name}-{hash}")
}

/// True when `a` and `b` are one folder (one device and inode: the same folder reached by two
/// paths or two bind mounts).
fn same_folder(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.is_dir() && a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

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
    ("site.generator", "DOCS_AGENT_SITE_GENERATOR", &["files", "mkdocs", "docusaurus", "mdbook"]),
    ("retrieval.reranker.scores", "DOCS_AGENT_RERANKER_SCORES", &["auto", "logits", "probabilities"]),
];

fn set(builder: Builder, key: &str, value: String) -> Result<Builder, ConfigError> {
    builder.set_override(key, value).map_err(|e| ConfigError(format!("configuration key {key}: {e}")))
}

fn defaults() -> Result<Builder, ConfigError> {
    let mut builder = config::Config::builder();
    for (key, value) in default_pairs() {
        builder = builder.set_default(key, value).map_err(|e| ConfigError(format!("default for {key}: {e}")))?;
    }
    Ok(builder)
}

/// Every setting's key (`llm.model`, `serve.tokens`...), as the defaults name them: what the
/// book's configuration reference must document (a test holds it to that).
pub fn keys() -> Vec<&'static str> {
    default_pairs().into_iter().map(|(key, _)| key).collect()
}

/// Every setting with its default.
fn default_pairs() -> Vec<(&'static str, config::Value)> {
    vec![
        // Empty: resolved after merging (a docs folder alone, or the sample's workspace).
        ("workspace", "".into()),
        ("docs", "".into()),
        ("state_dir", "".into()),
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
        ("index.max_total_bytes", (1_i64 << 30).into()),
        ("index.top_k", 5_i64.into()),
        ("index.path", "".into()),
        ("index.watch", true.into()),
        ("index.rescan_secs", 10_i64.into()),
        ("index.pdf_seconds", 60_i64.into()),
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
        ("retrieval.reranker.base_url", "".into()),
        ("retrieval.reranker.model", "".into()),
        ("retrieval.reranker.candidates", 12_i64.into()),
        ("retrieval.reranker.input_chars", 600_i64.into()),
        ("retrieval.reranker.timeout_ms", 3_000_i64.into()),
        ("retrieval.reranker.scores", "auto".into()),
        ("retrieval.reranker.min_relevance", 0.0_f64.into()),
        ("retrieval.reranker.covers_at", 0.5_f64.into()),
        ("allowed_link_hosts", Vec::<String>::new().into()),
        // Empty: in the state folder, resolved after merging.
        ("session.log_path", "".into()),
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
        ("sources", Vec::<config::Value>::new().into()),
        ("serve.max_body_bytes", 65_536_i64.into()),
        ("serve.request_timeout_secs", 120_i64.into()),
        ("serve.max_concurrent", 64_i64.into()),
        ("serve.max_connections", 512_i64.into()),
        ("serve.header_read_timeout_secs", 10_i64.into()),
        ("serve.body_read_timeout_secs", 10_i64.into()),
        ("serve.rate_per_minute", 600_i64.into()),
        ("serve.max_open_sessions", 1000_i64.into()),
        ("serve.session_idle_secs", 1_800_i64.into()),
        ("serve.sessions_per_minute", 10_i64.into()),
        ("serve.allow_self_approval", false.into()),
        ("serve.suggest_asked_by", 3_i64.into()),
        ("serve.breaker_failures", 3_i64.into()),
        ("serve.breaker_cooldown_secs", 30_i64.into()),
        ("serve.oidc.issuer", "".into()),
        ("serve.oidc.client_id", "".into()),
        ("serve.oidc.client_secret", "".into()),
        ("serve.oidc.redirect_url", "".into()),
        ("serve.oidc.scopes", vec!["openid", "profile", "email"].into()),
        ("serve.oidc.name_claim", "email".into()),
        ("serve.oidc.groups_claim", "groups".into()),
        ("serve.oidc.session_hours", 8_i64.into()),
        ("serve.proxy.trusted", Vec::<String>::new().into()),
        ("serve.proxy.user_header", "X-Forwarded-Email".into()),
        ("serve.proxy.groups_header", "X-Forwarded-Groups".into()),
        ("serve.groups.ask", Vec::<String>::new().into()),
        ("serve.groups.approve", Vec::<String>::new().into()),
        ("serve.groups.admin", Vec::<String>::new().into()),
        ("serve.cookie_secret", "".into()),
        ("prompt.agents_md_max_bytes", 65_536_i64.into()),
        ("prompt.agents_md_unusable", "warn".into()),
        ("prompt.skills_catalog_tokens", 2_000_i64.into()),
        ("site.base_url", "".into()),
        ("site.generator", "files".into()),
    ]
}
