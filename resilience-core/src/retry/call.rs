//! One guarded call: [`Call`] is built on the stack per call and consumed by `run`/`run_async`
//! (closure style) or turned into a step-by-step loop driver (what the attribute expands to).

use super::classify::{AllTransient, Classifier, ErrorClass};
use super::driver::shared::fail_on_unwind;
use super::driver::{AsyncLoop, RunAsync, RunOnce, SyncLoop};
use super::events;
use super::guard::ServiceGuard;
use super::idempotency::{Idempotency, Idempotent, NotIdempotent};
use super::nesting::{current_depth, AttemptName, AttemptTag, DepthGuard};
use super::sink::report_retry_after;
use crate::breaker::BreakerPermit;
use crate::error::ResilienceError;
use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

/// A call being set up: which operation, whether it is idempotent, how errors are classified.
///
/// Retries happen only when all hold: the call is [`Idempotent`] (or the policy's
/// `retry_on_idempotent_only` is off, C12), it is not nested inside another guarded call (R6),
/// and the policy allows more than one attempt.
#[must_use = "a call does nothing until `run` or `run_async`"]
pub struct Call<'a, I, C> {
    pub(super) guard: &'a ServiceGuard,
    pub(super) operation: &'a str,
    pub(super) idempotency: I,
    pub(super) classifier: C,
    pub(super) total_timeout: Option<Duration>,
}

impl<'a> Call<'a, NotIdempotent, AllTransient> {
    pub(super) fn new(guard: &'a ServiceGuard, operation: &'a str) -> Self {
        Self {
            guard,
            operation,
            idempotency: NotIdempotent,
            classifier: AllTransient,
            total_timeout: None,
        }
    }
}

