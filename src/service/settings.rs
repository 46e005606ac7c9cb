//! The one way a front end reads its configuration: `config` loads the values and checks them;
//! then each subsystem checks the part only it can judge (the session store its URL and CA
//! file, the hooks their rules, the model its name and price), in the same words; then every
//! secret the configuration holds is remembered, so it is redacted wherever it shows.

use crate::config::{Config, ConfigError, Sources};

/// Loads the configuration from the file, the environment and the flags, checked whole.
pub fn load(sources: &Sources) -> Result<Config, ConfigError> {
    checked(Config::load(sources)?)
}

/// [`load`] without any file, not even `./docs-agent.toml` (an eval case's own settings).
pub fn load_isolated(sources: &Sources) -> Result<Config, ConfigError> {
    checked(Config::load_isolated(sources)?)
}

/// Refuses collections whose folders nest: one collection's workspace inside another's would
/// put its documents (and the notes written there) in the other's docs.
fn collections_apart(config: &Config) -> Result<(), ConfigError> {
    let names = config.collection_names();
    let mut places = Vec::new();
    for name in names.iter().filter(|_| !config.collections.is_empty()) {
        places.push((name, config.for_collection(Some(name))?.workspace));
    }
    for (i, (a, first)) in places.iter().enumerate() {
        for (b, second) in &places[i + 1..] {
            if let Some(how) = crate::sandbox::data::overlap(first, second) {
                return Err(ConfigError(format!(
                    "collections: {a}'s workspace {} {how} {b}'s ({}); give each collection a folder of its own, \
                     apart from the others",
                    first.display(),
                    second.display()
                )));
            }
        }
    }
    Ok(())
}

/// The subsystems' checks of a loaded configuration, then its secrets remembered.
fn checked(config: Config) -> Result<Config, ConfigError> {
    crate::session::store::check_config(&config.session)?;
    crate::hooks::Hooks::compile(&config.hooks).map_err(|e| ConfigError(e.to_string()))?;
    crate::model::check_config(&config)?;
    crate::site::check_config(&config)?;
    collections_apart(&config)?;
    // The model server's key is redacted wherever it shows, whatever its shape, and the
    // embedding server's and the reranker's, and the session database's password.
    let retrieval = &config.retrieval;
    for key in [&config.llm.api_key, &retrieval.embeddings.api_key, &retrieval.reranker.api_key].into_iter().flatten() {
        crate::guard::redact::remember(key);
    }
    if let Some(password) = crate::session::store::Location::of(&config.session).password() {
        crate::guard::redact::remember(&password);
    }
    Ok(config)
}
