//! A heading's anchor on a published page, as its site generator makes it. A citation names a
//! section by the anchor the index gave it (GitHub's slug, or the heading's `{#id}`); MkDocs
//! and mdBook make other ids, each unique on its page its own way, so the whole page's
//! headings are read to find the one a citation names. Pure: the outline is handed in.

use std::collections::HashSet;

use unicode_normalization::UnicodeNormalization;

use crate::config::Generator;
use crate::index::chunk::SiteHeading;

/// The id `generator` gives the heading the index anchored `anchor`, among `headings` (every
/// heading of the page, in order); `None` when no heading has that anchor.
pub fn on_page(generator: Generator, headings: &[SiteHeading], anchor: &str) -> Option<String> {
    let ids = match generator {
        // Docusaurus slugs headings with github-slugger, as the index does.
        Generator::Files | Generator::Docusaurus => {
            return headings.iter().any(|h| h.anchor == anchor).then(|| anchor.to_string());
        }
        Generator::Mkdocs => mkdocs_ids(headings),
        Generator::Mdbook => mdbook_ids(headings).into_iter().map(Some).collect(),
    };
    headings.iter().zip(ids).find(|(h, _)| h.anchor == anchor).and_then(|(_, id)| id)
}

/// Python-Markdown's `toc` (MkDocs): a `{#id}` kept (attr_list), and taken before any heading
/// is slugged; else the text NFKD-normalised to ASCII, `[^\w\s-]` dropped, trimmed, lower
/// case, each run of `-` and whitespace one `-`; a taken id gets `_1`, `_2`...; an empty one `_1`.
/// A setext heading over two lines is no heading to Python-Markdown (a paragraph and a rule),
/// so it has no id.
fn mkdocs_ids(headings: &[SiteHeading]) -> Vec<Option<String>> {
    let mut taken: HashSet<String> = headings.iter().filter_map(|h| h.id.clone()).collect();
    headings
        .iter()
        .map(|heading| match &heading.id {
            Some(id) => Some(id.clone()),
            None if heading.text.contains('\n') => None,
            None => {
                let mut id = mkdocs_slug(&heading.text);
                while id.is_empty() || taken.contains(&id) {
                    id = next_mkdocs(&id);
                }
                taken.insert(id.clone());
                Some(id)
            }
        })
        .collect()
}

/// Python-Markdown's `slugify(value, '-')`.
fn mkdocs_slug(text: &str) -> String {
    let ascii: String = text.nfkd().filter(char::is_ascii).collect();
    let kept: String =
        ascii.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || is_py_space(*c)).collect();
    let lower = kept.trim_matches(is_py_space).to_ascii_lowercase();
    let mut slug = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if c == '-' || is_py_space(c) {
            if !in_run {
                slug.push('-');
            }
            in_run = true;
        } else {
            slug.push(c);
            in_run = false;
        }
    }
    slug
}

/// Python's ASCII whitespace (`\s` on an ASCII string, and what `strip()` removes).
fn is_py_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Python-Markdown's `unique`: `name_3` becomes `name_4`, anything else gains `_1`.
fn next_mkdocs(id: &str) -> String {
    if let Some((stem, n)) = id.rsplit_once('_')
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = n.parse::<u64>()
    {
        return format!("{stem}_{}", n + 1);
    }
    format!("{id}_1")
}

/// mdBook 0.5: a `{#id}` as written (not counted); else the smart-punctuated text trimmed and
/// lower-cased, letters, digits, `_` and `-` kept, each whitespace character a `-`; a repeat
/// gets `-1`, `-2`...
fn mdbook_ids(headings: &[SiteHeading]) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::new();
    headings
        .iter()
        .map(|heading| match &heading.id {
            Some(id) => id.clone(),
            None => {
                let base: String = heading
                    .smart_text
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
                        c if c.is_whitespace() => Some('-'),
                        _ => None,
                    })
                    .collect();
                let mut id = base.clone();
                let mut n = 0;
                while taken.contains(&id) {
                    n += 1;
                    id = format!("{base}-{n}");
                }
                taken.insert(id.clone());
                id
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::chunk::site_outline;

    /// Every heading's id on the page `generator` makes of `source`, in order.
    fn ids(generator: Generator, source: &str) -> Vec<String> {
        let outline = site_outline(source);
        outline
            .headings
            .iter()
            .map(|h| on_page(generator, &outline.headings, &h.anchor).unwrap_or_else(|| "(none)".into()))
            .collect()
    }

    /// Headings that tell the generators apart: repeats, punctuation, accents, code, a custom
    /// id, a double hyphen (an en dash to mdBook), a heading of punctuation alone, a setext
    /// heading over two lines (no heading to Python-Markdown) and inline HTML.
    const PAGE: &str = "# Refunds\n\n## Window\n\n## Window\n\n## A -- B  c\n\n## Ärger Über `code` spans\n\n\
                        ## Custom {#window}\n\n## Q&A: what's new?\n\n## ???\n\n## Window_1\n\nTwo\nlines\n---\n\n## Save <kbd>Ctrl</kbd>+<kbd>S</kbd>\n";

    #[test]
    fn mkdocs_ids_are_python_markdowns() {
        assert_eq!(
            ids(Generator::Mkdocs, PAGE),
            [
                "refunds",
                "window_1",
                "window_2",
                "a-b-c",
                "arger-uber-code-spans",
                "window",
                "qa-whats-new",
                "_1",
                "window_3",
                "(none)",
                "save-ctrls"
            ]
        );
    }

    #[test]
    fn mdbook_ids_are_mdbooks() {
        assert_eq!(
            ids(Generator::Mdbook, PAGE),
            [
                "refunds",
                "window",
                "window-1",
                "a--b--c",
                "ärger-über-code-spans",
                "window",
                "qa-whats-new",
                "",
                "window_1",
                "two-lines",
                "save-ctrls"
            ]
        );
    }

    #[test]
    fn docusaurus_and_files_keep_the_index_anchor() {
        let outline = site_outline(PAGE);
        let anchors: Vec<String> = outline.headings.iter().map(|h| h.anchor.clone()).collect();
        assert_eq!(ids(Generator::Docusaurus, PAGE), anchors);
        assert_eq!(ids(Generator::Files, PAGE), anchors);
        assert_eq!(on_page(Generator::Mkdocs, &outline.headings, "no-such-heading"), None);
        assert_eq!(on_page(Generator::Files, &outline.headings, "no-such-heading"), None);
    }

    #[test]
    fn python_markdown_counts_on() {
        assert_eq!(next_mkdocs("a"), "a_1");
        assert_eq!(next_mkdocs("a_1"), "a_2");
        assert_eq!(next_mkdocs("a_9"), "a_10");
        assert_eq!(next_mkdocs("a_"), "a__1");
        assert_eq!(next_mkdocs(""), "_1");
    }
}
