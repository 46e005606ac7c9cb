//! Per-principal rate limiting: `serve.rate_per_minute` requests a minute (also the burst),
//! refilled evenly, each principal on its own, on `governor`'s keyed limiter (GCRA, which
//! admits what a token bucket of that size admits). (Body size, timeouts and global
//! concurrency with load shedding are tower layers in `serve::app`.)

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter as Gcra};

/// The limits of each principal.
pub struct RateLimiter<C: Clock = DefaultClock> {
    limiter: Gcra<String, HashMapStateStore<String>, C, NoOpMiddleware<C::Instant>>,
}

impl RateLimiter {
    /// `per_minute` requests a minute for each principal (at least 1).
    pub fn new(per_minute: u32) -> RateLimiter {
        RateLimiter::with_clock(per_minute, DefaultClock::default())
    }
}

impl<C: Clock> RateLimiter<C> {
    /// The same, timed by `clock` (a test's fake one).
    fn with_clock(per_minute: u32, clock: C) -> RateLimiter<C> {
        let quota = Quota::per_minute(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN));
        RateLimiter { limiter: Gcra::hashmap_with_clock(quota, clock) }
    }

    /// Takes one request from `principal`'s share, or says how many whole seconds to wait
    /// (at least 1), for a Retry-After.
    pub fn check(&self, principal: &str) -> Result<(), u64> {
        self.limiter.check_key(&principal.to_string()).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.limiter.clock().now());
            wait.as_secs_f64().ceil().max(1.0) as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use governor::clock::FakeRelativeClock;

    use super::*;

    #[test]
    fn a_principal_gets_its_burst_then_waits_and_others_are_unaffected() {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::with_clock(3, clock.clone());
        for _ in 0..3 {
            assert!(limiter.check("ana").is_ok());
        }
        let wait = limiter.check("ana").expect_err("over the limit");
        assert_eq!(wait, 20, "one request comes back every 20 s at 3 a minute");
        assert!(limiter.check("bo").is_ok(), "limits are per principal");
        clock.advance(Duration::from_secs(19));
        assert_eq!(limiter.check("ana"), Err(1), "a second left, said as one whole second");
        clock.advance(Duration::from_secs(1));
        assert!(limiter.check("ana").is_ok(), "refilled");
        assert!(limiter.check("ana").is_err());
    }

    #[test]
    fn a_limit_of_zero_is_read_as_one() {
        let limiter = RateLimiter::with_clock(0, FakeRelativeClock::default());
        assert!(limiter.check("ana").is_ok());
        assert_eq!(limiter.check("ana"), Err(60));
    }
}
