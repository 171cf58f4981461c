//! The validated retry policy of one service.

use crate::backoff::{Backoff, BackoffStrategy};
use crate::error::{secs_to_duration, PolicyError};
use std::num::NonZeroU32;
use std::time::Duration;

/// How a service's idempotent operations are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: NonZeroU32,
    backoff: Backoff,
    total_timeout: Duration,
    retry_on_idempotent_only: bool,
}

impl RetryPolicy {
    /// The default total wall-clock cap on one guarded call (R7): 300 s.
    pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(300);

    /// Validates and builds: `max_attempts ≥ 1`, `total_timeout > 0`.
    pub fn new(
        max_attempts: u32,
        backoff: Backoff,
        total_timeout: Duration,
    ) -> Result<Self, PolicyError> {
        let max_attempts = NonZeroU32::new(max_attempts)
            .ok_or_else(|| PolicyError::new("max_attempts", 0, "must be at least 1"))?;
        if total_timeout.is_zero() {
            return Err(PolicyError::new(
                "total_timeout",
                0,
                "must be greater than 0 seconds",
            ));
        }
        Ok(Self {
            max_attempts,
            backoff,
            total_timeout,
            retry_on_idempotent_only: true,
        })
    }

    /// As [`new`](Self::new) with the total timeout in seconds (finite, > 0).
    pub fn from_secs(
        max_attempts: u32,
        backoff: Backoff,
        total_timeout: f64,
    ) -> Result<Self, PolicyError> {
        Self::new(
            max_attempts,
            backoff,
            secs_to_duration("total_timeout", total_timeout)?,
        )
    }

    /// Sets whether only idempotent operations retry (C12, default `true`). With `false`,
    /// operations declared non-idempotent retry too: only for services whose writes are safe
    /// to repeat.
    #[must_use]
    pub fn with_retry_on_idempotent_only(mut self, yes: bool) -> Self {
        self.retry_on_idempotent_only = yes;
        self
    }

    /// Attempts in all, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.get()
    }
    /// The wait strategy.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    /// The total wall-clock cap, measured from the start of the first attempt.
    pub fn total_timeout(&self) -> Duration {
        self.total_timeout
    }
    /// Whether only idempotent operations retry (C12).
    pub fn retry_on_idempotent_only(&self) -> bool {
        self.retry_on_idempotent_only
    }
}

impl Default for RetryPolicy {
    /// The seed's defaults: 3 attempts, exponential from 1.0 s capped at 60 s with jitter, and
    /// the 300 s total cap.
    fn default() -> Self {
        Self {
            max_attempts: NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN),
            backoff: Backoff::new(
                BackoffStrategy::Exponential,
                Duration::from_secs(1),
                Duration::from_secs(60),
                true,
            ),
            total_timeout: Self::DEFAULT_TOTAL_TIMEOUT,
            retry_on_idempotent_only: true,
        }
    }
}
