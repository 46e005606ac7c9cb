//! One section read back from the index, whole: what a citation opens. It comes from the
//! generation searched at that moment (so an edit shows here exactly when it shows in search),
//! never from the file as it is on disk.

use rusqlite::{OptionalExtension, params};

use super::{Index, IndexError};

/// A section as indexed: sanitised and redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its anchor (empty for the text before the first heading).
    pub anchor: String,
    /// "Refunds > Window".
    pub heading: String,
    /// First and last line in its file.
    pub lines: (usize, usize),
    /// Its text: the windows it was indexed as, joined.
    pub text: String,
}

impl Index {
    /// The section of `path` (`docs/…`) with `anchor`, or its first section when `anchor` is
    /// empty; `None` when this generation has no such document or section.
    pub fn section(&self, path: &str, anchor: &str) -> Result<Option<Section>, IndexError> {
        let conn = self.reader();
        let span: Option<(i64, i64)> = conn
            .prepare_cached("SELECT first_row, last_row FROM files WHERE path = ?1 AND warning IS NULL")?
            .query_row([path], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((first, last)) = span else {
            return Ok(None);
        };
        let mut stmt = conn.prepare_cached(
            "SELECT anchor, heading, start_line, end_line, body FROM sections \
             WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid",
        )?;
        let mut rows = stmt.query(params![first, last])?;
        let mut found: Option<Section> = None;
        while let Some(row) = rows.next()? {
            let row_anchor: String = row.get(0)?;
            let lines = (row.get::<_, i64>(2)? as usize, row.get::<_, i64>(3)? as usize);
            let body: String = row.get(4)?;
            match found.as_mut() {
                // The next window of the same section.
                Some(section) if section.anchor == row_anchor => {
                    section.lines.1 = lines.1;
                    section.text.push('\n');
                    section.text.push_str(&body);
                }
                Some(_) => break,
                None if anchor.is_empty() || row_anchor == anchor => {
                    found = Some(Section { anchor: row_anchor, heading: row.get(1)?, lines, text: body });
                }
                None => {}
            }
        }
        Ok(found)
    }
}

/// A section as a listing names it: where it is, not its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Workspace-relative file, e.g. `docs/refunds.md`.
    pub path: String,
    /// Its anchor (empty for the text before the first heading).
    pub anchor: String,
    /// "Refunds > Window".
    pub heading: String,
}

/// One page of [`Index::sections_after`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The sections, in the order of the files and of their headings.
    pub sections: Vec<Listed>,
    /// Where the next page starts (pass it back as `after`), or `None` after the last section.
    pub next: Option<i64>,
}

impl Index {
    /// Up to `limit` sections after the row `after` (0 for the first page), each once however
    /// many windows it was indexed as. A page ends on a whole section, so the next one starts
    /// on a new section. The rows belong to this generation: a later one numbers them anew.
    pub fn sections_after(&self, after: i64, limit: usize) -> Result<Page, IndexError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT s.rowid, s.path, s.anchor, s.heading FROM sections s \
             JOIN files f ON f.path = s.path AND f.warning IS NULL \
             WHERE s.rowid > ?1 ORDER BY s.rowid",
        )?;
        let mut rows = stmt.query([after])?;
        let mut sections: Vec<Listed> = Vec::new();
        let mut last = after;
        while let Some(row) = rows.next()? {
            let (rowid, path, anchor): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
            let same = sections.last().is_some_and(|s| s.path == path && s.anchor == anchor);
            if !same {
                if sections.len() == limit.max(1) {
                    return Ok(Page { sections, next: Some(last) });
                }
                sections.push(Listed { path, anchor, heading: row.get(3)? });
            }
            last = rowid;
        }
        Ok(Page { sections, next: None })
    }
}
