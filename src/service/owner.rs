//! Whose session it is: a session is shown to its owner only; to anyone else (and for an id
//! that is not one) it does not exist (404).

use super::Refused;
use crate::service::Principal;
use crate::session::state;
use crate::session::store::{Log, Stored};

/// The events of session `id` if `principal` owns it and reads its collection; 404 otherwise
/// (also for a bad id).
pub fn owned(log: &Log, id: &str, principal: &Principal) -> Result<Vec<Stored>, Refused> {
    let events = existing(log, id)?;
    if state::owner(&events) != Some(principal.name.as_str()) {
        return Err(Refused::NotFound("session"));
    }
    // A session in a collection its owner no longer reads is not theirs to see either.
    if !reads_its_collection(principal, &events) {
        return Err(Refused::NotFound("session"));
    }
    Ok(events)
}

/// True when `principal` reads the collection of the session whose `events` these are (one from
/// before collections reads `default`).
pub fn reads_its_collection(principal: &Principal, events: &[Stored]) -> bool {
    principal.reads(state::reads_collection(events))
}

/// The events of session `id`, whoever owns it; 404 when there is none (also for a bad id).
pub fn existing(log: &Log, id: &str) -> Result<Vec<Stored>, Refused> {
    if crate::session::check_id(id).is_err() {
        return Err(Refused::NotFound("session"));
    }
    let events = log.events_after(id, 0)?;
    if events.is_empty() {
        return Err(Refused::NotFound("session"));
    }
    Ok(events)
}
