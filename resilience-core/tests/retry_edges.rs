//! The retry executor at its edges: deadlines of nested calls whose outer call cannot cancel
//! them, a refused call's factory, hints of calls that do not retry, drivers dropped in any
//! order. Each test failed before its fix.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::retry::nesting::{current_depth, propagate, DepthGuard};
use resilience_core::retry::{ErrorClass, RetryAfterSink, RetryPolicy, ServiceGuard};
use resilience_core::sleep::ManualSleeper;
use resilience_core::ResilienceError;
use std::future::Future as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;
use support::*;

/// `attempts` attempts, a fixed 1 s backoff, `total` seconds in all.
fn fixed(attempts: u32, total: f64) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Fixed, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, secs(total)).unwrap()
}

fn is_circuit_open<T>(out: &Result<T, TestError>) -> bool {
    matches!(
        out,
        Err(TestError::Framework(ResilienceError::CircuitOpen { .. }))
    )
}

fn is_total_timeout<T: std::fmt::Debug>(out: &Result<T, TestError>) -> bool {
    matches!(
        out,
        Err(TestError::Framework(ResilienceError::TotalTimeout { .. }))
    )
}

/// An async call driven from inside a sync guarded call (a `block_on` in a sync wrapper) is
/// nested, and the sync outer call cannot cancel it: it is bounded by its own deadline.
#[test]
fn r7_an_async_call_nested_in_a_sync_call_is_cancelled_at_its_own_deadline() {
    let h = harness(fixed(3, 10.0));
    let mut cx = Context::from_waker(Waker::noop());
    let inner_out: Result<bool, TestError> = h.guard.call("outer").idempotent().run(|| {
        let inner = h
            .guard
            .call("inner")
            .idempotent()
            .total_timeout(secs(5.0))
            .run_async(std::future::pending::<Result<(), TestError>>);
        let mut inner = std::pin::pin!(inner);
        assert!(inner.as_mut().poll(&mut cx).is_pending());
        h.sleeper.advance(secs(5.0));
        match inner.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => Ok(is_total_timeout(&out)),
            std::task::Poll::Pending => Ok(false),
        }
    });
    assert_eq!(
        inner_out,
        Ok(true),
        "the inner call ended at its 5 s deadline"
    );
}

/// A guarded call in a task spawned with `propagate` (as the nesting docs advise) is nested;
/// nothing outside polls it, so its own deadline bounds it.
#[tokio::test]
async fn r7_a_call_in_a_task_spawned_with_propagate_is_cancelled_at_its_own_deadline() {
    let h = Arc::new(harness(fixed(3, 10.0)));
    let inner_task = {
        let _outer = DepthGuard::enter();
        let h = h.clone();
        tokio::spawn(propagate(async move {
            h.guard
                .call("inner")
                .idempotent()
                .run_async(std::future::pending::<Result<(), TestError>>)
                .await
        }))
    };
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    h.sleeper.advance(secs(10.0));
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(
        inner_task.is_finished(),
        "still running past its 10 s deadline"
    );
    let out = inner_task.await.unwrap();
    assert!(is_total_timeout(&out), "{out:?}");
}

