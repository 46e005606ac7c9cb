//! The circuit breaker in front of the model server: after `serve.breaker_failures` failures in
//! a row it opens, and answers become retrieval-only (flagged `degraded`) instead of errors.
//! After `serve.breaker_cooldown_secs` one request tries the model again: success closes it,
//! failure keeps it open for another cooldown.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::session::turn::now_ms;

/// The breaker.
pub struct Breaker {
    /// Failures in a row.
    failures: AtomicU32,
    /// While `now < open_until`, the model is not tried.
    open_until_ms: AtomicU64,
    /// Failures that open it.
    threshold: u32,
    /// How long it stays open.
    cooldown_ms: u64,
}

impl Breaker {
    /// Opens after `threshold` failures in a row, for `cooldown_secs`.
    pub fn new(threshold: u32, cooldown_secs: u64) -> Breaker {
        Breaker {
            failures: AtomicU32::new(0),
            open_until_ms: AtomicU64::new(0),
            threshold: threshold.max(1),
            cooldown_ms: cooldown_secs.saturating_mul(1000),
        }
    }

    /// May the model be tried now? (Closed, or the cooldown is over: one try.)
    pub fn allows(&self) -> bool {
        self.allows_at(now_ms())
    }

    fn allows_at(&self, now: u64) -> bool {
        let until = self.open_until_ms.load(Ordering::Acquire);
        if until == 0 || now < until {
            return until == 0;
        }
        // Half-open: the first caller after the cooldown pushes the deadline on and tries.
        self.open_until_ms.compare_exchange(until, now + self.cooldown_ms, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// The model answered.
    pub fn success(&self) {
        self.failures.store(0, Ordering::Release);
        self.open_until_ms.store(0, Ordering::Release);
    }

    /// The model failed.
    pub fn failure(&self) {
        self.failure_at(now_ms());
    }

    fn failure_at(&self, now: u64) {
        let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        if failures >= self.threshold {
            self.open_until_ms.store(now + self.cooldown_ms, Ordering::Release);
        }
    }

    /// True while open.
    pub fn is_open(&self) -> bool {
        self.open_until_ms.load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_failures_tries_once_after_the_cooldown_and_closes_on_success() {
        let breaker = Breaker::new(2, 10);
        assert!(breaker.allows_at(1_000));
        breaker.failure_at(1_000);
        assert!(breaker.allows_at(1_000), "one failure is not enough");
        breaker.failure_at(1_000);
        assert!(!breaker.allows_at(5_000), "open during the cooldown");
        assert!(breaker.allows_at(11_000), "one try after the cooldown");
        assert!(!breaker.allows_at(11_001), "only one");
        breaker.failure_at(11_001);
        assert!(!breaker.allows_at(12_000), "a failed try keeps it open");
        breaker.success();
        assert!(breaker.allows_at(12_000) && !breaker.is_open(), "a success closes it");
    }
}
