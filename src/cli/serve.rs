//! `docs-agent serve`: checks the configuration, builds the shared state and the worker
//! runtime, and serves until SIGTERM or Ctrl-C (see `crate::serve` for the service itself).

use std::sync::Arc;
use std::time::Duration;

use super::{Exit, Failure, Global};
use crate::config::Config;
use crate::runtime::{self, Flavor};

/// The configuration `serve` runs with, and the port it listens on: read and checked once; or,
/// with `--wait-for-config`, read again each time its file changes until it is usable, so a
/// container started before its config is written waits for it instead of failing in a loop.
/// Only a problem in the configuration is waited out; anything else fails at once.
pub fn configured(global: &Global, listen: Option<String>, wait: bool) -> Result<(Config, u16), Failure> {
    let file = super::config_file(global);
    let mut waited = false;
    loop {
        // Taken before the file is read, so a change made while it is read is not missed.
        let read = fingerprint(&file);
        let attempt = super::load_config(global).and_then(|mut config| {
            if let Some(listen) = &listen {
                config.serve.listen = listen.clone();
            }
            // serve keeps its sessions apart from the command line's, unless one log is named.
            config.session.log_path = config.serve_log_path();
            let port = usable(&config, &file)?;
            Ok((config, port))
        });
        match attempt {
            Ok(ready) => {
                if waited {
                    tracing::info!("{} is usable now; starting", file.display());
                }
                return Ok(ready);
            }
            Err((Exit::Usage, message)) if wait => {
                tracing::warn!("{message}");
                tracing::warn!(
                    "waiting for {} to change (serve --wait-for-config); in compose, \
                     `docker compose run --rm init` writes it",
                    file.display()
                );
                while fingerprint(&file) == read {
                    std::thread::sleep(CONFIG_POLL);
                }
                waited = true;
            }
            Err(failure) => return Err(failure),
        }
    }
}

/// How often `--wait-for-config` looks at the file.
const CONFIG_POLL: Duration = Duration::from_millis(500);

/// What identifies one version of a file: absent, or its identity, size and modification time.
fn fingerprint(file: &std::path::Path) -> Option<(u64, u64, u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(file).ok()?;
    Some((meta.dev(), meta.ino(), meta.len(), meta.modified().ok()?))
}

/// Checks what `serve` needs beyond a valid configuration (read from `file`, when it exists):
/// a port, and at least one way in (a token, the OpenID provider, the proxy).
fn usable(config: &Config, file: &std::path::Path) -> Result<u16, Failure> {
    let port = super::sandbox::listen_port(&config.serve.listen)
        .ok_or_else(|| (Exit::Usage, format!("serve.listen `{}` has no port; write HOST:PORT", config.serve.listen)))?;
    let signs_in = config.serve.oidc.enabled() || config.serve.proxy.enabled();
    if config.serve.tokens.is_empty() && !signs_in {
        return Err((
            Exit::Usage,
            format!(
                "no API tokens in {}: `docs-agent tokens add NAME --role ask` adds a caller (it prints the token \
                 once and writes only its hash), or `docs-agent init` writes a new config with an admin token; \
                 or let people sign in through [serve.oidc] or [serve.proxy]",
                file.display()
            ),
        ));
    }
    Ok(port)
}

/// Serves until a shutdown signal on `cores` workers, inside the kernel sandbox described by
/// `sandbox` (entered by the caller; `/readyz` shows it to admins).
pub fn serve(
    global: &Global,
    config: Config,
    sandbox: crate::sandbox::Status,
    cores: usize,
    watch_tokens: bool,
) -> Result<Exit, Failure> {
    let listen = config.serve.listen.clone();
    crate::serve::tune_sqlite();
    let docs_of = |own: &mut Config| super::sources::serve_from(own).map_err(|(_, e)| e);
    let collections =
        crate::service::collections::Collections::open(&config, cores, &docs_of).map_err(|e| (Exit::Failure, e))?;
    let store = crate::session::store::Store::open(&crate::session::store::Location::of(&config.session))
        .map_err(|e| (Exit::Failure, e.to_string()))?;
    let service = crate::service::Service::of(config, collections, store).with_crash_hook(super::crash_hook()?);
    let state = Arc::new(crate::serve::AppState::on(service).with_sandbox(sandbox));
    let runtime = runtime::build(Flavor::Workers(cores)).map_err(|e| (Exit::Failure, e.to_string()))?;
    runtime.spawn(pull_if_missing(state.config.llm.clone()));
    // The embedding model too: until it is there, search uses keywords, and each rescan
    // (index.rescan_secs) embeds what is still missing.
    if let Some(embeddings) = state.config.embeddings_llm() {
        runtime.spawn(pull_if_missing(embeddings));
    }
    let _tokens = TokensWatch::start(global, &state, watch_tokens);
    runtime.block_on(crate::serve::serve(state, &listen, shutdown_signal())).map_err(|e| (Exit::Failure, e))?;
    Ok(Exit::Ok)
}

/// How often a running serve looks at its config file for changed tokens.
const TOKENS_POLL: Duration = Duration::from_secs(2);

