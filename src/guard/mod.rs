//! The guards every text passes at a boundary: [`redact`] secrets, [`fence`] untrusted text and
//! strip invisible characters, [`links`] to outside hosts neutralised in answers.

pub mod citations;
pub mod escaped;
pub mod fence;
pub mod joined;
pub mod links;
pub mod markdown;
pub mod outbound;
pub mod redact;
pub mod sink;
pub mod stream;

/// The marker that replaces a secret (`redact`); the joined-lines view keeps it as it is.
pub const REDACTED: &str = "[REDACTED]";

/// Text as it may cross a boundary: invisible characters and escapes removed first, so a secret
/// split by them is whole again, then redacted.
pub fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    match fence::sanitize(text) {
        std::borrow::Cow::Borrowed(sane) => redact::redact(sane),
        std::borrow::Cow::Owned(sane) => std::borrow::Cow::Owned(redact::redact(&sane).into_owned()),
    }
}

/// Text that has passed [`scrub`]: what a message made of outside text (a server's error, a
/// database's) is kept as, so it cannot be sent on unscrubbed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Scrubbed(String);

impl Scrubbed {
    /// `text`, scrubbed.
    pub fn new(text: &str) -> Scrubbed {
        Scrubbed(scrub(text).into_owned())
    }

    /// The scrubbed text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Scrubbed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every string in `value` (keys are the harness's own) [`scrub`]bed in place: the last step of
/// a JSON message that leaves the process (an event stream's event, an MCP message).
pub fn scrub_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(clean) = scrub(text) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_json),
        Value::Object(fields) => fields.values_mut().for_each(scrub_json),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Scrubbed, then cut to at most `max` bytes on a character boundary, with `…` when cut:
/// for quoting hostile input (a path, a tool name) in a message.
pub fn clip(text: &str, max: usize) -> String {
    let clean = scrub(text);
    let cut = redact::floor_char_boundary(&clean, max);
    if cut.len() < clean.len() { format!("{cut}…") } else { cut.to_string() }
}

/// Model-written text as it may leave the process: sanitised, links to other hosts
/// neutralised, and only then redacted, last: neutralising a link can join what it split
/// (`AKIAIOSF[ODNN7EXAMPLE](https://x.example/)` becomes the whole key), and redacting first
/// could cut a token in two and leave its tail; nothing may change the text after the
/// redaction.
pub fn outbound(text: &str, allowed_hosts: &[String]) -> String {
    guarded(text, allowed_hosts, |linked| std::borrow::Cow::Borrowed(linked))
}

/// The answer as it may leave the process: [`outbound`], with citations of files the run never
/// retrieved marked before the final redaction.
pub fn outbound_answer(
    answer: &str,
    allowed_hosts: &[String],
    retrieved: &std::collections::BTreeSet<String>,
) -> String {
    guarded(answer, allowed_hosts, |linked| citations::mark_unverified(linked, retrieved))
}

/// The one order of the outbound guard: sanitise, neutralise links, `mark` (whatever else the
/// text needs), and redact, last.
fn guarded(text: &str, allowed_hosts: &[String], mark: impl FnOnce(&str) -> std::borrow::Cow<'_, str>) -> String {
    let sane = fence::sanitize(text);
    let linked = links::neutralize_links(&sane, allowed_hosts);
    let marked = mark(&linked);
    scrub(&marked).into_owned()
}

