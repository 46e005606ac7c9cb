//! The search index: `docs/**/*.md` chunked by heading into an in-memory SQLite FTS5 table,
//! ranked by BM25 with the heading weighted above the body. Bodies are redacted and sanitised
//! when indexed, so nothing downstream can see a secret from the docs.

pub mod chunk;
pub mod query;
pub mod walk;

use cap_std::fs::Dir;
use rusqlite::{Connection, params};

use crate::guard::{self, redact};

/// Weight of the heading column against the body in BM25.
const HEADING_WEIGHT: f64 = 5.0;
/// Longest excerpt a hit carries; longer sections show the part that matched.
pub const EXCERPT_BYTES: usize = 2_000;
/// Marks a matched term in highlighted text (private-use characters, stripped from docs).
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';

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

impl Hit {
    /// `docs/refunds.md#window`, or the bare path for the top of a file.
    pub fn source(&self) -> String {
        if self.anchor.is_empty() {
            self.path.clone()
        } else {
            format!("{}#{}", self.path, self.anchor)
        }
    }
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

/// The built index.
pub struct Index {
    /// In-memory database holding the `sections` FTS5 table.
    conn: Connection,
    /// Files skipped while walking, with reasons.
    pub warnings: Vec<String>,
    /// What was indexed.
    pub stats: Stats,
}

/// The index could not be built or queried.
#[derive(Debug)]
pub struct IndexError(pub String);

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IndexError {}

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
    start: usize,
    end: usize,
    body: String,
}

impl Index {
    /// An index with no documents (a workspace without `docs/`).
    pub fn empty() -> Result<Index, IndexError> {
        let conn = Connection::open_in_memory()?;
        create_schema(&conn)?;
        Ok(Index {
            conn,
            warnings: Vec::new(),
            stats: Stats::default(),
        })
    }

    /// Walks `docs`, chunks every Markdown file and indexes the sections.
    pub fn build(docs: &Dir, max_file_bytes: u64) -> Result<Index, IndexError> {
        let walk = walk::walk_docs(docs, max_file_bytes);
        let rows = prepare_rows(&walk.files);
        let mut index = Index::empty()?;
        index.warnings = walk.warnings;
        index.stats.files = walk.files.len();
        index.stats.sections = rows.len();
        index.stats.empty_files = walk
            .files
            .iter()
            .filter(|f| {
                rows.binary_search_by(|r| r.path.as_str().cmp(f.path.as_str()))
                    .is_err()
            })
            .map(|f| f.path.clone())
            .collect();
        let tx = index.conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO sections (heading, body, path, anchor, start_line, end_line) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for row in &rows {
                insert.execute(params![
                    row.heading,
                    row.body,
                    row.path,
                    row.anchor,
                    row.start as i64,
                    row.end as i64
                ])?;
            }
        }
        tx.commit()?;
        Ok(index)
    }

    /// The best `k` sections for free text; never fails on odd input (it is all quoted).
    pub fn search(&self, text: &str, k: usize) -> Result<Vec<Hit>, IndexError> {
        let Some(fts) = query::to_fts_query(text) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT path, anchor, heading, start_line, end_line, body, \
                    highlight(sections, 1, char(57344), char(57345)), bm25(sections, ?3, 1.0) AS rank \
             FROM sections WHERE sections MATCH ?1 ORDER BY rank LIMIT ?2",
        )?;
        let hits = stmt
            .query_map(params![fts, k as i64, HEADING_WEIGHT], |r| {
                let body: String = r.get(5)?;
                let marked: String = r.get(6)?;
                Ok(Hit {
                    path: r.get(0)?,
                    anchor: r.get(1)?,
                    heading: r.get(2)?,
                    lines: (r.get::<_, i64>(3)? as usize, r.get::<_, i64>(4)? as usize),
                    excerpt: excerpt(&body, &marked, EXCERPT_BYTES),
                    score: -r.get::<_, f64>(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(hits)
    }
}

fn create_schema(conn: &Connection) -> Result<(), IndexError> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE sections USING fts5(
             heading, body,
             path UNINDEXED, anchor UNINDEXED, start_line UNINDEXED, end_line UNINDEXED,
             tokenize = 'porter unicode61 remove_diacritics 2'
         );",
    )?;
    Ok(())
}

/// Below this many bytes of docs, preparing rows on other threads costs more than it saves.
const PARALLEL_BYTES: usize = 1 << 20;

/// Chunks, sanitises and redacts every file, on all cores when there is enough text.
/// Rows come back in file order.
fn prepare_rows(files: &[walk::DocFile]) -> Vec<Row> {
    let total: usize = files.iter().map(|f| f.text.len()).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    if total < PARALLEL_BYTES || threads == 1 {
        return files.iter().flat_map(rows_of).collect();
    }
    let per = files.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().flat_map(rows_of).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

fn rows_of(file: &walk::DocFile) -> Vec<Row> {
    let stem = file.path.rsplit('/').next().unwrap_or(&file.path);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    chunk::chunk_markdown(&file.text, stem)
        .into_iter()
        .map(|c| {
            let heading = clean(&c.heading_text());
            Row {
                path: file.path.clone(),
                anchor: c.anchor,
                heading,
                start: c.start_line,
                end: c.end_line,
                body: clean(&c.body),
            }
        })
        .collect()
}

/// Sanitised, then redacted: what the index stores.
fn clean(text: &str) -> String {
    guard::scrub(text).into_owned()
}

/// The whole body when short; otherwise the window of `max` bytes with the most matched terms.
fn excerpt(body: &str, marked: &str, max: usize) -> String {
    if body.len() <= max {
        return body.to_string();
    }
    // Byte offsets of matches in the unmarked text.
    let mut positions = Vec::new();
    let mut removed = 0;
    for (i, c) in marked.char_indices() {
        if c == MARK_OPEN {
            positions.push(i - removed);
        }
        if c == MARK_OPEN || c == MARK_CLOSE {
            removed += c.len_utf8();
        }
    }
    let window = max.saturating_sub(8);
    let best = positions
        .iter()
        .enumerate()
        .max_by_key(|(i, p)| {
            (
                positions[*i..]
                    .iter()
                    .take_while(|q| **q < **p + window * 3 / 4)
                    .count(),
                std::cmp::Reverse(**p),
            )
        })
        .map_or(0, |(_, p)| *p);
    let mut start = best.saturating_sub(window / 4);
    start = body[..start].rfind('\n').map_or(start, |n| n + 1);
    while !body.is_char_boundary(start) {
        start -= 1;
    }
    let tail = redact::floor_char_boundary(&body[start..], window);
    let mut out = String::with_capacity(window + 8);
    if start > 0 {
        out.push_str("…\n");
    }
    out.push_str(tail);
    if start + tail.len() < body.len() {
        out.push_str("\n…");
    }
    out
}
