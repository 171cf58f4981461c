//! R12: a report of a 429 is reused only by the loops its failure comes out through. One
//! left behind by an earlier attempt (on another thread, in a task), or by an earlier loop
//! at the same stack address, is not: those loops ask the sink afresh.

mod support;

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use support::retry_after::*;
use support::*;

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
