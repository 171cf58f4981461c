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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Where code runs: the nesting depth, and which attempt encloses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Level {
    pub(crate) depth: u32,
    /// For an async attempt, a number of its own ([`fresh_number`], cut to 32 bits) given
    /// when it starts (0 for sync attempts, whose `attempt` is such a number). An async
    /// loop's attempts share its address, and so do a cancelled attempt and the next one, or
    /// a dropped loop and a new one in its place; a report made in one of them may be left
    /// on a thread, or arrive late from a task spawned with [`propagate`]: the number keeps
    /// any other attempt from taking it as its own.
    pub(crate) nth: u32,
    /// The enclosing attempt (0: none known). A nested call's Retry-After report names it,
    /// so that attempt's loop can tell the report came from inside it (see `retry::sink`).
    /// Async loops name an attempt by the address of their state, which is pinned (or
    /// borrowed) while it runs and costs nothing to take, and `nth`; sync loops by an odd
    /// number ([`DepthGuard::start`]): taking the address of a sync loop's state kept the
    /// optimizer from holding it in registers (about 2 ns per call). Addresses are even, so
    /// the two never meet.
    pub(crate) attempt: usize,
}

/// A Retry-After told to a sink, kept for the loops around the call that told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reported {
    /// The sink, by address.
    pub(crate) sink: usize,
    /// The attempt the reporting call ran in ([`Level::attempt`]).
    pub(crate) within: AttemptName,
    /// The service and the error's text, hashed: an enclosing loop reuses the report only
    /// for the same failure, not for another 429 its attempt got after swallowing this one.
    pub(crate) failure: u64,
    pub(crate) hint: Duration,
    pub(crate) answer: Duration,
}

struct Nesting {
    level: Cell<Level>,
    /// The last attempt number handed out on this thread (odd; see [`fresh_number`]).
    numbers: Cell<usize>,
    /// The attempt the last report on this thread was made in (0: no report kept). A report
    /// that names an attempt was made inside it: names are not reused (see [`Level`]).
    reported_within: Cell<usize>,
    /// That report, valid while `reported_within` is not 0.
    reported: Cell<Reported>,
}

/// An attempt's name: [`Level::attempt`] and [`Level::nth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttemptName {
    pub(crate) id: usize,
    pub(crate) nth: u32,
}

impl Level {
    /// The enclosing attempt's name.
    #[inline]
    pub(crate) fn attempt_name(self) -> AttemptName {
        AttemptName {
            id: self.attempt,
            nth: self.nth,
        }
    }
}

/// An attempt started by [`DepthGuard::enter_attempt`] for a part of it that runs now,
/// handed to [`Call::run_once_async_in`](crate::retry::Call::run_once_async_in) so that the
/// future that runs the rest of it carries on the same attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptTag(pub(crate) AttemptName);

/// The name of the attempt numbered `nth` (see [`DepthGuard::attempt`]) of the async loop
/// whose state is `state`.
#[inline]
pub(crate) fn name_of<S>(state: &S, nth: u32) -> AttemptName {
    AttemptName {
        id: address(state),
        nth,
    }
}

/// How many numbers a thread takes at once from the process-wide range.
const BLOCK: usize = 1 << 16;

/// The start of the next block of numbers a thread may take; block 0 is never handed out,
/// so the first number a thread gives is always from a block of its own.
static NEXT_BLOCK: AtomicUsize = AtomicUsize::new(BLOCK);

/// A number no other attempt in the process has (odd, never 0): attempts name themselves by
/// it (sync ones alone, async ones with their address). Each thread hands numbers out of a
/// block of the process-wide range that it alone holds: a report carried to another thread
/// (by [`propagate`]) names an attempt that no attempt there will ever have. Numbering per
/// thread (3, 5, 7, … on every thread) let two threads' attempts share a name.
///
/// One thread-local add and a test on the path of every attempt; a shared atomic add once
/// every 32 768 attempts of a thread.
#[inline]
fn fresh_number(n: &Nesting) -> usize {
    let last = n.numbers.get();
    let next = if last & (BLOCK - 1) == BLOCK - 1 {
        new_block()
    } else {
        last + 2
    };
    n.numbers.set(next);
    next
}

