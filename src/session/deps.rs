//! What a turn uses besides its log and its model, built in one place (`Harness::deps`) from
//! the harness and the configuration, so the turn reaches for neither: the toolbox, the prompt,
//! the limits, the session settings, the hosts answers may link to and the retrieval settings.

use crate::config::{Limits, RetrievalConfig, SessionConfig};
use crate::tools::Toolbox;

/// A turn's dependencies.
pub struct Deps<'a> {
    /// Runs the tools (workspace, index, skills, result sizes).
    pub toolbox: Toolbox<'a>,
    /// The stable system prompt.
    pub system_prompt: &'a str,
    /// Steps, wall time, tool calls per step, output tokens.
    pub limits: &'a Limits,
    /// Approval expiry, context budget, compaction.
    pub session: &'a SessionConfig,
    /// Hosts that links in an answer may point to.
    pub link_hosts: &'a [String],
    /// Retrieve-first and answer verification.
    pub retrieval: &'a RetrievalConfig,
    /// Tokens and cost a question and a session may use.
    pub budget: &'a crate::config::BudgetConfig,
    /// The policy hooks (`[hooks]`).
    pub hooks: &'a crate::hooks::Hooks,
    /// The published docs site, whose URLs citations carry (`[site]`).
    pub site: Option<&'a crate::site::Site>,
}
