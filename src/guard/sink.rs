//! The process's own output: everything docs-agent prints goes through [`stdout`] or
//! [`stderr`], whose last step is redaction.
//!
//! Answers, traces and messages are guarded where they are made; these writers redact once more
//! at the very end, a line at a time (or a whole block of lines, as written), so a secret in an
//! error message, a path or a report line never reaches a terminal, a pipe or a log collector.
//! Nothing transforms the text after that step. `clippy.toml` forbids `println!`, `eprintln!`,
//! `std::io::stdout` and `std::io::stderr` everywhere else.
//!
//! A writer holds back a line until its end (or until `flush`, for a prompt or a progress line
//! drawn in place), so a secret written in two pieces is whole when it is redacted. Only
//! redaction runs here: the terminal controls docs-agent writes itself (erasing a progress line)
//! pass; text from elsewhere was sanitised where it was made.

#![allow(clippy::disallowed_methods)]

use std::io::{self, IsTerminal, Write};

use super::redact::redact;

/// `println!` through [`stdout`]: a line on standard output, redacted. A failed write (a closed
/// pipe) is dropped: there is nowhere left to report it.
macro_rules! out_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::guard::sink::stdout(), $($arg)*);
    }};
}
pub(crate) use out_line;

/// `eprintln!` through [`stderr`]: a line on standard error, redacted.
macro_rules! err_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::guard::sink::stderr(), $($arg)*);
    }};
}
pub(crate) use err_line;

/// `eprint!` through [`stderr`]: text with no line break (a prompt, a progress line drawn in
/// place), redacted and flushed.
macro_rules! err_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut sink = $crate::guard::sink::stderr();
        let _ = write!(sink, $($arg)*);
        let _ = sink.flush();
    }};
}
pub(crate) use err_part;

/// A writer that redacts what it passes on, a line (or a block of lines) at a time.
pub struct Sink<W: Write> {
    /// Where the redacted text goes.
    inner: W,
    /// Bytes written after the last line break, not yet passed on.
    pending: Vec<u8>,
}

/// Standard output, redacted.
pub fn stdout() -> Sink<io::StdoutLock<'static>> {
    Sink::new(io::stdout().lock())
}

/// Standard error, redacted.
pub fn stderr() -> Sink<io::StderrLock<'static>> {
    Sink::new(io::stderr().lock())
}

/// Standard error, redacted, without holding its lock: for a writer shared between threads.
pub fn stderr_shared() -> Sink<io::Stderr> {
    Sink::new(io::stderr())
}

/// What a failed write to standard output means for the command: a reader that went away
/// (`docs-agent export ID | head`) chose to stop reading, which is no failure (as ripgrep and
/// grep see it), so `Ok(false)`: stop writing and exit 0. Any other error stays an error.
pub fn reader_gone(result: io::Result<()>) -> io::Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

/// True when standard output is a terminal.
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// True when standard error is a terminal.
pub fn stderr_is_terminal() -> bool {
    io::stderr().is_terminal()
}

impl<W: Write> Sink<W> {
    /// A sink in front of `inner`.
    pub fn new(inner: W) -> Sink<W> {
        Sink { inner, pending: Vec::new() }
    }

    /// Redacts `bytes` (whole lines, or the rest at a flush) and passes them on.
    fn pass(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(bytes);
        self.inner.write_all(redact(&text).as_bytes())
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(last_break) = self.pending.iter().rposition(|&b| b == b'\n') {
            let rest = self.pending.split_off(last_break + 1);
            let lines = std::mem::replace(&mut self.pending, rest);
            self.pass(&lines)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let partial = std::mem::take(&mut self.pending);
        self.pass(&partial)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Sink<W> {
    fn drop(&mut self) {
        // Nothing to report to: the process's own output is where errors would go.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AKIAIOSFODNN7EXAMPLE";

    fn through(pieces: &[&str], flush: bool) -> String {
        let mut out = Vec::new();
        {
            let mut sink = Sink::new(&mut out);
            for piece in pieces {
                sink.write_all(piece.as_bytes()).expect("write to a Vec");
            }
            if flush {
                sink.flush().expect("flush to a Vec");
            }
        }
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn a_secret_written_in_pieces_is_redacted_whole() {
        for cut in 1..KEY.len() {
            let out = through(&["key: ", &KEY[..cut], &KEY[cut..], "\nnext line\n"], false);
            assert_eq!(out, "key: [REDACTED]\nnext line\n", "cut at {cut}");
        }
    }

    #[test]
    fn a_partial_line_is_redacted_at_flush_and_at_drop() {
        assert_eq!(through(&["you> ", KEY], true), "you> [REDACTED]");
        assert_eq!(through(&["no break ", KEY], false), "no break [REDACTED]");
    }

    #[test]
    fn a_private_key_written_as_one_block_goes_whole() {
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n";
        assert_eq!(through(&[pem], false), "[REDACTED]\n");
    }

    #[test]
    fn ordinary_text_and_terminal_controls_pass_unchanged() {
        let text = "\r\x1b[Kindexing 40/2800 docs\nrefunds within 14 days\n";
        assert_eq!(through(&[text], true), text);
    }
}
