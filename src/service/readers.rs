//! The log handles that followers of a session read through, shared: a stream that follows a
//! session holds no handle of its own (on SQLite a handle is a connection, three file
//! descriptors), so descriptors do not grow with the number of followers. At most [`READERS`]
//! reads run at once; the handles are opened on first use and kept.

use std::sync::Mutex;

use super::Refused;
use crate::session::store::{Log, LogError, Store};

/// Log handles shared by every follower.
pub const READERS: usize = 4;

/// The shared handles, and the slots that bound their use.
pub struct Readers {
    /// Handles not in use now.
    free: Mutex<Vec<Log>>,
    /// One per handle that may be in use.
    slots: tokio::sync::Semaphore,
}

impl Default for Readers {
    fn default() -> Readers {
        Readers { free: Mutex::new(Vec::new()), slots: tokio::sync::Semaphore::new(READERS) }
    }
}

impl Readers {
    /// Runs `read` on a shared handle on `store`'s log, waiting for one to be free.
    pub async fn read<R>(&self, store: &Store, read: impl FnOnce(&Log) -> Result<R, LogError>) -> Result<R, Refused> {
        let _slot = self.slots.acquire().await.map_err(|_| Refused::Internal("the log's readers are closed".into()))?;
        let taken = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let log = match taken {
            Some(log) => log,
            None => store.log()?,
        };
        let result = crate::runtime::blocking(|| read(&log));
        // A handle that failed may be broken: it is dropped, and a new one opened next time.
        if result.is_ok() {
            self.free.lock().unwrap_or_else(|p| p.into_inner()).push(log);
        }
        result.map_err(Refused::from)
    }
}
