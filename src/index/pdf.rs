//! PDF documents for the index: a rendition (`crate::pdf`) cut into one section per page with
//! text, titled by the outline's path at that page, anchored `page=N` so a citation
//! `docs/manual.pdf#page=3` opens that page in a browser.

use super::chunk::Chunk;
use crate::pdf::{anchor, marker};

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

#[cfg(test)]
mod tests;
