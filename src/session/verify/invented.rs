//! What an answer names that its evidence does not: the product, feature or name a small model
//! fills silence with ("Yes, there is a built-in Salesforce connector that imports
//! opportunities [1]"). Such an answer restates the question and cites a passage that shares
//! its other words, so citations, quotes and grounding all pass; only the name gives it away.
//!
//! A term is a word shaped like a name: capitalised inside a sentence (`Salesforce`), with a
//! capital after its first letter (`PayPal`, `iOS`, `SSO`), with a digit (`S3`, `OAuth2`), or
//! an identifier in a code span. Here are the terms no passage the turn retrieved holds; the
//! turn then keeps those the docs never use anywhere ([`crate::index::Index::never_uses`]) and
//! answers "not covered", naming the first. A term of the question is the question's own
//! context ("our Spanish customer") when the docs answer the question by meaning; the turn
//! decides that ([`unheld`]'s caller).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// An ASCII word: a letter, then letters and digits.
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9]*").expect("constant regex WORD"));
/// A code span's text.
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").expect("constant regex CODE_SPAN"));
/// What an answer cites or links, which names no fact: `[1]`, `[docs/a.md#x]`, a path, a URL.
static CITED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[[^\]\n]*\]|\(?\b(?:docs|notes|skills)/[^)\s]*\)?|https?://\S+").expect("constant regex CITED")
});
/// Capitalised words an answer uses for itself, not for a fact.
const OWN_WORDS: &[&str] = &["source", "sources", "evidence", "yes", "no", "ok", "note", "docs", "answer"];
/// Characters a code span may hold at most to be read as one identifier.
const MAX_SPAN_CHARS: usize = 60;

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
        match self.word {
            true => format!("The docs never mention {}.", self.term),
            false => "The docs never use a name the answer gave.".to_string(),
        }
    }

    /// Why, for the log and the trace.
    pub fn logged(&self) -> String {
        format!(
            "not covered: the model's answer names {}, which no evidence passage holds and the docs never use",
            crate::guard::clip(&self.term, 40)
        )
    }
}

/// The first term (a name, a product, a feature, a number) of `answer` to `question` that no
/// section `turn` retrieved holds and that `index` never uses anywhere; none when every term is
/// backed. Terms of the question count too (a near-domain question's "Salesforce connector",
/// restated), unless the docs answer the question by meaning: the reranker rates the evidence
/// at `covers_at` or above ("our Spanish customer" is then the question's context).
pub fn invented(
    answer: &str,
    question: &str,
    turn: &[crate::session::store::Stored],
    index: &crate::index::Index,
    covers_at: f64,
) -> Option<Invented> {
    let sections = super::retrieved(turn);
    // Nothing retrieved, nothing to hold the answer against (as for its citations).
    if !sections.iter().any(|s| s.searched) {
        return None;
    }
    let bodies: Vec<String> = sections.into_iter().map(|s| s.body).collect();
    let sources = bodies.join("\n");
    let mut candidates = unheld(answer, &sources, question, false);
    candidates.extend(super::support::unsupported_numbers(answer, &sources, question));
    if candidates.is_empty() {
        return None;
    }
    let words: Vec<&str> = candidates.iter().map(String::as_str).collect();
    // An index that cannot be read decides nothing here: the other checks still run.
    let never = index.never_uses(&words).ok()?;
    let asked = words_of(question);
    let (context, own): (Vec<&String>, Vec<&String>) = never.iter().partition(|t| asked.contains(&t.to_lowercase()));
    // Named only as a plain word, and never one the redactor would hide (a key's shape).
    let word = |term: &str| {
        term.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ',') && crate::guard::scrub(term) == term
    };
    if let Some(term) = own.first() {
        return Some(Invented { term: term.to_string(), word: word(term) });
    }
    let term = context.first()?;
    let vouched =
        index.reranker.as_ref().and_then(|r| r.scores(question, &[sources]).ok()).and_then(|s| s.first().copied());
    if vouched.is_some_and(|relevance| relevance >= covers_at) {
        return None;
    }
    Some(Invented { term: term.to_string(), word: word(term) })
}

