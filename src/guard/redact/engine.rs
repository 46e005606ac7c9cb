//! The rule engine: a keyword prefilter finds which rules can match, and only their regexes run.
//!
//! Every rule names keywords, one of which each of its matches holds (a provider prefix such as
//! `npm_`, or the key of an assignment such as `password`). One Aho-Corasick pass over the text
//! finds every keyword it holds, case-insensitively; the rules of those keywords then run their
//! own regex, compiled the first time it is needed. Ordinary text holds few keywords, so most
//! of the two hundred rules never run and most are never even compiled.
//!
//! Invariant: a rule runs on every text that holds one of its keywords (the keyword table is
//! built from the rules, and the tests check each rule's samples through [`super::redact`]).

use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;

use super::check::Check;

/// One named secret format.
pub(super) struct Rule {
    /// Stable name, used in tests and in messages when a pattern fails to compile.
    pub(super) name: &'static str,
    /// Lowercase strings, one of which every match of the pattern holds (ASCII case is ignored
    /// when they are looked for). The rule runs only on texts that hold one.
    pub(super) keywords: &'static [&'static str],
    /// The pattern. Only the part to redact is in capture groups: the first unnamed group that
    /// took part in the match is redacted, or the whole match when there is none. A group
    /// named `b` (the body after a provider prefix) is what the check looks at, when there is
    /// one.
    pub(super) pattern: &'static str,
    /// What must hold besides the pattern matching.
    pub(super) check: Check,
    /// Where in a text the regex runs.
    pub(super) scope: Scope,
}

/// Where a rule's regex runs: only near its keywords when its matches hold them, which keeps
/// the generic rules (whose keywords, such as `key`, are in most docs) from scanning every line.
#[derive(Clone, Copy, Debug)]
pub(super) enum Scope {
    /// The lines that hold one of the rule's keywords, each with `extra` lines after it (for a
    /// value on the next line). Every match of the rule lies on such lines.
    Lines {
        /// Lines after the keyword's line that a match may reach into.
        extra: usize,
    },
    /// The whole text: a match spans lines, or the keyword sits elsewhere in the document (a
    /// manifest's `kind: Secret`).
    Text,
}

/// The rules with their keyword automaton and their lazily compiled regexes.
struct Engine {
    /// Every rule, in the order of [`super::rules::all`].
    rules: Vec<&'static Rule>,
    /// One probe per rule: its pattern with long runs left open, which compiles small and
    /// answers "is there a candidate here" fast; compiled the first time a text holds one of
    /// the rule's keywords.
    probes: Vec<OnceLock<Regex>>,
    /// One regex per rule, with every run bounded ([`bounded`]) and capture groups, compiled
    /// the first time its probe finds a candidate: ordinary text never pays for it.
    regexes: Vec<OnceLock<Regex>>,
    /// Every distinct keyword, found in one pass, ASCII case ignored.
    keywords: AhoCorasick,
    /// For each keyword of [`Engine::keywords`], the rules that name it.
    owners: Vec<Vec<usize>>,
}

static ENGINE: LazyLock<Engine> = LazyLock::new(build);

/// Builds the engine from [`super::rules::all`]. The keywords are constants of the rule files
/// (a unit test builds them), so a failure is a bug here, not bad input.
fn build() -> Engine {
    let rules = super::rules::all();
    let mut words: Vec<&'static str> = Vec::new();
    let mut owners: Vec<Vec<usize>> = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        for &word in rule.keywords {
            match words.iter().position(|known| *known == word) {
                Some(at) => owners[at].push(index),
                None => {
                    words.push(word);
                    owners.push(vec![index]);
                }
            }
        }
    }
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(&words)
        .expect("the redaction keywords are constants that a unit test builds");
    Engine {
        probes: rules.iter().map(|_| OnceLock::new()).collect(),
        regexes: rules.iter().map(|_| OnceLock::new()).collect(),
        rules,
        keywords,
        owners,
    }
}

/// Appends to `out` the spans of every secret the rules find in `text` (unsorted, possibly
/// overlapping).
pub(super) fn secret_spans(text: &str, out: &mut Vec<Range<usize>>) {
    let engine = &*ENGINE;
    for (index, windows) in engine.plan(text) {
        let (Some(rule), Some(probe), Some(slot)) =
            (engine.rules.get(index), engine.probes.get(index), engine.regexes.get(index))
        else {
            continue;
        };
        let probe = rule_probe(probe, rule);
        for window in windows {
            let candidate = text.get(..window.end).is_some_and(|head| probe.is_match_at(head, window.start));
            if candidate {
                rule_spans(rule, rule_regex(slot, rule), text, window, out);
            }
        }
    }
}

