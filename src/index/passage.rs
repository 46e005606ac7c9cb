//! A section's text cut into passages: the units evidence is chosen from. A passage is a
//! paragraph, a list item (its own lines, without the items nested in it), a table row (which
//! keeps its table's header, so a row read alone still says what its cells are), a code block
//! or an HTML block; a long paragraph is cut into its sentences. pulldown-cmark finds the
//! blocks, so a `#` in a code block or a `|` in a paragraph is what Markdown says it is.

use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;

/// A paragraph longer than this many bytes is cut into sentences.
const LONG_PARAGRAPH: usize = 320;
/// A passage is cut to this many bytes at most (a huge code block or table row).
pub const MAX_PASSAGE_BYTES: usize = 900;

/// One passage of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Its text as written (white space inside a paragraph made single spaces).
    pub text: String,
    /// For a table row: the table's header and its separator line, shown before the row.
    pub header: Option<String>,
    /// Which block of the section it belongs to: passages of one block are neighbours in
    /// the strongest sense (sentences of one paragraph, rows of one table, items of one list).
    pub block: usize,
    /// What kind of block it is part of.
    pub kind: Kind,
}

/// The kinds of block a passage comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A paragraph, or a sentence of a long one.
    Paragraph,
    /// A list item.
    Item,
    /// A table row.
    Row,
    /// A code block.
    Code,
    /// An HTML block.
    Html,
}

impl Passage {
    /// True when it introduces what follows it ("uv supports the following versions:",
    /// "Run:"): a paragraph or a list item that ends with a colon. Read alone it says nothing;
    /// the list, table or code it introduces is its meaning.
    pub fn introduces(&self) -> bool {
        matches!(self.kind, Kind::Paragraph | Kind::Item) && self.text.trim_end_matches(['*', '_']).ends_with(':')
    }

    /// True for a part of a list, a table or a code block: what a lead-in introduces.
    pub fn is_listing(&self) -> bool {
        matches!(self.kind, Kind::Item | Kind::Row | Kind::Code)
    }
}

/// The passages of `text` (a section's Markdown body), in order.
pub fn passages(text: &str) -> Vec<Passage> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH;
    let mut out: Vec<Passage> = Vec::new();
    // Where the innermost open item's own text starts, while it has not yet given a passage.
    let mut items: Vec<Option<usize>> = Vec::new();
    let mut header: Option<String> = None;
    let mut block = 0;
    // Inside a table's header, a paragraph of a list item or a block quote nothing is cut out
    // on its own: the enclosing unit is.
    let mut in_head = false;
    let mut lists = 0usize;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::List(_)) => {
                // The text of the item that holds this list ends here.
                if let Some(slot) = items.last_mut()
                    && let Some(start) = slot.take()
                {
                    push(&mut out, &text[start..range.start], None, block, Kind::Item);
                }
                if lists == 0 {
                    block += 1;
                }
                lists += 1;
            }
            Event::End(TagEnd::List(_)) => lists = lists.saturating_sub(1),
            Event::Start(Tag::Item) => items.push(Some(range.start)),
            Event::End(TagEnd::Item) => {
                if let Some(Some(start)) = items.pop() {
                    push(&mut out, &text[start..range.end], None, block, Kind::Item);
                }
            }
            Event::Start(Tag::Table(_)) => {
                block += 1;
                header = None;
            }
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                // The header line and the separator line under it, as written.
                let rest = &text[range.start..];
                let lines: Vec<&str> = rest.lines().take(2).map(str::trim).collect();
                header = Some(lines.join("\n"));
            }
            // A table inside a list item is read with its item.
            Event::Start(Tag::TableRow) if !in_head && items.is_empty() => {
                push(&mut out, &text[range.clone()], header.clone(), block, Kind::Row);
            }
            Event::Start(Tag::Paragraph) if items.is_empty() => {
                block += 1;
                let paragraph = squeeze(&text[range.clone()]);
                if paragraph.len() > LONG_PARAGRAPH {
                    for sentence in sentences(&paragraph) {
                        push(&mut out, sentence, None, block, Kind::Paragraph);
                    }
                } else {
                    push(&mut out, &paragraph, None, block, Kind::Paragraph);
                }
            }
            Event::Start(Tag::CodeBlock(_)) if items.is_empty() => {
                block += 1;
                push(&mut out, &text[range.clone()], None, block, Kind::Code);
            }
            Event::Start(Tag::HtmlBlock) if items.is_empty() => {
                block += 1;
                push(&mut out, &text[range.clone()], None, block, Kind::Html);
            }
            _ => {}
        }
    }
    out
}

/// A JSX or HTML tag at the start or the end of a passage (`<Note>`, `</Warning>`), which
/// Markdown files of MDX sites hold around their callouts.
static EDGE_TAGS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\s*</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>\n]*)?/?>)+\s*|\s*(?:</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>\n]*)?/?>\s*)+$",
    )
    .expect("constant regex EDGE_TAGS")
});

/// Adds `text` as a passage, without the tags at its edges, unless nothing is left.
fn push(out: &mut Vec<Passage>, text: &str, header: Option<String>, block: usize, kind: Kind) {
    let text = EDGE_TAGS.replace_all(text.trim(), "");
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let cut = crate::guard::redact::head(text, MAX_PASSAGE_BYTES);
    let mut passage = cut.to_string();
    // A code block cut short is closed again, or what follows it would read as code.
    if cut.len() < text.len()
        && let Some(fence) = opening_fence(cut)
    {
        passage.push('\n');
        passage.push_str(fence);
    }
    out.push(Passage { text: passage, header, block, kind });
}

