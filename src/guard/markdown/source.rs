//! A docs section as safe nodes, for the source panel beside an answer: Markdown rendered as
//! answers are, its relative links turned into sections of the docs, and the blocks holding
//! the lines an answer draws on marked. Plain text and HTML pages (whose sections the index
//! keeps as text) are paragraphs of lines.

use std::collections::BTreeSet;
use std::ops::Range;

use super::parse::{Reading, parse};
use super::{Node, guarded};
use crate::doc_kind::DocKind;
use crate::guard::links::Allowlist;

/// The section `text` of the docs file `document` (`docs/…`) as nodes; `cited` are lines of
/// `text` (from 0) to mark. Scrubbed and given to `redact` as answers are.
pub fn render_source(
    text: &str,
    document: &str,
    allowed_hosts: &[String],
    cited: &[usize],
    redact: &dyn Fn(&str) -> String,
) -> Vec<Node> {
    let marks = Marks::new(text, cited);
    let nodes = match DocKind::of(document) {
        Some(DocKind::Markdown | DocKind::Mdx) => {
            let marks = (!cited.is_empty()).then_some(&marks);
            let reading = Reading { allow: Allowlist::new(allowed_hosts), document: Some(document), marks };
            parse(text, &reading)
        }
        Some(DocKind::Text | DocKind::Html | DocKind::Pdf) | None => paragraphs(text, &marks),
    };
    guarded(nodes, redact)
}

/// Lines to mark, found by byte offset.
pub(super) struct Marks {
    /// Where each line of the text starts.
    starts: Vec<usize>,
    /// The marked lines, from 0.
    lines: BTreeSet<usize>,
}

impl Marks {
    fn new(text: &str, cited: &[usize]) -> Marks {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
        Marks { starts, lines: cited.iter().copied().collect() }
    }

    /// Whether the text at `range` has a marked line.
    pub(super) fn touch(&self, range: &Range<usize>) -> bool {
        if range.is_empty() || self.lines.is_empty() {
            return false;
        }
        let first = self.line_of(range.start);
        let last = self.line_of(range.end - 1);
        self.lines.range(first..=last).next().is_some()
    }

    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).saturating_sub(1)
    }
}

/// The section a relative link in `document` leads to (`../admin/roles.md#refunds` from
/// `docs/billing/refunds.md` is `docs/admin/roles.md#refunds`; `#fees` is the same file's);
/// `None` for a URL with a scheme, a rooted path, a page that is not a docs file, or a path that
/// climbs out of `docs/`.
pub(super) fn relative(url: &str, document: &str) -> Option<String> {
    let (path, anchor) = url.split_once('#').map_or((url, None), |(p, a)| (p, Some(a)));
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let scheme = path.split('/').next().is_some_and(|first| first.contains(':'));
    if scheme || path.starts_with('/') {
        return None;
    }
    let target = if path.is_empty() {
        document.to_string()
    } else {
        let mut parts: Vec<&str> = document.split('/').collect();
        parts.pop();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." if parts.len() > 1 => {
                    parts.pop();
                }
                ".." => return None,
                part => parts.push(part),
            }
        }
        parts.join("/")
    };
    if !target.starts_with("docs/") || DocKind::of(&target).is_none() {
        return None;
    }
    Some(match anchor {
        Some(anchor) if !anchor.is_empty() => format!("{target}#{anchor}"),
        _ => target,
    })
}

/// Text as paragraphs (split at blank lines) of lines, each marked line marked.
fn paragraphs(text: &str, marks: &Marks) -> Vec<Node> {
    let mut out = Vec::new();
    let mut lines: Vec<Node> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let range = at..at + line.len();
        at += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            if !lines.is_empty() {
                out.push(Node::Paragraph { children: std::mem::take(&mut lines) });
            }
            continue;
        }
        if !lines.is_empty() {
            lines.push(Node::Break);
        }
        let text = Node::Text { text: line.to_string() };
        lines.push(if marks.touch(&range) { Node::Cited { children: vec![text] } } else { text });
    }
    if !lines.is_empty() {
        out.push(Node::Paragraph { children: lines });
    }
    out
}
