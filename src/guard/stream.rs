//! Streaming an answer safely: text is let out a paragraph at a time, each time by guarding
//! everything received so far (sanitise, redact, neutralise links) and sending only what extends
//! what was already sent. A secret or a link definition within a paragraph is whole before any
//! of it leaves. If guarding ever changes text already sent, nothing more is streamed and the
//! final answer (guarded in full, citations marked) is the only word.

/// The streamer for one reply.
#[derive(Debug, Default)]
pub struct StreamGuard {
    /// Everything received.
    raw: String,
    /// Everything let out.
    sent: String,
    /// Guarding changed earlier text: stream no more.
    stopped: bool,
    /// Hosts links may point to.
    allowed_hosts: Vec<String>,
}

impl StreamGuard {
    /// A streamer letting links to `allowed_hosts` through.
    pub fn new(allowed_hosts: &[String]) -> StreamGuard {
        StreamGuard { allowed_hosts: allowed_hosts.to_vec(), ..StreamGuard::default() }
    }

    /// Takes a piece of the reply; returns text to send once a paragraph is complete.
    pub fn push(&mut self, delta: &str) -> Option<String> {
        self.raw.push_str(delta);
        let end = self.raw.rfind("\n\n")? + 2;
        self.release(end)
    }

    /// The reply ended: whatever is left.
    pub fn finish(&mut self) -> Option<String> {
        self.release(self.raw.len())
    }

    fn release(&mut self, end: usize) -> Option<String> {
        if self.stopped {
            return None;
        }
        let guarded = super::outbound(&self.raw[..end], &self.allowed_hosts);
        match guarded.strip_prefix(self.sent.as_str()) {
            Some(new) if !new.is_empty() => {
                let new = new.to_string();
                self.sent = guarded;
                Some(new)
            }
            Some(_) => None,
            None => {
                self.stopped = true;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(pieces: &[&str]) -> String {
        let mut guard = StreamGuard::new(&[]);
        let mut out = String::new();
        for piece in pieces {
            out.extend(guard.push(piece));
        }
        out.extend(guard.finish());
        out
    }

    #[test]
    fn paragraphs_leave_whole_and_guarded() {
        let pieces = [
            "Refunds take ",
            "14 days.\n",
            "\nThe key is sk_live_4eC39Hq",
            "LyjWDarjtT1zdp7dc",
            " ok.\n\n![x](https://evil.example/",
            "?q=1)",
        ];
        let out = stream(&pieces);
        assert!(out.starts_with("Refunds take 14 days.\n\n"), "{out}");
        assert!(!out.contains("4eC39HqLyjWDarjtT1zdp7dc") && !out.contains("sk_live_4eC39Hq"), "{out}");
        assert!(!out.contains("https://evil.example"), "{out}");
        let mut guard = StreamGuard::new(&[]);
        assert_eq!(guard.push("no paragraph end yet"), None, "nothing leaves mid-paragraph");
        assert_eq!(guard.push(" sk_live_4eC39Hq"), None);
    }

    #[test]
    fn a_secret_split_across_pieces_never_leaves_in_part() {
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        for cut in 1..secret.len() {
            let out = stream(&["token: ", &secret[..cut], &secret[cut..], "\n\nnext"]);
            assert!(!out.contains("ghp_a") && !out.contains("abcdefghij"), "cut {cut}: {out}");
            assert!(out.contains("[REDACTED]"), "cut {cut}: {out}");
        }
    }
}
