//! Injected waiting.
//!
//! [`Sleeper`] blocks a thread, [`AsyncSleeper`] returns a future. Both are object safe so a
//! registry can hold `Arc<dyn …>`; they are only used after a failure, so the boxing in
//! [`AsyncSleeper`] never touches the success path.
//!
//! [`ManualSleeper`] implements both for tests: it advances a [`ManualClock`] by the requested
//! delay at once and records it, so a retry schedule is an exact assertion.
//!
//! ```
//! use resilience_core::clock::{Clock, ManualClock};
//! use resilience_core::sleep::{ManualSleeper, Sleeper};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let sleeper = ManualSleeper::new(clock.clone());
//! sleeper.sleep(Duration::from_millis(250));
//! assert_eq!(clock.now(), Duration::from_millis(250));
//! assert_eq!(sleeper.delays(), vec![Duration::from_millis(250)]);
//! ```

#[cfg(not(feature = "tokio"))]
mod timer_thread;

use crate::clock::ManualClock;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed, sendable future that completes after a delay.
pub type SleepFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Blocks the current thread for a delay.
pub trait Sleeper: Send + Sync + fmt::Debug + 'static {
    /// Blocks for `delay`.
    fn sleep(&self, delay: Duration);
}

/// Produces futures that complete after a delay.
pub trait AsyncSleeper: Send + Sync + fmt::Debug + 'static {
    /// A future that completes after `delay`.
    fn sleep(&self, delay: Duration) -> SleepFuture;

    /// A timer that fires after `delay`, raced against an in-flight attempt to cancel it at
    /// the total deadline. Unlike [`sleep`](Self::sleep) it is not a wait the caller chose,
    /// so test sleepers fire it only once time has really reached the deadline.
    fn deadline(&self, delay: Duration) -> SleepFuture {
        self.sleep(delay)
    }
}

impl<S: Sleeper + ?Sized> Sleeper for Arc<S> {
    fn sleep(&self, delay: Duration) {
        (**self).sleep(delay);
    }
}

impl<S: AsyncSleeper + ?Sized> AsyncSleeper for Arc<S> {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        (**self).sleep(delay)
    }
    fn deadline(&self, delay: Duration) -> SleepFuture {
        (**self).deadline(delay)
    }
}

/// Blocks with `std::thread::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, delay: Duration) {
        std::thread::sleep(delay);
    }
}

/// Sleeps with `tokio::time::sleep`; needs a tokio runtime with the time driver.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

#[cfg(feature = "tokio")]
impl AsyncSleeper for TokioSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        Box::pin(tokio::time::sleep(delay))
    }
}

/// A test sleeper: advances a [`ManualClock`] by each requested delay and records it.
///
/// As an [`AsyncSleeper`] the returned future is ready on its first poll; the clock moves
/// when that poll happens, not when the future is made, so a sleep that is raced and lost
/// (a deadline timer that never fires) leaves no trace.
#[derive(Clone)]
pub struct ManualSleeper {
    clock: ManualClock,
    delays: Arc<parking_lot::Mutex<Vec<Duration>>>,
    // Deadline timers waiting for the clock to reach them.
    wakers: Arc<parking_lot::Mutex<Vec<std::task::Waker>>>,
}

impl ManualSleeper {
    /// A sleeper driving `clock`.
    pub fn new(clock: ManualClock) -> Self {
        Self {
            clock,
            delays: Arc::default(),
            wakers: Arc::default(),
        }
    }

    /// Every delay slept so far, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.delays.lock().clone()
    }

    /// The clock this sleeper advances.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Advances the clock without recording a sleep (time spent by an operation), and fires
    /// any deadline timers it reaches.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.wake_deadlines();
    }

    fn record(&self, delay: Duration) {
        self.delays.lock().push(delay);
        self.advance(delay);
    }

    fn wake_deadlines(&self) {
        let wakers = std::mem::take(&mut *self.wakers.lock());
        for w in wakers {
            w.wake();
        }
    }
}

impl fmt::Debug for ManualSleeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualSleeper")
            .field("clock", &self.clock)
            .field("delays", &self.delays())
            .finish()
    }
}

impl Sleeper for ManualSleeper {
    fn sleep(&self, delay: Duration) {
        self.record(delay);
    }
}

impl AsyncSleeper for ManualSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        let this = self.clone();
        Box::pin(async move { this.record(delay) })
    }

    fn deadline(&self, delay: Duration) -> SleepFuture {
        use crate::clock::Clock;
        let at = self.clock.now().saturating_add(delay);
        let this = self.clone();
        Box::pin(std::future::poll_fn(move |cx| {
            if this.clock.now() >= at {
                std::task::Poll::Ready(())
            } else {
                this.wakers.lock().push(cx.waker().clone());
                std::task::Poll::Pending
            }
        }))
    }
}

/// Without the `tokio` feature: an async sleeper whose backoff sleep blocks the polling
/// thread. Only a fallback; provide an [`AsyncSleeper`] for your runtime instead.
///
/// Its [`deadline`](AsyncSleeper::deadline) timer does not block: one shared thread
/// (`resilience-deadlines`, started on first use) wakes each armed deadline at its instant,
/// so an attempt that waits is cancelled at the total deadline (R7), not held up by it.
#[cfg(not(feature = "tokio"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockingAsyncSleeper;

#[cfg(not(feature = "tokio"))]
impl AsyncSleeper for BlockingAsyncSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        Box::pin(async move { std::thread::sleep(delay) })
    }

    fn deadline(&self, delay: Duration) -> SleepFuture {
        Box::pin(timer_thread::Deadline::after(delay))
    }
}
