//! A panic inside the guarded operation, through every entry point (sync `run`, `run_once`,
//! a `SyncLoop` step; async `run_async`, `run_once_async`, an `AsyncLoop` step; panicking on
//! the first poll, on a later poll, or in the attempt's factory): the half-open probe slot
//! comes back (B5), the nesting depth is restored so later calls on the thread still retry
//! (R6), and the panic counts as a breaker failure (B6, B1, B4) and reaches the caller
//! unchanged.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::{BreakerConfig, CircuitState};
use resilience_core::retry::nesting::current_depth;
use resilience_core::retry::{RetryPolicy, ServiceGuard};
use std::any::Any;
use std::cell::Cell;
use std::future::Future;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use support::*;

const RECOVERY: Duration = Duration::from_secs(10);

fn exp_policy(attempts: u32) -> RetryPolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Exponential, 1.0, 60.0, false).unwrap();
    RetryPolicy::new(attempts, backoff, RetryPolicy::DEFAULT_TOTAL_TIMEOUT).unwrap()
}

/// Threshold 2, one probe, recovery 10 s, no cooldown.
fn harness_with_breaker() -> Harness {
    let cfg = BreakerConfig::new(2, RECOVERY, Duration::ZERO, 1).unwrap();
    harness_with(exp_policy(3), |b| b.breaker(cfg))
}

/// The panic payload: re-raised unchanged means the caller gets this very value back.
#[derive(Debug, PartialEq)]
struct Boom(u32);

fn boom<T>() -> T {
    std::panic::panic_any(Boom(7))
}

/// Pending once (waking itself), then ready: makes the panic happen on a later poll.
#[derive(Default)]
struct PendingOnce(bool);

impl Future for PendingOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls to completion on this thread (the attempts here never wait on a timer). Dropping
/// the future on unwind is what any executor does with a task that panicked.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000 {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("the future did not finish");
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Run,
    RunOnce,
    SyncLoopStep,
    RunAsyncFirstPoll,
    RunAsyncLaterPoll,
    RunAsyncFactory,
    RunAsyncSecondAttemptFactory,
    RunOnceAsyncFirstPoll,
    RunOnceAsyncLaterPoll,
    AsyncLoopStepFirstPoll,
    AsyncLoopStepLaterPoll,
}

const ENTRIES: [Entry; 11] = [
    Entry::Run,
    Entry::RunOnce,
    Entry::SyncLoopStep,
    Entry::RunAsyncFirstPoll,
    Entry::RunAsyncLaterPoll,
    Entry::RunAsyncFactory,
    Entry::RunAsyncSecondAttemptFactory,
    Entry::RunOnceAsyncFirstPoll,
    Entry::RunOnceAsyncLaterPoll,
    Entry::AsyncLoopStepFirstPoll,
    Entry::AsyncLoopStepLaterPoll,
];

type Out = Result<u32, TestError>;

