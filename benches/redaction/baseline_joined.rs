//! The joined view of `src/guard/joined.rs` as it was at 1c0d9fe, frozen with the baseline
//! redactor so that work on today's joined view does not move the baseline.
#![allow(dead_code, clippy::all, missing_docs)]

use std::ops::Range;

/// The joined view of a text, and where each of its bytes came from.
pub struct Joined {
    /// The text with joining markup taken out and entities decoded.
    pub text: String,
    /// For each byte of `text`, the original byte range it stands for.
    from: Vec<Range<usize>>,
}

impl Joined {
    /// The view of `text`, or `None` when no markup joins anything (the view is the text).
    pub fn of(text: &str) -> Option<Joined> {
        if !Joined::walk(text, &mut |_, _| {}) {
            return None;
        }
        let mut view = Joined { text: String::with_capacity(text.len()), from: Vec::with_capacity(text.len()) };
        Joined::walk(text, &mut |c, from| view.push(c, from));
        Some(view)
    }

    /// Hands each character of the view to `out` with the original range it stands for; true
    /// when the view differs from `text`.
    fn walk(text: &str, out: &mut dyn FnMut(char, Range<usize>)) -> bool {
        let mut at = 0;
        let mut changed = false;
        let mut last: Option<char> = None;
        while at < text.len() {
            let rest = &text[at..];
            // A redaction marker is text, not a link: it stays as it is.
            if let Some(marker) = rest.get(..super::REDACTED.len()).filter(|m| *m == super::REDACTED) {
                for (i, c) in marker.char_indices() {
                    out(c, at + i..at + i + 1);
                }
                last = Some(']');
                at += marker.len();
                continue;
            }
            if let Some(len) = last.filter(|c| token_char(*c)).and_then(|_| joining(rest)) {
                changed = true;
                at += len;
                continue;
            }
            let (c, len) = match entity(rest) {
                Some(decoded) => {
                    changed = true;
                    decoded
                }
                None => match rest.chars().next() {
                    Some(c) => (c, c.len_utf8()),
                    None => break,
                },
            };
            out(c, at..at + len);
            last = Some(c);
            at += len;
        }
        changed
    }

    /// The original range that the view's `span` stands for.
    pub fn original(&self, span: Range<usize>) -> Option<Range<usize>> {
        let first = self.from.get(span.start)?;
        let last = self.from.get(span.end.checked_sub(1)?)?;
        Some(first.start..last.end)
    }

    fn push(&mut self, c: char, from: Range<usize>) {
        let before = self.text.len();
        self.text.push(c);
        for _ in before..self.text.len() {
            self.from.push(from.clone());
        }
    }
}

/// The lines of `text` (byte ranges, without their line break) in which markup may join two
/// token characters: only they need a view. A quick scan of bytes, so text without such markup
/// costs almost nothing.
pub fn lines_to_view(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut lines: Vec<Range<usize>> = Vec::new();
    for at in 1..bytes.len() {
        let candidate =
            matches!(bytes[at], b'*' | b'`' | b'~' | b'[' | b'!' | b']' | b'<' | b'&') && token_byte(bytes[at - 1]);
        if !candidate || lines.last().is_some_and(|line| line.contains(&at)) {
            continue;
        }
        let rest = &text[at..];
        let len = joining(rest);
        let joins = len.is_some() || entity(rest).is_some();
        let after = &rest[len.unwrap_or(0)..];
        // Too short a run of token characters on both sides together to hold any secret.
        let run = |bytes: &mut dyn Iterator<Item = &u8>| bytes.take(SHORTEST).take_while(|b| token_byte(**b)).count();
        let around = run(&mut bytes[..at].iter().rev()) + run(&mut after.as_bytes().iter());
        if !joins || (around < SHORTEST && entity(after).is_none() && entity(rest).is_none()) {
            continue;
        }
        let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
        lines.push(start..end);
    }
    lines
}

/// No secret is shorter than this many token characters around the markup that splits it
/// (the shortest rule value is 6 characters; an entity counts as one of them).
const SHORTEST: usize = 6;

/// A byte of an ASCII token character.
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.')
}

/// A character that can go on with a token cut by markup: a letter, a digit or `_` (a `.`,
/// `-` or `/` after a link is punctuation far more often than half of a key).
fn continues(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A character a token is made of.
fn token_char(c: char) -> bool {
    c.is_ascii() && token_byte(c as u8)
}

/// The length of the markup at the start of `rest` when it joins: one or more [`joint`]s
/// followed by a character that [`continues`] a token, or by an entity.
fn joining(rest: &str) -> Option<usize> {
    let mut len = 0;
    while let Some(more) = joint(&rest[len..]) {
        len += more;
    }
    let after = &rest[len..];
    (len > 0 && (after.chars().next().is_some_and(continues) || entity(after).is_some())).then_some(len)
}

/// The length of the markup at the start of `text` that a renderer would not show between two
/// characters: a run of `*`, `` ` ``, `~`; `[` or `![`; a link's `](…)`; an HTML tag.
fn joint(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    match bytes.first()? {
        b'*' | b'`' | b'~' => Some(bytes.iter().take_while(|b| matches!(b, b'*' | b'`' | b'~')).count()),
        b'[' => Some(1),
        b'!' if bytes.get(1) == Some(&b'[') => Some(2),
        b']' if bytes.get(1) == Some(&b'(') => within(bytes, b')', 512).map(|end| end + 1),
        b'<' => {
            let end = within(bytes, b'>', 128)?;
            let inside = &text[1..end];
            let name = inside.trim_start_matches('/');
            (name.starts_with(|c: char| c.is_ascii_alphabetic()) && !inside.contains('<')).then_some(end + 1)
        }
        _ => None,
    }
}

/// Where `byte` first is among the first `limit` bytes of `bytes` (never a scan of the rest).
fn within(bytes: &[u8], byte: u8, limit: usize) -> Option<usize> {
    bytes.iter().take(limit).position(|&b| b == byte)
}

/// A numeric character reference at the start of `text` (`&#79;`, `&#x4F;`) that decodes to an
/// ASCII token character, and its length.
fn entity(text: &str) -> Option<(char, usize)> {
    let rest = text.strip_prefix("&#")?;
    let end = within(rest.as_bytes(), b';', 9)?;
    let digits = &rest[..end];
    let code = match digits.strip_prefix(['x', 'X']) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    let c = char::from_u32(code).filter(|c| token_char(*c))?;
    Some((c, 2 + end + 1))
}
