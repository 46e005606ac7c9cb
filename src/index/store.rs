//! The index on disk: one SQLite file (beside the session log unless `index.path` says
//! otherwise) holding the sections of the last build and, for every document, its size,
//! modification time, content hash and rows.
//!
//! Opening it brings it up to date in one transaction: a file with the same size and
//! modification time is not read; a file whose content hash is unchanged is not chunked again;
//! only the rows of new, changed and removed files are rewritten. A file written by another
//! format (another docs-agent, tokenizer or column set), for another workspace, or that SQLite
//! cannot read, is rebuilt from scratch: the index never answers from rows it cannot vouch for.
//!
//! The file is kept in write-ahead-log mode. The process then searches it in place, through
//! read-only connections that each hold a read transaction begun after the update, so another
//! process updating the same file never changes what this one reads in the middle of an answer,
//! and never waits for it either (a WAL reader does not block a writer). The pages are read
//! through a memory map, shared with every other process reading the file: nothing is copied.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use cap_std::fs::Dir;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use super::stems;
use super::walk::Limits;
use super::walk::{self, DocFile, Listed, Listing};
use super::{Index, IndexError, Stats, Version, create_schema, insert_rows, rows_of};

/// What the file's `meta.format` must say to be read: a change to anything it names makes
/// every older file rebuild on its next open.
pub const FORMAT: &str = concat!(
    "docs-agent index 7 (docs-agent ",
    env!("CARGO_PKG_VERSION"),
    "): fts5 porter unicode61 remove_diacritics 2; heading, body, leaf, place; windows of 2000 bytes; text hash; PDFs read"
);
/// A file modified this close to the moment it was read may change again within the same
/// timestamp tick; it is recorded with no time, so the next update reads it again.
const RACY_NS: i64 = 2_000_000_000;
/// How many times opening starts over when another process replaced the file meanwhile.
const ATTEMPTS: usize = 3;
/// How long an update waits for another process's update of the same file.
const BUSY: Duration = Duration::from_secs(60);

/// The table beside `sections` and `files` ([`super::create_schema`]).
const STORE_SCHEMA: &str = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/// What opening the file changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Update {
    /// Why everything was rebuilt, if it was.
    pub rebuilt: Option<String>,
    /// Documents indexed for the first time.
    pub added: usize,
    /// Documents whose content changed.
    pub changed: usize,
    /// Documents gone (or no longer readable).
    pub removed: usize,
    /// Documents whose size or time changed but whose content did not.
    pub touched: usize,
    /// Documents not read at all: same size and modification time.
    pub unchanged: usize,
    /// Documents changed but left as they were, because they are still being written.
    pub held: usize,
    /// The generation after the update: it grows by one with every update that changes rows.
    pub generation: i64,
}

impl Update {
    /// True when rows were written.
    pub fn wrote(&self) -> bool {
        self.rebuilt.is_some() || self.added + self.changed + self.removed > 0
    }
}

/// How far an update has come: documents read so far, of how many.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

/// One document as the file remembers it.
struct Known {
    size: i64,
    mtime_ns: i64,
    hash: String,
    rows: (i64, i64),
    /// Why the document could not be read when it was last tried, if it could not.
    warning: Option<String>,
    /// Bytes of text it gave; with a warning, none are in the index (for a document left out
    /// for `index.max_total_bytes`, what it would take; else 0).
    text_bytes: u64,
}

/// How a listed document compares with what the file remembers of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshness {
    /// Same size and time: not read.
    Same,
    /// Same size, but its time was not trusted when it was read (see [`RACY_NS`]): read again.
    Recheck,
    /// New, or its size or time changed.
    Changed,
}

impl Known {
    /// How `listed` compares with this record.
    fn freshness(&self, listed: &Listed) -> Freshness {
        match (self.size == listed.size as i64, self.mtime_ns) {
            (true, t) if t == listed.mtime_ns => Freshness::Same,
            (true, 0) => Freshness::Recheck,
            _ => Freshness::Changed,
        }
    }
}

/// How `listed` compares with the file's records.
fn freshness(known: &HashMap<String, Known>, listed: &Listed) -> Freshness {
    known.get(&listed.path).map_or(Freshness::Changed, |k| k.freshness(listed))
}

/// The documents the file remembers that are no longer listed.
fn gone<'a>(known: &'a HashMap<String, Known>, listing: &Listing) -> Vec<(&'a String, &'a Known)> {
    let listed: HashSet<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
    known.iter().filter(|(path, _)| !listed.contains(path.as_str())).collect()
}

