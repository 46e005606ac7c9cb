//! Splits one Markdown file into heading sections for the full-text index.
//!
//! The index answers "which part of which page" questions, so its unit is a
//! section: a heading and the Markdown under it up to the next heading. This
//! module owns that split and nothing else: it does no IO and knows nothing
//! about SQLite. Each [`Chunk`] carries the heading path (for ranking and
//! display), a GitHub-style anchor and 1-based line range (for citations) and
//! the raw Markdown body (for the index and for quoting).
//!
//! Headings are found by pulldown-cmark, never by matching `#` at line
//! starts, so a `# .env` line in a fenced or indented code block is not a
//! heading, setext headings (`Title` over `===` or `---`) are, and YAML front
//! matter is neither.
//!
//! Decisions worth knowing:
//! - Every heading pulldown-cmark reports is a section boundary, including
//!   headings inside block quotes and list items. Headings inside raw HTML
//!   blocks are not reported, so they stay in the body.
//! - Only a YAML block at the very top of the file (after an optional BOM) is
//!   front matter. pulldown-cmark also reads `---` / text / `---` after a
//!   blank line mid-file as a metadata block; such a block stays body text.
//! - A chunk's line range covers the heading line(s) and the trimmed body, so
//!   trailing blank lines before the next heading are not part of it. The
//!   preamble chunk has no heading line: its range starts at its first
//!   non-blank line.
//! - Lines are counted by `\n`; a `\r\n` file numbers the same way, and the
//!   body keeps its `\r` bytes as written.
//! - The anchor "" belongs to the top of the file, so a heading whose slug is
//!   empty (all punctuation) gets "-1", and anchors stay unique per file.

use std::collections::HashMap;
use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, MetadataBlockKind, Options, Parser, Tag, TagEnd};

/// One section of a Markdown file: a heading and the text under it up to the next heading (of any level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Titles of the enclosing headings and this one, outermost first ("Refunds", "Window").
    pub heading_path: Vec<String>,
    /// GitHub-style slug of this heading, unique within the file ("window", "window-1" for the second one).
    pub anchor: String,
    /// 1-based first line of the section: the heading line (for the preamble, its first non-blank line).
    pub start_line: usize,
    /// 1-based last line (inclusive) of the section: the last non-blank line of its body.
    pub end_line: usize,
    /// 1-based line of the body's first character.
    pub body_line: usize,
    /// The section's Markdown source after the heading line(s), trimmed; raw Markdown (HTML comments, code fences kept as written).
    pub body: String,
}

impl Chunk {
    /// The heading path joined for display: "Refunds > Window".
    #[must_use]
    pub fn heading_text(&self) -> String {
        self.heading_path.join(" > ")
    }
}

/// Plain text is one section titled `title`, anchored at the top of the file; a long one is
/// cut into windows by the index like any long section.
#[must_use]
pub fn chunk_text(source: &str, title: &str) -> Vec<Chunk> {
    let lines = LineIndex::new(source);
    Body::find(source, 0..source.len())
        .map(|body| body.into_chunk(&lines, None, vec![title.to_string()], String::new()))
        .into_iter()
        .collect()
}

/// Text before the first heading becomes a chunk titled by the front matter
/// `title:` if there is one (invalid YAML is ignored), else `fallback_title`
/// (the caller passes the file stem), with the anchor "" (the top of the
/// file). Sections whose body is empty after trimming whitespace are skipped;
/// front matter is never part of a body.
#[must_use]
pub fn chunk_markdown(source: &str, fallback_title: &str) -> Vec<Chunk> {
    let bom = bom_len(source);
    let outline = parse_outline(source, bom, Reading::Plain);
    let lines = LineIndex::new(source);
    let mut chunks = Vec::with_capacity(outline.headings.len() + 1);

    let preamble_start = outline.front_matter.as_ref().map_or(bom, |fm| fm.range.end);
    let preamble_end = outline.headings.first().map_or(source.len(), |h| lines.line_start_of(h.range.start));
    let title = outline
        .front_matter
        .as_ref()
        .and_then(|fm| front_matter_title(&fm.yaml))
        .unwrap_or_else(|| fallback_title.to_string());
    if let Some(body) = Body::find(source, preamble_start..preamble_end) {
        chunks.push(body.into_chunk(&lines, None, vec![title], String::new()));
    }

    let anchors = anchors(&outline.headings);
    let mut stack: Vec<(HeadingLevel, String)> = Vec::new();
    for (i, (heading, anchor)) in outline.headings.iter().zip(anchors).enumerate() {
        let path = push_heading(&mut stack, heading);
        let next = outline.headings.get(i + 1);
        let end = next.map_or(source.len(), |h| lines.line_start_of(h.range.start));
        let start = lines.next_line_start(heading.range.end.saturating_sub(1)).min(end);
        if let Some(body) = Body::find(source, start..end) {
            let first = lines.line_of(heading.range.start);
            chunks.push(body.into_chunk(&lines, Some(first), path, anchor));
        }
    }
    chunks
}

