//! What macro expansions name, by absolute path. Not public API: may change in any release.
//!
//! Expansions of `#[retry_service_operation]` put one `CallSite` in a `static` inside the
//! annotated fn and drive `sync_loop` or `async_loop` with the fn body as each attempt.

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

// ===== ADDITIONS from wip/macros: what the attribute's expansion needs beyond the above =====

/// `Option::Some(..)` in generated `CodeDeclared` literals, named by absolute path.
pub use ::core::option::Option;

/// The single attempt of an annotated fn without `idempotent` (M2): runs `attempt` exactly
/// once, through the breaker. It takes the attempt by value, so the body may move the fn's
/// arguments (M4). A write compiled without `idempotent` is never run twice, even under a
/// policy with `retry_on_idempotent_only = false` (C12); the driver's events still report it.
pub fn sync_once<T, E: RetryableError>(
    site: &'static CallSite,
    attempt: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let mut driver = sync_loop(site, NotIdempotent);
    let mut ran = Option::None;
    let flow = driver.step(|| once_signal(attempt(), &mut ran));
    once_outcome(site, flow, ran)
}

/// The async `sync_once`.
pub async fn async_once<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    site: &'static CallSite,
    attempt: F,
) -> Result<T, E> {
    let mut driver = async_loop(site, NotIdempotent);
    let mut ran = Option::None;
    let flow = driver
        .step(async { once_signal(attempt.await, &mut ran) })
        .await;
    once_outcome(site, flow, ran)
}

/// What the driver sees of a single attempt: the real result is kept aside, so the driver
/// cannot consume (or ask to repeat) anything the caller needs back.
enum OnceSignal {
    Failed(::std::string::String),
    Refused(ResilienceError),
}

impl From<ResilienceError> for OnceSignal {
    fn from(e: ResilienceError) -> Self {
        Self::Refused(e)
    }
}

impl ::core::fmt::Display for OnceSignal {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        match self {
            Self::Failed(e) => f.write_str(e),
            Self::Refused(e) => e.fmt(f),
        }
    }
}

fn once_signal<T, E: ::core::fmt::Display>(
    result: Result<T, E>,
    ran: &mut Option<Result<T, E>>,
) -> Result<(), OnceSignal> {
    // Rendered only on failure, for the driver's event (which sanitizes it).
    let signal = match &result {
        Ok(_) => Ok(()),
        Err(e) => Err(OnceSignal::Failed(e.to_string())),
    };
    *ran = Option::Some(result);
    signal
}

fn once_outcome<T, E: From<ResilienceError>>(
    site: &'static CallSite,
    flow: ControlFlow<Result<(), OnceSignal>>,
    ran: Option<Result<T, E>>,
) -> Result<T, E> {
    match (ran, flow) {
        // The attempt ran: its own result, whatever the driver would do next.
        (Option::Some(result), _) => result,
        (Option::None, ControlFlow::Break(Err(OnceSignal::Refused(r)))) => Err(E::from(r)),
        // The driver ends a step without running the attempt only by refusing it; should that
        // change, the caller still gets a refusal, never a second run.
        (Option::None, _) => Err(E::from(ResilienceError::CircuitOpen {
            service: ::std::sync::Arc::from(site.service()),
        })),
    }
}
