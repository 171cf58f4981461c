//! What annotated fns get from the runtime: the breaker (M2, B1), the nesting guard (R6), the
//! total deadline (R7) and retry events (R8), observed through the attribute alone.
//!
//! They go through the real drivers behind `resilience::__private` (breaker, nesting guard,
//! deadline, events), so they fail if the expansion stops reaching them.
//!
//! No real sleeps: retrying fns use `backoff = "none"`, the sync deadline test stops before
//! its first backoff, and the async one runs on tokio's paused clock. Each test has its own services, so breakers never interact.

mod macro_support;
#[path = "../resilience-core/tests/support/thread_subscriber.rs"]
mod thread_subscriber;

use macro_support::{ApiError, Attempts};
use resilience::{retry_service_operation, ResilienceError};
use std::sync::{Arc, Mutex};

/// The framework's total timeout, after exactly one attempt.
fn timed_out_after_one_attempt(r: &Result<u32, ApiError>) -> bool {
    matches!(
        r,
        Err(ApiError::Refused(ResilienceError::TotalTimeout {
            attempts: 1,
            ..
        }))
    )
}

fn is_circuit_open(r: &Result<u32, ApiError>) -> bool {
    matches!(
        r,
        Err(ApiError::Refused(ResilienceError::CircuitOpen { .. }))
    )
}

/// Calls `f` until it reports an open circuit (at most 100 times); returns that call's number
/// and how many times the body had run when it returned.
fn call_until_open(f: impl Fn() -> Result<u32, ApiError>, body: &Attempts) -> (u32, u32) {
    for call in 1..=100 {
        if is_circuit_open(&f()) {
            return (call, body.count());
        }
    }
    panic!("the breaker never opened after 100 failing calls");
}

static WRITES: Attempts = Attempts::new();

#[retry_service_operation(service = "rt_breaker_write")]
fn failing_write() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(WRITES.next()))
}

#[test]
fn m2_write_runs_through_the_breaker_which_opens_and_then_rejects_without_running_it() {
    let (refused_call, ran) = call_until_open(failing_write, &WRITES);
    // One body run per call until the breaker opened (B1: after `failure_threshold` failures);
    // the refused call itself did not run it…
    assert_eq!(ran, refused_call - 1);
    // …and the refused calls did not run the body.
    assert!(is_circuit_open(&failing_write()));
    assert_eq!(WRITES.count(), ran);
}

static READS: Attempts = Attempts::new();

#[retry_service_operation(
    service = "rt_breaker_read",
    idempotent,
    max_attempts = 2,
    backoff = "none"
)]
fn failing_read() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(READS.next()))
}

#[test]
fn m1_retried_fn_attempts_each_pass_the_breaker() {
    // Each attempt, not each call, is one outcome to the breaker (failure threshold 5, B1):
    // calls 1 and 2 fail twice each, call 3's first attempt is the fifth failure and opens the
    // circuit, and its second attempt is refused (B6), so call 3 reports the open circuit.
    // Were only calls counted, it would take 5 calls and 10 runs.
    let (refused_call, ran) = call_until_open(failing_read, &READS);
    assert_eq!((refused_call, ran), (3, 5));
    // Once open, a call is refused before its first attempt.
    assert!(is_circuit_open(&failing_read()));
    assert_eq!(READS.count(), ran, "a refused call must not run the body");
}

static INNER: Attempts = Attempts::new();
static OUTER: Attempts = Attempts::new();

#[retry_service_operation(
    service = "rt_nested_inner",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
fn inner_call() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(INNER.next()))
}

#[retry_service_operation(
    service = "rt_nested_outer",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
fn outer_call() -> Result<u32, ApiError> {
    OUTER.next();
    inner_call()
}

#[test]
fn r6_nested_guarded_call_runs_once_per_outer_attempt() {
    assert!(outer_call().is_err());
    assert_eq!(OUTER.count(), 3);
    // 3 outer attempts × 1 inner run, not 3 × 3.
    assert_eq!(INNER.count(), 3);
}

static INNER_ASYNC: Attempts = Attempts::new();
static OUTER_ASYNC: Attempts = Attempts::new();

#[retry_service_operation(
    service = "rt_nested_inner_async",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
