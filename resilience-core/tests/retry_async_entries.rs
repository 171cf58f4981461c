//! The three async entry points keep one contract: `run_async`, `run_once_async` and a step
//! loop on an `AsyncLoop` (what the attribute expands an async fn to). Each test runs every
//! entry point, polled by hand on manual time: the attempt's nesting depth (R6), refusal by an
//! open circuit (B1), the breaker hearing how an attempt that waited ended (B3, B6), the
//! backoff between attempts (R4), the attempt bound (R1), and the deadline: the cancelled
//! attempt dropped and its event emitted (R7, R8).

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::{BreakerConfig, CircuitState};
use resilience_core::clock::Clock;
use resilience_core::retry::nesting::current_depth;
use resilience_core::retry::{AllTransient, Call, Idempotent, RetryPolicy};
use resilience_core::ResilienceError;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use support::*;

/// `attempts` attempts, exponential backoff from 1 s without jitter, `total` seconds in all.
fn exp_policy(attempts: u32, total: f64) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Exponential, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, secs(total)).unwrap()
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    RunAsync,
    RunOnceAsync,
    AsyncLoopStep,
}

const ENTRIES: [Entry; 3] = [Entry::RunAsync, Entry::RunOnceAsync, Entry::AsyncLoopStep];

type Out = Result<(), TestError>;
type Boxed<'a> = Pin<Box<dyn Future<Output = Out> + 'a>>;

/// The call through `entry`; `op` makes each attempt's future (`run_once_async` makes its one
/// attempt up front, unpolled).
fn through<'a, Fut>(
    call: Call<'a, Idempotent, AllTransient>,
    entry: Entry,
    mut op: impl FnMut() -> Fut + 'a,
) -> Boxed<'a>
where
    Fut: Future<Output = Out> + 'a,
{
    match entry {
        Entry::RunAsync => Box::pin(call.run_async(op)),
        Entry::RunOnceAsync => Box::pin(call.run_once_async(op())),
        Entry::AsyncLoopStep => Box::pin(async move {
            // Made inside the async code that drives it, as its docs say.
            let mut driver = call.async_loop();
            loop {
                if let ControlFlow::Break(out) = driver.step(op()).await {
                    break out;
                }
            }
        }),
    }
}

