//! One guarded call: [`Call`] is built on the stack per call and consumed by `run`/`run_async`.

use super::classify::{Classifier, ErrorClass};
use super::deadline::WithDeadline;
use super::events;
use super::guard::ServiceGuard;
use super::idempotency::{Idempotency, Idempotent};
use super::nesting::{current_depth, AtDepth, DepthGuard};
use crate::backoff::JitterRng;
use crate::breaker::BreakerPermit;
use crate::error::ResilienceError;
use std::fmt;
use std::future::Future;
use std::time::Duration;

/// A call being set up: which operation, whether it is idempotent, how errors are classified.
///
/// Retries happen only when all hold: the call is [`Idempotent`] (or the policy's
/// `retry_on_idempotent_only` is off), it is not nested inside another guarded call (R6), and
/// the policy allows more than one attempt.
#[must_use = "a call does nothing until `run` or `run_async`"]
pub struct Call<'a, I, C> {
    guard: &'a ServiceGuard,
    operation: &'a str,
    idempotency: I,
    classifier: C,
    total_timeout: Option<Duration>,
}

impl<'a> Call<'a, super::idempotency::NotIdempotent, super::classify::AllTransient> {
    pub(super) fn new(guard: &'a ServiceGuard, operation: &'a str) -> Self {
        Self {
            guard,
            operation,
            idempotency: super::idempotency::NotIdempotent,
            classifier: super::classify::AllTransient,
            total_timeout: None,
        }
    }
}

/// What a single attempt produced.
enum Attempt<T, E> {
    Ok(T),
    /// The operation ran and failed.
    Failed(E),
    /// The framework refused to run it (circuit open).
    Refused(ResilienceError),
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

    #[inline]
    fn may_retry(&self, depth: u32) -> bool {
        let policy = &self.guard.policy;
        depth == 0
            && policy.max_attempts() > 1
            && (I::IDEMPOTENT || !policy.retry_on_idempotent_only())
    }

    fn total(&self) -> Duration {
        self.total_timeout
            .unwrap_or_else(|| self.guard.policy.total_timeout())
    }