/// A refused call runs nothing of the operation: not even the synchronous part of the
/// factory that makes its future (which may start a request).
#[tokio::test]
async fn b1_a_call_refused_by_an_open_circuit_does_not_call_its_factory() {
    let h = harness_with(fixed(1, 100.0), |b| {
        b.breaker(BreakerConfig::new(1, secs(60.0), secs(0.0), 1).unwrap())
    });
    let _: Result<(), TestError> = h
        .guard
        .call("get")
        .run_async(|| async { Err(op_err("down")) })
        .await;
    assert!(h.guard.breaker().unwrap().is_open());
    let made = AtomicU32::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("get")
        .run_async(|| {
            made.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .await;
    assert!(is_circuit_open(&out), "{out:?}");
    assert_eq!(made.load(Ordering::SeqCst), 0, "the factory ran");
}

/// The factory of an async attempt runs inside the attempt (R6): a guarded call it makes
/// synchronously is nested, so it runs once per outer attempt.
#[tokio::test]
async fn r6_a_guarded_call_made_by_the_attempts_factory_runs_once_per_attempt() {
    let h = harness(fixed(2, 100.0));
    let inner_runs = AtomicU32::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("outer")
        .idempotent()
        .run_async(|| {
            let inner: Result<(), TestError> = h.guard.call("inner").idempotent().run(|| {
                inner_runs.fetch_add(1, Ordering::SeqCst);
                Err(op_err("flaky"))
            });
            async move { inner }
        })
        .await;
    assert_eq!(out, Err(op_err("flaky")));
    assert_eq!(inner_runs.load(Ordering::SeqCst), 2, "2 outer attempts x 1");
}

#[derive(Debug, Default)]
struct CountingSink(AtomicU32);

impl RetryAfterSink for CountingSink {
    fn retry_after(&self, _service: &str, hint: Duration) -> Duration {
        self.0.fetch_add(1, Ordering::SeqCst);
        hint
    }
}

/// R12: a Retry-After reaches the sink (the governor, G6) from every failed attempt, also of
/// calls that do not retry: writes (through `run`, `run_once`, `run_once_async`) and nested
/// calls.
#[tokio::test]
async fn r12_a_retry_after_of_a_call_that_does_not_retry_reaches_the_sink() {
    let sink = Arc::new(CountingSink::default());
    let h = harness_with(fixed(3, 100.0), |b| {
        // A breaker that stays closed through these 7 failures.
        b.retry_after_sink(sink.clone())
            .breaker(BreakerConfig::new(100, secs(60.0), secs(0.0), 1).unwrap())
    });
    let limited = |_: &TestError| ErrorClass::RetryAfter(secs(5.0));
    let count = || sink.0.load(Ordering::SeqCst);
    let _: Result<(), TestError> = h
        .guard
        .call("read")
        .idempotent()
        .classify(limited)
        .run(|| Err(op_err("429")));
    assert_eq!(count(), 3, "a read reports every attempt's hint");
    let _: Result<(), TestError> = h
        .guard
        .call("write")
        .classify(limited)
        .run(|| Err(op_err("429")));
    assert_eq!(count(), 4, "run, not idempotent");
    let _: Result<(), TestError> = h
        .guard
        .call("write")
        .classify(limited)
        .run_once(|| Err(op_err("429")));
    assert_eq!(count(), 5, "run_once");
    let _: Result<(), TestError> = h
        .guard
        .call("write")
        .classify(limited)
        .run_once_async(async { Err(op_err("429")) })
        .await;
    assert_eq!(count(), 6, "run_once_async");
    let _: Result<(), TestError> = h.guard.call("outer").run_once(|| {
        h.guard
            .call("nested_read")
            .idempotent()
            .classify(limited)
            .run(|| Err(op_err("429")))
    });
    assert_eq!(count(), 7, "a nested read runs once and reports once");
}

/// R6: the depth is raised only while an attempt runs, so sync drivers kept alive (and then
/// dropped in any order) leave the thread where it was; it used to stay nested, and nothing on
/// it retried again.
#[test]
fn r6_sync_drivers_raise_the_depth_only_while_an_attempt_runs() {
    let h = harness(fixed(3, 100.0));
    let mut a = h.guard.call("a").idempotent().sync_loop();
    let mut b = h.guard.call("b").idempotent().sync_loop();
    let depth_in_a = a.step(|| Ok::<u32, TestError>(current_depth()));
    let depth_in_b = b.step(|| Ok::<u32, TestError>(current_depth()));
    assert_eq!(depth_in_a, std::ops::ControlFlow::Break(Ok(1)));
    assert_eq!(depth_in_b, std::ops::ControlFlow::Break(Ok(1)));
    assert_eq!(current_depth(), 0, "both drivers alive, no attempt running");
    let runs = AtomicU32::new(0);
    let _: Result<(), TestError> = h.guard.call("c").idempotent().run(|| {
        runs.fetch_add(1, Ordering::SeqCst);
        Err(op_err("flaky"))
    });
    assert_eq!(runs.load(Ordering::SeqCst), 3, "the thread still retries");
}

/// B1 + R2: the failure that opens the circuit ends the loop at once, with the refusal the
/// next attempt would have met. Sleeping the backoff first would only delay that answer.
#[test]
fn b1_a_failure_that_opens_the_circuit_ends_the_loop_without_a_wasted_sleep() {
    let h = harness_with(fixed(5, 300.0), |b| {
        b.breaker(BreakerConfig::new(2, secs(60.0), secs(0.0), 1).unwrap())
    });
    let runs = AtomicU32::new(0);
    let out: Result<(), TestError> = h.guard.call("op").idempotent().run(|| {
        runs.fetch_add(1, Ordering::SeqCst);
        Err(op_err("boom"))
    });
    assert!(is_circuit_open(&out), "{out:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        h.sleeper.delays(),
        vec![secs(1.0)],
        "no sleep after it opened"
    );
}

/// The async loop stops the same way.
#[tokio::test]
async fn b1_an_async_failure_that_opens_the_circuit_ends_the_loop_without_a_wasted_sleep() {
    let h = harness_with(fixed(5, 300.0), |b| {
        b.breaker(BreakerConfig::new(2, secs(60.0), secs(0.0), 1).unwrap())
    });
    let runs = AtomicU32::new(0);
    let out = h
        .guard
        .call("op")
        .idempotent()
        .run_async(|| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(op_err("boom")) }
        })
        .await;
    assert!(is_circuit_open(&out), "{out:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(h.sleeper.delays(), vec![secs(1.0)]);
}

/// One failure opens the circuit for `recovery` seconds, then the retry waits 1 s: the call's
/// runs and waits.
fn fail_once_then_wait_1s(recovery: f64) -> (Result<(), TestError>, u32, Vec<Duration>) {
    let h = harness_with(fixed(3, 300.0), |b| {
        b.breaker(BreakerConfig::new(1, secs(recovery), secs(0.0), 1).unwrap())
    });
    let runs = AtomicU32::new(0);
    let out = h.guard.call("op").idempotent().run(|| {
        if runs.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(op_err("boom"))
        } else {
            Ok(())
        }
    });
    (out, runs.load(Ordering::SeqCst), h.sleeper.delays())
}

