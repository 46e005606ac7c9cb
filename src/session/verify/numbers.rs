//! Numbered evidence: retrieve-first shows the model its evidence as `[1] <untrusted source=…>`,
//! `[2] …`, and the model cites numbers. The numbers stand for the sources of that result's
//! fences, in order: the harness wrote the result, and no text inside a fence can open or close
//! one, so a document cannot move a number to another source. A number the evidence did not
//! give is no citation and is left as written.
//!
//! Also what the model says when the evidence does not answer ("The docs do not cover this"),
//! which the turn turns into an answer that says so.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::guard::fence;
use crate::session::event::{Event, Origin};
use crate::session::store::Stored;
use crate::tools::{self, Decision};

/// `[1]`, `[2, 3]`, `[1; 4]`: numbers in brackets, not a link's text (`[1](…)`) nor a
/// reference definition (`[1]: …`), which the replacement checks after the match.
static NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[([0-9]{1,2}(?:\s*[,;]\s*[0-9]{1,2})*)\]").expect("constant regex NUMBERS"));

/// Phrases by which something is said to be absent: of the docs ("the docs do not mention"),
/// or of the product ("SSO is not available on Starter"); [`ABOUT_DOCS`] tells them apart.
static ABSENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?:do|does|did)\s*(?:not|n't)\s+(?:cover|mention|say|state|specify|contain|include|provide|address|answer|describe|discuss)|(?:is|are)\s*(?:not|n't)\s+(?:covered|mentioned|specified|stated|provided|described|addressed|available|found)|(?:no|not any)\s+(?:information|mention|details?)\s+(?:about|on|regarding|in|of))\b",
    )
    .expect("constant regex ABSENT")
});

/// Words that make a sentence of [`ABSENT`] about what the model was given, not about the
/// product.
static ABOUT_DOCS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:docs?|documentation|evidence|context|sources?|sections?|passages?|excerpts?|provided|information|details?|mention)\b")
        .expect("constant regex ABOUT_DOCS")
});

/// Phrases by which a model says it found nothing, whatever the sentence's subject.
static NOT_FOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?:can|could)\s*(?:not|n't)\s+find|unable to find|not (?:able|possible) to (?:find|answer|determine)|i\s+(?:do\s*(?:not|n't)|don't)\s+know)\b",
    )
    .expect("constant regex NOT_FOUND")
});

/// The text of retrieve-first's result in `turn` (the harness's own `search_docs`), if any.
pub fn evidence_result(turn: &[Stored]) -> Option<&str> {
    let id = turn.iter().find_map(|s| match &s.event {
        Event::AssistantMessage { origin: Origin::Harness, tool_calls, .. } => {
            tool_calls.first().map(|c| c.id.as_str())
        }
        _ => None,
    })?;
    turn.iter().find_map(|s| match &s.event {
        Event::ToolResult { call_id, text, decision: Decision::Allowed } if call_id == id => Some(text.as_str()),
        _ => None,
    })
}

/// True when retrieve-first found evidence in `turn` too weak to answer from.
pub fn weak_evidence(turn: &[Stored]) -> bool {
    evidence_result(turn).is_some_and(|text| text.starts_with(tools::WEAK_EVIDENCE))
}

/// The sources retrieve-first numbered in `turn`, `[1]` first: the fences of the harness's own
/// `search_docs` result when it is evidence. Empty when the turn has none.
pub fn numbered(turn: &[Stored]) -> Vec<String> {
    evidence_result(turn)
        .filter(|text| text.contains(tools::EVIDENCE_HEADER))
        .map(|text| fence::found_in(text).filter(|f| f.closed).map(|f| f.source).collect())
        .unwrap_or_default()
}

/// `text` with every evidence number it cites replaced by the source it stands for
/// (`[2, 3]` becomes `[docs/a.md#x] [docs/b.md#y]`); numbers the evidence did not give are
/// dropped from a bracket that names others, and a bracket of none of them is left as written.
pub fn resolve<'t>(text: &'t str, numbered: &[String]) -> Cow<'t, str> {
    resolve_after(text, numbered, "")
}

