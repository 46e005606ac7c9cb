//! The catalog of secret formats, one file per kind of provider.
//!
//! Each rule names the keywords its matches hold (see [`super::engine`]) and has samples: text
//! it must redact, with the secret marked `⟦…⟧`, and a near miss it must leave alone. The
//! samples sit next to their rules and are run by `super::tests`.
//!
//! Provider prefixes are distinctive enough to match with no word boundary in front, so a key
//! pasted right after other text still goes; rules whose prefix can sit inside ordinary words
//! check that the body after the prefix looks random.

use super::check::Check;
use super::engine::{Rule, Scope};

/// Keys whose value is a secret in a `key = value` or `key: value` assignment.
/// The key may be longer on the left (`DB_PASSWORD`, `x-api-key`), never on the right.
macro_rules! assignment_key {
    () => {
        r#"(?i:api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|secret|password|passwd|pwd|token|private[_-]?key|[_.-]pass)\\?["'`]?[ \t]*(?::=|=>|[:=])[ \t]*"#
    };
}

/// A double-quoted value read through its escapes, whose characters are any but `"`, `\` and
/// `$excluded` (the inside of a character class: `\s`, `\n`), `$count` of them: written plainly,
/// `"a\"b\\c"` (the second group: an escape is one character, so an escaped quote or backslash
/// does not end the value), or inside another string, `\"a\\\"b\\\\c\"` (the first group: its
/// escapes are doubled). The first group that takes part is the value. Without this, a
/// backslash in a quoted secret hid it whole and an escaped quote kept its tail (issue 51,
/// finding 7).
macro_rules! quoted_escaped {
    ($excluded:literal, $count:literal) => {
        concat!(
            r#"(?:\\"((?:[^"\\"#,
            $excluded,
            r#"]|\\\\\\\\|\\\\\\"|\\\\[^"\\"#,
            $excluded,
            r#"])"#,
            $count,
            r#")\\""#,
            r#"|"((?:[^"\\"#,
            $excluded,
            r#"]|\\[^"#,
            $excluded,
            r#"])"#,
            $count,
            r#")")"#
        )
    };
}

/// A value assigned to a key that names a provider: `$name`, up to 30 more key characters,
/// an assignment operator, an optional quote, then `$value` as the secret (group 1), ended by
/// a character that cannot continue it. For providers whose keys have no prefix of their own
/// (`HEROKU_API_KEY=<uuid>`), as gitleaks writes them.
macro_rules! keyed {
    ($name:literal, $value:literal) => {
        concat!(
            "(?i:",
            $name,
            r#")(?i:[0-9a-z_.-]{0,30})["'`]?[ \t]{0,5}(?::=|=>|\|\|:|\?=|[:=])[ \t]{0,5}["'`]?("#,
            $value,
            r#")(?:[^0-9A-Za-z_+/=-]|\z)"#
        )
    };
}

mod cloud;
mod data;
mod devtools;
mod generic;
mod messaging;
mod ml;
mod payment;
mod registries;
mod secrets;

/// Every rule of the catalog.
pub(super) fn all() -> Vec<&'static Rule> {
    [
        cloud::RULES,
        data::RULES,
        devtools::RULES,
        generic::RULES,
        messaging::RULES,
        ml::RULES,
        payment::RULES,
        registries::RULES,
        secrets::RULES,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A rule with its parts in order, to keep the tables short. It runs on the lines that hold
/// its keywords.
const fn rule(name: &'static str, keywords: &'static [&'static str], pattern: &'static str, check: Check) -> Rule {
    Rule { name, keywords, pattern, check, scope: Scope::Lines { extra: 0 } }
}

impl Rule {
    /// The rule, run on the whole text: its matches span lines or do not hold its keyword.
    const fn in_text(self) -> Rule {
        Rule { scope: Scope::Text, ..self }
    }

    /// The rule, run on its keywords' lines and the next one.
    const fn with_next_line(self) -> Rule {
        Rule { scope: Scope::Lines { extra: 1 }, ..self }
    }
}

/// A sample for a rule's tests: text the rule must redact (`⟦…⟧` marks each secret, and the
/// rest must come back as it was), or a near miss that must come back untouched.
#[cfg(test)]
pub(super) struct Sample {
    /// The rule the sample is for.
    pub(super) rule: &'static str,
    /// The text, with the secret marked when it is a hit.
    pub(super) text: &'static str,
    /// True for text to redact, false for a near miss.
    pub(super) hit: bool,
}

/// Text that `rule` must redact, with its secrets marked `⟦…⟧`.
#[cfg(test)]
const fn hit(rule: &'static str, text: &'static str) -> Sample {
    Sample { rule, text, hit: true }
}

/// A near miss for `rule`: nothing in it may be redacted.
#[cfg(test)]
const fn miss(rule: &'static str, text: &'static str) -> Sample {
    Sample { rule, text, hit: false }
}

/// Every sample of the catalog.
#[cfg(test)]
pub(super) fn samples() -> Vec<&'static Sample> {
    [
        cloud::SAMPLES,
        data::SAMPLES,
        devtools::SAMPLES,
        generic::SAMPLES,
        messaging::SAMPLES,
        ml::SAMPLES,
        payment::SAMPLES,
        registries::SAMPLES,
        secrets::SAMPLES,
    ]
    .into_iter()
    .flatten()
    .collect()
}
