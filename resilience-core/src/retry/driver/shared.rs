//! What the sync and async drivers share: breaker access and the retry decision.

use super::super::call::{no_retry_reason, Call, NoRetry};
use super::super::classify::{Classifier, ErrorClass};
use super::super::events;
use super::super::guard::ServiceGuard;
use super::super::idempotency::Idempotency;
use super::super::nesting::{name_of, AttemptName};
use super::super::sink::report_retry_after;
use crate::backoff::JitterRng;
use crate::breaker::BreakerPermit;
use crate::error::ResilienceError;
use std::fmt;
use std::time::Duration;

pub(crate) struct LoopState<'a, C> {
    pub(crate) guard: &'a ServiceGuard,
    pub(super) operation: &'a str,
    pub(super) classifier: C,
    /// Why this call may not retry (nested, not idempotent, …), or `None` if it may.
    no_retry: Option<NoRetry>,
    /// A per-call override of the policy's total timeout.
    pub(super) total_override: Option<Duration>,
    /// The attempt about to run or running, from 1.
    pub(super) attempt: u32,
    /// The running async attempt's own number, from `DepthGuard::attempt` (unused by the
    /// sync loop, whose attempts are named by `DepthGuard::start`).
    pub(super) nth: u32,
    /// When the first attempt started, read lazily where the driver allows.
    pub(super) start: Option<Duration>,
    /// The loop stopped because the circuit would refuse the next attempt.
    circuit_refused: bool,
}

impl<C> LoopState<'_, C> {
    /// The name of the running async attempt (see [`Level::attempt`]).
    ///
    /// [`Level::attempt`]: crate::retry::nesting::Level
    #[inline]
    pub(super) fn name(&self) -> AttemptName {
        name_of(self, self.nth)
    }
}

impl<'a, C> LoopState<'a, C> {
    #[inline]
    pub(super) fn new<I: Idempotency>(call: Call<'a, I, C>, depth: u32) -> Self {
        let mut state = Self::unstarted(call);
        state.begin::<I>(depth);
        state
    }

    /// The state of a loop that has not decided whether it may retry: [`begin`](Self::begin)
    /// must run, with the nesting depth the loop started at, before that is asked.
    #[inline]
    pub(super) fn unstarted<I: Idempotency>(call: Call<'a, I, C>) -> Self {
        Self {
            guard: call.guard,
            operation: call.operation,
            classifier: call.classifier,
            no_retry: None,
            total_override: call.total_timeout,
            attempt: 1,
            nth: 0,
            start: None,
            circuit_refused: false,
        }
    }

    /// Fixes whether the loop may retry, given the nesting depth it starts at.
    #[inline]
    pub(super) fn begin<I: Idempotency>(&mut self, depth: u32) {
        self.no_retry = no_retry_reason::<I>(self.guard, depth);
    }

    /// Whether this call may retry.
    #[inline]
    pub(super) fn may_retry(&self) -> bool {
        self.no_retry.is_none()
    }

