//! Shared by the R12 tests (`retry_after_once*.rs`): a sink that numbers its answers, and
//! guarded calls that get a 429.

use super::*;
use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::retry::{ErrorClass, RetryAfterSink, RetryPolicy, ServiceGuard};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// `attempts` attempts, a fixed 1 s backoff, 1000 s in all; a breaker that stays closed.
pub fn fixed(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Fixed, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, secs(1000.0)).unwrap()
}

pub fn closed_breaker() -> BreakerConfig {
    BreakerConfig::new(1000, secs(60.0), secs(0.0), 1).unwrap()
}

/// Counts its calls and answers each with a different wait (10 s, 20 s, ...), so a test can
/// tell which call's answer a loop waited.
#[derive(Debug, Default)]
pub struct NumberingSink(AtomicU32);

impl NumberingSink {
    pub fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl RetryAfterSink for NumberingSink {
    fn retry_after(&self, _service: &str, _hint: Duration) -> Duration {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        secs(10.0 * f64::from(n))
    }
}

pub fn limited(_: &TestError) -> ErrorClass {
    ErrorClass::RetryAfter(secs(5.0))
}

/// A retried read on `guard` whose every attempt fails with a 429 reading `text`.
pub fn read_429(guard: &ServiceGuard, operation: &str, text: &str) -> Result<(), TestError> {
    guard
        .call(operation)
        .idempotent()
        .classify(limited)
        .run(|| Err(op_err(text)))
}

pub fn harness_with_sink(attempts: u32, sink: &Arc<NumberingSink>) -> Harness {
    let sink: Arc<dyn RetryAfterSink> = sink.clone();
    harness_with(fixed(attempts), |b| {
        b.retry_after_sink(sink).breaker(closed_breaker())
    })
}

/// A task spawned with `propagate` (at the current depth and attempt) whose guarded call of
/// `operation` on `h` gets a 429.
pub fn spawn_429(
    h: Arc<Harness>,
    operation: &'static str,
) -> tokio::task::JoinHandle<Result<(), TestError>> {
    tokio::spawn(resilience_core::retry::nesting::propagate(async move {
        h.guard
            .call(operation)
            .idempotent()
            .classify(limited)
            .run_async(|| async { Err::<(), _>(op_err("429")) })
            .await
    }))
}

/// Polls to the end; these futures never wait on anything but the manual sleeper.
pub fn settle<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("the future did not settle");
}
