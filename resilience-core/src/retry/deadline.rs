//! Racing an async attempt against the total deadline, arming the timer only when needed.

use super::driver::LoopState;
use crate::sleep::SleepFuture;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// Resolves to `Some(output)`, or `None` if the deadline passed first (the attempt is then
    /// dropped, which cancels it).
    pub(crate) struct WithDeadline<'s, 'a, F, C> {
        #[pin]
        inner: F,
        timer: Option<SleepFuture>,
        // The loop's state: clock, sleeper, start and total are read from it only when the
        // timer is armed, which keeps this future small and the success path lock-free.
        state: &'s mut LoopState<'a, C>,
    }
}

impl<'s, 'a, F, C> WithDeadline<'s, 'a, F, C> {
    pub(crate) fn new(inner: F, state: &'s mut LoopState<'a, C>) -> Self {
        Self {
            inner,
            timer: None,
            state,
        }
    }
}

impl<F: Future, C> Future for WithDeadline<'_, '_, F, C> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The attempt goes first: a result that is ready wins over a deadline reached at the
        // same instant.
        if let Poll::Ready(out) = this.inner.poll(cx) {
            return Poll::Ready(Some(out));
        }
        let state = &mut **this.state;
        let timer = this.timer.get_or_insert_with(|| {
            let elapsed = state.elapsed();
            let remaining = state.total().saturating_sub(elapsed);
            state.guard.async_sleeper.deadline(remaining)
        });
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
