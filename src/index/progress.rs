//! The progress line of a long index update, on a terminal only: `indexing docs/: 1200 of
//! 2909 files`, redrawn in place, erased when done. Short updates show nothing.

use std::io::Write;

/// Updates with fewer documents to read than this show no progress.
const WORTH_SHOWING: usize = 200;
/// Redraw every this many documents.
const EVERY: usize = 50;

/// A progress line on stderr, or nothing when stderr is not a terminal.
pub struct Line {
    /// False when stderr is not a terminal.
    shown: bool,
    /// True while a line is on the screen.
    drawn: bool,
}

impl Line {
    /// A line on stderr if it is a terminal.
    pub fn on_stderr() -> Line {
        Line { shown: crate::guard::sink::stderr_is_terminal(), drawn: false }
    }

    /// Shows that `done` of `total` documents are read; erases the line when all are.
    pub fn show(&mut self, done: usize, total: usize) {
        if !self.shown || total < WORTH_SHOWING {
            return;
        }
        let mut err = crate::guard::sink::stderr();
        if done >= total {
            if self.drawn {
                let _ = write!(err, "\r\x1b[2K");
                self.drawn = false;
            }
        } else if done.is_multiple_of(EVERY) {
            let _ = write!(err, "\r\x1b[2Kindexing docs/: {done} of {total} files");
            self.drawn = true;
        }
        let _ = err.flush();
    }
}