/// Makes one guarded call through `entry` whose operation panics; returns the payload the
/// caller caught.
fn panic_through(guard: &ServiceGuard, entry: Entry) -> Box<dyn Any + Send> {
    let call = || guard.call("boom").idempotent();
    let caught = catch_unwind(AssertUnwindSafe(|| match entry {
        Entry::Run => {
            let _: Out = call().run(boom);
        }
        Entry::RunOnce => {
            let _: Out = guard.call("boom").run_once(boom);
        }
        Entry::SyncLoopStep => {
            let mut driver = call().sync_loop();
            let _: ControlFlow<Out> = driver.step(boom);
        }
        Entry::RunAsyncFirstPoll => {
            let _: Out = block_on(call().run_async(|| async { boom() }));
        }
        Entry::RunAsyncLaterPoll => {
            let _: Out = block_on(call().run_async(|| async {
                PendingOnce::default().await;
                boom()
            }));
        }
        Entry::RunAsyncFactory => {
            let _: Out = block_on(call().run_async(|| -> std::future::Ready<Out> { boom() }));
        }
        Entry::RunAsyncSecondAttemptFactory => {
            // The first attempt fails (it is retried), the second attempt's factory panics.
            let n = Cell::new(0);
            let _: Out = block_on(call().run_async(|| {
                n.set(n.get() + 1);
                if n.get() == 1 {
                    std::future::ready(Err(op_err("first attempt fails")))
                } else {
                    boom()
                }
            }));
        }
        Entry::RunOnceAsyncFirstPoll => {
            let _: Out = block_on(guard.call("boom").run_once_async(async { boom() }));
        }
        Entry::RunOnceAsyncLaterPoll => {
            let _: Out = block_on(guard.call("boom").run_once_async(async {
                PendingOnce::default().await;
                boom()
            }));
        }
        Entry::AsyncLoopStepFirstPoll => {
            let _: ControlFlow<Out> = block_on(async {
                let mut driver = call().async_loop();
                driver.step(async { boom() }).await
            });
        }
        Entry::AsyncLoopStepLaterPoll => {
            let _: ControlFlow<Out> = block_on(async {
                let mut driver = call().async_loop();
                driver
                    .step(async {
                        PendingOnce::default().await;
                        boom()
                    })
                    .await
            });
        }
    }));
    caught.expect_err("the operation's panic reaches the caller")
}

fn assert_boom(entry: Entry, payload: Box<dyn Any + Send>) {
    assert_eq!(
        payload.downcast_ref::<Boom>(),
        Some(&Boom(7)),
        "{entry:?}: the panic is re-raised unchanged"
    );
}

/// Opens the circuit (threshold 2) and waits out the recovery: the next call is the probe.
fn half_open(h: &Harness) {
    let breaker = h.guard.breaker().unwrap();
    breaker.acquire().unwrap().failure();
    breaker.acquire().unwrap().failure();
    assert!(breaker.is_open());
    h.clock.advance(RECOVERY);
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
}

/// The entries whose panic can happen in a half-open probe (in `RunAsyncSecondAttemptFactory`
/// the failed first attempt re-opens the circuit, so there is no second attempt).
fn probe_entries() -> Vec<Entry> {
    ENTRIES
        .into_iter()
        .filter(|e| !matches!(e, Entry::RunAsyncSecondAttemptFactory))
        .collect()
}

/// Runs `check` for every entry point; reports every entry that failed, not just the first.
fn for_every_entry(entries: &[Entry], check: impl Fn(Entry) -> Result<(), String>) {
    let failed: Vec<String> = entries
        .iter()
        .filter_map(|&entry| {
            catch_unwind(AssertUnwindSafe(|| check(entry)))
                .unwrap_or_else(|p| {
                    Err(p
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| format!("{entry:?}: check panicked")))
                })
                .err()
        })
        .collect();
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
}

#[test]
fn b5_a_probe_that_panics_gives_its_slot_back() {
    for_every_entry(&probe_entries(), |entry| {
        let h = harness_with_breaker();
        let breaker = h.guard.breaker().unwrap();
        half_open(&h);
        assert_boom(entry, panic_through(&h.guard, entry));
        let snap = breaker.snapshot();
        if snap.probes_in_flight != 0 {
            return Err(format!(
                "{entry:?}: slot still held after the panic: {snap:?}"
            ));
        }
        // Whatever the panic counted as, the breaker admits a probe again once one is due,
        // and a successful probe closes it (it is not stuck refusing).
        h.clock.advance(RECOVERY);
        let out: Out = h.guard.call("after").run(|| Ok(1));
        if out != Ok(1) || breaker.state() != CircuitState::Closed {
            return Err(format!(
                "{entry:?}: stuck after the panic: {out:?}, {snap:?}"
            ));
        }
        Ok(())
    });
}

