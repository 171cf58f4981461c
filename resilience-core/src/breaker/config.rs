//! [`BreakerConfig`]: validated settings, so a breaker can never be built from nonsense.

use crate::error::{secs_to_duration, PolicyError};
use std::num::NonZeroU32;
use std::time::Duration;

/// Validated breaker settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    failure_threshold: NonZeroU32,
    recovery_timeout: Duration,
    cooldown: Duration,
    half_open_max_successes: NonZeroU32,
}

impl BreakerConfig {
    /// The seed's defaults: threshold 5, recovery 60 s, cooldown 30 s, one half-open probe.
    pub const DEFAULT: Self = Self {
        failure_threshold: NonZeroU32::new(5).unwrap(),
        recovery_timeout: Duration::from_secs(60),
        cooldown: Duration::from_secs(30),
        half_open_max_successes: NonZeroU32::new(1).unwrap(),
    };

    /// Validates and builds. `failure_threshold` and `half_open_max_successes` must be ≥ 1.
    pub fn new(
        failure_threshold: u32,
        recovery_timeout: Duration,
        cooldown: Duration,
        half_open_max_successes: u32,
    ) -> Result<Self, PolicyError> {
        Ok(Self {
            failure_threshold: NonZeroU32::new(failure_threshold)
                .ok_or_else(|| PolicyError::new("failure_threshold", 0, "must be at least 1"))?,
            recovery_timeout,
            cooldown,
            half_open_max_successes: NonZeroU32::new(half_open_max_successes).ok_or_else(|| {
                PolicyError::new("half_open_max_successes", 0, "must be at least 1")
            })?,
        })
    }

    /// As [`new`](Self::new), with times in seconds as config gives them.
    pub fn from_secs(
        failure_threshold: u32,
        recovery_timeout: f64,
        cooldown: f64,
        half_open_max_successes: u32,
    ) -> Result<Self, PolicyError> {
        Self::new(
            failure_threshold,
            secs_to_duration("recovery_timeout", recovery_timeout)?,
            secs_to_duration("cooldown_seconds", cooldown)?,
            half_open_max_successes,
        )
    }

    /// Consecutive failures that open a closed circuit.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold.get()
    }
    /// Time an open circuit waits before admitting probes.
    pub fn recovery_timeout(&self) -> Duration {
        self.recovery_timeout
    }
    /// Minimum time between two entries into half-open.
    pub fn cooldown(&self) -> Duration {
        self.cooldown
    }
    /// Probes admitted at once in half-open, and successes needed to close.
    pub fn half_open_max_successes(&self) -> u32 {
        self.half_open_max_successes.get()
    }
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}
