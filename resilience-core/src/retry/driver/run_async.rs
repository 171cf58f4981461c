//! The future of [`Call::run_async`]: a hand-written state machine, so the first attempt is
//! polled in place and the success path builds no loop driver or step future to move.

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
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project_lite::pin_project! {
    /// The future returned by [`Call::run_async`].
    ///
    /// Behaves like awaiting [`AsyncLoop::step`](super::AsyncLoop::step) in a loop: each
    /// attempt is polled at nesting depth + 1 (R6), raced against the total deadline when
    /// retrying, with the timer armed only once the attempt waits (R7), and dropping it
    /// mid-attempt gives a half-open probe slot back (B5).
    #[must_use = "futures do nothing unless polled"]
    pub struct RunAsync<'a, I, C, F, Fut> {
        // Plain fields, not an enum of phases: moving between phases then drops only what
        // it replaces, and the success path never runs a whole-enum drop. They drop in this
        // order, as the step future's did: the attempt, its deadline timer, then the permit
        // (a probe's slot goes back, B5).
        #[pin]
        attempt: Option<Fut>,
        // The deadline timer while an attempt runs, the backoff sleep between attempts.
        wait: Option<SleepFuture>,
        permit: Option<BreakerPermit<'a>>,
        state: LoopState<'a, C>,
        op: F,
        // The nesting depth the call started at (read at the first poll); attempts run one
        // deeper.
        depth: u32,
        phase: Phase,
        // Whether the loop state knows if it may retry: decided lazily, when an attempt
        // first waits or fails, so an attempt that succeeds at once skips the decision.
        decided: bool,
        idempotency: PhantomData<I>,
    }
}

impl<'a, I: Idempotency, C, F, Fut> RunAsync<'a, I, C, F, Fut> {
    #[inline]
    pub(crate) fn new(call: Call<'a, I, C>, op: F) -> Self {
        Self {
            attempt: None,
            wait: None,
            permit: None,
            state: LoopState::unstarted(call),
            op,
            depth: 0,
            phase: Phase::Unpolled,
            decided: false,
            idempotency: PhantomData,
        }
    }
}

impl<'a, I, C, F, Fut, T, E> Future for RunAsync<'a, I, C, F, Fut>
where
    I: Idempotency,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: From<ResilienceError> + fmt::Display,
    C: Classifier<E>,
{
    type Output = Result<T, E>;

    /// The success path, kept small so it can inline into the caller's poll: start the first
    /// attempt, poll it, and return its `Ok`. The depth and the permit stay in locals unless
    /// the attempt waits or fails; anything but an immediate `Ok` goes on in
    /// `drive`.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.as_mut().project();
        if *this.phase != Phase::Unpolled {
            return self.drive(cx, None);
        }
        let depth = current_depth();
        // The permit first: a refused call runs nothing of the operation, not even the
        // synchronous part of its factory.
        let mut permit = match this.state.acquire() {
            Ok(permit) => permit,
            Err(refused) => return Poll::Ready(Err(refused_first(this.phase, refused))),
        };
        // Done until it is known to go on: an attempt that panics leaves this future spent.
        *this.phase = Phase::Done;
        let polled = {
            // The factory runs inside the attempt too (R6): a guarded call it makes is nested.
            let (_depth, nth) = DepthGuard::attempt(depth.saturating_add(1), &*this.state);
            this.state.nth = nth;
            let (slot, op) = (&mut this.attempt, &mut *this.op);
            fail_on_unwind(&mut permit, || {
                slot.set(Some(op()));
                let Some(attempt) = slot.as_mut().as_pin_mut() else {
                    unreachable!("the attempt was just stored");
                };
                attempt.poll(cx)
            })
        };
        if let Poll::Ready(Ok(v)) = polled {
            // The finished attempt is dropped with this future: a completed `async` block
            // holds nothing, so there is nothing to drop early.
            report(permit, true);
            return Poll::Ready(Ok(v));
        }
        *this.depth = depth;
        *this.permit = permit;
        *this.phase = Phase::Attempt;
        self.drive(cx, Some(polled))
    }
}

