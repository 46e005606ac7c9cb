//! Text that leaves the process for another server (the embedding server, the reranker): the
//! one guard each such path applies to every text it sends, a question or a section alike.
//! It is scrubbed ([`super::scrub`]: escapes and invisible characters out, secrets redacted),
//! then the operator's own patterns (`[hooks.post_tool] redact`) are applied, so what a tool
//! result would hide is not sent elsewhere with its section (issue 51, findings 8 and 9).

use std::borrow::Cow;
use std::sync::Arc;

use regex::Regex;

/// The marker the operator's patterns leave.
pub const HOOK_MARKER: &str = "[REDACTED:hook]";

/// The guard on text sent to another server, and the operator's patterns it applies (which the
/// hooks apply to tool results too). The default applies the built-in redaction alone.
#[derive(Clone, Default)]
pub struct Outbound {
    /// The operator's extra patterns, compiled once (`hooks::Hooks::compile`).
    patterns: Arc<[Regex]>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Outbound({} pattern(s))", self.patterns.len())
    }
}

impl Outbound {
    /// The guard with the operator's `patterns`.
    pub fn new(patterns: Vec<Regex>) -> Outbound {
        Outbound { patterns: patterns.into() }
    }

    /// The operator's patterns, in the order they were given.
    pub fn patterns(&self) -> &[Regex] {
        &self.patterns
    }

    /// `text` as it may be sent.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.patterns_applied(super::scrub(text))
    }

    /// `text` with the operator's patterns applied alone (nothing else scrubbed).
    pub fn patterns_applied<'t>(&self, mut text: Cow<'t, str>) -> Cow<'t, str> {
        for regex in self.patterns.iter() {
            if regex.is_match(&text) {
                text = Cow::Owned(regex.replace_all(&text, HOOK_MARKER).into_owned());
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_the_operators_patterns_are_taken_out() {
        let guard = Outbound::new(vec![Regex::new("ACME-[0-9]{6}").expect("a pattern")]);
        let sent = guard.text("ticket ACME-112233, key AKIAIOSFODNN7EXAMPLE,\u{1b}[2J done");
        assert_eq!(sent, "ticket [REDACTED:hook], key [REDACTED], done");
        assert!(matches!(guard.text("plain words"), Cow::Borrowed("plain words")));
        assert_eq!(Outbound::default().text("ticket ACME-112233"), "ticket ACME-112233");
    }
}
