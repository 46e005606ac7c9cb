//! The zygotes, shared by every thread that reads a PDF: a PDF takes a free zygote for as long
//! as it is read, and waits (on a condition variable, not spinning) while all are reading.

use std::collections::VecDeque;
use std::os::unix::net::UnixStream;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The zygotes, each behind its socket.
pub(super) struct Pool {
    /// The zygotes no PDF holds, and how many answer at all.
    slots: Mutex<Slots>,
    /// Told when a zygote is put back or given up.
    changed: Condvar,
}

/// What [`Pool`] guards.
struct Slots {
    /// The sockets of the zygotes waiting for a PDF, the one that has waited longest first, so
    /// that PDFs read one after another go to each zygote in turn.
    free: VecDeque<UnixStream>,
    /// Zygotes still in use, free or reading: with none left, no PDF can be read.
    live: usize,
}

impl Pool {
    /// A pool of the zygotes behind `sockets`, all free.
    pub(super) fn new(sockets: Vec<UnixStream>) -> Pool {
        let live = sockets.len();
        Pool { slots: Mutex::new(Slots { free: sockets.into(), live }), changed: Condvar::new() }
    }

    /// A free zygote, once one is free; `None` when every zygote has been given up.
    pub(super) fn take(&self) -> Option<Slot<'_>> {
        let mut slots = self.slots();
        loop {
            if let Some(socket) = slots.free.pop_front() {
                return Some(Slot { pool: self, socket: Some(socket) });
            }
            if slots.live == 0 {
                return None;
            }
            slots = self.changed.wait(slots).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The slots, locked. (Nothing panics while holding them, and what they hold stays
    /// whole if something did.)
    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A zygote taken for one PDF: put back when dropped, unless it failed to answer.
pub(super) struct Slot<'a> {
    /// Where it goes back.
    pool: &'a Pool,
    /// Its socket; `None` once given up.
    socket: Option<UnixStream>,
}

impl Slot<'_> {
    /// Sends `parts` as one message, then waits at most `wait` for the reply, of at most `max`
    /// bytes. A zygote that does not answer so is given up and its socket closed (which ends
    /// it): a reply that came late would otherwise be read as the next PDF's.
    pub(super) fn ask(&mut self, parts: &[&[u8]], wait: Duration, max: usize) -> std::io::Result<Vec<u8>> {
        let Some(socket) = self.socket.as_mut() else {
            return Err(std::io::Error::other("this PDF reader was given up"));
        };
        let reply = super::send_parts(socket, parts).and_then(|()| {
            socket.set_read_timeout(Some(wait))?;
            super::receive(socket, max)
        });
        if reply.is_err() {
            self.socket = None;
        }
        reply
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut slots = self.pool.slots();
        match self.socket.take() {
            Some(socket) => {
                slots.free.push_back(socket);
                self.pool.changed.notify_one();
            }
            None => {
                slots.live = slots.live.saturating_sub(1);
                // Those waiting learn when none is left.
                self.pool.changed.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::Pool;

    /// A bound on each wait, so that a hang fails the test instead of stopping the suite.
    const HANG: Duration = Duration::from_secs(60);

    /// A pool of `n` zygotes' sockets, and the zygotes' ends (drop one: its zygote is gone).
    fn pool(n: usize) -> (Pool, Vec<UnixStream>) {
        let (ours, theirs): (Vec<_>, Vec<_>) = (0..n).map(|_| UnixStream::pair().expect("a socket pair")).unzip();
        (Pool::new(ours), theirs)
    }

    /// While one PDF holds a zygote, a second PDF takes the other, without waiting for the first.
    #[test]
    fn two_pdfs_hold_two_zygotes_at_once() {
        let (pool, _zygotes) = pool(2);
        let first = pool.take().expect("a zygote");
        let (took, taken) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let second = pool.take();
                let _ = took.send(second.is_some());
            });
            let taken = taken.recv_timeout(HANG);
            drop(first);
            assert_eq!(taken, Ok(true), "the second PDF waited for the first one's zygote");
        });
    }

    /// With every zygote taken, a PDF waits, and takes the zygote put back.
    #[test]
    fn a_pdf_waits_for_a_zygote_put_back() {
        let (pool, _zygotes) = pool(1);
        let first = pool.take().expect("a zygote");
        let (took, taken) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _ = took.send(pool.take().is_some());
            });
            drop(first);
            assert_eq!(taken.recv_timeout(HANG), Ok(true));
        });
    }

    /// A zygote that does not answer is given up, not put back nor asked again; when none is
    /// left, a PDF waiting for one, and any PDF after it, is told so instead of waiting for ever.
    #[test]
    fn a_zygote_that_does_not_answer_is_given_up() {
        let (pool, mut zygotes) = pool(1);
        let mut first = pool.take().expect("a zygote");
        zygotes.clear(); // the zygote is gone: its socket closed
        let (took, taken) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _ = took.send(pool.take().is_some());
            });
            assert!(first.ask(&[b"pdf"], HANG, 64).is_err());
            let again = first.ask(&[b"pdf"], HANG, 64).map_err(|e| e.to_string());
            assert_eq!(again, Err("this PDF reader was given up".into()), "a zygote given up is not asked again");
            drop(first);
            assert_eq!(taken.recv_timeout(HANG), Ok(false), "the waiting PDF is told none is left");
        });
        assert!(pool.take().is_none());
    }
}
