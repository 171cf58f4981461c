//! Step-by-step retry loops. The closure API ([`Call::run`](super::Call::run)) and the
//! attribute's expansion both drive these. [`Call::run_async`](super::Call::run_async) is a
//! hand-written future instead ([`RunAsync`]), so its first attempt is polled in place; it
//! shares the loop state, the breaker access and the retry decision
//! ([`LoopState`](shared::LoopState)) with [`AsyncLoop`], so there is still one retry policy.
//! [`AsyncLoop::step`] is a hand-written future too ([`AsyncStep`]): each attempt is polled
//! in place, with no nested `async` state machine around it.
//!
//! A driver owns the loop's state (attempt number, deadline start, jitter); each `step` runs
//! one attempt through the breaker, reports its outcome, and either breaks with the final
//! result or waits the backoff and continues. The attempt body is supplied per step, so it can
//! borrow `&mut self` and arguments afresh each time: no `FnMut` returning a borrowing future.

mod async_loop;
mod attempt;
mod once;
mod run_async;
pub(crate) mod shared;
mod sync_loop;

pub use async_loop::{AsyncLoop, AsyncStep};
pub use once::RunOnce;
pub use run_async::RunAsync;
pub use sync_loop::SyncLoop;
