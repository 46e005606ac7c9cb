//! What an answer names that its evidence does not: the product, feature or name a small model
//! fills silence with ("Yes, there is a built-in Salesforce connector that imports
//! opportunities [1]"). Such an answer restates the question and cites a passage that shares
//! its other words, so citations, quotes and grounding all pass; only the name gives it away.
//!
//! A term is a word shaped like a name: capitalised inside a sentence (`Salesforce`, in bold or
//! in a link's text too), at the start of one when the question writes it capitalised inside
//! its own, with a capital after its first letter (`PayPal`, `iOS`, `SSO`), with a digit (`S3`,
//! `OAuth2`), or an identifier in a code span. Of the terms no passage the turn retrieved
//! holds, those the docs never use anywhere ([`crate::index::Index::never_uses`]) make the
//! answer "not covered", naming the first. A term of the question counts as any other: the
//! off-topic questions a small model restates ("is there a Salesforce connector") are exactly
//! those; a question whose own context the docs never name ("our Spanish customer") and whose
//! answer repeats it is then not covered too, listing the sections that came closest.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::index::query::ASCII_WORD as WORD;

/// How [`Invented::logged`] begins: the front ends tell this replacement from the others by it.
pub const NOT_COVERED: &str = "not covered:";
/// A code span's text.
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").expect("constant regex CODE_SPAN"));
/// What an answer cites, which names no fact: `[1]`, `[docs/a.md#x]`, a path, a link's target
/// (`](https://...)`: the link's text stays and is read), a URL.
static CITED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[\s*\d+\s*\]|\[(?:docs|notes|skills)/[^\]\n]*\]|\]\([^)\s]*\)|\(?\b(?:docs|notes|skills)/[^)\s]*\)?|https?://\S+")
        .expect("constant regex CITED")
});
/// Capitalised words an answer uses for itself, not for a fact.
const OWN_WORDS: &[&str] = &["source", "sources", "evidence", "yes", "no", "ok", "note", "docs", "answer"];
/// Characters a code span may hold at most to be read as one identifier.
const MAX_SPAN_CHARS: usize = 60;
/// Characters of a term the "not covered" answer names at most (past it, the answer says that
/// a name it gave is unknown without repeating it).
const MAX_NAMED_CHARS: usize = 40;

/// A term an answer states that the docs never use: what the "not covered" answer says instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invented {
    /// The term as the answer wrote it.
    pub term: String,
    /// It is a word (a name, a product, a number) rather than an identifier in a code span:
    /// only a word is named in the answer, as a code span may be the question's markup echoed.
    pub word: bool,
}

impl Invented {
    /// The sentence the "not covered" answer adds.
    pub fn sentence(&self) -> String {
        match self.word && self.term.chars().count() <= MAX_NAMED_CHARS {
            true => format!("The docs never mention {}.", self.term),
            false => "The docs never use a name the answer gave.".to_string(),
        }
    }

    /// Why, for the log and the trace.
    pub fn logged(&self) -> String {
        format!(
            "{NOT_COVERED} the model's answer names {}, which no evidence passage holds and the docs never use",
            crate::guard::clip(&self.term, 40)
        )
    }
}

/// The first term (a name, a product, a feature, a number) of `answer` to `question` that no
/// section `turn` retrieved holds and that `index` never uses anywhere (a document the rules
/// hide does not count); none when every term is backed, or when nothing was retrieved.
pub fn invented(
    answer: &str,
    question: &str,
    turn: &[crate::session::store::Stored],
    index: &crate::index::Index,
) -> Option<Invented> {
    let sections = super::retrieved(turn);
    // Nothing retrieved, nothing to hold the answer against (as for its citations).
    if !sections.iter().any(|s| s.searched) {
        return None;
    }
    let bodies: Vec<String> = sections.into_iter().map(|s| s.body).collect();
    let sources = bodies.join("\n");
    let mut candidates = unheld(answer, &sources, question);
    candidates.extend(super::support::unsupported_numbers(answer, &sources, question));
    if candidates.is_empty() {
        return None;
    }
    let words: Vec<&str> = candidates.iter().map(String::as_str).collect();
    // An index that cannot be read decides nothing here: the other checks still run.
    let term = index.never_uses(&words).ok()?.into_iter().next()?;
    // Named only as a plain word, and never one the redactor would hide (a key's shape).
    let word = term.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ',')
        && crate::guard::scrub(&term) == term.as_str();
    Some(Invented { term, word })
}