/// The first attempt was refused by the breaker: its factory is not called.
#[cold]
fn refused_first<E: From<ResilienceError>>(phase: &mut Phase, refused: ResilienceError) -> E {
    *phase = Phase::Done;
    E::from(refused)
}

impl<'a, I, C, F, Fut, T, E> RunAsync<'a, I, C, F, Fut>
where
    I: Idempotency,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: From<ResilienceError> + fmt::Display,
    C: Classifier<E>,
{
    /// Everything but the first attempt's immediate success: an attempt that waits (and its
    /// deadline), a failure and its backoff, the next attempts. `polled` is the current
    /// attempt's poll if [`poll`](Future::poll) already made it.
    #[inline(never)]
    fn drive(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut polled: Option<Poll<Result<T, E>>>,
    ) -> Poll<Result<T, E>> {
        let mut this = self.project();
        let state = this.state;
        loop {
            match *this.phase {
                Phase::Unpolled => unreachable!("the first poll starts the first attempt"),
                Phase::Attempt => {
                    let in_flight = InFlight {
                        attempt: this.attempt.as_mut(),
                        wait: &mut *this.wait,
                        permit: &mut *this.permit,
                        depth: this.depth.saturating_add(1),
                    };
                    let (decided, depth) = (&mut *this.decided, *this.depth);
                    let on_wait =
                        |state: &mut LoopState<'_, C>| decide::<I, C>(state, decided, depth);
                    let ended = ready!(in_flight.poll(state, polled.take(), on_wait, cx));
                    *this.phase = Phase::Done;
                    let error = match ended {
                        // The finished attempt was dropped when it ended.
                        Ended::Ok(v) => return Poll::Ready(Ok(v)),
                        Ended::TimedOut => return Poll::Ready(Err(E::from(state.timed_out()))),
                        Ended::Failed(e) => e,
                    };
                    decide::<I, C>(state, this.decided, *this.depth);
                    match backoff(state, &error) {
                        None => return Poll::Ready(Err(state.stop_with(error))),
                        Some(sleep) => {
                            *this.wait = Some(sleep);
                            *this.phase = Phase::Backoff;
                        }
                    }
                    continue;
                }
                Phase::Backoff => ready!(poll_backoff(this.wait, state, cx)),
                Phase::Done => panic!("`RunAsync` polled after completion"),
            }
            // Start the next attempt: take its breaker permit, then make its future (on
            // refusal the factory is not called), at the attempt's depth (R6).
            match state.acquire() {
                Ok(permit) => {
                    *this.permit = permit;
                    // Spent until the attempt exists: a factory that panics leaves it so.
                    *this.phase = Phase::Done;
                    let (_depth, nth) = DepthGuard::attempt(this.depth.saturating_add(1), &*state);
                    state.nth = nth;
                    let (slot, op) = (&mut this.attempt, &mut *this.op);
                    // The factory is the operation's code too: its panic is a failure (B6).
                    fail_on_unwind(this.permit, || slot.set(Some(op())));
                    *this.phase = Phase::Attempt;
                }
                Err(refused) => {
                    *this.phase = Phase::Done;
                    return Poll::Ready(Err(E::from(refused)));
                }
            }
        }
    }
}

/// Decides once whether the call may retry, from the depth it started at.
#[inline]
fn decide<I: Idempotency, C>(state: &mut LoopState<'_, C>, decided: &mut bool, depth: u32) {
    if !*decided {
        state.begin::<I>(depth);
        *decided = true;
    }
}

/// After a failed attempt: the backoff to wait before the next one, or `None` to stop (the
/// decision and its event are [`LoopState::next_delay`]'s).
#[cold]
fn backoff<C: Classifier<E>, E: fmt::Display>(
    state: &mut LoopState<'_, C>,
    error: &E,
) -> Option<SleepFuture> {
    // Deadline measured from the first attempt: if it never waited, it starts here.
    state.start();
    let delay = state.next_delay(error, state.name())?;
    Some(state.guard.async_sleeper.sleep(delay))
}