fn poll(fut: &mut Boxed<'_>) -> Poll<Out> {
    fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls until ready; the attempts here only yield, they never wait on a timer.
fn settle(mut fut: Boxed<'_>, entry: Entry) -> Out {
    for _ in 0..100 {
        if let Poll::Ready(out) = poll(&mut fut) {
            return out;
        }
    }
    panic!("{entry:?}: the call did not finish");
}

/// Pending once, then ready: an attempt that waits.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|_| {
        if std::mem::replace(&mut yielded, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// Counts its drops: tells when an attempt's future was dropped.
struct CountDrop(Rc<Cell<u32>>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

fn is_circuit_open(out: &Out) -> bool {
    matches!(
        out,
        Err(TestError::Framework(ResilienceError::CircuitOpen { .. }))
    )
}

/// R6: every entry point runs its attempt one level deeper, on its first poll and on the
/// polls after it waited (an `AsyncLoop` step and `run_once_async` used to be unpinned here).
#[test]
fn r6_every_async_entry_point_runs_its_attempt_nested() {
    for entry in ENTRIES {
        let h = harness(exp_policy(3, 100.0));
        let depths = RefCell::new(Vec::new());
        let out = settle(
            through(h.guard.call("read").idempotent(), entry, || async {
                depths.borrow_mut().push(current_depth());
                yield_once().await;
                depths.borrow_mut().push(current_depth());
                Ok(())
            }),
            entry,
        );
        assert_eq!(out, Ok(()), "{entry:?}");
        assert_eq!(*depths.borrow(), [1, 1], "{entry:?}");
        assert_eq!(current_depth(), 0, "{entry:?}");
    }
}

/// B1: an open circuit refuses every entry point at once; the attempt is never polled.
#[test]
fn b1_an_open_circuit_refuses_every_async_entry_point_without_polling_the_attempt() {
    for entry in ENTRIES {
        let h = harness_with(exp_policy(3, 100.0), |b| {
            b.breaker(BreakerConfig::new(1, secs(60.0), secs(0.0), 1).unwrap())
        });
        let _: Out = h.guard.call("write").run_once(|| Err(op_err("down")));
        assert!(h.guard.breaker().unwrap().is_open());
        let runs = Cell::new(0);
        let out = settle(
            through(h.guard.call("read").idempotent(), entry, || async {
                runs.set(runs.get() + 1);
                Ok(())
            }),
            entry,
        );
        assert!(is_circuit_open(&out), "{entry:?}: {out:?}");
        assert_eq!(runs.get(), 0, "{entry:?}: the attempt ran");
    }
}

/// B3: a half-open probe that waits before it succeeds closes the circuit; the success is
/// reported when the attempt ends on a later poll, not only on the first.
#[test]
fn b3_a_probe_that_waits_then_succeeds_closes_the_circuit() {
    for entry in ENTRIES {
        let h = harness_with(exp_policy(3, 100.0), |b| {
            b.breaker(BreakerConfig::new(1, secs(10.0), secs(0.0), 1).unwrap())
        });
        let _: Out = h.guard.call("write").run_once(|| Err(op_err("down")));
        h.clock.advance(secs(10.0));
        let out = settle(
            through(h.guard.call("read").idempotent(), entry, || async {
                yield_once().await;
                Ok(())
            }),
            entry,
        );
        assert_eq!(out, Ok(()), "{entry:?}");
        let state = h.guard.breaker().unwrap().state();
        assert_eq!(state, CircuitState::Closed, "{entry:?}");
    }
}

/// B6: an attempt cancelled at the total deadline failed: the breaker counts it (threshold 1
/// here, so the circuit opens).
#[test]
fn b6_an_attempt_cancelled_at_the_deadline_counts_as_a_failure() {
    for entry in ENTRIES {
        let h = harness_with(exp_policy(3, 5.0), |b| {
            b.breaker(BreakerConfig::new(1, secs(60.0), secs(0.0), 1).unwrap())
        });
        let mut call = through(h.guard.call("read").idempotent(), entry, || {
            std::future::pending::<Out>()
        });
        assert!(poll(&mut call).is_pending(), "{entry:?}");
        h.sleeper.advance(secs(5.0));
        let Poll::Ready(out) = poll(&mut call) else {
            panic!("{entry:?}: still running at its deadline");
        };
        assert!(
            matches!(
                out,
                Err(TestError::Framework(ResilienceError::TotalTimeout { .. }))
            ),
            "{entry:?}: {out:?}"
        );
        assert!(h.guard.breaker().unwrap().is_open(), "{entry:?}");
    }
}

/// R4: an `AsyncLoop` step that failed waits the policy's backoff before it lets the next
/// attempt run, through the guard's async sleeper.
#[test]
fn r4_an_async_loop_step_waits_the_backoff_before_the_next_attempt() {
    let h = harness(exp_policy(3, 100.0));
    let seen = RefCell::new(Vec::new());
    let out = settle(
        Box::pin(async {
            let mut driver = h.guard.call("read").idempotent().async_loop();
            loop {
                seen.borrow_mut()
                    .push((driver.attempt(), h.clock.now_secs()));
                let step = driver.step(async { Err::<(), _>(op_err("flaky")) }).await;
                if let ControlFlow::Break(out) = step {
                    break out;
                }
            }
        }),
        Entry::AsyncLoopStep,
    );
    assert_eq!(out, Err(op_err("flaky")));
    assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0)]);
    assert_eq!(*seen.borrow(), [(1, 0.0), (2, 1.0), (3, 3.0)]);
}

