//! pulldown-cmark's events folded into [`Node`]s: a stack of open frames, each closed into its
//! node when its end tag comes. Links are decided as their tag opens; with [`Marks`], a block
//! whose source lines include a marked line is wrapped in a [`Node::Cited`] as it closes.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag};

use super::source::{Marks, relative};
use super::{MAX_DEPTH, Node};
use crate::guard::links::Allowlist;

/// How a text is read.
pub(super) struct Reading<'a> {
    /// The hosts a link may go to.
    pub allow: Allowlist,
    /// The docs file the text comes from (`docs/billing/refunds.md`), whose relative links are
    /// sections of the docs too; `None` for an answer, whose links must name `docs/…` in full.
    pub document: Option<&'a str>,
    /// The lines to mark, by their offsets in the text.
    pub marks: Option<&'a Marks>,
}

/// The tree of `text`, before its strings are scrubbed.
pub(super) fn parse(text: &str, reading: &Reading<'_>) -> Vec<Node> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut stack: Vec<Open> = vec![Open::new(Frame::Root, 0..text.len())];
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(_) if stack.len() > MAX_DEPTH => stack.push(Open::new(Frame::Pass, range)),
            Event::Start(tag) => stack.push(Open::new(frame(tag, reading), range)),
            Event::End(_) => {
                let Some(open) = stack.pop() else { break };
                let marked = reading.marks.filter(|marks| marks.touch(&open.range));
                let first_marked = marked.is_some_and(|marks| marks.touch(&(open.range.start..open.range.start + 1)));
                let kind = open.markable();
                let mut node = match marked {
                    Some(marks) => open.close_marked(marks),
                    None => open.close(),
                };
                if marked.is_some() {
                    node = mark(node, kind, first_marked);
                }
                let parent = stack.last_mut();
                match (node, parent) {
                    (Closed::Node(node), Some(parent)) => parent.children.push(node),
                    (Closed::Cells(cells, head), Some(parent)) => parent.rows.push((cells, head)),
                    (Closed::Cell(cell), Some(parent)) => parent.cells.push(cell),
                    (Closed::Item(item), Some(parent)) => parent.items.push(item),
                    (Closed::Many(nodes), Some(parent)) => parent.children.extend(nodes),
                    (_, None) => {}
                }
                if stack.is_empty() {
                    stack.push(Open::new(Frame::Root, 0..text.len()));
                }
            }
            Event::Text(text) => push_text(&mut stack, &text),
            Event::Code(code) => push(&mut stack, Node::InlineCode { text: code.into_string() }),
            Event::Html(html) | Event::InlineHtml(html) => push_html(&mut stack, &html),
            Event::SoftBreak | Event::HardBreak if reading.marks.is_some() => {
                let node = if event == Event::HardBreak { Node::Break } else { Node::Text { text: " ".into() } };
                new_line(&mut stack, node, range.end);
            }
            Event::SoftBreak => push_text(&mut stack, " "),
            Event::HardBreak => push(&mut stack, Node::Break),
            Event::Rule => push(&mut stack, Node::Rule),
            Event::FootnoteReference(name) => push_text(&mut stack, &format!("[^{name}]")),
            Event::TaskListMarker(done) => push_text(&mut stack, if done { "[x] " } else { "[ ] " }),
            Event::InlineMath(math) | Event::DisplayMath(math) => push_text(&mut stack, &math),
        }
    }
    // Whatever is still open (a parser always closes, but be sure) is flattened into the root.
    while stack.len() > 1 {
        if let Some(open) = stack.pop()
            && let Some(parent) = stack.last_mut()
        {
            parent.children.extend(open.children);
        }
    }
    stack.pop().map(|root| root.children).unwrap_or_default()
}

/// What a start tag opens.
enum Frame {
    Root,
    Heading(u8),
    Paragraph,
    Quote,
    List(Option<u64>),
    Item,
    Code(String),
    Table,
    Head,
    Row,
    Cell,
    Strong,
    Em,
    Del,
    Section(String),
    Link(String),
    Blocked(String),
    Image,
    /// Anything else: its content goes to the parent.
    Pass,
}

