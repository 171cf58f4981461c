//! The nesting guard against retry amplification (R6).
//!
//! When a retried call to service A calls service B, which also retries, the attempts
//! multiply (3 × 3 = 9 calls to B for one call to A). The guard tracks the nesting depth of
//! guarded calls; at depth ≥ 1 an inner guarded call runs exactly once, still through its
//! breaker.
//!
//! Sync calls keep the depth in a thread-local for the duration of the call. Async calls keep
//! it in task-local fashion: the depth is installed in the same thread-local around every poll
//! of the guarded future and removed after it, so it follows the future across `.await`s
//! and across threads of a work-stealing runtime, and a sync guarded call made inside an async
//! one sees it too.
//!
//! **Across `tokio::spawn`:** a spawned task is polled by the runtime, not by the guarded
//! future, so it starts at depth 0: its guarded calls retry on their own. Wrap the spawned
//! future in [`propagate`] to carry the depth into it.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The nesting depth of guarded calls on this thread (or in the task being polled).
#[inline]
pub fn current_depth() -> u32 {
    DEPTH.with(Cell::get)
}

/// Raises the depth until dropped. Restores the previous value, so it unwinds correctly on
/// panic.
#[derive(Debug)]
#[must_use = "the depth is raised only while the guard lives"]
pub struct DepthGuard {
    prev: u32,
    // The depth lives in a thread-local: the guard must be dropped on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DepthGuard {
    /// Sets the depth to `depth` until the guard is dropped.
    #[inline]
    pub fn set(depth: u32) -> Self {
        Self {
            prev: DEPTH.with(|d| d.replace(depth)),
            _not_send: std::marker::PhantomData,
        }
    }

    /// Enters one more level of nesting.
    #[inline]
    pub fn enter() -> Self {
        Self::set(current_depth().saturating_add(1))
    }
}

impl Drop for DepthGuard {
    #[inline]
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(self.prev));
    }
}

pin_project_lite::pin_project! {
    /// A future polled at a fixed nesting depth.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct AtDepth<F> {
        depth: u32,
        #[pin]
        inner: F,
    }
}

impl<F> AtDepth<F> {
    /// `inner`, polled with the nesting depth set to `depth`.
    pub fn new(depth: u32, inner: F) -> Self {
        Self { depth, inner }
    }
}

impl<F: Future> Future for AtDepth<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _depth = DepthGuard::set(*this.depth);
        this.inner.poll(cx)
    }
}

/// Carries the current nesting depth into a future that will be polled elsewhere, such as a
/// task handed to `tokio::spawn`: guarded calls inside it then run once, like any nested call.
///
/// ```
/// use resilience_core::retry::nesting::{current_depth, propagate, DepthGuard};
///
/// let _outer = DepthGuard::enter();
/// let fut = propagate(async { current_depth() });
/// drop(_outer);
/// // Polled later, outside the guarded call, it still sees depth 1.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(fut), 1);
/// ```
pub fn propagate<F: Future>(fut: F) -> AtDepth<F> {
    AtDepth::new(current_depth(), fut)
}