#[test]
fn r6_depth_is_restored_after_a_panic_and_later_calls_on_the_thread_still_retry() {
    for_every_entry(&ENTRIES, |entry| {
        let h = harness_with(exp_policy(3), |b| b.without_breaker());
        assert_boom(entry, panic_through(&h.guard, entry));
        if current_depth() != 0 {
            return Err(format!(
                "{entry:?}: depth {} after the panic",
                current_depth()
            ));
        }
        let calls = Cell::new(0);
        let out: Out = h.guard.call("later").idempotent().run(|| {
            calls.set(calls.get() + 1);
            Err(op_err("down"))
        });
        let async_calls = Cell::new(0);
        let async_out: Out = block_on(h.guard.call("later").idempotent().run_async(|| {
            async_calls.set(async_calls.get() + 1);
            std::future::ready(Err(op_err("down")))
        }));
        if (calls.get(), async_calls.get()) != (3, 3) || out.is_ok() || async_out.is_ok() {
            return Err(format!(
                "{entry:?}: a later call ran {} (sync) / {} (async) attempts, not 3: the \
                 thread was left nested",
                calls.get(),
                async_calls.get()
            ));
        }
        Ok(())
    });
}

#[test]
fn b6_a_panicking_operation_counts_as_a_failure_and_its_panic_is_re_raised_unchanged() {
    for_every_entry(&ENTRIES, |entry| {
        let h = harness_with_breaker();
        let breaker = h.guard.breaker().unwrap();
        assert_boom(entry, panic_through(&h.guard, entry));
        // RunAsyncSecondAttemptFactory's first attempt failed too, before the factory panic.
        let counted = breaker.failure_count();
        let expected = match entry {
            Entry::RunAsyncSecondAttemptFactory => {
                // Two failures: the circuit opened (B1).
                if !breaker.is_open() {
                    return Err(format!(
                        "{entry:?}: not open after two failures ({counted})"
                    ));
                }
                return Ok(());
            }
            _ => 1,
        };
        if counted != expected {
            return Err(format!(
                "{entry:?}: failure count {counted} after a panicking call, expected {expected}"
            ));
        }
        assert_boom(entry, panic_through(&h.guard, entry));
        if !breaker.is_open() {
            return Err(format!(
                "{entry:?}: two panics in a row did not open the circuit"
            ));
        }
        Ok(())
    });
}

#[test]
fn b4_a_half_open_probe_that_panics_re_opens_the_circuit() {
    for_every_entry(&probe_entries(), |entry| {
        let h = harness_with_breaker();
        let breaker = h.guard.breaker().unwrap();
        half_open(&h);
        assert_boom(entry, panic_through(&h.guard, entry));
        if breaker.state() != CircuitState::Open {
            return Err(format!(
                "{entry:?}: a panicking probe left the circuit {:?}",
                breaker.state()
            ));
        }
        Ok(())
    });
}

/// The other side of counting panics: a guarded call made while the thread is already
/// unwinding (from a `Drop` during someone else's panic) that succeeds is a success, not a
/// failure. A fix keyed on `std::thread::panicking()` alone would count it as a failure.
#[test]
fn b6_a_call_that_succeeds_while_the_thread_unwinds_is_a_success() {
    struct CallOnDrop<'g>(&'g ServiceGuard, &'g Cell<Option<Out>>);
    impl Drop for CallOnDrop<'_> {
        fn drop(&mut self) {
            assert!(std::thread::panicking());
            self.1.set(Some(self.0.call("in_drop").run(|| Ok(5))));
        }
    }
    let h = harness_with_breaker();
    let breaker = h.guard.breaker().unwrap();
    half_open(&h);
    let out = Cell::new(None);
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let _d = CallOnDrop(&h.guard, &out);
        std::panic::panic_any(Boom(1));
    }));
    assert!(caught.is_err());
    assert_eq!(out.take(), Some(Ok(5)));
    assert_eq!(breaker.state(), CircuitState::Closed, "the probe succeeded");
}
