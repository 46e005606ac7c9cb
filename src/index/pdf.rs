//! PDF documents for the index: one section per page, titled by the PDF's outline (its
//! bookmarks) where it has one, anchored `page=N` so a citation `docs/manual.pdf#page=3` opens
//! that page in a browser.
//!
//! A PDF is read once into a *rendition*, the text everything else reads as the document's
//! text (the index, `read_file`, `check`): each page begins with a marker line, a form feed and
//! `[page N]`, then the outline's heading path for that page; then the page's text. A form feed
//! inside a page's text is a line break, so a marker is only ever the harness's own.

use super::chunk::Chunk;

/// What a PDF holds: its pages' text, in order, and its outline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Each page's text (page 1 first).
    pub pages: Vec<String>,
    /// The outline's entries, in the document's order.
    pub outline: Vec<Entry>,
}

/// One outline entry (a bookmark).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its depth, 1 for the top.
    pub level: usize,
    /// Its title.
    pub title: String,
    /// The page it points to, from 1.
    pub page: usize,
}

/// What begins a page's marker line.
const MARK: &str = "\u{c}[page ";

/// Anchor of page `n`: what a browser's PDF viewer reads after `#`.
#[must_use]
pub fn anchor(page: usize) -> String {
    format!("page={page}")
}

impl Extracted {
    /// Whether no page has text: a scanned PDF, whose pages are images.
    #[must_use]
    pub fn is_blank(&self) -> bool {
        self.pages.iter().all(|page| page.trim().is_empty())
    }

    /// The rendition: each page's marker line (with its outline path), then its text.
    #[must_use]
    pub fn rendition(&self) -> String {
        let paths = self.paths();
        let mut out = String::new();
        for (n, text) in self.pages.iter().enumerate() {
            out.push_str(MARK);
            out.push_str(&(n + 1).to_string());
            out.push(']');
            if let Some(path) = paths.get(n).filter(|p| !p.is_empty()) {
                out.push(' ');
                out.push_str(&path.join(" > "));
            }
            out.push('\n');
            let text = text.replace('\u{c}', "\n");
            let text = text.trim_matches('\n');
            if !text.is_empty() {
                out.push_str(text);
                out.push('\n');
            }
        }
        out
    }

    /// For each page, the outline's path at it: the titles of the deepest entry that points to
    /// it or to a page before it, and of that entry's parents.
    fn paths(&self) -> Vec<Vec<String>> {
        let mut entries: Vec<&Entry> = self.outline.iter().filter(|e| e.page >= 1).collect();
        // by page, the document's order kept within a page
        entries.sort_by_key(|e| e.page);
        let mut stack: Vec<&Entry> = Vec::new();
        let mut next = entries.into_iter().peekable();
        let mut out = Vec::with_capacity(self.pages.len());
        for page in 1..=self.pages.len() {
            while let Some(entry) = next.next_if(|e| e.page <= page) {
                while stack.last().is_some_and(|top| top.level >= entry.level) {
                    stack.pop();
                }
                stack.push(entry);
            }
            out.push(stack.iter().map(|e| clean_title(&e.title)).filter(|t| !t.is_empty()).collect());
        }
        out
    }
}

/// An outline title on one line.
fn clean_title(title: &str) -> String {
    title.split_whitespace().collect::<Vec<_>>().join(" ").replace(" > ", " - ")
}

/// The sections of a PDF's rendition: one per page with text, titled `title` and the page's
/// outline path (or "page N" where it has none), anchored `page=N`.
#[must_use]
pub fn chunk_pdf(rendition: &str, title: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current: Option<(Chunk, Vec<&str>)> = None;
    let finish = |open: Option<(Chunk, Vec<&str>)>, chunks: &mut Vec<Chunk>| {
        if let Some((mut chunk, lines)) = open {
            let body = lines.join("\n");
            let body = body.trim();
            if !body.is_empty() {
                let last_text = lines.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(0);
                chunk.end_line = chunk.body_line + last_text;
                chunk.body = body.to_string();
                chunks.push(chunk);
            }
        }
    };
    for (i, line) in rendition.lines().enumerate() {
        let number = i + 1;
        if let Some((page, path)) = marker(line) {
            finish(current.take(), &mut chunks);
            let mut heading_path = vec![title.to_string()];
            if path.is_empty() {
                heading_path.push(format!("page {page}"));
            } else {
                heading_path.extend(path.split(" > ").map(str::to_string));
            }
            let chunk = Chunk {
                heading_path,
                anchor: anchor(page),
                start_line: number,
                end_line: number,
                body_line: number + 1,
                body: String::new(),
            };
            current = Some((chunk, Vec::new()));
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        }
    }
    finish(current, &mut chunks);
    chunks
}

/// A marker line's page number and outline path.
fn marker(line: &str) -> Option<(usize, &str)> {
    let rest = line.strip_prefix(MARK)?;
    let (number, path) = rest.split_once(']')?;
    Some((number.parse().ok()?, path.trim()))
}

#[cfg(test)]
mod tests;
