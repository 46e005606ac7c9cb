//! A document of any kind the index reads, as its sections: Markdown and MDX (its JSX removed)
//! by heading, plain text whole, HTML by its `h1`–`h6`. Above `chunk` and `html`, which each
//! split one kind.

use super::{chunk, html};
use crate::doc_kind::DocKind;

use chunk::Chunk;

/// Splits `source` into chunks, one per heading, in file order.
///
/// The sections of the Markdown file at `path` (its stem titles text before the first heading).
#[must_use]
pub fn chunk_file(path: &str, source: &str) -> Vec<Chunk> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    match DocKind::of(path) {
        // Invalid MDX is still mostly Markdown: indexed as it is, and `check` reports it.
        Some(DocKind::Mdx) => match super::mdx::to_markdown(source) {
            Ok(markdown) => chunk::chunk_markdown(&markdown, stem),
            Err(_) => chunk::chunk_markdown(source, stem),
        },
        Some(DocKind::Text) => chunk::chunk_text(source, stem),
        Some(DocKind::Html) => html::chunk_html(source, stem),
        // A PDF is read as its rendition (`pdf`): a marker line before each page's text.
        Some(DocKind::Pdf) => super::pdf::chunk_pdf(source, stem),
        Some(DocKind::Markdown) | None => chunk::chunk_markdown(source, stem),
    }
}
