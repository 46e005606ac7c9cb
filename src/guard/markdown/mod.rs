//! Markdown as a tree of safe nodes, for the web page to build DOM nodes from (`textContent`
//! and `createElement`, never `innerHTML`): headings, paragraphs, lists, quotes, tables, code,
//! emphasis and links, parsed by pulldown-cmark, the parser the link guard uses. Two texts are
//! rendered: an answer ([`render`]), and a docs section opened from a citation
//! ([`render_source`]), whose relative links lead to other sections and whose blocks holding
//! the lines an answer draws on are marked.
//!
//! What is inert by construction:
//! * raw HTML, inline or as a block, is a [`Node::Text`] of its source: shown, never parsed;
//! * an image is its alt text in a [`Node::Image`], never a URL the page could fetch;
//! * a link is a [`Node::Section`] (a section of the workspace's docs, opened beside the
//!   conversation), a [`Node::Link`] (http or https to an allowed host, the same allowlist as
//!   the link guard's, `allowed_link_hosts`; or a `mailto:` without a query, as the guard keeps
//!   it), or else its text with the URL shown as text in a [`Node::Blocked`];
//! * every string is scrubbed after parsing (a link whose target holds a secret is its text), and nodes nest at most [`MAX_DEPTH`] deep (and a
//!   leaf block once more, in a [`Node::Cited`]).
//!
//! Architecture invariant: this module does no IO.

mod parse;
mod source;
#[cfg(test)]
mod tests;

use serde::Serialize;

use super::links::Allowlist;
pub use source::render_source;

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
    /// Blocks (or a list item's or table cell's content) holding lines an answer draws on:
    /// only in a docs section opened from an answer's citation.
    Cited {
        /// What is marked.
        children: Vec<Node>,
    },
}

/// Nodes nest at most this deep; deeper content joins its parent (a reply of a thousand `>`
/// must not recurse a thousand times when the tree is sent or dropped).
const MAX_DEPTH: usize = 32;

/// Parses `answer` into safe nodes; links are kept only to the workspace's docs and to
/// `allowed_hosts`. Every string in the tree is scrubbed once more, then given to `redact` (the
/// operator's patterns, `Hooks::redacted`): the parser decodes escapes and entities (`ghp\_…`,
/// `&lowbar;`), which can make a secret the answer's redaction did not see.
pub fn render(answer: &str, allowed_hosts: &[String], redact: &dyn Fn(&str) -> String) -> Vec<Node> {
    let reading = parse::Reading { allow: Allowlist::new(allowed_hosts), document: None, marks: None };
    guarded(parse::parse(answer, &reading), redact)
}

/// Every string of the tree scrubbed, then given to `redact`, in one walk ([`redacted`]).
fn guarded(nodes: Vec<Node>, redact: &dyn Fn(&str) -> String) -> Vec<Node> {
    redacted(nodes, &|text| redact(&super::scrub(text)))
}

impl Node {
    /// The nodes inside a node of text and marks (not a list's items or a table's cells).
    #[must_use]
    pub fn children(&self) -> &[Node] {
        match self {
            Node::Heading { children, .. }
            | Node::Paragraph { children }
            | Node::Quote { children }
            | Node::Strong { children }
            | Node::Em { children }
            | Node::Del { children }
            | Node::Cited { children }
            | Node::Section { children, .. }
            | Node::Link { children, .. }
            | Node::Blocked { children, .. } => children,
            _ => &[],
        }
    }
}

/// The tree with `redact` (scrubbing, then the operator's patterns) applied to every string. The parser decodes entities and escapes (`Proj&#101;ct`) and a docs section's
/// relative links are resolved into new paths, so a pattern that did not match the source text
/// may match here. A link or section whose target `redact` changes is a link no more: its text
/// (redacted) stays, its target goes.
fn redacted(nodes: Vec<Node>, redact: &dyn Fn(&str) -> String) -> Vec<Node> {
    let all = |nodes: Vec<Node>| redacted(nodes, redact);
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        out.push(match node {
            Node::Text { text } => Node::Text { text: redact(&text) },
            Node::InlineCode { text } => Node::InlineCode { text: redact(&text) },
            Node::Code { lang, text } => Node::Code { lang: redact(&lang), text: redact(&text) },
            Node::Image { alt } => Node::Image { alt: redact(&alt) },
            Node::Heading { level, children } => Node::Heading { level, children: all(children) },
            Node::Paragraph { children } => Node::Paragraph { children: all(children) },
            Node::Quote { children } => Node::Quote { children: all(children) },
            Node::Strong { children } => Node::Strong { children: all(children) },
            Node::Em { children } => Node::Em { children: all(children) },
            Node::Del { children } => Node::Del { children: all(children) },
            Node::Cited { children } => Node::Cited { children: all(children) },
            Node::List { start, items } => Node::List { start, items: items.into_iter().map(all).collect() },
            Node::Table { head, rows } => Node::Table {
                head: head.into_iter().map(all).collect(),
                rows: rows.into_iter().map(|row| row.into_iter().map(all).collect()).collect(),
            },
            Node::Section { target, children } => {
                if redact(&target) != target {
                    out.extend(all(children));
                    continue;
                }
                Node::Section { target, children: all(children) }
            }
            Node::Link { href, children } => {
                if redact(&href) != href {
                    out.extend(all(children));
                    continue;
                }
                Node::Link { href, children: all(children) }
            }
            Node::Blocked { url, children } => Node::Blocked { url: redact(&url), children: all(children) },
            Node::Rule => Node::Rule,
            Node::Break => Node::Break,
        });
    }
    out
}
