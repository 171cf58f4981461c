//! [`ServiceGuard`]: everything a guarded call to one service needs, built once.

use super::call::Call;
use super::classify::AllTransient;
use super::idempotency::NotIdempotent;
use super::policy::RetryPolicy;
use super::policy_cell::PolicyCell;
use super::sink::RetryAfterSink;
use crate::breaker::{BreakerConfig, CircuitBreaker};
use crate::clock::{Clock, MonotonicClock};
use crate::sleep::{AsyncSleeper, Sleeper, ThreadSleeper};
use std::sync::Arc;

/// One service's retry policy, breaker, clock and sleepers. Cheap to share behind an `Arc`;
/// every call borrows it.
///
/// ```
/// use resilience_core::retry::ServiceGuard;
/// use resilience_core::ResilienceError;
///
/// #[derive(Debug)]
/// enum MyError { Flaky, Refused(ResilienceError) }
/// impl From<ResilienceError> for MyError {
///     fn from(e: ResilienceError) -> Self { MyError::Refused(e) }
/// }
/// impl std::fmt::Display for MyError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
/// }
///
/// let guard = ServiceGuard::builder("plan_service").build();
/// let mut calls = 0;
/// let out: Result<u32, MyError> = guard.call("get_plan").idempotent().run(|| {
///     calls += 1;
///     if calls < 2 { Err(MyError::Flaky) } else { Ok(7) }
/// });
/// assert_eq!(out.unwrap(), 7);
/// ```
#[derive(Debug)]
pub struct ServiceGuard {
    pub(super) service: Arc<str>,
    pub(super) policy: PolicyCell,
    pub(super) breaker: Option<Arc<CircuitBreaker>>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) sleeper: Arc<dyn Sleeper>,
    pub(super) async_sleeper: Arc<dyn AsyncSleeper>,
    pub(super) jitter_seed: Option<u64>,
    pub(super) retry_after_sink: Option<Arc<dyn RetryAfterSink>>,
}

impl ServiceGuard {
    /// Starts building a guard for `service` with the default policy and breaker.
    pub fn builder(service: impl Into<Arc<str>>) -> ServiceGuardBuilder {
        ServiceGuardBuilder {
            service: service.into(),
            policy: RetryPolicy::default(),
            breaker: BreakerChoice::New(BreakerConfig::DEFAULT),
            clock: None,
            sleeper: None,
            async_sleeper: None,
            jitter_seed: None,
            retry_after_sink: None,
        }
    }

    /// Starts a call of `operation` (a name for logs). The call is not idempotent until
    /// [`Call::idempotent`] says so.
    #[inline]
    pub fn call<'a>(&'a self, operation: &'a str) -> Call<'a, NotIdempotent, AllTransient> {
        Call::new(self, operation)
    }

    /// The service name.
    pub fn service(&self) -> &Arc<str> {
        &self.service
    }

    /// The retry policy in force.
    pub fn policy(&self) -> RetryPolicy {
        self.policy.get()
    }

    /// Replaces the retry policy in place. New calls use the new policy, and a call already
    /// running reads it at its next retry decision (attempts, backoff, total timeout); whether
    /// a call may retry at all is decided once per call. Used by config reloads.
    pub fn set_policy(&self, policy: RetryPolicy) {
        self.policy.set(policy);
    }

    /// The breaker, unless the service runs without one (C5).
    pub fn breaker(&self) -> Option<&Arc<CircuitBreaker>> {
        self.breaker.as_ref()
    }

    /// The same guard with another retry policy, sharing this guard's breaker, clock and
    /// sleepers. Used for call-site policies that differ only in retry settings.
    #[must_use]
    pub fn with_policy(&self, policy: RetryPolicy) -> Self {
        Self {
            service: self.service.clone(),
            policy: PolicyCell::new(policy),
            breaker: self.breaker.clone(),
            clock: self.clock.clone(),
            sleeper: self.sleeper.clone(),
            async_sleeper: self.async_sleeper.clone(),
            jitter_seed: self.jitter_seed,
            retry_after_sink: self.retry_after_sink.clone(),
        }
    }
}