/// How a closed frame is marked when its lines are.
#[derive(Clone, Copy)]
enum Markable {
    /// A block with no blocks inside (a paragraph, heading or code): wrapped whole.
    Leaf,
    /// A list item: its content wrapped, or only its first lines when it holds blocks.
    Item,
    /// A table row: each cell's content wrapped.
    Row,
    /// A container (list, quote, table) or inline: its blocks are marked, not it.
    No,
}

/// The frame for a start tag, with the link's fate decided here.
fn frame(tag: Tag<'_>, reading: &Reading<'_>) -> Frame {
    match tag {
        Tag::Heading { level, .. } => Frame::Heading(heading_level(level)),
        // a block of raw HTML is a paragraph of its source, as text
        Tag::Paragraph | Tag::HtmlBlock => Frame::Paragraph,
        Tag::BlockQuote(_) => Frame::Quote,
        Tag::List(start) => Frame::List(start),
        Tag::Item => Frame::Item,
        Tag::CodeBlock(CodeBlockKind::Fenced(lang)) => Frame::Code(lang.split_whitespace().next().unwrap_or("").into()),
        Tag::CodeBlock(CodeBlockKind::Indented) => Frame::Code(String::new()),
        Tag::Table(_) => Frame::Table,
        Tag::TableHead => Frame::Head,
        Tag::TableRow => Frame::Row,
        Tag::TableCell => Frame::Cell,
        Tag::Strong => Frame::Strong,
        Tag::Emphasis => Frame::Em,
        Tag::Strikethrough => Frame::Del,
        Tag::Link { link_type: pulldown_cmark::LinkType::Email, dest_url, .. } => {
            link(&format!("mailto:{dest_url}"), reading)
        }
        Tag::Link { dest_url, .. } => link(&dest_url, reading),
        Tag::Image { .. } => Frame::Image,
        _ => Frame::Pass,
    }
}

/// A link's fate: a docs section, an allowed URL, or blocked. In a docs file, a relative link
/// (`refunds.md#window`, `../admin/roles.md`, `#fees`) is the section it leads to.
fn link(url: &str, reading: &Reading<'_>) -> Frame {
    let url = url.trim();
    let resolved = reading.document.and_then(|document| relative(url, document));
    if let Some(target) = section(resolved.as_deref().unwrap_or(url)) {
        return Frame::Section(target);
    }
    let lower = url.to_ascii_lowercase();
    let outside = lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:");
    if outside && reading.allow.url(url) { Frame::Link(url.to_string()) } else { Frame::Blocked(url.to_string()) }
}

/// Raw HTML, shown as text, but for the harness's own fence tags, which a model may quote
/// from a tool result: `<untrusted source="docs/x.md#a">` is a link to that section (when it is
/// one), and `</untrusted>` is dropped.
fn push_html(stack: &mut [Open], html: &str) {
    for line in html.split_inclusive('\n') {
        let tag = line.trim();
        let source = tag.strip_prefix("<untrusted source=\"").and_then(|rest| rest.strip_suffix("\">"));
        match source.and_then(section) {
            Some(target) => push(stack, Node::Section { children: vec![Node::Text { text: target.clone() }], target }),
            None if tag == "</untrusted>" => {}
            None => push_text(stack, line),
        }
    }
}

/// `docs/x.md#anchor` (or `./docs/…`): a section of the workspace's docs, with a path of plain
/// characters and no `..`.
pub(super) fn section(url: &str) -> Option<String> {
    let url = url.strip_prefix("./").unwrap_or(url);
    let (path, anchor) = url.split_once('#').map_or((url, None), |(p, a)| (p, Some(a)));
    let plain = |s: &str, extra: &[char]| {
        // anchors are slugs of headings, which may be in any script (`élan-2024`)
        s.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c) || extra.contains(&c))
    };
    let ok = path.starts_with("docs/")
        && !path.split('/').any(|part| part.is_empty() || part == "." || part == "..")
        && plain(path, &['/'])
        && anchor.is_none_or(|a| plain(a, &[]));
    ok.then(|| url.to_string())
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// An open frame, where it is in the text, and what it has gathered.
struct Open {
    frame: Frame,
    range: Range<usize>,
    children: Vec<Node>,
    items: Vec<Vec<Node>>,
    cells: Vec<Vec<Node>>,
    rows: Vec<(Vec<Vec<Node>>, bool)>,
    text: String,
    /// With marks: where each line after the first begins, as (index in `children`, offset in
    /// the text); the text after a line break is never joined to the text before it.
    lines: Vec<(usize, usize)>,
}

