//! The sync retry executor on manual time: exact schedules, no real sleeps.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::retry::{ByHint, ErrorClass, RetryHint, RetryPolicy};
use resilience_core::ResilienceError;
use std::cell::Cell;
use support::*;

fn exp_policy(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Exponential, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, RetryPolicy::DEFAULT_TOTAL_TIMEOUT).unwrap()
}

#[test]
fn r1_non_idempotent_operation_runs_exactly_once() {
    let h = harness(exp_policy(5));
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h.guard.call("apply_plan").run(|| {
        calls.set(calls.get() + 1);
        Err(op_err("boom"))
    });
    assert_eq!(out, Err(op_err("boom")));
    assert_eq!(calls.get(), 1);
    assert!(
        h.sleeper.delays().is_empty(),
        "a write never waits to retry"
    );
}

#[test]
fn r1_idempotent_operation_retries_until_success_with_exact_backoff() {
    let h = harness(exp_policy(5));
    let calls = Cell::new(0);
    let out: Result<u32, TestError> = h.guard.call("get_plan").idempotent().run(|| {
        calls.set(calls.get() + 1);
        if calls.get() < 4 {
            Err(op_err("flaky"))
        } else {
            Ok(calls.get())
        }
    });
    assert_eq!(out, Ok(4));
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0), secs(4.0)]);
    assert_eq!(h.clock.now_secs(), 7.0);
}

#[test]
fn r1_exhausted_retries_return_the_original_error_unwrapped() {
    let h = harness(exp_policy(3));
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h.guard.call("get_plan").idempotent().run(|| {
        calls.set(calls.get() + 1);
        Err(op_err(&format!("failure {}", calls.get())))
    });
    assert_eq!(out, Err(op_err("failure 3")));
    assert_eq!(calls.get(), 3);
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0)]);
}

#[test]
fn c12_retry_on_idempotent_only_off_lets_writes_retry() {
    let h = harness(exp_policy(3).with_retry_on_idempotent_only(false));
    let calls = Cell::new(0);
    let _: Result<(), TestError> = h.guard.call("write").run(|| {
        calls.set(calls.get() + 1);
        Err(op_err("x"))
    });
    assert_eq!(calls.get(), 3);
}

#[test]
fn r6_nested_guarded_call_runs_once_per_outer_attempt() {
    let outer = harness(exp_policy(3));
    let inner = harness(exp_policy(3));
    let inner_calls = Cell::new(0);
    let outer_calls = Cell::new(0);
    let out: Result<(), TestError> = outer.guard.call("outer").idempotent().run(|| {
        outer_calls.set(outer_calls.get() + 1);
        inner.guard.call("inner").idempotent().run(|| {
            inner_calls.set(inner_calls.get() + 1);
            Err(op_err("inner down"))
        })
    });
    assert_eq!(out, Err(op_err("inner down")));
    assert_eq!(outer_calls.get(), 3);
    // Without the guard this would be 3 × 3 = 9.
    assert_eq!(inner_calls.get(), 3);
    assert!(inner.sleeper.delays().is_empty());
    // After the outer call the depth is back to 0: a fresh call retries again.
    assert_eq!(resilience_core::retry::nesting::current_depth(), 0);
}

#[test]
fn r6_depth_is_restored_when_the_operation_panics() {
    let h = harness(exp_policy(3));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Result<(), TestError> = h
            .guard
            .call("boom")
            .idempotent()
            .run(|| panic!("op panicked"));
    }));
    assert!(caught.is_err());
    assert_eq!(resilience_core::retry::nesting::current_depth(), 0);
}

#[test]
fn r7_total_timeout_counts_the_operations_own_time() {
    // Each attempt takes 100 s; 300 s total: attempt 1 ends at 100, waits 1 → 101, attempt 2
    // ends at 201, next wait 2 s → 203 < 300 so attempt 3 runs to 303 (attempts exhausted).
    // With 4 attempts allowed, the 4th is refused: 303 + 4 ≥ 300.
    let h = harness(exp_policy(4));
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h.guard.call("slow").idempotent().run(|| {
        calls.set(calls.get() + 1);
        h.sleeper.advance(secs(100.0));
        Err(op_err("slow failure"))
    });
    assert_eq!(out, Err(op_err("slow failure")));
    assert_eq!(calls.get(), 3);
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0)]);
}

