//! The models that can answer: an OpenAI-compatible server, or one of the built-in,
//! deterministic ones. The model only *asks* for tools; the turn (`session::turn`) decides.

pub mod adversary;
pub mod builtin;
pub mod context;
pub mod openai;
pub mod pull;
pub mod reply_error;
pub mod sse;
pub mod textcall;

use serde_json::Value;

use crate::config::LlmConfig;

/// Streamed tool calls read at most (a larger index is refused, not allocated).
pub const MAX_STREAMED_CALLS: usize = 64;

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The id the reply to this call must carry.
    pub id: String,
    /// The tool's name, as the model wrote it (may be unknown).
    pub name: String,
    /// The arguments as the model wrote them: JSON text, possibly malformed.
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The harness's rules, the project's instructions and the skills catalog.
    System(String),
    /// The person's question.
    User(String),
    /// A model reply: text, tool calls, or both.
    Assistant {
        /// The reply's text.
        content: String,
        /// The tools it asked for.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call it answers.
        call_id: String,
        /// What the tool returned (fenced and redacted).
        content: String,
    },
}

/// What one model call returned.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// Text of the reply (the answer when there are no tool calls).
    pub content: String,
    /// Tools the model asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used, when the server says.
    pub usage: Option<Usage>,
}

impl Reply {
    /// A final answer, with no tool call.
    pub fn text(content: String) -> Reply {
        Reply { content, tool_calls: Vec::new(), usage: None }
    }

    /// Tool calls only, with ids `{prefix}_{n}`.
    pub fn calls(prefix: &str, calls: &[(&str, String)]) -> Reply {
        let tool_calls = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("{prefix}_{i}"),
                name: name.to_string(),
                arguments: arguments.clone(),
            })
            .collect();
        Reply { content: String::new(), tool_calls, usage: None }
    }
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
    /// Prompt tokens the server took from its cache instead of reading them again (OpenAI's
    /// `prompt_tokens_details.cached_tokens`, which llama.cpp reports too; 0 when it does not say).
    pub cached: u64,
}

impl Usage {
    /// The counts of a reply's `usage` object.
    pub fn from_json(usage: &serde_json::Value) -> Usage {
        let count = |pointer: &str| usage.pointer(pointer).and_then(serde_json::Value::as_u64).unwrap_or(0);
        Usage {
            prompt: count("/prompt_tokens"),
            completion: count("/completion_tokens"),
            cached: count("/prompt_tokens_details/cached_tokens"),
        }
    }
}

/// A tool as offered to the model: name, description and JSON schema of its arguments.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Why a model call failed, written for the person running docs-agent. Shown only scrubbed,
/// by `Display` and `Debug` alike.
pub enum ModelError {
    /// Could not connect at all.
    Unreachable {
        /// Where it tried.
        url: String,
        /// The connection error's root cause.
        detail: String,
    },
    /// The server does not know the model.
    UnknownModel {
        /// The model asked for.
        model: String,
        /// What the server said.
        detail: String,
    },
    /// Any other HTTP error status, after retries.
    Http {
        /// Where it asked.
        url: String,
        /// The status.
        status: u16,
        /// The start of the error body.
        body: String,
    },
    /// The server answered with something that is not a chat completion.
    Malformed {
        /// Where it asked.
        url: String,
        /// What was wrong.
        problem: reply_error::ReplyError,
    },
    /// The server answered with an error of its own where the reply should be (an error
    /// object in a 200 reply, an error event in the stream).
    Reported {
        /// Where it asked.
        url: String,
        /// What it said, clipped.
        message: String,
    },
    /// No answer within the request timeout.
    Timeout {
        /// Where it asked.
        url: String,
        /// The timeout.
        secs: u64,
    },
}

/// Told scrubbed: a server's words (an error body, a stream's error event) and its URL can
/// carry a key it was sent or its own, and this text goes to logs and to every front end.
impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::guard::scrub(&self.unscrubbed()))
    }
}

impl ModelError {
    /// What the error says, as the server's words came.
    fn unscrubbed(&self) -> String {
        match self {
            ModelError::Unreachable { url, detail } => format!(
                "cannot reach the model server at {url} ({detail}). Start Ollama with `ollama serve` \
                 (or `docker compose up -d ollama`), set LLM_BASE_URL to your server, or use LLM_MODEL=extractive \
                 for retrieval-only answers"
            ),
            ModelError::UnknownModel { model, detail } => format!(
                "the model server does not have the model `{model}` ({detail}). Run `ollama pull {model}` \
                 (or `docs-agent pull`, which asks the Ollama at LLM_BASE_URL), or set LLM_MODEL to a model it has"
            ),
            ModelError::Http { url, status, body } => {
                format!("the model server at {url} answered HTTP {status}: {body}")
            }
            ModelError::Malformed { url, problem } => {
                format!("the model server at {url} sent a reply that is not a chat completion: {problem}")
            }
            ModelError::Reported { url, message } => {
                format!("the model server at {url} reported an error instead of a reply: {message}")
            }
            ModelError::Timeout { url, secs } => format!(
                "the model server at {url} did not answer within {secs} s; raise llm.request_timeout_secs or use a smaller model"
            ),
        }
    }
}

impl std::fmt::Debug for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ModelError").field(&self.to_string()).finish()
    }
}

