//! The redactor as it was before the rule catalog (commit 1c0d9fe, `src/guard/redact.rs`, its
//! tests left out): the baseline that `cargo bench --bench redaction` times the current one
//! against, in the same run. Frozen: do not change it, except to keep it compiling.
#![allow(dead_code, clippy::all, missing_docs)]

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use regex::{Regex, RegexSet};

#[path = "baseline_joined.rs"]
mod joined;

/// The marker that replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Appended by [`redact_truncated`] when it had to cut the text.
const TRUNCATED: &str = "…[truncated]";

/// How many extra passes [`redact`] makes to reach a fixed point (a redaction can
/// turn the byte before a second secret into a word boundary that lets a rule fire).
const MAX_EXTRA_PASSES: usize = 3;

/// How a rule decides that a match of its pattern really is a secret.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// The pattern alone is precise enough.
    Always,
    /// The match looks random (a digit, or upper and lower case), unlike words
    /// glued by hyphens such as `desk-test-environment`.
    Random,
    /// The value is redacted unless it is a placeholder such as `<password>` or `${TOKEN}`.
    NotPlaceholder,
    /// A bearer-style token: 16+ token chars, or 6+ with a digit; not a placeholder
    /// such as `YOUR_ACCESS_TOKEN` nor code such as `process.env.TOKEN`.
    TokenLike,
    /// An unquoted `key = value` value; see [`bare_value_span`] for the heuristic.
    BareAssignment,
    /// Base64 that decodes to printable `user:password`.
    BasicCredentials,
    /// Not part of a `[REDACTED]` marker.
    NotMarker,
}

/// One named secret format.
struct Rule {
    /// Stable name, used in tests and in messages when a pattern fails to compile.
    name: &'static str,
    /// The pattern. Only the part to redact is in capture groups: the first group
    /// that took part in the match is redacted, or the whole match when there is none.
    pattern: &'static str,
    /// What must hold besides the pattern matching.
    check: Check,
}

/// Keys whose value is a secret in a `key = value` or `key: value` assignment.
/// The key may be longer on the left (`DB_PASSWORD`, `x-api-key`), never on the right.
macro_rules! assignment_key {
    () => {
        r#"(?i:api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|secret|password|passwd|pwd|token|private[_-]?key)["'`]?[ \t]*(?::=|=>|[:=])[ \t]*"#
    };
}