/// The content hash the file keeps for a document.
fn content_hash(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// A database of something else, which is `left` (alone, not deleted...).
fn not_ours(file: &Path, left: &str) -> IndexError {
    IndexError(format!(
        "search index {}: this SQLite file holds other tables and is not a docs-agent index, so it is {left}; set \
         index.path (DOCS_AGENT_INDEX) to another file",
        file.display()
    ))
}

/// Which listed documents an update leaves as the file has them (still being written, say):
/// a document it does not know yet is not added, one it knows keeps its rows.
pub type Held<'a> = &'a dyn Fn(&Listed) -> bool;

/// What one try of opening the file gave.
enum Opened {
    /// The index, as the file stands after the update.
    Index(Box<Index>, Update),
    /// The update left the generation the caller already searches: nothing to open.
    Same(Update),
    /// Another process replaced or updated the file before its readers opened it: start over.
    Replaced,
}

impl Index {
    /// The index kept in the SQLite file at `file`, brought up to date with `docs` first (see
    /// the module docs). `workspace` names the workspace (its canonical path): a file made for
    /// another one is rebuilt. `readers` threads search it at once; `progress` hears how many
    /// documents have been read.
    pub fn open(
        docs: &Dir,
        workspace: &str,
        file: &Path,
        limits: Limits,
        readers: usize,
        progress: Progress<'_>,
    ) -> Result<(Index, Update), IndexError> {
        let want = Want { held: &|_| false, current: None, readers };
        let target = Target { docs, workspace, file, limits };
        let (index, update) = Index::open_holding(&target, progress, &want)?;
        // Without a generation to compare, every try that is not replaced gives an index.
        let index = index.ok_or_else(|| IndexError(format!("search index {}: nothing was copied", file.display())))?;
        Ok((index, update))
    }

    /// What a running process calls when the docs may have changed: the file brought up to
    /// date like [`Index::open`], leaving `want.held` documents as they are, and copied into
    /// memory (`want.readers` times, from one read of the file) only when its generation is no
    /// longer `want.current`, the one the process searches.
    pub fn refresh(
        docs: &Dir,
        workspace: &str,
        file: &Path,
        limits: Limits,
        want: &Want<'_>,
    ) -> Result<(Option<Index>, Update), IndexError> {
        Index::open_holding(&Target { docs, workspace, file, limits }, &mut |_, _| {}, want)
    }

    /// [`Index::open`] and [`Index::refresh`]: tries until the file is not replaced meanwhile.
    fn open_holding(
        target: &Target<'_>,
        progress: Progress<'_>,
        want: &Want<'_>,
    ) -> Result<(Option<Index>, Update), IndexError> {
        for _ in 0..ATTEMPTS {
            match Index::open_once(target, &mut *progress, want)? {
                Opened::Index(index, update) => return Ok((Some(*index), update)),
                Opened::Same(update) => return Ok((None, update)),
                Opened::Replaced => {}
            }
        }
        Err(IndexError(format!(
            "search index {}: the file was replaced {ATTEMPTS} times while it was read (other docs-agent processes \
             rebuilding it for another workspace?); give each workspace its own index.path (DOCS_AGENT_INDEX)",
            target.file.display()
        )))
    }

    /// One try of [`Index::open_holding`].
    fn open_once(target: &Target<'_>, progress: Progress<'_>, want: &Want<'_>) -> Result<Opened, IndexError> {
        let file = target.file;
        let listing = walk::list_docs(target.docs);
        let job = Job { target: *target, listing: &listing, held: want.held };
        let mut warnings = listing.warnings.clone();
        let mut conn = connect(file)?;
        let attempt = foreign(&conn).and_then(|foreign| match foreign {
            true => Ok(None),
            false => refresh(&mut conn, &job, progress, &mut warnings).map(Some),
        });
        let mut update = match attempt {
            Ok(Some(update)) => update,
            Ok(None) => return Err(not_ours(file, "left alone")),
            Err(e) if unreadable(&e) => {
                drop(conn);
                let aside = move_aside(file)?;
                warnings = listing.warnings.clone();
                warnings.push(format!(
                    "search index {}: SQLite could not read it ({e}); it was moved to {} and the index rebuilt",
                    file.display(),
                    aside.display()
                ));
                conn = connect(file)?;
                let mut again =
                    refresh(&mut conn, &job, &mut |_, _| {}, &mut warnings).map_err(|e| failed(file, &e))?;
                again.rebuilt = Some(format!("SQLite could not read the old file ({e})"));
                again
            }
            Err(e) => return Err(failed(file, &e)),
        };
        // After the update: a first build written through a WAL would be written twice (into
        // the log, then into the file), 1.3-1.5x slower on the ERP corpus.
        write_ahead_log(&conn).map_err(|e| failed(file, &e))?;
        let now = version(&conn).map_err(|e| failed(file, &e))?;
        update.generation = now.generation;
        if want.current == Some(now) && update.rebuilt.is_none() {
            return Ok(Opened::Same(update));
        }
        drop(conn);
        let Some(Snapshot { conns, stats, version }) =
            snapshot(target, want.readers, update.generation).map_err(|e| failed(file, &e))?
        else {
            return Ok(Opened::Replaced);
        };
        let conns = conns.into_iter().map(Mutex::new).collect();
        let index = Index {
            conns,
            image: None,
            next: AtomicUsize::new(0),
            warnings,
            stats,
            version,
            semantic: None,
            reranker: None,
            hidden: Default::default(),
            revision: Mutex::new(None),
        };
        Ok(Opened::Index(Box::new(index), update))
    }
}

/// What a refresh wants besides the docs and the file.
pub struct Want<'a> {
    /// Documents to leave as they are (being written).
    pub held: Held<'a>,
    /// The version searched now: when the file is still at it, nothing is copied.
    pub current: Option<Version>,
    /// Databases in the new index, one per thread that searches at once.
    pub readers: usize,
}

