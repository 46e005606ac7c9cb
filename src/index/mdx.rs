//! MDX to Markdown for the index: ES imports and exports, JSX tags and `{expressions}` are
//! removed, and the Markdown inside JSX elements is kept. The MDX parser (`markdown`, the
//! Rust port of micromark, in MDX mode) finds them; this module only cuts their ranges out.
//!
//! Every line keeps its place (removed text leaves its newlines behind), so line ranges and
//! anchors computed on the result are those of the `.mdx` file. MDX has no indented code, and
//! JSX children are often indented four spaces or more, so outside fenced code a line's
//! indentation is capped at three spaces: otherwise CommonMark would read it as code.

use markdown::mdast::Node;
use markdown::{MdxSignal, ParseOptions};
use std::ops::Range;

/// Indentation kept at most on a line outside fenced code.
const MAX_INDENT: usize = 3;

/// An MDX file the parser cannot read (an unclosed JSX tag, say): its message names the line.
#[derive(Debug, thiserror::Error)]
#[error("not valid MDX: {0}")]
pub struct InvalidMdx(markdown::message::Message);

/// The Markdown of an MDX file, or the parser's message when it is not valid MDX (an unclosed
/// JSX tag, say), naming the line.
pub fn to_markdown(source: &str) -> Result<String, InvalidMdx> {
    let mut options = ParseOptions::mdx();
    options.constructs.frontmatter = true;
    options.constructs.gfm_table = true;
    // Without a JavaScript parser, ESM is only recognised when this says every block is
    // valid; it is removed whole anyway, so its content never matters.
    options.mdx_esm_parse = Some(Box::new(|_| MdxSignal::Ok));
    let tree = markdown::to_mdast(source, &options).map_err(InvalidMdx)?;
    let mut found = Found::default();
    found.visit(&tree);
    Ok(rebuild(source, found))
}

/// What the walk over the MDX tree found.
#[derive(Default)]
struct Found {
    /// Byte ranges to remove: ESM, expressions, JSX opening and closing tags.
    cut: Vec<Range<usize>>,
    /// 1-based lines inside fenced code, whose indentation is the code's own.
    code_lines: Vec<Range<usize>>,
}

impl Found {
    fn visit(&mut self, node: &Node) {
        let whole = node.position().map(|p| p.start.offset..p.end.offset);
        match node {
            Node::MdxjsEsm(_) | Node::MdxFlowExpression(_) | Node::MdxTextExpression(_) => {
                self.cut.extend(whole);
                return;
            }
            Node::MdxJsxFlowElement(element) => self.tags(whole, &element.children),
            Node::MdxJsxTextElement(element) => self.tags(whole, &element.children),
            Node::Code(_) => {
                if let Some(p) = node.position() {
                    self.code_lines.push(p.start.line + 1..p.end.line);
                }
            }
            _ => {}
        }
        for child in node.children().into_iter().flatten() {
            self.visit(child);
        }
    }

    /// Cuts a JSX element's opening and closing tags, keeping what lies between its first
    /// and last child; an element without children is cut whole.
    fn tags(&mut self, whole: Option<Range<usize>>, children: &[Node]) {
        let Some(whole) = whole else {
            return;
        };
        let first = children.first().and_then(Node::position).map(|p| p.start.offset);
        let last = children.last().and_then(Node::position).map(|p| p.end.offset);
        match (first, last) {
            (Some(first), Some(last)) if whole.start <= first && last <= whole.end => {
                self.cut.push(whole.start..first);
                self.cut.push(last..whole.end);
            }
            _ => self.cut.push(whole),
        }
    }
}

/// `source` without the cut ranges (their newlines kept), indentation capped outside code.
fn rebuild(source: &str, mut found: Found) -> String {
    found.cut.sort_by_key(|r| (r.start, r.end));
    let mut kept = String::with_capacity(source.len());
    let mut at = 0;
    for range in found.cut {
        let start = range.start.max(at);
        let end = range.end.min(source.len());
        if start >= end {
            continue;
        }
        kept.push_str(source.get(at..start).unwrap_or_default());
        kept.extend(source.get(start..end).unwrap_or_default().chars().filter(|&c| c == '\n'));
        at = end;
    }
    kept.push_str(source.get(at..).unwrap_or_default());

    let in_code = |line: usize| found.code_lines.iter().any(|r| r.contains(&line));
    let mut out = String::with_capacity(kept.len());
    for (i, line) in kept.split_inclusive('\n').enumerate() {
        let body = line.trim_start_matches([' ', '\t']);
        // Columns, as CommonMark counts them: a tab goes to the next multiple of four.
        let indent = line[..line.len() - body.len()]
            .chars()
            .fold(0, |col, c| if c == '\t' { col + 4 - col % 4 } else { col + 1 });
        if indent > MAX_INDENT && !in_code(i + 1) && !body.trim().is_empty() {
            out.push_str(&" ".repeat(MAX_INDENT));
            out.push_str(body);
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_jsx_and_expressions_go_and_markdown_stays_on_its_lines() {
        let source = "---\ntitle: Refunds\n---\nimport { Note } from '../components'\n\n# Refunds\n\n\
                      <Note>\n    Refunds take **14 days**.\n</Note>\n\n<Tip>Ask support</Tip> {/* hidden */}\n\n\
                      ```js\n    const keep = 1;\n```\n\n<Card title=\"x\" href=\"/y\" />\n\n## Window\n\nText.\n";
        let out = to_markdown(source).expect("valid mdx");
        assert_eq!(out.lines().count(), source.lines().count(), "{out}");
        assert!(!out.contains("import") && !out.contains("<Note>") && !out.contains("</Note>"), "{out}");
        assert!(!out.contains("<Tip>") && !out.contains("hidden") && !out.contains("Card"), "{out}");
        assert!(out.contains("   Refunds take **14 days**."), "{out}");
        let tabbed = to_markdown("<Note>\n\t## Setup\n\ttext\n</Note>\n").expect("valid mdx");
        assert!(tabbed.contains("\n   ## Setup\n"), "a tab is four columns: {tabbed:?}");
        assert!(out.contains("Ask support"), "{out}");
        assert!(out.contains("\n    const keep = 1;\n"), "code keeps its indentation: {out}");
        assert!(out.starts_with("---\ntitle: Refunds\n---\n"), "{out}");
        let line_of = |needle: &str| out.lines().position(|l| l.contains(needle));
        assert_eq!(line_of("## Window"), source.lines().position(|l| l.contains("## Window")));
    }

    #[test]
    fn invalid_mdx_names_the_problem() {
        let err = to_markdown("# A\n\n<Note>\nnever closed\n").expect_err("unclosed tag").to_string();
        assert!(err.starts_with("not valid MDX: "), "{err}");
    }
}
