//! Turns free text into an FTS5 query that cannot fail: every word becomes a quoted term, joined
//! with OR, so quotes, `*`, `:`, `NEAR`, `AND`/`OR`, parentheses and huge questions are just words.

/// At most this many distinct terms are searched (a 35 KB question becomes its first terms).
pub const MAX_TERMS: usize = 32;
/// Longer "words" are cut to this many characters.
const MAX_TERM_CHARS: usize = 64;

/// Words too common to help ranking; dropped unless the question has nothing else.
const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "if",
    "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "should", "so", "that", "the", "their", "there",
    "this", "to", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
];

/// Function words beyond [`STOPWORDS`]: they rank nothing, and a question's weight should not
/// rest on them (a small docs set may not hold "many" at all, which would make it look rare).
/// Evidence leaves them out when it weighs a question.
const FUNCTION_WORDS: &[&str] = &[
    "all", "also", "am", "any", "been", "being", "both", "but", "could", "did", "doing", "done", "each", "either",
    "etc", "even", "every", "get", "gets", "got", "had", "has", "have", "having", "he", "hello", "her", "here", "hi",
    "him", "his", "into", "just", "let", "lets", "like", "many", "more", "most", "much", "must", "need", "needs", "no",
    "not", "now", "one", "only", "other", "please", "same", "she", "since", "some", "still", "such", "than", "thank",
    "thanks", "then", "them", "these", "they", "those", "too", "us", "very", "want", "wants", "way", "were", "would",
    "yes", "yet",
];

/// True for a word that carries no topic: a stopword or a function word.
pub fn is_function_word(word: &str) -> bool {
    STOPWORDS.contains(&word) || FUNCTION_WORDS.contains(&word)
}

/// Everyday English (Stopwords ISO's English list): words that say nothing of a question's
/// topic, however rare they are in the docs.
static EVERYDAY: std::sync::LazyLock<std::collections::HashSet<&'static str>> =
    std::sync::LazyLock::new(|| stop_words::get(stop_words::Language::English).iter().copied().collect());

/// True for a word of everyday English ("long", "happens", "help"): its absence from the docs
/// is no sign that they do not cover a question.
pub fn is_everyday(word: &str) -> bool {
    EVERYDAY.contains(word)
}

/// An ASCII word, as names are written: a letter, then letters and digits.
pub static ASCII_WORD: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"[A-Za-z][A-Za-z0-9]*").expect("constant regex ASCII_WORD"));

/// True for a word written like a name: not everyday English, and capitalised where no
/// sentence starts, or with a capital or a digit after its first letter ("PayPal", "SOC"). A name the docs never use is a subject they do not cover; an everyday word they never
/// use is only the asker's own phrasing.
pub fn looks_named(word: &str, sentence_start: bool) -> bool {
    if word.len() < 2 || is_everyday(&word.to_ascii_lowercase()) {
        return false;
    }
    let inner = word.chars().skip(1).any(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
    inner || (capital && !sentence_start)
}

/// True when the word at byte `at` of `text` starts a sentence, a line or a list item: nothing
/// but quotes, brackets, emphasis and list marks since the start of the text, the end of a
/// sentence (`.`, `!`, `?`, `:`) or a line.
pub fn starts_sentence(text: &str, at: usize) -> bool {
    for c in text[..at].chars().rev() {
        match c {
            '\n' | '.' | '!' | '?' | ':' | '>' | '#' => return true,
            '"' | '\'' | '“' | '‘' | '(' | '[' | '_' | '*' | '-' | '•' => continue,
            c if c.is_whitespace() => continue,
            _ => return false,
        }
    }
    true
}

/// The words of `text` written like names ([`looks_named`]), lower-cased. In a text written all
/// in capitals or in Title Case (over 85% of its words capitalised), a capital says nothing: only a
/// word with a capital after a lower-case letter ("PayPal", "iPhone"), or one all in capitals in a
/// text that is not ("SOC"), is a name there. Names are ASCII
/// words; a `[REDACTED]` marker is none.
pub fn named(text: &str) -> std::collections::HashSet<String> {
    let text = text.replace(crate::guard::redact::REDACTED, " ");
    let words: Vec<regex::Match<'_>> = ASCII_WORD.find_iter(&text).collect();
    let capitalised = words.iter().filter(|w| w.as_str().starts_with(|c: char| c.is_ascii_uppercase())).count();
    let shouting = words.len() > 2 && capitalised * 20 > words.len() * 17;
    let lower = text.chars().any(|c| c.is_ascii_lowercase());
    words
        .into_iter()
        .filter(|w| {
            let word = w.as_str();
            if shouting {
                let mixed = word.chars().skip_while(|c| !c.is_ascii_lowercase()).any(|c| c.is_ascii_uppercase());
                let acronym = lower && word.len() > 1 && word.chars().all(|c| !c.is_ascii_lowercase());
                (mixed || acronym) && !is_everyday(&word.to_ascii_lowercase())
            } else {
                looks_named(word, starts_sentence(&text, w.start()))
            }
        })
        .map(|w| w.as_str().to_ascii_lowercase())
        .collect()
}

/// The words of `text`, lower-cased, de-duplicated, in order, without stopwords when possible.
/// A `[REDACTED]` marker is not a word: it stands for a secret, and would match every redacted
/// section of the docs.
pub fn terms(text: &str) -> Vec<String> {
    let text = text.replace(crate::guard::redact::REDACTED, " ");
    let mut all: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word: String = word.chars().take(MAX_TERM_CHARS).flat_map(char::to_lowercase).collect();
        if !all.contains(&word) {
            all.push(word);
        }
        if all.len() >= MAX_TERMS * 4 {
            break;
        }
    }
    let content: Vec<String> = all.iter().filter(|w| !STOPWORDS.contains(&w.as_str())).cloned().collect();
    let mut chosen = if content.is_empty() { all } else { content };
    chosen.truncate(MAX_TERMS);
    chosen
}

