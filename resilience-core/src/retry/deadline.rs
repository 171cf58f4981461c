//! Racing an async attempt against the total deadline, arming the timer only when needed.

use crate::clock::Clock;
use crate::sleep::{AsyncSleeper, SleepFuture};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

pin_project_lite::pin_project! {
    /// Resolves to `Some(output)`, or `None` if the deadline passed first (the attempt is then
    /// dropped, which cancels it).
    pub(crate) struct WithDeadline<'a, F, T> {
        #[pin]
        inner: F,
        timer: Option<SleepFuture>,
        clock: &'a dyn Clock,
        sleeper: &'a dyn AsyncSleeper,
        start: &'a mut Option<Duration>,
        // Read only when the timer is armed: keeps the policy lock off the success path.
        total: T,
    }
}

impl<'a, F, T: Fn() -> Duration> WithDeadline<'a, F, T> {
    pub(crate) fn new(
        inner: F,
        clock: &'a dyn Clock,
        sleeper: &'a dyn AsyncSleeper,
        start: &'a mut Option<Duration>,
        total: T,
    ) -> Self {
        Self {
            inner,
            timer: None,
            clock,
            sleeper,
            start,
            total,
        }
    }
}

impl<F: Future, T: Fn() -> Duration> Future for WithDeadline<'_, F, T> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The attempt goes first: a result that is ready wins over a deadline reached at the
        // same instant.
        if let Poll::Ready(out) = this.inner.poll(cx) {
            return Poll::Ready(Some(out));
        }
        let timer = this.timer.get_or_insert_with(|| {
            let now = this.clock.now();
            let start = *this.start.get_or_insert(now);
            let remaining = (this.total)().saturating_sub(now.saturating_sub(start));
            this.sleeper.deadline(remaining)
        });
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
