//! What macro expansions name, by absolute path. Not public API: may change in any release.
//!
//! Expansions of `#[retry_service_operation]` put one `CallSite` in a `static` inside the
//! annotated fn and hand the fn body to `sync_retry` (async: drive `async_loop`, awaiting
//! `step` with the body as each attempt; `sync_once` / `async_once` for a fn that runs once,
//! `in_attempt` + `async_once_in` for a run-once fn returning `impl Future`);
//! each retried attempt starts from `fresh` clones of the by-value arguments (M4).
//!
//! Every entry point an attempt goes through bounds its error type by
//! [`RetryableError`](crate::__private::RetryableError), the readable check: the expansion
//! spans the callee path on the declared error type, so the message lands there, once, whether
//! or not `E` is written out (`app::Result<T>`). Bounds are kept to that (and the attempt's
//! `Future` / `FnMut`): each one is proved again per fn.

pub use ::core::future::Future;
pub use ::core::ops::ControlFlow;
pub use ::core::result::Result;
/// `Box::pin` of a retried fn returning `Pin<Box<dyn Future<…>>>` (`#[async_trait]`).
pub use ::std::boxed::Box;
pub use resilience_core::backoff::BackoffStrategy;
pub use resilience_core::retry::{
    AsyncLoop, AsyncStep, Idempotency, Idempotent, NotIdempotent, SyncLoop,
};
pub use resilience_core::ResilienceError;

pub use crate::site::CallSite;
pub use resilience_config::CodeDeclared;

use core::pin::Pin;
use core::task::{Context, Poll};
use resilience_core::retry::nesting::{AttemptTag, DepthGuard};
use resilience_core::retry::{AllTransient, Call, Classifier, ErrorClass};

/// The error type of a guarded fn: it must carry the framework's refusals and render for logs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a guarded fn: it needs `From<resilience::ResilienceError>` and `Display`",
    label = "this error type cannot carry the framework's refusals (circuit open, total timeout, ...)",
    note = "add `impl From<resilience::ResilienceError> for {Self}` (e.g. a `#[from]` variant with thiserror), and implement `Display`"
)]
pub trait RetryableError: From<ResilienceError> + ::core::fmt::Display {}

impl<E: From<ResilienceError> + ::core::fmt::Display> RetryableError for E {}

/// The value of the `if false { return … }` that types an async attempt before its body
/// (the expansion's "return edge"); never called.
#[cold]
pub fn unreachable_attempt<R>() -> R {
    unreachable!("the return edge of an async attempt runs under `if false`")
}

/// A by-value argument of a retried fn: each attempt starts from a clone of it (M4). `N` is
/// a type the expansion names after the argument, so the message names the argument. One
/// shared trait (not one per argument) keeps the expansion cheap to compile; the error is
/// reported on the argument itself.
#[diagnostic::on_unimplemented(
    message = "the argument `{N}` of a retried fn is taken by value, but `{Self}` is not `Clone`: each attempt needs its own copy of it",
    label = "each attempt of the retried fn starts from a clone of `{N}`",
    note = "take `{N}` by reference (e.g. `&str` for `String`, `&[T]` for `Vec<T>`), make `{Self}` implement `Clone`, or drop `idempotent` so the fn runs once and may consume it"
)]
pub trait RetryArg<N>: Clone {}

impl<T: Clone, N> RetryArg<N> for T {}