    #[inline]
    pub(super) fn acquire(&self) -> Result<Option<BreakerPermit<'a>>, ResilienceError> {
        match &self.guard.breaker {
            None => Ok(None),
            Some(b) => b.acquire().map(Some),
        }
    }

    /// The total timeout in force; read only off the success path (it takes the policy lock).
    pub(crate) fn total(&self) -> Duration {
        self.total_override
            .unwrap_or_else(|| self.guard.policy.get().total_timeout())
    }

    pub(super) fn start(&mut self) -> Duration {
        let clock = &self.guard.clock;
        *self.start.get_or_insert_with(|| clock.now())
    }

    pub(crate) fn elapsed(&mut self) -> Duration {
        let start = self.start();
        self.guard.clock.now().saturating_sub(start)
    }

    /// The error for an attempt cancelled at the total deadline; emits its event (R8).
    #[cold]
    pub(super) fn timed_out(&mut self) -> ResilienceError {
        let elapsed = self.elapsed();
        let (service, attempts) = (self.guard.service.clone(), self.attempt);
        events::deadline_cancelled(&service, self.operation, attempts, elapsed);
        ResilienceError::TotalTimeout {
            service,
            elapsed,
            attempts,
        }
    }

    /// After the current attempt failed with `error`: the delay before the next one, or
    /// `None` to stop. Emits the attempt's event either way (R8). `own` names the attempt
    /// (see [`Level::attempt`]).
    ///
    /// [`Level::attempt`]: crate::retry::nesting::Level
    #[cold]
    pub(super) fn next_delay<E: fmt::Display>(
        &mut self,
        error: &E,
        own: AttemptName,
    ) -> Option<Duration>
    where
        C: Classifier<E>,
    {
        let (service, op, attempt) = (&*self.guard.service, self.operation, self.attempt);
        let class = self.classifier.classify(error);
        // A server's Retry-After reaches the sink (the governor's G6 block) whether or not
        // this call may retry: writes are what trip secondary limits.
        // With a sink, its answer is the wait (the governor's slot keeps priority order, G6);
        // without one, the server's hint is a floor under the backoff.
        let hint = match class {
            ErrorClass::RetryAfter(d) => Some(match &self.guard.retry_after_sink {
                Some(sink) => (report_retry_after(sink, service, error, d, own), true),
                None => (d, false),
            }),
            ErrorClass::Transient | ErrorClass::Permanent => None,
        };
        if let Some(reason) = self.no_retry {
            events::giving_up(service, op, attempt, error, reason.as_str());
            return None;
        }
        if class == ErrorClass::Permanent {
            events::giving_up(service, op, attempt, error, "permanent");
            return None;
        }
        let policy = self.guard.policy.get();
        if attempt >= policy.max_attempts() {
            events::giving_up(service, op, attempt, error, "attempts_exhausted");
            return None;
        }
        // A generator per retry keeps the loop's state (and so every future holding it)
        // small; a seeded guard still gets the same schedule on every run.
        let mut rng = self.guard.jitter_seed.map_or_else(JitterRng::new, |seed| {
            JitterRng::seeded(seed.wrapping_add(u64::from(attempt)))
        });
        let backoff = policy.backoff().delay(attempt, &mut rng);
        // A server's Retry-After is a floor on the wait (R12), a sink's answer the wait itself;
        // the total timeout caps both.
        let delay = match hint {
            Some((answer, true)) => answer,
            Some((hint, false)) => hint.max(backoff),
            None => backoff,
        };
        let total = self.total_override.unwrap_or(policy.total_timeout());
        if self.elapsed().saturating_add(delay) >= total {
            events::giving_up(service, op, attempt, error, "total_timeout");
            return None;
        }
        // If this failure (or a concurrent one) opened the circuit, and it still refuses
        // when the wait is over, the next attempt would be refused unrun: stop now rather
        // than sleep for nothing.
        if let Some(open) = self.guard.breaker.as_ref().and_then(|b| b.open_for()) {
            if open > delay {
                events::giving_up(service, op, attempt, error, "circuit_open");
                self.circuit_refused = true;
                return None;
            }
        }
        events::retrying(service, op, attempt, error, delay);
        Some(delay)
    }
}

impl<C> LoopState<'_, C> {
    /// The error a stopped loop returns: the attempt's own, or, if it stopped because the
    /// circuit would refuse the next attempt, the refusal that attempt would have met.
    #[cold]
    pub(super) fn stop_with<E: From<ResilienceError>>(&self, error: E) -> E {
        if self.circuit_refused {
            E::from(ResilienceError::CircuitOpen {
                service: self.guard.service.clone(),
            })
        } else {
            error
        }
    }
}

#[inline]
pub(super) fn report(permit: Option<BreakerPermit<'_>>, ok: bool) {
    if let Some(p) = permit {
        if ok {
            p.success();
        } else {
            p.failure();
        }
    }
}

/// Runs `attempt` (the operation's own code: its body, its poll, its future's factory); if it
/// panics, `permit` is reported as a failure while the panic unwinds (B6: a panic is the
/// operation failing, and a panicking probe re-opens the circuit, B4). The panic itself goes
/// on unchanged: nothing is caught.
///
/// Keyed on this unwind only, not on `std::thread::panicking()`: a call made from a `Drop`
/// during someone else's unwinding still reports its own outcome.
#[inline(always)]
pub(crate) fn fail_on_unwind<R>(
    permit: &mut Option<BreakerPermit<'_>>,
    attempt: impl FnOnce() -> R,
) -> R {
    let armed = FailOnUnwind(permit);
    let out = attempt();
    // Returned normally: the caller reports the outcome. `armed` holds only a reference.
    std::mem::forget(armed);
    out
}

/// Dropped only if the attempt unwound (see [`fail_on_unwind`]).
struct FailOnUnwind<'p, 'a>(&'p mut Option<BreakerPermit<'a>>);

impl Drop for FailOnUnwind<'_, '_> {
    #[cold]
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            p.failure();
        }
    }
}
