//! Fresh answers while serving. `docs/` is watched (inotify, through `notify`) and looked at
//! again every `index.rescan_secs` for filesystems that send no events. Each change brings the
//! index up to date and swaps the new generation in whole (`Harness::refresh_index`), so
//! search, ask and `/v1/sections` read one generation or the next, never a mix.
//!
//! A document still being written is held back: the old version stays searchable (a new one
//! is not searchable yet) until its writer closes it. With events, "being written" means
//! modified and not closed since; without them, modified in the last [`SETTLE`]. A document
//! whose size changes between listing and reading is held too (`store`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher};

use super::Service;
use crate::index::walk::{self, Listed};

/// How long events gather before an update runs: a burst (a `git pull`) is one update.
const GATHER: Duration = Duration::from_millis(50);
use crate::index::live::SETTLE;
/// A document modified but never closed (an event lost, a writer gone) is indexed anyway
/// after this long without a change.
const STALLED: Duration = Duration::from_secs(10);
/// How soon a failed update is tried again when no rescan is due sooner.
const RETRY: Duration = Duration::from_secs(5);

/// The index's freshness, for `/readyz` and `/metrics`.
#[derive(Debug, Default)]
pub struct Status(Mutex<Counts>);

/// What [`Status`] holds.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// `docs/` is watched for events (else only rescans find changes).
    pub watching: bool,
    /// Updates that swapped a new generation in.
    pub replaced: u64,
    /// Updates that found nothing to change.
    pub unchanged: u64,
    /// Updates that failed (the generation searched stays).
    pub failed: u64,
    /// Documents held back by the last update, being written.
    pub held: usize,
}