#[test]
fn r7_no_sleep_is_scheduled_past_the_deadline() {
    let h = harness(exp_policy(10));
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("op")
        .idempotent()
        .total_timeout(secs(10.0))
        .run(|| {
            calls.set(calls.get() + 1);
            Err(op_err("down"))
        });
    assert!(out.is_err());
    // 1 + 2 + 4 = 7 s slept; the next wait (8 s) would end at 15 s > 10 s, so it is not taken.
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0), secs(4.0)]);
    assert_eq!(calls.get(), 4);
    assert!(h.clock.now_secs() < 10.0);
}

#[derive(Debug, PartialEq)]
enum HintedError {
    RateLimited(f64),
    NotFound,
    Framework,
}

impl From<ResilienceError> for HintedError {
    fn from(_: ResilienceError) -> Self {
        HintedError::Framework
    }
}

impl std::fmt::Display for HintedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl RetryHint for HintedError {
    fn retry_hint(&self) -> ErrorClass {
        match self {
            HintedError::RateLimited(s) => ErrorClass::RetryAfter(secs(*s)),
            HintedError::NotFound => ErrorClass::Permanent,
            HintedError::Framework => ErrorClass::Permanent,
        }
    }
}

#[test]
fn r12_retry_after_hint_is_honoured_as_a_floor_on_the_wait() {
    let h = harness(exp_policy(3));
    let calls = Cell::new(0);
    let out: Result<(), HintedError> =
        h.guard.call("list").idempotent().classify(ByHint).run(|| {
            calls.set(calls.get() + 1);
            match calls.get() {
                1 => Err(HintedError::RateLimited(30.0)),
                2 => Err(HintedError::RateLimited(0.5)),
                _ => Ok(()),
            }
        });
    assert_eq!(out, Ok(()));
    // 30 s hint beats the 1 s backoff; the 2 s backoff beats the 0.5 s hint.
    assert_eq!(h.sleeper.delays(), vec![secs(30.0), secs(2.0)]);
}

#[test]
fn r12_retry_after_beyond_the_total_timeout_is_not_slept() {
    let h = harness(exp_policy(3));
    let out: Result<(), HintedError> = h
        .guard
        .call("list")
        .idempotent()
        .classify(ByHint)
        .run(|| Err(HintedError::RateLimited(3600.0)));
    assert_eq!(out, Err(HintedError::RateLimited(3600.0)));
    assert!(h.sleeper.delays().is_empty());
}

#[test]
fn permanent_errors_are_not_retried() {
    let h = harness(exp_policy(5));
    let calls = Cell::new(0);
    let out: Result<(), HintedError> =
        h.guard.call("get").idempotent().classify(ByHint).run(|| {
            calls.set(calls.get() + 1);
            Err(HintedError::NotFound)
        });
    assert_eq!(out, Err(HintedError::NotFound));
    assert_eq!(calls.get(), 1);
}

#[test]
fn closure_classifier_needs_no_trait_impl() {
    let h = harness(exp_policy(5));
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("get")
        .idempotent()
        .classify(|e: &TestError| {
            if *e == op_err("fatal") {
                ErrorClass::Permanent
            } else {
                ErrorClass::Transient
            }
        })
        .run(|| {
            calls.set(calls.get() + 1);
            Err(op_err(if calls.get() == 2 {
                "fatal"
            } else {
                "transient"
            }))
        });
    assert_eq!(out, Err(op_err("fatal")));
    assert_eq!(calls.get(), 2);
}

#[test]
fn r8_every_failed_attempt_emits_an_event_with_sanitized_error() {
    let recorder = Recorder::default();
    let h = harness(exp_policy(3));
    support::thread_subscriber::with_thread_subscriber(recorder.clone(), || {
        let _: Result<(), TestError> = h.guard.call("get_plan").idempotent().run(|| {
            Err(op_err(
                "connect failed: postgres://admin:hunter2@db:5432/plans",
            ))
        });
    });
    let events: Vec<_> = recorder
        .events()
        .into_iter()
        .filter(|e| e.target == "resilience::retry")
        .collect();
    assert_eq!(events.len(), 3, "one event per failed attempt: {events:#?}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.fields["service"], "test_service");
        assert_eq!(e.fields["operation"], "get_plan");
        assert_eq!(e.fields["attempt"], (i + 1).to_string());
        assert!(
            !e.fields["error"].contains("hunter2"),
            "leaked: {}",
            e.fields["error"]
        );
        assert!(e.fields["error"].contains("connect failed"));
    }
}

