//! The search index: `docs/**/*.md` chunked by heading into an in-memory SQLite FTS5 table,
//! ranked by BM25 with the heading weighted above the body. Bodies are redacted and sanitised
//! when indexed, so nothing downstream can see a secret from the docs.

pub mod chunk;
pub mod query;
pub mod walk;

use cap_std::fs::Dir;
use rusqlite::{Connection, params};

use crate::guard::{self, redact};

/// FTS5 settings for one bulk load: a large pending-terms buffer (so segments are flushed
/// rarely), no automatic merging during the load, and large leaf pages. Measured in
/// `benches/index.rs`: a fifth faster to build, same top results, slightly faster search.
const BULK_LOAD_SETTINGS: &str = "
    INSERT INTO sections(sections, rank) VALUES('hashsize', 33554432);
    INSERT INTO sections(sections, rank) VALUES('automerge', 0);
    INSERT INTO sections(sections, rank) VALUES('pgsz', 16000);";
/// Files read ahead of the inserting thread.
const PIPELINE_DEPTH: usize = 64;
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

    /// Walks `docs`, chunks every Markdown file and indexes the sections. Reading and
    /// chunking run on a second thread while this one inserts, so the two overlap.
    pub fn build(docs: &Dir, max_file_bytes: u64) -> Result<Index, IndexError> {
        let mut index = Index::empty()?;
        index.conn.execute_batch(BULK_LOAD_SETTINGS)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<(String, Vec<Row>)>(PIPELINE_DEPTH);
        let (warnings, inserted) = std::thread::scope(|scope| {
            let producer = scope.spawn(move || {
                walk::walk_docs_each(docs, max_file_bytes, &mut |file| {
                    let rows = rows_of(&file);
                    // A closed channel means the insert failed; its error is reported below.
                    let _ = tx.send((file.path, rows));
                })
            });
            let inserted = index.insert_all(rx);
            let warnings = producer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (warnings, inserted)
        });
        index.stats = inserted?;
        index.warnings = warnings;
        Ok(index)
    }

    /// Inserts every file's rows as they arrive, in one transaction.
    fn insert_all(
        &mut self,
        rx: std::sync::mpsc::Receiver<(String, Vec<Row>)>,
    ) -> Result<Stats, IndexError> {
        let mut stats = Stats::default();
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO sections (heading, body, path, anchor, start_line, end_line) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (path, rows) in rx {
                stats.files += 1;
                stats.sections += rows.len();
                if rows.is_empty() {
                    stats.empty_files.push(path);
                }
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
        }
        tx.commit()?;
        Ok(stats)
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

/// The first position whose `span` bytes hold the most positions (two pointers: linear, so a
/// section with a hundred thousand matches costs no more than reading it).
fn densest(positions: &[usize], span: usize) -> usize {
    let (mut best, mut best_count, mut end) = (positions.first().copied().unwrap_or(0), 0, 0);
    for (start, &p) in positions.iter().enumerate() {
        end = end.max(start);
        while end < positions.len() && positions[end] < p + span {
            end += 1;
        }
        if end - start > best_count {
            (best, best_count) = (p, end - start);
        }
    }
    best
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
    let best = densest(&positions, window * 3 / 4);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densest_window_is_found_in_linear_time() {
        assert_eq!(densest(&[], 10), 0);
        assert_eq!(densest(&[5], 10), 5);
        assert_eq!(densest(&[0, 100, 103, 106, 200], 10), 100);
        assert_eq!(densest(&[0, 3, 100, 103], 10), 0, "ties go to the first");
        let many: Vec<usize> = (0..200_000).map(|i| i * 2).collect();
        assert_eq!(densest(&many, 1000), 0);
    }

    #[test]
    fn excerpt_centres_on_the_matches() {
        let body = format!("{}needle here{}", "a\n".repeat(3000), "b\n".repeat(3000));
        let marked = body.replace("needle", "\u{E000}needle\u{E001}");
        let got = excerpt(&body, &marked, 2000);
        assert!(got.contains("needle here"), "{got}");
        assert!(got.len() <= 2000 + 8);
    }
}