impl Status {
    /// A copy of the counts.
    pub fn counts(&self) -> Counts {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The index's gauges and update counters of each collection (its name, status and the
    /// generation it searches), in the Prometheus text format; with `labelled` (a service of
    /// `[[collections]]`) each sample carries `collection="NAME"`.
    pub fn render_all(collections: &[(&str, &Status, &crate::index::Index)], labelled: bool) -> String {
        type Gauge = (&'static str, &'static str, fn(&Counts, &crate::index::Index) -> f64);
        let gauges: [Gauge; 6] = [
            ("docs_agent_index_generation", "The index generation searched now.", |_, i| i.version.generation as f64),
            (
                "docs_agent_index_updated_timestamp_seconds",
                "When that generation's update committed (Unix time).",
                |_, i| i.version.updated_at_ms as f64 / 1000.0,
            ),
            ("docs_agent_index_files", "Documents in the generation searched now.", |_, i| i.stats.files as f64),
            ("docs_agent_index_sections", "Sections in the generation searched now.", |_, i| i.stats.sections as f64),
            (
                "docs_agent_index_watching",
                "1 when docs/ is watched for events, 0 when only rescans find changes.",
                |c, _| f64::from(u8::from(c.watching)),
            ),
            (
                "docs_agent_index_held_documents",
                "Documents left as they were by the last update, being written.",
                |c, _| c.held as f64,
            ),
        ];
        let counted: Vec<_> =
            collections.iter().map(|(name, status, index)| (*name, status.counts(), *index)).collect();
        let label = |name: &str, more: &str| match (labelled, more.is_empty()) {
            (false, true) => String::new(),
            (false, false) => format!("{{{more}}}"),
            (true, true) => format!("{{collection=\"{name}\"}}"),
            (true, false) => format!("{{collection=\"{name}\",{more}}}"),
        };
        let mut out = String::new();
        for (metric, help, value) in gauges {
            out.push_str(&format!("# HELP {metric} {help}\n# TYPE {metric} gauge\n"));
            for (name, counts, index) in &counted {
                out.push_str(&format!("{metric}{} {}\n", label(name, ""), value(counts, index)));
            }
        }
        out.push_str("# HELP docs_agent_index_updates_total Index updates by result.\n# TYPE docs_agent_index_updates_total counter\n");
        for (name, c, _) in &counted {
            for (result, n) in [("replaced", c.replaced), ("unchanged", c.unchanged), ("failed", c.failed)] {
                let labels = label(name, &format!("result=\"{result}\""));
                out.push_str(&format!("docs_agent_index_updates_total{labels} {n}\n"));
            }
        }
        out
    }

    fn with(&self, change: impl FnOnce(&mut Counts)) {
        change(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// What wakes the updater.
enum Wake {
    /// Something happened under `docs/`.
    Fs(notify::Result<Event>),
    /// The server stops.
    Stop,
}

/// The running updater; dropping it stops it.
pub struct Freshness {
    wake: mpsc::Sender<Wake>,
    /// Kept alive while the updater runs.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Drop for Freshness {
    /// Tells the updater to stop; it does when its current update ends. It is not waited for:
    /// an update waiting on the index file's lock must not hold up a shutdown, and one cut off
    /// by the exit leaves the file as its last commit left it.
    fn drop(&mut self) {
        let _ = self.wake.send(Wake::Stop);
    }
}

/// Starts keeping the index of `state`'s collection `which` fresh: a watcher on its `docs/`
/// (unless `index.watch` is off or the filesystem refuses) and a thread that updates the
/// index. Problems are said on stderr; the server goes on with rescans, or with the index it
/// has.
pub fn start(state: Arc<Service>, which: usize) -> Option<Freshness> {
    let collection = state.collections.get(which);
    let config = &collection.config;
    let index = &config.index;
    let Some(docs) = docs_folder(&config.docs_path()) else {
        tracing::warn!(
            "{} is not a folder; create it and restart to have the docs of collection {} indexed",
            config.docs_path().display(),
            collection.name
        );
        return None;
    };
    if !index.watch && index.rescan_secs == 0 {
        return None;
    }
    let (wake, woken) = mpsc::channel();
    // A git source's trees never change once checked out: a new commit is a new tree, which
    // its sync switches to (`service::sources`); nothing to watch.
    let sourced = !config.sources.is_empty();
    let watcher = if index.watch && !sourced { watch(&docs, wake.clone()) } else { None };
    collection.index_status.with(|c| c.watching = watcher.is_some());
    let updater = Updater {
        state: state.clone(),
        which,
        docs,
        writing: HashMap::new(),
        watching: watcher.is_some(),
        started: false,
        told_replaced: false,
    };
    let thread = std::thread::Builder::new().name("index-updater".into()).spawn(move || updater.run(woken));
    match thread {
        Ok(_) => Some(Freshness { wake, _watcher: watcher }),
        Err(e) => {
            tracing::warn!("cannot start the index updater ({e}); docs changes are seen after a restart");
            None
        }
    }
}

/// The workspace's `docs/`, resolved (events name paths under it), when it is a folder.
fn docs_folder(docs: &Path) -> Option<PathBuf> {
    let docs = std::fs::canonicalize(docs).ok()?;
    docs.is_dir().then_some(docs)
}

/// A watcher sending every event under `docs` to `wake`, or `None` (said on stderr) when the
/// filesystem cannot be watched: rescans alone find changes then.
fn watch(docs: &Path, wake: mpsc::Sender<Wake>) -> Option<notify::RecommendedWatcher> {
    let made = notify::recommended_watcher(move |event| {
        let _ = wake.send(Wake::Fs(event));
    });
    let watched = made.and_then(|mut watcher| watcher.watch(docs, RecursiveMode::Recursive).map(|()| watcher));
    match watched {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            tracing::warn!(
                "cannot watch docs/ for changes ({e}); changes are found by the rescan every \
                 index.rescan_secs (DOCS_AGENT_INDEX_RESCAN_SECS) instead"
            );
            None
        }
    }
}

/// What an event means for the updater.
#[derive(Debug, PartialEq, Eq)]
enum Meaning {
    /// Nothing (a read: the updater's own reads are events too).
    Nothing,
    /// These documents are being written; they are updated once they are done.
    Writing(Vec<PathBuf>),
    /// These documents are done: closed after writing, renamed into place, or removed. Update.
    Done(Vec<PathBuf>),
    /// Something else changed (a folder, a time, permissions): update; a document being
    /// written stays so.
    Changed,
}

/// What `event` means (see [`Meaning`]).
fn meaning(event: &Event) -> Meaning {
    let paths = event.paths.clone();
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Meaning::Done(paths),
        EventKind::Access(_) => Meaning::Nothing,
        EventKind::Create(CreateKind::File) | EventKind::Modify(ModifyKind::Data(_)) => Meaning::Writing(paths),
        EventKind::Modify(ModifyKind::Name(_)) | EventKind::Remove(_) => Meaning::Done(paths),
        _ => Meaning::Changed,
    }
}

/// The thread that keeps the index fresh.
struct Updater {
    state: Arc<Service>,
    /// The collection whose index it keeps.
    which: usize,
    /// `docs/`, resolved.
    docs: PathBuf,
    /// Documents being written (`docs/…`), with when they were last modified.
    writing: HashMap<String, Instant>,
    /// Events arrive (else only rescans, and modification times say what is being written).
    watching: bool,
    /// The first update has run (before it, no event has said what is being written).
    started: bool,
    /// The operator was told that `docs/` was replaced (said once).
    told_replaced: bool,
}

impl Updater {
    /// Updates once at start (changes made before the watch began), then whenever events or
    /// the rescan say so, until told to stop.
    fn run(mut self, woken: mpsc::Receiver<Wake>) {
        let rescan = Duration::from_secs(self.state.collections.get(self.which).config.index.rescan_secs);
        let mut due = Some(Instant::now());
        let mut next_rescan = (!rescan.is_zero()).then(|| Instant::now() + rescan);
        loop {
            let wake_at = [due, next_rescan].into_iter().flatten().min();
            let first = match wake_at {
                Some(at) => woken.recv_timeout(at.saturating_duration_since(Instant::now())),
                None => woken.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            // Everything already queued is taken in before an update, so no document being
            // written is missed for want of its event.
            let mut received = vec![first];
            received.extend(woken.try_iter().map(Ok));
            for wake in received {
                match wake {
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Ok(Wake::Fs(event)) => {
                        if self.heard(event) {
                            let soon = Instant::now() + GATHER;
                            due = Some(due.map_or(soon, |d| d.min(soon)));
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            let now = Instant::now();
            if due.is_some_and(|d| d <= now) || next_rescan.is_some_and(|r| r <= now) {
                due = self.update();
                next_rescan = (!rescan.is_zero()).then(|| Instant::now() + rescan);
            }
        }
    }

    /// Takes in one event; true when an update should follow (not while a document is only
    /// being written: its close, rename or removal will say so).
    fn heard(&mut self, event: notify::Result<Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            // Events lost (a queue overflow) or a watch gone: look at everything again.
            Err(_) => return true,
        };
        let docs = &self.docs;
        match meaning(&event) {
            Meaning::Nothing => false,
            Meaning::Writing(paths) => {
                for path in paths.iter().filter_map(|p| relative(docs, p)) {
                    self.writing.insert(path, Instant::now());
                }
                false
            }
            Meaning::Done(paths) => {
                for path in paths.iter().filter_map(|p| relative(docs, p)) {
                    self.writing.remove(&path);
                }
                true
            }
            Meaning::Changed => true,
        }
    }

    /// True when `docs/` is no longer the folder the workspace opened at start.
    fn replaced_folder(&self) -> bool {
        use cap_std::fs::MetadataExt as _;
        use std::os::unix::fs::MetadataExt as _;
        if !self.state.collections.get(self.which).config.sources.is_empty() {
            return false;
        }
        let Some(opened) =
            self.state.collections.get(self.which).harness.workspace.docs().and_then(|d| d.dir_metadata().ok())
        else {
            return false;
        };
        std::fs::metadata(&self.docs).is_ok_and(|now| (now.dev(), now.ino()) != (opened.dev(), opened.ino()))
    }

    /// One update; when the next one is due, if sooner than the rescan: when a document held
    /// back may be done (without events, [`SETTLE`] later; with them, when the oldest one
    /// stalls), or [`RETRY`] after a failure.
    fn update(&mut self) -> Option<Instant> {
        if !self.told_replaced && self.replaced_folder() {
            self.told_replaced = true;
            tracing::warn!(
                "docs/ was replaced by another folder since serve started; this process still reads \
                 the old one: restart it (edit or copy into docs/ instead of replacing it)"
            );
        }
        let now = Instant::now();
        self.writing.retain(|_, modified| now.duration_since(*modified) < STALLED);
        let now_ns = walk::epoch_ns(std::time::SystemTime::now());
        let settle_ns = SETTLE.as_nanos() as i64;
        // Without events, and before the first event, a recent time is all that says a
        // document is being written (a time in the future says nothing).
        let by_time = !self.watching || !self.started;
        let writing = &self.writing;
        let held = |listed: &Listed| {
            let age = now_ns.saturating_sub(listed.mtime_ns);
            writing.contains_key(&listed.path) || (by_time && (0..settle_ns).contains(&age))
        };
        let state = self.state.clone();
        let collection = state.collections.get(self.which);
        let max = crate::index::Limits::of(&collection.config.index);
        let status = &collection.index_status;
        let started = Instant::now();
        let outcome = collection.harness.refresh_index(max, &held);
        self.started = true;
        match outcome {
            Ok(refreshed) => {
                let u = &refreshed.update;
                if refreshed.replaced {
                    tracing::info!(
                        "index generation {}: {} added, {} changed, {} removed, {} held back ({} ms)",
                        refreshed.version.generation,
                        u.added,
                        u.changed,
                        u.removed,
                        u.held,
                        started.elapsed().as_millis()
                    );
                }
                status.with(|c| {
                    if refreshed.replaced {
                        c.replaced += 1;
                    } else {
                        c.unchanged += 1;
                    }
                    c.held = u.held;
                });
                if let Some(reason) = &u.rebuilt {
                    tracing::info!("search index rebuilt ({reason})");
                }
                if u.held == 0 {
                    return None;
                }
                // Documents held only because they are open for writing wait for their close
                // event, or for the oldest to stall; one held for another reason (written
                // while it was read, or by its time) is looked at again once it may settle.
                let stalls = self.writing.values().min().map(|oldest| *oldest + STALLED);
                match stalls {
                    Some(stalls) if self.watching && u.held <= self.writing.len() => Some(stalls),
                    _ => Some(Instant::now() + SETTLE),
                }
            }
            Err(e) => {
                status.with(|c| c.failed += 1);
                tracing::warn!(
                    "{}",
                    crate::guard::scrub(&format!("index update failed: {e}; answers use the last good index"))
                );
                Some(Instant::now() + RETRY)
            }
        }
    }
}

/// `docs/…` for an absolute path under `docs` (resolved).
fn relative(docs: &Path, path: &Path) -> Option<String> {
    let inner = path.strip_prefix(docs).ok()?;
    Some(format!("docs/{}", inner.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> Event {
        Event::new(kind).add_path(PathBuf::from("/w/docs/a.md"))
    }

    #[test]
    fn reads_are_not_changes_and_writes_wait_for_the_close() {
        let path = vec![PathBuf::from("/w/docs/a.md")];
        let cases = [
            (EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)), Meaning::Nothing),
            (EventKind::Access(AccessKind::Close(AccessMode::Read)), Meaning::Nothing),
            (EventKind::Create(CreateKind::File), Meaning::Writing(path.clone())),
            (EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)), Meaning::Writing(path.clone())),
            (EventKind::Access(AccessKind::Close(AccessMode::Write)), Meaning::Done(path.clone())),
            (EventKind::Remove(notify::event::RemoveKind::File), Meaning::Done(path.clone())),
            (EventKind::Modify(ModifyKind::Name(notify::event::RenameMode::To)), Meaning::Done(path.clone())),
            (EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Permissions)), Meaning::Changed),
            (EventKind::Create(CreateKind::Folder), Meaning::Changed),
        ];
        for (kind, want) in cases {
            assert_eq!(meaning(&event(kind)), want, "{kind:?}");
        }
    }
}
