//! The async retry executor on manual time.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::retry::nesting::{current_depth, propagate, propagate_fn};
use resilience_core::retry::RetryPolicy;
use resilience_core::ResilienceError;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use support::*;

fn exp_policy(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Exponential, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, RetryPolicy::DEFAULT_TOTAL_TIMEOUT).unwrap()
}

#[tokio::test]
async fn r2_async_entry_point_retries_with_exact_backoff() {
    let h = harness(exp_policy(4));
    let calls = AtomicU32::new(0);
    let out: Result<u32, TestError> = h
        .guard
        .call("get_plan")
        .idempotent()
        .run_async(|| async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::task::yield_now().await;
            if n < 3 {
                Err(op_err("flaky"))
            } else {
                Ok(n)
            }
        })
        .await;
    assert_eq!(out, Ok(3));
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0)]);
}

#[tokio::test]
async fn r1_async_non_idempotent_runs_exactly_once() {
    let h = harness(exp_policy(4));
    let calls = AtomicU32::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("apply")
        .run_async(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(op_err("no"))
        })
        .await;
    assert_eq!(out, Err(op_err("no")));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn r6_async_nested_call_runs_once_across_awaits() {
    let outer = harness(exp_policy(3));
    let inner = harness(exp_policy(3));
    let inner_calls = AtomicU32::new(0);
    let out: Result<(), TestError> = outer
        .guard
        .call("outer")
        .idempotent()
        .run_async(|| async {
            // Several awaits before the nested call: the depth follows the future.
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            inner
                .guard
                .call("inner")
                .idempotent()
                .run_async(|| async {
                    inner_calls.fetch_add(1, Ordering::SeqCst);
                    Err::<(), _>(op_err("inner down"))
                })
                .await
        })
        .await;
    assert!(out.is_err());
    assert_eq!(
        inner_calls.load(Ordering::SeqCst),
        3,
        "once per outer attempt, not 9"
    );
    assert!(inner.sleeper.delays().is_empty());
    assert_eq!(current_depth(), 0);
}