/// The length of a leading byte order mark (0 without one).
fn bom_len(source: &str) -> usize {
    if source.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 }
}

/// Each heading's anchor, in file order: its `{#id}`, else its GitHub slug, unique in the file.
fn anchors(headings: &[RawHeading]) -> Vec<String> {
    let mut slugs = Slugger::new();
    headings
        .iter()
        .map(|heading| match &heading.id {
            Some(id) => slugs.unique(id),
            None => slugs.unique(&slugify(&heading.text)),
        })
        .collect()
}

/// A heading as a site generator reads it, beside the anchor citations name it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteHeading {
    /// The anchor a citation names this heading by (as [`Chunk::anchor`]).
    pub anchor: String,
    /// Its inline text as written: whitespace as it is, an image's alt text left out (a
    /// rendered heading's text holds no `alt`).
    pub text: String,
    /// The same text read with smart punctuation (`--` an en dash, straight quotes curled),
    /// as mdBook reads it.
    pub smart_text: String,
    /// Its `{#custom-id}`, which site generators take as the id too.
    pub id: Option<String>,
}

/// What a site generator needs of a Markdown file: its headings in file order and its front
/// matter's YAML (without the delimiters), if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteOutline {
    /// Every heading, in file order.
    pub headings: Vec<SiteHeading>,
    /// The YAML block at the top of the file.
    pub front_matter: Option<String>,
}

/// Reads `source` for a site generator (`site`): the same headings [`chunk_markdown`] splits
/// at, each with its anchor here and its text as a generator sees it.
#[must_use]
pub fn site_outline(source: &str) -> SiteOutline {
    let bom = bom_len(source);
    let plain = parse_outline(source, bom, Reading::Plain);
    let smart = parse_outline(source, bom, Reading::Smart);
    let headings = anchors(&plain.headings)
        .into_iter()
        .zip(&plain.headings)
        .zip(smart.headings)
        .map(|((anchor, heading), smart)| SiteHeading {
            anchor,
            text: heading.written.clone(),
            smart_text: smart.written,
            id: heading.id.clone(),
        })
        .collect();
    SiteOutline { headings, front_matter: plain.front_matter.map(|fm| fm.yaml) }
}

/// GitHub's slug: lowercase; keep letters, digits (Unicode-aware), spaces, hyphens and underscores; drop other punctuation; spaces become hyphens. ("How to issue?" -> "how-to-issue", "Q&A — FAQ" -> "qa--faq")
///
/// Each whitespace character becomes one hyphen; runs are not collapsed,
/// which is what GitHub does.
#[must_use]
pub fn slugify(heading: &str) -> String {
    let mut slug = String::with_capacity(heading.len());
    for c in heading.chars() {
        if c.is_ascii() {
            push_slug_char(&mut slug, c.to_ascii_lowercase());
        } else {
            c.to_lowercase().for_each(|l| push_slug_char(&mut slug, l));
        }
    }
    slug
}

/// Appends lowercased `c` to `slug` the way GitHub does: whitespace as '-', punctuation dropped.
fn push_slug_char(slug: &mut String, c: char) {
    if c.is_whitespace() {
        slug.push('-');
    } else if c.is_alphanumeric() || c == '-' || c == '_' {
        slug.push(c);
    }
}

