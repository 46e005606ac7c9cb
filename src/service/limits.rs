//! Per-principal rate limiting: a token bucket of `serve.rate_per_minute`, refilled evenly.
//! (Body size, timeouts and global concurrency with load shedding are tower layers in `app`.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// The buckets.
pub struct RateLimiter {
    /// Requests per minute, which is also the burst.
    per_minute: f64,
    /// Tokens left and when they were counted, by principal.
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// `per_minute` requests a minute for each principal.
    pub fn new(per_minute: u32) -> RateLimiter {
        RateLimiter { per_minute: f64::from(per_minute.max(1)), buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one request from `principal`'s bucket, or says how many seconds to wait.
    pub fn check(&self, principal: &str) -> Result<(), u64> {
        self.check_at(principal, Instant::now())
    }

    fn check_at(&self, principal: &str, now: Instant) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, at) = buckets.entry(principal.to_string()).or_insert((self.per_minute, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() * self.per_minute / 60.0;
        *tokens = (*tokens + refill).min(self.per_minute);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) * 60.0 / self.per_minute).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_principal_gets_its_burst_then_waits_and_others_are_unaffected() {
        let limiter = RateLimiter::new(3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check_at("ana", t0).is_ok());
        }
        let wait = limiter.check_at("ana", t0).expect_err("over the limit");
        assert_eq!(wait, 20, "one token comes back every 20 s at 3 a minute");
        assert!(limiter.check_at("bo", t0).is_ok(), "buckets are per principal");
        assert!(limiter.check_at("ana", t0 + Duration::from_secs(20)).is_ok(), "refilled");
        assert!(limiter.check_at("ana", t0 + Duration::from_secs(20)).is_err());
    }
}
