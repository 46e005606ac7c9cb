//! The guards every text passes at a boundary: [`redact`] secrets, [`fence`] untrusted text and
//! strip invisible characters, [`links`] to outside hosts neutralised in answers.

pub mod citations;
pub mod fence;
pub mod links;
pub mod redact;
pub mod stream;

/// Text as it may cross a boundary: invisible characters and escapes removed first, so a secret
/// split by them is whole again, then redacted.
pub fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    match fence::sanitize(text) {
        std::borrow::Cow::Borrowed(sane) => redact::redact(sane),
        std::borrow::Cow::Owned(sane) => std::borrow::Cow::Owned(redact::redact(&sane).into_owned()),
    }
}

/// Scrubbed, then cut to at most `max` bytes on a character boundary, with `…` when cut:
/// for quoting hostile input (a path, a tool name) in a message.
pub fn clip(text: &str, max: usize) -> String {
    let clean = scrub(text);
    let cut = redact::floor_char_boundary(&clean, max);
    if cut.len() < clean.len() { format!("{cut}…") } else { cut.to_string() }
}

/// The answer as it may leave the process: sanitised, redacted, links to other hosts
/// neutralised, and citations of files the run never retrieved marked.
pub fn outbound_answer(
    answer: &str,
    allowed_hosts: &[String],
    retrieved: &std::collections::BTreeSet<String>,
) -> String {
    let scrubbed = scrub(answer);
    let linked = links::neutralize_links(&scrubbed, allowed_hosts);
    citations::mark_unverified(&linked, retrieved).into_owned()
}
