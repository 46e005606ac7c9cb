//! What replicas sharing the database tell each other, over PostgreSQL's LISTEN/NOTIFY: every
//! append announces `session seq` on `docs_agent_events` (sent at its commit, so never before
//! the event is durable), and a cancel asked on one replica is announced on `docs_agent_cancel`
//! for the replica that runs the turn. Each replica listens on one connection of its own,
//! outside the pool, and connects again when it is lost.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use super::{Store, describe};

/// The channel appends are announced on.
pub const EVENTS: &str = "docs_agent_events";
/// The channel cancels are announced on.
pub const CANCEL: &str = "docs_agent_cancel";

/// The longest pause before connecting again.
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// What a replica hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Session `.0` has events up to `.1` (committed on some replica).
    Appended(String, u64),
    /// Someone asked to cancel session `.0`'s running turn.
    Cancel(String),
    /// Listening (again): what was announced while not listening was missed.
    Listening,
}

impl Heard {
    /// Reads a notification; `None` for one that is not ours or is malformed.
    fn read(channel: &str, payload: &str) -> Option<Heard> {
        match channel {
            EVENTS => {
                let (session, seq) = payload.rsplit_once(' ')?;
                Some(Heard::Appended(session.to_string(), seq.parse().ok()?))
            }
            CANCEL => Some(Heard::Cancel(payload.to_string())),
            _ => None,
        }
    }
}

/// Listening; stops when dropped.
pub struct Listening(tokio::task::JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts listening on `store`'s database; `hear` is called (on the database thread: it must
/// not block) with everything heard.
pub fn listen(store: &Store, hear: Arc<dyn Fn(Heard) + Send + Sync>) -> Listening {
    let config = store.target.config().clone();
    let tls = store.tls.clone();
    let shown = store.target.shown().to_string();
    Listening(store.handle.spawn(async move {
        let mut pause = Duration::from_secs(1);
        loop {
            match config.connect(tls.clone()).await {
                Ok((client, mut connection)) => {
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                    let driver = tokio::spawn(async move {
                        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                        while let Some(message) = messages.next().await {
                            match message {
                                Ok(AsyncMessage::Notification(n)) => {
                                    if let Some(heard) = Heard::read(n.channel(), n.payload()) {
                                        let _ = tx.send(heard);
                                    }
                                }
                                Ok(_) => {}
                                Err(e) => {
                                    tracing::warn!("the session database's notifications stopped: {}", describe(&e));
                                    break;
                                }
                            }
                        }
                    });
                    match client.batch_execute(&format!("LISTEN {EVENTS}; LISTEN {CANCEL}")).await {
                        Ok(()) => {
                            pause = Duration::from_secs(1);
                            hear(Heard::Listening);
                            while let Some(heard) = rx.recv().await {
                                hear(heard);
                            }
                        }
                        Err(e) => tracing::warn!("cannot listen on the session database {shown}: {}", describe(&e)),
                    }
                    driver.abort();
                    drop(client);
                }
                Err(e) => tracing::warn!("cannot connect to the session database {shown} to listen: {}", describe(&e)),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RECONNECT_MAX);
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::Heard;

    #[test]
    fn notifications_are_read_or_ignored() {
        assert_eq!(Heard::read("docs_agent_events", "s-1 12"), Some(Heard::Appended("s-1".into(), 12)));
        assert_eq!(Heard::read("docs_agent_cancel", "s-1"), Some(Heard::Cancel("s-1".into())));
        assert_eq!(Heard::read("docs_agent_events", "s-1 x"), None);
        assert_eq!(Heard::read("other", "s-1 1"), None);
    }
}