/// [`resolve`] of `text` that follows `before` (the end of the text before it).
fn resolve_after<'t>(text: &'t str, numbered: &[String], before: &str) -> Cow<'t, str> {
    if numbered.is_empty() || !text.contains('[') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for found in NUMBERS.find_iter(text) {
        let after = text[found.end()..].chars().next();
        if matches!(after, Some('(' | ':')) {
            continue;
        }
        let preceding = match before {
            "" => Cow::Borrowed(&text[..found.start()]),
            _ => Cow::Owned(format!("{before}{}", &text[..found.start()])),
        };
        if indexes(&preceding) {
            continue;
        }
        let sources: Vec<&str> = found
            .as_str()
            .trim_matches(['[', ']'])
            .split([',', ';'])
            .filter_map(|n| n.trim().parse::<usize>().ok())
            .filter_map(|n| n.checked_sub(1).and_then(|i| numbered.get(i)))
            .map(String::as_str)
            .collect();
        if sources.is_empty() {
            continue;
        }
        out.push_str(&text[last..found.start()]);
        let cited: Vec<String> = sources.iter().map(|s| format!("[{s}]")).collect();
        out.push_str(&cited.join(" "));
        last = found.end();
    }
    if last == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// True when a bracket after `preceding` indexes what comes before it (`args[1]`,
/// `` `items[1]` ``, `f(x)[1]`, `m[1][2]`) rather than cites: it follows a word character, a
/// closing parenthesis or a backtick, or a bracket of numbers that itself does.
fn indexes(preceding: &str) -> bool {
    let mut rest = preceding;
    loop {
        match rest.chars().next_back() {
            Some(c) if c.is_alphanumeric() || matches!(c, '_' | ')' | '`') => return true,
            Some(']') => {
                let Some(open) = rest.rfind('[') else { return false };
                let inside = &rest[open + 1..rest.len() - 1];
                if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_digit() || matches!(c, ',' | ';' | ' ')) {
                    return false;
                }
                rest = &rest[..open];
            }
            _ => return false,
        }
    }
}

/// Resolves numbers in text that arrives in pieces: what could still become a citation (a `[`
/// followed only by digits, commas and spaces, or a whole `[1]` whose next character is not in
/// yet) is held back, the rest resolved and handed on at once; so what is handed on, joined, is
/// [`resolve`] of the whole.
#[derive(Debug, Default)]
pub struct Pieces {
    /// Text held back: it may be the start of a citation.
    pending: String,
    /// The end of the text handed on (at most [`TAIL`] bytes): what a held-back bracket follows.
    tail: String,
}

/// Bytes of handed-on text kept to tell an index from a citation (`m[1][2][3]`).
const TAIL: usize = 64;

/// Longest text held back as a citation that may not be whole yet.
const HELD_BACK: usize = 24;

impl Pieces {
    /// Takes a piece of text; gives what can be shown of it, resolved.
    pub fn push(&mut self, piece: &str, numbered: &[String]) -> Option<String> {
        self.pending.push_str(piece);
        let keep = match self.pending.rfind('[') {
            Some(at) if self.pending.len() - at <= HELD_BACK && open(&self.pending[at + 1..]) => at,
            _ => self.pending.len(),
        };
        if keep == 0 {
            return None;
        }
        let rest = self.pending.split_off(keep);
        let ready = std::mem::replace(&mut self.pending, rest);
        let resolved = resolve_after(&ready, numbered, &self.tail).into_owned();
        self.tail.push_str(&ready);
        let mut cut = self.tail.len().saturating_sub(TAIL);
        while !self.tail.is_char_boundary(cut) {
            cut += 1;
        }
        self.tail.drain(..cut);
        Some(resolved)
    }

    /// The rest, resolved, when the text has ended.
    pub fn finish(&mut self, numbered: &[String]) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        let before = std::mem::take(&mut self.tail);
        (!rest.is_empty()).then(|| resolve_after(&rest, numbered, &before).into_owned())
    }
}