/// The content words of `text` as a set: lower case, without stopwords, a plural's `s` dropped
/// (`refunds` and `refund` are one word). What grouping alike questions and finding the lines an
/// answer draws on compare.
pub fn stems(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
            _ => w,
        })
        .collect()
}

/// At most this many identifiers of a question are searched as phrases.
pub const MAX_IDENTIFIERS: usize = 8;
/// A longer run of joined words is not a name (`a.b.c.d.e.f.g…`), and is not a phrase.
const MAX_IDENTIFIER_WORDS: usize = 6;

/// The identifiers of `text`, each as its words: a run of letters and digits joined by `_`,
/// `.`, `/` or `:` (`proration_behavior`, `invoice.paid`, `G/L`), or by `-` with a digit or in
/// a chain of three (`30-day`, `dry-run-mode`; not `year-end`), which the index splits into
/// words at those marks. Searched as phrases, they rank the section that
/// names the identifier above one that holds its words apart.
pub fn identifiers(text: &str) -> Vec<Vec<String>> {
    let text = text.replace(crate::guard::redact::REDACTED, " ");
    let mut found: Vec<Vec<String>> = Vec::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || JOINERS.contains(&c))) {
        let words: Vec<String> = token
            .split(|c: char| JOINERS.contains(&c))
            .filter(|w| !w.is_empty())
            .map(|w| w.chars().take(MAX_TERM_CHARS).flat_map(char::to_lowercase).collect())
            .collect();
        // A hyphen also joins English compounds ("year-end"): only with a digit ("30-day") or
        // in a longer chain ("--dry-run-all") is it taken as one name.
        let only_hyphens = !token.contains(|c: char| JOINERS.contains(&c) && c != '-');
        let compound = only_hyphens && words.len() < 3 && !token.contains(|c: char| c.is_ascii_digit());
        if (2..=MAX_IDENTIFIER_WORDS).contains(&words.len()) && !compound && !found.contains(&words) {
            found.push(words);
        }
        if found.len() >= MAX_IDENTIFIERS {
            break;
        }
    }
    found
}

/// What joins the words of an identifier.
const JOINERS: [char; 5] = ['_', '.', '-', '/', ':'];

/// The FTS5 MATCH expression for the words of `text` (no identifier phrases), or `None` when
/// it has no words at all.
pub fn to_fts_query(text: &str) -> Option<String> {
    with_phrases(&terms(text), &[])
}

