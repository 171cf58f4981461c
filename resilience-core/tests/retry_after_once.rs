//! R12 + G6: a 429 reaches the Retry-After sink once, however many guarded calls it fails
//! on its way out. A nested call that gets a 429 reports it; the loops around it see the
//! same failure come out of their attempt and reuse the sink's answer instead of asking
//! again, so a governor books one release slot per 429 and waits what it answered. The
//! tests of one 429 failed before the fix (the sink was asked once per level); the tests of
//! several 429s guard against reusing a report too widely.

mod support;

use resilience_core::retry::{ErrorClass, RetryAfterSink, ServiceGuard};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use support::retry_after::*;
use support::*;

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
