//! The guards every text passes at a boundary: [`redact`] secrets, [`fence`] untrusted text and
//! strip invisible characters, [`links`] to outside hosts neutralised in answers.

pub mod fence;
pub mod links;
pub mod redact;

/// The answer as it may leave the process: sanitised, redacted, links to other hosts neutralised.
pub fn outbound_answer(answer: &str, allowed_hosts: &[String]) -> String {
    let sane = fence::sanitize(answer);
    let redacted = redact::redact(&sane);
    links::neutralize_links(&redacted, allowed_hosts).into_owned()
}
