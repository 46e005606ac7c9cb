//! Documents read in their listed order, with PDFs read ahead on a few threads: a PDF is read
//! by a worker process that may take up to `index.pdf_seconds` on a hostile file
//! (`crate::pdf::worker`), so reading them one after another made n such files cost n times
//! that, and every document after one waited for it. Here up to `pdf::READERS` PDFs are read at
//! once, at most [`AHEAD`] PDFs past the one the caller handles, so one slow PDF holds up one
//! reader while the others go on; the documents still reach the caller one at a time, in the
//! listing's order (what the index's limits and its rows follow). The walk of a docs folder
//! ([`walk_docs`], [`walk_docs_each`]) lists it, then reads it here.
//!
//! Memory: at most [`AHEAD`] PDFs' text waits here besides the one the caller handles, each at
//! most `index.max_file_bytes` (68 MiB in all with the default 4 MiB).

use std::sync::{Condvar, Mutex};

use cap_std::fs::Dir;

use super::walk::{DocFile, Limits, Listed, Listing, Unreadable, Walk, list_docs, read_listed};
use crate::doc_kind::DocKind;
use crate::pdf::READERS;
use crate::workspace::FileError;

/// How many PDFs may be read past the one the caller waits for.
pub const AHEAD: usize = 16;

/// What reading one document gave: its text and the bytes the file held, or why not.
pub type Read = Result<(String, u64), Unreadable>;

/// Walks `docs` (whose workspace-relative name is `docs`), collecting every file.
pub fn walk_docs(docs: &Dir, limits: Limits) -> Walk {
    let listing = list_docs(docs);
    let mut files = Vec::new();
    let warnings = read_listing(docs, &listing, limits, &mut |file| files.push(file));
    Walk { files, warnings, ignored: listing.ignored }
}

/// Walks `docs`, handing each readable file to `on_file` as soon as it is read (in path
/// order), and returns the warnings.
pub fn walk_docs_each(docs: &Dir, limits: Limits, on_file: &mut dyn FnMut(DocFile)) -> Vec<String> {
    read_listing(docs, &list_docs(docs), limits, on_file)
}

/// Reads the documents of `listing` within `limits` (their PDFs read ahead, `ahead`), hands
/// each to `on_file` in order, and returns the listing's warnings and the reads'.
fn read_listing(docs: &Dir, listing: &Listing, limits: Limits, on_file: &mut dyn FnMut(DocFile)) -> Vec<String> {
    let mut warnings = listing.warnings.clone();
    let files: Vec<&Listed> = listing.files.iter().collect();
    let mut total = 0u64;
    let read = read_each::<std::convert::Infallible>(docs, &files, limits.file_bytes, &mut |listed, read| {
        match read {
            Ok((text, _)) => match total.checked_add(text.len() as u64) {
                Some(sum) if sum <= limits.total_bytes => {
                    total = sum;
                    on_file(DocFile { path: listed.path.clone(), text });
                }
                _ => warnings.push(limits.over_total(&listed.path)),
            },
            Err(unreadable) => warnings.push(unreadable.to_string()),
        }
        Ok(())
    });
    match read {
        Ok(()) => warnings,
    }
}

/// Reads every document of `files` (as listed in `docs`, each at most `file_bytes` of text)
/// and hands it to `on_each` in the order of `files`; the PDFs among them are read ahead (see
/// the module docs). Stops at the first error `on_each` returns, and returns it.
pub fn read_each<E>(
    docs: &Dir,
    files: &[&Listed],
    file_bytes: u64,
    on_each: &mut dyn FnMut(&Listed, Read) -> Result<(), E>,
) -> Result<(), E> {
    read_each_with(files, &|file| read_listed(docs, &file.path, file_bytes), on_each)
}

