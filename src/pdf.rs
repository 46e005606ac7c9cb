//! A PDF's text: its pages and its outline (bookmarks), read with lopdf, as a *rendition*, the
//! text everything else reads as the document's text (the index, `read_file`, `check`): each
//! page begins with a marker line, a form feed and `[page N]`, then the outline's heading path
//! at that page; then the page's text. A form feed inside a page's text is a line break, so a
//! marker is only ever the harness's own. `index::pdf` cuts a rendition into sections, one per
//! page, anchored `page=N` (what a browser's PDF viewer opens).
//!
//! Architecture invariant: this module does no IO; it reads the bytes it is given.

use unicode_normalization::UnicodeNormalization;

/// Most bytes one stream of a PDF may inflate to (a decompression bomb stops here).
const MAX_INFLATED: usize = 64 * 1024 * 1024;

/// Most entries of an outline (and nodes of its named destinations) read. lopdf follows an
/// outline's `First` and `Next` without remembering where it has been, so an entry whose `Next`
/// leads back to itself kept it busy until the time limit (issue 51, finding 6): an outline is
/// walked here first, and one with a loop, a shared entry or more entries than this is left out
/// (the pages are still read).
const MAX_OUTLINE_NODES: usize = 10_000;

/// How many PDFs may be read at once, each by a zygote of its own and that zygote's worker
/// (`worker`): a PDF that runs to the time limit holds one while the others read on
/// (`index::ahead` reads a listing's PDFs on as many threads). Each worker may map 1 GiB, so
/// PDFs may take this many GiB at once.
pub const READERS: usize = 2;

/// Why a PDF gives no text.
#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum PdfError {
    /// It does not parse as a PDF (or needs a password).
    #[error("not a PDF that can be read ({0})")]
    Unreadable(String),
    /// No page has text: its pages are images.
    #[error("no text layer (a scanned PDF?); its pages would need OCR")]
    NoText,
    /// The process reading it crashed or ran out of time (`worker`).
    #[error("{0}")]
    Crashed(String),
    /// Its text is more than the limit on a document's size (a few kB of PDF can hold many MB
    /// of compressed text): refused like a file over the limit, before more is read.
    #[error("its text is over the {0}-byte limit (index.max_file_bytes)")]
    TooMuchText(u64),
}

/// The pages' text and the outline of the PDF `bytes`, read with lopdf. A page whose text
/// cannot be read is left empty, and the others are kept; a PDF without an outline has none.
/// Ligatures and other compatibility forms are folded (NFKC: "ﬁ" is "fi"). Reading stops as
/// soon as the text (outline titles included) is over `max_text` bytes.
pub fn extract(bytes: &[u8], max_text: u64) -> Result<Extracted, PdfError> {
    let options = lopdf::LoadOptions { max_decompressed_size: Some(MAX_INFLATED), ..Default::default() };
    let doc = lopdf::Document::load_mem_with_options(bytes, options)
        .map_err(|e| PdfError::Unreadable(e.to_string().chars().take(200).collect()))?;
    // The page tree is walked once: `text::page_text` takes each page by its id.
    let ids: Vec<lopdf::ObjectId> = doc.get_pages().into_values().collect();
    let mut read = 0u64;
    let mut count = |text: &str| {
        read = read.saturating_add(text.len() as u64);
        if read > max_text { Err(PdfError::TooMuchText(max_text)) } else { Ok(()) }
    };
    let mut pages = Vec::with_capacity(ids.len());
    // A page's content may inflate to lopdf's own bound, as when `extract_text` read it.
    for id in ids {
        let text = text::page_text(&doc, id, lopdf::DEFAULT_MAX_DECOMPRESSED_SIZE)
            .map(|text| text.nfkc().collect::<String>())
            .unwrap_or_default();
        count(&text)?;
        pages.push(text);
    }
    // A PDF without an outline is an error to lopdf: it simply has none.
    let outline: Vec<Entry> = if outline_is_finite(&doc) {
        doc.get_toc()
            .map(|toc| {
                toc.toc
                    .into_iter()
                    .map(|e| Entry { level: e.level, title: e.title.nfkc().collect(), page: e.page })
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    for entry in &outline {
        count(&entry.title)?;
    }
    let extracted = Extracted { pages, outline };
    if extracted.is_blank() {
        return Err(PdfError::NoText);
    }
    Ok(extracted)
}

/// True when the outline (and the tree of named destinations its entries may point to) can be
/// walked the way lopdf walks it and ends: no entry reached twice, at most
/// [`MAX_OUTLINE_NODES`] of them.
fn outline_is_finite(doc: &lopdf::Document) -> bool {
    use lopdf::Object;
    let Ok(catalog) = doc.catalog() else { return true };
    let mut todo: Vec<&Object> = Vec::new();
    todo.extend(catalog.get(b"Outlines").ok());
    todo.extend(catalog.get(b"Dests").ok());
    if let Some(names) = catalog.get_deref(b"Names", doc).ok().and_then(|n| n.as_dict().ok()) {
        todo.extend(names.get(b"Dests").ok());
    }
    let mut seen = std::collections::HashSet::new();
    let mut nodes = 0usize;
    while let Some(object) = todo.pop() {
        let dict = match object {
            Object::Reference(id) => {
                if !seen.insert(*id) {
                    return false;
                }
                match doc.get_object(*id).and_then(Object::as_dict) {
                    Ok(dict) => dict,
                    Err(_) => continue,
                }
            }
            Object::Dictionary(dict) => dict,
            _ => continue,
        };
        nodes += 1;
        if nodes > MAX_OUTLINE_NODES {
            return false;
        }
        todo.extend([b"First".as_slice(), b"Next"].into_iter().filter_map(|key| dict.get(key).ok()));
        if let Some(kids) = dict.get_deref(b"Kids", doc).ok().and_then(|k| k.as_array().ok()) {
            if nodes + kids.len() > MAX_OUTLINE_NODES {
                return false;
            }
            todo.extend(kids.iter());
        }
    }
    true
}

/// What a PDF holds: its pages' text, in order, and its outline.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Extracted {
    /// Each page's text (page 1 first).
    pub pages: Vec<String>,
    /// The outline's entries, in the document's order.
    pub outline: Vec<Entry>,
}

/// One outline entry (a bookmark).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Its depth, 1 for the top.
    pub level: usize,
    /// Its title.
    pub title: String,
    /// The page it points to, from 1.
    pub page: usize,
}

/// What begins a page's marker line.
pub const MARK: &str = "\u{c}[page ";

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

/// The pages and outline of the PDF `bytes`, at most `max_text` bytes of text, read in a worker
/// process of their own when the zygote runs (`worker`), else here.
pub fn read(bytes: &[u8], max_text: u64) -> Result<Extracted, PdfError> {
    #[cfg(unix)]
    return worker::extract(bytes, max_text);
    #[cfg(not(unix))]
    return extract(bytes, max_text);
}

/// A marker line's page number and outline path (`None` for any other line).
#[must_use]
pub fn marker(line: &str) -> Option<(usize, &str)> {
    let rest = line.strip_prefix(MARK)?;
    let (number, path) = rest.split_once(']')?;
    Some((number.parse().ok()?, path.trim()))
}

#[cfg(any(test, debug_assertions))]
pub mod fixtures;
#[cfg(test)]
mod tests;
mod text;
#[cfg(unix)]
pub mod worker;
