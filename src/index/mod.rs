//! The search index: the documents under `docs/` (Markdown, MDX, text, HTML: `kind`) chunked
//! by heading into an in-memory SQLite FTS5 table (porter stems), searched with every
//! selective word of the question, ranked by BM25 over the heading path, the body, the
//! section's own heading and the words of its file's path, then by evidence from the rest of
//! each section's file (`rank`). Bodies are redacted and sanitised when indexed, so nothing
//! downstream can see a secret from the docs.

pub mod ahead;
pub mod chunk;
pub mod embed;
pub mod evidence;
pub mod formats;
mod html;
mod image;
pub mod live;
pub mod mdx;
pub mod passage;
pub mod pdf;
pub mod progress;
mod prune;
pub mod query;
pub mod rank;
pub mod remote;
pub mod rerank;
pub mod section;
mod stems;
pub mod store;
pub mod vectors;
pub mod walk;

/// A text's words as the index stems them (what an operator's argument rules are matched in too).
pub use stems::stemmed;
pub use walk::Limits;

use cap_std::fs::Dir;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, MAIN_DB, params};

use crate::doc_kind::DocKind;
use crate::guard::{self, redact};

/// FTS5 settings for one bulk load: a large pending-terms buffer (so segments are flushed
/// rarely), no automatic merging during the load, and large leaf pages. Measured in
/// `benches/index.rs`: a fifth faster to build, same top results, slightly faster search.
const BULK_LOAD_SETTINGS: &str = "
    INSERT INTO sections(sections, rank) VALUES('hashsize', 33554432);
    INSERT INTO sections(sections, rank) VALUES('automerge', 0);
    INSERT INTO sections(sections, rank) VALUES('pgsz', 16000);";
/// Below this many bytes of docs the build runs on one thread.
const PARALLEL_BYTES: u64 = 1 << 20;
/// Files chunked ahead of the inserting thread.
const PIPELINE_DEPTH: usize = 64;
/// BM25 weights of the indexed columns, in their order: the heading path ("Refunds > Window"),
/// the body, the section's own heading ("Window") and the words of its file's path
/// ("features subscriptions failed payments"). Chosen on the dev half of the question sets
/// (`cargo bench --bench retrieval`): support tickets name symptoms, not headings, so the
/// heading path weighs as much as the body (5 put the right file first for 43% of the billing
/// dev questions, 1 for 67%); the own heading weighs 2 so that a short question naming a
/// section ("retry schedule for failed payments") finds that section rather than its parent;
/// the path words lifted the ERP dev half from 0.600 to 0.633 at R@1.
const WEIGHTS: [f64; 4] = [1.0, 1.0, 2.0, 1.0];
/// Longest window of a section that is indexed and returned; a longer section is indexed as
/// several windows, so a hit shows the part that matched.
pub const EXCERPT_BYTES: usize = 2_000;
/// Candidate rows fetched per wanted hit, since one section may have several windows.
const CANDIDATES_PER_HIT: usize = 4;
/// Candidate rows fetched at least: the pool in which a file's other sections count as
/// evidence for each of them ([`rank::with_file_evidence`]).
const CANDIDATE_POOL: usize = 40;

/// One ranked section.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Workspace-relative file, e.g. `docs/refunds.md`.
    pub path: String,
    /// Heading slug; empty for text before the first heading.
    pub anchor: String,
    /// "Refunds > Window".
    pub heading: String,
    /// BM25 score, higher is better.
    pub score: f64,
    /// First and last line of the section in its file.
    pub lines: (usize, usize),
    /// The section text, or the part of it that matched when it is long.
    pub excerpt: String,
}

/// What a search found: the sections; for those the question's vector is near, how many
/// standard deviations each stands above the mean similarity of every section; for those the
/// reranker read, how relevant it found each.
#[derive(Debug, Clone)]
pub struct Found {
    /// The best sections, best first.
    pub hits: Vec<Hit>,
    /// By source (`docs/refunds.md#window`), the vector list's sections' standing
    /// ([`vectors::Near::standing`]); empty without vectors.
    pub standing: HashMap<String, f64>,
    /// By source, each reranked section's relevance, 0 to 1; empty when nothing was reranked.
    pub relevance: HashMap<String, f64>,
    /// Whether the reranker scored the sections, and how it went.
    pub reranked: rerank::Reranked,
}

impl Default for Found {
    fn default() -> Found {
        Found { hits: Vec::new(), standing: HashMap::new(), relevance: HashMap::new(), reranked: rerank::Reranked::Off }
    }
}