/// R1: a retried call makes at most `max_attempts` attempts, whatever the entry point. The
/// operation fails the test itself past the bound, so a loop that forgets to count ends here
/// instead of spinning.
#[test]
fn r1_a_retried_call_makes_at_most_max_attempts_on_every_entry_point() {
    const MAX: u32 = 3;
    let runs = Cell::new(0);
    let attempt = || {
        runs.set(runs.get() + 1);
        assert!(runs.get() <= MAX, "attempt {} of at most {MAX}", runs.get());
        Err::<(), _>(op_err("down"))
    };
    let h = harness(exp_policy(MAX, 100.0));
    assert_eq!(
        h.guard.call("read").idempotent().run(&attempt),
        Err(op_err("down"))
    );
    assert_eq!(runs.replace(0), MAX, "run");
    for entry in [Entry::RunAsync, Entry::AsyncLoopStep] {
        let h = harness(exp_policy(MAX, 100.0));
        let out = settle(
            through(h.guard.call("read").idempotent(), entry, || {
                std::future::ready(attempt())
            }),
            entry,
        );
        assert_eq!(out, Err(op_err("down")), "{entry:?}");
        assert_eq!(runs.replace(0), MAX, "{entry:?}");
        assert_eq!(h.sleeper.delays(), vec![secs(1.0), secs(2.0)], "{entry:?}");
    }
}

/// R7 + R8: the attempt in flight at the policy's total deadline (10 s from the first
/// attempt) is cancelled: dropped by the time the call returns `TotalTimeout`, and an event
/// names the call, the attempt and the time it ran. The retrying entry points fail once and
/// wait 1 s first, so it is their second attempt that is cancelled.
#[test]
fn r7_r8_the_attempt_cancelled_at_the_deadline_is_dropped_and_emits_its_event() {
    for entry in ENTRIES {
        let recorder = Recorder::default();
        let h = harness(exp_policy(3, 10.0));
        let (runs, dropped) = (Cell::new(0), Rc::new(Cell::new(0)));
        support::thread_subscriber::with_thread_subscriber(recorder.clone(), || {
            let mut call = through(h.guard.call("read").idempotent(), entry, || {
                runs.set(runs.get() + 1);
                let (first, guard) = (runs.get() == 1, CountDrop(dropped.clone()));
                async move {
                    let _guard = guard;
                    if first && !matches!(entry, Entry::RunOnceAsync) {
                        return Err(op_err("flaky"));
                    }
                    std::future::pending().await
                }
            });
            assert!(poll(&mut call).is_pending(), "{entry:?}");
            let cancelled = runs.get();
            assert_eq!(dropped.get(), cancelled - 1, "{entry:?}");
            h.sleeper.advance(secs(10.0) - h.clock.now());
            let Poll::Ready(out) = poll(&mut call) else {
                panic!("{entry:?}: still running at its deadline");
            };
            match out {
                Err(TestError::Framework(ResilienceError::TotalTimeout {
                    attempts,
                    elapsed,
                    ..
                })) => assert_eq!((attempts, elapsed), (cancelled, secs(10.0)), "{entry:?}"),
                other => panic!("{entry:?}: expected TotalTimeout, got {other:?}"),
            }
            // Still holding the finished call: the cancelled attempt is already gone.
            assert_eq!(
                dropped.get(),
                cancelled,
                "{entry:?}: the attempt is still alive"
            );
        });
        let events = recorder.events();
        let cancelled: Vec<_> = events
            .iter()
            .filter(|e| e.target == "resilience::retry" && e.fields.contains_key("elapsed_s"))
            .collect();
        assert_eq!(cancelled.len(), 1, "{entry:?}: {events:#?}");
        let fields = &cancelled[0].fields;
        assert_eq!(fields["service"], "test_service", "{entry:?}");
        assert_eq!(fields["operation"], "read", "{entry:?}");
        assert_eq!(fields["attempt"], runs.get().to_string(), "{entry:?}");
        assert_eq!(fields["elapsed_s"], "10.0", "{entry:?}");
        assert!(
            fields["error"].contains("total timeout"),
            "{entry:?}: {fields:?}"
        );
    }
}
