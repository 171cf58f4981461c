//! The sync retry loop driver.

use super::shared::{fail_on_unwind, report, LoopState};
use crate::error::ResilienceError;
use crate::retry::call::Call;
use crate::retry::classify::Classifier;
use crate::retry::idempotency::Idempotency;
use crate::retry::nesting::{current_depth, AttemptName, DepthGuard};
use std::fmt;
use std::ops::ControlFlow;

/// Drives a sync retry loop one attempt at a time; made by [`Call::sync_loop`].
///
/// Each attempt runs at the nesting depth the driver was made at, plus one (R6); the depth is
/// raised only while an attempt runs, so drivers may be dropped in any order.
///
/// ```
/// use resilience_core::retry::ServiceGuard;
/// use resilience_core::ResilienceError;
/// use std::ops::ControlFlow;
///
/// # #[derive(Debug)] struct E;
/// # impl From<ResilienceError> for E { fn from(_: ResilienceError) -> Self { E } }
/// # impl std::fmt::Display for E { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str("E") } }
/// let guard = ServiceGuard::builder("context_service").build();
/// let mut driver = guard.call("load").idempotent().sync_loop();
/// let out: Result<u8, E> = loop {
///     if let ControlFlow::Break(out) = driver.step(|| Ok(1)) {
///         break out;
///     }
/// };
/// assert_eq!(out.unwrap(), 1);
/// ```
pub struct SyncLoop<'a, C> {
    state: LoopState<'a, C>,
    inner_depth: u32,
}

impl<'a, C> SyncLoop<'a, C> {
    #[inline]
    pub(crate) fn new<I: Idempotency>(call: Call<'a, I, C>) -> Self {
        let depth = current_depth();
        let mut state = LoopState::new(call, depth);
        if state.may_retry() {
            // The deadline counts the first attempt's own (blocking) time, so stamp it now,
            // with the coarse clock: milliseconds of slack on a deadline of seconds, and a
            // third of the cost... of the whole success-path budget.
            state.start = Some(state.guard.clock.now_coarse());
        }
        Self {
            state,
            inner_depth: depth.saturating_add(1),
        }
    }

    /// Runs one attempt through the breaker. `Break` carries the final result; `Continue`
    /// means the backoff has been slept and the next attempt should run.
    #[inline]
    pub fn step<T, E>(
        &mut self,
        attempt: impl FnOnce() -> Result<T, E>,
    ) -> ControlFlow<Result<T, E>>
    where
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let mut permit = match self.state.acquire() {
            Ok(p) => p,
            Err(refused) => return ControlFlow::Break(Err(E::from(refused))),
        };
        let (result, id) = {
            let (_depth, id) = DepthGuard::start(self.inner_depth);
            (fail_on_unwind(&mut permit, attempt), id)
        };
        match result {
            Ok(v) => {
                report(permit, true);
                ControlFlow::Break(Ok(v))
            }
            Err(e) => {
                report(permit, false);
                self.after_failure(e, id)
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn after_failure<T, E>(&mut self, error: E, attempt: AttemptName) -> ControlFlow<Result<T, E>>
    where
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        match self.state.next_delay(&error, attempt) {
            None => ControlFlow::Break(Err(self.state.stop_with(error))),
            Some(delay) => {
                self.state.guard.sleeper.sleep(delay);
                self.state.attempt += 1;
                ControlFlow::Continue(())
            }
        }
    }

    /// The attempt number about to run (from 1).
    pub fn attempt(&self) -> u32 {
        self.state.attempt
    }
}
