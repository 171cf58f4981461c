//! What the two hand-written futures ([`RunAsync`](super::RunAsync) and
//! [`AsyncStep`](super::AsyncStep)) share: their phases, one attempt in flight (its poll, its
//! race with the call's deadline, the breaker report once it ends) and the backoff after it.
//! One copy, so the deadline rule cannot drift between them.

use super::shared::{fail_on_unwind, report, LoopState};
use crate::breaker::BreakerPermit;
use crate::retry::nesting::DepthGuard;
use crate::sleep::SleepFuture;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Not polled yet: the first poll starts the attempt.
    Unpolled,
    /// The attempt is in flight (`wait`: its deadline timer, once armed).
    Attempt,
    /// `wait` is the backoff before the next attempt.
    Backoff,
    Done,
}

/// Waits out the backoff in `wait`, if any, then counts the next attempt.
pub(super) fn poll_backoff<C>(
    wait: &mut Option<SleepFuture>,
    state: &mut LoopState<'_, C>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if let Some(sleep) = wait {
        ready!(sleep.as_mut().poll(cx));
    }
    *wait = None;
    state.attempt += 1;
    Poll::Ready(())
}

/// How an attempt ended; the breaker has heard of it.
pub(super) enum Ended<T, E> {
    Ok(T),
    /// Failed: the caller classifies the error and decides on a retry.
    Failed(E),
    /// The call's deadline passed first: the attempt was cancelled (a failure).
    TimedOut,
}

/// The parts of a driver's future one attempt uses.
pub(super) struct InFlight<'p, 'a, F> {
    pub attempt: Pin<&'p mut Option<F>>,
    /// The deadline timer, armed the first time the attempt waits. A nested call arms its
    /// own too: its outer call may be sync (it cannot cancel it) or may not poll it at all
    /// (a task spawned with `propagate`).
    pub wait: &'p mut Option<SleepFuture>,
    pub permit: &'p mut Option<BreakerPermit<'a>>,
    /// The nesting depth the attempt runs at.
    pub depth: u32,
}

impl<F> InFlight<'_, '_, F> {
    /// Polls the attempt (unless `polled` already holds this poll), racing the deadline. The
    /// attempt goes first: a result that is ready wins over a deadline reached at the same
    /// instant. `on_wait` runs each time the attempt is pending, before the deadline is armed.
    /// Once it ends, the attempt and its timer are dropped and the permit reported.
    pub fn poll<T, E, C>(
        mut self,
        state: &mut LoopState<'_, C>,
        polled: Option<Poll<Result<T, E>>>,
        on_wait: impl FnOnce(&mut LoopState<'_, C>),
        cx: &mut Context<'_>,
    ) -> Poll<Ended<T, E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let polled = match polled {
            Some(p) => p,
            None => {
                let Some(attempt) = self.attempt.as_mut().as_pin_mut() else {
                    unreachable!("an attempt is in flight");
                };
                // Started where the attempt was made (its factory ran at the start).
                let _depth = DepthGuard::resume(self.depth, &*state, state.nth);
                fail_on_unwind(self.permit, || attempt.poll(cx))
            }
        };
        let ended = match polled {
            Poll::Ready(Ok(v)) => Ended::Ok(v),
            Poll::Ready(Err(e)) => Ended::Failed(e),
            Poll::Pending => {
                on_wait(state);
                let timer = self.wait.get_or_insert_with(|| {
                    let remaining = state.total().saturating_sub(state.elapsed());
                    state.guard.async_sleeper.deadline(remaining)
                });
                ready!(timer.as_mut().poll(cx));
                Ended::TimedOut
            }
        };
        self.attempt.set(None);
        *self.wait = None;
        report(self.permit.take(), matches!(ended, Ended::Ok(_)));
        Poll::Ready(ended)
    }
}