impl Engine {
    /// The rules that name a keyword `text` holds, in order, each with the sorted, disjoint
    /// stretches of `text` its regex must search (see [`Scope`]).
    fn plan(&self, text: &str) -> Vec<(usize, Vec<Range<usize>>)> {
        // Every (rule, keyword hit) pair, then grouped by rule: memory in proportion to the hits,
        // so a short text (a tool result, a glued line break) costs next to nothing.
        let mut pairs: Vec<(usize, Range<usize>)> = Vec::new();
        for found in self.keywords.find_overlapping_iter(text) {
            let owners = self.owners.get(found.pattern().as_usize()).map_or(&[][..], Vec::as_slice);
            pairs.extend(owners.iter().map(|&rule| (rule, found.range())));
        }
        pairs.sort_unstable_by_key(|(rule, hit)| (*rule, hit.start));
        let mut plan = Vec::new();
        for group in pairs.chunk_by(|a, b| a.0 == b.0) {
            let Some(&(index, _)) = group.first() else {
                continue;
            };
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            let windows = match rule.scope {
                Scope::Text => std::iter::once(0..text.len()).collect(),
                Scope::Lines { extra } => {
                    let hits: Vec<Range<usize>> = group.iter().map(|(_, hit)| hit.clone()).collect();
                    line_windows(text, &hits, extra)
                }
            };
            plan.push((index, windows));
        }
        plan
    }
}

/// The lines of `text` that hold the sorted `hits`, each with `extra` lines after it, as
/// sorted, disjoint stretches. A stretch starts at the line break before its line (a pattern
/// may read it, as `(?:^|\s)` does) and ends after the last line's break. Each line is
/// looked for once, however many hits it holds.
fn line_windows(text: &str, hits: &[Range<usize>], extra: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut windows: Vec<Range<usize>> = Vec::new();
    for hit in hits {
        if windows.last().is_some_and(|last| hit.end <= last.end) {
            continue;
        }
        let floor = windows.last().map_or(0, |last| last.end);
        let from = hit.start.max(floor);
        let start = bytes
            .get(floor..from)
            .and_then(|head| head.iter().rposition(|&b| b == b'\n'))
            .map_or(floor, |at| floor + at);
        let mut end = hit.end;
        for _ in 0..=extra {
            end = bytes
                .get(end..)
                .and_then(|tail| tail.iter().position(|&b| b == b'\n'))
                .map_or(text.len(), |at| end + at + 1);
        }
        match windows.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => windows.push(start..end),
        }
    }
    windows
}

/// Longest run a rule's regex takes for an open-ended repetition (`{6,}` becomes `{6,256}`).
/// The regex runs again after a candidate fails its check, so an open repetition made
/// redaction quadratic on long lines; bounded, each retry costs at most this much, and
/// [`extend_capped`] redacts a secret that ran into the bound to its end.
const RULE_RUN_CAP: &str = "256";

/// `pattern` with every open-ended counted repetition bounded by [`RULE_RUN_CAP`].
fn bounded(pattern: &str) -> String {
    static OPEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{([0-9]+),\}").expect("constant regex OPEN"));
    OPEN.replace_all(pattern, format!("{{${{1}},{RULE_RUN_CAP}}}").as_str()).into_owned()
}

/// `pattern` with every long counted repetition left open (`{1,200}` becomes `{1,}`): a probe
/// that matches wherever the pattern does, and compiles small (a bounded run of a negated
/// class is hundreds of copies of a large automaton).
fn open(pattern: &str) -> String {
    static LONG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\{([0-9]+),([0-9]{3,}|[2-9][0-9])\}").expect("constant regex LONG"));
    LONG.replace_all(pattern, "{${1},}").into_owned()
}

/// The probe of `rule`, compiled on first use.
fn rule_probe<'a>(slot: &'a OnceLock<Regex>, rule: &Rule) -> &'a Regex {
    slot.get_or_init(|| {
        Regex::new(&open(rule.pattern))
            .unwrap_or_else(|err| panic!("redaction rule {} does not compile as a probe: {err}", rule.name))
    })
}

