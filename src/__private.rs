//! What macro expansions name, by absolute path. Not public API: may change in any release.
//!
//! TEMPORARY STAND-IN (branch wip/macros): the drivers below only loop up to `max_attempts`
//! (default 3 when idempotent, 1 otherwise) with no breaker, no backoff sleep, no deadline and
//! no nesting guard. They exist so the macro's expansion compiles and its shape can be tested
//! before the real drivers (resilience-core `retry/driver.rs`) land; the lead replaces this
//! whole file at merge. Names and signatures follow the runtime contract, plus two additions
//! the macro needs (flagged `ADDITION` below).

pub use ::core::future::Future;
pub use ::core::ops::ControlFlow;
// ADDITION: generated code spells `Option::Some(..)` in `CodeDeclared` literals by absolute path.
pub use ::core::option::Option;
pub use ::core::result::Result;
pub use resilience_core::backoff::BackoffStrategy;
pub use resilience_core::retry::{Idempotency, Idempotent, NotIdempotent};
pub use resilience_core::ResilienceError;

/// The code-declared layer (will come from resilience-config; same fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodeDeclared {
    /// `max_attempts = n`.
    pub max_attempts: Option<u32>,
    /// `backoff = "…"`.
    pub backoff: Option<BackoffStrategy>,
    /// `base_delay = secs`.
    pub base_delay: Option<f64>,
    /// `max_delay = secs`.
    pub max_delay: Option<f64>,
    /// `jitter = bool`.
    pub jitter: Option<bool>,
    /// `total_timeout = secs`.
    pub total_timeout: Option<f64>,
}

impl CodeDeclared {
    /// Nothing declared.
    pub const EMPTY: Self = Self {
        max_attempts: None,
        backoff: None,
        base_delay: None,
        max_delay: None,
        jitter: None,
        total_timeout: None,
    };
}

/// One per annotated fn, in a `static` inside the fn body.
#[derive(Debug)]
pub struct CallSite {
    service: &'static str,
    operation: &'static str,
    declared: CodeDeclared,
}

impl CallSite {
    /// A call site of `operation` on `service` with the code-declared settings.
    pub const fn new(
        service: &'static str,
        operation: &'static str,
        declared: CodeDeclared,
    ) -> Self {
        Self {
            service,
            operation,
            declared,
        }
    }

    /// The service name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The operation name.
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    fn max_attempts<I: Idempotency>(&self) -> u32 {
        if I::IDEMPOTENT {
            self.declared.max_attempts.unwrap_or(3)
        } else {
            1
        }
    }
}

/// The error type of a guarded fn: carries the framework's refusals.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a #[retry_service_operation] fn",
    label = "this error type must implement `From<resilience::ResilienceError>` and `Display`",
    note = "the framework reports its own refusals (circuit open, total timeout) through your error type: add `impl From<resilience::ResilienceError> for {Self}`"
)]
pub trait RetryableError: From<ResilienceError> + ::core::fmt::Display {}

impl<E: From<ResilienceError> + ::core::fmt::Display> RetryableError for E {}

/// Sync driver state.
#[derive(Debug)]
pub struct SyncLoop<I> {
    site: &'static CallSite,
    attempt: u32,
    _idempotency: I,
}

/// Starts the sync driver for one call.
pub fn sync_loop<I: Idempotency>(site: &'static CallSite, idempotency: I) -> SyncLoop<I> {
    SyncLoop {
        site,
        attempt: 0,
        _idempotency: idempotency,
    }
}

impl<I: Idempotency> SyncLoop<I> {
    /// Runs one attempt; breaks with the final result or continues with another attempt.
    pub fn step<T, E: RetryableError>(
        &mut self,
        attempt: impl FnOnce() -> Result<T, E>,
    ) -> ControlFlow<Result<T, E>> {
        self.attempt += 1;
        match attempt() {
            Ok(v) => ControlFlow::Break(Ok(v)),
            Err(e) if self.attempt >= self.site.max_attempts::<I>() => ControlFlow::Break(Err(e)),
            Err(_) => ControlFlow::Continue(()),
        }
    }
}

impl SyncLoop<NotIdempotent> {
    /// ADDITION: the single attempt of a not-idempotent operation. Consumes the driver, so the
    /// operation provably runs at most once and may move its arguments.
    pub fn once<T, E: RetryableError>(
        mut self,
        attempt: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.attempt += 1;
        attempt()
    }
}

/// Async driver state.
#[derive(Debug)]
pub struct AsyncLoop<I> {
    inner: SyncLoop<I>,
}

/// Starts the async driver for one call.
pub fn async_loop<I: Idempotency>(site: &'static CallSite, idempotency: I) -> AsyncLoop<I> {
    AsyncLoop {
        inner: sync_loop(site, idempotency),
    }
}

impl<I: Idempotency> AsyncLoop<I> {
    /// Awaits one attempt; breaks with the final result or continues with another attempt.
    pub async fn step<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
        &mut self,
        attempt: F,
    ) -> ControlFlow<Result<T, E>> {
        let out = attempt.await;
        self.inner.step(move || out)
    }
}

impl AsyncLoop<NotIdempotent> {
    /// ADDITION: the single attempt of a not-idempotent async operation (see
    /// [`SyncLoop::once`]).
    pub async fn once<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
        self,
        attempt: F,
    ) -> Result<T, E> {
        attempt.await
    }
}
