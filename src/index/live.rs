//! The index of a process that runs for days (`serve`): one generation at a time, replaced
//! whole when the docs change. A reader takes the current generation and keeps it for all it
//! does (a search, a turn, a section shown for a citation), so an answer never mixes two
//! states of the docs, and an update never shows half of its documents.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use cap_std::fs::Dir;

use super::embed::Embedder;

/// Without file events, a document modified this recently is taken as still being written,
/// and keeps its old version until a later look (`serve`'s updater; `docs-agent mcp`, which
/// looks without events).
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);
use super::store::{Held, Update, Want};
use super::walk::{self, Listed};
use super::{Index, IndexError, Version};

/// The generation searched now, and how many copies each new one gets.
pub struct Live {
    current: RwLock<Arc<Index>>,
    /// Databases per generation: one per thread that searches at once.
    readers: usize,
    /// The embedding model every new generation is embedded with, when search is hybrid.
    embedder: Option<Arc<Embedder>>,
    /// The reranker every new generation's searches are reranked by ([`Index::reranker`]).
    reranker: Option<Arc<super::rerank::Reranker>>,
    /// When a generation that lacks vectors is embedded again at the earliest, and the pause
    /// after that (doubled after each try that leaves some missing, up to [`RETRY_MAX`]).
    retry: std::sync::Mutex<(std::time::Instant, std::time::Duration)>,
    /// What every generation keeps hidden ([`Index::hidden`]).
    hidden: crate::workspace::hidden::Hidden,
    /// The git commit every new generation is stamped with ([`Index::revision`]).
    revision: std::sync::Mutex<Option<String>>,
}

/// The first pause before a generation that lacks vectors is embedded again.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(10);
/// The longest pause between two such tries.
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(600);

impl Live {
    /// `index` as the first generation; it and every later one are searched by `readers`
    /// threads at once (see [`Index::with_readers`]).
    pub fn new(index: Index, readers: usize) -> Live {
        Live::hiding(index, readers, Default::default())
    }

    /// [`Live::new`], with `hidden` kept from being found or read in `index` and every later
    /// generation.
    pub fn hiding(mut index: Index, readers: usize, hidden: crate::workspace::hidden::Hidden) -> Live {
        index.hidden = hidden.clone();
        let revision = std::sync::Mutex::new(index.revision());
        Live {
            revision,
            current: RwLock::new(Arc::new(index)),
            readers: readers.max(1),
            embedder: None,
            reranker: None,
            retry: std::sync::Mutex::new((std::time::Instant::now(), RETRY_FIRST)),
            hidden,
        }
    }

    /// Every later generation is embedded with `embedder` ([`Index::embed`]) before it is
    /// searched; `index`, the first, already is.
    pub fn embedded(mut self, embedder: Option<Arc<Embedder>>) -> Live {
        self.embedder = embedder;
        self
    }

    /// Every later generation is reranked by `reranker`; `index`, the first, already is.
    pub fn reranked(mut self, reranker: Option<Arc<super::rerank::Reranker>>) -> Live {
        self.reranker = reranker;
        self
    }

    /// The reranker searches are reranked by, if any.
    pub fn reranker(&self) -> Option<&super::rerank::Reranker> {
        self.reranker.as_deref()
    }

    /// True when the generation searched now lacks vectors that it should have (the embedding
    /// server failed) and the pause since the last try is over: the refresh then embeds it again
    /// even when no document changed. The pause doubles with each try, up to [`RETRY_MAX`].
    pub fn lacks_vectors(&self) -> bool {
        let current = self.current();
        let lacks = self.embedder.is_some()
            && current.stats.sections > 0
            && current.semantic.as_ref().is_none_or(|s| s.vectors.missing > 0 || s.vectors.is_empty());
        let mut retry = self.retry.lock().unwrap_or_else(|p| p.into_inner());
        if !lacks {
            *retry = (std::time::Instant::now(), RETRY_FIRST);
            return false;
        }
        let now = std::time::Instant::now();
        if now < retry.0 {
            return false;
        }
        *retry = (now + retry.1, (retry.1 * 2).min(RETRY_MAX));
        true
    }

    /// Stamps every generation made from now on with `revision` (a git source's new commit,
    /// before the index is brought up to date with its tree).
    pub fn set_revision(&self, revision: Option<String>) {
        *self.revision.lock().unwrap_or_else(|p| p.into_inner()) = revision;
    }

    /// Stamps the generation searched now with `revision` too: the new commit changed nothing
    /// this index reads, so its documents are that commit's as well.
    pub fn restamp(&self, revision: Option<String>) {
        *self.current().revision.lock().unwrap_or_else(|p| p.into_inner()) = revision;
    }