/// Every rule, in no particular order: overlapping findings are merged.
///
/// Provider prefixes are distinctive enough to match with no word boundary in
/// front, so a key pasted right after other text still goes; the rules whose
/// prefix can sit inside hyphenated words (`desk-test-…`) also ask for a
/// random-looking match.
const RULES: &[Rule] = &[
    Rule {
        name: "aws-access-key-id",
        pattern: r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16,}",
        check: Check::Always,
    },
    Rule {
        name: "aws-secret-access-key",
        pattern: r#"(?i:aws[_-]?secret[_-]?(?:access[_-]?)?key)["'`]?[ \t]*(?::=|=>|[:=])[ \t]*["'`]?([A-Za-z0-9/+=]{40})"#,
        check: Check::Always,
    },
    Rule { name: "github-token", pattern: r"gh[pousr]_[A-Za-z0-9]{36,}", check: Check::Always },
    Rule { name: "github-fine-grained-pat", pattern: r"github_pat_[A-Za-z0-9_]{22,}", check: Check::Always },
    Rule {
        name: "gitlab-token",
        pattern: r"gl(?:pat|dt|rt|ptt|soat|cbt|ffct|imt|oas)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]{1,}){0,8}",
        check: Check::Always,
    },
    Rule { name: "stripe-secret-key", pattern: r"[rs]k[_-](?:live|test)[_-][A-Za-z0-9]{10,}", check: Check::Random },
    Rule { name: "stripe-webhook-secret", pattern: r"whsec_[A-Za-z0-9+/=]{20,}", check: Check::Always },
    Rule { name: "slack-token", pattern: r"(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}", check: Check::Random },
    Rule {
        name: "slack-webhook-url",
        pattern: r"https:\\?/\\?/hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/([A-Za-z0-9+/_\\-]{20,})",
        check: Check::Always,
    },
    Rule { name: "google-api-key", pattern: r"AIza[0-9A-Za-z_-]{35}", check: Check::Always },
    Rule { name: "google-oauth-client-secret", pattern: r"GOCSPX-[A-Za-z0-9_-]{20,}", check: Check::Always },
    Rule { name: "openai-scoped-key", pattern: r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}", check: Check::Random },
    Rule { name: "openai-legacy-key", pattern: r"sk-[A-Za-z0-9]{48,}", check: Check::Random },
    Rule { name: "openai-marked-key", pattern: r"sk-[A-Za-z0-9_-]{4,}T3BlbkFJ[A-Za-z0-9_-]{4,}", check: Check::Always },
    Rule {
        name: "anthropic-key",
        pattern: r"sk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_-]{20,}",
        check: Check::Always,
    },
    Rule {
        name: "polar-token",
        pattern: r"polar_(?:oat|pat|at|rt|whs|cs|cst|mst)_[A-Za-z0-9]{16,}",
        check: Check::Random,
    },
    Rule {
        // A body must follow the header (so a header quoted in prose is left alone);
        // with no END line the rest of the text is the key and goes too.
        name: "pem-private-key",
        pattern: r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\r|\\n)*(?:[A-Za-z-]+:|[A-Za-z0-9+/=]{16})(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        check: Check::Always,
    },
    Rule {
        // A token whose rule matched only its head (the rest was cut off by a link, emphasis or
        // a code span, and maybe joined back) leaves its tail glued to the marker, or behind
        // the markup that cut it: it goes too.
        name: "redaction-tail",
        pattern: r"\[REDACTED\][\[*_`~]{0,3}([A-Za-z0-9_-]{4,})",
        check: Check::NotMarker,
    },
    Rule {
        name: "jwt",
        pattern: r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{0,}",
        check: Check::Always,
    },
    Rule {
        name: "url-password",
        pattern: r"[A-Za-z][A-Za-z0-9+.-]{0,}:\\?/\\?/[^\s:/?#@\[\]\\]{0,}:([^\s/?#@\\]{1,})@",
        check: Check::NotPlaceholder,
    },
    Rule {
        name: "authorization-header",
        pattern: r#"(?i:authorization)["'`]?[ \t]*[:=][ \t]*["'`]?(?i:basic|token|bot|apikey)[ \t]+([A-Za-z0-9._~+/=-]{6,})"#,
        check: Check::TokenLike,
    },
    Rule {
        name: "bearer-token",
        pattern: r"(?-u:\b)(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{6,}=*)",
        check: Check::TokenLike,
    },
    Rule {
        name: "basic-credentials",
        pattern: r"(?-u:\b)(?i:basic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})",
        check: Check::BasicCredentials,
    },
    Rule {
        name: "generic-assignment-quoted",
        pattern: concat!(assignment_key!(), r#"(?:"([^"\s]{6,})"|'([^'\s]{6,})'|`([^`\s]{6,})`)"#),
        check: Check::NotPlaceholder,
    },
    Rule {
        // A passphrase: a quoted value with spaces after a password-like key
        // (`password: "correct horse battery staple"`, `DB_PASSWORD="hunter 2 is my pw"`).
        name: "password-quoted-phrase",
        pattern: r#"(?i:password|passwd|passphrase|pwd)["'`]?[ \t]*(?::=|=>|[:=])[ \t]*(?:"([^"\n]{4,200})"|'([^'\n]{4,200})')"#,
        check: Check::NotPlaceholder,
    },
    Rule {
        // The value on the next, indented line: a YAML block scalar (`password: |`) or a
        // pretty-printed JSON value. A nested key (`password:\n  policy: strict`) is no value.
        name: "generic-assignment-next-line",
        pattern: concat!(
            assignment_key!(),
            r#"(?:[|>][-+]?)?[ \t]*\r?\n[ \t]+(?:"([^"\s]{6,})"|'([^'\s]{6,})'|([^\s"'`&:#]{6,})(?:[ \t]*(?:\r?\n|\z)))"#
        ),
        check: Check::BareAssignment,
    },
    Rule {
        name: "generic-assignment-bare",
        pattern: concat!(assignment_key!(), r#"([^\s"'`&]{6,})"#),
        check: Check::BareAssignment,
    },
];

/// The rules compiled once: the set finds which rules fire, the regexes find where.
struct Compiled {
    /// All rule patterns, tested in one pass over the text.
    set: RegexSet,
    /// One regex per rule, in the order of [`RULES`], compiled the first time the set
    /// reports that rule: clean text never pays for them.
    regexes: Vec<OnceLock<Regex>>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(compile);

/// Compiles the set of [`RULES`]. The patterns are constants of this file (a unit test
/// compiles them all), so a failure is a bug here, not bad input.
fn compile() -> Compiled {
    let set = RegexSet::new(RULES.iter().map(|rule| rule.pattern))
        .expect("the redaction rules are constants that a unit test compiles");
    Compiled { set, regexes: RULES.iter().map(|_| OnceLock::new()).collect() }
}

/// Longest run a rule's own regex takes for an open-ended repetition (`{6,}` becomes
/// `{6,256}`). The set keeps the open form: it only answers "is there a match", and bounded
/// repetitions would make its automaton large and slow. The rule's regex runs again after a
/// candidate fails its check, so an open repetition there made redaction quadratic on long
/// lines; bounded, each retry costs at most this much, and [`extend_capped`] redacts a secret
/// that ran into the bound to its end.
const RULE_RUN_CAP: &str = "256";

/// `pattern` with every open-ended counted repetition bounded by [`RULE_RUN_CAP`].
fn bounded(pattern: &str) -> String {
    static OPEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{(\d+),\}").expect("constant regex OPEN"));
    OPEN.replace_all(pattern, format!("{{${{1}},{RULE_RUN_CAP}}}").as_str()).into_owned()
}

/// The regex of `rule`, compiled on first use.
fn rule_regex<'a>(slot: &'a OnceLock<Regex>, rule: &Rule) -> &'a Regex {
    slot.get_or_init(|| {
        Regex::new(&bounded(rule.pattern))
            .unwrap_or_else(|err| panic!("redaction rule {} does not compile: {err}", rule.name))
    })
}

