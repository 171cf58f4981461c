//! The async retry loop driver.

use super::shared::{report, LoopState};
use crate::error::ResilienceError;
use crate::retry::call::Call;
use crate::retry::classify::Classifier;
use crate::retry::deadline::WithDeadline;
use crate::retry::idempotency::Idempotency;
use crate::retry::nesting::{current_depth, AtDepth};
use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;

/// Drives an async retry loop one attempt at a time; made by [`Call::async_loop`].
///
/// Each attempt's future is polled at nesting depth + 1 (R6), raced against the total
/// deadline when retrying (R7), and the backoff is awaited through the guard's
/// [`AsyncSleeper`](crate::sleep::AsyncSleeper).
pub struct AsyncLoop<'a, C> {
    state: LoopState<'a, C>,
    inner_depth: u32,
}

impl<'a, C> AsyncLoop<'a, C> {
    #[inline]
    pub(crate) fn new<I: Idempotency>(call: Call<'a, I, C>) -> Self {
        let depth = current_depth();
        Self {
            state: LoopState::new(call, depth),
            inner_depth: depth.saturating_add(1),
        }
    }

    /// Runs one attempt through the breaker. `Break` carries the final result; `Continue`
    /// means the backoff has been awaited and the next attempt should run.
    pub async fn step<T, E, F>(&mut self, attempt: F) -> ControlFlow<Result<T, E>>
    where
        F: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        let permit = match self.state.acquire() {
            Ok(p) => p,
            Err(refused) => return ControlFlow::Break(Err(E::from(refused))),
        };
        let attempt = AtDepth::new(self.inner_depth, attempt);
        let outcome = if self.state.may_retry() {
            WithDeadline::new(attempt, &mut self.state).await
        } else {
            Some(attempt.await)
        };
        let error = match outcome {
            Some(Ok(v)) => {
                report(permit, true);
                return ControlFlow::Break(Ok(v));
            }
            Some(Err(e)) => {
                report(permit, false);
                e
            }
            None => {
                // The deadline cancelled the attempt: the service was too slow, a failure.
                report(permit, false);
                return ControlFlow::Break(Err(E::from(self.state.timed_out())));
            }
        };
        // Deadline measured from the first attempt: if it never waited, it starts here.
        self.state.start();
        match self.state.next_delay(&error) {
            None => ControlFlow::Break(Err(error)),
            Some(delay) => {
                self.state.guard.async_sleeper.sleep(delay).await;
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
