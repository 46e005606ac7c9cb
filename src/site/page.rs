//! Where a document's page is on a published site: a path in `docs/` to the path of the page
//! the site generator made from it, relative to the site's base URL. Pure: the front matter is
//! handed in, nothing is read here.

use crate::config::Generator;
use crate::doc_kind::DocKind;
use crate::index::chunk::front_matter_field;

/// A page's place on the site: its path segments, and whether it is a folder (its URL ends in
/// `/`: `guides/refunds/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The path's segments under the base URL, not yet percent-encoded; empty for the base.
    pub segments: Vec<String>,
    /// The URL ends with a slash (a folder's page).
    pub folder: bool,
}

/// The page `generator` makes from `inner` (a path under `docs/`, `guides/refunds.md`), whose
/// front matter, if it has one, is `front_matter` (the YAML, for Docusaurus's `slug` and
/// `id`). `None` when the generator makes no page of it (a Docusaurus partial, `_name.md`).
pub fn of(generator: Generator, inner: &str, front_matter: Option<&str>) -> Option<Page> {
    let mut segments: Vec<String> = inner.split('/').filter(|s| !s.is_empty()).map(str::to_string).collect();
    let name = segments.pop()?;
    let page = renders(generator, &name);
    let stem = name.rsplit_once('.').map_or(name.as_str(), |(stem, _)| stem);
    match generator {
        _ if !page => {
            segments.push(name.clone());
            Some(Page { segments, folder: false })
        }
        // MkDocs: `index`, or `README` (as written), is its folder's page.
        Generator::Mkdocs => {
            if stem != "index" && stem != "README" {
                segments.push(stem.to_string());
            }
            Some(Page { segments, folder: true })
        }
        // mdBook: `README` in any case is renamed `index`.
        Generator::Mdbook => {
            let stem = if stem.eq_ignore_ascii_case("readme") { "index" } else { stem };
            segments.push(format!("{stem}.html"));
            Some(Page { segments, folder: false })
        }
        Generator::Docusaurus => docusaurus(segments, stem, front_matter),
        Generator::Files => None,
    }
}

/// True when `generator` renders the document named `name` as a page of its own: Markdown
/// (MDX for Docusaurus alone; MkDocs and mdBook copy it as it is). Any other file is published
/// as it is.
pub fn renders(generator: Generator, name: &str) -> bool {
    let kind = DocKind::of(name);
    match generator {
        Generator::Files => false,
        Generator::Docusaurus => matches!(kind, Some(DocKind::Markdown | DocKind::Mdx)),
        Generator::Mkdocs | Generator::Mdbook => kind == Some(DocKind::Markdown),
    }
}

/// Docusaurus's docs plugin: number prefixes (`01-intro`) stripped from every segment; a file
/// named `index`, `README` or as its folder (in any case, prefixes and all) is the folder's
/// page (`guides/`); a front matter `slug` (from the docs route when it starts with `/`, else
/// from the file's folder) or `id` (in place of the file's name) wins otherwise; a file or
/// folder starting with `_` is a partial, not a page.
fn docusaurus(folders: Vec<String>, stem: &str, front_matter: Option<&str>) -> Option<Page> {
    if stem.starts_with('_') || folders.iter().any(|f| f.starts_with('_')) {
        return None;
    }
    let mut segments: Vec<String> = folders.iter().map(|f| without_number_prefix(f).to_string()).collect();
    // Read once, for its slug and its id.
    let front_matter = front_matter.and_then(|yaml| yaml_serde::from_str::<yaml_serde::Value>(yaml).ok());
    let field = |key: &str| front_matter.as_ref().and_then(|value| front_matter_field(value, key));
    if let Some(slug) = field("slug") {
        if slug.starts_with('/') {
            segments.clear();
        }
        segments.extend(slug.split('/').filter(|s| !s.is_empty()).map(str::to_string));
        return Some(Page { segments, folder: false });
    }
    let lower = stem.to_lowercase();
    let index = lower == "index" || lower == "readme" || folders.last().is_some_and(|f| f.to_lowercase() == lower);
    if index {
        return Some(Page { folder: !segments.is_empty(), segments });
    }
    segments.push(field("id").unwrap_or_else(|| without_number_prefix(stem).to_string()));
    Some(Page { segments, folder: false })
}