/// The fresh value of a by-value argument for one attempt (M4); `N` names the argument.
#[inline(always)]
pub fn fresh<T: RetryArg<N>, N>(original: &T) -> T {
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

/// [`sync_retry`] for a fn declared with `classify = …` (R12): `classifier` (from
/// [`classifier`]) decides which errors are retried and how long a Retry-After holds the
/// next attempt. The loop is written out in both: one shared `#[inline(always)]` loop
/// measured ~0.6 ns slower on this path (7.6 ns against 7.0 ns, 2026-12-03).
#[inline]
pub fn sync_retry_with<T, E: RetryableError>(
    site: &'static CallSite,
    classifier: ErasedClassifier<'_, E>,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let mut driver = retried(site).classify(classifier).sync_loop();
    loop {
        if let ControlFlow::Break(out) = driver.step(&mut attempt) {
            return out;
        }
    }
}

/// The call of a retried annotated fn, before its driver is made.
#[inline(always)]
fn retried(site: &'static CallSite) -> Call<'static, Idempotent, AllTransient> {
    site.guard().call(site.operation()).idempotent()
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

/// One attempt of a retried async fn, awaited in place by the expansion's loop. Its
/// `E: RetryableError` bound is the readable error-type check, reported on the callee path
/// (which the expansion spans on the error type), so it works where `E` cannot be named
/// (`app::Result<T>`).
#[inline(always)]
pub fn step<'s, T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    driver: &'s mut AsyncLoop<'static, AllTransient>,
    attempt: F,
) -> Step<'s, F> {
    Step {
        inner: driver.step(attempt),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`step`]: the driver's [`AsyncStep`], which polls the attempt in place
    /// (no `async` layer around it). A type of its own so the expansion's `.await` proves two
    /// bounds, not the driver's generic ones.
    #[must_use = "futures do nothing unless polled"]
    pub struct Step<'s, F> {
        #[pin]
        inner: AsyncStep<'s, 'static, AllTransient, F>,
    }
}

impl<T, E: RetryableError, F: Future<Output = Result<T, E>>> Future for Step<'_, F> {
    type Output = ControlFlow<Result<T, E>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

/// The attempt of a retried `impl Future` fn, its output pinned to the declared result type:
/// otherwise its error type is inferred only after the `step` call, and the readable check
/// would lose to a less readable one on the `.await`.
#[inline(always)]
pub fn typed_attempt<R, F: Future<Output = R>>(attempt: F) -> F {
    attempt
}

/// The attempt of a retried `impl Future` fn: `make` (the fn's body, which runs its
/// synchronous part and returns the attempt's future) is called on the first poll, so it runs
/// inside the attempt: after the breaker admitted it (an open circuit runs nothing of the
/// body), one nesting level deeper (R6), and a panic in it counts as a failure (B6).
#[inline(always)]
pub fn deferred<M: FnOnce() -> F, F: Future>(make: M) -> Deferred<M, F> {
    Deferred::Make { make: Some(make) }
}

pin_project_lite::pin_project! {
    /// The future of [`deferred`].
    #[project = DeferredProj]
    pub enum Deferred<M, F> {
        /// Not polled yet. `None` once `make` was taken (and panicked).
        Make { make: Option<M> },
        /// The attempt's future.
        Run { #[pin] fut: F },
    }
}

impl<M: FnOnce() -> F, F: Future> Future for Deferred<M, F> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if let DeferredProj::Make { make } = self.as_mut().project() {
            let Some(make) = make.take() else {
                panic!("a retried attempt's future was polled again after its body panicked");
            };
            self.set(Deferred::Run { fut: make() });
        }
        match self.project() {
            DeferredProj::Run { fut } => fut.poll(cx),
            DeferredProj::Make { .. } => unreachable!("made above"),
        }
    }
}

/// Runs the synchronous part of a run-once `impl Future` fn's body (what makes the attempt's
/// future) one nesting level deeper, as the attempt itself runs (R6): a guarded call made
/// there is nested. (A retried one defers its body into the attempt: [`deferred`].)
///
/// It runs inside the fn's one attempt, which [`async_once_in`] carries on with the future:
/// a nested call's 429 the future then returns is known as the attempt's own and reaches
/// the sink once (R12), not a second time from the fn's own attempt.
#[inline(always)]
pub fn in_attempt<F>(make: impl FnOnce() -> F) -> InAttempt<F> {
    let (_depth, tag) = DepthGuard::enter_attempt();
    InAttempt {
        future: make(),
        tag,
    }
}

/// The future a run-once `impl Future` fn's body made in [`in_attempt`], and that attempt.
pub struct InAttempt<F> {
    future: F,
    tag: AttemptTag,
}