/// A small deterministic random source for the property tests of the guards (xorshift64).
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer is the last boundary before stdout and the API: whatever the model wrote,
    /// no secret leaves, whole or split by invisible characters, in text, code or a link.
    #[test]
    fn no_secret_leaves_in_an_answer() {
        let retrieved = std::collections::BTreeSet::from(["docs/refunds.md".to_string()]);
        let cases = [
            ("plain", "The key is AKIAIOSFODNN7EXAMPLE.", "AKIAIOSFODNN7EXAMPLE"),
            (
                "github token",
                "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 here",
                "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            ),
            ("stripe key in code", "```\nsk_live_4eC39HqLyjWDarjtT1zdp7dc\n```", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
            ("split by a zero-width space", "AKIAIOSF\u{200B}ODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
            ("split by a link", "AKIAIOSF[ODNN7EXAMPLE](https://x.example/)", "AKIAIOSFODNN7EXAMPLE"),
            ("split by an image", "AKIAIOSF![ODNN7EXAMPLE](https://x.example/i.png)", "AKIAIOSFODNN7EXAMPLE"),
            ("split by a tag", "AKIAIOSF<b>ODNN7EXAMPLE</b>", "AKIAIOSFODNN7EXAMPLE"),
            ("split by emphasis", "AKIAIOSF**ODNN7EXAMPLE**", "AKIAIOSFODNN7EXAMPLE"),
            ("split by a code span", "AKIAIOSF`ODNN7EXAMPLE`", "AKIAIOSFODNN7EXAMPLE"),
            ("split by an entity", "AKIAIOSF&#79;DNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
            (
                "in a link's text",
                "see [xoxb-2361587123-2361587456-AbCdEfGhIjKlMnOpQrStUvWx](docs/refunds.md)",
                "AbCdEfGhIjKlMnOpQrStUvWx",
            ),
            ("a password in a URL", "connect to postgres://app:hunter2secret@db.internal/prod", "hunter2secret"),
        ];
        for (name, answer, secret) in cases {
            let out = outbound_answer(answer, &[], &retrieved);
            assert!(!out.contains(secret), "{name}: {out}");
            // An image from another host is removed with its text, so its half never joins.
            let removed = out.contains("[image removed");
            assert!(removed || out.contains(redact::REDACTED), "{name}: the secret is marked where it was: {out}");
            assert_eq!(outbound_answer(&out, &[], &retrieved), out, "{name}: guarding twice changes nothing");
            let streamed = outbound(answer, &[]);
            assert!(!streamed.contains(secret), "{name}: streamed or logged text: {streamed}");
        }
    }

    /// Random answers with secrets split anywhere by links, images, emphasis, tags, entities,
    /// code spans and invisible characters: no secret leaves, in the text or as a reader sees it
    /// rendered, and guarding twice changes nothing.
    #[test]
    fn secrets_split_by_markup_or_line_breaks_never_leave() {
        const SECRETS: [&str; 5] = [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "xoxb-2361587123-2361587456-AbCdEfGhIjKlMnOpQrStUvWx",
            "glpat-Zx9Yw8Xv7Uu6Tt5Ss4Rr",
        ];
        const WORDS: [&str; 8] =
            ["Refunds", "take", "14 days.", "See", "[docs](docs/refunds.md)", "**now**", "\n", "-"];
        let split = |secret: &str, at: usize, how: u64| -> String {
            let (head, tail) = secret.split_at(at);
            let first =
                tail.chars().next().map_or(String::new(), |c| format!("&#{};{}", c as u32, &tail[c.len_utf8()..]));
            match how {
                0 => format!("{head}[{tail}](https://x.example/)"),
                1 => format!("{head}![{tail}](https://x.example/i.png)"),
                2 => format!("{head}**{tail}**"),
                3 => format!("{head}<b>{tail}</b>"),
                4 => format!("{head}`{tail}`"),
                5 => format!("{head}{first}"),
                6 => format!("{head}\u{200B}{tail}"),
                7 => format!("{head}\n{tail}"),
                8 => format!("{head}\r\n{tail}"),
                _ => format!("{head}<span>**{tail}**</span>"),
            }
        };
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let retrieved = std::collections::BTreeSet::from(["docs/refunds.md".to_string()]);
        for _ in 0..2000 {
            let secret = SECRETS[(next() % SECRETS.len() as u64) as usize];
            let at = 1 + (next() % (secret.len() as u64 - 1)) as usize;
            let mut words: Vec<String> = (0..next() % 6).map(|_| WORDS[(next() % 8) as usize].to_string()).collect();
            let place = (next() % (words.len() as u64 + 1)) as usize;
            words.insert(place, split(secret, at, next() % 10));
            let answer = words.join(" ");
            for out in [outbound_answer(&answer, &[], &retrieved), outbound(&answer, &[])] {
                let seen = joined::Joined::of(&out).map_or(out.clone(), |view| view.text);
                let rejoined = out.replace(['\r', '\n'], "");
                assert!(!out.contains(secret) && !seen.contains(secret), "{answer:?} gave {out:?}");
                assert!(!rejoined.contains(secret), "{answer:?} gave {out:?}: its lines rejoin to the secret");
            }
            let once = outbound_answer(&answer, &[], &retrieved);
            assert_eq!(outbound_answer(&once, &[], &retrieved), once, "{answer:?}");
        }
    }

    #[test]
    fn an_answer_without_secrets_passes_as_written() {
        let retrieved = std::collections::BTreeSet::from(["docs/refunds.md".to_string()]);
        let answer = "Refunds are possible within 14 days (docs/refunds.md#window).";
        assert_eq!(outbound_answer(answer, &[], &retrieved), answer);
    }
}
