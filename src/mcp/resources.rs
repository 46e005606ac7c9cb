//! The docs' sections as MCP resources: `docs-agent://` followed by a section's citation,
//! `path#anchor` (`docs-agent://docs/refunds.md#refund-window`; the bare path for a document's
//! first section), percent-encoded where a URI needs it. Listed a page at a time, by path and
//! then in each file's order, from the index generation searched now (the cursor is the last
//! section listed, so it holds when the docs change and on any replica); read whole, fenced as
//! untrusted and redacted, as `read_section` reads them.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{ListResourcesResult, Resource, ResourceTemplate};

use super::Front;
use crate::guard::fence::Fenced;
use crate::index::source;
use crate::workspace::policy::{Area, check_read};

/// The scheme and separator every section's URI starts with.
pub const SCHEME: &str = "docs-agent://";
/// Sections per page of `resources/list`.
const PAGE: usize = 100;
/// The most bytes of one section a read returns (or the post-tool cap, if smaller).
pub const MAX_SECTION_BYTES: usize = 64 * 1024;

/// What is percent-encoded in a path or an anchor: controls, space, and what a URI reads as
/// syntax (`#`, `?`, `%`...), never `/`.
const ENCODED: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

/// The URI of the section `anchor` of `path`.
pub fn uri(path: &str, anchor: &str) -> String {
    let path = utf8_percent_encode(path, ENCODED);
    if anchor.is_empty() {
        format!("{SCHEME}{path}")
    } else {
        format!("{SCHEME}{path}#{}", utf8_percent_encode(anchor, ENCODED))
    }
}

/// Why a URI names no section. `shown` is the URI clipped to 200 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// Another scheme than `docs-agent://`.
    #[error("`{shown}` is not a docs section; a section's URI is {SCHEME}docs/file.md#anchor, as resources/list gives")]
    NotASection {
        /// The URI, clipped.
        shown: String,
    },
    /// Its path or anchor is not UTF-8 once percent-decoded.
    #[error("`{shown}` is not UTF-8 once decoded")]
    NotUtf8 {
        /// The URI, clipped.
        shown: String,
    },
}

/// Why a section cannot be read, with what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path is not a document under `docs/`. `shown` is the path clipped to 200 characters.
    #[error("`{shown}` is not a document of the docs; give its path as search_docs does (docs/…)")]
    NotADocument {
        /// The path, clipped.
        shown: String,
    },
    /// The index could not be read.
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// The document has no such section.
    #[error("no section {at} in the docs; search_docs names the sections that exist (path#anchor)")]
    NoSection {
        /// `path#anchor` (the anchor clipped), or the path alone.
        at: String,
    },
}

/// The path and anchor a section's URI names; an error that says what such a URI looks like.
pub fn parse(uri: &str) -> Result<(String, String), UriError> {
    let shown = || crate::guard::clip(uri, 200).to_string();
    let rest = uri.strip_prefix(SCHEME).ok_or_else(|| UriError::NotASection { shown: shown() })?;
    let (path, anchor) = rest.split_once('#').unwrap_or((rest, ""));
    let decode = |part: &str| {
        percent_decode_str(part).decode_utf8().map(|s| s.into_owned()).map_err(|_| UriError::NotUtf8 { shown: shown() })
    };
    Ok((decode(path)?, decode(anchor)?))
}

/// The one template the URIs follow.
pub fn template() -> ResourceTemplate {
    ResourceTemplate::new(format!("{SCHEME}{{+path}}{{#anchor}}"), "docs-section")
        .with_title("A section of the docs")
        .with_description(
            "A section of the product docs by its citation: docs-agent://docs/refunds.md#refund-window. \
             Without an anchor, the document's first section.",
        )
        .with_mime_type("text/plain")
}

