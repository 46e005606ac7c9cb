//! Text as a reader sees it once markup is rendered: a secret split by markup between two of
//! its characters (`AKIAIOSF[ODNN7EXAMPLE](…)`, `AKIAIOSF**ODNN7EXAMPLE**`,
//! `AKIAIOSF<b>ODNN7EXAMPLE</b>`, `` AKIAIOSF`ODNN7EXAMPLE` ``, `AKIAIOSF&#79;DNN7EXAMPLE`) is
//! whole again in the joined view, so the redactor finds it there and redacts the whole stretch
//! of the original, markup included.
//!
//! Markup is taken out only where it joins two token characters (letters, digits, `_ - + / = .`):
//! prose with markup between words keeps its spaces, so no new word is made where a reader
//! sees two. Line breaks are kept in the view: joining lines would glue unrelated tokens. A token
//! cut by a line break is looked at on its own instead: the two runs around the break, glued
//! ([`broken_tokens`]).

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
        let mut view = Joined { text: String::with_capacity(text.len()), from: Vec::with_capacity(text.len()) };
        let changed = Joined::walk(text, |c, from| view.push(c, from));
        changed.then_some(view)
    }

    /// Hands each character of the view to `out` with the original range it stands for; true
    /// when the view differs from `text`. Markup and entities start with an ASCII byte of
    /// [`MARKUP`], so only those bytes are looked at closer.
    fn walk(text: &str, mut out: impl FnMut(char, Range<usize>)) -> bool {
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut changed = false;
        let mut last: Option<char> = None;
        while let Some(&byte) = bytes.get(at) {
            let rest = &text[at..];
            if !MARKUP[usize::from(byte)] {
                let c = rest.chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
                out(c, at..at + c.len_utf8());
                last = Some(c);
                at += c.len_utf8();
                continue;
            }
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
                None => (char::from(byte), 1),
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
    let pairs = bytes.iter().zip(bytes.iter().skip(1)).enumerate();
    for (at, _) in pairs.filter(|&(_, (&before, &byte))| MARKUP[usize::from(byte)] && token_byte(before)) {
        let at = at + 1;
        if lines.last().is_some_and(|line| line.contains(&at)) {
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
        lines.push(line_around(text, at));
    }
    lines
}

/// The line of `text` that holds byte `at`, without its line break, as a byte range.
pub fn line_around(text: &str, at: usize) -> Range<usize> {
    let start = text.get(..at).and_then(|head| head.rfind('\n')).map_or(0, |n| n + 1);
    let end = text.get(at..).and_then(|tail| tail.find('\n')).map_or(text.len(), |n| at + n);
    start..end
}

/// The bytes that start markup which can join two token characters (`*`, `` ` ``, `~`, `[`,
/// `![`, `](…)`, a tag) or an entity (`&`): a table, so that the scans over every byte cost one
/// lookup each.
static MARKUP: [bool; 256] = {
    let mut table = [false; 256];
    let bytes = *b"*`~[!]<&";
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
};

/// A token cut by a line break: the run of token characters that ends a line and the run that
/// starts the next (`AKIAIOSF` / `ODNN7EXAMPLE`). A reader can put them back together, so the
/// redactor looks for a secret in the two glued.
pub struct Broken {
    /// The run at the end of the first line.
    pub left: Range<usize>,
    /// The run at the start of the next line.
    pub right: Range<usize>,
}

impl Broken {
    /// The two runs glued, as a reader would rejoin them.
    pub fn glued(&self, text: &str) -> String {
        [text.get(self.left.clone()), text.get(self.right.clone())].into_iter().flatten().collect()
    }

    /// The original ranges that `span` of [`Broken::glued`] stands for, when it crosses the break.
    pub fn original(&self, span: Range<usize>) -> Option<[Range<usize>; 2]> {
        let cut = self.left.len();
        (span.start < cut && span.end > cut)
            .then(|| [self.left.start + span.start..self.left.end, self.right.start..self.right.start + span.end - cut])
    }
}

/// Every line break with a token on both sides that could be a secret cut in two: the glued
/// runs are at least 12 characters and hold a digit or a capital after a small letter (prose
/// that wraps between two words rarely does). Runs are read up to 256 characters each way.
pub fn broken_tokens(text: &str) -> Vec<Broken> {
    let bytes = text.as_bytes();
    let piece = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=');
    let mut found = Vec::new();
    for (at, _) in text.match_indices('\n') {
        let before = bytes[..at].strip_suffix(b"\r").unwrap_or(&bytes[..at]);
        let left = before.iter().rev().take(256).take_while(|b| piece(b)).count();
        let right = bytes[at + 1..].iter().take(256).take_while(|b| piece(b)).count();
        if left == 0 || right == 0 || left + right < 12 {
            continue;
        }
        let left = before.len() - left..before.len();
        let right = at + 1..at + 1 + right;
        let glued = [&bytes[left.clone()], &bytes[right.clone()]].concat();
        if digit_or_hump(&glued) {
            found.push(Broken { left, right });
        }
    }
    found
}

/// True when `bytes` hold a digit or a capital right after a small letter: a token's marks,
/// which words wrapped between two lines seldom have.
pub fn digit_or_hump(bytes: &[u8]) -> bool {
    bytes.iter().any(u8::is_ascii_digit)
        || bytes.windows(2).any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_between_token_characters_is_taken_out_and_mapped_back() {
        let cases = [
            ("AKIAIOSF[ODNN7EXAMPLE](https://x.example/)", "AKIAIOSFODNN7EXAMPLE](https://x.example/)"),
            ("AKIAIOSF![ODNN7EXAMPLE](https://x.example/i.png)", "AKIAIOSFODNN7EXAMPLE](https://x.example/i.png)"),
            ("key AKIAIOSF**ODNN7EXAMPLE** end", "key AKIAIOSFODNN7EXAMPLE** end"),
            ("AKIAIOSF<b>ODNN7EXAMPLE</b>", "AKIAIOSFODNN7EXAMPLE</b>"),
            ("AKIAIOSF`ODNN7EXAMPLE`", "AKIAIOSFODNN7EXAMPLE`"),
            ("AKIAIOSF&#79;DNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
            ("AKIAIOSF&#x4f;DNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
            ("AKIAIOSF**<b>ODNN7EXAMPLE</b>**", "AKIAIOSFODNN7EXAMPLE</b>**"),
        ];
        for (text, want) in cases {
            let view = Joined::of(text).expect("a view");
            assert_eq!(view.text, want, "{text}");
            let at = view.text.find("AKIAIOSFODNN7EXAMPLE").expect("whole");
            let original = view.original(at..at + 20).expect("mapped");
            let stretch = &text[original];
            assert!(stretch.starts_with("AKIAIOSF") && stretch.ends_with("EXAMPLE"), "{text}: {stretch}");
        }
    }

    #[test]
    fn prose_and_plain_text_have_no_view() {
        for text in [
            "plain text without markup",
            "a **bold** word and a [link](docs/x.md) in prose",
            "see <b>this</b> and `code` here",
            "1 < 2 and 3 > 2",
        ] {
            assert!(Joined::of(text).is_none(), "{text}");
        }
    }
}