/// True when the text after a `[` may still be, or is, a citation of numbers whose next
/// character has not come: digits, commas, semicolons and spaces, then perhaps `]` and nothing.
fn open(after: &str) -> bool {
    let inside = after.strip_suffix(']').unwrap_or(after);
    inside.chars().all(|c| c.is_ascii_digit() || matches!(c, ',' | ';' | ' '))
}

/// True when `answer` says the docs do not answer the question ("The docs do not cover this",
/// "the context does not mention…", "I couldn't find…").
pub fn says_not_covered(answer: &str) -> bool {
    NOT_FOUND.is_match(answer)
        || answer
            .split(['.', '!', '?', '\n'])
            .any(|sentence| ABSENT.is_match(sentence) && ABOUT_DOCS.is_match(sentence))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<String> {
        vec!["docs/refunds.md#window".into(), "docs/plans.md#plans".into()]
    }

    #[test]
    fn numbers_become_the_sources_they_stand_for() {
        let cases: &[(&str, &str)] = &[
            ("14 days [1].", "14 days [docs/refunds.md#window]."),
            ("Both [1, 2]", "Both [docs/refunds.md#window] [docs/plans.md#plans]"),
            ("Both [1][2]", "Both [docs/refunds.md#window][docs/plans.md#plans]"),
            ("Both [2; 1]", "Both [docs/plans.md#plans] [docs/refunds.md#window]"),
            ("Not given [3].", "Not given [3]."),
            ("One of them [1, 7].", "One of them [docs/refunds.md#window]."),
            ("A link [1](https://x.example) stays", "A link [1](https://x.example) stays"),
            ("[1]: https://x.example", "[1]: https://x.example"),
            ("[0] is no number", "[0] is no number"),
            ("Read args[1] and `items[2]`, m[1][2]", "Read args[1] and `items[2]`, m[1][2]"),
            ("(see [1]) and \"[2]\"", "(see [docs/refunds.md#window]) and \"[docs/plans.md#plans]\""),
            ("no brackets", "no brackets"),
        ];
        for (answer, expected) in cases {
            assert_eq!(resolve(answer, &sources()), *expected, "answer {answer:?}");
        }
        assert_eq!(resolve("14 days [1].", &[]), "14 days [1].", "no evidence, no numbers");
    }

    #[test]
    fn streamed_pieces_resolve_to_what_the_whole_resolves_to_and_flow_at_once() {
        let text = "The window is 14 days [1\n]. Plans [2] are\nmonthly [1, 2]. Code args[1] and [2], m[1][2]. A link [1](x) and [12";
        for cut in 1..text.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let mut pieces = Pieces::default();
            let mut shown = String::new();
            for piece in [&text[..cut], &text[cut..]] {
                shown.extend(pieces.push(piece, &sources()));
            }
            shown.extend(pieces.finish(&sources()));
            assert_eq!(shown, resolve(text, &sources()), "cut at {cut}");
        }
        let mut pieces = Pieces::default();
        assert_eq!(pieces.push("Refunds take ", &sources()).as_deref(), Some("Refunds take "), "no waiting for a line");
        assert_eq!(pieces.push("14 days [", &sources()).as_deref(), Some("14 days "));
        assert_eq!(pieces.push("1]", &sources()), None, "a whole [1] waits for what follows it");
        assert_eq!(pieces.push(".", &sources()).as_deref(), Some("[docs/refunds.md#window]."));
    }

    #[test]
    fn a_model_saying_the_docs_are_silent_is_recognised() {
        for said in [
            "The docs do not cover this.",
            "The evidence doesn't mention Kubernetes.",
            "This is not covered in the provided sections.",
            "There is no information about Helm charts.",
            "I couldn't find that in the docs.",
            "I don't know.",
            "This information is not available in the given passages.",
        ] {
            assert!(says_not_covered(said), "{said}");
        }
        for answer in [
            "The refund window is 14 days [1].",
            "Covered plans include Starter [2].",
            "Do not retry it.",
            // A fact about the product, stated without its citation: sent back to be cited,
            // not taken for the docs' silence.
            "Offline mode is not available on the Starter plan.",
            "The Starter plan does not include priority support.",
        ] {
            assert!(!says_not_covered(answer), "{answer}");
        }
    }
}
