//! `[[collections]]`: several named sets of docs served by one `serve`, each with its own
//! workspace (AGENTS.md, skills, notes), docs (a folder, or a git source), and index. Without
//! any, the one workspace is the only collection, [`DEFAULT`], which every caller reads.
//!
//! ```toml
//! [[collections]]
//! name = "billing"
//! workspace = "/srv/billing"          # AGENTS.md, skills/, docs/
//! groups = ["billing-support"]        # who signs in and may read it ("*": everyone)
//!
//! [[collections]]
//! name = "erp"
//! source = "erp-docs"                 # its docs from the [[sources]] entry of that name
//! ```
//!
//! Plain data: what a collection's own configuration is ([`Config::for_collection`]) follows
//! from the shared one, so every subsystem opens a collection as it opens a workspace.

use std::path::PathBuf;

use serde::Deserialize;

use super::{Config, ConfigError};

/// The name of the one collection a configuration without `[[collections]]` serves.
pub const DEFAULT: &str = "default";

/// What a token or a group's member may read: every collection.
pub const ALL: &str = "*";

/// One named set of docs.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CollectionConfig {
    /// A short name (lowercase letters, digits, `-`, `_`): what clients pick it by
    /// (`?collection=NAME`; the model name of `/v1/chat/completions`).
    pub name: String,
    /// Its workspace folder (`docs/`, `AGENTS.md`, `skills/`, `notes/`); empty with a `source`:
    /// the source's tree alone.
    #[serde(default)]
    pub workspace: PathBuf,
    /// The `[[sources]]` entry its docs come from (in place of the workspace's `docs/`).
    #[serde(default)]
    pub source: String,
    /// The groups whose members, signed in through OIDC or the proxy, may read it (`*`: all
    /// who sign in). Tokens name theirs in `[[serve.tokens]]`'s `collections`.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// True for a name a collection may have: it goes into URLs and model names as is.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl Config {
    /// The names of the collections served, the first the default one (what a request that
    /// names none reads).
    pub fn collection_names(&self) -> Vec<String> {
        match self.collections.is_empty() {
            true => vec![DEFAULT.to_string()],
            false => self.collections.iter().map(|c| c.name.clone()).collect(),
        }
    }

    /// The configuration of collection `name` (`None`: the first), as if it were the only
    /// workspace: its workspace, its source, its index in `STATE_DIR/collections/NAME/`; the
    /// session log, the model and every limit shared. Without `[[collections]]`, the
    /// configuration itself (named [`DEFAULT`]).
    pub fn for_collection(&self, name: Option<&str>) -> Result<Config, ConfigError> {
        if self.collections.is_empty() {
            return match name {
                None | Some(DEFAULT) => Ok(self.clone()),
                Some(other) => Err(ConfigError(format!(
                    "there is no collection {other:?}: the configuration has no [[collections]], so its one workspace \
                     is the collection `{DEFAULT}`"
                ))),
            };
        }
        let chosen = match name {
            None => &self.collections[0],
            Some(name) => self.collections.iter().find(|c| c.name == name).ok_or_else(|| {
                ConfigError(format!(
                    "there is no collection {name:?}; the collections are {}",
                    self.collection_names().join(", ")
                ))
            })?,
        };
        let mut own = self.clone();
        own.collections = Vec::new();
        own.docs = None;
        own.docs_revision = None;
        own.sources = self.sources.iter().filter(|s| s.name == chosen.source).cloned().collect();
        let home = self.state_dir.join("collections").join(&chosen.name);
        match (chosen.workspace.as_os_str().is_empty(), own.sources.first()) {
            (false, _) => {
                own.workspace = chosen.workspace.clone();
                own.docs_alone = false;
            }
            // Docs from a git source alone: its folder in the state folder, as for one source.
            (true, source) => {
                let name = source.map_or(chosen.name.as_str(), |s| s.name.as_str());
                own.workspace = self.state_dir.join("sources").join(name);
                own.docs_alone = true;
            }
        }
        if own.index.path.trim() != "memory" {
            own.index.path = home.join("index.db").display().to_string();
        }
        Ok(own)
    }

    /// `[[collections]]`'s checks: names valid and unique; each with a workspace or a source,
    /// each source in one collection and every source in one; no `docs` beside them; each
    /// token names the collections it reads, and only known ones.
    pub(super) fn validate_collections(&self) -> Result<(), ConfigError> {
        if self.collections.is_empty() {
            for token in &self.serve.tokens {
                if !token.collections.is_empty() {
                    return Err(ConfigError(format!(
                        "serve.tokens: the token of {} names collections, but there are no [[collections]]; \
                         remove its `collections` or add the collections",
                        token.principal
                    )));
                }
            }
            return Ok(());
        }
        if self.docs.is_some() {
            return Err(ConfigError(
                "collections and docs are both given: each [[collections]] entry names its own workspace or source, \
                 so leave --docs (DOCS_AGENT_DOCS) unset"
                    .into(),
            ));
        }
        for (i, collection) in self.collections.iter().enumerate() {
            let name = &collection.name;
            if !valid_name(name) {
                return Err(ConfigError(format!(
                    "collections: the name {name:?} is not usable: use 1 to 64 lowercase letters, digits, `-` or `_` \
                     (it goes into URLs and model names)"
                )));
            }
            if name == DEFAULT {
                return Err(ConfigError(format!(
                    "collections: the name {DEFAULT:?} is kept for sessions from before collections; name it after \
                     its docs instead"
                )));
            }
            if self.collections[..i].iter().any(|c| &c.name == name) {
                return Err(ConfigError(format!("collections: the name {name:?} is given twice; each needs its own")));
            }
            let sourced = !collection.source.trim().is_empty();
            if collection.workspace.as_os_str().is_empty() && !sourced {
                return Err(ConfigError(format!(
                    "collections: {name} has neither a workspace nor a source; give `workspace = \"/path\"` or \
                     `source = \"NAME\"` of a [[sources]] entry"
                )));
            }
            if sourced && !self.sources.iter().any(|s| s.name == collection.source) {
                return Err(ConfigError(format!(
                    "collections: {name} reads the source {:?}, which no [[sources]] entry names",
                    collection.source
                )));
            }
            if sourced && self.collections[..i].iter().any(|c| c.source == collection.source) {
                return Err(ConfigError(format!(
                    "collections: the source {:?} is read by two collections; give each its own [[sources]] entry",
                    collection.source
                )));
            }
        }
        if let Some(source) = self.sources.iter().find(|s| !self.collections.iter().any(|c| c.source == s.name)) {
            return Err(ConfigError(format!(
                "sources: {} is read by no collection; name it in a [[collections]] entry's `source`, or remove it",
                source.name
            )));
        }
        for token in &self.serve.tokens {
            if token.collections.is_empty() {
                return Err(ConfigError(format!(
                    "serve.tokens: the token of {} names no collections; with [[collections]] each token lists the \
                     ones it reads: `collections = [\"{}\"]`, or `[\"*\"]` for all",
                    token.principal, self.collections[0].name
                )));
            }
            if let Some(unknown) =
                token.collections.iter().find(|n| *n != ALL && !self.collections.iter().any(|c| &&c.name == n))
            {
                return Err(ConfigError(format!(
                    "serve.tokens: the token of {} names the collection {unknown:?}, which is not one of {}",
                    token.principal,
                    self.collection_names().join(", ")
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().map_err(|e| ConfigError(e.to_string()))?;
        let file = dir.path().join("docs-agent.toml");
        std::fs::write(&file, text).map_err(|e| ConfigError(e.to_string()))?;
        let env = std::collections::HashMap::from([("HOME".to_string(), "/home/test".to_string())]);
        Config::load(&super::super::Sources { file: Some(file), env, flags: Vec::new() })
    }

    const TWO: &str = r#"
        state_dir = "/state"
        [[collections]]
        name = "billing"
        workspace = "/srv/billing"
        groups = ["billing-support"]
        [[collections]]
        name = "erp"
        source = "erp-docs"
        [[sources]]
        name = "erp-docs"
        git = "https://git.example.com/erp.git"
        [[serve.tokens]]
        principal = "ana"
        sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
        roles = ["ask"]
        collections = ["billing"]
    "#;

    #[test]
    fn each_collection_is_a_workspace_of_its_own_with_a_shared_log() {
        let config = config(TWO).expect("valid");
        assert_eq!(config.collection_names(), vec!["billing", "erp"]);
        let billing = config.for_collection(None).expect("the first is the default");
        assert_eq!(billing.workspace, PathBuf::from("/srv/billing"));
        assert!(billing.sources.is_empty() && !billing.docs_alone);
        assert_eq!(billing.index.path, "/state/collections/billing/index.db");
        let erp = config.for_collection(Some("erp")).expect("named");
        assert_eq!(erp.sources.len(), 1);
        assert!(erp.docs_alone);
        assert_eq!(erp.workspace, PathBuf::from("/state/sources/erp-docs"));
        assert_eq!(erp.index.path, "/state/collections/erp/index.db");
        assert_eq!(erp.session.log_path, billing.session.log_path, "one session log for all");
        let missing = config.for_collection(Some("hr")).expect_err("unknown");
        assert!(missing.0.contains("billing, erp"), "{}", missing.0);
    }

    #[test]
    fn without_collections_the_workspace_is_the_default_one() {
        let config = config("workspace = \"/srv/w\"\nstate_dir = \"/state\"").expect("valid");
        assert_eq!(config.collection_names(), vec![DEFAULT]);
        assert_eq!(config.for_collection(Some(DEFAULT)).expect("default").workspace, PathBuf::from("/srv/w"));
        assert!(config.for_collection(Some("erp")).is_err());
    }

    #[test]
    fn bad_collections_are_refused_with_what_to_do() {
        let refused = |text: String, says: &str| {
            let e = config(&text).err().unwrap_or_else(|| panic!("accepted: {text}"));
            assert!(e.0.contains(says), "{} lacks {says:?}", e.0);
        };
        refused(TWO.replace("name = \"erp\"", "name = \"ERP docs\""), "lowercase");
        refused(TWO.replace("name = \"erp\"", "name = \"billing\""), "given twice");
        refused(TWO.replace("name = \"erp\"", "name = \"default\""), "kept for sessions from before");
        refused(TWO.replace("source = \"erp-docs\"", ""), "neither a workspace nor a source");
        refused(TWO.replace("source = \"erp-docs\"", "source = \"hr\""), "no [[sources]] entry names");
        refused(TWO.replace("collections = [\"billing\"]", ""), "names no collections");
        refused(TWO.replace("collections = [\"billing\"]", "collections = [\"hr\"]"), "not one of billing, erp");
        refused(
            format!("{TWO}\n[[sources]]\nname = \"spare\"\ngit = \"https://git.example.com/s.git\"\n"),
            "read by no collection",
        );
        refused(format!("docs = \"/srv/docs\"\n{TWO}"), "leave --docs");
        let lone = "[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\nroles = [\"ask\"]\ncollections = [\"x\"]\n";
        refused(lone.to_string(), "no [[collections]]");
        assert!(config(&TWO.replace("[\"billing\"]", "[\"*\"]")).is_ok(), "`*` reads them all");
    }
}
