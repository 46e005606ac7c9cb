//! The collections one service holds (`[[collections]]`): each a harness of its own (workspace,
//! index, skills, AGENTS.md) with its index kept fresh and its git source in sync. Every
//! question, search and session reads exactly one, chosen by [`Collections::chosen`] for the
//! principal asking, and a session stays in the one it started in. Without `[[collections]]`
//! the workspace is the one collection, `default`, and every principal reads it.

use crate::agent::Harness;
use crate::config::Config;
use crate::service::{Principal, Refused, fresh, sources};

/// One named set of docs, opened.
pub struct Collection {
    /// Its name (`default` without `[[collections]]`).
    pub name: String,
    /// Its own configuration: its workspace, docs, index and source; the rest shared.
    pub config: Config,
    /// Workspace, index, skills, prompt.
    pub harness: Harness,
    /// How its index is kept fresh (`fresh`).
    pub index_status: fresh::Status,
    /// Its git source, kept in sync (`[[sources]]`), and what the syncs did.
    pub sources: sources::Sources,
}

impl Collection {
    /// Collection `name`, opened as `harness` from its own `config`.
    pub fn new(name: &str, config: Config, harness: Harness) -> Collection {
        Collection {
            name: name.to_string(),
            index_status: fresh::Status::default(),
            sources: sources::Sources::of(&config),
            config,
            harness,
        }
    }
}

/// Every collection, in the configuration's order: the first is read when a request names none
/// and its principal reads it.
pub struct Collections {
    list: Vec<Collection>,
}

/// Which collection, by its place in [`Collections`].
pub type Which = usize;

impl Collections {
    /// `list`, in order (at least one).
    pub fn new(list: Vec<Collection>) -> Collections {
        assert!(!list.is_empty(), "a service holds at least one collection");
        Collections { list }
    }

    /// The one collection, `default`, of a configuration without `[[collections]]`: its
    /// workspace, opened as `harness`.
    pub fn one(config: &Config, harness: Harness) -> Collections {
        Collections::new(vec![Collection::new(crate::config::DEFAULT_COLLECTION, config.clone(), harness)])
    }

    /// Opens every collection `config` serves (the one workspace without `[[collections]]`),
    /// each from its own configuration, made ready by `docs_of` first (the command line points
    /// a git source's at its tree there), with `readers` read-only databases per index
    /// generation. A collection that cannot open is an error naming it.
    pub fn open(
        config: &Config,
        readers: usize,
        docs_of: &dyn Fn(&mut Config) -> Result<(), String>,
    ) -> Result<Collections, String> {
        if config.collections.is_empty() {
            let harness = Harness::open_for(config, readers).map_err(|e| e.to_string())?;
            return Ok(Collections::one(config, harness));
        }
        let mut opened = Vec::new();
        for name in config.collection_names() {
            let failed = |e: String| format!("collection {name}: {e}");
            let mut own = config.for_collection(Some(&name)).map_err(|e| failed(e.to_string()))?;
            docs_of(&mut own).map_err(failed)?;
            let harness = Harness::open_for(&own, readers).map_err(|e| failed(e.to_string()))?;
            let index = harness.index.current();
            tracing::info!("collection {name}: {} documents, {} sections", index.stats.files, index.stats.sections);
            opened.push(Collection::new(&name, own, harness));
        }
        Ok(Collections::new(opened))
    }

    /// Every collection.
    pub fn all(&self) -> &[Collection] {
        &self.list
    }

    /// The collection at `which`, a place [`Collections::chosen`], [`Collections::named`] or
    /// [`Collections::of_session`] gave (never another collection in its stead).
    pub fn get(&self, which: Which) -> &Collection {
        &self.list[which]
    }

    /// The collection called `name`.
    pub fn named(&self, name: &str) -> Option<Which> {
        self.list.iter().position(|c| c.name == name)
    }

    /// The sources of the collection whose git source is called `name` (each source feeds one).
    pub fn sources_with(&self, name: &str) -> Option<&sources::Sources> {
        self.list.iter().map(|c| &c.sources).find(|s| s.source(name).is_some())
    }

    /// The collections `principal` reads, in order.
    pub fn readable<'a>(&'a self, principal: &'a Principal) -> impl Iterator<Item = &'a Collection> + 'a {
        self.list.iter().filter(|c| principal.reads(&c.name))
    }

    /// The collection a request of `principal` reads: `name`, else the first one it reads.
    /// A name it may not read is refused exactly as one that does not exist (404), naming the
    /// ones it may.
    pub fn chosen(&self, principal: &Principal, name: Option<&str>) -> Result<Which, Refused> {
        let yours = || {
            let names: Vec<&str> = self.readable(principal).map(|c| c.name.as_str()).collect();
            match names.as_slice() {
                [] => "you read no collection".to_string(),
                names => format!("yours: {}", names.join(", ")),
            }
        };
        match name.map(str::trim).filter(|n| !n.is_empty()) {
            Some(name) => match self.named(name) {
                Some(which) if principal.reads(name) => Ok(which),
                _ => Err(Refused::NoCollection(format!("no collection {name:?} ({})", yours()))),
            },
            None => self.list.iter().position(|c| principal.reads(&c.name)).ok_or_else(|| {
                Refused::Forbidden(format!(
                    "{} reads no collection; ask whoever runs docs-agent to give the token or your groups one",
                    principal.name
                ))
            }),
        }
    }

    /// The collection `name` a session reads (`session::state::reads_collection`); a session
    /// from before collections reads `default`, which exists only without them.
    pub fn of_session(&self, name: &str) -> Result<Which, Refused> {
        self.named(name).ok_or_else(|| {
            Refused::NoCollection(format!(
                "this session reads the collection {name:?}, which this service no longer serves; start a new session"
            ))
        })
    }
}
