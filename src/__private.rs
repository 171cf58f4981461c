//! What macro expansions name, by absolute path. Not public API: may change in any release.
//!
//! TEMPORARY STAND-IN (branch wip/macros): the lead replaces this whole file at merge. It
//! wires the runtime contract's names to resilience-core's real drivers and registry (breaker,
//! backoff, deadline, nesting guard, events) with default policies, the attribute's declared
//! values laid over them; env vars and JSON overrides (resilience-config) are not read here.
//! Names and signatures follow the runtime contract, plus the additions the macro needs
//! (flagged `ADDITION` below).

pub use ::core::future::Future;
pub use ::core::ops::ControlFlow;
// ADDITION: generated code spells `Option::Some(..)` in `CodeDeclared` literals by absolute path.
pub use ::core::option::Option;
pub use ::core::result::Result;
pub use resilience_core::backoff::BackoffStrategy;
pub use resilience_core::retry::{Idempotency, Idempotent, NotIdempotent};
pub use resilience_core::ResilienceError;

use resilience_core::backoff::Backoff;
use resilience_core::registry::{Registry, ServicePolicy};
use resilience_core::retry as core_driver;
use resilience_core::retry::{AllTransient, RetryPolicy, ServiceGuard};
use std::marker::PhantomData;
use std::sync::OnceLock;

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

/// One per annotated fn, in a `static` inside the fn body. Resolves its service guard once
/// (cached), so the hot path does no registry lookup.
#[derive(Debug)]
pub struct CallSite {
    service: &'static str,
    operation: &'static str,
    declared: CodeDeclared,
    guard: OnceLock<ServiceGuard>,
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
            guard: OnceLock::new(),
        }
    }

    /// The service's guard (shared breaker) with this site's declared retry settings.
    fn guard(&'static self) -> &'static ServiceGuard {
        self.guard.get_or_init(|| {
            let shared = registry().service(self.service);
            let policy = declared_policy(shared.policy(), &self.declared);
            shared.with_policy(policy)
        })
    }
}

/// Every service on default policies (no env or JSON: that is resilience-config's job).
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::new(|_: &str| ServicePolicy::default()))
}

/// `base` with the declared values laid over it; `base` unchanged if they do not validate.
fn declared_policy(base: RetryPolicy, d: &CodeDeclared) -> RetryPolicy {
    let b = base.backoff();
    let backoff = Backoff::from_secs(
        d.backoff.unwrap_or(b.strategy()),
        d.base_delay.unwrap_or(b.base_delay().as_secs_f64()),
        d.max_delay.unwrap_or(b.max_delay().as_secs_f64()),
        d.jitter.unwrap_or(b.jitter()),
    );
    let total = d
        .total_timeout
        .unwrap_or(base.total_timeout().as_secs_f64());
    backoff
        .and_then(|bo| {
            RetryPolicy::from_secs(d.max_attempts.unwrap_or(base.max_attempts()), bo, total)
        })
        .unwrap_or(base)
}

/// The error type of a guarded fn: carries the framework's refusals.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a #[retry_service_operation] fn",
    label = "this error type must implement `From<resilience::ResilienceError>` and `Display`",
    note = "the framework reports its own refusals (circuit open, total timeout) through your error type: add `impl From<resilience::ResilienceError> for {Self}`"
)]
pub trait RetryableError: From<ResilienceError> + ::core::fmt::Display {}

impl<E: From<ResilienceError> + ::core::fmt::Display> RetryableError for E {}

/// Sync driver: the core driver for this call site.
pub struct SyncLoop<I> {
    inner: core_driver::SyncLoop<'static, AllTransient>,
    _idempotency: PhantomData<I>,
}

/// Starts the sync driver for one call.
pub fn sync_loop<I: Idempotency>(site: &'static CallSite, idempotency: I) -> SyncLoop<I> {
    SyncLoop {
        inner: site
            .guard()
            .call(site.operation)
            .idempotency(idempotency)
            .sync_loop(),
        _idempotency: PhantomData,
    }
}

impl<I: Idempotency> SyncLoop<I> {
    /// Runs one attempt; breaks with the final result or continues with another attempt.
    #[inline]
    pub fn step<T, E: RetryableError>(
        &mut self,
        attempt: impl FnOnce() -> Result<T, E>,
    ) -> ControlFlow<Result<T, E>> {
        self.inner.step(attempt)
    }
}

impl SyncLoop<NotIdempotent> {
    /// ADDITION: the single attempt of a not-idempotent operation. Consumes the driver, so the
    /// operation provably runs at most once and may move its arguments.
    #[inline]
    pub fn once<T, E: RetryableError>(
        mut self,
        attempt: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        match self.inner.step(attempt) {
            ControlFlow::Break(out) => out,
            ControlFlow::Continue(()) => {
                unreachable!("stand-in: a not-idempotent call never retries")
            }
        }
    }
}

/// Async driver: the core driver for this call site.
pub struct AsyncLoop<I> {
    inner: core_driver::AsyncLoop<'static, AllTransient>,
    _idempotency: PhantomData<I>,
}

/// Starts the async driver for one call.
pub fn async_loop<I: Idempotency>(site: &'static CallSite, idempotency: I) -> AsyncLoop<I> {
    AsyncLoop {
        inner: site
            .guard()
            .call(site.operation)
            .idempotency(idempotency)
            .async_loop(),
        _idempotency: PhantomData,
    }
}

impl<I: Idempotency> AsyncLoop<I> {
    /// Awaits one attempt; breaks with the final result or continues with another attempt.
    pub async fn step<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
        &mut self,
        attempt: F,
    ) -> ControlFlow<Result<T, E>> {
        self.inner.step(attempt).await
    }
}

impl AsyncLoop<NotIdempotent> {
    /// ADDITION: the single attempt of a not-idempotent async operation (see
    /// [`SyncLoop::once`]).
    pub async fn once<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
        mut self,
        attempt: F,
    ) -> Result<T, E> {
        match self.inner.step(attempt).await {
            ControlFlow::Break(out) => out,
            ControlFlow::Continue(()) => {
                unreachable!("stand-in: a not-idempotent call never retries")
            }
        }
    }
}
