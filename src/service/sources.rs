//! `serve` keeps its git source in sync: a thread looks at the branch every `every`, and at once
//! when the webhook asks ([`Sources::wake`]); a new tip is checked out and the harness switches
//! to it (`Harness::switch_docs`), its index updated from what changed. A sync that fails keeps
//! the tree served before; it is logged and counted, and tried again at the next look.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::git::Source;

/// The shortest pause between two syncs the webhook asks for: a burst of pushes is one sync.
const WEBHOOK_GAP: Duration = Duration::from_secs(2);

/// After a failed sync, the next look comes this soon (or at `every`, if sooner).
const RETRY: Duration = Duration::from_secs(60);

/// The configuration's git sources, as `serve` keeps them.
#[derive(Default)]
pub struct Sources {
    entries: Vec<Entry>,
}

struct Entry {
    source: Source,
    /// Wakes the sync thread; set once it runs.
    wake: Mutex<Option<mpsc::SyncSender<()>>>,
    /// What the syncs did, for `/readyz`, `/metrics` and the log.
    status: Mutex<Status>,
}

/// What one source's syncs did since `serve` started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The commit this process serves (hex): its tree is the one it reads.
    pub commit: Option<String>,
    /// Syncs that moved to a new commit.
    pub moved: u64,
    /// Syncs that found nothing new.
    pub unchanged: u64,
    /// Syncs that failed.
    pub failed: u64,
    /// The last failure, when the last sync failed.
    pub error: Option<String>,
}

/// Why the webhook could not ask for a sync.
#[derive(Debug, PartialEq, Eq)]
pub enum WakeRefused {
    /// No source has that name.
    Unknown,
    /// The source has no webhook secret, so no request can prove it comes from the forge.
    NoSecret,
}

/// The running sync threads; dropping this stops them after their current sync.
pub struct Syncing {
    stops: Vec<mpsc::SyncSender<()>>,
    stopped: Arc<AtomicBool>,
}

impl Drop for Syncing {
    fn drop(&mut self) {
        self.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        for stop in &self.stops {
            let _ = stop.try_send(());
        }
    }
}

impl Sources {
    /// The sources `config` names (checked when it was loaded).
    pub fn of(config: &crate::config::Config) -> Sources {
        match crate::git::check_config(config) {
            Ok(sources) => Sources {
                entries: sources
                    .into_iter()
                    .map(|source| {
                        // What serve reads at start: the tree the command line chose.
                        let commit = config.docs_revision.clone();
                        Entry {
                            source,
                            wake: Mutex::new(None),
                            status: Mutex::new(Status { commit, ..Status::default() }),
                        }
                    })
                    .collect(),
            },
            Err(e) => {
                tracing::warn!("{e}; the git sources are not kept in sync");
                Sources::default()
            }
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each source's name and status.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.entries
            .iter()
            .map(|e| (e.source.name.clone(), e.status.lock().unwrap_or_else(|p| p.into_inner()).clone()))
            .collect()
    }

    /// The source named `name`.
    pub fn source(&self, name: &str) -> Option<&Source> {
        self.entries.iter().find(|e| e.source.name == name).map(|e| &e.source)
    }

    /// Asks for a sync of `name` now (the webhook, once it checked the request's signature).
    /// A sync already asked for and not begun absorbs this one.
    pub fn wake(&self, name: &str) -> Result<(), WakeRefused> {
        let entry = self.entries.iter().find(|e| e.source.name == name).ok_or(WakeRefused::Unknown)?;
        if entry.source.webhook_secret().is_none() {
            return Err(WakeRefused::NoSecret);
        }
        if let Some(wake) = entry.wake.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = wake.try_send(());
        }
        Ok(())
    }
}