/// The FTS5 MATCH expression for terms made by [`terms`], each quoted, and each identifier
/// (from [`identifiers`]) as a phrase of its words, all joined with OR.
pub fn with_phrases(terms: &[String], identifiers: &[Vec<String>]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    // Terms hold only alphanumeric characters, so quoting them needs no escaping; a phrase is
    // its words, quoted together.
    let phrases = identifiers.iter().map(|words| words.join(" "));
    Some(terms.iter().cloned().chain(phrases).map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_told_from_everyday_words_by_how_they_are_written() {
        let cases: &[(&str, &[&str])] = &[
            ("Does Acme sync with Salesforce?", &["acme", "salesforce"]),
            ("Is PayPal available at checkout", &["paypal"]),
            ("Is Acme Billing SOC 2 certified", &["acme", "billing", "soc"]),
            ("does it support kubernetes helm", &[]),
            ("Will leftover credit lapse at some point?", &[]),
            ("Refunds. Chargebacks are next", &[]),
            ("- Shopify is listed", &[]),
            ("we use GA4 and iPhone apps", &["ga4", "iphone"]),
            ("Can I see The report", &[]),
            ("HOW DO I PAY YEARLY", &[]),
            ("Can I Pay Yearly With Salesforce?", &[]),
            ("How Do I Pay With PayPal", &["paypal"]),
            ("How Do I Get The SOC Report", &["soc"]),
            ("How Do I Claw Back a Charge", &[]),
            ("we sync it, Salesforce says: Stripe too", &["salesforce"]),
            ("is [REDACTED] valid", &[]),
            ("Salesforce sync: how?", &[]),
        ];
        for (text, expected) in cases {
            let mut got: Vec<String> = named(text).into_iter().collect();
            got.sort();
            let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn free_text_becomes_quoted_terms() {
        let cases: &[(&str, Option<&str>)] = &[
            ("how long is the refund window", Some("\"long\" OR \"refund\" OR \"window\"")),
            ("", None),
            ("   ?!", None),
            ("is token [REDACTED] valid", Some("\"token\" OR \"valid\"")),
            ("[REDACTED]", None),
            ("the is a", Some("\"the\" OR \"is\" OR \"a\"")),
            (
                "\"refund\" AND (window OR NEAR(x y)) col:val *",
                Some("\"refund\" OR \"window\" OR \"near\" OR \"x\" OR \"y\" OR \"col\" OR \"val\""),
            ),
            ("Rückerstattung ÉTÉ", Some("\"rückerstattung\" OR \"été\"")),
        ];
        for (input, expected) in cases {
            assert_eq!(to_fts_query(input).as_deref(), *expected, "input {input:?}");
        }
    }

    #[test]
    fn identifiers_become_phrases_beside_their_words() {
        let question =
            "Why does proration_behavior ignore invoice.paid for a 30-day G/L plan at year-end? (402) a.b_c-d";
        let found = identifiers(question);
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(
            found,
            vec![
                words(&["proration", "behavior"]),
                words(&["invoice", "paid"]),
                words(&["30", "day"]),
                words(&["g", "l"]),
                words(&["a", "b", "c", "d"]),
            ]
        );
        let fts = with_phrases(&words(&["proration", "behavior"]), &found[..1]);
        assert_eq!(fts.as_deref(), Some("\"proration\" OR \"behavior\" OR \"proration behavior\""));
        assert!(identifiers("plain words only, and a sentence. Then more").is_empty(), "a full stop joins nothing");
    }

    #[test]
    fn phrases_stay_bounded_however_the_question_is_joined() {
        let joined: String = (0..20_000).map(|i| format!("w{i}.")).collect();
        assert!(identifiers(&joined).is_empty(), "one run of 20,000 words is no name");
        let many: String = (0..5_000).map(|i| format!("a{i}_b{i} ")).collect();
        let found = identifiers(&many);
        assert_eq!(found.len(), MAX_IDENTIFIERS);
        let fts = with_phrases(&terms(&many), &found).expect("an expression");
        assert!(fts.len() < 2_000, "{} bytes", fts.len());
    }

    #[test]
    fn huge_question_is_bounded() {
        let question: String = (0..10_000).map(|i| format!("word{i} ")).collect();
        assert!(question.len() > 35_000);
        assert_eq!(terms(&question).len(), MAX_TERMS);
    }
}