/// The index file of one workspace's docs: what every step of opening it needs. Documents
/// are read from `docs` within `limits`; `workspace` is recorded in the file.
#[derive(Clone, Copy)]
struct Target<'a> {
    docs: &'a Dir,
    workspace: &'a str,
    file: &'a Path,
    limits: Limits,
}

/// What an update compares and reads: the documents listed in the target's `docs`, leaving
/// the `held` ones as they are.
struct Job<'a> {
    target: Target<'a>,
    listing: &'a Listing,
    held: Held<'a>,
}

/// Readers of the file as one update left it, with its counts and version.
struct Snapshot {
    /// Read-only connections, each inside a read transaction at the same generation.
    conns: Vec<Connection>,
    stats: Stats,
    version: Version,
}

/// How much of the file a reader maps into memory (SQLite reads past it with `pread`).
const MMAP_BYTES: i64 = 1 << 30;

/// `readers` read-only connections to the file, each holding a read transaction (a WAL
/// snapshot) for as long as it lives, with its counts and version from that moment.
///
/// The file is opened again by path, so another process may have replaced it (a rebuild) or
/// updated it since this update: each reader must say it is this workspace's index in the
/// current format, at the generation the update left, or it is `None` and the caller starts
/// over.
fn snapshot(target: &Target<'_>, readers: usize, generation_left: i64) -> rusqlite::Result<Option<Snapshot>> {
    let mut conns = Vec::with_capacity(readers.max(1));
    for _ in 0..readers.max(1) {
        let conn = Connection::open_with_flags(
            target.file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )?;
        conn.busy_timeout(BUSY)?;
        // Sorts and the scratch tables stay in memory: the kernel sandbox grants no temporary folder.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        stems::prepare(&conn)?;
        // The first read after BEGIN fixes what this connection sees until it is closed.
        conn.execute_batch("BEGIN DEFERRED")?;
        let same =
            stale_reason(&conn, target.workspace, target.limits)?.is_none() && generation(&conn)? == generation_left;
        if !same {
            return Ok(None);
        }
        conns.push(conn);
    }
    let stats = stats(&conns[0])?;
    let version = version(&conns[0])?;
    Ok(Some(Snapshot { conns, stats, version }))
}

/// The error for a file that cannot be used, naming it and what to do.
fn failed(file: &Path, e: &rusqlite::Error) -> IndexError {
    if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)) {
        return IndexError(format!(
            "search index {}: {e}: another process held it for over {} s; try again",
            file.display(),
            BUSY.as_secs()
        ));
    }
    IndexError(format!(
        "search index {}: {e}; delete the file or run `docs-agent index rebuild`, or set index.path (DOCS_AGENT_INDEX) \
         to another file, or to `memory`",
        file.display()
    ))
}

/// True for the errors of a file SQLite cannot read as a database.
fn unreadable(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
}

/// Opens (creating its folder and the file if needed) the index file.
pub fn connect(file: &Path) -> Result<Connection, IndexError> {
    // Private to its owner, like the session log beside it (SQLite gives the journal the
    // database file's mode).
    if let Some(folder) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .map_err(|e| IndexError(format!("search index: cannot create the folder {} ({e})", folder.display())))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| IndexError(format!("search index: cannot open {} ({e})", file.display())))?;
    let conn = Connection::open(file).map_err(|e| failed(file, &e))?;
    conn.busy_timeout(BUSY).map_err(|e| failed(file, &e))?;
    // Temporary data (a build's sorts, a large update's statement journal) stays in memory:
    // the kernel sandbox grants no temporary folder.
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(|e| failed(file, &e))?;
    Ok(conn)
}

/// Renames an index file SQLite cannot read to `NAME.unreadable-MS` (nothing is deleted: it
/// may not be ours), with its journal; the path it went to.
fn move_aside(file: &Path) -> Result<std::path::PathBuf, IndexError> {
    let ms = walk::epoch_ns(std::time::SystemTime::now()) / 1_000_000;
    let mut aside = file.as_os_str().to_owned();
    aside.push(format!(".unreadable-{ms}"));
    std::fs::rename(file, &aside).map_err(|e| {
        IndexError(format!(
            "search index {}: SQLite cannot read it, and it cannot be moved aside ({e})",
            file.display()
        ))
    })?;
    for suffix in ["-journal", "-wal", "-shm"] {
        let (mut journal, mut beside) = (file.as_os_str().to_owned(), aside.clone());
        journal.push(suffix);
        beside.push(suffix);
        // A journal that is not there is the usual case.
        let _ = std::fs::rename(journal, beside);
    }
    Ok(aside.into())
}

/// Puts the file in write-ahead-log mode, where readers keep a snapshot in place while another
/// process updates the file (`snapshot`); a file already in it stays so without a lock. A log
/// grown by a large update is cut back when it starts over.
fn write_ahead_log(conn: &Connection) -> rusqlite::Result<()> {
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR);
        return Err(rusqlite::Error::SqliteFailure(
            code,
            Some(format!("the file stays in journal mode {mode}, not wal")),
        ));
    }
    conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES)
}

/// How large a write-ahead log is left when it starts over.
const WAL_LIMIT_BYTES: i64 = 4 << 20;

