//! HTML pages for the index: the page's main text, split at its `h1`–`h6` headings, read with
//! a real HTML parser (`scraper`, on html5ever), so malformed markup is read as a browser
//! reads it. Scripts, styles, navigation and asides are not text, nor are the page's own
//! header and footer (those directly in `body`; an article's header is its text).
//!
//! Sections carry the same fields as Markdown ones: the heading path, an anchor (the heading's
//! `id`, else its GitHub-style slug) and lines. Lines are the heading tags' lines in the file,
//! found in source order; when the parser's headings and the tags in the source cannot be
//! paired one to one, a section's lines are those of the whole file.

use std::sync::LazyLock;

use ego_tree::NodeRef;
use regex::Regex;
use scraper::{ElementRef, Html, Node, Selector};

use super::chunk::{Chunk, Slugger, collapse_whitespace, slugify};

/// Elements whose content is not page text.
const NOT_TEXT: &[&str] =
    &["script", "style", "noscript", "template", "nav", "aside", "svg", "iframe", "head", "button", "select"];
/// The page's chrome when directly in `body`.
const CHROME: &[&str] = &["header", "footer"];
/// Elements that end a line of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "pre",
    "blockquote",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "hr",
    "details",
    "summary",
];
/// Elements that end a paragraph.
const PARAGRAPHS: &[&str] = &["p", "ul", "ol", "table", "pre", "blockquote", "dl", "figure", "details"];

/// A heading tag in the source: `<h1` to `<h6` followed by a space, `>` or `/`.
static HEADING_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<h[1-6][\s>/]").expect("the heading tag pattern is a valid constant regex"));
/// The headings, for the pass that numbers them in document order.
static HEADINGS: LazyLock<Selector> =
    LazyLock::new(|| Selector::parse("h1, h2, h3, h4, h5, h6").expect("a valid constant selector"));
/// Where the page's main text is, best first (a page of several `article`s is read whole).
static MAIN: LazyLock<[Selector; 3]> =
    LazyLock::new(|| ["main", "[role=main]", "body"].map(|s| Selector::parse(s).expect("a valid constant selector")));
/// The page title.
static TITLE: LazyLock<Selector> = LazyLock::new(|| Selector::parse("title").expect("a valid constant selector"));

/// The sections of an HTML page; text before the first heading is titled by `<title>`, else
/// by `fallback_title` (the file stem).
#[must_use]
pub fn chunk_html(source: &str, fallback_title: &str) -> Vec<Chunk> {
    let page = Html::parse_document(source);
    let title = page
        .select(&TITLE)
        .next()
        .map(|t| collapse_whitespace(&t.text().collect::<String>()))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| fallback_title.to_string());
    let lines = HeadingLines::new(source, &page);
    let root = MAIN.iter().find_map(|s| page.select(s).next()).unwrap_or_else(|| page.root_element());
    let mut reader = Reader::new(title, lines);
    reader.read(*root, false);
    reader.finish()
}

/// The 1-based line of each heading element, in document order, and the file's line count.
struct HeadingLines {
    /// Heading element ids, in document order, with their lines (when they pair up).
    lines: Vec<(ego_tree::NodeId, Option<usize>)>,
    /// Lines in the file.
    total: usize,
}

impl HeadingLines {
    fn new(source: &str, page: &Html) -> Self {
        let tags: Vec<usize> =
            HEADING_TAG.find_iter(source).map(|m| 1 + source[..m.start()].matches('\n').count()).collect();
        let ids: Vec<ego_tree::NodeId> = page.select(&HEADINGS).map(|h| h.id()).collect();
        let paired = tags.len() == ids.len();
        let lines =
            ids.iter().enumerate().map(|(i, id)| (*id, if paired { tags.get(i).copied() } else { None })).collect();
        HeadingLines { lines, total: source.lines().count().max(1) }
    }

    fn line_of(&self, id: ego_tree::NodeId) -> Option<usize> {
        self.lines.iter().find(|(i, _)| *i == id).and_then(|(_, line)| *line)
    }
}

/// A section being read.
struct Open {
    path: Vec<String>,
    anchor: String,
    line: Option<usize>,
    text: String,
}

/// Reads the page in document order, one section per heading.
struct Reader {
    lines: HeadingLines,
    slugs: Slugger,
    stack: Vec<(u8, String)>,
    done: Vec<Open>,
    open: Open,
}

impl Reader {
    fn new(title: String, lines: HeadingLines) -> Self {
        let open = Open { path: vec![title], anchor: String::new(), line: Some(1), text: String::new() };
        Reader { lines, slugs: Slugger::new(), stack: Vec::new(), done: Vec::new(), open }
    }

