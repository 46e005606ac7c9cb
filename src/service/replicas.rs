//! Several `serve` replicas on one PostgreSQL session log (`session.log_url`):
//! - followers on this replica wake for events committed on any replica (LISTEN/NOTIFY);
//! - a cancel asked on another replica reaches the turn running here;
//! - a turn whose replica died is taken over here once its lease lapses, exactly once: the
//!   lease lets one replica in, and the turn goes on from what its log says.
//!
//! On a SQLite log there is one replica, and nothing here runs.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::Instrument;

use super::Service;
use super::turns::{self, Start};
use crate::session::state::{self, Status};
use crate::session::store::postgres::{Heard, Listening};

/// What runs while serving on a shared log; stopped when dropped.
pub struct Replicas {
    /// The notifications.
    _listening: Option<Listening>,
    /// The task that takes over lapsed turns.
    sweeper: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Replicas {
    fn drop(&mut self) {
        if let Some(sweeper) = &self.sweeper {
            sweeper.abort();
        }
    }
}

/// Starts listening and sweeping when the log is shared (PostgreSQL).
pub fn start(state: &Arc<Service>) -> Replicas {
    if !state.store.shared() {
        return Replicas { _listening: None, sweeper: None };
    }
    let weak = Arc::downgrade(state);
    let listening = state.store.listen(Arc::new(move |heard| hear(&weak, heard)));
    let every = Duration::from_secs(state.config.session.lease_secs.max(1));
    let sweeper = tokio::spawn(sweep(Arc::downgrade(state), every).in_current_span());
    Replicas { _listening: listening, sweeper: Some(sweeper) }
}

/// Acts on what another replica announced.
fn hear(state: &Weak<Service>, heard: Heard) {
    let Some(state) = state.upgrade() else { return };
    match heard {
        Heard::Appended(session, seq) => state.watchers.notify(&session, seq),
        Heard::Listening => state.watchers.notify_all(),
        Heard::Cancel(session) => {
            if let Some(canceller) = state.running.lock().unwrap_or_else(|p| p.into_inner()).get(&session) {
                tracing::info!(%session, "cancelling the turn, as asked on another replica");
                canceller.cancel();
            }
        }
    }
}

/// Every `every`, takes over the turns whose replica's lease lapsed.
async fn sweep(state: Weak<Service>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else { return };
        if *state.stopping().borrow() {
            return;
        }
        let lapsed = crate::runtime::blocking(|| {
            state.log().map_err(|e| e.to_string()).and_then(|log| log.lapsed().map_err(|e| e.to_string()))
        });
        match lapsed {
            Ok(sessions) => {
                for session in sessions {
                    take_over(&state, session);
                }
            }
            Err(e) => tracing::warn!("cannot look for turns to take over: {e}"),
        }
    }
}

/// Goes on with `session`'s turn if it is unfinished and runs nowhere; else only clears its
/// lapsed lease.
fn take_over(state: &Arc<Service>, session: String) {
    if state.running.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&session) {
        return;
    }
    let status = crate::runtime::blocking(|| {
        let log = state.log().map_err(|e| e.to_string())?;
        let events = log.events_after(&session, 0).map_err(|e| e.to_string())?;
        if state::status(&events) == Status::InTurn {
            return Ok(Status::InTurn);
        }
        // Taken and released at once: the lapsed row goes.
        drop(log.lock(&session));
        Ok::<_, String>(state::status(&events))
    });
    match status {
        Ok(Status::InTurn) => {
            tracing::info!(%session, "taking over a turn whose replica stopped renewing its lease");
            let state = state.clone();
            tokio::spawn(
                async move {
                    if let Err(e) = turns::run(state, session.clone(), Start::Continue).await {
                        tracing::warn!(%session, "the turn was not taken over: {e}");
                    }
                }
                .in_current_span(),
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(%session, "cannot look at a session with a lapsed lease: {e}"),
    }
}