/// The fence that opens `text` when it begins with a fenced code block: "```" or "~~~" (or
/// longer).
fn opening_fence(text: &str) -> Option<&str> {
    let marker = text.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run = text.len() - text.trim_start_matches(marker).len();
    (run >= 3).then(|| &text[..run])
}

/// White space runs made one space: a paragraph's line breaks are not the writer's meaning.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The sentences of a paragraph: cut after `.`, `!` or `?` (and any closing quote or
/// bracket) followed by a space and a capital letter, a digit or markup that starts one.
/// "e.g. the" and "v1.2" stay whole.
pub fn sentences(paragraph: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = paragraph.char_indices().collect();
    for (i, &(_, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let mut j = i + 1;
        while chars.get(j).is_some_and(|&(_, c)| matches!(c, '"' | '\'' | ')' | ']' | '*' | '”' | '’')) {
            j += 1;
        }
        let Some(&(space_at, ' ')) = chars.get(j) else { continue };
        let starts_next = chars
            .get(j + 1)
            .is_some_and(|&(_, n)| n.is_uppercase() || n.is_ascii_digit() || matches!(n, '*' | '`' | '[' | '"' | '('));
        if starts_next && space_at > start {
            out.push(paragraph[start..space_at].trim());
            start = space_at + 1;
        }
    }
    if start < paragraph.len() {
        out.push(paragraph[start..].trim());
    }
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        passages(text).into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn blocks_become_passages() {
        let cases: &[(&str, &[&str])] = &[
            ("One line.\nSame paragraph.\n\nSecond.", &["One line. Same paragraph.", "Second."]),
            ("Steps:\n\n1. Open it.\n2. Click **Refund**.\n", &["Steps:", "1. Open it.", "2. Click **Refund**."]),
            ("- a\n  - nested b\n- c", &["- a", "- nested b", "- c"]),
            ("```sh\n# not a heading\nls\n```", &["```sh\n# not a heading\nls\n```"]),
            ("<Note>\n**Careful**\n\nText here.\n</Note>", &["**Careful**", "Text here."]),
            ("", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(texts(input), *expected, "input {input:?}");
        }
    }

    #[test]
    fn a_table_row_keeps_its_header() {
        let found = passages("Prices:\n\n| Plan | Monthly |\n|---|---|\n| Starter | 29 EUR |\n| Growth | 99 EUR |\n");
        let rows: Vec<(&str, Option<&str>)> = found.iter().map(|p| (p.text.as_str(), p.header.as_deref())).collect();
        assert_eq!(
            rows,
            [
                ("Prices:", None),
                ("| Starter | 29 EUR |", Some("| Plan | Monthly |\n|---|---|")),
                ("| Growth | 99 EUR |", Some("| Plan | Monthly |\n|---|---|")),
            ]
        );
        assert_eq!(found[1].block, found[2].block, "rows of one table are one block");
        assert_ne!(found[0].block, found[1].block);
    }

    #[test]
    fn a_long_paragraph_is_cut_into_sentences() {
        let long = format!(
            "Refunds are possible within 14 days, e.g. for a duplicate charge. {} The fee of 1.5% is kept! Is it \"final\"? Yes.",
            "Filler words go here to make it long. ".repeat(8)
        );
        let found = texts(&long);
        assert!(found.len() > 5, "{found:?}");
        assert_eq!(found[0], "Refunds are possible within 14 days, e.g. for a duplicate charge.");
        assert!(found.contains(&"The fee of 1.5% is kept!".to_string()), "{found:?}");
        assert!(found.contains(&"Is it \"final\"?".to_string()), "{found:?}");
        assert_eq!(found.last().map(String::as_str), Some("Yes."));
    }

    #[test]
    fn a_huge_block_is_cut_on_a_character_boundary() {
        let huge = format!("```\n{}\n```", "é".repeat(2_000));
        let found = passages(&huge);
        assert_eq!(found.len(), 1);
        assert!(found[0].text.len() <= MAX_PASSAGE_BYTES + 4);
        assert!(found[0].text.ends_with("é\n```"), "a cut code block is closed again");
    }

    #[test]
    fn a_lead_in_is_told_from_what_it_introduces() {
        let found = passages(
            "uv supports the following versions:\n\n- 3.12\n- 3.13\n\nRun **this**:\n\n```sh\nuv sync\n```\n\nDone. It works.\n",
        );
        let kinds: Vec<(Kind, bool, bool)> = found.iter().map(|p| (p.kind, p.introduces(), p.is_listing())).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Paragraph, true, false),
                (Kind::Item, false, true),
                (Kind::Item, false, true),
                (Kind::Paragraph, true, false),
                (Kind::Code, false, true),
                (Kind::Paragraph, false, false),
            ]
        );
    }

    #[test]
    fn a_table_in_a_list_item_is_read_once_with_its_item() {
        let found = texts("- Limits:\n\n  | Plan | Seats |\n  |---|---|\n  | Starter | 3 |\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("- Limits:") && found[0].contains("| Starter | 3 |"), "{found:?}");
    }
}
