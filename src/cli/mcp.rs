//! `docs-agent mcp`: the MCP server (`crate::mcp`) for one client on stdin and stdout.

use std::sync::Arc;

use rmcp::ServiceExt;

use super::{Exit, Failure};
use crate::config::Config;
use crate::mcp::stdout::Scrubbed;
use crate::mcp::{DocsServer, Front, Local};
use crate::model::Model;
use crate::runtime::{Flavor, build};

/// Serves until the client closes stdin (exit 0). Only the protocol is written to stdout, each
/// message with every string scrubbed last (`mcp::stdout`); what the harness has to say
/// (skipped docs, a failing model) goes to the log on stderr.
#[allow(clippy::disallowed_methods)] // stdout, behind `Scrubbed`: the one writer of the protocol
pub fn serve_stdio(config: Config) -> Result<Exit, Failure> {
    let harness = super::open(&config)?;
    for warning in &harness.index.current().warnings {
        tracing::warn!(target: "docs_agent::mcp", "{warning}");
    }
    let model =
        Model::from_config(&config.llm, config.limits.max_output_tokens).map_err(|e| (Exit::Usage, e.to_string()))?;
    let llm = config.llm.clone();
    let front = Arc::new(Front::Local(Box::new(Local {
        config,
        harness,
        model,
        looked: std::sync::Mutex::new(std::time::Instant::now()),
    })));
    let runtime = build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    runtime.block_on(async {
        // Whether `ask` can be answered is told on stderr (the client's log) without holding up
        // the handshake: search_docs and read_section need no model.
        tokio::spawn(say_whether_the_model_is_there(llm));
        let running = DocsServer::new(front)
            .serve((tokio::io::stdin(), Scrubbed::new(tokio::io::stdout())))
            .await
            .map_err(|e| (Exit::Failure, format!("the MCP client did not start a session: {e}")))?;
        running.waiting().await.map_err(|e| (Exit::Failure, format!("the MCP session failed: {e}")))?;
        Ok(Exit::Ok)
    })
}

/// Warns when the model server lacks the model or cannot be asked: `ask` fails until it is
/// there (`docs-agent pull`); nothing is pulled behind the client's back.
async fn say_whether_the_model_is_there(llm: crate::config::LlmConfig) {
    use crate::model::pull::{Presence, presence};
    match presence(&llm).await {
        Ok(Presence::Present) => {}
        Ok(Presence::Missing) => tracing::warn!(
            "the model server lacks {}: the ask tool fails until it is pulled (docs-agent pull); \
             search_docs and read_section work without it",
            llm.model
        ),
        Ok(Presence::Unsure(e)) => tracing::warn!(
            "the model server cannot be asked ({e}): the ask tool fails until it can; search_docs and \
             read_section work without it"
        ),
        Err(e) => tracing::warn!("the model cannot be set up ({e}): the ask tool will fail"),
    }
}
