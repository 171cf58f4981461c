//! R12 + G6: a 429 reaches the Retry-After sink once, however many guarded calls it fails
//! on its way out. A nested call that gets a 429 reports it; the loops around it see the
//! same failure come out of their attempt and reuse the sink's answer instead of asking
//! again, so a governor books one release slot per 429 and waits what it answered. The
//! tests of one 429 failed before the fix (the sink was asked once per level); the tests of
//! several 429s guard against reusing a report too widely.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::retry::{ErrorClass, RetryAfterSink, RetryPolicy, ServiceGuard};
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use support::*;

/// `attempts` attempts, a fixed 1 s backoff, 1000 s in all; a breaker that stays closed.
fn fixed(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Fixed, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, secs(1000.0)).unwrap()
}

fn closed_breaker() -> BreakerConfig {
    BreakerConfig::new(1000, secs(60.0), secs(0.0), 1).unwrap()
}

/// Counts its calls and answers each with a different wait (10 s, 20 s, ...), so a test can
/// tell which call's answer a loop waited.
#[derive(Debug, Default)]
struct NumberingSink(AtomicU32);

impl NumberingSink {
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl RetryAfterSink for NumberingSink {
    fn retry_after(&self, _service: &str, _hint: Duration) -> Duration {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        secs(10.0 * f64::from(n))
    }
}

fn limited(_: &TestError) -> ErrorClass {
    ErrorClass::RetryAfter(secs(5.0))
}

/// A retried read on `guard` whose every attempt fails with a 429 reading `text`.
fn read_429(guard: &ServiceGuard, operation: &str, text: &str) -> Result<(), TestError> {
    guard
        .call(operation)
        .idempotent()
        .classify(limited)
        .run(|| Err(op_err(text)))
}

fn harness_with_sink(attempts: u32, sink: &Arc<NumberingSink>) -> Harness {
    let sink: Arc<dyn RetryAfterSink> = sink.clone();
    harness_with(fixed(attempts), |b| {
        b.retry_after_sink(sink).breaker(closed_breaker())
    })
}

/// A task spawned with `propagate` (at the current depth and attempt) whose guarded call of
/// `operation` on `h` gets a 429.
fn spawn_429(
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
fn settle<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("the future did not settle");
}

#[test]
fn r12_a_nested_429_reaches_the_sink_once_per_outer_attempt() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(3, &sink);
    let out: Result<(), TestError> = h
        .guard
        .call("outer")
        .idempotent()
        .classify(limited)
        .run(|| read_429(&h.guard, "inner", "429"));
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 3, "one report per 429, not one per level");
    assert_eq!(
        h.sleeper.delays(),
        [secs(10.0), secs(20.0)],
        "the outer loop waits what the sink answered the nested call"
    );
}

#[test]
fn r12_a_429_through_three_levels_reaches_the_sink_once() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(2, &sink);
    let out: Result<(), TestError> =
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run(|| {
                h.guard
                    .call("middle")
                    .classify(limited)
                    .run_once(|| read_429(&h.guard, "inner", "429"))
            });
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 2);
    assert_eq!(h.sleeper.delays(), [secs(10.0)]);
}

#[test]
fn r12_a_nested_429_under_a_write_reaches_the_sink_once() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(3, &sink);
    let out: Result<(), TestError> = h
        .guard
        .call("write")
        .classify(limited)
        .run_once(|| read_429(&h.guard, "read", "429"));
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 1);
}

#[test]
fn r12_a_nested_429_reaches_the_sink_once_under_every_async_entry() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(3, &sink);
    let inner = || async {
        h.guard
            .call("inner")
            .idempotent()
            .classify(limited)
            .run_async(|| async { Err::<(), _>(op_err("429")) })
            .await
    };

    let out = settle(
        h.guard
            .call("run_async")
            .idempotent()
            .classify(limited)
            .run_async(inner),
    );
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 3, "run_async");
    assert_eq!(h.sleeper.delays(), [secs(10.0), secs(20.0)], "run_async");

    let out = settle(async {
        let mut driver = h
            .guard
            .call("async_loop")
            .idempotent()
            .classify(limited)
            .async_loop();
        loop {
            if let ControlFlow::Break(out) = driver.step(inner()).await {
                break out;
            }
        }
    });
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 6, "async_loop");
    assert_eq!(
        h.sleeper.delays()[2..],
        [secs(40.0), secs(50.0)],
        "async_loop"
    );

    let out = settle(
        h.guard
            .call("run_once_async")
            .classify(limited)
            .run_once_async(inner()),
    );
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 7, "run_once_async");
}