/// [`read_each`], each document read by `read`.
fn read_each_with<E>(
    files: &[&Listed],
    read: &(dyn Fn(&Listed) -> Read + Sync),
    on_each: &mut dyn FnMut(&Listed, Read) -> Result<(), E>,
) -> Result<(), E> {
    let pdfs: Vec<usize> =
        files.iter().enumerate().filter(|(_, f)| DocKind::of(&f.path) == Some(DocKind::Pdf)).map(|(n, _)| n).collect();
    if pdfs.len() < 2 || READERS < 2 {
        return files.iter().try_for_each(|f| on_each(f, read(f)));
    }
    let shared = Shared {
        state: Mutex::new(State { done: (0..pdfs.len()).map(|_| None).collect(), claimed: 0, taken: 0, stop: false }),
        changed: Condvar::new(),
    };
    std::thread::scope(|scope| {
        for _ in 0..READERS.min(pdfs.len()) {
            scope.spawn(|| {
                while let Some(n) = shared.claim() {
                    let file = files[pdfs[n]];
                    // A reader that panicked would leave the caller waiting for its PDF forever.
                    let done =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(file))).unwrap_or_else(|_| {
                            let cause = FileError::Failed("reading it failed unexpectedly".into());
                            Err(Unreadable { path: file.path.clone(), cause })
                        });
                    shared.put(n, done);
                }
            });
        }
        // Stops the readers however the caller ends, a panic included (they would wait for ever).
        let _stop = Stop(&shared);
        let mut next_pdf = 0;
        files.iter().enumerate().try_for_each(|(at, file)| {
            let done = if pdfs.get(next_pdf) == Some(&at) {
                next_pdf += 1;
                shared.take(next_pdf - 1)
            } else {
                read(file)
            };
            on_each(file, done)
        })
    })
}

