//! [`RunOnce`], the future of [`Call::run_once_async`]: one attempt through the breaker,
//! raced against the call's total deadline (R7).
//!
//! [`Call::run_once_async`]: crate::retry::Call::run_once_async

use super::shared::fail_on_unwind;
use crate::breaker::BreakerPermit;
use crate::error::ResilienceError;
use crate::retry::call::Call;
use crate::retry::classify::Classifier;
use crate::retry::events;
use crate::retry::idempotency::Idempotency;
use crate::retry::nesting::{current_depth, name_of, AttemptName, DepthGuard};
use crate::sleep::SleepFuture;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

pin_project_lite::pin_project! {
    /// The future of [`Call::run_once_async`](crate::retry::Call::run_once_async).
    ///
    /// Hand-written, not an `async fn`: the deadline timer it may arm needs drop glue, which
    /// inside an `async fn`'s state cost the success path about 5 ns. Dropping it mid-flight
    /// cancels the attempt and gives a half-open probe slot back (B5).
    #[must_use = "futures do nothing unless polled"]
    pub struct RunOnce<'a, I, C, F> {
        // Dropped in this order: the attempt, its timer, then the permit.
        #[pin]
        attempt: Option<F>,
        timer: Option<SleepFuture>,
        permit: Option<BreakerPermit<'a>>,
        call: Call<'a, I, C>,
        // The depth the attempt runs at; 0 until the first poll reads the caller's.
        inner_depth: u32,
        // The attempt's name: given at the first poll (its address and a number of its own,
        // see `DepthGuard::attempt`: a call that replaces a cancelled one at the same address
        // is another attempt, R12), unless the attempt began before the future was made
        // (`Call::run_once_async_in`). `id` 0 until then.
        name: AttemptName,
    }
}

impl<'a, I, C, F> RunOnce<'a, I, C, F> {
    #[inline]
    pub(crate) fn new(call: Call<'a, I, C>, attempt: F) -> Self {
        Self::named(call, attempt, AttemptName { id: 0, nth: 0 })
    }

    /// The rest of the attempt named `name` (see [`RunOnce::new`]).
    #[inline]
    pub(crate) fn named(call: Call<'a, I, C>, attempt: F, name: AttemptName) -> Self {
        Self {
            attempt: Some(attempt),
            timer: None,
            permit: None,
            call,
            inner_depth: 0,
            name,
        }
    }
}

impl<I: Idempotency, C, F, T, E> Future for RunOnce<'_, I, C, F>
where
    F: Future<Output = Result<T, E>>,
    E: From<ResilienceError> + fmt::Display,
    C: Classifier<E>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let started = *this.inner_depth == 0;
        if started {
            // The first poll: the nesting depth is the polling task's (R6).
            *this.inner_depth = current_depth().saturating_add(1);
            match this.call.acquire_once() {
                Ok(permit) => *this.permit = permit,
                Err(refused) => {
                    this.attempt.set(None);
                    return Poll::Ready(Err(refused));
                }
            }
        }
        let Some(attempt) = this.attempt.as_mut().as_pin_mut() else {
            panic!("`RunOnce` polled after completion");
        };
        let polled = {
            let _depth = if started && this.name.id == 0 {
                let (depth, nth) = DepthGuard::attempt(*this.inner_depth, &*this.call);
                *this.name = name_of(&*this.call, nth);
                depth
            } else {
                DepthGuard::named(*this.inner_depth, *this.name)
            };
            fail_on_unwind(this.permit, || attempt.poll(cx))
        };
        let result = match polled {
            Poll::Ready(result) => result,
            Poll::Pending => match poll_deadline(this.call, this.timer, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(elapsed) => Err(E::from(timed_out(this.call, elapsed))),
            },
        };
        this.attempt.set(None);
        *this.timer = None;
        this.call
            .finish_once(this.permit.take(), &result, *this.name);
        Poll::Ready(result)
    }
}

/// Arms the deadline timer the first time the attempt waits, and polls it; when it fires,
/// how long the attempt ran. Out of line: the success path never gets here.
#[inline(never)]
fn poll_deadline<I, C>(
    call: &Call<'_, I, C>,
    timer: &mut Option<SleepFuture>,
    cx: &mut Context<'_>,
) -> Poll<Duration> {
    // The policy read takes its lock: only here, off the success path.
    let total = call
        .total_timeout
        .unwrap_or_else(|| call.guard.policy.get().total_timeout());
    let timer = timer.get_or_insert_with(|| call.guard.async_sleeper.deadline(total));
    timer.as_mut().poll(cx).map(|()| total)
}

/// The error for the attempt cancelled at the deadline; emits its event (R8).
#[cold]
fn timed_out<I, C>(call: &Call<'_, I, C>, elapsed: Duration) -> ResilienceError {
    let service = call.guard.service.clone();
    events::deadline_cancelled(&service, call.operation, 1, elapsed);
    ResilienceError::TotalTimeout {
        service,
        elapsed,
        attempts: 1,
    }
}