/// Secrets this process was given (the model server's API key), redacted wherever they appear,
/// whatever their shape: a key with no known format is still a key, and some servers echo it
/// back in their errors.
static KNOWN: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());
/// Shorter values are not remembered: they would redact ordinary words.
const MIN_KNOWN_CHARS: usize = 8;

/// Remembers `secret` (a credential from the configuration), so that [`redact`] replaces it
/// wherever it appears from now on, in this process. Values under 8 characters are ignored.
pub fn remember(secret: &str) {
    let secret = secret.trim();
    if secret.chars().count() < MIN_KNOWN_CHARS {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    if !known.iter().any(|k| k == secret) {
        known.push(secret.to_string());
    }
}

/// Where the remembered secrets are in `text`.
fn known_spans(text: &str) -> Vec<Range<usize>> {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    known.iter().flat_map(|k| text.match_indices(k.as_str()).map(|(at, k)| at..at + k.len())).collect()
}

/// Returns `text` with every secret replaced by REDACTED (Cow::Borrowed when nothing matched).
///
/// Idempotent: redacting the output again changes nothing.
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(mut out) = redact_once(text) else {
        return Cow::Borrowed(text);
    };
    for _ in 0..MAX_EXTRA_PASSES {
        match redact_once(&out) {
            Some(again) => out = again,
            None => break,
        }
    }
    Cow::Owned(out)
}

/// One pass of every rule over `text`; `None` when nothing was redacted.
fn redact_once(text: &str) -> Option<String> {
    let mut spans = secret_spans(text);
    // A secret split by markup is whole in the joined view of its line; its stretch of the
    // text goes, markup included.
    for line in joined::lines_to_view(text) {
        let Some(view) = text.get(line.clone()).and_then(joined::Joined::of) else {
            continue;
        };
        let found = secret_spans(&view.text).into_iter().filter_map(|span| view.original(span));
        spans.extend(found.map(|span| span.start + line.start..span.end + line.start));
    }
    let spans = merge(spans);
    if spans.is_empty() {
        return None;
    }
    let out = splice(text, &spans);
    (out != text).then_some(out)
}

/// The byte ranges of every secret in `text`, unsorted and possibly overlapping.
fn secret_spans(text: &str) -> Vec<Range<usize>> {
    let compiled = &*COMPILED;
    let mut spans = known_spans(text);
    for index in &compiled.set.matches(text) {
        if let (Some(rule), Some(slot)) = (RULES.get(index), compiled.regexes.get(index)) {
            rule_spans(rule, rule_regex(slot, rule), text, &mut spans);
        }
    }
    spans
}