/// A heading as the parser reported it, before it becomes a chunk.
struct RawHeading {
    /// Its level, to place it in the heading path.
    level: HeadingLevel,
    /// Its plain inline text, whitespace collapsed.
    text: String,
    /// Its inline text as written (whitespace kept), without an image's alt text.
    written: String,
    /// The `{#custom-id}` attribute, which wins over the slug.
    id: Option<String>,
    /// Byte range of the heading in the file, underline included for setext.
    range: Range<usize>,
}

/// The YAML block at the top of the file.
struct FrontMatter {
    /// Byte range of the block, delimiters included.
    range: Range<usize>,
    /// The YAML between the delimiters.
    yaml: String,
}

/// What one parse of the file yields: all this module needs from pulldown-cmark.
struct Outline {
    /// Front matter, if the file starts with one.
    front_matter: Option<FrontMatter>,
    /// Every heading, in file order.
    headings: Vec<RawHeading>,
}

/// How the inline text of headings is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// As written: what the index and its anchors use.
    Plain,
    /// With smart punctuation, as mdBook renders it.
    Smart,
}

/// Parses `source` (skipping `bom` leading bytes) and keeps the front matter and headings.
fn parse_outline(source: &str, bom: usize, reading: Reading) -> Outline {
    let mut options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH;
    if reading == Reading::Smart {
        options |= Options::ENABLE_SMART_PUNCTUATION;
    }
    let text = &source[bom..];
    let mut outline = Outline { front_matter: None, headings: Vec::new() };
    let mut heading: Option<RawHeading> = None;
    let mut yaml: Option<String> = None;
    // Inside an image of a heading: its alt text is in the index's text, not in the written one.
    let mut image = 0_usize;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        let range = range.start + bom..range.end + bom;
        match event {
            Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) if range.start == bom => {
                yaml = Some(String::new());
            }
            Event::End(TagEnd::MetadataBlock(_)) => {
                if let Some(yaml) = yaml.take() {
                    outline.front_matter = Some(FrontMatter { range, yaml });
                }
            }
            Event::Start(Tag::Heading { level, id, .. }) => {
                let id = id.map(|id| id.to_string());
                heading = Some(RawHeading { level, text: String::new(), written: String::new(), id, range });
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(mut done) = heading.take() {
                    done.text = collapse_whitespace(&done.text);
                    outline.headings.push(done);
                }
            }
            Event::Start(Tag::Image { .. }) => image += 1,
            Event::End(TagEnd::Image) => image = image.saturating_sub(1),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.text.push_str(&t);
                    if image == 0 {
                        h.written.push_str(&t);
                    }
                } else if let Some(y) = yaml.as_mut() {
                    y.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(h) = heading.as_mut() {
                    h.text.push(' ');
                    h.written.push('\n');
                }
            }
            _ => {}
        }
    }
    outline
}

/// `text` trimmed, with each run of whitespace (a setext line break, say) as one space.
pub(super) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The `title:` of the front matter, if the YAML parses and has a non-empty scalar title.
/// A plain one-line title is read straight from its line (most front matter is only read for
/// it, and a full YAML parse of every page costs a fifth of chunking); anything quoted,
/// flowed or multi-line goes through the YAML parser.
fn front_matter_title(yaml: &str) -> Option<String> {
    let line = yaml.lines().find(|l| l.starts_with("title:"))?;
    let plain = line["title:".len()..].trim();
    let special = |c: char| "\"'[]{}|>&*!%@`#".contains(c);
    if !plain.is_empty() && !plain.starts_with(special) && !plain.contains(": ") && !plain.contains(" #") {
        return Some(plain.to_string());
    }
    let value = yaml_serde::from_str::<yaml_serde::Value>(yaml).ok()?;
    front_matter_field(&value, "title")
}