    fn read(&mut self, node: NodeRef<'_, Node>, pre: bool) {
        match node.value() {
            Node::Text(text) => self.text(text, pre),
            Node::Element(element) => {
                let name = element.name();
                let in_body = node.parent().and_then(|p| p.value().as_element()).is_some_and(|p| p.name() == "body");
                if NOT_TEXT.contains(&name) || (in_body && CHROME.contains(&name)) {
                    return;
                }
                if let Some(level) = heading_level(name) {
                    if let Some(heading) = ElementRef::wrap(node) {
                        self.heading(level, heading);
                    }
                    return;
                }
                let block = BLOCKS.contains(&name);
                if block || name == "br" {
                    self.end_line();
                }
                if name == "li" {
                    self.open.text.push_str("- ");
                }
                for child in node.children() {
                    self.read(child, pre || name == "pre");
                }
                if PARAGRAPHS.contains(&name) {
                    self.end_paragraph();
                } else if block {
                    self.end_line();
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str, pre: bool) {
        if pre {
            self.open.text.push_str(text);
            return;
        }
        let words = collapse_whitespace(text);
        if words.is_empty() {
            return;
        }
        let spaced = text.starts_with(char::is_whitespace);
        if spaced && !self.open.text.is_empty() && !self.open.text.ends_with(['\n', ' ']) {
            self.open.text.push(' ');
        }
        self.open.text.push_str(&words);
        if text.ends_with(char::is_whitespace) {
            self.open.text.push(' ');
        }
    }

    fn end_line(&mut self) {
        let text = &mut self.open.text;
        text.truncate(text.trim_end_matches(' ').len());
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }

    fn end_paragraph(&mut self) {
        self.end_line();
        if !self.open.text.is_empty() && !self.open.text.ends_with("\n\n") {
            self.open.text.push('\n');
        }
    }

    fn heading(&mut self, level: u8, heading: ElementRef<'_>) {
        let title = collapse_whitespace(&heading.text().collect::<String>());
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        self.stack.push((level, title.clone()));
        // An `id` is slugged too, so the anchor fits the citation pattern (`module.func` is
        // `modulefunc`), as a Markdown `{#id}` does.
        let from_id = heading.value().id().map(slugify).filter(|id| !id.is_empty());
        let anchor = self.slugs.unique(&from_id.unwrap_or_else(|| slugify(&title)));
        let path = self.stack.iter().map(|(_, t)| t.clone()).collect();
        let next = Open { path, anchor, line: self.lines.line_of(heading.id()), text: String::new() };
        self.done.push(std::mem::replace(&mut self.open, next));
    }

    fn finish(mut self) -> Vec<Chunk> {
        let total = self.lines.total;
        self.done.push(self.open);
        let starts: Vec<Option<usize>> = self.done.iter().map(|s| s.line).collect();
        let mut chunks = Vec::new();
        for (i, section) in self.done.into_iter().enumerate() {
            let body = section.text.trim();
            if body.is_empty() {
                continue;
            }
            let next = starts.get(i + 1..).and_then(|rest| rest.iter().flatten().next().copied());
            let (start, end) = match section.line {
                Some(start) => (start, next.map_or(total, |n| n.saturating_sub(1).max(start))),
                None => (1, total),
            };
            chunks.push(Chunk {
                heading_path: section.path,
                anchor: section.anchor,
                start_line: start,
                end_line: end,
                body_line: start,
                body: body.to_string(),
            });
        }
        chunks
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_text_is_split_at_headings_and_chrome_is_not_text() {
        let page = "<!doctype html>\n<html><head><title>Refunds</title><style>p{}</style></head>\n<body>\n\
                    <nav>Home | Pricing</nav>\n<main>\n<p>Intro text.</p>\n<h1>Refunds</h1>\n\
                    <p>Refunds are <b>issued</b> in\n   full.</p>\n<h2 id=\"win\">Window</h2>\n\
                    <ul><li>14 days</li><li>from the first payment</li></ul>\n<script>alert(1)</script>\n\
                    <h2>How to issue?</h2>\n<pre>  curl -X POST\n    /refunds</pre>\n</main>\n\
                    <footer>© Acme</footer></body></html>\n";
        let chunks = chunk_html(page, "refunds");
        let view: Vec<(String, &str, usize, usize, &str)> = chunks
            .iter()
            .map(|c| (c.heading_text(), c.anchor.as_str(), c.start_line, c.end_line, c.body.as_str()))
            .collect();
        assert_eq!(
            view,
            vec![
                ("Refunds".to_string(), "", 1, 6, "Intro text."),
                ("Refunds".to_string(), "refunds", 7, 9, "Refunds are issued in full."),
                ("Refunds > Window".to_string(), "win", 10, 12, "- 14 days\n- from the first payment"),
                ("Refunds > How to issue?".to_string(), "how-to-issue", 13, 17, "curl -X POST\n    /refunds"),
            ]
        );
    }

    #[test]
    fn every_article_and_an_articles_header_are_text_but_the_page_header_is_not() {
        let page = "<body><header>Acme site</header><form><article><header><h1 id=\"mod.func\">First</h1></header>\
                    <p>one</p></article><article><h1>Second</h1><p>two</p></article></form><footer>(c)</footer></body>";
        let chunks = chunk_html(page, "notes");
        let view: Vec<(&str, &str)> = chunks.iter().map(|c| (c.anchor.as_str(), c.body.as_str())).collect();
        assert_eq!(view, vec![("modfunc", "one"), ("second", "two")]);
    }

    #[test]
    fn a_page_without_headings_or_title_is_one_section_named_by_the_file() {
        let chunks = chunk_html("<p>Just <i>text</i>.</p><div>More</div>", "notes");
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].heading_path, vec!["notes".to_string()]);
        assert_eq!(chunks[0].body, "Just text.\n\nMore");
        assert!(chunk_html("", "empty").is_empty());
    }
}
