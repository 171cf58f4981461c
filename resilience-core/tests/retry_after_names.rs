//! R12: a nested call's Retry-After report is reused by the loop around it only if it was
//! made inside that loop's failing attempt. These tests reach a report left by some other
//! attempt that had the same name: a sync attempt on another thread (numbers were handed out
//! per thread, 3, 5, 7, … on every thread, and `propagate` carries them across threads), or
//! a cancelled async attempt whose successor had the same address and number. Each failed
//! before: the new attempt took the stale report for its own, so the sink never heard of its
//! 429 (no G6 block for the other agents) and the loop waited a stale answer.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::retry::nesting::propagate;
use resilience_core::retry::{ErrorClass, RetryAfterSink, RetryPolicy, ServiceGuard};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use support::*;

fn fixed(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Fixed, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, secs(1000.0)).unwrap()
}

#[derive(Debug, Default)]
struct CountingSink(AtomicU32);

impl CountingSink {
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl RetryAfterSink for CountingSink {
    fn retry_after(&self, _service: &str, _hint: Duration) -> Duration {
        self.0.fetch_add(1, Ordering::SeqCst);
        secs(10.0)
    }
}

fn limited(_: &TestError) -> ErrorClass {
    ErrorClass::RetryAfter(secs(5.0))
}

fn harness_with_sink(attempts: u32, sink: &Arc<CountingSink>) -> Harness {
    let sink: Arc<dyn RetryAfterSink> = sink.clone();
    let breaker = BreakerConfig::new(1000, secs(60.0), secs(0.0), 1).unwrap();
    harness_with(fixed(attempts), |b| {
        b.retry_after_sink(sink).breaker(breaker)
    })
}

/// A guarded async call on `guard` that gets a 429 (told to the sink), once `go` is set.
async fn nested_429(guard: &ServiceGuard, go: &AtomicBool) -> Result<(), TestError> {
    while !go.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
    guard
        .call("nested")
        .idempotent()
        .classify(limited)
        .run_async(|| async { Err::<(), _>(op_err("429")) })
        .await
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// Thread 1's first sync attempt spawns (with `propagate`) a task that thread 2 runs: its
/// nested 429 is kept on thread 2 as made inside thread 1's attempt. Thread 2's own first
/// sync attempt then fails with a 429 that reads the same: it was told to the sink, not
/// taken for the nested one (both attempts were number 3 of their thread).
#[test]
fn r12_a_propagated_report_is_not_taken_by_another_threads_sync_attempt() {
    let sink = Arc::new(CountingSink::default());
    let h = Arc::new(harness_with_sink(2, &sink));
    let h1 = h.clone();
    let task = std::thread::spawn(move || {
        let mut task = None;
        let h2 = h1.clone();
        let _ = h1.guard.call("outer").idempotent().run(|| {
            let h = h2.clone();
            task = Some(propagate(async move {
                nested_429(&h.guard, &AtomicBool::new(true)).await
            }));
            Ok::<(), TestError>(())
        });
        task.unwrap()
    })
    .join()
    .unwrap();
    let (h2, sink2) = (h.clone(), sink.clone());
    std::thread::spawn(move || {
        assert_eq!(current_thread().block_on(task), Err(op_err("429")));
        assert_eq!(sink2.count(), 1, "the nested 429");
        let out = h2
            .guard
            .call("own")
            .idempotent()
            .classify(limited)
            .run(|| Err::<(), _>(op_err("429")));
        assert_eq!(out, Err(op_err("429")));
    })
    .join()
    .unwrap();
    assert_eq!(
        sink.count(),
        3,
        "the nested 429, then each of the 2 attempts' own"
    );
    assert_eq!(h.sleeper.delays(), [secs(10.0)]);
}

/// Polls `fut` once, then drops it: cancelled mid-attempt (a `select!` or `timeout`).
async fn poll_once_then_drop<F: Future>(fut: F) {
    let mut fut = pin!(fut);
    std::future::poll_fn(|cx| {
        let _ = fut.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await;
}

/// The attempt of a second try: lets the first try's task report its nested 429, waits until
/// the sink heard it, then fails with a 429 of its own that reads the same.
async fn own_429_after_the_late_report(
    go: &AtomicBool,
    sink: &CountingSink,
) -> Result<(), TestError> {
    go.store(true, Ordering::SeqCst);
    while sink.count() < 1 {
        tokio::task::yield_now().await;
    }
    Err(op_err("429"))
}

/// The attempt of a first try: spawns a task (with `propagate`) that reports a nested 429
/// once `go` is set, then waits forever.
fn spawn_late_429(
    h: &Arc<Harness>,
    go: &Arc<AtomicBool>,
) -> impl Future<Output = Result<(), TestError>> {
    let (h, go) = (h.clone(), go.clone());
    drop(tokio::spawn(propagate(async move {
        nested_429(&h.guard, &go).await
    })));
    std::future::pending()
}

/// `AsyncLoop::step` dropped mid-attempt, and the driver stepped again: the new attempt had
/// the cancelled one's address and number, so the cancelled attempt's task's late report was
/// taken as the new attempt's own.
#[test]
fn r12_a_cancelled_steps_late_report_is_not_taken_by_the_next_step() {
    let sink = Arc::new(CountingSink::default());
    let h = Arc::new(harness_with_sink(2, &sink));
    let go = Arc::new(AtomicBool::new(false));
    current_thread().block_on(async {
        let mut driver = h
            .guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .async_loop();
        poll_once_then_drop(driver.step(async { spawn_late_429(&h, &go).await })).await;
        let flow = driver.step(own_429_after_the_late_report(&go, &sink)).await;
        assert!(
            flow.is_continue(),
            "a first failure of two attempts retries"
        );
    });
    assert_eq!(
        sink.count(),
        2,
        "the cancelled attempt's nested 429, and the new one's own"
    );
}

/// A run-once call (the attribute's write path) cancelled mid-attempt, and the next call's
/// future in the same place (a `loop { select! { … } }`): it had the same name.
#[test]
fn r12_a_cancelled_run_once_late_report_is_not_taken_by_a_call_at_its_address() {
    let sink = Arc::new(CountingSink::default());
    let h = Arc::new(harness_with_sink(1, &sink));
    let go = Arc::new(AtomicBool::new(false));
    current_thread().block_on(async {
        let mut slot: Pin<Box<Option<_>>> = Box::pin(None);
        for round in 0..2 {
            let (h, go, sink) = (&h, &go, &sink);
            slot.set(Some(
                h.guard
                    .call("write")
                    .classify(limited)
                    .run_once_async(async move {
                        if round == 0 {
                            spawn_late_429(h, go).await
                        } else {
                            own_429_after_the_late_report(go, sink).await
                        }
                    }),
            ));
            let call = std::future::poll_fn(|cx| slot.as_mut().as_pin_mut().unwrap().poll(cx));
            if round == 0 {
                poll_once_then_drop(call).await;
            } else {
                assert_eq!(call.await, Err(op_err("429")));
            }
        }
    });
    assert_eq!(
        sink.count(),
        2,
        "the cancelled call's nested 429, and the new one's own"
    );
}