/// The first number of a block no other thread holds (wrapping over the whole range only
/// after 2^63 numbers on 64-bit targets).
#[cold]
#[inline(never)]
fn new_block() -> usize {
    NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed) | 1
}

const NO_REPORT: Reported = Reported {
    sink: 0,
    within: AttemptName { id: 0, nth: 0 },
    failure: 0,
    hint: Duration::ZERO,
    answer: Duration::ZERO,
};

thread_local! {
    static NESTING: Nesting = const {
        Nesting {
            level: Cell::new(Level {
                depth: 0,
                nth: 0,
                attempt: 0,
            }),
            // The last number of block 0: the first number handed out takes a block.
            numbers: Cell::new(BLOCK - 1),
            reported_within: Cell::new(0),
            reported: Cell::new(NO_REPORT),
        }
    };
}

/// The nesting depth of guarded calls on this thread (or in the task being polled).
#[inline]
pub fn current_depth() -> u32 {
    NESTING.with(|n| n.level.get().depth)
}

/// The depth and enclosing attempt of the code running now.
#[inline]
pub(crate) fn current_level() -> Level {
    NESTING.with(|n| n.level.get())
}

/// Takes the last report made on this thread (see [`Nesting::reported_within`]).
#[inline]
pub(crate) fn take_reported() -> Option<Reported> {
    NESTING.with(|n| (n.reported_within.replace(0) != 0).then(|| n.reported.get()))
}

/// Keeps `report` for the loop around the call that made it; one made outside any attempt
/// has no such loop.
#[inline]
pub(crate) fn keep_reported(report: Reported) {
    if report.within.id != 0 {
        NESTING.with(|n| {
            n.reported.set(report);
            n.reported_within.set(report.within.id);
        });
    }
}

/// Raises the depth until dropped. Restores the previous value, so it unwinds correctly on
/// panic.
#[derive(Debug)]
#[must_use = "the depth is raised only while the guard lives"]
pub struct DepthGuard {
    prev: Level,
    // The depth lives in a thread-local: the guard must be dropped on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DepthGuard {
    /// Sets the depth to `depth` until the guard is dropped; the enclosing attempt stays.
    #[inline]
    pub fn set(depth: u32) -> Self {
        let prev = NESTING.with(|n| {
            let prev = n.level.get();
            n.level.set(Level { depth, ..prev });
            prev
        });
        Self {
            prev,
            _not_send: std::marker::PhantomData,
        }
    }

    /// Enters one more level of nesting.
    #[inline]
    pub fn enter() -> Self {
        Self::set(current_depth().saturating_add(1))
    }

    /// Enters one more level of nesting in a new attempt, whose tag is returned: for the
    /// synchronous part of a single attempt whose future runs later (a run-once `impl Future`
    /// fn's body makes its future now). The future, run with
    /// [`Call::run_once_async_in`](crate::retry::Call::run_once_async_in) and this tag, is
    /// the same attempt: a nested call's Retry-After reported in either part is the
    /// attempt's own, and reaches the sink once (R12).
    #[inline]
    pub fn enter_attempt() -> (Self, AttemptTag) {
        let (guard, name) = Self::start(current_depth().saturating_add(1));
        (guard, AttemptTag(name))
    }

    /// Starts a sync attempt at `depth` until the guard is dropped: the code it runs is
    /// inside a new attempt, whose number ([`Level::attempt`]) is returned for the loop to
    /// decide with. A new number ([`fresh_number`]): no report anywhere can name it yet.
    #[inline]
    pub(crate) fn start(depth: u32) -> (Self, AttemptName) {
        let (prev, attempt) = NESTING.with(|n| {
            let attempt = fresh_number(n);
            let level = Level {
                depth,
                nth: 0,
                attempt,
            };
            (n.level.replace(level), level.attempt_name())
        });
        let guard = Self {
            prev,
            _not_send: std::marker::PhantomData,
        };
        (guard, attempt)
    }

