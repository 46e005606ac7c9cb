//! Fair shares: what one principal may hold at once, so one user at full speed cannot starve
//! the rest. Turns running and streams following sessions are counted per principal while they
//! live ([`Held`] gives its place back when dropped); session starts are paced per principal;
//! open sessions are counted in the log (`sessions::create`), so that cap holds across replicas.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::Refused;
use super::limits::RateLimiter;
use crate::config::ServeConfig;

/// How many of one thing each principal holds now.
type Counts = Arc<Mutex<HashMap<String, usize>>>;

/// What one principal holds a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Turns running at once (`serve.max_turns_per_principal`).
    Turns,
    /// Streams following sessions at once (`serve.max_followers_per_principal`).
    Followers,
    /// Session starts a minute (`serve.sessions_per_minute`).
    Starts,
}

impl Share {
    /// The error code a refusal over this share carries.
    pub fn code(self) -> &'static str {
        match self {
            Share::Turns => "too_many_turns",
            Share::Followers => "too_many_followers",
            Share::Starts => "too_many_starts",
        }
    }
}

/// The per-principal caps and what each principal holds.
pub struct Shares {
    /// Turns running, by principal.
    turns: Counts,
    /// Streams following sessions, by principal.
    followers: Counts,
    /// Session starts, paced per principal.
    starts: RateLimiter,
    /// Turns one principal runs at once.
    max_turns: crate::config::Share,
    /// Streams one principal holds following sessions.
    max_followers: crate::config::Share,
}

/// One place taken in a principal's share; given back when dropped.
#[derive(Debug)]
pub struct Held {
    /// Where it was counted.
    counts: Counts,
    /// Whose it is.
    principal: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.principal);
            }
        }
    }
}

impl Shares {
    /// The shares `serve` sets.
    pub fn new(serve: &ServeConfig) -> Shares {
        Shares {
            turns: Counts::default(),
            followers: Counts::default(),
            starts: RateLimiter::new(serve.sessions_per_minute),
            max_turns: serve.shares().turns,
            max_followers: serve.shares().followers,
        }
    }

    /// A place for one more turn of `principal`'s, or 429 `too_many_turns`.
    pub fn turn(&self, principal: &str) -> Result<Held, Refused> {
        take(&self.turns, principal, self.max_turns.max).ok_or_else(|| Refused::OverShare {
            share: Share::Turns,
            message: format!(
                "{} of your turns are running ({}); wait for one to finish",
                self.max_turns.max, self.max_turns.setting
            ),
            retry_after: 2,
        })
    }

    /// A place for one more stream of `principal`'s following a session, or 429
    /// `too_many_followers`.
    pub fn follower(&self, principal: &str) -> Result<Held, Refused> {
        take(&self.followers, principal, self.max_followers.max).ok_or_else(|| Refused::OverShare {
            share: Share::Followers,
            message: format!(
                "you follow {} sessions already ({}); close a stream first",
                self.max_followers.max, self.max_followers.setting
            ),
            retry_after: 5,
        })
    }

    /// `principal` may start a session now, or 429 `too_many_starts` with when to try again.
    pub fn start(&self, principal: &str) -> Result<(), Refused> {
        self.starts.check(principal).map_err(|wait| Refused::OverShare {
            share: Share::Starts,
            message: "you started sessions faster than serve.sessions_per_minute; reuse one, or try again shortly"
                .into(),
            retry_after: wait,
        })
    }
}

/// Counts one more for `principal` in `counts` when it holds fewer than `max`.
fn take(counts: &Counts, principal: &str, max: usize) -> Option<Held> {
    let mut held = counts.lock().unwrap_or_else(|p| p.into_inner());
    let n = held.entry(principal.to_string()).or_insert(0);
    if *n >= max {
        return None;
    }
    *n += 1;
    Some(Held { counts: counts.clone(), principal: principal.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A principal's places run out at its cap and come back when dropped; another
    /// principal's are its own.
    #[test]
    fn a_share_runs_out_at_its_cap_and_comes_back_when_given_up() {
        let counts = Counts::default();
        let first = take(&counts, "ana", 2).expect("one");
        let second = take(&counts, "ana", 2).expect("two");
        assert!(take(&counts, "ana", 2).is_none(), "the cap holds");
        assert!(take(&counts, "bo", 2).is_some(), "another principal is not held back");
        drop(first);
        let third = take(&counts, "ana", 2).expect("a place came back");
        drop((second, third));
        assert!(counts.lock().expect("lock").get("ana").is_none(), "nothing held, nothing kept");
    }
}