impl Clone for ServiceGuard {
    fn clone(&self) -> Self {
        self.with_policy(self.policy())
    }
}

enum BreakerChoice {
    New(BreakerConfig),
    Shared(Arc<CircuitBreaker>),
    Disabled,
}

/// Builds a [`ServiceGuard`]. Every setting has a default: the real clock, thread and tokio
/// sleepers, entropy-seeded jitter, and a breaker with the seed's defaults.
pub struct ServiceGuardBuilder {
    service: Arc<str>,
    policy: RetryPolicy,
    breaker: BreakerChoice,
    clock: Option<Arc<dyn Clock>>,
    sleeper: Option<Arc<dyn Sleeper>>,
    async_sleeper: Option<Arc<dyn AsyncSleeper>>,
    jitter_seed: Option<u64>,
    retry_after_sink: Option<Arc<dyn RetryAfterSink>>,
}

impl ServiceGuardBuilder {
    /// Reports every Retry-After hint to `sink` and waits as long as it says (R12, G6): attach
    /// a [`RetryAfterLink`](crate::governor::RetryAfterLink) so a rate governor coordinates
    /// the wait instead of every caller sleeping out the same hint.
    #[must_use]
    pub fn retry_after_sink(mut self, sink: Arc<dyn RetryAfterSink>) -> Self {
        self.retry_after_sink = Some(sink);
        self
    }

    /// The retry policy.
    #[must_use]
    pub fn policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// A new breaker with these settings (built on this guard's clock).
    #[must_use]
    pub fn breaker(mut self, config: BreakerConfig) -> Self {
        self.breaker = BreakerChoice::New(config);
        self
    }

    /// An existing breaker, shared with other guards of the same service.
    #[must_use]
    pub fn shared_breaker(mut self, breaker: Arc<CircuitBreaker>) -> Self {
        self.breaker = BreakerChoice::Shared(breaker);
        self
    }

    /// No breaker at all (C5: `circuit_breaker.enabled = false`).
    #[must_use]
    pub fn without_breaker(mut self) -> Self {
        self.breaker = BreakerChoice::Disabled;
        self
    }

    /// The clock for deadlines and the breaker.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The sleeper for sync backoff.
    #[must_use]
    pub fn sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = Some(sleeper);
        self
    }

    /// The sleeper for async backoff and deadline timers.
    #[must_use]
    pub fn async_sleeper(mut self, sleeper: Arc<dyn AsyncSleeper>) -> Self {
        self.async_sleeper = Some(sleeper);
        self
    }

    /// Seeds jitter so schedules repeat exactly (each call starts from this seed).
    #[must_use]
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// Builds the guard.
    pub fn build(self) -> ServiceGuard {
        let clock = self
            .clock
            .unwrap_or_else(|| Arc::new(MonotonicClock::new()));
        let breaker = match self.breaker {
            BreakerChoice::New(cfg) => Some(Arc::new(CircuitBreaker::with_clock(
                self.service.clone(),
                cfg,
                clock.clone(),
            ))),
            BreakerChoice::Shared(b) => Some(b),
            BreakerChoice::Disabled => None,
        };
        ServiceGuard {
            service: self.service,
            policy: PolicyCell::new(self.policy),
            breaker,
            clock,
            sleeper: self.sleeper.unwrap_or_else(|| Arc::new(ThreadSleeper)),
            async_sleeper: self.async_sleeper.unwrap_or_else(default_async_sleeper),
            jitter_seed: self.jitter_seed,
            retry_after_sink: self.retry_after_sink,
        }
    }
}

#[cfg(feature = "tokio")]
fn default_async_sleeper() -> Arc<dyn AsyncSleeper> {
    Arc::new(crate::sleep::TokioSleeper)
}

#[cfg(not(feature = "tokio"))]
fn default_async_sleeper() -> Arc<dyn AsyncSleeper> {
    Arc::new(crate::sleep::BlockingAsyncSleeper)
}