/// Starts a sync thread per source of each of `service`'s collections (none without sources).
pub fn start(service: &Arc<super::Service>) -> Option<Syncing> {
    let stopped = Arc::new(AtomicBool::new(false));
    let mut stops = Vec::new();
    for (which, collection) in service.collections.all().iter().enumerate() {
        for index in 0..collection.sources.entries.len() {
            let (wake, woken) = mpsc::sync_channel(1);
            let entry = &collection.sources.entries[index];
            *entry.wake.lock().unwrap_or_else(|p| p.into_inner()) = Some(wake.clone());
            stops.push(wake);
            let (service, stopped) = (service.clone(), stopped.clone());
            let name = format!("sync-{}", entry.source.name);
            let started =
                std::thread::Builder::new().name(name).spawn(move || run(&service, which, index, &woken, &stopped));
            if let Err(e) = started {
                tracing::warn!(
                    "cannot start the sync of source {} ({e}); it is synced after a restart",
                    entry.source.name
                );
            }
        }
    }
    (!stops.is_empty()).then_some(Syncing { stops, stopped })
}

/// One source's loop: a sync at every look, woken early by the webhook, until stopped.
fn run(service: &super::Service, which: usize, index: usize, woken: &mpsc::Receiver<()>, stopped: &AtomicBool) {
    let collection = service.collections.get(which);
    let entry = &collection.sources.entries[index];
    let every = entry.source.every;
    // A first look at start: the branch may have moved while serve was down.
    let mut next = Some(Instant::now());
    let mut last = None::<Instant>;
    loop {
        let woke = match next {
            Some(at) => woken.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => woken.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        if stopped.load(std::sync::atomic::Ordering::SeqCst) || woke == Err(mpsc::RecvTimeoutError::Disconnected) {
            return;
        }
        // A webhook right after a sync waits out the gap, so a burst of pushes is one sync.
        if woke.is_ok()
            && let Some(gap) = last.map(|l: Instant| WEBHOOK_GAP.saturating_sub(l.elapsed()))
        {
            std::thread::sleep(gap);
        }
        let ok = sync_once(&collection.harness, crate::index::Limits::of(&collection.config.index), entry, stopped);
        last = Some(Instant::now());
        next = match (every, ok) {
            (Some(every), true) => Some(Instant::now() + every),
            (Some(every), false) => Some(Instant::now() + every.min(RETRY)),
            (None, _) => None,
        };
    }
}

/// One sync; true when it did not fail. Whether the tree served moves is decided against the
/// commit this process serves, not the state file: another process (`docs-agent sources sync`)
/// may have moved the state already.
fn sync_once(
    harness: &crate::agent::Harness,
    limits: crate::index::Limits,
    entry: &Entry,
    stopped: &AtomicBool,
) -> bool {
    let source = &entry.source;
    let started = Instant::now();
    let serving = entry.status.lock().unwrap_or_else(|p| p.into_inner()).commit.clone();
    let outcome = source.sync(stopped).map_err(|e| e.to_string()).and_then(|synced| {
        let moved = serving.as_deref() != Some(synced.commit.as_str());
        if moved {
            let refreshed = harness.switch_docs(&synced.docs, &synced.commit, limits)?;
            source.hold(&synced.commit);
            tracing::info!(
                "source {}: serving {} ({} documents added, {} changed, {} removed; {} ms)",
                source.name,
                synced.commit.get(..12).unwrap_or(&synced.commit),
                refreshed.update.added,
                refreshed.update.changed,
                refreshed.update.removed,
                started.elapsed().as_millis()
            );
        }
        Ok((synced, moved))
    });
    let mut status = entry.status.lock().unwrap_or_else(|p| p.into_inner());
    match outcome {
        Ok((synced, moved)) => {
            if moved {
                status.moved += 1;
            } else {
                status.unchanged += 1;
            }
            status.commit = Some(synced.commit);
            status.error = None;
            true
        }
        Err(e) => {
            let e = crate::guard::scrub(&e).into_owned();
            tracing::warn!("source {}: {e}; the tree served before keeps serving", source.name);
            status.failed += 1;
            status.error = Some(e);
            false
        }
    }
}
