//! What an answer says that the docs it cites do not: the checks beyond citations and quotes.
//! - a number (an amount, a limit, a duration) that no retrieved text and not the question
//!   holds: the fact a small model most often makes up, and the one a customer acts on;
//! - an answer that is only its citation ("Source: [1]"): a source is not an answer;
//! - an answer whose own words (those that are not the question's) the evidence does not hold:
//!   "Yes, Polar can send a text message when a payment fails [1]" restates the question and
//!   adds nothing the docs say, which is how a small model answers what the docs do not cover.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// A number as written: `14`, `1.5`, `1,000`, `02:00`.
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+(?:[.,:]\d+)*").expect("constant regex NUMBER"));
/// What an answer cites or links: `[docs/a.md#x]`, `[1]`, `(docs/a.md)`, `docs/a.md#x`, a URL.
static CITED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[[^\]\n]*\]|\(?\b(?:docs|notes|skills)/[^)\s]*\)?|https?://\S+").expect("constant regex CITED")
});
/// A code span, `next_period`: its text.
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").expect("constant regex CODE_SPAN"));
/// A longer code span is no name or value an answer could be checked on. (Its length is
/// checked after the match: a counted class of any character compiles ten times slower.)
const MAX_CODE_SPAN_CHARS: usize = 80;
/// A list item's marker at the start of a line (`1.`, `2)`), which is no fact.
static LIST_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*[0-9]+[.)]\s").expect("constant regex LIST_MARKER"));

/// Number words and the digits they stand for: "one hour" in the docs backs "1 hour".
const NUMBER_WORDS: &[(&str, &str)] = &[
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("fifteen", "15"),
    ("twenty", "20"),
    ("thirty", "30"),
    ("forty", "40"),
    ("fifty", "50"),
    ("sixty", "60"),
    ("ninety", "90"),
    ("hundred", "100"),
    ("once", "1"),
    ("twice", "2"),
    ("single", "1"),
];