#[test]
fn r12_a_sync_loop_reuses_the_report_of_its_attempts_nested_call() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(2, &sink);
    let mut driver = h
        .guard
        .call("sync_loop")
        .idempotent()
        .classify(limited)
        .sync_loop();
    let out: Result<(), TestError> = loop {
        let step = driver.step(|| read_429(&h.guard, "inner", "429"));
        if let ControlFlow::Break(out) = step {
            break out;
        }
    };
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 2);
    assert_eq!(h.sleeper.delays(), [secs(10.0)]);
}

/// The outer attempt swallowed the nested 429 and got one of its own with another hint: two
/// 429s, two reports, and the loop waits the answer to its own.
#[test]
fn r12_a_different_hint_at_the_outer_level_is_another_429() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(2, &sink);
    let outer_class = |e: &TestError| match e {
        TestError::Op(m) if m == "outer 429" => ErrorClass::RetryAfter(secs(7.0)),
        _ => ErrorClass::Transient,
    };
    let out: Result<(), TestError> = h
        .guard
        .call("outer")
        .idempotent()
        .classify(outer_class)
        .run(|| {
            let _ = read_429(&h.guard, "inner", "429");
            Err(op_err("outer 429"))
        });
    assert_eq!(out, Err(op_err("outer 429")));
    assert_eq!(sink.count(), 4, "two 429s per attempt");
    assert_eq!(h.sleeper.delays(), [secs(20.0)]);
}

/// Two nested calls in one attempt that both get a 429 are two 429s: the second one's report
/// is not mistaken for a reuse of the first.
#[test]
fn r12_two_nested_429s_in_one_attempt_are_reported_twice() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(1, &sink);
    let read = || read_429(&h.guard, "inner", "429");
    let out: Result<(), TestError> =
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run(|| {
                let _ = read();
                read()
            });
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 2);
}

/// Each sink hears each 429 once: a nested call on another service (another sink) reports to
/// its own, and the outer loop asks its own sink.
#[test]
fn r12_nested_calls_on_another_sink_report_to_each_sink_once() {
    let outer_sink = Arc::new(NumberingSink::default());
    let inner_sink = Arc::new(NumberingSink::default());
    let outer = harness_with_sink(2, &outer_sink);
    let inner = harness_with_sink(2, &inner_sink);
    let out: Result<(), TestError> = outer
        .guard
        .call("outer")
        .idempotent()
        .classify(limited)
        .run(|| read_429(&inner.guard, "inner", "429"));
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(
        inner_sink.count(),
        2,
        "the nested call runs once per outer attempt"
    );
    assert_eq!(
        outer_sink.count(),
        2,
        "the outer sink is asked per outer attempt"
    );
}

/// A report is kept only for the loops around the call that made it: the next call on the
/// thread, with the same sink and hint, is a new 429.
#[test]
fn r12_a_later_call_does_not_reuse_an_earlier_calls_report() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(2, &sink);
    for expected in [2, 4] {
        let _: Result<(), TestError> = read_429(&h.guard, "read", "429");
        assert_eq!(sink.count(), expected);
    }
    let _: Result<(), TestError> = h
        .guard
        .call("write")
        .classify(limited)
        .run_once(|| Err(op_err("429")));
    assert_eq!(sink.count(), 5);
    assert_eq!(
        h.sleeper.delays(),
        [secs(10.0), secs(30.0)],
        "each loop waits its own answer"
    );
}

// Found by review: the first version told a swallowed nested 429 and the attempt's own 429
// apart only by the hint, lost a report to any guarded call after it in the attempt or to a
// resumed poll, and matched clock-computed hints to the nanosecond.

/// An attempt that falls back after a rate-limited nested call and then gets its own 429
/// with the same hint: two 429s, told apart by the error's text.
#[test]
fn r12_a_swallowed_nested_429_does_not_hide_the_attempts_own_429() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(1, &sink);
    let out: Result<(), TestError> =
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run(|| {
                let _ = read_429(&h.guard, "cache", "cache 429");
                Err(op_err("origin 429"))
            });
    assert_eq!(out, Err(op_err("origin 429")));
    assert_eq!(sink.count(), 2);
}

