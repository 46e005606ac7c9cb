//! `docs-agent serve`: checks the configuration, builds the shared state and the worker
//! runtime, and serves until SIGTERM or Ctrl-C (see `crate::serve` for the service itself).

use std::sync::Arc;

use super::{Exit, Failure};
use crate::config::Config;
use crate::runtime::{self, Flavor};

/// Serves until a shutdown signal on `cores` workers, inside the kernel sandbox described by
/// `sandbox` (entered by the caller; `/readyz` shows it to admins).
pub fn serve(config: Config, sandbox: crate::sandbox::Status, cores: usize) -> Result<Exit, Failure> {
    if config.serve.tokens.is_empty() {
        return Err((
            Exit::Usage,
            "no API tokens: add a [[serve.tokens]] entry (principal, sha256, roles) to docs-agent.toml; \
             `docs-agent hash-token` prints the sha256 of a token"
                .into(),
        ));
    }
    let listen = config.serve.listen.clone();
    crate::serve::tune_sqlite();
    let harness = crate::agent::Harness::open_for(&config, cores).map_err(|e| (Exit::Failure, e.to_string()))?;
    let state = Arc::new(crate::serve::AppState::new(config, harness).with_sandbox(sandbox));
    let runtime = runtime::build(Flavor::Workers(cores)).map_err(|e| (Exit::Failure, e.to_string()))?;
    runtime.spawn(pull_if_missing(state.config.llm.clone()));
    runtime.block_on(crate::serve::serve(state, &listen, shutdown_signal())).map_err(|e| (Exit::Failure, e))?;
    Ok(Exit::Ok)
}

/// In the background while serving (`llm.pull = missing`): when the model server lacks the
/// configured model and is Ollama, pulls it, logging its progress a line per tenth. `/readyz`
/// says not ready until it is there; questions meanwhile get retrieval-only answers.
async fn pull_if_missing(llm: crate::model::LlmConfig) {
    use crate::model::pull::Progress;
    if !matches!(crate::model::pull::lacking(&llm).await, Ok(true)) {
        return;
    }
    crate::guard::sink::err_line!("docs-agent: the model server lacks {}; pulling it (llm.pull = missing)", llm.model);
    let mut last = String::new();
    let on = |progress: Progress| {
        let line = progress.describe(true);
        if line != last {
            crate::guard::sink::err_line!("docs-agent: pulling {}: {line}", llm.model);
            last = line;
        }
    };
    match crate::model::pull::pull(&llm, on).await {
        Ok(()) => crate::guard::sink::err_line!("docs-agent: pulled {}; ready once /readyz says so", llm.model),
        Err(e) => crate::guard::sink::err_line!("docs-agent: could not pull {}: {e}", llm.model),
    }
}

/// Completes on SIGTERM (a container stop) or Ctrl-C.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
