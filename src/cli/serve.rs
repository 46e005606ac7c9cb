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
    runtime.block_on(crate::serve::serve(state, &listen, shutdown_signal())).map_err(|e| (Exit::Failure, e))?;
    Ok(Exit::Ok)
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
