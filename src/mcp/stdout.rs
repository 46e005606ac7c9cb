//! The last step of `docs-agent mcp`'s stdout: every string in every protocol message scrubbed.
//!
//! What the tools return was guarded where it was made; this writer scrubs once more at the
//! very end, as `guard::sink` does for everything else the command line prints. It cannot
//! redact lines of text as `guard::sink` does (a redaction could cut a JSON string's closing
//! quote), so it reads each line as the JSON message it is, scrubs every string value in it,
//! and writes the message again. Nothing transforms a message after that step.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::AsyncWrite;

/// Writes JSON lines to `inner` with every string value scrubbed. What it holds is bounded by
/// one message: the SDK flushes after each, and a flush waits until `inner` took everything.
pub struct Scrubbed<W> {
    /// Where the scrubbed messages go (stdout).
    inner: W,
    /// Bytes after the last line break, not yet a whole message.
    pending: Vec<u8>,
    /// Scrubbed messages not yet written to `inner`.
    out: Vec<u8>,
}

impl<W> Scrubbed<W> {
    /// A writer in front of `inner`.
    pub fn new(inner: W) -> Scrubbed<W> {
        Scrubbed { inner, pending: Vec::new(), out: Vec::new() }
    }

    /// Moves every whole line of `pending` to `out`, scrubbed.
    fn take_lines(&mut self) {
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.out.extend_from_slice(&scrub_line(&line[..end]));
            self.out.push(b'\n');
        }
    }
}

/// One message with every string in it scrubbed; a line that is not JSON (never written by the
/// SDK) is scrubbed as text.
fn scrub_line(line: &[u8]) -> Vec<u8> {
    let as_text = || crate::guard::scrub(&String::from_utf8_lossy(line)).into_owned().into_bytes();
    match serde_json::from_slice::<Value>(line) {
        Ok(mut message) => {
            crate::guard::scrub_json(&mut message);
            // Serialising a Value cannot fail; were it to, the text is still written, scrubbed.
            serde_json::to_vec(&message).unwrap_or_else(|_| as_text())
        }
        Err(_) => as_text(),
    }
}

impl<W: AsyncWrite + Unpin> Scrubbed<W> {
    /// Writes what `out` holds to `inner`.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.out.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Scrubbed<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        // Held until its line ends; written out on flush (the SDK flushes after each message).
        self.pending.extend_from_slice(buf);
        self.take_lines();
        match self.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) | Poll::Pending => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.pending.is_empty() {
            self.pending.push(b'\n');
            self.take_lines();
        }
        match self.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A message written in pieces comes out whole, valid, with a secret in any string
    /// redacted and everything else as it was.
    #[test]
    fn every_string_of_a_message_is_scrubbed_and_the_message_stays_valid() {
        let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
        let message = serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": format!("the key is {key}\n\"quoted\"")}],
            "structuredContent": {"n": 3, "ok": true, "list": [key, null]}
        }});
        let line = format!("{message}\n");
        let runtime = crate::runtime::build(crate::runtime::Flavor::OneThread).expect("runtime");
        let written = runtime.block_on(async {
            let mut out = Scrubbed::new(Vec::new());
            let (a, b) = line.as_bytes().split_at(30);
            out.write_all(a).await.expect("write");
            out.write_all(b).await.expect("write");
            out.flush().await.expect("flush");
            out.inner
        });
        let text = String::from_utf8(written).expect("utf-8");
        assert!(text.ends_with('\n') && !text.contains(key), "{text}");
        let back: Value = serde_json::from_str(&text).expect("still one JSON message");
        assert_eq!(back["id"], 7);
        assert_eq!(back["result"]["structuredContent"]["n"], 3);
        assert!(
            back["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("[REDACTED") && t.ends_with("\"quoted\""))
        );
        assert!(back["result"]["structuredContent"]["list"][0].as_str().is_some_and(|t| t.contains("[REDACTED")));
    }
}
