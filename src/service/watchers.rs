//! Who follows a session: each session's last sequence number, watched, so a stream (or any
//! follower) wakes when the log grows, on this replica or, through the store's notifications,
//! on another.

use std::collections::HashMap;
use std::sync::Mutex;

/// Per-session notifications of new events.
#[derive(Default)]
pub struct Watchers(Mutex<HashMap<String, tokio::sync::watch::Sender<u64>>>);

impl Watchers {
    /// Session `id` has events up to `seq`: wakes its followers.
    pub fn notify(&self, id: &str, seq: u64) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(id) {
            tx.send_replace(seq);
        }
        // Forget sessions nobody follows any more, so the map does not grow.
        map.retain(|_, tx| tx.receiver_count() > 0);
    }

    /// Wakes every follower: they read their session again (what was announced while the
    /// notifications were down was missed).
    pub fn notify_all(&self) {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for tx in map.values() {
            tx.send_modify(|_| {});
        }
    }

    /// Follows session `id` (subscribe before reading the log, so no append is missed).
    pub fn watch(&self, id: &str) -> tokio::sync::watch::Receiver<u64> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_string()).or_insert_with(|| tokio::sync::watch::channel(0).0).subscribe()
    }
}