/// The numbers of `answer` (outside its citations and list markers) that neither `sources`
/// (the text the turn retrieved) nor the `question` holds, as written, once each.
pub fn unsupported_numbers(answer: &str, sources: &str, question: &str) -> Vec<String> {
    let prose = CITED.replace_all(answer, " ");
    let prose = LIST_MARKER.replace_all(&prose, " ");
    let mut known: HashSet<String> = HashSet::new();
    for text in [sources, question] {
        known.extend(numbers(text));
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            let lower = word.to_lowercase();
            if let Some((_, digits)) = NUMBER_WORDS.iter().find(|(w, _)| *w == lower) {
                known.insert((*digits).to_string());
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for found in NUMBER.find_iter(&prose) {
        let written = found.as_str().trim_end_matches(['.', ',', ':']);
        if !known.contains(&normal(written)) && !out.iter().any(|o| o == written) {
            out.push(written.to_string());
        }
    }
    out
}

/// The numbers written in digits in `text`, each as [`normal`] compares them.
fn numbers(text: &str) -> HashSet<String> {
    NUMBER.find_iter(text).map(|m| normal(m.as_str())).collect()
}

/// A number compared without thousands separators or a trailing `.0`.
fn normal(number: &str) -> String {
    let number = number.trim_end_matches(['.', ',', ':']);
    let plain: String = if number.contains(',') && !number.contains('.') && thousands(number) {
        number.replace(',', "")
    } else {
        number.to_string()
    };
    plain.strip_suffix(".0").or_else(|| plain.strip_suffix(".00")).unwrap_or(&plain).to_string()
}

/// True for `1,000` and `12,500,000`: commas between groups of three digits.
fn thousands(number: &str) -> bool {
    number.split(',').skip(1).all(|group| group.len() == 3 && group.bytes().all(|b| b.is_ascii_digit()))
}

/// True when `answer` is only its citations: no words but "Source", "Sources", "see" and the
/// like around them.
pub fn bare(answer: &str) -> bool {
    let prose = CITED.replace_all(answer, " ");
    let words = prose
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .filter(|w| !matches!(w.to_lowercase().as_str(), "source" | "sources" | "see" | "evidence" | "cited" | "from"))
        .count();
    words == 0
}

/// The share of an answer's own words that the evidence must hold.
const GROUNDED: f64 = 0.5;

/// True when what `answer` says besides the `question`'s own words is, for the most part, in
/// `sources`: its words compared by stem, without citations and everyday English. A number or
/// a code span (`next_period`) that the sources hold and the question does not is one thing
/// the answer adds, and a backed one: "The net amount is $10.00 [1]" answers "how much of the
/// $12 is the net amount" in the question's own words (numbers the sources do not hold are
/// [`unsupported_numbers`]).
pub fn grounded(answer: &str, question: &str, sources: &str) -> bool {
    let prose = CITED.replace_all(answer, " ");
    let asked = stems(question);
    let novel: HashSet<String> = stems(&prose).difference(&asked).cloned().collect();
    let held = stems(sources);
    let mut backed = novel.iter().filter(|w| held.contains(*w)).count();
    let mut added = novel.len();
    let held_numbers = numbers(sources);
    for number in numbers(&LIST_MARKER.replace_all(&prose, " ")).difference(&numbers(question)) {
        added += 1;
        backed += usize::from(held_numbers.contains(number));
    }
    for span in CODE_SPAN.captures_iter(&prose).filter_map(|c| c.get(1)).map(|m| m.as_str()) {
        let span = if span.chars().count() <= MAX_CODE_SPAN_CHARS { span.trim() } else { "" };
        if span.is_empty() || question.contains(span) {
            continue;
        }
        added += 1;
        backed += usize::from(sources.contains(span));
    }
    added > 0 && backed as f64 >= GROUNDED * added as f64
}

/// The Snowball (Porter 2) stems of the topical words of `text`.
fn stems(text: &str) -> HashSet<String> {
    static ENGLISH: LazyLock<rust_stemmers::Stemmer> =
        LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !crate::index::query::is_everyday(w))
        .map(|w| ENGLISH.stem(&w).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_the_docs_do_not_hold_is_unsupported() {
        let docs = "Refunds are possible within 14 days. The token expires after one hour. Fees: 1,000 EUR or 2.5%.";
        let cases: &[(&str, &[&str])] = &[
            ("The window is 14 days [docs/refunds.md#window].", &[]),
            ("The window is 30 days [1].", &["30"]),
            ("It is good for 1 hour. Source: [1]", &[]),
            ("Fees are 1000 EUR or 2.5% [docs/fees.md].", &[]),
            ("1. Open it.\n2. Click Refund.", &[]),
            ("It lasts 24 hours, or 24 hours at most.", &["24"]),
            ("See [docs/2024-notes.md#v3] and https://x.example/7", &[]),
            ("Your order 4417 was refunded", &[]),
        ];
        for (answer, expected) in cases {
            assert_eq!(unsupported_numbers(answer, docs, "why was order 4417 refunded?"), *expected, "{answer}");
        }
    }

    #[test]
    fn an_answer_is_grounded_when_its_own_words_are_the_evidences() {
        let evidence =
            "Refunds are possible within 14 days of the first payment. Annual plans are refunded `pro rata`.";
        let cases: &[(&str, &str, bool)] = &[
            ("how long is the refund window", "Refunds are possible within 14 days of the first payment [1].", true),
            ("are annual plans refunded", "Yes, annual plans are refunded pro rata. Source: [1]", true),
            (
                "can Polar send a text message when a payment fails",
                "Yes, Polar can send a text message when a payment fails. Source: [1]",
                false,
            ),
            ("does it support helm", "Yes, it supports Helm charts through the Kubernetes operator [1].", false),
            ("how long is the refund window", "Source: [1]", false),
            // The fact it adds is a number, in the question's words.
            ("how many days is the refund window", "The refund window is 14 days [1].", true),
            ("how many days is the refund window", "The refund window is 30 days [1].", false),
            // Or a code span the evidence holds.
            ("which option refunds annual plans", "Pass `pro rata` as the option [1].", true),
            ("which option refunds annual plans", "Pass `full_refund` as the option [1].", false),
        ];
        for (question, answer, expected) in cases {
            assert_eq!(grounded(answer, question, evidence), *expected, "{answer}");
        }
    }

    #[test]
    fn a_citation_alone_is_no_answer() {
        for answer in ["Source: [1]", "[docs/refunds.md#window]", "Sources: [1] [2].", " see [1]"] {
            assert!(bare(answer), "{answer}");
        }
        for answer in ["14 days [1]", "Yes. Source: [1]"] {
            assert!(!bare(answer), "{answer}");
        }
    }
}