/// True when the file holds tables but no docs-agent `meta.format`: a database of something
/// else, which an update must not touch.
fn foreign(conn: &Connection) -> rusqlite::Result<bool> {
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))?;
    let ours = meta(conn, "format")?.is_some_and(|f| f.starts_with("docs-agent index"));
    Ok(tables > 0 && !ours)
}

/// Clears the way for a rebuild: deletes an index file (and its journal), moves aside a file
/// SQLite cannot read, and refuses a database of something else.
pub fn reset(file: &Path) -> Result<Option<std::path::PathBuf>, IndexError> {
    if !file.exists() {
        return Ok(None);
    }
    let conn = Connection::open(file).map_err(|e| failed(file, &e))?;
    match foreign(&conn) {
        Ok(true) => Err(not_ours(file, "not deleted")),
        Ok(false) => {
            drop(conn);
            remove(file).map(|()| None)
        }
        Err(e) if unreadable(&e) => {
            drop(conn);
            move_aside(file).map(Some)
        }
        Err(e) => Err(failed(file, &e)),
    }
}

/// Deletes the index file and its journal, so it can be built again.
fn remove(file: &Path) -> Result<(), IndexError> {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(IndexError(format!("search index: cannot delete {} ({e})", Path::new(&name).display())));
            }
        }
    }
    Ok(())
}

/// A value of `meta`, if the table and the key exist.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    let has_meta: bool =
        conn.query_row("SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'", [], |r| {
            r.get(0)
        })?;
    if !has_meta {
        return Ok(None);
    }
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()
}

fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", params![key, value]).map(|_| ())
}

/// The generation and update time the file's `meta` records (a rebuild starts the generation
/// over, so the time tells two files apart).
pub fn version(conn: &Connection) -> rusqlite::Result<Version> {
    let updated_at_ms = meta(conn, "updated_at_ms")?.and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok(Version { generation: generation(conn)?, updated_at_ms })
}

/// The generation the file is at (0 before the first build).
pub fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(meta(conn, "generation")?.and_then(|g| g.parse().ok()).unwrap_or(0))
}

/// Why the file must be rebuilt for `workspace`, if it must.
pub fn stale_reason(conn: &Connection, workspace: &str, limits: Limits) -> rusqlite::Result<Option<String>> {
    let (format, built_for) = (meta(conn, "format")?, meta(conn, "workspace")?);
    Ok(match (format, built_for) {
        (None, _) => Some("it is new".to_string()),
        (Some(format), _) if format != FORMAT => Some(format!("it was written by another format ({format})")),
        (_, Some(other)) if other != workspace => Some(format!("it was built for another workspace ({other})")),
        _ => {
            let limits = [("max_file_bytes", limits.file_bytes), ("max_total_bytes", limits.total_bytes)];
            let mut changed = None;
            for (key, limit) in limits {
                let limit = limit.to_string();
                match meta(conn, key)? {
                    Some(other) if other != limit => {
                        changed = Some(format!("it was built with index.{key} = {other}, not {limit}"));
                        break;
                    }
                    _ => {}
                }
            }
            changed
        }
    })
}

