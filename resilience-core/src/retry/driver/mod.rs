//! Step-by-step retry loops. The closure API ([`Call::run`](super::Call::run)) and the
//! attribute's expansion both drive these, so there is one retry mechanism.
//!
//! A driver owns the loop's state (attempt number, deadline start, jitter); each `step` runs
//! one attempt through the breaker, reports its outcome, and either breaks with the final
//! result or waits the backoff and continues. The attempt body is supplied per step, so it can
//! borrow `&mut self` and arguments afresh each time: no `FnMut` returning a borrowing future.

mod async_loop;
pub(crate) mod shared;
mod sync_loop;

pub use async_loop::AsyncLoop;
pub(crate) use shared::LoopState;
pub use sync_loop::SyncLoop;