    /// The generation to read from; it stays whole for as long as it is held.
    pub fn current(&self) -> Arc<Index> {
        self.current.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Makes `index` the generation every new reader gets; readers of the old one finish
    /// with it.
    /// With an embedder, the rows it does not hold vectors for yet (in the current generation
    /// or the `cache` file) are embedded first.
    pub fn replace(&self, mut index: Index, cache: Option<&Path>) -> Result<(), IndexError> {
        index.add_readers(self.readers)?;
        index.hidden = self.hidden.clone();
        index.reranker = self.reranker.clone();
        index.revision = std::sync::Mutex::new(self.revision.lock().unwrap_or_else(|p| p.into_inner()).clone());
        if let Some(embedder) = &self.embedder {
            let current = self.current();
            let previous = current.semantic.as_ref().map(|s| &s.vectors);
            let started = std::time::Instant::now();
            // A long embedding (a first one, thousands of sections) is logged a tenth at a time.
            let mut told = 0;
            let mut progress = |done: usize, total: usize| {
                if total >= 200 && done * 10 >= (told + 1) * total && done < total {
                    told = done * 10 / total;
                    tracing::info!("embedding sections with {}: {done} of {total}", embedder.model());
                }
            };
            let filled = index.embed(embedder.clone(), cache, previous, &mut progress)?;
            if let Some(warning) = &filled.cache_warning {
                tracing::warn!("{warning}");
            }
            if filled.embedded > 0 {
                tracing::info!(
                    "embedded {} sections with {} in {} ms",
                    filled.embedded,
                    embedder.model(),
                    started.elapsed().as_millis()
                );
            }
            if let Some(warning) = filled.failure_warning(index.stats.sections) {
                tracing::warn!("{warning}");
            }
            index.semantic = Some(filled.semantic);
        }
        *self.current.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(index);
        Ok(())
    }
}

/// Where a running process's generations come from.
pub enum Source {
    /// The index file, updated document by document ([`Index::refresh`]).
    File {
        /// The SQLite file.
        path: PathBuf,
        /// The workspace's identity, as `meta.workspace` records it.
        workspace: String,
    },
    /// Built in memory again, whole, when a listing differs from the one last built.
    Memory {
        /// The listing taken just before the current generation was built.
        built_from: Vec<Listed>,
    },
}

/// What one refresh did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Refreshed {
    /// What changed, document by document (for an index built in memory, by size and time:
    /// `touched` and `unchanged` stay 0).
    pub update: Update,
    /// The generation searched after the refresh.
    pub version: Version,
    /// A new generation replaced the old one.
    pub replaced: bool,
}

impl Source {
    /// The source of an index about to be built in memory from `docs`: their listing now.
    pub fn memory(docs: &Dir) -> Source {
        Source::Memory { built_from: walk::list_docs(docs).files }
    }

    /// Brings `live` up to date with `docs`, leaving `held` documents (being written) as they
    /// are; a new generation replaces the current one only when something changed.
    pub fn refresh(
        &mut self,
        live: &Live,
        docs: &Dir,
        limits: super::Limits,
        held: Held<'_>,
    ) -> Result<Refreshed, IndexError> {
        let current = live.current().version;
        // A generation without all its vectors is copied again, to be embedded again.
        let retry = live.lacks_vectors();
        match self {
            Source::File { path, workspace } => {
                let want = Want { held, current: (!retry).then_some(current), readers: live.readers };
                let (index, update) = Index::refresh(docs, workspace, path, limits, &want)?;
                let version = index.as_ref().map_or(current, |index| index.version);
                let replaced = index.is_some();
                if let Some(index) = index {
                    live.replace(index, Some(&super::vectors::cache_path(path)))?;
                }
                Ok(Refreshed { update, version, replaced })
            }
            Source::Memory { built_from } => {
                let listing = walk::list_docs(docs).files;
                let mut update = Update { generation: current.generation, ..Update::default() };
                if listing == *built_from && !retry {
                    return Ok(Refreshed { update, version: current, replaced: false });
                }
                let before = &*built_from;
                let was: HashMap<&str, &Listed> = before.iter().map(|f| (f.path.as_str(), f)).collect();
                let now: HashSet<&str> = listing.iter().map(|f| f.path.as_str()).collect();
                let changed: Vec<&Listed> = listing.iter().filter(|f| was.get(f.path.as_str()) != Some(f)).collect();
                update.held = changed.iter().filter(|f| held(f)).count();
                update.added = changed.iter().filter(|f| !was.contains_key(f.path.as_str())).count();
                update.changed = changed.len() - update.added;
                update.removed = before.iter().filter(|f| !now.contains(f.path.as_str())).count();
                if update.held > 0 {
                    // Built whole or not at all: wait until every document is written.
                    return Ok(Refreshed { update, version: current, replaced: false });
                }
                let mut index = Index::build(docs, limits)?;
                index.version.generation = current.generation + 1;
                let version = index.version;
                live.replace(index, None)?;
                *built_from = listing;
                update.rebuilt = Some("the docs changed".into());
                update.generation = version.generation;
                Ok(Refreshed { update, version, replaced: true })
            }
        }
    }
}