/// The regex of `rule`, compiled on first use.
fn rule_regex<'a>(slot: &'a OnceLock<Regex>, rule: &Rule) -> &'a Regex {
    slot.get_or_init(|| {
        Regex::new(&bounded(rule.pattern))
            .unwrap_or_else(|err| panic!("redaction rule {} does not compile: {err}", rule.name))
    })
}

/// Appends to `out` the spans that `rule` finds in the `window` of `text` (the text before
/// it still counts for `\b` and `^`). A candidate that fails the rule's check does not hide a
/// later one that starts inside it.
fn rule_spans(rule: &Rule, regex: &Regex, text: &str, window: Range<usize>, out: &mut Vec<Range<usize>>) {
    let Some(haystack) = text.get(..window.end) else {
        return;
    };
    let mut at = window.start;
    while at <= haystack.len() {
        let Some(caps) = regex.captures_at(haystack, at) else {
            break;
        };
        let Some(whole) = caps.get(0) else {
            break;
        };
        let target = regex
            .capture_names()
            .zip(caps.iter())
            .skip(1)
            .find_map(|(name, group)| if name == Some("b") { None } else { group })
            .unwrap_or(whole);
        let checked = caps.name("b").unwrap_or(target);
        // A body of one character repeated (`ghp_xxxx…`, `AKIAXXXX…`) is a placeholder.
        let filler = caps.name("b").is_some_and(|body| super::check::is_filler(body.as_str()));
        let accepted = (!filler).then(|| rule.check.accept(text, checked.range())).flatten().map(|checked_span| {
            // A check may trim the value it looked at (a trailing `,`); the redaction follows.
            if checked == target { checked_span } else { target.range() }
        });
        let first_char = text.get(whole.start()..).and_then(|rest| rest.chars().next());
        let next_char = whole.start() + first_char.map_or(1, char::len_utf8);
        at = match accepted {
            Some(span) => {
                out.push(extend_capped(text, span));
                whole.end().max(next_char)
            }
            None => next_char,
        };
    }
}

/// A secret that ran into [`RULE_RUN_CAP`] is redacted to the end of its run of token
/// characters, so no tail of it stays visible.
fn extend_capped(text: &str, span: Range<usize>) -> Range<usize> {
    if span.len() < 250 {
        return span;
    }
    let rest = text.as_bytes().get(span.end..).unwrap_or_default();
    let more = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.' | b'~'))
        .count();
    span.start..span.end + more
}

/// The names of the rules that find a secret in `text`, run directly (no prefilter): for the
/// tests, which check each rule on its own samples.
#[cfg(test)]
pub(super) fn rules_firing(text: &str) -> Vec<&'static str> {
    let engine = &*ENGINE;
    let mut names = Vec::new();
    for (rule, slot) in engine.rules.iter().zip(&engine.regexes) {
        let mut spans = Vec::new();
        rule_spans(rule, rule_regex(slot, rule), text, 0..text.len(), &mut spans);
        if !spans.is_empty() {
            names.push(rule.name);
        }
    }
    names
}

/// Every rule's name and whether its regex compiles to the bounded form of its pattern and
/// its keywords are lowercase: for the tests.
#[cfg(test)]
pub(super) fn check_rules() -> Vec<&'static str> {
    let engine = &*ENGINE;
    for (rule, slot) in engine.rules.iter().zip(&engine.regexes) {
        assert_eq!(rule_regex(slot, rule).as_str(), bounded(rule.pattern), "{}", rule.name);
        let _ = Regex::new(&open(rule.pattern)).unwrap_or_else(|e| panic!("probe of {}: {e}", rule.name));
        assert!(!rule.keywords.is_empty(), "rule {} has no keyword", rule.name);
        for word in rule.keywords {
            assert_eq!(*word, word.to_ascii_lowercase(), "rule {}: keywords are lowercase", rule.name);
        }
    }
    engine.rules.iter().map(|rule| rule.name).collect()
}

/// Whether `rule`'s keyword prefilter lets it run on `text`: for the tests.
#[cfg(test)]
pub(super) fn prefilter_admits(rule_name: &str, text: &str) -> bool {
    let engine = &*ENGINE;
    engine.plan(text).iter().any(|(index, _)| engine.rules.get(*index).is_some_and(|rule| rule.name == rule_name))
}
