//! The async retry loop driver, and [`AsyncStep`], the future of one of its attempts.

use super::attempt::{poll_backoff, Ended, InFlight, Phase};
use super::shared::{fail_on_unwind, report, LoopState};
use crate::breaker::BreakerPermit;
use crate::error::ResilienceError;
use crate::retry::call::Call;
use crate::retry::classify::Classifier;
use crate::retry::idempotency::Idempotency;
use crate::retry::nesting::{current_depth, DepthGuard};
use crate::sleep::SleepFuture;
use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

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
    ///
    /// The returned [`AsyncStep`] polls `attempt` in place (no nested `async` state machine), so
    /// an attempt that succeeds at once costs one poll and its breaker report.
    #[inline]
    pub fn step<T, E, F>(&mut self, attempt: F) -> AsyncStep<'_, 'a, C, F>
    where
        F: Future<Output = Result<T, E>>,
        E: From<ResilienceError> + fmt::Display,
        C: Classifier<E>,
    {
        AsyncStep {
            attempt: Some(attempt),
            wait: None,
            permit: None,
            driver: self,
            phase: Phase::Unpolled,
        }
    }

    /// The attempt number about to run (from 1).
    pub fn attempt(&self) -> u32 {
        self.state.attempt
    }
}

pin_project_lite::pin_project! {
    /// The future of [`AsyncLoop::step`]: one attempt, then its backoff if it failed and the
    /// loop goes on. Dropping it mid-attempt cancels the attempt and gives a half-open probe
    /// slot back (B5).
    #[must_use = "futures do nothing unless polled"]
    pub struct AsyncStep<'s, 'a, C, F> {
        // Dropped in this order: the attempt, its deadline timer, then the permit.
        #[pin]
        attempt: Option<F>,
        // The deadline timer while the attempt runs (armed once it waits, unless the call
        // is nested), the backoff sleep after it failed.
        wait: Option<SleepFuture>,
        permit: Option<BreakerPermit<'a>>,
        driver: &'s mut AsyncLoop<'a, C>,
        phase: Phase,
    }
}

impl<C, F, T, E> Future for AsyncStep<'_, '_, C, F>
where
    F: Future<Output = Result<T, E>>,
    E: From<ResilienceError> + fmt::Display,
    C: Classifier<E>,
{
    type Output = ControlFlow<Result<T, E>>;

    /// The success path, small enough to inline into the caller's poll: take the permit,
    /// poll the attempt, return its `Ok`. Anything else goes on in `drive`.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.as_mut().project();
        if *this.phase != Phase::Unpolled {
            return self.drive(cx, None);
        }
        // Done until it is known to go on: an attempt that panics leaves this future spent.
        *this.phase = Phase::Done;
        let mut permit = match this.driver.state.acquire() {
            Ok(permit) => permit,
            // The attempt is dropped unpolled, with this future.
            Err(refused) => return Poll::Ready(ControlFlow::Break(Err(refused_err(refused)))),
        };
        let Some(attempt) = this.attempt.as_mut().as_pin_mut() else {
            unreachable!("the attempt is stored until it ends");
        };
        let polled = {
            // A new number even if a step before this one was dropped mid-attempt: a late
            // report of that attempt is not this one's (R12).
            let (_depth, nth) = DepthGuard::attempt(this.driver.inner_depth, &this.driver.state);
            this.driver.state.nth = nth;
            fail_on_unwind(&mut permit, || attempt.poll(cx))
        };
        if let Poll::Ready(Ok(v)) = polled {
            // The finished attempt is dropped with this future: a completed `async` block
            // holds nothing, so there is nothing to drop early.
            report(permit, true);
            return Poll::Ready(ControlFlow::Break(Ok(v)));
        }
        *this.permit = permit;
        *this.phase = Phase::Attempt;
        self.drive(cx, Some(polled))
    }
}

#[cold]
fn refused_err<E: From<ResilienceError>>(refused: ResilienceError) -> E {
    E::from(refused)
}

impl<C, F, T, E> AsyncStep<'_, '_, C, F>
where
    F: Future<Output = Result<T, E>>,
    E: From<ResilienceError> + fmt::Display,
    C: Classifier<E>,
{
    /// Everything but an immediate success: an attempt that waits (and its deadline), a
    /// failure and its backoff. `polled` is the attempt's poll if `poll` already made it.
    #[inline(never)]
    fn drive(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut polled: Option<Poll<Result<T, E>>>,
    ) -> Poll<ControlFlow<Result<T, E>>> {
        let mut this = self.project();
        let driver = &mut **this.driver;
        match *this.phase {
            Phase::Unpolled => unreachable!("the first poll starts the attempt"),
            Phase::Attempt => {
                let in_flight = InFlight {
                    attempt: this.attempt.as_mut(),
                    wait: &mut *this.wait,
                    permit: &mut *this.permit,
                    depth: driver.inner_depth,
                };
                let state = &mut driver.state;
                let ended = ready!(in_flight.poll(state, polled.take(), |_| {}, cx));
                *this.phase = Phase::Done;
                let error = match ended {
                    Ended::Ok(v) => return Poll::Ready(ControlFlow::Break(Ok(v))),
                    Ended::TimedOut => {
                        return Poll::Ready(ControlFlow::Break(Err(E::from(state.timed_out()))))
                    }
                    Ended::Failed(e) => e,
                };
                // Deadline measured from the first attempt: if it never waited, it starts
                // here.
                state.start();
                match state.next_delay(&error, state.name()) {
                    None => Poll::Ready(ControlFlow::Break(Err(state.stop_with(error)))),
                    Some(delay) => {
                        *this.wait = Some(state.guard.async_sleeper.sleep(delay));
                        *this.phase = Phase::Backoff;
                        // Polled now: a sleeper that is ready at once does not yield.
                        Self::backoff(this.wait, this.phase, state, cx)
                    }
                }
            }
            Phase::Backoff => Self::backoff(this.wait, this.phase, &mut driver.state, cx),
            Phase::Done => panic!("`AsyncStep` polled after completion"),
        }
    }

    fn backoff(
        wait: &mut Option<SleepFuture>,
        phase: &mut Phase,
        state: &mut LoopState<'_, C>,
        cx: &mut Context<'_>,
    ) -> Poll<ControlFlow<Result<T, E>>> {
        ready!(poll_backoff(wait, state, cx));
        *phase = Phase::Done;
        Poll::Ready(ControlFlow::Continue(()))
    }
}
