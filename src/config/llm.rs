//! `[llm]`: the model server or built-in model that answers.

/// The model server or built-in model: the `[llm]` section of the configuration.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL of an OpenAI-compatible API, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// Model name; `scripted` and `extractive` are built in and need no server.
    pub model: String,
    /// Bearer key for the server, if it wants one.
    pub api_key: Option<String>,
    /// Seconds one HTTP request may take.
    pub request_timeout_secs: u64,
    /// How many times a 429, 5xx or connect error is retried, with backoff.
    pub retries: u32,
    /// Sampling temperature sent to the model.
    pub temperature: f32,
    /// Whether a question first pulls a model the server lacks (through Ollama's pull API).
    pub pull: Pull,
}

/// When the command line pulls the model before it asks (`llm.pull`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pull {
    /// When the server says it lacks the model: pulled through Ollama's pull API, with
    /// progress; a server without that API makes the pull fail with a warning.
    Missing,
    /// Never: a missing model is an error (exit 3) that says to pull it.
    Never,
}
