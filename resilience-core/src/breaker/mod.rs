//! The per-service circuit breaker (B1–B11).
//!
//! PLACEHOLDER API: the real implementation lands in this folder; signatures are the contract.

use crate::clock::{Clock, MonotonicClock};
use crate::error::{secs_to_duration, PolicyError, ResilienceError};
use std::num::NonZeroU32;
use std::sync::Arc;
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

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls pass; consecutive failures are counted.
    Closed,
    /// Calls are refused until recovery.
    Open,
    /// A bounded number of probes decide between closing and re-opening.
    HalfOpen,
}

/// A thread-safe circuit breaker for one service.
#[derive(Debug)]
pub struct CircuitBreaker {
    service: Arc<str>,
    config: BreakerConfig,
    #[allow(dead_code)]
    clock: Arc<dyn Clock>,
}

impl CircuitBreaker {
    /// A breaker on the real clock.
    pub fn new(service: impl Into<Arc<str>>, config: BreakerConfig) -> Self {
        Self::with_clock(service, config, Arc::new(MonotonicClock::new()))
    }

    /// A breaker reading time from `clock`.
    pub fn with_clock(
        service: impl Into<Arc<str>>,
        config: BreakerConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            service: service.into(),
            config,
            clock,
        }
    }

    /// The service this breaker protects.
    pub fn service(&self) -> &Arc<str> {
        &self.service
    }

    /// The settings.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Asks to run one call. The permit must be told the outcome; dropping it untold (a
    /// cancelled future) gives a half-open probe slot back and counts nothing.
    pub fn acquire(&self) -> Result<BreakerPermit<'_>, ResilienceError> {
        Ok(BreakerPermit { _breaker: self })
    }

    /// The current state.
    pub fn state(&self) -> CircuitState {
        CircuitState::Closed
    }

    /// Whether the circuit is open (refusing without probing). Safe from any thread.
    pub fn is_open(&self) -> bool {
        self.state() == CircuitState::Open
    }

    /// Consecutive failures counted so far.
    pub fn failure_count(&self) -> u32 {
        0
    }

    /// Closes the circuit and clears every counter and timestamp at once.
    pub fn reset(&self) {}
}

/// Permission to run one call through a breaker; report the outcome with
/// [`success`](Self::success) or [`failure`](Self::failure).
#[derive(Debug)]
#[must_use = "report the call's outcome with success() or failure()"]
pub struct BreakerPermit<'a> {
    _breaker: &'a CircuitBreaker,
}

impl BreakerPermit<'_> {
    /// The call succeeded.
    pub fn success(self) {}
    /// The call failed (every error counts, B6).
    pub fn failure(self) {}
}
