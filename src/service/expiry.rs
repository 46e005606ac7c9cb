//! Approvals expire on time. A write that waits past `session.approval_ttl_secs` is recorded as
//! expired, the model is told it was denied, and the turn goes on by itself:
//! - a timer: every pending write this replica learns of (a turn that paused for one, or the
//!   sweep of the whole log at start) is scheduled at its expiry, and expired then;
//! - a touch: any reader or writer of a session (`GET /v1/sessions/{id}`, its events, a message,
//!   `/resume`, the lists of sessions and of approvals) first expires a write that is due, so
//!   nobody sees a request as pending after its TTL, whichever replica they ask.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::Instrument;

use super::turns::{self, Start};
use super::waiting::{is_due, schedule};
use super::{Refused, Service};
use crate::session::state::{self};
use crate::session::store::Stored;

/// Expires session `id`'s pending write if `events` show it due: recorded under the session's
/// lock, then the turn goes on in its own task. Returns once the expiry is recorded (true), or
/// at once when nothing was due (false); the caller reads the session again after a true.
pub async fn touch(state: &Arc<Service>, id: &str, events: &[Stored]) -> Result<bool, Refused> {
    if !is_due(state, events) {
        return Ok(false);
    }
    expire(state, id).await
}

/// Records the expiry of session `id`'s write and lets its turn go on.
async fn expire(state: &Arc<Service>, id: &str) -> Result<bool, Refused> {
    let (reply, recorded) = tokio::sync::oneshot::channel();
    let (continued, session) = (state.clone(), id.to_string());
    tokio::spawn(
        async move {
            // Its outcome is in the session's events.
            let _ = turns::run(continued, session, Start::Expire { reply }).await;
        }
        .in_current_span(),
    );
    match recorded.await {
        Ok(Ok(expired)) => Ok(expired),
        // Another writer holds the session (a decision racing the expiry): it decides.
        Ok(Err(e)) if e.is_busy() => Ok(false),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Refused::Internal("the expiry's task ended before recording it".into())),
    }
}

/// The events of session `id` if `principal` owns it (404 otherwise), with a write that was due
/// expired first: what every route of a session reads.
pub async fn owned_now(
    state: &Arc<Service>,
    id: &str,
    principal: &crate::service::Principal,
) -> Result<Vec<Stored>, Refused> {
    let read = || crate::runtime::blocking(|| super::owner::owned(&state.log()?, id, principal));
    let events = read()?;
    if touch(state, id, &events).await? { read() } else { Ok(events) }
}

/// Starts the timer: every pending write in the log is scheduled (a replica that starts after a
/// request was made still expires it), then each is expired when it is due. Stops when the
/// server stops.
pub fn start(state: &Arc<Service>) -> tokio::task::JoinHandle<()> {
    let swept = state.clone();
    let weak = Arc::downgrade(state);
    tokio::spawn(
        async move {
            let found = crate::runtime::blocking(|| sweep(&swept));
            drop(swept);
            if let Err(e) = found {
                tracing::warn!("cannot look for pending writes to expire: {e}");
            }
            run(weak).await;
        }
        .in_current_span(),
    )
}

/// Schedules every pending write of the log.
fn sweep(state: &Service) -> Result<(), String> {
    let log = state.log().map_err(|e| e.to_string())?;
    for id in log.sessions().map_err(|e| e.to_string())? {
        let events = log.events_after(&id, 0).map_err(|e| e.to_string())?;
        if state::owner(&events).is_some() {
            schedule(state, &id, &events);
        }
    }
    Ok(())
}

/// The longest the timer sleeps before it looks again.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// Sleeps until the soonest expiry (or a new, sooner one), then expires what is due. Ends
/// when the server stops or its state is gone.
async fn run(state: Weak<Service>) {
    loop {
        let Some(strong) = state.upgrade() else { return };
        if *strong.stopping().borrow() {
            return;
        }
        let now = crate::session::turn::now_ms();
        let (due, next): (Vec<String>, Option<u64>) = {
            let mut schedule = strong.expiry.due.lock().unwrap_or_else(|p| p.into_inner());
            let later = schedule.split_off(&(now.saturating_add(1), String::new()));
            let due = std::mem::replace(&mut *schedule, later).into_iter().map(|(_, id)| id).collect();
            (due, schedule.first().map(|(at, _)| *at))
        };
        for id in due {
            // The session may have been decided or expired meanwhile: only a due one is.
            let events = crate::runtime::blocking(|| strong.log().and_then(|log| log.events_after(&id, 0)));
            match events {
                Ok(events) if is_due(&strong, &events) => {
                    if let Err(e) = expire(&strong, &id).await {
                        tracing::warn!(session = %id, "the pending write was not expired: {e}");
                    }
                }
                Ok(events) => schedule(&strong, &id, &events),
                Err(e) => tracing::warn!(session = %id, "cannot read a session to expire its write: {e}"),
            }
        }
        let wait = next.map_or(MAX_SLEEP, |at| Duration::from_millis(at.saturating_sub(now)).min(MAX_SLEEP));
        // Asleep, the timer holds no strong reference to the state: a server that lets its
        // state go frees it at once (its stop signal's sender goes with it, which ends this).
        let mut stopping = strong.stopping();
        let changed = Arc::clone(&strong.expiry.changed);
        drop(strong);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = changed.notified() => {}
            _ = stopping.changed() => return,
        }
    }
}
