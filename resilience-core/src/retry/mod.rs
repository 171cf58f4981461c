//! The retry executor (R1, R2, R6, R7, R8, R12).
//!
//! Build a [`ServiceGuard`] per service once, then per call:
//! `guard.call("op").idempotent().run(|| …)` for sync code or
//! `guard.call("op").idempotent().run_async(|| async { … }).await` for async code.
//!
//! - Only idempotent calls retry; others run exactly once (R1).
//! - Inside another guarded call, a call runs once, still through its breaker (R6, [`nesting`]).
//! - The total deadline is measured from the first attempt and includes the operation's own
//!   time; no sleep is scheduled past it; an async attempt in flight at the deadline is
//!   cancelled (R7).
//! - Every failed attempt emits a `tracing` event with `service`, `operation`, `attempt` and
//!   the sanitized `error` (R8).
//! - A panic in the operation (its body, its future's poll or the factory making that
//!   future) counts as a breaker failure (B6; a panicking probe re-opens the circuit, B4) and
//!   propagates unchanged, never retried; the nesting depth is restored on the way out.
//! - Exhausted or stopped retries return the operation's last error, unchanged. The
//!   framework's own refusals reach the caller as `E::from(ResilienceError)`.

mod call;
mod classify;
mod driver;
mod events;
mod guard;
mod idempotency;
pub mod nesting;
mod policy;
mod policy_cell;
mod sink;

pub use call::Call;
pub use classify::{AllTransient, ByHint, Classifier, ErrorClass, RetryHint};
pub use driver::{AsyncLoop, AsyncStep, RunAsync, RunOnce, SyncLoop};
pub use guard::{ServiceGuard, ServiceGuardBuilder};
pub use idempotency::{Idempotency, Idempotent, NotIdempotent, RetrySafe};
pub use policy::RetryPolicy;
pub use sink::RetryAfterSink;