/// Two services sharing one sink, the same error text: the outer service's 429 is told under
/// its own name.
#[test]
fn r12_a_report_for_another_service_is_not_reused() {
    #[derive(Debug, Default)]
    struct Services(std::sync::Mutex<Vec<String>>);
    impl RetryAfterSink for Services {
        fn retry_after(&self, service: &str, hint: Duration) -> Duration {
            self.0.lock().unwrap().push(service.to_owned());
            hint
        }
    }
    let sink = Arc::new(Services::default());
    let guard = |name: &str| {
        let sink: Arc<dyn RetryAfterSink> = sink.clone();
        ServiceGuard::builder(name)
            .policy(fixed(1))
            .retry_after_sink(sink)
            .breaker(closed_breaker())
            .build()
    };
    let (origin, cache) = (guard("origin"), guard("cache"));
    let _: Result<(), TestError> = origin.call("outer").idempotent().classify(limited).run(|| {
        let _ = read_429(&cache, "cache", "429");
        Err(op_err("429"))
    });
    assert_eq!(*sink.0.lock().unwrap(), ["cache", "origin"]);
}

/// `run_async`'s later attempts make their future under one guard and poll it under another:
/// the second must not forget what the factory's nested call reported.
#[test]
fn r12_run_async_reuses_a_report_made_by_the_factory_on_every_attempt() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(3, &sink);
    let out = settle(
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run_async(|| {
                let r: Result<(), TestError> = read_429(&h.guard, "inner", "429");
                std::future::ready(r)
            }),
    );
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 3);
}

/// A guarded call after the nested 429 in the same attempt (an audit write that succeeds)
/// does not make the loop ask again.
#[test]
fn r12_a_later_guarded_call_in_the_attempt_keeps_the_report() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(2, &sink);
    let out: Result<(), TestError> =
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run(|| {
                let r = read_429(&h.guard, "inner", "429");
                let _ = h.guard.call("audit").run_once(|| Ok::<(), TestError>(()));
                r
            });
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 2);
    assert_eq!(h.sleeper.delays(), [secs(10.0)]);
}

/// A nested call in a task spawned with `propagate`, awaited by the attempt (which is polled
/// again when the task ends): one 429.
#[test]
fn r12_a_429_in_a_task_spawned_with_propagate_is_told_once() {
    let sink = Arc::new(NumberingSink::default());
    let h = Arc::new(harness_with_sink(1, &sink));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out: Result<(), TestError> = rt.block_on(
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run_async(|| {
                let h = h.clone();
                async move { spawn_429(h, "inner").await.unwrap() }
            }),
    );
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(sink.count(), 1);
}

/// A hint computed from the clock ("until the reset") shrinks between the nested loop's look
/// and the outer one's: still the same 429.
#[test]
fn r12_a_clock_computed_hint_is_still_the_same_429() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(1, &sink);
    let reset_at = 5.0;
    let until_reset = |_: &TestError| {
        // Each look takes a millisecond.
        h.sleeper.advance(secs(0.001));
        ErrorClass::RetryAfter(secs(reset_at - h.clock.now_secs()))
    };
    let _: Result<(), TestError> = h
        .guard
        .call("outer")
        .idempotent()
        .classify(until_reset)
        .run(|| {
            h.guard
                .call("inner")
                .idempotent()
                .classify(until_reset)
                .run(|| Err(op_err("429")))
        });
    assert_eq!(sink.count(), 1);
}

/// A sync loop at the same stack address as an earlier one whose attempt left a report
/// behind asks afresh (sync attempts are named by new numbers, not addresses; the async
/// case is `r12_an_async_loop_at_a_reused_address_…`).
#[test]
fn r12_a_sync_loop_at_a_reused_address_does_not_reuse_an_earlier_loops_report() {
    #[inline(never)]
    fn call(h: &Harness, swallow: bool) -> Result<(), TestError> {
        let mut driver = h
            .guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .sync_loop();
        loop {
            let step = driver.step(|| {
                if swallow {
                    let _ = read_429(&h.guard, "inner", "429");
                    Ok(())
                } else {
                    Err(op_err("429"))
                }
            });
            if let ControlFlow::Break(out) = step {
                return out;
            }
        }
    }
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(1, &sink);
    let _ = call(&h, true);
    let _ = call(&h, false);
    assert_eq!(sink.count(), 2);
}

/// A future polled by whichever of two threads is told to, one poll at a time (a
/// work-stealing runtime moving a task between its workers); returns the output once ready.
fn poll_on_threads<F: Future + Send>(fut: F, order: &[usize]) -> Option<F::Output>
where
    F::Output: Send,
{
    let fut = std::sync::Mutex::new(Box::pin(fut));
    std::thread::scope(|s| {
        let (back_tx, back_rx) = std::sync::mpsc::channel();
        let mut pollers = Vec::new();
        for _ in 0..2 {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            pollers.push(tx);
            let (back, fut) = (back_tx.clone(), &fut);
            s.spawn(move || {
                for () in rx {
                    let mut cx = Context::from_waker(Waker::noop());
                    let polled = fut.lock().unwrap().as_mut().poll(&mut cx);
                    back.send(match polled {
                        Poll::Ready(out) => Some(out),
                        Poll::Pending => None,
                    })
                    .unwrap();
                }
            });
        }
        for &thread in order {
            pollers[thread].send(()).unwrap();
            if let Some(out) = back_rx.recv().unwrap() {
                return Some(out);
            }
        }
        None
    })
}