/// What closing a frame gives its parent.
enum Closed {
    Node(Node),
    Item(Vec<Node>),
    Cell(Vec<Node>),
    /// A row's cells, and whether it is the head.
    Cells(Vec<Vec<Node>>, bool),
    /// Content for the parent, with no node of its own.
    Many(Vec<Node>),
}

impl Open {
    fn new(frame: Frame, range: Range<usize>) -> Open {
        Open {
            frame,
            range,
            children: Vec::new(),
            items: Vec::new(),
            cells: Vec::new(),
            rows: Vec::new(),
            text: String::new(),
            lines: Vec::new(),
        }
    }

    fn markable(&self) -> Markable {
        match self.frame {
            Frame::Heading(_) | Frame::Paragraph | Frame::Code(_) => Markable::Leaf,
            Frame::Item => Markable::Item,
            Frame::Head | Frame::Row => Markable::Row,
            _ => Markable::No,
        }
    }

    /// Closes a frame with a marked line. A paragraph of several lines has the marked lines'
    /// text wrapped (each line in a [`Node::Cited`] of its own), not the whole paragraph.
    fn close_marked(mut self, marks: &Marks) -> Closed {
        if !matches!(self.frame, Frame::Paragraph) || self.lines.is_empty() {
            return self.close();
        }
        let mut starts = vec![(0, self.range.start)];
        starts.extend(std::mem::take(&mut self.lines));
        let mut rest = std::mem::take(&mut self.children);
        let mut out: Vec<Node> = Vec::new();
        for (n, &(from, offset)) in starts.iter().enumerate().rev() {
            // The line's nodes; every line but the first begins with its break, which a marked
            // line keeps inside its mark (two marked lines read as one).
            let mut line = rest.split_off(from.min(rest.len()));
            let body = if n > 0 && !line.is_empty() { line.split_off(1) } else { std::mem::take(&mut line) };
            if !body.is_empty() && marks.touch(&(offset..offset + 1)) {
                let mut marked = std::mem::take(&mut line);
                marked.extend(body);
                line.push(Node::Cited { children: marked });
            } else {
                line.extend(body);
            }
            line.append(&mut out);
            out = line;
        }
        Closed::Node(Node::Paragraph { children: out })
    }

    fn close(self) -> Closed {
        let children = self.children;
        match self.frame {
            Frame::Root | Frame::Pass => Closed::Many(children),
            Frame::Heading(level) => Closed::Node(Node::Heading { level, children }),
            Frame::Paragraph => Closed::Node(Node::Paragraph { children }),
            Frame::Quote => Closed::Node(Node::Quote { children }),
            Frame::List(start) => {
                let mut items = self.items;
                if !children.is_empty() {
                    items.push(children);
                }
                Closed::Node(Node::List { start, items })
            }
            Frame::Item => Closed::Item(children),
            Frame::Code(lang) => Closed::Node(Node::Code { lang, text: self.text }),
            Frame::Table => {
                let mut head = Vec::new();
                let mut rows = Vec::new();
                for (cells, is_head) in self.rows {
                    if is_head { head = cells } else { rows.push(cells) }
                }
                if !children.is_empty() {
                    rows.push(vec![children]);
                }
                Closed::Node(Node::Table { head, rows })
            }
            // pulldown-cmark puts the head's cells straight in the head, with no row.
            Frame::Head | Frame::Row => {
                let mut cells = self.cells;
                if !children.is_empty() {
                    cells.push(children);
                }
                Closed::Cells(cells, matches!(self.frame, Frame::Head))
            }
            Frame::Cell => Closed::Cell(children),
            Frame::Strong => Closed::Node(Node::Strong { children }),
            Frame::Em => Closed::Node(Node::Em { children }),
            Frame::Del => Closed::Node(Node::Del { children }),
            Frame::Section(target) => Closed::Node(Node::Section { target, children }),
            Frame::Link(href) => Closed::Node(Node::Link { href, children }),
            Frame::Blocked(url) => Closed::Node(Node::Blocked { url, children }),
            Frame::Image => Closed::Node(Node::Image { alt: plain_text(&children) }),
        }
    }
}