impl Hit {
    /// `docs/refunds.md#window`, or the bare path for the top of a file.
    pub fn source(&self) -> String {
        source(&self.path, &self.anchor)
    }
}

/// A section's citation: `docs/refunds.md#window`, or the bare path for the text before a
/// file's first heading. The one spelling hits, citations and MCP resources share.
pub fn source(path: &str, anchor: &str) -> String {
    if anchor.is_empty() { path.to_string() } else { format!("{path}#{anchor}") }
}

/// Whether a search is reranked.
#[derive(Clone, Copy)]
pub enum Rerank<'a> {
    /// Not reranked.
    Off,
    /// By the index's reranker, if it has one ([`Index::reranker`]).
    Configured,
    /// By this reranker, its relevance weighing this share of each section's new score.
    With(&'a rerank::Reranker, f64),
}

/// A section's excerpt without the marks that say it was cut from a longer section.
pub(crate) fn uncut(excerpt: &str) -> &str {
    let text = excerpt.strip_prefix("…\n").unwrap_or(excerpt);
    text.strip_suffix("\n…").unwrap_or(text)
}

/// Counts from building the index.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Files indexed.
    pub files: usize,
    /// Sections indexed.
    pub sections: usize,
    /// Files that were read but gave no section to index.
    pub empty_files: Vec<String>,
}

/// Which state of the docs an index holds: a process serving for days answers from several
/// in turn, and says which (`/readyz`, `/metrics`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// Grows by one with every update that changed what is indexed.
    pub generation: i64,
    /// When that update committed, in milliseconds since the epoch.
    pub updated_at_ms: i64,
}