/// The terms of `answer` (outside its citations) that no text of `sources` holds, each once, in
/// order: words compared without case, a code span as written. With `question_is_context`,
/// terms the `question` holds are left out.
pub fn unheld(answer: &str, sources: &str, question: &str, question_is_context: bool) -> Vec<String> {
    let held = words_of(sources);
    let asked = words_of(question);
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
        let in_question = question.contains(span);
        if identifier && !sources.contains(span) && !(question_is_context && in_question) {
            push(span);
        }
    }
    let prose = CODE_SPAN.replace_all(&prose, " ");
    for found in WORD.find_iter(&prose) {
        let word = found.as_str();
        if !is_term(word, initial(&prose, found.start())) {
            continue;
        }
        let lower = word.to_ascii_lowercase();
        if held.contains(&lower) || (question_is_context && asked.contains(&lower)) {
            continue;
        }
        push(word);
    }
    out
}

/// True for a word shaped like a name: not one of the answer's own words nor everyday English,
/// and capitalised where a sentence does not start, or with a capital or a digit after its
/// first letter.
fn is_term(word: &str, sentence_start: bool) -> bool {
    if word.len() < 2 {
        return false;
    }
    let lower = word.to_ascii_lowercase();
    if OWN_WORDS.contains(&lower.as_str()) || crate::index::query::is_everyday(&lower) {
        return false;
    }
    let mut rest = word.chars().skip(1);
    let inner = rest.any(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
    inner || (capital && !sentence_start)
}

/// True when the word at `at` starts a sentence, a line or a list item: nothing but quotes and
/// brackets since the start of the text, the end of a sentence (`.`, `!`, `?`, `:`) or a line.
fn initial(text: &str, at: usize) -> bool {
    for c in text[..at].chars().rev() {
        match c {
            '\n' | '.' | '!' | '?' | ':' | '>' | '#' | '*' | '-' | '•' => return true,
            '"' | '\'' | '“' | '‘' | '(' | '[' | '_' => continue,
            c if c.is_whitespace() => continue,
            _ => return false,
        }
    }
    true
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
        let cases: &[(&str, &[&str])] = &[
            ("Yes, there is a built-in Salesforce connector that imports opportunities [1].", &["Salesforce"]),
            ("Acme Billing connects to HubSpot [docs/integrations.md#crm].", &[]),
            ("Export the invoices as CSV, then open them in Excel [1].", &["Excel"]),
            ("Salesforce is not mentioned. Sources: [1]", &[]),
            ("Pay with PayPal or over SSO, or store them in S3 [1].", &["PayPal", "SSO", "S3"]),
            ("Pass `export_id`, or `crm_sync_id` [1].", &["crm_sync_id"]),
            ("- Open Settings\n- Click Save", &["Settings", "Save"]),
            ("The docs at https://Example.COM/Salesforce say so [1].", &[]),
            ("Keys start with sk_live, see [Stripe Docs](docs/keys.md) [1].", &[]),
        ];
        for (answer, expected) in cases {
            assert_eq!(unheld(answer, evidence, "is there a crm connector", false), *expected, "{answer}");
        }
    }

    #[test]
    fn a_term_of_the_question_is_its_context_only_when_the_turn_says_so() {
        let evidence = "EU business customers with a valid VAT number are invoiced without VAT (reverse charge).";
        let answer = "Your Spanish customer gave a valid VAT number, so no VAT is charged [1].";
        let question = "why is there no sales tax on the bill of our Spanish business customer";
        assert_eq!(unheld(answer, evidence, question, false), ["Spanish"]);
        assert!(unheld(answer, evidence, question, true).is_empty());
        // A term the model brought itself is never the question's.
        let added = "Your Spanish customer is exempt under the Oslo rule [1].";
        assert_eq!(unheld(added, evidence, question, true), ["Oslo"]);
    }
}