/// Tells the readers to stop when dropped.
struct Stop<'a>(&'a Shared);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// What the readers and the caller share.
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// Which PDFs are read, taken, and waiting.
struct State {
    /// Each PDF's result, once read and until the caller takes it.
    done: Vec<Option<Read>>,
    /// How many PDFs the readers have claimed (the next one to claim).
    claimed: usize,
    /// How many the caller has taken.
    taken: usize,
    /// The caller is done: claim nothing more.
    stop: bool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next PDF for a reader: waits while it would be more than [`AHEAD`] past the one
    /// the caller waits for; `None` when all are claimed or the caller stopped.
    fn claim(&self) -> Option<usize> {
        let mut state = self.lock();
        loop {
            if state.stop || state.claimed >= state.done.len() {
                return None;
            }
            if state.claimed < state.taken + AHEAD {
                state.claimed += 1;
                return Some(state.claimed - 1);
            }
            state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// A reader's result for PDF `n`.
    fn put(&self, n: usize, read: Read) {
        self.lock().done[n] = Some(read);
        self.changed.notify_all();
    }

    /// PDF `n`'s result, waiting until it is read.
    fn take(&self, n: usize) -> Read {
        let mut state = self.lock();
        loop {
            if let Some(read) = state.done[n].take() {
                state.taken = n + 1;
                drop(state);
                self.changed.notify_all();
                return read;
            }
            state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The caller wants nothing more: readers finish the PDF they are reading and end.
    fn stop(&self) {
        self.lock().stop = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    fn listed(paths: &[&str]) -> Vec<Listed> {
        paths.iter().map(|p| Listed { path: (*p).to_string(), size: 0, mtime_ns: 0 }).collect()
    }

    /// The walk hands over documents until the next would take the total over
    /// `total_bytes`: that one is left out with a warning naming the setting, and the smaller
    /// ones after it are still read.
    #[test]
    fn the_walk_leaves_out_what_would_pass_the_total() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for (name, bytes) in [("a.md", 60), ("b.md", 50), ("c.md", 30)] {
            std::fs::write(tmp.path().join(name), "x".repeat(bytes)).expect("write");
        }
        let dir = cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("open");
        let walk = walk_docs(&dir, Limits { file_bytes: 1 << 20, total_bytes: 100 });
        let read: Vec<&str> = walk.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(read, ["docs/a.md", "docs/c.md"]);
        assert_eq!(walk.warnings.len(), 1, "{:?}", walk.warnings);
        assert!(
            walk.warnings[0].starts_with("docs/b.md: the docs' text would be over index.max_total_bytes (100 bytes)")
        );
        assert_eq!(walk_docs(&dir, Limits::file_only(1 << 20)).files.len(), 3);
    }

    /// Every document reaches the caller once, in the listing's order, whichever reader read it.
    #[test]
    fn documents_arrive_in_the_listing_s_order() {
        let names: Vec<String> =
            (0..40).map(|n| if n % 3 == 0 { format!("docs/{n:02}.md") } else { format!("docs/{n:02}.pdf") }).collect();
        let files = listed(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let refs: Vec<&Listed> = files.iter().collect();
        let mut seen = Vec::new();
        let read = |f: &Listed| Ok((f.path.clone(), 0));
        read_each_with::<()>(&refs, &read, &mut |f, r| {
            assert_eq!(r.as_ref().map(|(t, _)| t.as_str()).ok(), Some(f.path.as_str()));
            seen.push(f.path.clone());
            Ok(())
        })
        .expect("read");
        assert_eq!(seen, names);
    }

    /// A PDF whose reader does not return (a hostile file, until `index.pdf_seconds`) holds
    /// up one reader: the PDFs after it are read meanwhile by the others. The slow read here
    /// returns only once the next two PDFs have been read, which cannot happen if PDFs are
    /// read one after another (it then gives up after a minute, and the test fails).
    #[test]
    fn a_slow_pdf_does_not_hold_up_the_others() {
        let files = listed(&["docs/a-slow.pdf", "docs/b.pdf", "docs/c.md", "docs/d.pdf"]);
        let refs: Vec<&Listed> = files.iter().collect();
        let (read_tx, read_rx) = mpsc::channel::<String>();
        let read_tx = Mutex::new(read_tx);
        let read_rx = Mutex::new(read_rx);
        let read = |f: &Listed| {
            if f.path.ends_with("slow.pdf") {
                let rx = read_rx.lock().expect("lock");
                let others = received(&rx, 2);
                return Ok((format!("read after {}", others.join(" and ")), 0));
            }
            if f.path.ends_with(".pdf") {
                let _ = read_tx.lock().expect("lock").send(f.path.clone());
            }
            Ok((f.path.clone(), 0))
        };
        let mut texts = Vec::new();
        read_each_with::<()>(&refs, &read, &mut |_, r| {
            texts.push(r.map(|(t, _)| t).unwrap_or_default());
            Ok(())
        })
        .expect("read");
        assert_eq!(texts[0], "read after docs/b.pdf and docs/d.pdf", "{texts:?}");
        assert_eq!(texts[1..], ["docs/b.pdf", "docs/c.md", "docs/d.pdf"]);
    }

    /// While the caller handles one document (inserting it into the index), the next PDFs are
    /// read meanwhile, at most [`AHEAD`] past it. The caller here waits, for the first PDF,
    /// until the readers have read the [`AHEAD`] after it, which cannot happen if PDFs are
    /// read only when the caller asks (it then gives up after a minute, and the test fails).
    #[test]
    fn pdfs_are_read_ahead_while_the_caller_works_and_no_further() {
        let names: Vec<String> = (0..AHEAD + 4).map(|n| format!("docs/{n:02}.pdf")).collect();
        let files = listed(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let refs: Vec<&Listed> = files.iter().collect();
        let (read_tx, read_rx) = mpsc::channel::<usize>();
        let read_tx = Mutex::new(read_tx);
        let furthest = std::sync::atomic::AtomicUsize::new(0);
        let read = |f: &Listed| {
            let n: usize = f.path[5..7].parse().expect("a number");
            furthest.fetch_max(n, std::sync::atomic::Ordering::SeqCst);
            let _ = read_tx.lock().expect("lock").send(n);
            Ok((f.path.clone(), 0))
        };
        let mut read_by_then = Vec::new();
        read_each_with::<()>(&refs, &read, &mut |f, _| {
            if f.path == "docs/00.pdf" {
                // 00 itself, then the AHEAD after it (01..=AHEAD), no more until 00 is taken.
                read_by_then = received(&read_rx, AHEAD + 1);
                read_by_then.sort_unstable();
                // No reader may start PDF AHEAD + 1 while the caller still handles 00.
                assert!(furthest.load(std::sync::atomic::Ordering::SeqCst) <= AHEAD, "read further than AHEAD");
            }
            Ok(())
        })
        .expect("read");
        assert_eq!(read_by_then, (0..=AHEAD).collect::<Vec<_>>());
    }

    /// Up to `n` messages from `rx`, as many as arrive within a minute.
    fn received<T>(rx: &mpsc::Receiver<T>, n: usize) -> Vec<T> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut got = Vec::new();
        while got.len() < n {
            match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
                Ok(message) => got.push(message),
                Err(_) => break,
            }
        }
        got
    }

    /// The caller's error stops the reading and is returned; nothing more is handed over.
    #[test]
    fn the_caller_s_error_stops_the_reading() {
        let files = listed(&["docs/a.pdf", "docs/b.pdf", "docs/c.pdf", "docs/d.pdf"]);
        let refs: Vec<&Listed> = files.iter().collect();
        let mut handed = 0;
        let read = |f: &Listed| Ok((f.path.clone(), 0));
        let outcome = read_each_with(&refs, &read, &mut |f, _| {
            handed += 1;
            if f.path == "docs/b.pdf" { Err("stop") } else { Ok(()) }
        });
        assert_eq!((outcome, handed), (Err("stop"), 2));
    }
}