impl Index {
    /// The commit of the git source these docs came from ([`Index::revision`]).
    pub fn revision(&self) -> Option<String> {
        self.revision.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The built index.
pub struct Index {
    /// In-memory databases holding the `sections` FTS5 table: the one built, or read-only
    /// databases over one shared image (see [`Index::with_readers`]), so searches from several
    /// threads run side by side. Declared before `image`, so they are closed before it is freed.
    conns: Vec<Mutex<Connection>>,
    /// The bytes the read-only databases read, when there are such.
    image: Option<image::Image>,
    /// Where a search waits when every copy is busy.
    next: AtomicUsize,
    /// Files skipped while walking, with reasons.
    pub warnings: Vec<String>,
    /// What was indexed.
    pub stats: Stats,
    /// Which state of the docs this is.
    pub version: Version,
    /// Every row's vector and the embedding model, when search is hybrid ([`Index::embed`]).
    pub semantic: Option<vectors::Semantic>,
    /// The reranker that scores the best sections of every search, when one is configured
    /// (set by [`live::Live`] on every generation it searches).
    pub reranker: Option<std::sync::Arc<rerank::Reranker>>,
    /// Documents the operator's rules keep from being read: never found, listed or read here
    /// (set by [`live::Live`] on every generation it searches).
    pub hidden: crate::workspace::hidden::Hidden,
    /// The commit of the git source these docs came from (set by [`live::Live`]; a commit that
    /// changed nothing the index reads restamps the generation searched); none for docs on disk.
    pub revision: Mutex<Option<String>>,
}

/// The index could not be built or queried. One message, written for the person who meets it: what failed, on which input,
/// what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct IndexError(pub String);

impl From<rusqlite::Error> for IndexError {
    fn from(e: rusqlite::Error) -> Self {
        IndexError(format!("search index: {e}"))
    }
}

/// A chunk ready for insertion.
struct Row {
    path: String,
    anchor: String,
    heading: String,
    /// The section's own heading, the last part of `heading`.
    leaf: String,
    /// The words of the file's path, without `docs/` and the extension.
    place: String,
    start: usize,
    end: usize,
    body: String,
    /// The window does not start at the top of its section.
    cut_before: bool,
    /// The window does not reach the end of its section.
    cut_after: bool,
    /// What its vector is kept under ([`vectors::text_hash`] of its heading path and text).
    hash: String,
}

impl Index {
    /// The database being built (only while this `Index` is owned alone).
    fn built(&mut self) -> &mut Connection {
        self.conns[0].get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A free database to search, or (all busy) the next one in turn.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        for conn in &self.conns {
            if let Ok(guard) = conn.try_lock() {
                return guard;
            }
        }
        let at = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        self.conns[at].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The index with `n` databases in all, so `n` threads (a server's workers) can search at
    /// once: read-only databases over one image of the built one (memory grows by one copy,
    /// not by `n`).
    pub fn with_readers(mut self, n: usize) -> Result<Index, IndexError> {
        self.add_readers(n)?;
        Ok(self)
    }

    /// Makes the index searched by `n` databases (see [`Index::with_readers`]).
    pub fn add_readers(&mut self, n: usize) -> Result<(), IndexError> {
        if self.conns.len() >= n.max(1) {
            return Ok(());
        }
        let bytes = self.built().serialize(MAIN_DB)?.to_vec();
        // SAFETY: the connections go into `self.conns`, which `Index` declares before
        // `self.image`, so they are closed first; the old ones are dropped by the assignment
        // below while the old image is still held.
        let (image, conns) = unsafe { image::Image::readers(bytes, n)? };
        // The old databases go first: none of them reads the new image.
        self.conns = conns.into_iter().map(Mutex::new).collect();
        self.image = Some(image);
        Ok(())
    }

    /// An index with no documents (a workspace without `docs/`).
    pub fn empty() -> Result<Index, IndexError> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        create_schema(&conn)?;
        stems::prepare(&conn)?;
        Ok(Index {
            conns: vec![Mutex::new(conn)],
            image: None,
            next: AtomicUsize::new(0),
            warnings: Vec::new(),
            stats: Stats::default(),
            version: Version::default(),
            semantic: None,
            reranker: None,
            hidden: Default::default(),
            revision: Mutex::new(None),
        })
    }

    /// Walks `docs`, chunks every Markdown file and indexes the sections. Reading and
    /// chunking run on a second thread while this one inserts, so the two overlap.
    pub fn build(docs: &Dir, limits: Limits) -> Result<Index, IndexError> {
        let mut index = Index::empty()?;
        index.version =
            Version { generation: 1, updated_at_ms: walk::epoch_ns(std::time::SystemTime::now()) / 1_000_000 };
        index.built().execute_batch(BULK_LOAD_SETTINGS)?;
        if walk::approximate_bytes(docs, 0, PARALLEL_BYTES) < PARALLEL_BYTES {
            // Small docs: a second thread (and its allocator arena) costs more than it saves.
            let walk = ahead::walk_docs(docs, limits);
            index.stats = index.insert_all(walk.files.iter().map(|f| (f.path.clone(), rows_of(f))))?;
            index.warnings = walk.warnings;
            return Ok(index);
        }
        let (tx, rx) = std::sync::mpsc::sync_channel::<(String, Vec<Row>)>(PIPELINE_DEPTH);
        let (warnings, inserted) = std::thread::scope(|scope| {
            let producer = scope.spawn(move || {
                ahead::walk_docs_each(docs, limits, &mut |file| {
                    let rows = rows_of(&file);
                    // A closed channel means the insert failed; its error is returned below.
                    let _ = tx.send((file.path, rows));
                })
            });
            let inserted = index.insert_all(rx);
            let warnings = producer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (warnings, inserted)
        });
        index.stats = inserted?;
        index.warnings = warnings;
        Ok(index)
    }

    /// Inserts every file's rows as they arrive, in one transaction.
    fn insert_all(&mut self, rx: impl IntoIterator<Item = (String, Vec<Row>)>) -> Result<Stats, IndexError> {
        let mut stats = Stats::default();
        let tx = self.built().transaction()?;
        {
            let mut insert = tx.prepare(INSERT_SQL)?;
            let mut record = tx.prepare(
                "INSERT OR REPLACE INTO files (path, size, mtime_ns, hash, first_row, last_row, sections) \
                 VALUES (?1, 0, 0, '', ?2, ?3, ?4)",
            )?;
            for (path, rows) in rx {
                stats.files += 1;
                stats.sections += rows.len();
                let (first, last) = insert_rows(&mut insert, &rows)?.unwrap_or((0, -1));
                record.execute(params![path, first, last, rows.len() as i64])?;
                if rows.is_empty() {
                    stats.empty_files.push(path);
                }
            }
        }
        tx.commit()?;
        Ok(stats)
    }

    /// The best `k` sections for free text; never fails on odd input (it is all quoted).
    /// A long section is indexed as several windows; only its best window is returned, and a
    /// file's other sections among the candidates count for it ([`rank::with_file_evidence`]).
    /// With vectors ([`Index::embed`]), the keyword candidates and the rows nearest the
    /// question's vector are fused ([`rank::fuse`]); when the embedding server fails, the
    /// keywords alone answer and the log says why.
    pub fn search(&self, text: &str, k: usize) -> Result<Vec<Hit>, IndexError> {
        self.search_fused(text, k, self.fusion())
    }

    /// How this index fuses its two lists: as its embedder is configured, or the default.
    pub fn fusion(&self) -> rank::Fusion {
        self.semantic.as_ref().map_or(rank::FUSION, |s| s.embedder.fusion())
    }

    /// [`Index::search`] with the lists fused by `fusion` (what `cargo bench --bench retrieval`
    /// compares).
    pub fn search_fused(&self, text: &str, k: usize, fusion: rank::Fusion) -> Result<Vec<Hit>, IndexError> {
        Ok(self.search_near(text, k, fusion)?.hits)
    }

    /// [`Index::search_fused`], with how far each section the vectors found stands out from the
    /// rest (what evidence reads to take passages the question's words do not name), and, with
    /// a reranker, the best of them in the reranker's order with their relevance.
    pub fn search_near(&self, text: &str, k: usize, fusion: rank::Fusion) -> Result<Found, IndexError> {
        self.search_reranked(text, k, fusion, Rerank::Configured)
    }

    /// [`Index::search_near`], reranked as `rerank` says (what `cargo bench --bench retrieval`
    /// compares).
    pub fn search_reranked(
        &self,
        text: &str,
        k: usize,
        fusion: rank::Fusion,
        rerank: Rerank,
    ) -> Result<Found, IndexError> {
        let reranker = match rerank {
            Rerank::Off => None,
            Rerank::Configured => self.reranker.as_ref().map(|r| (r.as_ref(), rerank::WEIGHT)),
            Rerank::With(reranker, weight) => Some((reranker, weight)),
        };
        let Some((reranker, weight)) = reranker else {
            return self.search_unranked(text, k, fusion);
        };
        let mut found = self.search_unranked(text, k.max(reranker.candidates()), fusion)?;
        let candidates = found.hits.len().min(reranker.candidates());
        if candidates == 0 {
            return Ok(found);
        }
        let documents: Vec<String> = found.hits[..candidates].iter().map(|h| reranker.document(h)).collect();
        let started = std::time::Instant::now();
        match reranker.scores(text, &documents) {
            Ok(scores) => {
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                found.relevance = found.hits.iter().zip(&scores).map(|(h, s)| (h.source(), *s)).collect();
                found.hits = rerank::reorder(std::mem::take(&mut found.hits), &scores, weight);
                found.reranked = rerank::Reranked::Scored { candidates, ms };
            }
            Err(e) => {
                tracing::warn!("{e}; this search kept its own order");
                found.reranked = rerank::Reranked::Failed(e.to_string());
            }
        }
        found.hits.truncate(k);
        Ok(found)
    }

    /// The search before any reranking: keywords, fused with vectors when there are some.
    fn search_unranked(&self, text: &str, k: usize, fusion: rank::Fusion) -> Result<Found, IndexError> {
        let pool = (k * CANDIDATES_PER_HIT).max(CANDIDATE_POOL);
        let keywords_only = |hits| Found { hits, ..Found::default() };
        let vectors_weigh = !matches!(fusion, rank::Fusion::Weighted { vector_weight } if vector_weight <= 0.0);
        let Some(semantic) = self.semantic.as_ref().filter(|s| !s.vectors.is_empty() && vectors_weigh) else {
            return self.keyword(text, k, pool).map(keywords_only);
        };
        let query = match semantic.embedder.query(text) {
            Ok(query) => query,
            Err(e) => {
                tracing::warn!("{e}; this search used keywords only");
                return self.keyword(text, k, pool).map(keywords_only);
            }
        };
        if query.len() != semantic.vectors.dims() {
            // The model behind the configured name changed (another file served under it):
            // the kept vectors cannot be compared with the question's.
            tracing::warn!(
                "the embedding model `{}` now returns vectors of {} dimensions and the index holds {}: this search \
                 used keywords only; delete {} beside the index (or set retrieval.embeddings.dimensions) so the \
                 sections are embedded again",
                semantic.embedder.model(),
                query.len(),
                semantic.vectors.dims(),
                "index.vectors.db"
            );
            return self.keyword(text, k, pool).map(keywords_only);
        }
        let keyword = self.keyword(text, pool, pool)?;
        let near = semantic.vectors.scan(&query, pool * 2);
        let vector = self.rows(&near.rows)?;
        let standing = vector.iter().map(|h| (h.source(), near.standing(h.score))).collect();
        Ok(Found { hits: rank::fuse(keyword, vector, fusion, k), standing, ..Found::default() })
    }

    /// Of `words`, those no section of the docs holds, compared by stem as search compares them
    /// ("invoiced" is held by docs that say "invoices"). A document the rules hide does not
    /// count: whether it holds a word is itself what it keeps.
    pub fn never_uses(&self, words: &[&str]) -> Result<Vec<String>, IndexError> {
        let conn = self.reader();
        let stems = stems::stems(&conn, words)?;
        let mut out = Vec::new();
        for (word, stems) in words.iter().zip(stems) {
            let mut held = false;
            for stem in &stems {
                held |= stems::sections_holding(&conn, stem)? > 0;
            }
            if held && self.hidden.has_rules() {
                held = self.shown_holds(&conn, word)?;
            }
            if !stems.is_empty() && !held {
                out.push((*word).to_string());
            }
        }
        Ok(out)
    }

    /// True when a section of a document the rules do not hide holds a word of `word`.
    fn shown_holds(&self, conn: &Connection, word: &str) -> Result<bool, IndexError> {
        let Some(query) = query::to_fts_query(word) else {
            return Ok(false);
        };
        let mut stmt = conn.prepare_cached("SELECT DISTINCT path FROM sections WHERE sections MATCH ?1")?;
        let paths = stmt.query_map([query], |r| r.get::<_, String>(0))?;
        for path in paths {
            if !self.hidden.hides(&path?) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The best `k` sections by keywords, from `pool` candidate rows.
    fn keyword(&self, text: &str, k: usize, pool: usize) -> Result<Vec<Hit>, IndexError> {
        let conn = self.reader();
        let terms = prune::selective(&conn, query::terms(text), self.stats.sections)?;
        let identifiers = query::identifiers(text);
        let Some(fts) = query::with_phrases(&terms, &identifiers) else {
            return Ok(Vec::new());
        };
        let mut stmt = conn.prepare_cached(
            "SELECT path, anchor, heading, start_line, end_line, body, cut_before, cut_after, \
                    bm25(sections, ?3, ?4, ?5, ?6) AS rank \
             FROM sections WHERE sections MATCH ?1 ORDER BY rank LIMIT ?2",
        )?;
        let [heading, body, leaf, place] = WEIGHTS;
        let rows = stmt.query_map(params![fts, pool as i64, heading, body, leaf, place], |r| {
            let mut hit = hit_of(r)?;
            hit.score = -r.get::<_, f64>(8)?;
            Ok(hit)
        })?;
        // Rows come best first: the first window of a section is its best.
        let mut sections: Vec<Hit> = Vec::with_capacity(pool);
        for hit in rows {
            let hit = hit?;
            if !sections.iter().any(|h| h.path == hit.path && h.anchor == hit.anchor) && !self.hidden.hides(&hit.path) {
                sections.push(hit);
            }
        }
        rank::with_exact_terms(&mut sections, &terms);
        Ok(rank::with_file_evidence(sections, k))
    }

    /// The sections of `rows` (rowid, cosine), in their order, each once (its best window),
    /// scored by the cosine.
    fn rows(&self, rows: &[(i64, f32)]) -> Result<Vec<Hit>, IndexError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT path, anchor, heading, start_line, end_line, body, cut_before, cut_after \
             FROM sections WHERE rowid = ?1",
        )?;
        let mut sections: Vec<Hit> = Vec::with_capacity(rows.len());
        for (row, cosine) in rows {
            let mut hit = stmt.query_row(params![row], hit_of)?;
            hit.score = f64::from(*cosine);
            if !sections.iter().any(|h| h.path == hit.path && h.anchor == hit.anchor) && !self.hidden.hides(&hit.path) {
                sections.push(hit);
            }
        }
        Ok(sections)
    }
}

/// A hit from a row of `path, anchor, heading, start_line, end_line, body, cut_before,
/// cut_after`, not scored yet.
fn hit_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Hit> {
    let body: String = r.get(5)?;
    let (before, after): (bool, bool) = (r.get(6)?, r.get(7)?);
    Ok(Hit {
        path: r.get(0)?,
        anchor: r.get(1)?,
        heading: r.get(2)?,
        lines: (r.get::<_, i64>(3)? as usize, r.get::<_, i64>(4)? as usize),
        excerpt: format!("{}{body}{}", if before { "…\n" } else { "" }, if after { "\n…" } else { "" }),
        score: 0.0,
    })
}

/// Inserts one row of `sections`.
const INSERT_SQL: &str = "INSERT INTO sections (heading, body, leaf, place, path, anchor, start_line, end_line, \
                                            cut_before, cut_after, hash) \
                          VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// Inserts `rows` with `insert` (a statement of [`INSERT_SQL`]); the first and last rowid
/// given, which are consecutive within one transaction, or `None` when there are no rows.
fn insert_rows(insert: &mut rusqlite::Statement<'_>, rows: &[Row]) -> rusqlite::Result<Option<(i64, i64)>> {
    let mut span: Option<(i64, i64)> = None;
    for row in rows {
        let id = insert.insert(params![
            row.heading,
            row.body,
            row.leaf,
            row.place,
            row.path,
            row.anchor,
            row.start as i64,
            row.end as i64,
            row.cut_before,
            row.cut_after,
            row.hash
        ])?;
        span = Some(span.map_or((id, id), |(first, _)| (first, id)));
    }
    Ok(span)
}

fn create_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE sections USING fts5(
             heading, body, leaf, place,
             path UNINDEXED, anchor UNINDEXED, start_line UNINDEXED, end_line UNINDEXED,
             cut_before UNINDEXED, cut_after UNINDEXED, hash UNINDEXED,
             tokenize = 'porter unicode61 remove_diacritics 2'
         );",
    )?;
    conn.execute_batch(FILES_SCHEMA)?;
    Ok(())
}

/// Every document indexed, with the rows that hold its sections (consecutive rowids), so one
/// document's sections are read without scanning `sections`. The index file also keeps each
/// document's size, time, content hash and how many bytes of text it gave (`text_bytes`,
/// what counts toward `index.max_total_bytes`) here (`store`); an index built in memory leaves
/// them empty.
const FILES_SCHEMA: &str = "
    CREATE TABLE files (
        path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL,
        first_row INTEGER NOT NULL, last_row INTEGER NOT NULL, sections INTEGER NOT NULL,
        warning TEXT, text_bytes INTEGER NOT NULL DEFAULT 0
    );";

fn rows_of(file: &walk::DocFile) -> Vec<Row> {
    let path = clean(&file.path);
    let place = place_words(&path);
    // An HTML section's text is not the file's lines: its windows keep the section's lines.
    let lines_follow_body = DocKind::of(&file.path) != Some(DocKind::Html);
    let mut rows = Vec::new();
    let mut redacted_anchors = 0;
    for c in formats::chunk_file(&file.path, &file.text) {
        let heading = clean(&c.heading_text());
        let leaf = clean(c.heading_path.last().map_or("", String::as_str));
        // Redact the whole section before cutting it, so no window holds part of a secret.
        let body = clean(&c.body);
        let anchor = safe_anchor(&c.anchor, &mut redacted_anchors);
        let parts = windows(&body, EXCERPT_BYTES);
        let last = parts.len().saturating_sub(1);
        // Lines before each window, counted once over the body rather than from its start.
        let (mut counted_to, mut line) = (0, c.body_line);
        for (i, (offset, text)) in parts.into_iter().enumerate() {
            line += body[counted_to..offset].matches('\n').count();
            counted_to = offset;
            let body = text.to_string();
            rows.push(Row {
                hash: vectors::text_hash(&heading, &body),
                path: path.clone(),
                anchor: anchor.clone(),
                heading: heading.clone(),
                leaf: leaf.clone(),
                place: place.clone(),
                start: if i == 0 || !lines_follow_body { c.start_line } else { line },
                end: if i == last || !lines_follow_body {
                    c.end_line
                } else {
                    line + text.trim_end().matches('\n').count()
                },
                body,
                cut_before: i > 0,
                cut_after: i < last,
            });
        }
    }
    rows
}

/// The words of a doc's path, for the `place` column: `docs/features/failed-payments.md`
/// gives "features failed payments".
fn place_words(path: &str) -> String {
    let inner = path.strip_prefix("docs/").unwrap_or(path);
    let inner = inner.rsplit_once('.').map_or(inner, |(stem, _)| stem);
    inner.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Cuts `body` into windows of at most `max` bytes, at line ends where it can, else at a space,
/// else at a character boundary: `(byte offset, text)` each. A short body is one window.
fn windows(body: &str, max: usize) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    while body.len() - start > max {
        let limit = redact::floor_char_boundary(&body[start..], max);
        let cut = limit
            .rfind('\n')
            .filter(|&n| n > max / 2)
            .or_else(|| limit.rfind(' ').filter(|&n| n > max / 2))
            .map_or(limit.len(), |n| n + 1);
        let cut = if cut == 0 { limit.len().max(body[start..].chars().next().map_or(1, char::len_utf8)) } else { cut };
        out.push((start, body[start..start + cut].trim_end()));
        start += cut;
    }
    out.push((start, &body[start..]));
    out
}

/// A section's anchor as the index keeps it, or `redacted-N` (the file's `redacted` count, so
/// anchors stay unique) when it holds a secret, as written (`{#AKIA…}`) or in upper case: a
/// heading's slug is lower case, and `akiaiosfodnn7example` is still an AWS key id.
fn safe_anchor(anchor: &str, redacted: &mut usize) -> String {
    let upper = anchor.to_uppercase();
    if clean(anchor) == anchor && clean(&upper) == upper {
        return anchor.to_string();
    }
    *redacted += 1;
    format!("redacted-{redacted}")
}

/// Sanitised, then redacted: what the index stores.
fn clean(text: &str) -> String {
    guard::scrub(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_column_holds_the_words_of_the_path() {
        assert_eq!(
            place_words("docs/features/subscriptions/failed-payments.md"),
            "features subscriptions failed payments"
        );
        assert_eq!(place_words("docs/refunds.md"), "refunds");
        assert_eq!(place_words("notes.txt"), "notes");
    }

    #[test]
    fn long_bodies_are_cut_into_bounded_windows_that_cover_everything() {
        let lines: String = (0..400).map(|i| format!("line {i} of the section\n")).collect();
        let one_line = "word ".repeat(3_000);
        let no_spaces = "é".repeat(5_000);
        for body in [lines.as_str(), one_line.as_str(), no_spaces.as_str(), "short", ""] {
            let parts = windows(body, 2_000);
            assert!(parts.iter().all(|(_, t)| t.len() <= 2_000), "bounded");
            let mut covered = 0;
            for (offset, text) in &parts {
                assert!(*offset >= covered, "in order");
                assert_eq!(&body[*offset..*offset + text.len()], *text);
                covered = offset + text.len();
            }
            let joined: String = parts.iter().map(|(_, t)| t.split_whitespace().collect::<String>()).collect();
            assert_eq!(joined, body.split_whitespace().collect::<String>(), "nothing lost");
        }
        assert!(windows(&lines, 2_000).iter().all(|(o, _)| *o == 0 || lines.as_bytes()[o - 1] == b'\n'));
    }
}

#[cfg(test)]
mod reader_tests {
    use super::*;

    /// An index of one refunds page with `n` databases in all.
    fn refunds_with_readers(n: usize) -> Index {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("refunds.md"), "# Refunds\n\n## Window\n\nRefunds within 14 days.\n")
            .expect("write doc");
        let docs = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).expect("open");
        Index::build(&docs, crate::index::Limits::file_only(1 << 20)).expect("build").with_readers(n).expect("copies")
    }

