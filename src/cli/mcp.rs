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
    let front = Arc::new(Front::Local(Box::new(Local {
        config,
        harness,
        model,
        looked: std::sync::Mutex::new(std::time::Instant::now()),
    })));
    let runtime = build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    runtime.block_on(async {
        let running = DocsServer::new(front)
            .serve((tokio::io::stdin(), Scrubbed::new(tokio::io::stdout())))
            .await
            .map_err(|e| (Exit::Failure, format!("the MCP client did not start a session: {e}")))?;
        running.waiting().await.map_err(|e| (Exit::Failure, format!("the MCP session failed: {e}")))?;
        Ok(Exit::Ok)
    })
}