/// A circuit whose half-open is due before the wait ends still gets its probe.
#[test]
fn b2_a_circuit_due_to_probe_within_the_wait_is_retried_into() {
    let (out, runs, _) = fail_once_then_wait_1s(0.5);
    assert_eq!(out, Ok(()));
    assert_eq!(runs, 2, "the probe ran after the 1 s wait");
}

/// R7 + C1: a policy built from config seconds keeps its values; a total timeout that is
/// zero, negative or not finite is refused, naming the key.
#[test]
fn r7_policy_from_secs_keeps_the_total_timeout_and_rejects_bad_ones() {
    let backoff = Backoff::from_secs(BackoffStrategy::Linear, 2.5, 30.0, false).unwrap();
    let p = RetryPolicy::from_secs(4, backoff, 12.5).expect("valid policy");
    assert_eq!(p.max_attempts(), 4);
    assert_eq!(p.backoff(), &backoff);
    assert_eq!(p.total_timeout(), secs(12.5));
    assert!(p.retry_on_idempotent_only(), "C12: on by default");
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = RetryPolicy::from_secs(4, backoff, bad).expect_err("bad total_timeout");
        assert_eq!(err.field(), "total_timeout", "{bad}");
    }
    let err = RetryPolicy::from_secs(0, backoff, 10.0).expect_err("zero attempts");
    assert_eq!(err.field(), "max_attempts");
}