/// Keeps the tokens of a running serve as its config file says (`docs-agent tokens add|revoke`
/// replace the file at once): each change is read whole, with the same checks as at start, and
/// only its tokens are taken; a file that no longer reads is logged and the tokens stay as they
/// were. Other settings need a restart (said in the log when they differ). Stops when dropped.
struct TokensWatch {
    /// Set to stop the thread.
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl TokensWatch {
    /// Watches the config file, unless `watch` is false (its folder may not be read: said once).
    fn start(global: &Global, state: &Arc<crate::serve::AppState>, watch: bool) -> TokensWatch {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let file = super::config_file(global);
        let shown = file.display().to_string();
        if !watch {
            tracing::warn!(
                "{shown} is not a file serve can read again: token changes take a restart (keep the config in a \
                 folder that holds nothing else, as compose's /etc/docs-agent)"
            );
            return TokensWatch { stop };
        }
        if super::sandbox::rewritten_in_place(&file) {
            tracing::info!(
                "{shown} lies in the home folder, which serve's sandbox does not open: serve reads that file alone \
                 again; `docs-agent tokens` rewrites it in place, and a change saved by replacing the file (as some \
                 editors do) takes a restart"
            );
        }
        let (global, weak, stopped) = (global.clone(), Arc::downgrade(state), stop.clone());
        // No version seen yet: the first look reads the file again, so a change made while
        // serve started (its index built after the config was read) is not missed.
        let mut seen = None;
        let spawned = std::thread::Builder::new().name("tokens-watch".into()).spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(TOKENS_POLL);
                let now = Some(fingerprint(&file));
                if now == seen {
                    continue;
                }
                seen = now;
                let Some(state) = weak.upgrade() else { return };
                let serving: Vec<String> = state.collections.all().iter().map(|c| c.name.clone()).collect();
                // A token's collections mean something only against the collections served:
                // a file that names others is for the next start, as is one that does not
                // load. Its revocations are not: a token it no longer lists as it is now stops
                // working at once, and nothing is added until a restart.
                let (listed, why) = match super::load_config(&global) {
                    Ok(config) if config.collection_names() == serving => {
                        let count = state.tokens.replace(&config.serve.tokens);
                        tracing::info!("{} changed: {count} token(s) now", file.display());
                        continue;
                    }
                    Ok(config) => (
                        Ok(config.serve.tokens.iter().map(crate::serve::auth::tokens::Listed::of).collect()),
                        format!(
                            "it changed its collections ({}; serving {})",
                            config.collection_names().join(", "),
                            serving.join(", ")
                        ),
                    ),
                    Err((_, message)) => (super::tokens::listed(&file), format!("it cannot be used ({message})")),
                };
                match listed {
                    Ok(listed) => {
                        let dropped = state.tokens.keep_unchanged(&listed);
                        let shown = if dropped.is_empty() { "none".to_string() } else { dropped.join(", ") };
                        tracing::warn!(
                            "{} changed, but {why}: only its revocations are taken (tokens of {shown} no longer \
                             work); tokens added or changed wait for a restart",
                            file.display()
                        );
                    }
                    Err(e) => tracing::warn!(
                        "{} changed, but {why}, and its tokens cannot be read ({e}); the tokens stay as they were",
                        file.display()
                    ),
                }
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot watch {shown} for token changes ({e}); restart serve after changing them");
        }
        TokensWatch { stop }
    }
}

impl Drop for TokensWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The first pause before `serve` asks the model server again, doubled after each failure up
/// to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest pause between two tries.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// In the background while serving (`llm.pull = missing`): when the model server lacks the
/// configured model and is Ollama, pulls it, logging its progress a line per tenth. A server
/// that is not up yet, or a pull that fails, is tried again after a pause that doubles up to a
/// minute, until the model is there. `/readyz` says not ready until it is; questions meanwhile
/// get retrieval-only answers.
async fn pull_if_missing(llm: crate::config::LlmConfig) {
    use crate::model::pull::{Presence, worth_retrying};
    let mut pause = RETRY_FIRST;
    loop {
        let why = match crate::model::pull::presence(&llm).await {
            Ok(Presence::Present) => return,
            Err(e) => {
                tracing::warn!("cannot check for {}: {e}", llm.model);
                return;
            }
            Ok(Presence::Unsure(e)) => format!("cannot ask the model server whether it has {}: {e}", llm.model),
            Ok(Presence::Missing) => match pull(&llm).await {
                Ok(()) => {
                    tracing::info!("pulled {}; ready once /readyz says so", llm.model);
                    return;
                }
                Err(e) if !worth_retrying(&e) => {
                    tracing::warn!("could not pull {}: {e}", llm.model);
                    return;
                }
                Err(e) => format!("could not pull {}: {e}", llm.model),
            },
        };
        tracing::warn!("{why}; trying again in {} s", pause.as_secs());
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
    }
}

/// Pulls `llm.model`, logging a line per tenth of its progress.
async fn pull(llm: &crate::config::LlmConfig) -> Result<(), crate::model::pull::PullError> {
    use crate::model::pull::Progress;
    tracing::info!("the model server lacks {}; pulling it (llm.pull = missing)", llm.model);
    let mut last = String::new();
    let on = |progress: Progress| {
        let line = progress.describe(true);
        if line != last {
            tracing::info!("pulling {}: {line}", llm.model);
            last = line;
        }
    };
    crate::model::pull::pull(llm, on).await
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