async fn inner_async() -> Result<u32, ApiError> {
    tokio::task::yield_now().await;
    Err(ApiError::Flaky(INNER_ASYNC.next()))
}

#[retry_service_operation(
    service = "rt_nested_outer_async",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
async fn outer_async() -> Result<u32, ApiError> {
    OUTER_ASYNC.next();
    tokio::task::yield_now().await;
    inner_async().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r6_nested_async_guarded_call_runs_once_per_outer_attempt() {
    assert!(outer_async().await.is_err());
    assert_eq!(OUTER_ASYNC.count(), 3);
    assert_eq!(INNER_ASYNC.count(), 3);
}

static INNER_PREFIX: Attempts = Attempts::new();
static INNER_PREFIX_ONCE: Attempts = Attempts::new();

#[retry_service_operation(
    service = "rt_nested_inner_prefix",
    idempotent,
    max_attempts = 2,
    backoff = "none"
)]
fn inner_of_prefix() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(INNER_PREFIX.next()))
}

#[retry_service_operation(
    service = "rt_nested_inner_prefix_once",
    idempotent,
    max_attempts = 2,
    backoff = "none"
)]
fn inner_of_write_prefix() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(INNER_PREFIX_ONCE.next()))
}

// The guarded call is made by the synchronous part of the body, before its future.
#[retry_service_operation(
    service = "rt_nested_outer_prefix",
    idempotent,
    max_attempts = 2,
    backoff = "none"
)]
fn outer_impl_future() -> impl std::future::Future<Output = Result<u32, ApiError>> {
    let inner = inner_of_prefix();
    async move { inner }
}

#[retry_service_operation(service = "rt_nested_outer_prefix_once")]
fn outer_impl_future_write() -> impl std::future::Future<Output = Result<u32, ApiError>> {
    let inner = inner_of_write_prefix();
    async move { inner }
}

/// The synchronous part of an `impl Future` fn's body is part of its attempt (R6): a guarded
/// call made there is nested, for a retried fn and for one that runs once.
#[tokio::test]
async fn r6_a_guarded_call_in_the_sync_part_of_an_impl_future_body_is_nested() {
    assert!(outer_impl_future().await.is_err());
    assert_eq!(INNER_PREFIX.count(), 2, "2 outer attempts x 1, not 2 x 2");
    assert!(outer_impl_future_write().await.is_err());
    assert_eq!(
        INNER_PREFIX_ONCE.count(),
        1,
        "1 outer attempt x 1, not 1 x 2"
    );
}

static IMPL_FUTURE_BODY: Attempts = Attempts::new();

// Its synchronous part counts the body's runs; its future fails.
#[retry_service_operation(
    service = "rt_breaker_impl_future",
    idempotent,
    max_attempts = 2,
    backoff = "none"
)]
fn failing_impl_future() -> impl std::future::Future<Output = Result<u32, ApiError>> {
    let run = IMPL_FUTURE_BODY.next();
    async move { Err(ApiError::Flaky(run)) }
}

/// A retried `impl Future` fn's body, its synchronous part included, runs inside each
/// attempt: once the circuit is open (B1), a call runs none of it (M1), exactly as for an
/// `async fn`. (It used to run the synchronous part before asking the breaker.)
#[tokio::test]
async fn m1_b1_a_retried_impl_future_fn_runs_none_of_its_body_once_the_circuit_is_open() {
    let mut refused_call = None;
    for call in 1..=100 {
        if is_circuit_open(&failing_impl_future().await) {
            refused_call = Some(call);
            break;
        }
    }
    // As for the sync read above: the fifth failure (call 3's first attempt) opens it.
    assert_eq!(refused_call, Some(3));
    assert_eq!(IMPL_FUTURE_BODY.count(), 5);
    assert!(is_circuit_open(&failing_impl_future().await));
    assert_eq!(
        IMPL_FUTURE_BODY.count(),
        5,
        "a refused call ran the synchronous part of the body"
    );
}

static SLOW: Attempts = Attempts::new();

// The first backoff (0.2 s) would end past the 0.05 s budget, so none is scheduled.
#[retry_service_operation(
    service = "rt_deadline",
    idempotent,
    max_attempts = 10,
    backoff = "fixed",
    base_delay = 0.2,
    total_timeout = 0.05
)]
fn bounded() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(SLOW.next()))
}

