//! `[hooks]`: the operator's policy rules as data. `hooks::Hooks::compile` turns them into
//! matchers where the harness is built, and names a rule that does not compile.

use serde::Deserialize;

/// What a pre-tool rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    /// The call goes on to the built-in policy; no later rule applies.
    Allow,
    /// The call is refused, with the rule's reason.
    Deny,
    /// A person approves the call before it runs, as a write is approved (on the terminal, or
    /// `sessions approve`, or over HTTP); no session grant decides it. A write still passes the
    /// write policy first.
    Ask,
}

impl RuleDecision {
    /// The word in the log and the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleDecision::Allow => "allow",
            RuleDecision::Deny => "deny",
            RuleDecision::Ask => "ask",
        }
    }
}

/// `[[hooks.pre_tool]]`: one rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreToolRule {
    /// The rule's name, recorded with each decision it makes.
    pub name: String,
    /// The tool it applies to (`search_docs`, `read_file`, `load_skill`, `write_file`); any
    /// when absent.
    #[serde(default)]
    pub tool: Option<String>,
    /// A glob on the call's `path` argument, as the workspace policy reads it
    /// (`docs/internal/**`); a call without a path does not match.
    #[serde(default)]
    pub path: Option<String>,
    /// A regular expression over the call's arguments (JSON text).
    #[serde(default)]
    pub arguments: Option<String>,
    /// `allow`, `deny` or `ask`.
    pub decision: RuleDecision,
    /// Why, shown to the model with a refusal.
    #[serde(default)]
    pub reason: String,
}

/// `[hooks.post_tool]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostToolConfig {
    /// Regular expressions whose matches are redacted from every tool result, besides the
    /// built-in secret patterns.
    #[serde(default)]
    pub redact: Vec<String>,
    /// Bytes of a tool result the model is shown at most; 0: only `limits.max_tool_result_bytes`.
    #[serde(default)]
    pub max_result_bytes: usize,
}

/// `[hooks.stop]`: what an answer must have.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopConfig {
    /// At least one verified citation.
    #[serde(default)]
    pub require_citation: bool,
    /// At least one verified citation whose path matches one of these globs (`docs/policies/**`).
    #[serde(default)]
    pub require_citation_from: Vec<String>,
}

/// `[hooks]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Rules before each tool call, first match decides.
    #[serde(default)]
    pub pre_tool: Vec<PreToolRule>,
    /// What every tool result goes through.
    #[serde(default)]
    pub post_tool: PostToolConfig,
    /// What an answer must have.
    #[serde(default)]
    pub stop: StopConfig,
}