/// R7: the deadline counts from the first attempt, not from whenever the clock started.
#[test]
fn r7_the_deadline_counts_from_the_first_attempt_not_from_clock_zero() {
    let h = harness(fixed(3, 10.0));
    h.clock.advance(secs(1000.0));
    let runs = AtomicU32::new(0);
    let out: Result<(), TestError> = h.guard.call("op").idempotent().run(|| {
        runs.fetch_add(1, Ordering::SeqCst);
        Err(op_err("boom"))
    });
    assert_eq!(out, Err(op_err("boom")));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "2 s of waits fit in 10 s");
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(1.0)]);
}

/// B2: a circuit whose half-open is due exactly when the wait ends is retried into; only a
/// circuit that would still refuse after the wait stops the loop.
#[test]
fn b2_a_circuit_due_exactly_when_the_wait_ends_is_retried_into() {
    let (out, runs, delays) = fail_once_then_wait_1s(1.0);
    assert_eq!(out, Ok(()));
    assert_eq!(runs, 2, "the probe ran after the 1 s wait");
    assert_eq!(delays, vec![secs(1.0)]);
}

/// R1: a sync loop driver reports the attempt about to run, from 1.
#[test]
fn r1_the_sync_loop_driver_counts_attempts_from_one() {
    let h = harness(fixed(3, 300.0));
    let mut driver = h.guard.call("op").idempotent().sync_loop();
    let mut seen = Vec::new();
    let out: Result<(), TestError> = loop {
        seen.push(driver.attempt());
        if let std::ops::ControlFlow::Break(out) = driver.step(|| Err(op_err("boom"))) {
            break out;
        }
    };
    assert_eq!(out, Err(op_err("boom")));
    assert_eq!(seen, [1, 2, 3]);
}

/// B1 + R12: a call-site policy (`with_policy`, what per-fn retry arguments build) shares the
/// service's breaker and Retry-After sink and keeps its clock, sleepers and jitter seed:
/// failures through it count toward the one circuit, its hints reach the governor, and a
/// seeded guard's schedule still repeats.
#[test]
fn b1_r12_a_call_site_policy_shares_the_services_breaker_sink_and_seed() {
    let sink = Arc::new(CountingSink::default());
    let h = harness_with(fixed(1, 100.0), |b| {
        b.retry_after_sink(sink.clone())
            .breaker(BreakerConfig::new(2, secs(60.0), secs(0.0), 1).unwrap())
    });
    let site = h.guard.with_policy(fixed(2, 100.0));
    let limited = |_: &TestError| ErrorClass::RetryAfter(secs(5.0));
    let out: Result<(), TestError> = site
        .call("read")
        .idempotent()
        .classify(limited)
        .run(|| Err(op_err("429")));
    assert_eq!(out, Err(op_err("429")));
    assert_eq!(
        sink.0.load(Ordering::SeqCst),
        2,
        "both hints reached the sink"
    );
    assert_eq!(h.sleeper.delays(), vec![secs(5.0)], "the service's sleeper");
    assert!(
        h.guard.breaker().unwrap().is_open(),
        "the service's circuit"
    );

    let jittered = || {
        let backoff = Backoff::from_secs(BackoffStrategy::Jitter, 1.0, 60.0, true).unwrap();
        RetryPolicy::new(3, backoff, secs(300.0)).unwrap()
    };
    let schedule = |guard: &ServiceGuard, sleeper: &ManualSleeper| {
        let before = sleeper.delays().len();
        let _: Result<(), TestError> = guard.call("op").idempotent().run(|| Err(op_err("x")));
        sleeper.delays()[before..].to_vec()
    };
    // No breaker: six failures in a row would open one.
    let seeded = harness_with(jittered(), |b| b.without_breaker());
    let want = schedule(&seeded.guard, &seeded.sleeper);
    let h = harness_with(fixed(1, 100.0), |b| b.without_breaker());
    for _ in 0..2 {
        let site = h.guard.with_policy(jittered());
        assert_eq!(schedule(&site, &h.sleeper), want, "the guard's seed");
    }
}