/// A front matter's (read) scalar field `key` as text, trimmed; `None` when it is missing, empty
/// or not a string, number or boolean.
pub fn front_matter_field(front_matter: &yaml_serde::Value, key: &str) -> Option<String> {
    let text = match front_matter.get(key)? {
        yaml_serde::Value::String(s) => s.trim().to_string(),
        yaml_serde::Value::Number(n) => n.to_string(),
        yaml_serde::Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// Puts `heading` on the stack of enclosing headings and returns the path down to it.
fn push_heading(stack: &mut Vec<(HeadingLevel, String)>, heading: &RawHeading) -> Vec<String> {
    while stack.last().is_some_and(|(level, _)| *level >= heading.level) {
        stack.pop();
    }
    stack.push((heading.level, heading.text.clone()));
    stack.iter().map(|(_, title)| title.clone()).collect()
}

/// A section's body: the trimmed text and where it sits in the file.
struct Body<'a> {
    /// The trimmed Markdown.
    text: &'a str,
    /// Byte offset of its first character in the file.
    start: usize,
}

impl<'a> Body<'a> {
    /// The trimmed text of `source[range]`, or `None` if that is only whitespace.
    fn find(source: &'a str, range: Range<usize>) -> Option<Self> {
        let raw = source.get(range.clone())?;
        let text = raw.trim();
        if text.is_empty() {
            return None;
        }
        let start = range.start + (raw.len() - raw.trim_start().len());
        Some(Body { text, start })
    }

    /// Makes the chunk; `heading_line` is `None` for the preamble, which starts at its body.
    fn into_chunk(self, lines: &LineIndex, heading_line: Option<usize>, path: Vec<String>, anchor: String) -> Chunk {
        let end_line = lines.line_of(self.start + self.text.len() - 1);
        Chunk {
            heading_path: path,
            anchor,
            start_line: heading_line.unwrap_or_else(|| lines.line_of(self.start)),
            end_line,
            body_line: lines.line_of(self.start),
            body: self.text.to_string(),
        }
    }
}

/// Byte offsets of line starts, built once per file so each lookup is a binary search.
struct LineIndex {
    /// Offset of the first byte of each line; `starts[0]` is 0.
    starts: Vec<usize>,
    /// Length of the file, the end of the last line.
    len: usize,
}

impl LineIndex {
    /// Indexes the lines of `source` (split on `\n`).
    fn new(source: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts, len: source.len() }
    }

    /// 1-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// Offset of the start of the line holding byte `offset`.
    fn line_start_of(&self, offset: usize) -> usize {
        self.starts[self.line_of(offset).saturating_sub(1)]
    }

    /// Offset of the start of the line after the one holding `offset` (the file length on the last line).
    fn next_line_start(&self, offset: usize) -> usize {
        self.starts.get(self.line_of(offset)).copied().unwrap_or(self.len)
    }
}

/// Hands out GitHub-style unique anchors: a repeat of "a" becomes "a-1", then "a-2".
pub(super) struct Slugger {
    /// Anchors given so far, each with how many times its base has repeated.
    seen: HashMap<String, usize>,
}

impl Slugger {
    /// A slugger with "" already taken by the top of the file.
    pub(super) fn new() -> Self {
        Slugger { seen: HashMap::from([(String::new(), 0)]) }
    }

