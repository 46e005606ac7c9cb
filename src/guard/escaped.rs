//! A line of escaped text (a JSON string, a debug-printed one) read back unescaped, with where
//! each of its bytes came from: a secret whose line breaks and quotes were written as `\n` and
//! `\"` (a PEM key in a logged request, a quoted password in a debug line) is whole in the
//! unescaped view, and its stretch of the escaped text goes.

use std::ops::Range;

/// Escapes read back at most this deep (`\\n` in a debug print of a JSON string is two).
const MAX_DEPTH: usize = 2;

/// A line unescaped, with the offset in the original text of each byte.
pub struct Unescaped {
    /// The text with its escapes read.
    pub text: String,
    /// For each byte of `text`, where the escape or character it came from starts in the
    /// original; one more entry, the original's length, for a span that ends at the end.
    from: Vec<usize>,
}

impl Unescaped {
    /// `line` with its escapes read (to [`MAX_DEPTH`] levels); `None` when it has none.
    pub fn of(line: &str) -> Option<Unescaped> {
        let mut view = once(line, None)?;
        for _ in 1..MAX_DEPTH {
            match once(&view.text, Some(&view.from)) {
                Some(deeper) => view = deeper,
                None => break,
            }
        }
        Some(view)
    }

    /// The stretch of the original text that `span` of the view came from.
    pub fn original(&self, span: Range<usize>) -> Option<Range<usize>> {
        let start = *self.from.get(span.start)?;
        let end = *self.from.get(span.end)?;
        (start < end).then_some(start..end)
    }
}

/// The lines of `text` (by real line breaks) that hold an escape, as byte ranges. Only the
/// backslashes are looked at (found with a fast byte search), so text without any costs one scan.
pub fn lines_with_escapes(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = text.as_bytes();
    let mut listed_to = 0;
    text.match_indices('\\').filter_map(move |(at, _)| {
        if at < listed_to || !bytes.get(at + 1).copied().is_some_and(starts_escape) {
            return None;
        }
        let line = super::joined::line_around(text, at);
        listed_to = line.end;
        Some(line)
    })
}

/// True when `text` holds a backslash escape this module reads.
fn holds_escape(text: &str) -> bool {
    text.as_bytes().windows(2).any(|pair| pair[0] == b'\\' && starts_escape(pair[1]))
}

/// True when `\{byte}` starts an escape this module reads (`\u` among them).
fn starts_escape(byte: u8) -> bool {
    escaped(byte).is_some() || byte == b'u'
}

/// What `\{byte}` stands for, for the escapes other than `\u`.
fn escaped(byte: u8) -> Option<char> {
    Some(match byte {
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'"' => '"',
        b'\'' => '\'',
        b'\\' => '\\',
        b'/' => '/',
        _ => return None,
    })
}

/// One level of unescaping of `text`, whose bytes came from `outer` offsets (or are the
/// original); `None` when nothing was an escape.
fn once(text: &str, outer: Option<&[usize]>) -> Option<Unescaped> {
    if !holds_escape(text) {
        return None;
    }
    let origin = |at: usize| outer.map_or(at, |from| from.get(at).copied().unwrap_or(at));
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len() + 1);
    let mut at = 0;
    while at < bytes.len() {
        let start = origin(at);
        if bytes[at] == b'\\' && at + 1 < bytes.len() {
            if let Some(c) = escaped(bytes[at + 1]) {
                out.push(c);
                from.push(start);
                at += 2;
                continue;
            }
            if bytes[at + 1] == b'u'
                && let Some(c) =
                    text.get(at + 2..at + 6).and_then(|hex| u32::from_str_radix(hex, 16).ok()).and_then(char::from_u32)
            {
                out.push(c);
                from.extend(std::iter::repeat_n(start, c.len_utf8()));
                at += 6;
                continue;
            }
        }
        let Some(c) = text.get(at..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        out.push(c);
        for i in 0..c.len_utf8() {
            from.push(origin(at + i));
        }
        at += c.len_utf8();
    }
    from.push(origin(bytes.len()));
    Some(Unescaped { text: out, from })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_maps_back_to_the_escapes_it_read() {
        let line = r#"{"q":"password: \"hunter2hunter2\"\nnext \u0041"}"#;
        let view = Unescaped::of(line).expect("escapes");
        assert_eq!(view.text, "{\"q\":\"password: \"hunter2hunter2\"\nnext A\"}");
        let at = view.text.find("hunter2").expect("found");
        let span = view.original(at..at + "hunter2hunter2".len()).expect("maps");
        assert_eq!(&line[span], "hunter2hunter2");
        let whole = view.original(0..view.text.len()).expect("maps");
        assert_eq!(whole, 0..line.len());
        assert!(Unescaped::of("no escapes here, C:\\Users is a path").is_none());
    }

    #[test]
    fn two_levels_are_read() {
        let line = r#"message: "{\"key\": \"-----BEGIN\\nabc\"}""#;
        let view = Unescaped::of(line).expect("escapes");
        assert!(view.text.contains("-----BEGIN\nabc"), "{}", view.text);
        let at = view.text.find("BEGIN\nabc").expect("found");
        let span = view.original(at..at + "BEGIN\nabc".len()).expect("maps");
        assert_eq!(&line[span], r"BEGIN\\nabc");
    }

    #[test]
    fn only_lines_with_escapes_are_listed() {
        let text = "plain\nwith \\n escape\nplain again";
        let lines: Vec<&str> = lines_with_escapes(text).map(|r| &text[r]).collect();
        assert_eq!(lines, ["with \\n escape"]);
        // Each line once, however many escapes it holds; a lone or last backslash is no escape.
        let text = "a \\n b \\\" c\nC:\\Users\\x\n\\u0041 first\nends with \\";
        let lines: Vec<&str> = lines_with_escapes(text).map(|r| &text[r]).collect();
        assert_eq!(lines, ["a \\n b \\\" c", "\\u0041 first"]);
    }
}