/// Brings the file up to date with `listing`, in one transaction that another process's
/// update waits for.
fn refresh(
    conn: &mut Connection,
    job: &Job<'_>,
    progress: Progress<'_>,
    warnings: &mut Vec<String>,
) -> rusqlite::Result<Update> {
    let Job { target: Target { docs, workspace, limits, .. }, listing, held } = *job;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut update = Update::default();
    if let Some(reason) = stale_reason(&tx, workspace, limits)? {
        let tables: Vec<String> = tx
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for table in tables {
            tx.execute_batch(&format!("DROP TABLE IF EXISTS \"{}\";", table.replace('"', "\"\"")))?;
        }
        tx.execute_batch("DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS files;")?;
        create_schema(&tx)?;
        tx.execute_batch(STORE_SCHEMA)?;
        set_meta(&tx, "format", FORMAT)?;
        set_meta(&tx, "workspace", workspace)?;
        set_meta(&tx, "max_file_bytes", &limits.file_bytes.to_string())?;
        set_meta(&tx, "max_total_bytes", &limits.total_bytes.to_string())?;
        update.rebuilt = Some(reason);
    }
    let known = known(&tx)?;
    let stale: Vec<&Listed> = listing.files.iter().filter(|f| freshness(&known, f) != Freshness::Same).collect();
    update.unchanged = listing.files.len() - stale.len();
    let (waiting, mut todo): (Vec<&Listed>, Vec<&Listed>) = stale.into_iter().partition(|f| held(f));
    update.held = waiting.len();
    let now_ns = walk::epoch_ns(std::time::SystemTime::now());
    // A time this close to now is not trusted: recorded as 0, so the next update reads it.
    let trusted = |mtime_ns: i64| if now_ns.saturating_sub(mtime_ns) < RACY_NS { 0 } else { mtime_ns };
    let todo_paths: HashSet<&str> = todo.iter().map(|f| f.path.as_str()).collect();
    // Toward `index.max_total_bytes`, the text the index holds counts first: the documents kept
    // as they are, and those to be read again until each is (`text_bytes` of a row with a
    // warning is not in the index: for one left out for the total, what it would take).
    let indexed = |k: &Known| if k.warning.is_none() { k.text_bytes } else { 0 };
    let mut total = todo.iter().filter_map(|f| known.get(&f.path)).map(indexed).fold(0u64, u64::saturating_add);
    let mut left_out = Vec::new();
    for listed in listing.files.iter().filter(|f| !todo_paths.contains(f.path.as_str())) {
        if let Some(k) = known.get(&listed.path) {
            total = total.saturating_add(indexed(k));
            // (One that changed and is held waits with the others being written.)
            let unchanged = k.freshness(listed) == Freshness::Same;
            if unchanged && k.warning.as_deref() == Some(limits.over_total(&listed.path).as_str()) {
                left_out.push((listed, k.text_bytes));
            } else if let Some(warning) = k.warning.clone() {
                warnings.push(warning);
            }
        }
    }
    // A document left out for the total is read again, unchanged, once there is room for it.
    let mut room = total;
    for (listed, would_take) in left_out {
        match room.checked_add(would_take) {
            Some(sum) if sum <= limits.total_bytes => {
                room = sum;
                todo.push(listed);
                update.unchanged -= 1;
            }
            _ => warnings.push(limits.over_total(&listed.path)),
        }
    }
    todo.sort_by(|a, b| a.path.cmp(&b.path));
    {
        let mut insert = tx.prepare(super::INSERT_SQL)?;
        let mut remove_rows = tx.prepare("DELETE FROM sections WHERE rowid BETWEEN ?1 AND ?2")?;
        let mut forget = tx.prepare("DELETE FROM files WHERE path = ?1")?;
        let mut touch = tx.prepare("UPDATE files SET size = ?2, mtime_ns = ?3 WHERE path = ?1")?;
        let mut record = tx.prepare(
            "INSERT OR REPLACE INTO files (path, size, mtime_ns, hash, first_row, last_row, sections, warning, \
             text_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        let mut done = 0;
        super::ahead::read_each::<rusqlite::Error>(docs, &todo, limits.file_bytes, &mut |listed, read| {
            progress(done, todo.len());
            done += 1;
            let before = known.get(&listed.path);
            // The total without this document's text as the index holds it now.
            let base = total.saturating_sub(before.map_or(0, indexed));
            let read = read.map_err(|u| (u.to_string(), 0));
            // Over the docs' total: left out like a document that cannot be read, remembering
            // what it would take.
            let read = read.and_then(|(text, size_read)| match base.checked_add(text.len() as u64) {
                Some(sum) if sum <= limits.total_bytes => Ok((text, size_read)),
                _ => Err((limits.over_total(&listed.path), text.len() as u64)),
            });
            let (text, size_read) = match read {
                Ok(read) => read,
                Err((warning, would_take)) => {
                    total = base;
                    // Recorded with its warning, so it is not read again until it changes.
                    if let Some(k) = before.filter(|k| k.warning.is_none()) {
                        remove_rows.execute(params![k.rows.0, k.rows.1])?;
                        update.removed += 1;
                    }
                    let (size, mtime) = (listed.size as i64, trusted(listed.mtime_ns));
                    let would_take = i64::try_from(would_take).unwrap_or(i64::MAX);
                    record.execute(params![listed.path, size, mtime, "", 0, -1, 0, warning, would_take])?;
                    warnings.push(warning);
                    return Ok(());
                }
            };
            if size_read != listed.size {
                // Written to since it was listed: left as it was (and counted), for the next update.
                update.held += 1;
                return Ok(());
            }
            let hash = content_hash(&text);
            let text_bytes = text.len() as u64;
            total = base.saturating_add(text_bytes);
            if before.is_some_and(|k| k.hash == hash && k.warning.is_none()) {
                touch.execute(params![listed.path, listed.size as i64, trusted(listed.mtime_ns)])?;
                update.touched += 1;
                return Ok(());
            }
            match before.filter(|k| k.warning.is_none()) {
                Some(k) => {
                    remove_rows.execute(params![k.rows.0, k.rows.1])?;
                    update.changed += 1;
                }
                None => update.added += 1,
            }
            let rows = rows_of(&DocFile { path: listed.path.clone(), text });
            let (first, last) = insert_rows(&mut insert, &rows)?.unwrap_or((0, -1));
            let size = listed.size as i64;
            let mtime = trusted(listed.mtime_ns);
            let sections = rows.len() as i64;
            let text_bytes = i64::try_from(text_bytes).unwrap_or(i64::MAX);
            record.execute(params![
                listed.path,
                size,
                mtime,
                hash,
                first,
                last,
                sections,
                None::<String>,
                text_bytes
            ])?;
            Ok(())
        })?;
        progress(todo.len(), todo.len());
        for (path, k) in gone(&known, listing) {
            remove_rows.execute(params![k.rows.0, k.rows.1])?;
            forget.execute([path])?;
            update.removed += 1;
        }
    }
    if update.wrote() {
        let next = generation(&tx)? + 1;
        set_meta(&tx, "generation", &next.to_string())?;
        let now_ms = walk::epoch_ns(std::time::SystemTime::now()) / 1_000_000;
        set_meta(&tx, "updated_at_ms", &now_ms.to_string())?;
    }
    tx.commit()?;
    Ok(update)
}

/// Every document the file remembers.
fn known(conn: &Connection) -> rusqlite::Result<HashMap<String, Known>> {
    let mut stmt =
        conn.prepare("SELECT path, size, mtime_ns, hash, first_row, last_row, warning, text_bytes FROM files")?;
    let rows = stmt.query_map([], |r| {
        let known = Known {
            size: r.get(1)?,
            mtime_ns: r.get(2)?,
            hash: r.get(3)?,
            rows: (r.get(4)?, r.get(5)?),
            warning: r.get(6)?,
            text_bytes: u64::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
        };
        Ok((r.get::<_, String>(0)?, known))
    })?;
    rows.collect()
}

/// Counts of what the file holds.
pub fn stats(conn: &Connection) -> rusqlite::Result<Stats> {
    let (files, sections): (i64, i64) =
        conn.query_row("SELECT count(*), coalesce(sum(sections), 0) FROM files WHERE warning IS NULL", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let empty_files = conn
        .prepare("SELECT path FROM files WHERE sections = 0 AND warning IS NULL ORDER BY path")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(Stats { files: files.max(0) as usize, sections: sections.max(0) as usize, empty_files })
}

/// What is out of date, by size and modification time alone (nothing is read): documents
/// new or changed, documents gone, and documents to read again because they were written
/// moments before they were last read.
pub fn pending(conn: &Connection, listing: &Listing) -> rusqlite::Result<(usize, usize, usize)> {
    let known = known(conn)?;
    let count = |state| listing.files.iter().filter(|f| freshness(&known, f) == state).count();
    Ok((count(Freshness::Changed), gone(&known, listing).len(), count(Freshness::Recheck)))
}

/// Every problem found by reading the whole file and every document: SQLite's and FTS5's
/// integrity checks, and each document's content hash against the one the file remembers.
pub fn verify(conn: &Connection, docs: &Dir, listing: &Listing, limits: Limits) -> rusqlite::Result<Vec<String>> {
    let mut problems = Vec::new();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if integrity != "ok" {
        problems.push(format!("SQLite integrity check: {integrity}"));
    }
    if let Err(e) = conn.execute("INSERT INTO sections(sections) VALUES ('integrity-check')", []) {
        problems.push(format!("FTS5 integrity check: {e}"));
    }
    let known = known(conn)?;
    for listed in &listing.files {
        let Some(k) = known.get(&listed.path) else {
            problems.push(format!("{}: not in the index", listed.path));
            continue;
        };
        if k.warning.is_some() {
            // Skipped with a warning when it was read; `check` and every question say why.
            continue;
        }
        match walk::read_listed(docs, &listed.path, limits.file_bytes) {
            Ok((text, _)) if content_hash(&text) == k.hash => {}
            Ok(_) => problems.push(format!("{}: the index holds an older version", listed.path)),
            Err(unreadable) => problems.push(unreadable.to_string()),
        }
    }
    for (path, _) in gone(&known, listing) {
        problems.push(format!("{path}: in the index, but no longer in docs/"));
    }
    problems.sort();
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Room for every test's documents.
    const LIMITS: Limits = Limits { file_bytes: 1 << 20, total_bytes: 1 << 30 };

    fn docs(dir: &Path) -> Dir {
        Dir::open_ambient_dir(dir, cap_std::ambient_authority()).expect("open docs")
    }

    fn open(dir: &Path, file: &Path) -> (Index, Update) {
        Index::open(&docs(dir), "ws", file, LIMITS, 1, &mut |_, _| {}).expect("open index")
    }

    /// Writes `text` with a time a minute ago, old enough to be trusted.
    fn write_old(path: &Path, text: &str) {
        std::fs::write(path, text).expect("write");
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(old)).expect("age");
    }

    /// A temporary folder with an empty `docs/`, the docs folder and where the index goes.
    fn folder() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("docs");
        std::fs::create_dir_all(&dir).expect("docs");
        let file = tmp.path().join("state/index.db");
        (tmp, dir, file)
    }

    /// [`Index::refresh`] of the folder's docs, searched by two threads.
    fn refresh(dir: &Path, file: &Path, held: Held<'_>, current: Version) -> (Option<Index>, Update) {
        let want = Want { held, current: Some(current), readers: 2 };
        Index::refresh(&docs(dir), "ws", file, LIMITS, &want).expect("refresh")
    }

    fn counts(u: &Update) -> (usize, usize, usize, usize, usize) {
        (u.added, u.changed, u.removed, u.touched, u.unchanged)
    }

    /// An update counts the text of the documents it keeps first: a new document that would
    /// take the total over `total_bytes` is left out with its warning, and read again, changed
    /// or not, once there is room for it. A changed limit rebuilds the file.
    #[test]
    fn an_update_keeps_the_docs_text_within_the_total() {
        let (_tmp, dir, file) = folder();
        let limits = Limits { file_bytes: 1 << 20, total_bytes: 100 };
        let open_within =
            |limits: Limits| Index::open(&docs(&dir), "ws", &file, limits, 1, &mut |_, _| {}).expect("open index");
        write_old(&dir.join("a.md"), &format!("# A\n\n{}\n", "alpha ".repeat(10)));
        let (_, update) = open_within(limits);
        assert_eq!(update.added, 1);
        write_old(&dir.join("b.md"), &format!("# B\n\n{}\n", "beta ".repeat(10)));
        let (index, update) = open_within(limits);
        assert_eq!(update.added, 0, "b would take the total over 100 bytes");
        assert!(index.warnings.iter().any(|w| w.contains("docs/b.md") && w.contains("index.max_total_bytes")));
        assert!(index.search("beta", 3).expect("search").is_empty());
        // With a gone there is room, but b is being written: it waits, unread.
        std::fs::remove_file(dir.join("a.md")).expect("remove a");
        let b = dir.join("b.md");
        std::fs::File::options()
            .append(true)
            .open(&b)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"x\n"))
            .expect("write");
        let want = Want { held: &|f: &Listed| f.path == "docs/b.md", current: None, readers: 1 };
        let (_, update) = Index::refresh(&docs(&dir), "ws", &file, limits, &want).expect("refresh");
        assert_eq!((update.added, update.removed, update.held, update.unchanged), (0, 1, 1, 0));
        // Once written, it is read again.
        write_old(&b, &format!("# B\n\n{}\n", "beta ".repeat(10)));
        let (index, update) = open_within(limits);
        assert_eq!((update.added, update.removed, update.unchanged), (1, 0, 0));
        assert_eq!(index.search("beta", 3).expect("search").len(), 1);
        let (_, update) = open_within(Limits { total_bytes: 200, ..limits });
        assert!(update.rebuilt.is_some_and(|r| r.contains("index.max_total_bytes = 100, not 200")));
    }

    #[test]
    fn only_what_changed_is_read_and_rewritten() {
        let (_tmp, dir, file) = folder();
        write_old(&dir.join("a.md"), "# A\n\nalpha words\n");
        write_old(&dir.join("b.md"), "# B\n\nbeta words\n");

        let (index, update) = open(&dir, &file);
        assert_eq!(update.rebuilt.as_deref(), Some("it is new"));
        assert_eq!((counts(&update), update.generation), ((2, 0, 0, 0, 0), 1));
        assert_eq!((index.stats.files, index.stats.sections), (2, 2));

        let (_, update) = open(&dir, &file);
        assert_eq!((update.rebuilt.clone(), counts(&update), update.generation), (None, (0, 0, 0, 0, 2), 1));

        write_old(&dir.join("a.md"), "# A\n\nalpha words, longer now\n");
        write_old(&dir.join("c.md"), "# C\n\ngamma\n");
        std::fs::remove_file(dir.join("b.md")).expect("remove b");
        let (index, update) = open(&dir, &file);
        assert_eq!((counts(&update), update.generation), ((1, 1, 1, 0, 0), 2));
        let top = |q: &str| index.search(q, 3).expect("search").first().map(|h| h.path.clone());
        assert_eq!(top("longer"), Some("docs/a.md".to_string()));
        assert_eq!(top("gamma"), Some("docs/c.md".to_string()));
        assert_eq!(top("beta"), None, "the removed file's rows are gone");

        // Rewritten with the same bytes: read and hashed, not chunked; the generation stays.
        std::fs::write(dir.join("c.md"), "# C\n\ngamma\n").expect("same again");
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options().write(true).open(dir.join("c.md")).and_then(|f| f.set_modified(later)).expect("mtime");
        let (_, update) = open(&dir, &file);
        assert_eq!((counts(&update), update.generation), ((0, 0, 0, 1, 1), 2));
    }

    #[test]
    fn an_unreadable_document_is_remembered_and_a_fresh_time_is_not_trusted() {
        let (_tmp, dir, file) = folder();
        std::fs::write(dir.join("a.md"), "# A\n\nalpha\n").expect("a");
        std::fs::write(dir.join("bin.md"), b"\0\x01").expect("binary");
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        for name in ["a.md", "bin.md"] {
            std::fs::File::options().write(true).open(dir.join(name)).and_then(|f| f.set_modified(old)).expect("age");
        }
        let (index, update) = open(&dir, &file);
        assert_eq!((counts(&update), index.stats.files), ((1, 0, 0, 0, 0), 1));
        assert!(index.warnings.iter().any(|w| w.starts_with("docs/bin.md: binary")), "{:?}", index.warnings);
        // Not read again while unchanged, and still reported.
        let (index, update) = open(&dir, &file);
        assert_eq!(counts(&update), (0, 0, 0, 0, 2));
        assert!(index.warnings.iter().any(|w| w.starts_with("docs/bin.md: binary")), "{:?}", index.warnings);
        let conn = Connection::open(&file).expect("open");
        let listing = walk::list_docs(&docs(&dir));
        assert_eq!(verify(&conn, &docs(&dir), &listing, LIMITS).expect("verify"), Vec::<String>::new());

        // Written just now: recorded without a time, so the next update reads it again.
        std::fs::write(dir.join("a.md"), "# A\n\nalpha two\n").expect("edit");
        let (_, update) = open(&dir, &file);
        assert_eq!(update.changed, 1);
        let (_, update) = open(&dir, &file);
        assert_eq!((update.touched, update.unchanged), (1, 1), "{update:?}");
    }

    #[test]
    fn an_open_index_reads_its_snapshot_while_another_process_updates_the_file() {
        let (_tmp, dir, file) = folder();
        write_old(&dir.join("a.md"), "# A\n\nwalrus\n");
        let (reading, _) = open(&dir, &file);
        assert_eq!(reading.search("walrus", 5).expect("search").len(), 1);

        // Another process's update commits while `reading` holds its snapshot: it does not
        // wait for the reader (a rollback journal would have it wait), and the reader sees none of it.
        write_old(&dir.join("a.md"), "# A\n\nnarwhal\n");
        write_old(&dir.join("b.md"), "# B\n\nnarwhal too\n");
        let (updated, update) = open(&dir, &file);
        assert_eq!((update.changed, update.added), (1, 1), "{update:?}");
        assert_eq!(updated.search("narwhal", 5).expect("search").len(), 2);
        assert_eq!(reading.search("walrus", 5).expect("search").len(), 1, "the reader keeps its snapshot");
        assert!(reading.search("narwhal", 5).expect("search").is_empty());
        assert_eq!((reading.stats.files, updated.stats.files), (1, 2));
        assert!(reading.version.generation < updated.version.generation);

        let conn = reading.reader();
        assert!(!conn.is_autocommit(), "the reader stays in its read transaction");
        stems::stems(&conn, &["walrus words"]).expect("stems");
        assert!(!conn.is_autocommit(), "the reader stays in its read transaction after stemming");
        drop(conn);
        // Nothing was copied: the reader's memory does not hold the file.
        assert!(reading.image.is_none() && updated.image.is_none());
        drop(reading);
        let (again, update) = open(&dir, &file);
        assert_eq!((update.unchanged, again.version), (2, updated.version));
    }

    #[test]
    fn another_format_or_workspace_rebuilds_and_a_foreign_database_is_left_alone() {
        let (tmp, dir, file) = folder();
        std::fs::write(dir.join("a.md"), "# A\n\nalpha\n").expect("a");
        open(&dir, &file);

        let conn = Connection::open(&file).expect("open");
        conn.execute("UPDATE meta SET value = 'docs-agent index 0' WHERE key = 'format'", []).expect("age it");
        drop(conn);
        let (_, update) = open(&dir, &file);
        assert!(update.rebuilt.as_deref().is_some_and(|r| r.contains("another format")), "{update:?}");
        assert_eq!(counts(&update), (1, 0, 0, 0, 0));

        let (_, update) = Index::open(&docs(&dir), "other", &file, LIMITS, 1, &mut |_, _| {}).expect("open");
        assert!(update.rebuilt.as_deref().is_some_and(|r| r.contains("another workspace")), "{update:?}");

        // A file someone put in rollback-journal mode: back to a write-ahead log.
        Connection::open(&file)
            .and_then(|c| c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())))
            .expect("delete");
        std::fs::write(dir.join("w.md"), "# W\n\nwombat\n").expect("w");
        let (index, _) = Index::open(&docs(&dir), "other", &file, LIMITS, 1, &mut |_, _| {}).expect("open");
        assert_eq!(index.search("wombat", 1).expect("search").len(), 1);

        let theirs = tmp.path().join("theirs.db");
        Connection::open(&theirs)
            .and_then(|c| c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);"))
            .expect("db");
        let Err(e) = Index::open(&docs(&dir), "ws", &theirs, LIMITS, 1, &mut |_, _| {}) else {
            panic!("a foreign database must not be used");
        };
        assert!(e.0.contains("not a docs-agent index"), "{e}");
        let rows: i64 =
            Connection::open(&theirs).and_then(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))).expect("t");
        assert_eq!(rows, 1, "left alone");
        let Err(e) = reset(&theirs) else {
            panic!("a rebuild must not delete a foreign database");
        };
        assert!(e.0.contains("not deleted") && theirs.exists(), "{e}");
    }

    #[test]
    fn held_documents_keep_their_rows_and_an_unchanged_generation_is_not_copied() {
        let (_tmp, dir, file) = folder();
        write_old(&dir.join("a.md"), "# A\n\nAlpha walrus text.\n");
        let (index, _) = open(&dir, &file);
        let first = index.version;
        let nothing = |_: &Listed| false;
        let (copy, update) = refresh(&dir, &file, &nothing, first);
        assert!(copy.is_none() && !update.wrote(), "nothing changed, nothing copied: {update:?}");

        write_old(&dir.join("a.md"), "# A\n\nAlpha narwhal text, longer now.\n");
        write_old(&dir.join("b.md"), "# B\n\nBeta narwhal.\n");
        let writing = |l: &Listed| l.path == "docs/a.md" || l.path == "docs/b.md";
        let (copy, update) = refresh(&dir, &file, &writing, first);
        assert_eq!((update.held, update.wrote()), (2, false), "{update:?}");
        assert!(copy.is_none(), "held documents change nothing");

        let (copy, update) = refresh(&dir, &file, &nothing, first);
        let copy = copy.expect("a new generation is copied");
        assert_eq!((update.added, update.changed, update.held), (1, 1, 0), "{update:?}");
        assert!(copy.version.generation > first.generation);
        let hits = copy.search("narwhal", 5).expect("search");
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!(copy.search("walrus", 5).expect("search").is_empty(), "the old text is gone");
        let section = copy.section("docs/a.md", "a").expect("section").expect("found");
        assert!(section.text.contains("narwhal") && section.heading == "A", "{section:?}");
        assert!(copy.section("docs/zzz.md", "").expect("section").is_none());
        let again = refresh(&dir, &file, &nothing, copy.version);
        assert!(again.0.is_none(), "the generation searched is current");
    }
}
