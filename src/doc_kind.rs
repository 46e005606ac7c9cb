//! The kinds of document the index reads, told apart by the file's extension. Every other file
//! in `docs/` is skipped, and `check` lists it with the reason.

/// A document format the index reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// `.md`, `.markdown`: CommonMark with GFM tables, front matter and heading ids.
    Markdown,
    /// `.mdx`: Markdown with JSX and ES imports/exports, which are removed before chunking.
    Mdx,
    /// `.txt`: plain text, one section titled by the file name.
    Text,
    /// `.html`, `.htm`: the page's main text, split at its `h1`–`h6` headings.
    Html,
    /// `.pdf`: its text layer, a section per page titled by its outline, cited `#page=N`.
    Pdf,
}

/// Every extension read, lower-case, without the dot: for messages and the citation pattern.
pub const EXTENSIONS: [&str; 7] = ["md", "markdown", "mdx", "txt", "html", "htm", "pdf"];

impl DocKind {
    /// The kind of the file at `path` (or a bare name), by its extension in any case; `None`
    /// for a file the index does not read.
    #[must_use]
    pub fn of(path: &str) -> Option<DocKind> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        match ext.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(DocKind::Markdown),
            "mdx" => Some(DocKind::Mdx),
            "txt" => Some(DocKind::Text),
            "html" | "htm" => Some(DocKind::Html),
            "pdf" => Some(DocKind::Pdf),
            _ => None,
        }
    }
}

/// The extensions as a reader sees them: ".md, .markdown, .mdx, .txt, .html, .htm".
#[must_use]
pub fn extensions_listed() -> String {
    EXTENSIONS.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_extension_in_any_case() {
        let cases = [
            ("docs/a.md", Some(DocKind::Markdown)),
            ("docs/a.MARKDOWN", Some(DocKind::Markdown)),
            ("docs/guide/a.mdx", Some(DocKind::Mdx)),
            ("notes.TXT", Some(DocKind::Text)),
            ("docs/a.html", Some(DocKind::Html)),
            ("docs/a.Htm", Some(DocKind::Html)),
            ("docs/manual.PDF", Some(DocKind::Pdf)),
            ("docs/logo.png", None),
            ("docs/README", None),
            ("docs/.md/x", None),
        ];
        for (path, want) in cases {
            assert_eq!(DocKind::of(path), want, "{path}");
        }
        assert_eq!(extensions_listed(), ".md, .markdown, .mdx, .txt, .html, .htm, .pdf");
    }

    #[test]
    fn the_web_page_links_citations_of_every_kind() {
        let page = include_str!("serve/page/render.js");
        let line = page.lines().find(|l| l.starts_with("const CITATION = ")).expect("render.js has CITATION");
        let listed = line.split("(?:").nth(1).and_then(|rest| rest.split(')').next()).expect("an alternation");
        let mut listed: Vec<&str> = listed.split('|').collect();
        listed.sort_unstable();
        let mut ours = EXTENSIONS.to_vec();
        ours.sort_unstable();
        assert_eq!(listed, ours, "render.js CITATION and doc_kind::EXTENSIONS differ: {line}");
    }
}
