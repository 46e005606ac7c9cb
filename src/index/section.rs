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
        let sections = self.sections_of(path)?;
        Ok(sections.into_iter().find(|s| anchor.is_empty() || s.anchor == anchor))
    }
}

impl Index {
    /// Every section of `path` (`docs/…`), whole and in order; empty when this generation has
    /// no such document.
    pub fn sections_of(&self, path: &str) -> Result<Vec<Section>, IndexError> {
        if self.hidden.hides(path) {
            return Ok(Vec::new());
        }
        let conn = self.reader();
        let span: Option<(i64, i64)> = conn
            .prepare_cached("SELECT first_row, last_row FROM files WHERE path = ?1 AND warning IS NULL")?
            .query_row([path], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((first, last)) = span else {
            return Ok(Vec::new());
        };
        let mut stmt = conn.prepare_cached(
            "SELECT anchor, heading, start_line, end_line, body FROM sections \
             WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid",
        )?;
        let mut rows = stmt.query(params![first, last])?;
        let mut out: Vec<Section> = Vec::new();
        while let Some(row) = rows.next()? {
            let anchor: String = row.get(0)?;
            let lines = (row.get::<_, i64>(2)? as usize, row.get::<_, i64>(3)? as usize);
            let body: String = row.get(4)?;
            match out.last_mut() {
                // The next window of the same section.
                Some(section) if section.anchor == anchor => {
                    section.lines.1 = lines.1;
                    section.text.push('\n');
                    section.text.push_str(&body);
                }
                _ => out.push(Section { anchor, heading: row.get(1)?, lines, text: body }),
            }
        }
        Ok(out)
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
    /// The sections, by file path, then in the order of their file.
    pub sections: Vec<Listed>,
    /// Whether sections follow the last one (the next page starts after it).
    pub more: bool,
}

impl Index {
    /// Every section `shown` keeps, in the order of [`Index::sections_after`], read a page at a
    /// time.
    pub fn all_sections(&self, shown: &dyn Fn(&Listed) -> bool) -> Result<Vec<Listed>, IndexError> {
        let mut out: Vec<Listed> = Vec::new();
        loop {
            let after = out.last().map(|s| (s.path.clone(), s.anchor.clone()));
            let page = self.sections_after(after.as_ref().map(|(p, a)| (p.as_str(), a.as_str())), 1000, shown)?;
            let more = page.more && !page.sections.is_empty();
            out.extend(page.sections);
            if !more {
                return Ok(out);
            }
        }
    }

    /// Up to `limit` sections after the section `after` (a path and an anchor; `None` for the
    /// first page), each once however many windows it was indexed as: files in path order,
    /// each file's sections in order. The position is the section itself, not a row, so it
    /// holds across index generations and processes: a page starts right after that section
    /// in the docs as indexed now (after the rest of its file when it is gone). Sections
    /// `shown` refuses are passed over, so a page holds `limit` shown ones when there are that
    /// many, and its last is one the reader may see (the next page's cursor). Each page reads
    /// about its own size (files by their path index, a file's rows by rowid range), plus the
    /// sections passed over.
    pub fn sections_after(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
        shown: &dyn Fn(&Listed) -> bool,
    ) -> Result<Page, IndexError> {
        let limit = limit.max(1);
        let conn = self.reader();
        let (from_path, from_row) = match after {
            None => (String::new(), i64::MIN),
            Some((path, anchor)) => {
                let last: Option<i64> = conn
                    .prepare_cached(
                        "SELECT max(s.rowid) FROM files f JOIN sections s ON s.rowid BETWEEN f.first_row AND f.last_row \
                         WHERE f.path = ?1 AND s.anchor = ?2",
                    )?
                    .query_row(params![path, anchor], |r| r.get(0))?;
                (path.to_string(), last.unwrap_or(i64::MAX))
            }
        };
        let mut files = conn.prepare_cached(
            "SELECT path, first_row, last_row FROM files WHERE warning IS NULL AND path >= ?1 ORDER BY path",
        )?;
        let mut rows = conn.prepare_cached(
            "SELECT rowid, anchor, heading FROM sections WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid",
        )?;
        let mut sections: Vec<Listed> = Vec::new();
        // The section the last row belonged to, shown or not: its next windows are skipped.
        let mut current: Option<(String, String)> = None;
        let mut listed = files.query([&from_path])?;
        while let Some(file) = listed.next()? {
            let (path, first, last): (String, i64, i64) = (file.get(0)?, file.get(1)?, file.get(2)?);
            if self.hidden.hides(&path) {
                continue;
            }
            let first = if path == from_path { first.max(from_row.saturating_add(1)) } else { first };
            let mut found = rows.query(params![first, last])?;
            while let Some(row) = found.next()? {
                let anchor: String = row.get(1)?;
                if current.as_ref().is_some_and(|(p, a)| *p == path && *a == anchor) {
                    continue; // the next window of the same section
                }
                current = Some((path.clone(), anchor.clone()));
                let section = Listed { path: path.clone(), anchor, heading: row.get(2)? };
                if !shown(&section) {
                    continue;
                }
                if sections.len() == limit {
                    return Ok(Page { sections, more: true });
                }
                sections.push(section);
            }
        }
        Ok(Page { sections, more: false })
    }
}