#[tokio::test]
async fn r6_sync_call_inside_async_guarded_call_sees_the_depth() {
    let outer = harness(exp_policy(2));
    let inner = harness(exp_policy(3));
    let inner_calls = AtomicU32::new(0);
    let _: Result<(), TestError> = outer
        .guard
        .call("outer")
        .idempotent()
        .run_async(|| async {
            tokio::task::yield_now().await;
            inner.guard.call("inner_sync").idempotent().run(|| {
                inner_calls.fetch_add(1, Ordering::SeqCst);
                Err(op_err("down"))
            })
        })
        .await;
    assert_eq!(inner_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r6_spawned_task_starts_at_depth_zero_unless_propagated() {
    let h = harness(exp_policy(2));
    let depths = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let d = depths.clone();
    let _: Result<(), TestError> = h
        .guard
        .call("outer")
        .run_async(|| {
            let d = d.clone();
            async move {
                let plain = tokio::spawn(async { current_depth() }).await.unwrap();
                let carried = tokio::spawn(propagate(async { current_depth() }))
                    .await
                    .unwrap();
                d.lock().push((current_depth(), plain, carried));
                Ok(())
            }
        })
        .await;
    assert_eq!(*depths.lock(), vec![(1, 0, 1)]);
}

/// A sync guarded call run through `spawn_blocking` (a sync client called from async code)
/// is nested when its closure is wrapped in `propagate_fn`: once per outer attempt, not 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r6_a_sync_call_in_spawn_blocking_runs_once_when_propagated() {
    let outer = harness(exp_policy(2));
    let inner = Arc::new(harness(exp_policy(3)));
    let inner_calls = Arc::new(AtomicU32::new(0));
    let _: Result<(), TestError> = outer
        .guard
        .call("outer")
        .idempotent()
        .run_async(|| {
            let (inner, calls) = (inner.clone(), inner_calls.clone());
            async move {
                tokio::task::spawn_blocking(propagate_fn(move || {
                    inner.guard.call("inner_sync").idempotent().run(|| {
                        calls.fetch_add(1, Ordering::SeqCst);
                        Err::<(), _>(op_err("down"))
                    })
                }))
                .await
                .unwrap()
            }
        })
        .await;
    assert_eq!(inner_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn r7_in_flight_async_attempt_is_cancelled_at_the_deadline() {
    let h = harness(exp_policy(5));
    let started = AtomicU32::new(0);
    let dropped = Arc::new(AtomicU32::new(0));
    struct CountDrop(Arc<AtomicU32>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let call = h
        .guard
        .call("hang")
        .idempotent()
        .total_timeout(secs(30.0))
        .run_async(|| {
            started.fetch_add(1, Ordering::SeqCst);
            let guard = CountDrop(dropped.clone());
            async move {
                let _g = guard;
                std::future::pending::<Result<(), TestError>>().await
            }
        });
    let time_passes = async {
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        h.sleeper.advance(secs(29.0));
        tokio::task::yield_now().await;
        h.sleeper.advance(secs(1.0));
    };
    let (out, ()) = tokio::join!(call, time_passes);
    match out {
        Err(TestError::Framework(ResilienceError::TotalTimeout {
            attempts, elapsed, ..
        })) => {
            assert_eq!(attempts, 1);
            assert_eq!(elapsed, secs(30.0));
        }
        other => panic!("expected TotalTimeout, got {other:?}"),
    }
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the in-flight attempt was dropped"
    );
}

/// Runs `call` while `time_passes` drives the manual clock, then lets `call` settle: `call`'s
/// output, or a panic naming `what` if it is still running (`join!` would hang instead).
async fn settled_within<T>(
    call: impl Future<Output = T>,
    time_passes: impl Future<Output = ()>,
    what: &str,
) -> T {
    let settle = async {
        time_passes.await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        biased;
        out = call => out,
        () = settle => panic!("{what}: still running after its deadline"),
    }
}

/// A call that makes one attempt (a write, through `run_once_async` or `run_async`) is
/// bounded by its total timeout too: its attempt is cancelled at the deadline.
#[tokio::test]
async fn r7_an_async_call_that_runs_once_is_cancelled_at_its_deadline() {
    for once in [true, false] {
        let h = harness(exp_policy(5));
        let started = AtomicU32::new(0);
        let hang = || {
            started.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<(), TestError>>()
        };
        let call = h.guard.call("apply").total_timeout(secs(20.0));
        let call = async {
            if once {
                call.run_once_async(hang()).await
            } else {
                call.run_async(hang).await
            }
        };
        let time_passes = async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            h.sleeper.advance(secs(19.0));
            tokio::task::yield_now().await;
            h.sleeper.advance(secs(1.0));
        };
        let out = settled_within(call, time_passes, &format!("once: {once}")).await;
        match out {
            Err(TestError::Framework(ResilienceError::TotalTimeout {
                attempts, elapsed, ..
            })) => {
                assert_eq!((attempts, elapsed), (1, secs(20.0)), "once: {once}");
            }
            other => panic!("once: {once}: expected TotalTimeout, got {other:?}"),
        }
        assert_eq!(started.load(Ordering::SeqCst), 1, "once: {once}");
    }
}

/// A write nested in a guarded call runs once (R6) and is bounded by its own total timeout
/// (R7) as well as by the outer call's: the outer call may be unable to cancel it (a sync
/// call, a spawned task), so it arms its own.
#[tokio::test]
async fn r6_r7_a_nested_write_is_cancelled_at_its_own_deadline() {
    let outer = harness(exp_policy(1));
    let inner = harness_with(exp_policy(5), |b| {
        b.clock(Arc::new(outer.clock.clone()))
            .sleeper(Arc::new(outer.sleeper.clone()))
            .async_sleeper(Arc::new(outer.sleeper.clone()))
    });
    let writes = AtomicU32::new(0);
    let call = outer
        .guard
        .call("read")
        .idempotent()
        .total_timeout(secs(30.0))
        .run_async(|| async {
            writes.fetch_add(1, Ordering::SeqCst);
            inner
                .guard
                .call("write")
                .total_timeout(secs(1.0))
                .run_once_async(std::future::pending::<Result<(), TestError>>())
                .await
        });
    let time_passes = async {
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        // The inner deadline: the write is cancelled here, 29 s before the outer one.
        outer.sleeper.advance(secs(1.0));
    };
    let out = settled_within(call, time_passes, "the nested write").await;
    match out {
        Err(TestError::Framework(ResilienceError::TotalTimeout {
            attempts, elapsed, ..
        })) => assert_eq!((attempts, elapsed), (1, secs(1.0))),
        other => panic!("expected the write's own TotalTimeout, got {other:?}"),
    }
    assert_eq!(writes.load(Ordering::SeqCst), 1, "the read ran once");
}

#[tokio::test]
async fn r7_async_deadline_stops_scheduling_sleeps() {
    let h = harness(exp_policy(10));
    let calls = AtomicU32::new(0);
    let out: Result<(), TestError> = h
        .guard
        .call("op")
        .idempotent()
        .total_timeout(secs(10.0))
        .run_async(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(op_err("down"))
        })
        .await;
    assert_eq!(out, Err(op_err("down")));
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0), secs(4.0)]);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn async_loop_driver_lets_each_attempt_borrow_mutably() {
    // The step API takes a fresh future per attempt, so the body can borrow `&mut` state.
    let h = harness(exp_policy(3));
    let mut log: Vec<u32> = Vec::new();
    let mut driver = h.guard.call("push").idempotent().async_loop();
    let out: Result<usize, TestError> = loop {
        let attempt = driver.attempt();
        let step = driver
            .step(async {
                log.push(attempt);
                if log.len() < 2 {
                    Err(op_err("again"))
                } else {
                    Ok(log.len())
                }
            })
            .await;
        if let std::ops::ControlFlow::Break(out) = step {
            break out;
        }
    };
    assert_eq!(out, Ok(2));
    assert_eq!(log, vec![1, 2]);
}