    /// `base`, or `base-N` for the first N that is still free.
    pub(super) fn unique(&mut self, base: &str) -> String {
        let mut result = base.to_string();
        while self.seen.contains_key(&result) {
            let count = self.seen.entry(base.to_string()).or_insert(0);
            *count += 1;
            result = format!("{base}-{count}");
        }
        self.seen.insert(result.clone(), 0);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected chunk: heading text, anchor, start line, end line, body.
    type Want = (&'static str, &'static str, usize, usize, &'static str);

    /// A named input and the chunks it must give, in order.
    type Case = (&'static str, &'static str, &'static [Want]);

    /// Chunks each source (fallback title "stem") and compares every chunk with the table.
    fn check(cases: &[Case]) {
        for &(name, source, want) in cases {
            let got: Vec<_> = chunk_markdown(source, "stem")
                .into_iter()
                .map(|c| (c.heading_text(), c.anchor, c.start_line, c.end_line, c.body))
                .collect();
            let want: Vec<_> =
                want.iter().map(|&(h, a, s, e, b)| (h.to_string(), a.to_string(), s, e, b.to_string())).collect();
            assert_eq!(got, want, "case {name}");
        }
    }

    #[test]
    fn headings_are_what_the_parser_sees() {
        check(&[
            (
                "atx levels and path",
                "# A\na\n## B\nb\n### C\nc\n## D\nd\n# E\ne\n",
                &[
                    ("A", "a", 1, 2, "a"),
                    ("A > B", "b", 3, 4, "b"),
                    ("A > B > C", "c", 5, 6, "c"),
                    ("A > D", "d", 7, 8, "d"),
                    ("E", "e", 9, 10, "e"),
                ],
            ),
            (
                "skipped level",
                "# A\na\n### C\nc\n## B\nb\n",
                &[("A", "a", 1, 2, "a"), ("A > C", "c", 3, 4, "c"), ("A > B", "b", 5, 6, "b")],
            ),
            (
                "setext h1 and h2",
                "Top\n===\nt\n\nSub\n---\ns\n",
                &[("Top", "top", 1, 3, "t"), ("Top > Sub", "sub", 5, 7, "s")],
            ),
            ("multi-line setext heading", "Foo\nbar\n===\nx\n", &[("Foo bar", "foo-bar", 1, 4, "x")]),
            (
                "hash in fences and indented code",
                "# Real\n```sh\n# .env\n```\n~~~\n# tilde\n~~~\n\n    # indented\n",
                &[("Real", "real", 1, 9, "```sh\n# .env\n```\n~~~\n# tilde\n~~~\n\n    # indented")],
            ),
            (
                "heading inside an html block is body",
                "# A\n<div>\n# not a heading\n</div>\n",
                &[("A", "a", 1, 4, "<div>\n# not a heading\n</div>")],
            ),
            (
                "blockquote heading counts",
                "# A\na\n> ## Q\n> q\n",
                &[("A", "a", 1, 2, "a"), ("A > Q", "q", 3, 4, "> q")],
            ),
            (
                "inline markup in heading",
                "# Use `cargo` *now* [here](x.md) ![logo](l.png) ~~old~~\nx\n",
                &[("Use cargo now here logo old", "use-cargo-now-here-logo-old", 1, 2, "x")],
            ),
        ]);
    }

    /// Code is never a heading, however it is fenced or indented; a heading right after the
    /// code still is.
    #[test]
    fn code_is_never_a_heading() {
        check(&[
            ("tilde fence", "# A\n~~~\n# not\n~~~\nafter\n", &[("A", "a", 1, 5, "~~~\n# not\n~~~\nafter")]),
            (
                "a longer fence holds a shorter one",
                "# A\n````md\n```\n# not\n```\n````\n# B\nb\n",
                &[("A", "a", 1, 6, "````md\n```\n# not\n```\n````"), ("B", "b", 7, 8, "b")],
            ),
            (
                "a shorter fence does not close a longer one",
                "# A\n````\n# not\n```\n# still not\n````\n",
                &[("A", "a", 1, 6, "````\n# not\n```\n# still not\n````")],
            ),
            (
                "backticks do not close a tilde fence",
                "# A\n~~~\n# not\n```\n# still not\n~~~\n",
                &[("A", "a", 1, 6, "~~~\n# not\n```\n# still not\n~~~")],
            ),
            (
                "fence in a list item",
                "# A\n- item\n\n  ```\n  # not\n  ```\n- next\n",
                &[("A", "a", 1, 7, "- item\n\n  ```\n  # not\n  ```\n- next")],
            ),
            (
                "an unclosed fence runs to the end of the file",
                "# A\n```\n# not\n## neither\n",
                &[("A", "a", 1, 4, "```\n# not\n## neither")],
            ),
            (
                "an unclosed fence in a list item ends with the item",
                "# A\n- ```\n  # not\n# B\nb\n",
                &[("A", "a", 1, 3, "- ```\n  # not"), ("B", "b", 4, 5, "b")],
            ),
            (
                "indented code",
                "# A\n\n    # not\n    ## neither\n\nafter\n",
                &[("A", "a", 1, 6, "# not\n    ## neither\n\nafter")],
            ),
            (
                "fence indented by three spaces",
                "# A\n   ```\n# not\n   ```\n",
                &[("A", "a", 1, 4, "```\n# not\n   ```")],
            ),
            (
                "four spaces make code, not a fence",
                "# A\n\n    ```\n# B\nb\n",
                &[("A", "a", 1, 3, "```"), ("B", "b", 4, 5, "b")],
            ),
            ("fence in a block quote", "# A\n> ```\n> # not\n> ```\n", &[("A", "a", 1, 4, "> ```\n> # not\n> ```")]),
            ("setext underline in a fence", "# A\n```\nTitle\n===\n```\n", &[("A", "a", 1, 5, "```\nTitle\n===\n```")]),
            (
                "a heading right after a closed fence counts",
                "```\n# not\n```\n# Real\nr\n",
                &[("stem", "", 1, 3, "```\n# not\n```"), ("Real", "real", 4, 5, "r")],
            ),
        ]);
    }

    #[test]
    fn preamble_and_front_matter() {
        check(&[
            (
                "front matter title, closing --- not setext",
                "---\ntitle: Refund policy\ndescription: x\n---\n\nIntro.\n\n# Window\nw\n",
                &[("Refund policy", "", 6, 6, "Intro."), ("Window", "window", 8, 9, "w")],
            ),
            ("preamble uses fallback", "Intro\n\n# H\nh\n", &[("stem", "", 1, 1, "Intro"), ("H", "h", 3, 4, "h")]),
            ("invalid yaml ignored", "---\ntitle: [x\n---\nIntro\n", &[("stem", "", 4, 4, "Intro")]),
            ("bom before front matter", "\u{feff}---\ntitle: T\n---\nx\n", &[("T", "", 4, 4, "x")]),
            ("no headings", "just text\n\nmore\n", &[("stem", "", 1, 3, "just text\n\nmore")]),
            ("only front matter", "---\ntitle: T\n---\n", &[]),
        ]);
    }

    #[test]
    fn anchors_are_github_slugs_unique_per_file() {
        check(&[
            (
                "duplicate headings",
                "# A\n1\n# A\n2\n# A\n3\n# A-1\n4\n",
                &[("A", "a", 1, 2, "1"), ("A", "a-1", 3, 4, "2"), ("A", "a-2", 5, 6, "3"), ("A-1", "a-1-1", 7, 8, "4")],
            ),
            ("custom id", "# Title {#my-id}\nx\n", &[("Title", "my-id", 1, 2, "x")]),
            (
                "unicode headings",
                "# Café crème\nx\n# 日本語の見出し\ny\n",
                &[("Café crème", "café-crème", 1, 2, "x"), ("日本語の見出し", "日本語の見出し", 3, 4, "y")],
            ),
            (
                "all-punctuation heading does not take the top's anchor",
                "pre\n# ???\nx\n",
                &[("stem", "", 1, 1, "pre"), ("???", "-1", 2, 3, "x")],
            ),
        ]);
    }

    #[test]
    fn bodies_and_line_ranges() {
        check(&[
            (
                "exact line ranges with blank lines",
                "\n\nPre\n\n# A\n\nbody a\n\n\n## B\nline 1\n\nline 2\n\n",
                &[("stem", "", 3, 3, "Pre"), ("A", "a", 5, 7, "body a"), ("A > B", "b", 10, 13, "line 1\n\nline 2")],
            ),
            (
                "empty sections skipped, comment kept",
                "# A\n\n   \n# B\n<!-- note -->\n# C\n",
                &[("B", "b", 4, 5, "<!-- note -->")],
            ),
            ("heading on last line", "# A\na\n# Last", &[("A", "a", 1, 2, "a")]),
            (
                "crlf",
                "---\r\ntitle: T\r\n---\r\npre\r\n# A\r\na1\r\na2\r\n\r\n## B\r\nb\r\n",
                &[("T", "", 4, 4, "pre"), ("A", "a", 5, 7, "a1\r\na2"), ("A > B", "b", 9, 10, "b")],
            ),
        ]);
    }

    #[test]
    fn slugs() {
        let cases = [
            ("How to issue?", "how-to-issue"),
            ("Q&A — FAQ", "qa--faq"),
            ("snake_case and-hyphen", "snake_case-and-hyphen"),
            ("Élan 2024", "élan-2024"),
            ("日本語", "日本語"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(slugify(input), want, "slugify({input:?})");
        }
    }

    #[test]
    fn heading_text_joins_path() {
        let chunk = Chunk {
            heading_path: vec!["Refunds".into(), "Window".into()],
            anchor: "window".into(),
            start_line: 1,
            end_line: 2,
            body_line: 2,
            body: "x".into(),
        };
        assert_eq!(chunk.heading_text(), "Refunds > Window");
    }
}