/// The terms of `answer` (outside its citations) that no text of `sources` holds, each once, in
/// order: words compared without case, a code span as written.
pub fn unheld(answer: &str, sources: &str, question: &str) -> Vec<String> {
    let held = words_of(sources);
    let named = names_of(question);
    let mut out: Vec<String> = Vec::new();
    let mut push = |term: &str| {
        if !out.iter().any(|t| t.eq_ignore_ascii_case(term)) {
            out.push(term.to_string());
        }
    };
    let prose = CITED.replace_all(answer, " ");
    for span in CODE_SPAN.captures_iter(&prose).filter_map(|c| c.get(1)).map(|m| m.as_str().trim()) {
        let identifier = span.chars().count() <= MAX_SPAN_CHARS
            && span.chars().any(|c| c.is_ascii_alphabetic())
            && span.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
        if identifier && !sources.contains(span) {
            push(span);
        }
    }
    let prose = CODE_SPAN.replace_all(&prose, " ");
    for found in WORD.find_iter(&prose) {
        let word = found.as_str();
        // At a sentence's start a capital says nothing, unless the question names it so.
        let start = crate::index::query::starts_sentence(&prose, found.start()) && !named.contains(word);
        if is_term(word, start) && !held.contains(&word.to_ascii_lowercase()) {
            push(word);
        }
    }
    out
}

/// The words `text` writes capitalised where no sentence starts: the names it uses.
fn names_of(text: &str) -> HashSet<&str> {
    WORD.find_iter(text)
        .filter(|w| {
            w.as_str().starts_with(|c: char| c.is_ascii_uppercase())
                && !crate::index::query::starts_sentence(text, w.start())
        })
        .map(|w| w.as_str())
        .collect()
}

/// True for a word shaped like a name ([`crate::index::query::looks_named`]) that is not one of
/// the answer's own words.
fn is_term(word: &str, sentence_start: bool) -> bool {
    !OWN_WORDS.contains(&word.to_ascii_lowercase().as_str()) && crate::index::query::looks_named(word, sentence_start)
}

/// The words of `text`, lower case.
fn words_of(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_evidence_does_not_hold_are_found() {
        let evidence = "Acme Billing connects to HubSpot and exports invoices as CSV. Use the `export_id` field. \
                        Keys start with sk_live.";
        let question = "is there a crm connector for Salesforce";
        let cases: &[(&str, &[&str])] = &[
            ("Yes, there is a built-in Salesforce connector that imports opportunities [1].", &["Salesforce"]),
            ("Acme Billing connects to HubSpot [docs/integrations.md#crm].", &[]),
            ("Export the invoices as CSV, then open them in Excel [1].", &["Excel"]),
            ("Pay with PayPal or over SSO, or store them in S3 [1].", &["PayPal", "SSO", "S3"]),
            ("Pass `export_id`, or `crm_sync_id` [1].", &["crm_sync_id"]),
            ("- Open Settings\n- Click Save", &["Settings", "Save"]),
            ("The docs at https://Example.COM/Zanzibar say so [1].", &[]),
            // Emphasis and a link's text are read; its target is not.
            ("It has a built-in **Zendesk** connector [1].", &["Zendesk"]),
            ("See the [Zendesk connector](https://evil.example/Marketo) [2].", &["Zendesk"]),
            // At a sentence's start, a name the question writes capitalised; not any word.
            ("Salesforce is supported [1].", &["Salesforce"]),
            ("Unfortunately it is. Typically it runs daily [1].", &[]),
        ];
        for (answer, expected) in cases {
            assert_eq!(unheld(answer, evidence, question), *expected, "{answer}");
        }
    }

    #[test]
    fn a_long_name_is_not_repeated() {
        let short = Invented { term: "Salesforce".into(), word: true };
        assert_eq!(short.sentence(), "The docs never mention Salesforce.");
        let long = Invented { term: "A".repeat(41), word: true };
        assert_eq!(long.sentence(), "The docs never use a name the answer gave.");
        let span = Invented { term: "crm_sync_id".into(), word: false };
        assert_eq!(span.sentence(), "The docs never use a name the answer gave.");
    }
}
