//! Secret redaction for every boundary where text leaves a tool or the process.
//!
//! Tool results, answers, notes written to disk and trace lines all pass through
//! [`redact`] (or [`redact_truncated`] when they must also fit a budget), so a
//! credential that sits in a doc page, a config file or a model reply is replaced
//! by [`REDACTED`] before anyone downstream can see, store or forward it.
//!
//! The [`rules`] cover the provider formats of the best scanners (gitleaks' catalog and the
//! major cloud, payment, messaging, registry, ML, data and secret-manager providers), plus
//! shapes that are not tied to a provider: PEM blocks, JWTs, passwords in URLs and connection
//! strings, `Authorization` headers, and high-entropy values assigned to secret-like keys.
//! The [`engine`] runs only the rules whose keyword the text holds, so clean text costs one
//! keyword pass.
//!
//! Architecture invariant: this module does no IO and keeps no state besides the compiled
//! rules and the secrets it was told to [`remember`]; the same input always gives the same
//! output.

mod check;
mod engine;
mod rules;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::ops::Range;

pub use super::REDACTED;

/// Appended by [`redact_truncated`] when it had to cut the text.
pub const TRUNCATED: &str = "…[truncated]";

/// How many extra passes [`redact`] makes to reach a fixed point (a redaction can
/// turn the byte before a second secret into a word boundary that lets a rule fire).
const MAX_EXTRA_PASSES: usize = 3;

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
    for line in super::joined::lines_to_view(text) {
        let Some(view) = text.get(line.clone()).and_then(super::joined::Joined::of) else {
            continue;
        };
        let found = secret_spans(&view.text).into_iter().filter_map(|span| view.original(span));
        spans.extend(found.map(|span| span.start + line.start..span.end + line.start));
    }
    // A secret written escaped (`\n` for its line breaks, `\"` for its quotes: a JSON string,
    // a debug print) is whole in the line read back unescaped; its escaped stretch goes.
    for line in super::escaped::lines_with_escapes(text) {
        let Some(view) = text.get(line.clone()).and_then(super::escaped::Unescaped::of) else {
            continue;
        };
        let found = secret_spans(&view.text).into_iter().filter_map(|span| view.original(span));
        spans.extend(found.map(|span| span.start + line.start..span.end + line.start));
    }
    // A secret cut by a line break is whole in its two runs glued; both pieces go. A secret
    // already whole before the break (`… key is sk_test_…` / `and it works`) keeps the next
    // line's word unless that looks like the rest of a token.
    for broken in super::joined::broken_tokens(text) {
        let left = text.get(broken.left.clone()).unwrap_or_default();
        let right = text.get(broken.right.clone()).unwrap_or_default();
        if !looks_like_token_piece(right) && secret_spans(left).iter().any(|span| span.end == left.len()) {
            continue;
        }
        for span in secret_spans(&broken.glued(text)) {
            spans.extend(broken.original(span).into_iter().flatten());
        }
    }
    let spans = merge(spans);
    if spans.is_empty() {
        return None;
    }
    let out = splice(text, &spans);
    (out != text).then_some(out)
}

/// True when `piece` (the start of a line) could be the rest of a token cut by the line break:
/// it has a digit, a capital after a small letter, or is long; an ordinary word is not.
fn looks_like_token_piece(piece: &str) -> bool {
    super::joined::digit_or_hump(piece.as_bytes()) || piece.len() >= 16
}

/// The byte ranges of every secret in `text`, unsorted and possibly overlapping.
fn secret_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = known_spans(text);
    engine::secret_spans(text, &mut spans);
    spans
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
    format!("{}{TRUNCATED}", head(&redacted, max_bytes))
}

/// Largest prefix of `text` of at most `max_bytes` bytes that ends on a char boundary and
/// does not split a [`REDACTED`] marker: where redacted text may be cut.
#[must_use]
pub fn head(text: &str, max_bytes: usize) -> &str {
    let head = floor_char_boundary(text, max_bytes);
    text.get(..cut_outside_marker(text, head.len())).unwrap_or_default()
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
