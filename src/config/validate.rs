//! The checks of values the types alone cannot make: ranges, non-empty names, URL schemes.
//! Each error names the key (and its environment variable) and says what to do.

use super::{Config, ConfigError, MAX_APPROVAL_TTL_SECS, MIN_CONTEXT_BUDGET};

impl Config {
    /// Each `[[sources]]` entry's own checks, and names that differ.
    fn validate_sources(&self) -> Result<(), ConfigError> {
        for (i, source) in self.sources.iter().enumerate() {
            source.validate().map_err(ConfigError)?;
            if self.sources[..i].iter().any(|s| s.name == source.name) {
                return Err(ConfigError(format!(
                    "sources: the name {:?} is given twice; each source needs its own",
                    source.name
                )));
            }
        }
        if self.sources.len() > 1 && self.collections.is_empty() {
            return Err(ConfigError(format!(
                "sources: {} sources are given, and one set of docs is served from one source; keep one [[sources]] entry, or serve each in a [[collections]] entry of its own",
                self.sources.len()
            )));
        }
        if !self.sources.is_empty() && self.docs.is_some() {
            return Err(ConfigError(
                "sources and docs are both given: the docs come from the [[sources]] entry, so leave --docs (DOCS_AGENT_DOCS) unset".into(),
            ));
        }
        Ok(())
    }

    /// Cost caps and prices are numbers a price can reach: not negative. (That a capped model
    /// has a price is `model::check_config`'s: a built-in one costs nothing.)
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
        Ok(())
    }

    /// Checks values the types alone cannot.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.validate_sources()?;
        self.validate_collections()?;
        let positive = [
            ("limits.max_steps", self.limits.max_steps as u64),
            ("limits.max_tool_calls_per_step", self.limits.max_tool_calls_per_step as u64),
            ("limits.max_wall_secs", self.limits.max_wall_secs),
            ("limits.max_output_tokens", self.limits.max_output_tokens as u64),
            ("llm.request_timeout_secs", self.llm.request_timeout_secs),
            ("index.top_k", self.index.top_k as u64),
            ("index.pdf_seconds", self.index.pdf_seconds),
            ("index.max_total_bytes", self.index.max_total_bytes),
            ("retrieval.context_tokens", self.retrieval.context_tokens as u64),
            ("retrieval.sections", self.retrieval.sections as u64),
            ("retrieval.files", self.retrieval.files as u64),
            ("retrieval.evidence_items", self.retrieval.evidence_items as u64),
            ("retrieval.answer_tokens", u64::from(self.retrieval.answer_tokens)),
            ("retrieval.embeddings.batch", self.retrieval.embeddings.batch as u64),
            ("retrieval.embeddings.input_chars", self.retrieval.embeddings.input_chars as u64),
            ("retrieval.embeddings.timeout_secs", self.retrieval.embeddings.timeout_secs),
            ("retrieval.reranker.candidates", self.retrieval.reranker.candidates as u64),
            ("retrieval.reranker.input_chars", self.retrieval.reranker.input_chars as u64),
            ("retrieval.reranker.timeout_ms", self.retrieval.reranker.timeout_ms),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!("{key} must be at least 1, got 0")));
            }
        }
        if self.index.pdf_seconds > MAX_PDF_SECONDS {
            return Err(ConfigError(format!(
                "index.pdf_seconds (DOCS_AGENT_PDF_SECONDS) must be 1 to {MAX_PDF_SECONDS}, got {}: every PDF may \
                 take that long, and the index waits for it",
                self.index.pdf_seconds
            )));
        }
        // The URL itself, and its CA file, are the session store's to read (`session::store::check_config`).
        let url = self.session.log_url.trim();
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
        self.validate_sign_in()?;
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
            ("serve.max_sessions_per_principal", self.serve.max_sessions_per_principal.map_or(1, |n| n as u64)),
            ("serve.sessions_per_minute", u64::from(self.serve.sessions_per_minute)),
            ("serve.max_turns_per_principal", self.serve.max_turns_per_principal.map_or(1, |n| n as u64)),
            ("serve.max_followers_per_principal", self.serve.max_followers_per_principal.map_or(1, |n| n as u64)),
            ("serve.breaker_failures", self.serve.breaker_failures as u64),
        ] {
            if value == 0 {
                return Err(ConfigError(format!("{key} must be at least 1, got 0")));
            }
        }
        if self.serve.suggest_asked_by == 1 {
            return Err(ConfigError(
                "serve.suggest_asked_by must be 0 (suggest no one's questions) or at least 2: at 1, every question \
                 anyone asked would be offered to everyone"
                    .into(),
            ));
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
        self.validate_reranker()?;
        if self.llm.model.trim().is_empty() {
            return Err(ConfigError("llm.model (LLM_MODEL) must not be empty".into()));
        }
        Ok(())
    }
}

/// The longest `index.pdf_seconds` may be.
pub const MAX_PDF_SECONDS: u64 = 600;

/// Candidates a reranker scores at most: each is a model pass on the question's path.
pub const MAX_RERANK_CANDIDATES: usize = 100;

impl Config {
    /// `[retrieval.reranker]`: a URL the client can use, candidates it can score in time, and
    /// relevance thresholds that are fractions in their order.
    fn validate_reranker(&self) -> Result<(), ConfigError> {
        let reranker = &self.retrieval.reranker;
        let url = reranker.base_url.trim();
        if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError(format!(
                "retrieval.reranker.base_url (DOCS_AGENT_RERANKER_URL) must start with http:// or https://, got `{url}`; \
                 leave it empty to search without a reranker"
            )));
        }
        if reranker.candidates > MAX_RERANK_CANDIDATES {
            return Err(ConfigError(format!(
                "retrieval.reranker.candidates (DOCS_AGENT_RERANKER_CANDIDATES) must be at most {MAX_RERANK_CANDIDATES} \
                 (each candidate is read by the reranker while the question waits), got {}",
                reranker.candidates
            )));
        }
        for (key, value) in [
            ("retrieval.reranker.min_relevance", reranker.min_relevance),
            ("retrieval.reranker.covers_at", reranker.covers_at),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError(format!("{key} must be a relevance from 0 to 1, got {value}")));
            }
        }
        if reranker.covers_at < reranker.min_relevance {
            return Err(ConfigError(format!(
                "retrieval.reranker.covers_at ({}) must be at least retrieval.reranker.min_relevance ({}): a section \
                 cannot be relevant enough to cover a question and too little to answer it",
                reranker.covers_at, reranker.min_relevance
            )));
        }
        Ok(())
    }
}