impl<'a, I: Idempotency, C> Call<'a, I, C> {
    /// Marks the operation idempotent: safe to run more than once.
    #[inline]
    pub fn idempotent(self) -> Call<'a, Idempotent, C> {
        self.idempotency(Idempotent)
    }

    /// Sets idempotency from a type-level marker (what the attribute macro passes).
    #[inline]
    pub fn idempotency<J: Idempotency>(self, idempotency: J) -> Call<'a, J, C> {
        Call {
            guard: self.guard,
            operation: self.operation,
            idempotency,
            classifier: self.classifier,
            total_timeout: self.total_timeout,
        }
    }

    /// Classifies errors with `classifier` (a [`Classifier`], e.g. a closure or
    /// [`ByHint`](super::ByHint)) instead of treating every error as transient.
    #[inline]
    pub fn classify<D>(self, classifier: D) -> Call<'a, I, D> {
        Call {
            guard: self.guard,
            operation: self.operation,
            idempotency: self.idempotency,
            classifier,
            total_timeout: self.total_timeout,
        }
    }

    /// Overrides the policy's total wall-clock cap for this call (R7).
    #[inline]
    pub fn total_timeout(mut self, total: Duration) -> Self {
        self.total_timeout = Some(total);
        self
    }

    /// A sync loop driver: call [`SyncLoop::step`] until it breaks. Each attempt runs one
    /// nesting level deeper than where the driver was made.
    #[inline]
    pub fn sync_loop(self) -> SyncLoop<'a, C> {
        SyncLoop::new(self)
    }

    /// An async loop driver: await [`AsyncLoop::step`] until it breaks. Make it inside the
    /// async code that uses it, so it sees the nesting depth of the task polling it.
    #[inline]
    pub fn async_loop(self) -> AsyncLoop<'a, C> {
        AsyncLoop::new(self)
    }

    /// Runs a sync operation exactly once through the breaker, whatever the policy says: the
    /// entry point for writes. The closure is `FnOnce`, so it may consume its captures.
    #[inline]
    pub fn run_once<T, E>(self, attempt: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let mut permit = self.acquire_once()?;
        let (result, id) = {
            let (_nested, id) = DepthGuard::start(current_depth().saturating_add(1));
            (fail_on_unwind(&mut permit, attempt), id)
        };
        self.finish_once(permit, &result, id);
        result
    }

    /// Runs an async operation exactly once through the breaker (see
    /// [`run_once`](Self::run_once)). Dropping the future mid-flight gives a half-open probe
    /// slot back (B5).
    ///
    /// The total timeout bounds the attempt (R7): still running at the deadline, it is
    /// cancelled and the call fails with [`ResilienceError::TotalTimeout`]. The timer is
    /// armed only once the attempt waits; a nested call arms its own too.
    pub fn run_once_async<T, E, F>(self, attempt: F) -> RunOnce<'a, I, C, F>
    where
        F: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        RunOnce::new(self, attempt)
    }

    /// [`run_once_async`](Self::run_once_async) for the rest of an attempt that began before
    /// its future was made: `tag` is from the [`DepthGuard::enter_attempt`] the future was
    /// made under. A Retry-After that a nested call reported there is then known as this
    /// attempt's own, and not told to the sink a second time (R12).
    pub fn run_once_async_in<T, E, F>(self, tag: AttemptTag, attempt: F) -> RunOnce<'a, I, C, F>
    where
        F: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        RunOnce::named(self, attempt, tag.0)
    }

    #[inline]
    pub(super) fn acquire_once<E: From<ResilienceError>>(
        &self,
    ) -> Result<Option<BreakerPermit<'a>>, E> {
        match &self.guard.breaker {
            None => Ok(None),
            Some(b) => b.acquire().map(Some).map_err(E::from),
        }
    }

    #[inline]
    pub(super) fn finish_once<T, E: fmt::Display>(
        &self,
        permit: Option<BreakerPermit<'a>>,
        r: &Result<T, E>,
        attempt: AttemptName,
    ) where
        C: Classifier<E>,
    {
        if let Some(p) = permit {
            if r.is_ok() {
                p.success();
            } else {
                p.failure();
            }
        }
        if let Err(e) = r {
            self.failed_once(e, attempt);
        }
    }

    /// A single attempt failed: a Retry-After it carries still reaches the sink (R12, G6),
    /// then its event.
    #[cold]
    fn failed_once<E: fmt::Display>(&self, e: &E, attempt: AttemptName)
    where
        C: Classifier<E>,
    {
        if let Some(sink) = &self.guard.retry_after_sink {
            if let ErrorClass::RetryAfter(d) = self.classifier.classify(e) {
                report_retry_after(sink, &self.guard.service, e, d, attempt);
            }
        }
        events::giving_up(&self.guard.service, self.operation, 1, e, "single_attempt");
    }

    /// Runs a sync operation: once, or with retries when allowed (see [`Call`]).
    ///
    /// An `async` closure does not fit `FnMut() -> Result<T, E>`, so handing one here is a
    /// compile error (R2); use [`run_async`](Self::run_async).
    #[inline]
    pub fn run<T, E, F>(self, mut op: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let mut driver = self.sync_loop();
        loop {
            if let ControlFlow::Break(out) = driver.step(&mut op) {
                return out;
            }
        }
    }

    /// Runs an async operation: `op` makes one attempt's future each time it is called,
    /// after the breaker admitted that attempt (a refused call does not call `op`), one
    /// nesting level deeper (R6).
    ///
    /// The in-flight attempt is cancelled at the total deadline and the call returns
    /// [`ResilienceError::TotalTimeout`] (R7), nested or not; the deadline timer is armed only
    /// once an attempt actually waits, so an attempt that completes on its first poll costs
    /// no timer.
    ///
    /// The deadline's start is read when the first attempt first returns `Pending` or fails,
    /// not before its first poll: so the work the first attempt does synchronously before it
    /// first waits (building a request, say) is not counted, where [`run`](Self::run) counts
    /// all of it. This saves a clock read (~3 ns of the ~16 ns the success path costs) on
    /// every call; it matters only for an attempt that blocks its thread before its first
    /// `.await`, which an async operation should not do.
    ///
    /// The returned [`RunAsync`] polls the first attempt in place, so a call that succeeds
    /// builds no loop driver.
    #[inline]
    pub fn run_async<T, E, F, Fut>(self, op: F) -> RunAsync<'a, I, C, F, Fut>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        RunAsync::new(self, op)
    }
}

/// Why a call may not retry; one byte, so the loop state (and every future holding it) stays
/// small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoRetry {
    Nested,
    NotIdempotent,
    SingleAttemptPolicy,
}

impl NoRetry {
    /// The reason as logged.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Nested => "nested",
            Self::NotIdempotent => "not_idempotent",
            Self::SingleAttemptPolicy => "single_attempt_policy",
        }
    }
}

/// `None` if a call with idempotency `I` on `guard`, starting at nesting depth `depth`, may
/// retry; otherwise why not.
#[inline]
pub(super) fn no_retry_reason<I: Idempotency>(guard: &ServiceGuard, depth: u32) -> Option<NoRetry> {
    let (max_attempts, idempotent_only) = guard.policy.gate();
    if depth > 0 {
        Some(NoRetry::Nested)
    } else if !I::IDEMPOTENT && idempotent_only {
        Some(NoRetry::NotIdempotent)
    } else if max_attempts <= 1 {
        Some(NoRetry::SingleAttemptPolicy)
    } else {
        None
    }
}