/// Appends to `out` the spans that `rule` finds in `text`. A candidate that fails
/// the rule's check does not hide a later one that starts inside it.
fn rule_spans(rule: &Rule, regex: &Regex, text: &str, out: &mut Vec<Range<usize>>) {
    let mut at = 0;
    while at <= text.len() {
        let Some(caps) = regex.captures_at(text, at) else {
            break;
        };
        let Some(whole) = caps.get(0) else {
            break;
        };
        let target = caps.iter().skip(1).flatten().next().unwrap_or(whole);
        let accepted = rule.check.accept(text, target.range());
        let first_char = text.get(whole.start()..).and_then(|rest| rest.chars().next());
        let next_char = whole.start() + first_char.map_or(1, char::len_utf8);
        at = match accepted {
            Some(span) => {
                let span = extend_capped(text, span);
                out.push(span);
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

impl Check {
    /// The span to redact when the candidate at `span` of `text` is a secret.
    fn accept(self, text: &str, span: Range<usize>) -> Option<Range<usize>> {
        let value = text.get(span.clone())?;
        let ok = match self {
            Check::Always => true,
            // A key glued to a word must look strongly random: `risk-admin-settings-2024` is a
            // slug, `textsk-test-4eC39HqLyjWD` a pasted key.
            Check::Random if alphanumeric_before(text, span.start) => looks_strongly_random(value),
            Check::Random => looks_random(value),
            Check::NotPlaceholder => !is_placeholder(value),
            Check::TokenLike => is_token_like(value),
            Check::BasicCredentials => is_basic_credentials(value),
            Check::BareAssignment => return bare_value_span(text, span),
            // The word of the next marker (`[REDACTED][REDACTED]`) is no tail.
            Check::NotMarker => !REDACTED.contains(value),
        };
        ok.then_some(span)
    }
}

/// True when the character before `at` is an ASCII letter or digit.
fn alphanumeric_before(text: &str, at: usize) -> bool {
    text.as_bytes().get(at.wrapping_sub(1)).is_some_and(u8::is_ascii_alphanumeric)
}

/// True when `value` has a digit and both upper and lower case letters.
fn looks_strongly_random(value: &str) -> bool {
    let has = |test: fn(&u8) -> bool| value.as_bytes().iter().any(test);
    has(u8::is_ascii_digit) && has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase)
}

/// True when `value` has a digit, or both upper and lower case letters.
fn looks_random(value: &str) -> bool {
    let has = |test: fn(&u8) -> bool| value.as_bytes().iter().any(test);
    has(u8::is_ascii_digit) || (has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase))
}

/// True for values that stand for a secret instead of being one: `<password>`,
/// `{token}`, `[REDACTED]`, `%TOKEN%`, `$TOKEN`, `${TOKEN}`, `$(cmd)`, elisions
/// (`sk_live_...`, `polar_at_XXX`) and constant names (`YOUR_API_KEY`). A `$`
/// followed by a digit (a bcrypt hash, `$2b$...`) is not a placeholder.
fn is_placeholder(value: &str) -> bool {
    let mut chars = value.chars();
    let marked = match (chars.next(), chars.next()) {
        (Some('<' | '{' | '['), _) => true,
        (Some('%' | '$'), Some(next)) => next.is_ascii_alphabetic() || matches!(next, '_' | '{' | '('),
        _ => false,
    };
    let elided = value.contains("...")
        || value.contains('…')
        || value.as_bytes().windows(3).any(|w| w.eq_ignore_ascii_case(b"xxx"));
    let constant_name = value.contains('_') && value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    marked || elided || constant_name
}

/// True for code that names a secret instead of holding one: a name path such as
/// `process.env.TOKEN` or `session.token`, a `camelCase` or `snake_case` name such as
/// `polarAccessToken`, or a call or index such as `getenv(` and `process.env[`.
/// A name on its own must have no digit; a trailing `!` or `?` (TypeScript) is ignored.
fn is_code_reference(value: &str) -> bool {
    let value = value.trim_end_matches(['!', '?']);
    let name_len = value.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(value.len());
    let (name, rest) = value.split_at(name_len);
    let has_hump = name.as_bytes().windows(2).any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    match rest.chars().next() {
        _ if name.is_empty() => false,
        Some('(' | '[') => true,
        Some(_) => false,
        None => {
            let no_digit = !name.bytes().any(|b| b.is_ascii_digit());
            no_digit && (name.contains(['.', '_']) || has_hump)
        }
    }
}

/// A bearer-style token: at least 16 token chars, or at least 6 with a digit.
/// This keeps "Bearer tokens are described in ..." and `Bearer YOUR_TOKEN` as they are.
fn is_token_like(value: &str) -> bool {
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_letter = value.bytes().any(|b| b.is_ascii_alphabetic());
    // A date or a version (`2024-01-15`, `1.2.3`) has digits but no letters.
    !is_placeholder(value) && !is_code_reference(value) && (value.len() >= 16 || (has_digit && has_letter))
}

/// The heuristic for an unquoted assigned value, chosen so that prose such as
/// "password: see the admin panel" and code such as `token: process.env.TOKEN`
/// stay readable while config lines lose their secrets.
///
/// The value (one run of 6+ non-space chars, trailing `,`/`;` left out) is a
/// secret unless it is a placeholder or a code reference; and then only if it
/// contains a digit or a symbol other than `_ . -`, or is 12+ chars long with
/// nothing else after it on its line.
fn bare_value_span(text: &str, span: Range<usize>) -> Option<Range<usize>> {
    let value = text.get(span.clone())?.trim_end_matches([',', ';']);
    let span = span.start..span.start + value.len();
    // A URL after `password:` is a link to a page (a password in a URL has its own rule).
    if value.len() < 6 || is_placeholder(value) || is_code_reference(value) || value.contains("://") {
        return None;
    }
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_symbol = value.bytes().any(|b| !b.is_ascii_alphanumeric() && !matches!(b, b'_' | b'.' | b'-'));
    // A long value of letters alone is a secret when it has a capital inside it
    // (`CorrectHorse`) or is a passphrase of 16+ letters, not a word or hyphenated words
    // (`administrators`, `case-sensitive`).
    let inner_capital =
        value.bytes().skip(1).any(|b| b.is_ascii_uppercase()) && value.bytes().any(|b| b.is_ascii_lowercase());
    let passphrase = value.len() >= 16 && !value.contains('-');
    let ends_line = text.get(span.end..).is_none_or(rest_of_line_is_blank);
    (has_digit || has_symbol || (value.len() >= 12 && ends_line && (inner_capital || passphrase))).then_some(span)
}

/// True when `rest` has only blanks before its first line break (or its end).
/// Stops at the first other byte, so a long line costs nothing.
fn rest_of_line_is_blank(rest: &str) -> bool {
    rest.bytes().find(|b| !matches!(b, b' ' | b'\t' | b'\r')).is_none_or(|b| b == b'\n')
}

/// True when `value` is base64 for printable text holding a `:`, as in `user:password`.
/// Keeps "Basic authentication" and other prose after the word Basic untouched.
fn is_basic_credentials(value: &str) -> bool {
    let decoded = decode_base64(value.trim_end_matches('='));
    decoded.contains(&b':') && decoded.iter().all(|b| (0x20..0x7f).contains(b))
}

/// Decodes standard base64 without padding; bits that do not fill a byte are dropped.
/// Callers pass only base64 chars; any other char decodes as zero bits.
fn decode_base64(value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0u32);
    for byte in value.bytes() {
        let sextet = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        };
        bits = (bits << 6) | u32::from(sextet);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    out
}

/// Sorts `spans` and joins the ones that overlap or touch.
fn merge(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|span| (span.start, span.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each of the sorted, disjoint `spans` replaced by [`REDACTED`].
fn splice(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut kept_from = 0;
    for span in spans {
        out.push_str(text.get(kept_from..span.start).unwrap_or_default());
        out.push_str(REDACTED);
        kept_from = span.end;
    }
    out.push_str(text.get(kept_from..).unwrap_or_default());
    out
}

/// Redacts, then cuts the result to at most `max_bytes` bytes on a UTF-8 char boundary, appending "…[truncated]" when cut. Never leaves part of a secret visible, never panics on any input.
///
/// The whole text is redacted before the cut, so a secret that straddles the cut
/// point is already [`REDACTED`]; a cut that would split a marker drops the whole
/// marker. The suffix is added after the cut, so a cut result is at most
/// `max_bytes + 14` bytes long.
#[must_use]
pub fn redact_truncated(text: &str, max_bytes: usize) -> String {
    let redacted = redact(text);
    if redacted.len() <= max_bytes {
        return redacted.into_owned();
    }
    let head = floor_char_boundary(&redacted, max_bytes);
    let head = head.get(..cut_outside_marker(&redacted, head.len())).unwrap_or_default();
    format!("{head}{TRUNCATED}")
}

/// Moves the cut `at` back to the start of a [`REDACTED`] marker that it would split.
/// The marker is ASCII, so the returned index is a char boundary whenever `at` is.
fn cut_outside_marker(text: &str, at: usize) -> usize {
    let marker = REDACTED.as_bytes();
    let from = at.saturating_sub(marker.len() - 1);
    let to = text.len().min(at + marker.len() - 1);
    let window = text.as_bytes().get(from..to).unwrap_or_default();
    window
        .windows(marker.len())
        .position(|candidate| candidate == marker)
        .map(|offset| from + offset)
        .filter(|&start| start < at)
        .unwrap_or(at)
}

/// Largest prefix of `text` of at most `max_bytes` bytes ending on a char boundary.
#[must_use]
pub fn floor_char_boundary(text: &str, max_bytes: usize) -> &str {
    if max_bytes >= text.len() {
        return text;
    }
    let end = (0..=max_bytes).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    text.get(..end).unwrap_or_default()
}