/// The async driver for one call of a retried (idempotent) annotated fn; a fn that runs once
/// goes through [`async_once`]. Not generic: one less instantiation to check per fn.
#[inline]
pub fn async_loop(site: &'static CallSite) -> AsyncLoop<'static, AllTransient> {
    retried(site).async_loop()
}

/// The error type `E` of an attempt's `Result<T, E>`, also through an alias
/// (`app::Result<T>`): what a `classify` value is checked against.
pub trait AttemptResult {
    /// `E`.
    type Error;
}

impl<T, E> AttemptResult for Result<T, E> {
    type Error = E;
}

/// The `classify = …` value of an annotated fn, checked against the fn's error type (`R` is
/// its `Result<T, E>`) before anything else is inferred from it: an unfit classifier is one
/// error on the value (a classifier fn for another error type would otherwise decide `E`
/// and make the body the error). The expansion passes `&value`, which the compiler promotes
/// to `'static` for what the attribute documents (a unit struct, a `fn`, a `const`); the
/// erased lifetime `'c` is not `'static`, so `E` need not be (a generic or borrowing error).
#[inline(always)]
pub fn classifier<'c, R: AttemptResult>(
    classifier: &'c (dyn Classifier<R::Error> + Sync + 'c),
) -> ErasedClassifier<'c, R::Error> {
    ErasedClassifier(classifier)
}

/// A checked `classify` value. Called only after a failed attempt, so the virtual call costs
/// nothing on the success path, and the drivers are not generic over the classifier.
pub struct ErasedClassifier<'c, E>(&'c (dyn Classifier<E> + Sync + 'c));

impl<E> Classifier<E> for ErasedClassifier<'_, E> {
    #[inline]
    fn classify(&self, error: &E) -> ErrorClass {
        self.0.classify(error)
    }
}

/// [`async_loop`] for a fn declared with `classify = …` (see [`sync_retry_with`]).
#[inline]
pub fn async_loop_with<'c, E>(
    site: &'static CallSite,
    classifier: ErasedClassifier<'c, E>,
) -> AsyncLoop<'static, ErasedClassifier<'c, E>> {
    retried(site).classify(classifier).async_loop()
}

/// [`step`] for the driver of [`async_loop_with`].
#[inline(always)]
pub fn step_with<'s, 'c, T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    driver: &'s mut AsyncLoop<'static, ErasedClassifier<'c, E>>,
    attempt: F,
) -> StepWith<'s, 'c, E, F> {
    StepWith {
        inner: driver.step(attempt),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`step_with`]. Not [`Step`] made generic over the classifier: that would
    /// add a `Classifier` bound for every annotated fn's `.await` to prove, classifier or not.
    #[must_use = "futures do nothing unless polled"]
    pub struct StepWith<'s, 'c, E, F> {
        #[pin]
        inner: AsyncStep<'s, 'static, ErasedClassifier<'c, E>, F>,
    }
}

impl<T, E: RetryableError, F: Future<Output = Result<T, E>>> Future for StepWith<'_, '_, E, F> {
    type Output = ControlFlow<Result<T, E>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
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

/// [`async_once`] for the future of a run-once `impl Future` fn, made in [`in_attempt`]: the
/// rest of that attempt.
pub async fn async_once_in<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    site: &'static CallSite,
    attempt: InAttempt<F>,
) -> Result<T, E> {
    site.guard()
        .call(site.operation())
        .run_once_async_in(attempt.tag, attempt.future)
        .await
}

/// [`sync_once`] for a write declared with `classify = …`: it still runs once; the
/// classifier only picks the errors whose Retry-After reaches the service's sink
/// (`RuntimeBuilder::retry_after_sink`, e.g. the governor's G6 block).
#[inline]
pub fn sync_once_with<T, E: RetryableError>(
    site: &'static CallSite,
    classifier: ErasedClassifier<'_, E>,
    attempt: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    site.guard()
        .call(site.operation())
        .classify(classifier)
        .run_once(attempt)
}

/// The async [`sync_once_with`].
pub async fn async_once_with<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    site: &'static CallSite,
    classifier: ErasedClassifier<'_, E>,
    attempt: F,
) -> Result<T, E> {
    site.guard()
        .call(site.operation())
        .classify(classifier)
        .run_once_async(attempt)
        .await
}

/// The [`async_once_in`] of a write declared with `classify = …`.
pub async fn async_once_in_with<T, E: RetryableError, F: Future<Output = Result<T, E>>>(
    site: &'static CallSite,
    classifier: ErasedClassifier<'_, E>,
    attempt: InAttempt<F>,
) -> Result<T, E> {
    site.guard()
        .call(site.operation())
        .classify(classifier)
        .run_once_async_in(attempt.tag, attempt.future)
        .await
}