/// One page of sections, after `cursor` (from the page before; absent for the first). The
/// cursor is the URI of the page's last section, so it holds across index generations and on
/// any replica. A section the operator's rules keep from being read (a `read_file` rule that
/// denies or asks), or whose name their redaction patterns would change, is not listed.
pub fn list(front: &Front, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
    let after = cursor
        .map(parse)
        .transpose()
        .map_err(|_| ErrorData::invalid_params("this cursor was not made by this server; list from the start", None))?;
    let hooks = &front.harness().hooks;
    // Not listed: a name with a secret in it (a file's path is indexed as it is), a name the
    // operator's patterns redact, a section a `read_file` rule keeps from being read.
    let shown = |s: &crate::index::section::Listed| hooks.lists(&s.path, &s.anchor);
    let index = front.harness().index.current();
    let from = after.as_ref().map(|(p, a)| (p.as_str(), a.as_str()));
    let page = crate::runtime::blocking(|| index.sections_after(from, PAGE, &shown))
        .map_err(|e| ErrorData::internal_error(crate::guard::scrub(&e.to_string()).into_owned(), None))?;
    let resources = page
        .sections
        .iter()
        .map(|s| {
            let heading = hooks.redacted(&crate::guard::scrub(&s.heading)).into_owned();
            Resource::new(uri(&s.path, &s.anchor), source(&s.path, &s.anchor))
                .with_title(heading)
                .with_mime_type("text/plain")
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(resources);
    if page.more {
        result.next_cursor = page.sections.last().map(|s| uri(&s.path, &s.anchor));
    }
    Ok(result)
}

/// The section `anchor` of `path` (a document under `docs/`), fenced as untrusted and redacted,
/// from the index generation searched now, within `max_bytes` with its fence; an error that
/// says what to do instead.
pub fn read(front: &Front, path: &str, anchor: &str, max_bytes: usize) -> Result<String, ReadError> {
    let checked = check_read(path)
        .ok()
        .filter(|p| p.area() == Area::Docs)
        .ok_or_else(|| ReadError::NotADocument { shown: crate::guard::clip(path, 200).to_string() })?;
    let path = checked.display();
    let index = front.harness().index.current();
    let section = crate::runtime::blocking(|| index.section(&path, anchor))?.ok_or_else(|| {
        let at = if anchor.is_empty() { path.clone() } else { format!("{path}#{}", crate::guard::clip(anchor, 100)) };
        ReadError::NoSection { at }
    })?;
    let source = source(&path, &section.anchor);
    let body = format!("# {}\n(lines {}-{})\n{}", section.heading, section.lines.0, section.lines.1, section.text);
    // Cut before fencing, so the post-tool cap never cuts into the fence. Fencing (tags become
    // `&lt;`) and the operator's redaction can make the text longer than what was kept: then
    // keep less, until it fits.
    let max = max_bytes.min(MAX_SECTION_BYTES);
    let mut room =
        max.saturating_sub(source.len() + crate::tools::FENCE_OVERHEAD + crate::guard::redact::TRUNCATED.len());
    loop {
        let fenced = Fenced::new(&source, &crate::guard::redact::redact_truncated(&body, room)).into_string();
        let shown = front.harness().hooks.redacted(&fenced).len();
        if shown <= max || room == 0 {
            return Ok(fenced);
        }
        room = room.saturating_sub(shown - max + 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A URI names its section back, whatever the path holds; other URIs are refused.
    #[test]
    fn a_uri_names_its_section_back() {
        for (path, anchor) in [("docs/refunds.md", "refund-window"), ("docs/a b/ü#?.md", "x%y"), ("docs/top.md", "")] {
            let made = uri(path, anchor);
            assert!(made.starts_with(SCHEME) && !made[SCHEME.len()..].contains(' '), "{made}");
            assert_eq!(made.matches('#').count(), usize::from(!anchor.is_empty()), "{made}");
            assert_eq!(parse(&made).expect("parses"), (path.to_string(), anchor.to_string()));
        }
        assert_eq!(uri("docs/refunds.md", "refund-window"), "docs-agent://docs/refunds.md#refund-window");
    }

    /// Each way a URI names no section: the error, and its message word for word.
    #[test]
    fn uris_that_name_no_section_are_refused() {
        #[rustfmt::skip]
        let cases = [
            ("file:///etc/passwd", UriError::NotASection { shown: "file:///etc/passwd".into() },
             "`file:///etc/passwd` is not a docs section; a section's URI is docs-agent://docs/file.md#anchor, as resources/list gives"),
            ("docs-agent://docs/%FF.md", UriError::NotUtf8 { shown: "docs-agent://docs/%FF.md".into() },
             "`docs-agent://docs/%FF.md` is not UTF-8 once decoded"),
            ("docs-agent://docs/a.md#%C3", UriError::NotUtf8 { shown: "docs-agent://docs/a.md#%C3".into() },
             "`docs-agent://docs/a.md#%C3` is not UTF-8 once decoded"),
        ];
        for (uri, want, message) in cases {
            assert_eq!(parse(uri), Err(want.clone()), "{uri}");
            assert_eq!(want.to_string(), message);
        }
    }
}
