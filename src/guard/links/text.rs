//! Plain text read the way a careless consumer would: decoded, and as HTML.
//!
//! An answer's text does not always stay Markdown. It is pasted into tickets and chats,
//! or inserted as HTML by a front end that decodes it once more. So text is checked twice:
//! as written, and as the parser decodes it (`&lt;img src="https&#58;//evil…">` becomes a
//! live `<img>` tag once decoded again). Script URLs (`javascript:…`, `data:text/html,…`)
//! are removed from text and code spans alike: no answer about product docs needs one,
//! and copied into an address bar or a link they run.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

use super::html::offending_tags;
use super::url::Allowlist;
use super::{Edit, HTML_REMOVED, LINK_REMOVED};

/// A URL that runs or renders content instead of naming a place: `javascript:`,
/// `vbscript:` and `livescript:` followed by code, and `data:` with a media type. Prose
/// such as "JavaScript: install the SDK" has a space after the colon and is not matched.
static SCRIPT_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:java|vb|live)script:[^\s`]+|\bdata:[a-z]+/[a-z0-9.+-]+[;,][^\s`]*")
        .expect("the script URL pattern is a valid constant regex")
});

/// True when `code` (the content of a code span) holds a script URL.
pub(super) fn has_script_url(code: &str) -> bool {
    SCRIPT_URL.is_match(code)
}

/// One text event of a run: where it is in the source and in the decoded text.
struct Piece {
    /// Its bytes in the source.
    source: Range<usize>,
    /// Where its decoded text starts in [`TextRun::decoded`].
    decoded_at: usize,
    /// Length of its decoded text.
    len: usize,
    /// True when the decoded text is exactly the source bytes (no entity or escape).
    exact: bool,
}

/// Adjacent text events: their source range and the text the parser decoded from them.
pub(super) struct TextRun {
    /// The bytes of the source the run covers.
    pub(super) source: Range<usize>,
    /// The text of its events, joined.
    decoded: String,
    /// Its events, in order.
    pieces: Vec<Piece>,
}

impl TextRun {
    /// Starts a run with one text event.
    pub(super) fn new(source_text: &str, text: &str, range: Range<usize>) -> Self {
        let mut run = TextRun { source: range.clone(), decoded: String::new(), pieces: Vec::new() };
        run.push(source_text, text, range);
        run
    }

    /// Adds the next event; the caller checks that it follows without a gap.
    pub(super) fn push(&mut self, source_text: &str, text: &str, range: Range<usize>) {
        let exact = source_text.get(range.clone()) == Some(text);
        self.source.end = range.end;
        self.pieces.push(Piece { source: range, decoded_at: self.decoded.len(), len: text.len(), exact });
        self.decoded.push_str(text);
    }

    /// The edits this run needs: tags in its source or in its decoded text, and script
    /// URLs in its decoded text.
    pub(super) fn edits(&self, source_text: &str, allow: &Allowlist) -> Vec<Edit> {
        let raw = source_text.get(self.source.clone()).unwrap_or_default();
        let mut edits: Vec<Edit> = offending_tags(raw, allow)
            .into_iter()
            .map(|r| Edit { range: self.source.start + r.start..self.source.start + r.end, with: HTML_REMOVED })
            .collect();
        if self.decoded != raw {
            let tags = offending_tags(&self.decoded, allow);
            edits.extend(tags.into_iter().map(|r| Edit { range: self.to_source(r), with: HTML_REMOVED }));
        }
        let scripts = SCRIPT_URL.find_iter(&self.decoded);
        edits.extend(scripts.map(|m| Edit { range: self.to_source(m.range()), with: LINK_REMOVED }));
        edits
    }

    /// Maps a range of the decoded text to the source. A position inside an entity or
    /// escape widens to the whole of it.
    fn to_source(&self, range: Range<usize>) -> Range<usize> {
        let start = self
            .pieces
            .iter()
            .find(|p| p.decoded_at <= range.start && range.start < p.decoded_at + p.len)
            .map_or(self.source.start, |p| {
                if p.exact { p.source.start + (range.start - p.decoded_at) } else { p.source.start }
            });
        let end = self.pieces.iter().find(|p| p.decoded_at < range.end && range.end <= p.decoded_at + p.len).map_or(
            self.source.end,
            |p| {
                if p.exact { p.source.start + (range.end - p.decoded_at) } else { p.source.end }
            },
        );
        start..end.max(start)
    }
}