    /// Starts an attempt of the async loop whose state is `state` at `depth`, with a number
    /// of its own ([`Level::nth`]), returned for the loop to keep: to [`resume`] the attempt
    /// and to name it ([`name_of`]) once it fails. No report anywhere can name it yet, so one
    /// found once it has failed was made inside it: not one made by an earlier attempt at
    /// this address (its previous attempt, a cancelled one, a dropped loop's) that was left
    /// on the thread or arrived late from a task spawned with [`propagate`].
    ///
    /// [`resume`]: Self::resume
    #[inline]
    pub(crate) fn attempt<S>(depth: u32, state: &S) -> (Self, u32) {
        let attempt = address(state);
        let (prev, nth) = NESTING.with(|n| {
            // Cut to 32 bits: two attempts share a name only if they also share an address
            // and are 2^31 attempts apart.
            let nth = fresh_number(n) as u32;
            let level = Level {
                depth,
                nth,
                attempt,
            };
            (n.level.replace(level), nth)
        });
        let guard = Self {
            prev,
            _not_send: std::marker::PhantomData,
        };
        (guard, nth)
    }

    /// Resumes (polls again) the running attempt, numbered `nth`, of the async loop whose
    /// state is `state`.
    #[inline]
    pub(crate) fn resume<S>(depth: u32, state: &S, nth: u32) -> Self {
        Self::at(Level {
            depth,
            nth,
            attempt: address(state),
        })
    }

    /// Runs (or resumes) the attempt named `name` at `depth`.
    #[inline]
    pub(crate) fn named(depth: u32, name: AttemptName) -> Self {
        Self::at(Level {
            depth,
            nth: name.nth,
            attempt: name.id,
        })
    }

    #[inline]
    fn at(level: Level) -> Self {
        Self {
            prev: NESTING.with(|n| n.level.replace(level)),
            _not_send: std::marker::PhantomData,
        }
    }
}

/// An async loop's name for its attempt: its state's address (see [`Level::attempt`]).
#[inline]
pub(crate) fn address<S>(state: &S) -> usize {
    // Even, apart from the odd numbers of sync attempts.
    const { assert!(std::mem::align_of::<S>() >= 2) };
    std::ptr::from_ref(state).addr()
}

impl Drop for DepthGuard {
    #[inline]
    fn drop(&mut self) {
        NESTING.with(|n| n.level.set(self.prev));
    }
}

pin_project_lite::pin_project! {
    /// A future polled at a fixed nesting depth.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct AtDepth<F> {
        level: Level,
        #[pin]
        inner: F,
    }
}

impl<F> AtDepth<F> {
    /// `inner`, polled with the nesting depth set to `depth`.
    pub fn new(depth: u32, inner: F) -> Self {
        Self {
            level: Level {
                depth,
                nth: 0,
                attempt: 0,
            },
            inner,
        }
    }
}

impl<F: Future> Future for AtDepth<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _depth = DepthGuard::at(*this.level);
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
    AtDepth {
        level: current_level(),
        inner: fut,
    }
}

/// Carries the current nesting depth into a closure that will run on another thread, such as
/// one handed to `tokio::task::spawn_blocking` or `std::thread::spawn`: guarded calls inside
/// it then run once, like any nested call, instead of retrying on their own (a sync client
/// called from async code through `spawn_blocking` otherwise multiplies its attempts by the
/// outer call's).
///
/// ```
/// use resilience_core::retry::nesting::{current_depth, propagate_fn, DepthGuard};
///
/// let outer = DepthGuard::enter();
/// let f = propagate_fn(current_depth);
/// let seen = std::thread::spawn(f).join().unwrap();
/// drop(outer);
/// assert_eq!(seen, 1);
/// ```
pub fn propagate_fn<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let level = current_level();
    move || {
        let _depth = DepthGuard::at(level);
        f()
    }
}