/// R8: the event of the attempt that ends the loop names why the loop did not go on.
#[test]
fn r8_the_last_attempts_event_says_why_there_is_no_retry() {
    let recorder = Recorder::default();
    let h = harness(exp_policy(2));
    let once = harness(exp_policy(1));
    support::thread_subscriber::with_thread_subscriber(recorder.clone(), || {
        let _: Result<(), TestError> = h.guard.call("write").run(|| Err(op_err("x")));
        let _: Result<(), TestError> = once
            .guard
            .call("single")
            .idempotent()
            .run(|| Err(op_err("x")));
        let _: Result<(), TestError> = h.guard.call("outer").idempotent().run(|| {
            once.guard
                .call("nested")
                .idempotent()
                .run(|| Err::<(), _>(op_err("x")))?;
            Ok(())
        });
    });
    let reasons: Vec<(String, String, String)> = recorder
        .events()
        .into_iter()
        .filter(|e| e.target == "resilience::retry")
        .map(|e| {
            let field = |k: &str| e.fields.get(k).cloned().unwrap_or_default();
            (field("operation"), field("attempt"), field("reason"))
        })
        .collect();
    let want = [
        ("write", "1", "not_idempotent"),
        ("single", "1", "single_attempt_policy"),
        ("nested", "1", "nested"),
        ("outer", "1", ""), // retried: no reason, a delay instead
        ("nested", "1", "nested"),
        ("outer", "2", "attempts_exhausted"),
    ]
    .map(|(o, a, r)| (o.to_owned(), a.to_owned(), r.to_owned()));
    assert_eq!(reasons, want);
}

#[test]
fn single_attempt_policy_never_retries() {
    let h = harness(exp_policy(1));
    let calls = Cell::new(0);
    let _: Result<(), TestError> = h.guard.call("get").idempotent().run(|| {
        calls.set(calls.get() + 1);
        Err(op_err("x"))
    });
    assert_eq!(calls.get(), 1);
}

/// R2: an async closure cannot be handed to the sync entry point.
///
/// ```compile_fail
/// # use resilience_core::retry::ServiceGuard;
/// # use resilience_core::ResilienceError;
/// # #[derive(Debug)] struct E;
/// # impl From<ResilienceError> for E { fn from(_: ResilienceError) -> Self { E } }
/// # impl std::fmt::Display for E { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) } }
/// let guard = ServiceGuard::builder("s").build();
/// let _ = guard.call("op").idempotent().run(|| async { Ok::<(), E>(()) });
/// ```
#[test]
fn r2_sync_entry_point_runs_sync_closures() {
    let h = harness(exp_policy(2));
    let out: Result<&str, TestError> = h.guard.call("op").run(|| Ok("sync"));
    assert_eq!(out, Ok("sync"));
}

#[test]
fn b6_every_failure_counts_and_an_opened_circuit_stops_the_retry_loop() {
    use resilience_core::breaker::BreakerConfig;
    let h = harness_with(exp_policy(10), |b| {
        b.breaker(BreakerConfig::new(3, secs(60.0), secs(30.0), 1).unwrap())
    });
    let calls = Cell::new(0);
    let out: Result<(), TestError> = h.guard.call("get").idempotent().run(|| {
        calls.set(calls.get() + 1);
        Err(op_err("down"))
    });
    // Three failures open the circuit; the fourth attempt is refused without running.
    assert_eq!(calls.get(), 3);
    assert!(matches!(
        out,
        Err(TestError::Framework(ResilienceError::CircuitOpen { .. }))
    ));
    // While open, a call is refused at once: the operation never runs.
    let out: Result<(), TestError> = h.guard.call("get").idempotent().run(|| {
        calls.set(calls.get() + 1);
        Ok(())
    });
    assert!(matches!(
        out,
        Err(TestError::Framework(ResilienceError::CircuitOpen { .. }))
    ));
    assert_eq!(calls.get(), 3);
}

#[test]
fn r6_nested_call_runs_once_but_still_through_its_breaker() {
    use resilience_core::breaker::BreakerConfig;
    let outer = harness(exp_policy(4));
    let inner = harness_with(exp_policy(3), |b| {
        b.breaker(BreakerConfig::new(2, secs(60.0), secs(30.0), 1).unwrap())
    });
    let inner_calls = Cell::new(0);
    let _: Result<(), TestError> = outer.guard.call("outer").idempotent().run(|| {
        inner.guard.call("inner").idempotent().run(|| {
            inner_calls.set(inner_calls.get() + 1);
            Err(op_err("inner down"))
        })
    });
    // Outer attempts 1 and 2 reach the inner service once each; that opens its breaker
    // (threshold 2), so outer attempts 3 and 4 are refused by it without running.
    assert_eq!(inner_calls.get(), 2);
    assert!(inner.guard.breaker().unwrap().is_open());
}