    #[inline]
    fn acquire(&self) -> Result<Option<BreakerPermit<'a>>, ResilienceError> {
        match &self.guard.breaker {
            None => Ok(None),
            Some(b) => b.acquire().map(Some),
        }
    }

    fn rng(&self) -> JitterRng {
        self.guard
            .jitter_seed
            .map_or_else(JitterRng::new, JitterRng::seeded)
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
        let depth = current_depth();
        let _nested = DepthGuard::set(depth.saturating_add(1));
        if !self.may_retry(depth) {
            return match self.attempt(&mut op) {
                Attempt::Ok(v) => Ok(v),
                Attempt::Failed(e) => Err(e),
                Attempt::Refused(r) => Err(E::from(r)),
            };
        }
        // The deadline counts the first attempt's own time, so the start is read before it.
        let start = self.guard.clock.now();
        match self.attempt(&mut op) {
            Attempt::Ok(v) => Ok(v),
            Attempt::Refused(r) => Err(E::from(r)),
            Attempt::Failed(e) => self.retry_sync(op, start, e),
        }
    }

    #[inline]
    fn attempt<T, E>(&self, op: &mut impl FnMut() -> Result<T, E>) -> Attempt<T, E> {
        let permit = match self.acquire() {
            Ok(p) => p,
            Err(r) => return Attempt::Refused(r),
        };
        let result = op();
        match result {
            Ok(v) => {
                if let Some(p) = permit {
                    p.success();
                }
                Attempt::Ok(v)
            }
            Err(e) => {
                if let Some(p) = permit {
                    p.failure();
                }
                Attempt::Failed(e)
            }
        }
    }

    /// The loop after a first failure; kept out of line so the success path stays small.
    #[cold]
    #[inline(never)]
    fn retry_sync<T, E, F>(self, mut op: F, start: Duration, first: E) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let mut rng = self.rng();
        let mut error = first;
        let mut attempt = 1u32;
        loop {
            let delay = match self.next_delay(attempt, &error, start, &mut rng) {
                Some(d) => d,
                None => return Err(error),
            };
            self.guard.sleeper.sleep(delay);
            attempt += 1;
            match self.attempt(&mut op) {
                Attempt::Ok(v) => return Ok(v),
                Attempt::Refused(r) => return Err(E::from(r)),
                Attempt::Failed(e) => error = e,
            }
        }
    }

    /// After attempt number `attempt` failed with `error`: the delay before the next one, or
    /// `None` to stop. Emits the attempt's event either way (R8).
    fn next_delay<E: fmt::Display>(
        &self,
        attempt: u32,
        error: &E,
        start: Duration,
        rng: &mut JitterRng,
    ) -> Option<Duration>
    where
        C: Classifier<E>,
    {
        let (service, op) = (&*self.guard.service, self.operation);
        let hint = match self.classifier.classify(error) {
            ErrorClass::Permanent => {
                events::giving_up(service, op, attempt, error, "permanent");
                return None;
            }
            ErrorClass::Transient => None,
            ErrorClass::RetryAfter(d) => Some(d),
        };
        if attempt >= self.guard.policy.max_attempts() {
            events::giving_up(service, op, attempt, error, "attempts_exhausted");
            return None;
        }
        let backoff = self.guard.policy.backoff().delay(attempt, rng);
        // A server's Retry-After is a floor on the wait (R12); the total timeout caps both.
        let delay = hint.map_or(backoff, |h| h.max(backoff));
        let elapsed = self.guard.clock.now().saturating_sub(start);
        if elapsed.saturating_add(delay) >= self.total() {
            events::giving_up(service, op, attempt, error, "total_timeout");
            return None;
        }
        events::retrying(service, op, attempt, error, delay);
        Some(delay)
    }

    /// Runs an async operation: `op` makes one attempt's future each time it is called.
    ///
    /// When retrying, the in-flight attempt is cancelled at the total deadline and the call
    /// returns [`ResilienceError::TotalTimeout`]; the deadline timer is only armed once an
    /// attempt actually waits, so an attempt that completes on its first poll costs no timer.
    pub async fn run_async<T, E, F, Fut>(self, mut op: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let depth = current_depth();
        let inner = depth.saturating_add(1);
        if !self.may_retry(depth) {
            let permit = self.acquire().map_err(E::from)?;
            let result = AtDepth::new(inner, op()).await;
            report(permit, result.is_ok());
            return result;
        }
        let total = self.total();
        // Read lazily: when the first attempt first waits or fails. Polls are short, so this
        // loses at most one poll's time and keeps clock reads off the success path.
        let mut start: Option<Duration> = None;
        let mut rng: Option<JitterRng> = None;
        let mut attempt = 1u32;
        loop {
            let permit = self.acquire().map_err(E::from)?;
            let timed = WithDeadline::new(
                AtDepth::new(inner, op()),
                &*self.guard.clock,
                &*self.guard.async_sleeper,
                &mut start,
                total,
            )
            .await;
            let error = match timed {
                Some(Ok(v)) => {
                    report(permit, true);
                    return Ok(v);
                }
                Some(Err(e)) => {
                    report(permit, false);
                    e
                }
                None => {
                    report(permit, false);
                    let elapsed = self.elapsed_since(&mut start);
                    events::deadline_cancelled(&self.guard.service, self.operation, attempt, elapsed);
                    return Err(E::from(ResilienceError::TotalTimeout {
                        service: self.guard.service.clone(),
                        elapsed,
                        attempts: attempt,
                    }));
                }
            };
            let started = self.start_of(&mut start);
            let rng = rng.get_or_insert_with(|| self.rng());
            match self.next_delay(attempt, &error, started, rng) {
                Some(delay) => self.guard.async_sleeper.sleep(delay).await,
                None => return Err(error),
            }
            attempt += 1;
        }
    }

    fn start_of(&self, start: &mut Option<Duration>) -> Duration {
        *start.get_or_insert_with(|| self.guard.clock.now())
    }

    fn elapsed_since(&self, start: &mut Option<Duration>) -> Duration {
        let s = self.start_of(start);
        self.guard.clock.now().saturating_sub(s)
    }
}

#[inline]
fn report(permit: Option<BreakerPermit<'_>>, ok: bool) {
    if let Some(p) = permit {
        if ok {
            p.success();
        } else {
            p.failure();
        }
    }
}