/// `01-intro` is `intro`, as Docusaurus's default number prefix parser reads it; a date or a
/// version (`2021-01-notes`, `1.2-notes`) keeps its digits.
fn without_number_prefix(name: &str) -> &str {
    let digits = name.len() - name.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return name;
    }
    let rest = &name[digits..];
    let separator = |c: char| matches!(c, '-' | '_' | '.');
    // A version or a date: digits, a separator, digits.
    if rest.starts_with(separator) && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return name;
    }
    let after = rest.trim_start_matches(|c: char| c.is_whitespace());
    let separators = after.trim_start_matches(separator);
    if separators.len() == after.len() {
        return name;
    }
    let suffix = separators.trim_start_matches(|c: char| c.is_whitespace());
    match suffix.chars().next() {
        Some(c) if !separator(c) && !c.is_whitespace() => suffix,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's path as a URL would end: segments joined, a folder with its slash.
    fn path(generator: Generator, inner: &str, front_matter: Option<&str>) -> Option<String> {
        of(generator, inner, front_matter).map(|p| {
            let joined = p.segments.join("/");
            if p.folder && !joined.is_empty() { format!("{joined}/") } else { joined }
        })
    }

    #[test]
    fn each_generator_places_a_page_where_it_builds_it() {
        use Generator::*;
        let cases: &[(Generator, &str, Option<&str>, Option<&str>)] = &[
            (Files, "guides/refunds.md", None, Some("guides/refunds.md")),
            (Files, "index.md", None, Some("index.md")),
            (Mkdocs, "guides/refunds.md", None, Some("guides/refunds/")),
            (Mkdocs, "guides/index.md", None, Some("guides/")),
            (Mkdocs, "guides/README.md", None, Some("guides/")),
            (Mkdocs, "guides/readme.md", None, Some("guides/readme/")),
            (Mkdocs, "guides/Index.md", None, Some("guides/Index/")),
            (Mkdocs, "index.md", None, Some("")),
            (Mkdocs, "guides/page.html", None, Some("guides/page.html")),
            (Mkdocs, "guides/cards.mdx", None, Some("guides/cards.mdx")),
            (Mkdocs, "notes.txt", None, Some("notes.txt")),
            (Mdbook, "guides/refunds.md", None, Some("guides/refunds.html")),
            (Mdbook, "README.md", None, Some("index.html")),
            (Mdbook, "guides/readme.md", None, Some("guides/index.html")),
            (Mdbook, "guides/index.md", None, Some("guides/index.html")),
            (Mdbook, "guides/Index.md", None, Some("guides/Index.html")),
            (Docusaurus, "guides/refunds.md", None, Some("guides/refunds")),
            (Docusaurus, "guides/refunds.mdx", None, Some("guides/refunds")),
            (Docusaurus, "01-guides/02-refunds.md", None, Some("guides/refunds")),
            (Docusaurus, "01 - guides/10_refunds.mdx", None, Some("guides/refunds")),
            (Docusaurus, "2021-01-31-notes.md", None, Some("2021-01-31-notes")),
            (Docusaurus, "1.2-notes.md", None, Some("1.2-notes")),
            (Docusaurus, "404.md", None, Some("404")),
            (Docusaurus, "guides/index.md", None, Some("guides/")),
            (Docusaurus, "guides/README.md", None, Some("guides/")),
            (Docusaurus, "guides/Guides.md", None, Some("guides/")),
            (Docusaurus, "01-guides/01-guides.md", None, Some("guides/")),
            (Docusaurus, "01-guides/guides.md", None, Some("guides/guides")),
            (Docusaurus, "guides/01-index.md", None, Some("guides/index")),
            (Docusaurus, "guides/index.md", Some("id: overview"), Some("guides/")),
            (Docusaurus, "index.md", None, Some("")),
            (Docusaurus, "guides/_partial.md", None, None),
            (Docusaurus, "_drafts/a.md", None, None),
            (Docusaurus, "guides/refunds.md", Some("id: money-back"), Some("guides/money-back")),
            (Docusaurus, "guides/refunds.md", Some("slug: /money"), Some("money")),
            (Docusaurus, "guides/refunds.md", Some("slug: back/money"), Some("guides/back/money")),
            (Docusaurus, "guides/refunds.md", Some("title: [not: yaml"), Some("guides/refunds")),
        ];
        for (generator, inner, front_matter, want) in cases {
            assert_eq!(
                path(*generator, inner, *front_matter).as_deref(),
                *want,
                "{} {inner} {front_matter:?}",
                generator.as_str()
            );
        }
    }

    #[test]
    fn number_prefixes_go_as_docusaurus_strips_them() {
        let cases = [
            ("1-My Doc", "My Doc"),
            ("01-My Doc", "My Doc"),
            ("001 - My Doc", "My Doc"),
            ("001      -    My Doc", "My Doc"),
            ("999_My Doc", "My Doc"),
            ("7.My Doc", "My Doc"),
            ("MyDoc", "MyDoc"),
            ("a1-My Doc", "a1-My Doc"),
            ("00abc01-My Doc", "00abc01-My Doc"),
            ("2021-01-31 - Doc", "2021-01-31 - Doc"),
            ("8.0-release", "8.0-release"),
            ("42", "42"),
            ("3--", "3--"),
        ];
        for (name, want) in cases {
            assert_eq!(without_number_prefix(name), want, "{name}");
        }
    }
}