impl std::error::Error for ModelError {}

/// The client for a model server could not be made (the TLS stack or the HTTP client would
/// not start): nothing was asked of the server yet.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the HTTP client for the model server: {0}")]
pub struct SetupError(#[from] reqwest::Error);

/// The model's part of the configuration, which only `model` can judge, as it knows which
/// names are built in: a server's URL is http(s), and a cost cap has the model's price (a
/// built-in model costs nothing).
pub fn check_config(config: &crate::config::Config) -> Result<(), crate::config::ConfigError> {
    use crate::config::ConfigError;
    let builtin = builtin::Builtin::from_name(&config.llm.model).is_some();
    let http = config.llm.base_url.starts_with("http://") || config.llm.base_url.starts_with("https://");
    if !(builtin || http) {
        return Err(ConfigError(format!(
            "llm.base_url (LLM_BASE_URL) must start with http:// or https://, got `{}`",
            config.llm.base_url
        )));
    }
    let budget = &config.budget;
    let capped = budget.question_cost > 0.0 || budget.session_cost > 0.0;
    if capped && !builtin && !budget.prices.contains_key(&config.llm.model) {
        return Err(ConfigError(format!(
            "a cost cap (budget.question_cost or budget.session_cost) needs the price of the model `{0}`: \
             add [budget.prices.\"{0}\"] with input_per_million and output_per_million",
            config.llm.model
        )));
    }
    Ok(())
}

/// What shapes one model call besides its messages and tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape<'a> {
    /// `max_tokens` for this call (the client's own, `limits.max_output_tokens`, when none).
    pub max_tokens: Option<u32>,
    /// Where the server stops writing (at most 4, as OpenAI's API takes).
    pub stop: &'a [&'a str],
}

/// The closed set of models.
pub enum Model {
    /// Any OpenAI-compatible `/v1/chat/completions` server (Ollama, vLLM, llama.cpp...).
    OpenAi(openai::Client),
    /// A deterministic, in-process model: the compromised test model, retrieval-only, or a looping one.
    Builtin(builtin::Builtin),
}

impl Model {
    /// Picks the model for `name`: a built-in name, or an OpenAI-compatible client.
    pub fn from_config(llm: &LlmConfig, max_output_tokens: u32) -> Result<Model, SetupError> {
        match builtin::Builtin::from_name(&llm.model) {
            Some(b) => Ok(Model::Builtin(b)),
            None => openai::Client::new(llm, max_output_tokens).map(Model::OpenAi),
        }
    }

    /// Asks for the next reply, streaming: `on_delta` gets the reply's text as it arrives (a
    /// built-in model delivers it in one piece). The caller may drop the future to interrupt.
    pub async fn complete_streaming(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        shape: Shape<'_>,
        on_delta: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, ModelError> {
        match self {
            Model::OpenAi(client) => client.complete_streaming(messages, tools, shape, on_delta).await,
            Model::Builtin(b) => {
                let reply = b.complete(messages);
                on_delta(&reply.content);
                Ok(reply)
            }
        }
    }

    /// Can the model answer? Built-in models always can; a server is asked for its models.
    pub async fn ready(&self) -> Result<(), ModelError> {
        match self {
            Model::OpenAi(client) => client.ping().await,
            Model::Builtin(_) => Ok(()),
        }
    }

    /// The model's context length in tokens, when its server reports it (a built-in model
    /// has none).
    pub async fn context_length(&self) -> Option<u64> {
        match self {
            Model::OpenAi(client) => client.context_length().await,
            Model::Builtin(_) => None,
        }
    }

    /// True when no language model writes the answers: the `extractive` built-in quotes the
    /// evidence with the harness's own code, so its answer is no model's words to check, and
    /// says so in its first line.
    pub fn quotes_only(&self) -> bool {
        matches!(self, Model::Builtin(builtin::Builtin::Extractive))
    }

    /// The model's name, for traces.
    pub fn name(&self) -> String {
        match self {
            Model::OpenAi(client) => client.model().to_string(),
            Model::Builtin(b) => b.name().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ModelError;
    use super::reply_error::ReplyError;

    /// Every variant's text, shown or debugged, leaves out a secret its server's words or its
    /// URL carry.
    #[test]
    fn a_model_error_is_shown_scrubbed_whatever_carries_the_secret() {
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let url = "http://bob:Sup3rS3cretPw0rd@models.internal:11434/v1/chat/completions".to_string();
        let errors = [
            ModelError::Unreachable { url: url.clone(), detail: format!("refused ({secret})") },
            ModelError::UnknownModel { model: "m".into(), detail: secret.into() },
            ModelError::Http { url: url.clone(), status: 401, body: format!("bad key {secret}") },
            ModelError::Malformed { url: url.clone(), problem: ReplyError::NotJson("the reply", secret.into()) },
            ModelError::Reported { url: url.clone(), message: format!("bad key {secret}") },
            ModelError::Timeout { url, secs: 5 },
        ];
        for error in errors {
            for shown in [error.to_string(), format!("{error:?}")] {
                assert!(!shown.contains(secret) && !shown.contains("Sup3rS3cretPw0rd"), "{shown}");
                assert!(shown.contains("model server"), "still told: {shown}");
            }
        }
    }
}
