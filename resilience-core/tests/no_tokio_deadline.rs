//! Without the `tokio` feature, the default async sleeper's deadline timer must not block:
//! it used to sleep the polling thread for the whole remaining total timeout (300 s by
//! default) the first time an attempt waited, then fail the call.
//!
//! `cargo test -p resilience-core --no-default-features --test no_tokio_deadline`
#![cfg(not(feature = "tokio"))]

use resilience_core::retry::ServiceGuard;
use resilience_core::ResilienceError;
use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct E(String);

impl From<ResilienceError> for E {
    fn from(e: ResilienceError) -> Self {
        E(e.to_string())
    }
}

impl std::fmt::Display for E {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A waker that sends on a channel, so the test can wait for a wake-up with a bound.
struct Signal(mpsc::SyncSender<()>);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        let _ = self.0.try_send(());
    }
}

/// R7: an attempt that yields once is polled again at once, not after the deadline.
#[test]
fn r7_arming_the_default_deadline_does_not_block_the_polling_thread() {
    let guard = ServiceGuard::builder("svc").build();
    let mut first = true;
    let call = guard
        .call("get")
        .idempotent()
        .total_timeout(Duration::from_secs(300))
        .run_async(move || {
            let mut pending_once = std::mem::take(&mut first);
            std::future::poll_fn(move |cx: &mut Context<'_>| {
                if std::mem::take(&mut pending_once) {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(Ok::<u8, E>(1))
                }
            })
        });
    let mut call = pin!(call);
    let mut cx = Context::from_waker(Waker::noop());
    let started = Instant::now();
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the first poll blocked for {:?}",
        started.elapsed()
    );
    match call.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(1)) => {}
        Poll::Ready(other) => panic!("expected Ok(1), got {other:?}"),
        Poll::Pending => panic!("still pending"),
    }
}

/// R7: the deadline still fires: a hung attempt is woken and cancelled at its deadline.
#[test]
fn r7_the_default_deadline_wakes_and_cancels_a_hung_attempt() {
    let guard = ServiceGuard::builder("svc").build();
    let call = guard
        .call("get")
        .idempotent()
        .total_timeout(Duration::from_millis(50))
        .run_async(std::future::pending::<Result<u8, E>>);
    let mut call = pin!(call);
    let (tx, rx) = mpsc::sync_channel(1);
    let waker = Waker::from(Arc::new(Signal(tx)));
    let mut cx = Context::from_waker(&waker);
    assert!(call.as_mut().poll(&mut cx).is_pending());
    // Bounded so a broken timer fails the test instead of hanging it.
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the deadline woke the task");
    match call.as_mut().poll(&mut cx) {
        Poll::Ready(Err(E(msg))) => assert!(msg.contains("total timeout"), "{msg}"),
        other => panic!("expected the total timeout, got {other:?}"),
    }
}