/// The attempt's failure only once it is polled a second time.
fn fails_on_second_poll<T>(
    mut first: impl FnMut(),
    error: TestError,
) -> impl Future<Output = Result<T, TestError>> {
    let mut polls = 0;
    let mut error = Some(error);
    std::future::poll_fn(move |_| {
        polls += 1;
        if polls == 1 {
            first();
            Poll::Pending
        } else {
            Poll::Ready(Err(error.take().expect("polled after it failed")))
        }
    })
}

/// An async loop moved between threads: attempt 1's nested 429 is reported on thread A, the
/// attempt fails on B; attempt 2 starts on B and fails with its own, new 429 on A, where
/// attempt 1's report was left. That new 429 is told to the sink: before, attempt 2 took the
/// stale report for its own and waited attempt 1's answer (10 s instead of 30 s), so the
/// sink never heard of it.
#[test]
fn r12_a_report_left_on_another_thread_by_an_earlier_attempt_is_not_reused() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(3, &sink);
    let attempts = AtomicU32::new(0);
    let call = h
        .guard
        .call("outer")
        .idempotent()
        .classify(limited)
        .run_async(|| {
            let nth = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            let h = &h;
            let nested = move || {
                if nth == 1 {
                    let _ = read_429(&h.guard, "inner", "429");
                }
            };
            async move {
                if nth > 2 {
                    return Ok(());
                }
                fails_on_second_poll(nested, op_err("429")).await
            }
        });
    // A: attempt 1's first poll; B: its failure, then attempt 2's first poll; A: its failure.
    let out = poll_on_threads(call, &[0, 1, 0, 1, 0, 1]);
    assert_eq!(out, Some(Ok(())));
    assert_eq!(
        sink.count(),
        3,
        "the nested 429 and the outer loop's own one, twice (the first reported again on \
         another thread: the safe mistake), then attempt 2's"
    );
    assert_eq!(h.sleeper.delays(), [secs(20.0), secs(30.0)]);
}

/// A task spawned with `propagate` in attempt 1 reports its 429 while attempt 2 runs, on the
/// same thread: attempt 2's own 429 is another one, told to the sink.
#[test]
fn r12_a_report_from_an_earlier_attempts_task_is_not_reused() {
    let sink = Arc::new(NumberingSink::default());
    let h = Arc::new(harness_with_sink(3, &sink));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    let out: Result<(), TestError> = rt.block_on(
        h.guard
            .call("outer")
            .idempotent()
            .classify(limited)
            .run_async(|| {
                let (h, nth) = (h.clone(), attempts.fetch_add(1, Ordering::SeqCst) + 1);
                async move {
                    match nth {
                        1 => {
                            drop(spawn_429(h, "background"));
                            Err(op_err("429"))
                        }
                        2 => {
                            // The task runs meanwhile.
                            tokio::task::yield_now().await;
                            tokio::task::yield_now().await;
                            Err(op_err("429"))
                        }
                        _ => Ok(()),
                    }
                }
            }),
    );
    assert_eq!(out, Ok(()));
    assert_eq!(sink.count(), 3, "three 429s, each told once");
}

/// An async loop dropped in the middle of an attempt that holds a nested call's report; a new
/// loop in the same place on the same thread fails with its own 429: told to the sink.
#[test]
fn r12_an_async_loop_at_a_reused_address_does_not_reuse_a_dropped_loops_report() {
    let sink = Arc::new(NumberingSink::default());
    let h = harness_with_sink(1, &sink);
    let mut slot = Box::pin(None);
    for round in 0..2 {
        let h = &h;
        slot.set(Some(
            h.guard
                .call("outer")
                .idempotent()
                .classify(limited)
                .run_async(move || {
                    let nested = move || {
                        if round == 0 {
                            let _ = read_429(&h.guard, "inner", "429");
                        }
                    };
                    fails_on_second_poll::<()>(nested, op_err("429"))
                }),
        ));
        let mut cx = Context::from_waker(Waker::noop());
        let polls = if round == 0 { 1 } else { 2 };
        for _ in 0..polls {
            let fut = slot.as_mut().as_pin_mut().unwrap();
            let _ = fut.poll(&mut cx);
        }
    }
    assert_eq!(
        sink.count(),
        2,
        "the dropped loop's nested 429, and the new loop's own"
    );
}