#[tokio::test]
async fn b5_dropping_an_async_probe_gives_its_slot_back() {
    use resilience_core::breaker::{BreakerConfig, CircuitState};
    use std::task::{Context, Waker};
    let h = harness_with(exp_policy(1), |b| {
        b.breaker(BreakerConfig::new(1, secs(10.0), secs(0.0), 1).unwrap())
    });
    let _: Result<(), TestError> = h
        .guard
        .call("get")
        .run_async(|| async { Err(op_err("x")) })
        .await;
    assert!(h.guard.breaker().unwrap().is_open());
    h.clock.advance(secs(10.0));
    // A probe starts and is cancelled mid-flight (its future dropped while pending).
    {
        let probe = h
            .guard
            .call("get")
            .run_async(std::future::pending::<Result<(), TestError>>);
        let mut probe = std::pin::pin!(probe);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(probe.as_mut().poll(&mut cx).is_pending());
        assert_eq!(h.guard.breaker().unwrap().state(), CircuitState::HalfOpen);
        // While that probe holds the only slot, another call is refused at once.
        let refused: Result<(), TestError> =
            h.guard.call("get").run_async(|| async { Ok(()) }).await;
        assert!(matches!(
            refused,
            Err(TestError::Framework(ResilienceError::CircuitOpen { .. }))
        ));
    }
    // The slot came back with the drop: the next probe runs and closes the circuit.
    let ok: Result<(), TestError> = h.guard.call("get").run_async(|| async { Ok(()) }).await;
    assert_eq!(ok, Ok(()));
    assert_eq!(h.guard.breaker().unwrap().state(), CircuitState::Closed);
}