    /// An index of `files` (name, text) in a temporary `docs/`.
    fn index_of(files: &[(&str, &str)]) -> Index {
        let tmp = tempfile::tempdir().expect("tmp");
        for (name, text) in files {
            std::fs::write(tmp.path().join(name), text).expect("write");
        }
        let docs = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("docs");
        Index::build(&docs, crate::index::Limits::file_only(1 << 20)).expect("build")
    }

    /// A word only a hidden document holds is one the docs never use: the answer that names
    /// it must not tell whether a hidden document holds it.
    #[test]
    fn a_word_only_a_hidden_document_holds_is_never_used() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("public.md"), "# Plans\n\nThe Starter plan invoices monthly.\n").expect("write");
        std::fs::write(tmp.path().join("secret.md"), "# Roadmap\n\nProject Titan ships in spring.\n").expect("write");
        let docs = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("docs");
        let mut index = Index::build(&docs, crate::index::Limits::file_only(1 << 20)).expect("build");
        let words = ["Titan", "invoiced", "Zanzibar"];
        assert_eq!(index.never_uses(&words).expect("vocabulary"), ["Zanzibar"], "by stem: invoices holds invoiced");
        index.hidden = crate::workspace::hidden::Hidden::new(&docs, |path| path == "docs/secret.md");
        assert_eq!(index.never_uses(&words).expect("vocabulary"), ["Titan", "Zanzibar"]);
    }

    #[test]
    fn words_as_written_break_a_tie_with_words_that_share_only_a_stem() {
        let index = index_of(&[
            ("a.md", "# Notes\n\nThe payment was refunds related to the plan.\n"),
            ("b.md", "# Notes\n\nThe payment was refunded related to the plan.\n"),
        ]);
        for (question, first) in [("refunded payment", "docs/b.md"), ("refunds payment", "docs/a.md")] {
            let hits = index.search(question, 2).expect("search");
            assert_eq!(hits.len(), 2, "both match by stem: {hits:?}");
            assert_eq!(hits[0].path, first, "{question}: {hits:?}");
        }
    }

    #[test]
    fn an_identifier_ranks_the_section_that_names_it_first() {
        let index = index_of(&[
            ("apart.md", "# Changes\n\nThe behavior of a change: proration happens later, behavior shown.\n"),
            ("named.md", "# Changes\n\nSet proration_behavior to none to skip it on this change.\n"),
            ("events.md", "# Events\n\nAn invoice is paid; the paid invoice event follows.\n"),
            ("hook.md", "# Events\n\nListen for invoice.paid to fulfil the order.\n"),
        ]);
        for (question, first) in
            [("proration_behavior change", "docs/named.md"), ("invoice.paid event", "docs/hook.md")]
        {
            let hits = index.search(question, 3).expect("search");
            assert_eq!(hits.first().map(|h| h.path.as_str()), Some(first), "{question}: {hits:?}");
        }
    }

    #[test]
    fn a_long_section_reads_back_whole_from_its_windows() {
        let tmp = tempfile::tempdir().expect("tmp");
        let para = "Refund paragraph with many words about the window and the payment. ".repeat(8);
        let body: String = (0..12).map(|i| format!("{i} {para}\n\n")).collect();
        std::fs::write(tmp.path().join("long.md"), format!("# Intro\n\nHello.\n\n## Long part\n\n{body}"))
            .expect("write");
        let docs = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("docs");
        let index = Index::build(&docs, crate::index::Limits::file_only(1 << 20)).expect("build");
        let section = index.section("docs/long.md", "long-part").expect("read").expect("found");
        assert!(body.len() > 2 * EXCERPT_BYTES, "the section is indexed as several windows");
        assert_eq!(section.heading, "Intro > Long part");
        assert!(section.text.starts_with("0 Refund") && section.text.contains("11 Refund"), "{}", section.text);
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&section.text), words(&body), "every word, once, in order");
        let first = index.section("docs/long.md", "").expect("read").expect("the first section");
        assert_eq!((first.anchor.as_str(), first.text.trim()), ("intro", "Hello."));
        assert!(index.section("docs/long.md", "nope").expect("read").is_none());

        // A listing names each section once however many windows it has, and a page ends on
        // a whole section, whatever its size.
        for size in [1, 2, 5] {
            let mut listed: Vec<super::section::Listed> = Vec::new();
            loop {
                let after = listed.last().map(|s| (s.path.as_str(), s.anchor.as_str()));
                let page = index.sections_after(after, size, &|_| true).expect("page");
                assert!(page.sections.len() <= size);
                listed.extend(page.sections);
                if !page.more {
                    break;
                }
            }
            let names: Vec<String> = listed.iter().map(|s| format!("{}#{}", s.path, s.anchor)).collect();
            assert_eq!(names, ["docs/long.md#intro", "docs/long.md#long-part"], "pages of {size}");
        }
        // After a section that is gone, the listing goes on with the next file.
        let page = index.sections_after(Some(("docs/long.md", "gone")), 5, &|_| true).expect("page");
        assert!(page.sections.is_empty() && !page.more, "{page:?}");
        let page = index.sections_after(Some(("docs/a.md", "x")), 5, &|_| true).expect("page");
        assert_eq!(page.sections.len(), 2, "a file before long.md: all of long.md follows");
        // A section not shown is passed over: it is neither listed nor a page's last.
        let page = index.sections_after(None, 1, &|s| s.anchor != "intro").expect("page");
        assert_eq!((page.sections.len(), page.sections[0].anchor.as_str(), page.more), (1, "long-part", false));
    }

    #[test]
    fn copies_answer_like_the_original_from_many_threads() {
        let index = refunds_with_readers(3);
        assert_eq!(index.conns.len(), 3);
        let expected = index.search("refund window", 3).expect("search");
        assert!(!expected.is_empty());
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        let hits = index.search("refund window", 3).expect("search");
                        assert_eq!(hits.len(), expected.len());
                        assert_eq!(hits[0].anchor, expected[0].anchor);
                    }
                });
            }
        });
    }

    #[test]
    fn a_copy_answers_a_long_question_while_the_original_is_busy() {
        let index = refunds_with_readers(2);
        let _busy = index.conns[0].lock().expect("lock the original");
        // Over four terms: pruned through the scratch table, which a read-only copy could not write.
        let hits = index.search("how long is the refund window for a customer payment today", 3).expect("search");
        assert_eq!(hits.first().map(|h| h.anchor.as_str()), Some("window"));
    }
}