/// A closed frame whose lines are marked, wrapped in [`Node::Cited`]. An item that holds
/// blocks (a loose item's paragraphs, a nested list) has them marked on their own; only its
/// leading text is wrapped here, when its first line is marked.
fn mark(closed: Closed, kind: Markable, first_marked: bool) -> Closed {
    let cited = |children: Vec<Node>| Node::Cited { children };
    match (closed, kind) {
        // a paragraph of several lines has its marked lines wrapped already
        (Closed::Node(Node::Paragraph { children }), Markable::Leaf)
            if children.iter().any(|n| matches!(n, Node::Cited { .. })) =>
        {
            Closed::Node(Node::Paragraph { children })
        }
        (Closed::Node(node), Markable::Leaf) => Closed::Node(cited(vec![node])),
        (Closed::Item(item), Markable::Item) => {
            let lead = item.iter().position(is_block).unwrap_or(item.len());
            if lead == item.len() {
                Closed::Item(vec![cited(item)])
            } else if lead > 0 && first_marked {
                let mut item = item;
                let rest = item.split_off(lead);
                let mut out = vec![cited(item)];
                out.extend(rest);
                Closed::Item(out)
            } else {
                Closed::Item(item)
            }
        }
        (Closed::Cells(cells, head), Markable::Row) => {
            Closed::Cells(cells.into_iter().map(|cell| vec![cited(cell)]).collect(), head)
        }
        (closed, _) => closed,
    }
}

/// A node that is a block of its own.
fn is_block(node: &Node) -> bool {
    matches!(
        node,
        Node::Heading { .. }
            | Node::Paragraph { .. }
            | Node::Quote { .. }
            | Node::List { .. }
            | Node::Code { .. }
            | Node::Table { .. }
            | Node::Rule
            | Node::Cited { .. }
    )
}

/// The text of nodes, without their marks.
fn plain_text(nodes: &[Node]) -> String {
    let mut out = String::new();
    for node in nodes {
        match node {
            Node::Text { text } | Node::InlineCode { text } | Node::Code { text, .. } => out.push_str(text),
            Node::Image { alt } => out.push_str(alt),
            other => out.push_str(&plain_text(other.children())),
        }
    }
    out
}

/// Adds `node` to the innermost open frame.
fn push(stack: &mut [Open], node: Node) {
    if let Some(open) = stack.last_mut() {
        open.children.push(node);
    }
}

/// Adds text to the innermost open frame: a code block's text, or a text node (joined to the
/// one before it).
fn push_text(stack: &mut [Open], text: &str) {
    let Some(open) = stack.last_mut() else { return };
    if matches!(open.frame, Frame::Code(_)) {
        open.text.push_str(text);
        return;
    }
    let line_begins = open.lines.last().is_some_and(|&(at, _)| at + 1 == open.children.len());
    match open.children.last_mut() {
        Some(Node::Text { text: last }) if !line_begins => last.push_str(text),
        _ => open.children.push(Node::Text { text: text.to_string() }),
    }
}

/// A line break (`node`: a space or a [`Node::Break`]) in the innermost frame, the next line
/// beginning at `offset`.
fn new_line(stack: &mut [Open], node: Node, offset: usize) {
    if let Some(open) = stack.last_mut() {
        open.children.push(node);
        let at = open.children.len();
        open.lines.push((at - 1, offset));
    }
}
