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
    /// The count last drawn.
    last: usize,
}

impl Line {
    /// A line on stderr if it is a terminal.
    pub fn on_stderr() -> Line {
        Line { shown: crate::guard::sink::stderr_is_terminal(), drawn: false, last: 0 }
    }

    /// Shows that `done` of `total` documents are read; erases the line when all are.
    pub fn show(&mut self, done: usize, total: usize) {
        self.show_as("indexing docs/", "files", done, total);
    }

    /// Shows `{what}: {done} of {total} {unit}` (`embedding sections: 640 of 9120 sections`);
    /// erases the line when all are done.
    pub fn show_as(&mut self, what: &str, unit: &str, done: usize, total: usize) {
        if !self.shown || total < WORTH_SHOWING {
            return;
        }
        let mut err = crate::guard::sink::stderr();
        if done >= total {
            if self.drawn {
                let _ = write!(err, "\r\x1b[2K");
                self.drawn = false;
            }
        } else if !self.drawn || done >= self.last + EVERY || done < self.last {
            let _ = write!(err, "\r\x1b[2K{what}: {done} of {total} {unit}");
            self.drawn = true;
            self.last = done;
        }
        let _ = err.flush();
    }
}
