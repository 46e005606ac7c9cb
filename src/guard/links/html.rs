//! Raw HTML in answers: a start-tag reader that follows the browser tokenizer closely enough to
//! find every attribute that can fetch or navigate, with character references decoded.

use super::*;

/// An HTML start tag as a browser would tokenise it.
pub(super) struct HtmlTag {
    /// Lowercased tag name.
    pub(super) name: String,
    /// Lowercased attribute names and their raw (undecoded) values.
    pub(super) attrs: Vec<(String, String)>,
    /// Byte just past the closing `>` (or the end of the input).
    pub(super) end: usize,
    /// False when the input ended before the `>` or inside a quoted value.
    pub(super) terminated: bool,
}

impl HtmlTag {
    pub(super) fn offends(&self, allow: &Allowlist) -> bool {
        !self.terminated
            || ALWAYS_REMOVED.contains(&self.name.as_str())
            || self.attrs.iter().any(|(name, value)| attr_offends(name, value, allow))
    }
}

/// Byte ranges of the start tags in `html` that must go. A raw-text element such as
/// `script` goes together with its content and closing tag.
pub(super) fn offending_tags(html: &str, allow: &Allowlist) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = html[at..].find('<') {
        let start = at + offset;
        let Some(tag) = parse_tag(html, start) else {
            at = start + 1;
            continue;
        };
        at = tag.end;
        if tag.offends(allow) {
            if RAW_TEXT.contains(&tag.name.as_str()) {
                at = raw_text_end(html, tag.end, &tag.name);
            }
            found.push(start..at);
        }
    }
    found
}

/// The byte after `</name …>` at or after `from`, or the end of `html`.
pub(super) fn raw_text_end(html: &str, from: usize, name: &str) -> usize {
    let closing = format!("</{name}");
    let lower = html[from..].to_ascii_lowercase();
    match lower.find(&closing) {
        Some(i) => lower[i..].find('>').map_or(html.len(), |j| from + i + j + 1),
        None => html.len(),
    }
}

/// HTML's whitespace.
pub(super) fn is_html_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Tokenises the start tag at `start` (a `<`), following the HTML tokenizer's rules for
/// names and quoted and unquoted attribute values. `None` if it is not a start tag.
pub(super) fn parse_tag(html: &str, start: usize) -> Option<HtmlTag> {
    let b = html.as_bytes();
    if !b.get(start + 1)?.is_ascii_alphabetic() {
        return None;
    }
    let until = |mut i: usize, stop: &dyn Fn(u8) -> bool| {
        while i < b.len() && !stop(b[i]) {
            i += 1;
        }
        i
    };
    let mut i = until(start + 1, &|c| is_html_space(c) || c == b'/' || c == b'>');
    let mut tag =
        HtmlTag { name: html[start + 1..i].to_ascii_lowercase(), attrs: Vec::new(), end: b.len(), terminated: false };
    loop {
        i = until(i, &|c| !(is_html_space(c) || c == b'/'));
        match b.get(i) {
            None => return Some(tag),
            Some(b'>') => break,
            Some(_) => {}
        }
        let name_start = i;
        i = until(i + 1, &|c| is_html_space(c) || matches!(c, b'/' | b'>' | b'='));
        let name = html[name_start..i].to_ascii_lowercase();
        i = until(i, &|c| !is_html_space(c));
        let mut value = "";
        if b.get(i) == Some(&b'=') {
            i = until(i + 1, &|c| !is_html_space(c));
            let value_start = i;
            match b.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    i = until(i + 1, &|c| c == q);
                    if i >= b.len() {
                        return Some(tag);
                    }
                    value = &html[value_start + 1..i];
                    i += 1;
                }
                _ => {
                    i = until(i, &|c| is_html_space(c) || c == b'>');
                    value = &html[value_start..i];
                }
            }
        }
        tag.attrs.push((name, value.to_string()));
    }
    tag.end = i + 1;
    tag.terminated = true;
    Some(tag)
}

/// True when one attribute makes its tag unsafe to keep.
pub(super) fn attr_offends(name: &str, raw: &str, allow: &Allowlist) -> bool {
    let is_url = URL_ATTRS.contains(&name) || name.ends_with("href");
    if name.starts_with("on") {
        return true;
    }
    if !is_url && name != "style" {
        return false;
    }
    let Some(value) = decode_entities(raw) else {
        return true;
    };
    if name == "style" {
        let lower = value.to_ascii_lowercase();
        return ["url", "image", "import", "expression", "\\"].iter().any(|w| lower.contains(w));
    }
    !urls_allowed(&value, allow)
}

/// Checks a URL attribute value as one URL and, for `srcset`/`ping`-style lists, as each
/// of its whitespace- or comma-separated parts. All must be allowed.
pub(super) fn urls_allowed(value: &str, allow: &Allowlist) -> bool {
    allow.url(value)
        && value
            .split(|c: char| c.is_ascii_whitespace() || c == ',')
            .filter(|part| !part.is_empty())
            .all(|part| allow.url(part))
}

/// Decodes the character references a browser would decode in an attribute value.
/// Returns `None` for a named reference it does not know, since it could hide a `:` or `/`.
pub(super) fn decode_entities(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let (decoded, used) = match after.strip_prefix('#') {
            Some(num) => decode_numeric(num).map(|(c, n)| (c, n + 1))?,
            None => decode_named(after)?,
        };
        out.push_str(&decoded);
        rest = &after[used..];
    }
    out.push_str(rest);
    Some(out)
}

/// Decodes `NN;`, `xHH;` (the `;` is optional). Returns the text and bytes used.
pub(super) fn decode_numeric(num: &str) -> Option<(String, usize)> {
    let (radix, digits_at) = match num.as_bytes().first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let digits = &num[digits_at..];
    let len = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    if len == 0 {
        return Some(("&#".to_string(), 0));
    }
    let code = u32::from_str_radix(&digits[..len], radix).ok()?;
    let c = char::from_u32(code)?;
    let semi = usize::from(digits[len..].starts_with(';'));
    Some((c.to_string(), digits_at + len + semi))
}

/// Decodes a named reference such as `amp;` or `colon;`. Text without a `;` stays as it
/// is (a bare `&` in a query string); an unknown name with `;` is refused.
pub(super) fn decode_named(after: &str) -> Option<(String, usize)> {
    let len = after.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(after.len());
    if len == 0 || !after[len..].starts_with(';') {
        return Some(("&".to_string(), 0));
    }
    let c = match &after[..len] {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "colon" => ':',
        "sol" => '/',
        "bsol" => '\\',
        "commat" => '@',
        "period" => '.',
        "quest" => '?',
        "num" => '#',
        "equals" => '=',
        "percnt" => '%',
        "lpar" => '(',
        "rpar" => ')',
        "comma" => ',',
        "Tab" => '\t',
        "NewLine" => '\n',
        "nbsp" => '\u{a0}',
        _ => return None,
    };
    Some((c.to_string(), len + 1))
}
