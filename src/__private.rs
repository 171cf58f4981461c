//! What macro expansions name, by absolute path. Not public API: may change in any release.
//!
//! Expansions of `#[retry_service_operation]` put one `CallSite` in a `static` inside the
//! annotated fn and hand the fn body to `sync_retry` (or drive `async_loop` with it as each
//! attempt; `sync_once` / `async_once` for a fn that runs once); each retried attempt starts
//! from `fresh` clones of the by-value arguments (M4).

pub use ::core::future::Future;
pub use ::core::ops::ControlFlow;
pub use ::core::result::Result;
pub use resilience_core::backoff::BackoffStrategy;
pub use resilience_core::retry::{AsyncLoop, Idempotency, Idempotent, NotIdempotent, SyncLoop};
pub use resilience_core::ResilienceError;

pub use crate::site::CallSite;
pub use resilience_config::CodeDeclared;

use resilience_core::retry::AllTransient;

/// The error type of a guarded fn: it must carry the framework's refusals and render for logs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a guarded fn: it needs `From<resilience::ResilienceError>` and `Display`",
    label = "this error type cannot carry the framework's refusals (circuit open, total timeout, ...)",
    note = "add `impl From<resilience::ResilienceError> for {Self}` (e.g. a `#[from]` variant with thiserror), and implement `Display`"
)]
pub trait RetryableError: From<ResilienceError> + ::core::fmt::Display {}

impl<E: From<ResilienceError> + ::core::fmt::Display> RetryableError for E {}

/// Asserts at compile time that `E` is a [`RetryableError`], with the readable message.
#[inline(always)]
pub const fn assert_retryable_error<E: RetryableError>() {}

/// A by-value argument of a retried fn: each attempt starts from a clone of it (M4). One
/// shared trait (not one per argument) keeps the expansion cheap to compile; the error is
/// reported on the argument itself, so the snippet under the message names it.
#[diagnostic::on_unimplemented(
    message = "an argument of a retried fn is taken by value, but `{Self}` is not `Clone`: each attempt needs its own copy of it",
    label = "each attempt of the retried fn starts from a clone of this argument",
    note = "take this argument by reference (e.g. `&str` for `String`, `&[T]` for `Vec<T>`), make `{Self}` implement `Clone`, or drop `idempotent` so the fn runs once and may consume it"
)]
pub trait RetryArg: Clone {}

impl<T: Clone> RetryArg for T {}

/// The fresh value of a by-value argument for one attempt (M4).
#[inline(always)]
pub fn fresh<T: RetryArg>(original: &T) -> T {
    original.clone()
}

/// The retry loop of a sync idempotent annotated fn: one call per fn instead of a loop in
/// each expansion. `attempt` is the fn body; it only borrows the fn's arguments (M4), so it
/// can run again.
#[inline]
pub fn sync_retry<T, E: RetryableError>(
    site: &'static CallSite,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let mut driver = sync_loop(site, Idempotent);
    loop {
        if let ControlFlow::Break(out) = driver.step(&mut attempt) {
            return out;
        }
    }
}

/// The sync driver for one call of an annotated fn.
#[inline]
pub fn sync_loop<I: Idempotency>(
    site: &'static CallSite,
    idempotency: I,
) -> SyncLoop<'static, AllTransient> {
    site.guard()
        .call(site.operation())
        .idempotency(idempotency)
        .sync_loop()
}

/// The async driver for one call of an annotated fn.
#[inline]
pub fn async_loop<I: Idempotency>(
    site: &'static CallSite,
    idempotency: I,
) -> AsyncLoop<'static, AllTransient> {
    site.guard()
        .call(site.operation())
        .idempotency(idempotency)
        .async_loop()
}

/// `Option::Some(..)` in generated `CodeDeclared` literals, named by absolute path.
pub use ::core::option::Option;

/// The single attempt of an annotated fn without `idempotent` (M2): runs `attempt` exactly
/// once, through the breaker. It takes the attempt by value, so the body may move the fn's
/// arguments (M4). A write compiled without `idempotent` is never run twice, even under a
/// policy with `retry_on_idempotent_only = false` (C12): the compile-time marker wins.
#[inline]
pub fn sync_once<T, E: RetryableError>(
    site: &'static CallSite,
    attempt: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    site.guard().call(site.operation()).run_once(attempt)
}

/// The async `sync_once`.
pub async fn async_once<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    site: &'static CallSite,
    attempt: F,
) -> Result<T, E> {
    site.guard()
        .call(site.operation())
        .run_once_async(attempt)
        .await
}