#[test]
fn r7_total_timeout_from_the_attribute_bounds_the_retry_loop() {
    assert_eq!(bounded(), Err(ApiError::Flaky(1)));
    assert_eq!(SLOW.count(), 1);
}

static HANGS: Attempts = Attempts::new();

#[retry_service_operation(
    service = "rt_deadline_async",
    idempotent,
    max_attempts = 3,
    backoff = "none",
    total_timeout = 0.05
)]
async fn hangs() -> Result<u32, ApiError> {
    HANGS.next();
    tokio::time::sleep(std::time::Duration::from_secs(3_600)).await;
    Ok(1)
}

// Tokio's paused clock: the deadline timer fires as soon as every task is idle, no real wait.
#[tokio::test(start_paused = true)]
async fn r7_the_attribute_cancels_an_attempt_still_running_at_the_deadline() {
    let out = hangs().await;
    assert!(timed_out_after_one_attempt(&out), "{out:?}");
    assert_eq!(HANGS.count(), 1, "no attempt after the deadline");
}

static HANGING_WRITES: Attempts = Attempts::new();

#[retry_service_operation(service = "rt_deadline_write", total_timeout = 0.05)]
async fn hanging_write() -> Result<u32, ApiError> {
    HANGING_WRITES.next();
    tokio::time::sleep(std::time::Duration::from_secs(3_600)).await;
    Ok(1)
}

// A write runs once, and its `total_timeout` bounds that one attempt.
#[tokio::test(start_paused = true)]
async fn r7_m2_the_attributes_total_timeout_cancels_a_write_still_running_at_the_deadline() {
    let started = tokio::time::Instant::now();
    let out = hanging_write().await;
    assert!(timed_out_after_one_attempt(&out), "{out:?}");
    assert_eq!(started.elapsed(), std::time::Duration::from_millis(50));
    assert_eq!(HANGING_WRITES.count(), 1);
}

/// Collects formatted `tracing` output.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` on this thread with its `tracing` output at `level` and above collected.
fn logged<T>(level: tracing::Level, f: impl FnOnce() -> T) -> (T, String) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let out = thread_subscriber::with_thread_subscriber(subscriber, f);
    let text =
        String::from_utf8(captured.0.lock().expect("capture lock").clone()).expect("utf-8 log");
    (out, text)
}

static EVENTS: Attempts = Attempts::new();

#[retry_service_operation(service = "rt_events", idempotent, max_attempts = 2, backoff = "none")]
fn fetch_report() -> Result<u32, ApiError> {
    EVENTS.fail_until(2)
}

#[test]
fn r8_retry_events_name_the_service_and_the_fn_as_operation() {
    let (out, text) = logged(tracing::Level::TRACE, fetch_report);
    assert_eq!(out, Ok(2));
    assert!(text.contains("rt_events"), "no service in: {text}");
    assert!(text.contains("fetch_report"), "no operation in: {text}");
    assert!(
        text.contains("flaky failure on attempt 1"),
        "no error in: {text}"
    );
}

static TYPO_CALLS: Attempts = Attempts::new();

#[retry_service_operation(service = "plan_servce", idempotent, max_attempts = 1)]
fn typo_service() -> Result<u32, ApiError> {
    TYPO_CALLS.fail_until(1)
}

#[retry_service_operation(service = "rt_custom_reports", idempotent, max_attempts = 1)]
fn custom_service() -> Result<u32, ApiError> {
    TYPO_CALLS.fail_until(1)
}

/// C11 allows custom services, so a misspelt one is not refused; its first call says which
/// known service it is an edit or two from, once, and a custom name far from all says nothing.
#[test]
fn c11_a_services_name_an_edit_from_a_known_one_is_warned_at_its_first_call() {
    let ((), text) = logged(tracing::Level::WARN, || {
        for _ in 0..3 {
            let _ = typo_service();
            let _ = custom_service();
        }
    });
    assert_eq!(
        text.matches("did you mean `plan_service`?").count(),
        1,
        "once, at the first call: {text}"
    );
    assert!(text.contains("plan_servce"), "{text}");
    assert!(!text.contains("rt_custom_reports"), "{text}");
}
