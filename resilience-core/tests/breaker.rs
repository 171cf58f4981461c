//! Circuit breaker behaviour, B1–B11, on a manual clock: exact times, no sleeps.
//!
//! Real concurrency for B5, B7 and B9 is in `loom_breaker.rs` (model-checked) and
//! `breaker_stress.rs` (many threads).

use resilience_core::breaker::{
    BreakerConfig, BreakerPermit, BreakerSnapshot, CircuitBreaker, CircuitState, EVENT_TARGET,
};
use resilience_core::clock::{Clock, ManualClock};
use resilience_core::retry::{ErrorClass, ServiceGuard};
use resilience_core::sleep::ManualSleeper;
use resilience_core::ResilienceError;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[path = "breaker_support/capture.rs"]
mod capture;
#[path = "support/thread_subscriber.rs"]
mod thread_subscriber;
use capture::Capture;

const SVC: &str = "plan_service";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn breaker(
    threshold: u32,
    recovery: u64,
    cooldown: u64,
    probes: u32,
) -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    let cfg = BreakerConfig::new(threshold, secs(recovery), secs(cooldown), probes)
        .expect("valid config");
    (
        CircuitBreaker::with_clock(SVC, cfg, Arc::new(clock.clone())),
        clock,
    )
}

fn fail(b: &CircuitBreaker, n: u32) {
    for _ in 0..n {
        b.acquire().expect("admitted").failure();
    }
}

fn refused(r: Result<BreakerPermit<'_>, ResilienceError>) -> bool {
    matches!(r, Err(ResilienceError::CircuitOpen { ref service }) if &**service == SVC)
}

#[test]
fn b1_opens_after_threshold_consecutive_failures() {
    let (b, _) = breaker(3, 60, 0, 1);
    fail(&b, 2);
    assert_eq!(b.state(), CircuitState::Closed);
    assert_eq!(b.failure_count(), 2);
    fail(&b, 1);
    assert_eq!(b.state(), CircuitState::Open);
    assert_eq!(b.failure_count(), 3);
    assert!(refused(b.acquire()));
}

#[test]
fn b1_a_success_resets_the_consecutive_count() {
    let (b, _) = breaker(3, 60, 0, 1);
    fail(&b, 2);
    b.acquire().expect("admitted").success();
    assert_eq!(b.failure_count(), 0);
    fail(&b, 2);
    assert_eq!(b.state(), CircuitState::Closed);
    fail(&b, 1);
    assert!(b.is_open());
}

#[test]
fn b1_a_cancelled_closed_call_counts_nothing() {
    let (b, _) = breaker(2, 60, 0, 1);
    fail(&b, 1);
    drop(b.acquire().expect("admitted"));
    assert_eq!(b.failure_count(), 1);
    fail(&b, 1);
    assert!(b.is_open());
}

#[test]
fn b2_half_open_only_once_recovery_timeout_has_passed() {
    let (b, clock) = breaker(1, 60, 0, 1);
    clock.advance(secs(5));
    fail(&b, 1);
    clock.advance(secs(60) - Duration::from_nanos(1));
    assert!(refused(b.acquire()));
    assert_eq!(b.state(), CircuitState::Open);
    clock.advance(Duration::from_nanos(1));
    let probe = b
        .acquire()
        .expect("probe admitted at exactly recovery_timeout");
    assert!(probe.is_probe());
    assert_eq!(b.state(), CircuitState::HalfOpen);
    assert_eq!(b.snapshot().last_half_open_at, Some(secs(65)));
}

#[test]
fn b2_cooldown_since_the_last_half_open_entry_also_applies() {
    // Recovery 10 s, cooldown 30 s: after a failed probe at t=10 the next one waits for
    // t=40 (cooldown from the half-open entry), not t=20 (recovery from re-opening).
    let (b, clock) = breaker(1, 10, 30, 1);
    fail(&b, 1);
    clock.advance(secs(10));
    b.acquire().expect("first probe").failure();
    assert_eq!(b.snapshot().opened_at, Some(secs(10)));
    clock.advance_to(secs(40) - Duration::from_nanos(1));
    assert!(refused(b.acquire()));
    clock.advance_to(secs(40));
    assert!(b.acquire().expect("second probe").is_probe());
}

#[test]
fn b2_cooldown_outlives_closing_so_a_flapping_service_waits() {
    let (b, clock) = breaker(1, 1, 30, 1);
    fail(&b, 1);
    clock.advance(secs(1));
    b.acquire().expect("probe").success();
    assert_eq!(b.state(), CircuitState::Closed);
    fail(&b, 1); // re-opens at t=1; recovery alone would allow t=2
    clock.advance_to(secs(31) - Duration::from_nanos(1));
    assert!(refused(b.acquire()));
    clock.advance_to(secs(31));
    assert!(b.acquire().is_ok());
}

#[test]
fn b2_failure_count_resets_to_zero_on_entry_to_half_open() {
    let (b, clock) = breaker(4, 60, 0, 1);
    fail(&b, 4);
    assert_eq!(b.failure_count(), 4);
    clock.advance(secs(60));
    let probe = b.acquire().expect("probe");
    assert_eq!(b.failure_count(), 0);
    probe.success();
    assert_eq!(b.failure_count(), 0);
    // Back in closed, the run starts from zero: three failures do not re-open.
    fail(&b, 3);
    assert_eq!(b.state(), CircuitState::Closed);
}

#[test]
fn b2_state_and_is_open_move_to_half_open_lazily() {
    let (b, clock) = breaker(1, 60, 0, 1);
    fail(&b, 1);
    assert!(b.is_open());
    clock.advance(secs(60));
    assert!(!b.is_open());
    let snap = b.snapshot();
    assert_eq!(snap.state, CircuitState::HalfOpen);
    assert_eq!(snap.last_half_open_at, Some(secs(60)));
    assert_eq!(b.state(), CircuitState::HalfOpen);
    assert!(b.acquire().expect("probe").is_probe());
}

#[test]
fn b2_open_for_counts_down_to_the_moment_half_open_is_due() {
    let (b, clock) = breaker(1, 60, 0, 1);
    assert_eq!(b.open_for(), None, "closed");
    clock.advance(secs(5));
    fail(&b, 1);
    assert_eq!(b.open_for(), Some(secs(60)));
    clock.advance(secs(60) - Duration::from_nanos(1));
    assert_eq!(b.open_for(), Some(Duration::from_nanos(1)));
    clock.advance(Duration::from_nanos(1));
    assert_eq!(b.open_for(), None, "due at exactly recovery_timeout");
    assert_eq!(b.state(), CircuitState::HalfOpen);
    assert_eq!(b.open_for(), None, "half-open");
}

#[test]
fn b3_closes_after_n_consecutive_probe_successes() {
    let (b, clock) = breaker(1, 60, 0, 3);
    fail(&b, 1);
    clock.advance(secs(60));
    let probes: Vec<_> = (0..3).map(|_| b.acquire().expect("probe")).collect();
    let mut probes = probes.into_iter();
    for done in 1..=2 {
        probes.next().expect("probe").success();
        assert_eq!(b.state(), CircuitState::HalfOpen, "after {done} successes");
        assert_eq!(b.snapshot().probe_successes, done);
    }
    probes.next().expect("probe").success();
    assert_eq!(b.state(), CircuitState::Closed);
    let after = b.acquire().expect("closed permit");
    assert!(!after.is_probe());
}

#[test]
fn b3_successes_keep_their_slot_so_n_probes_decide() {
    let (b, clock) = breaker(1, 60, 0, 2);
    fail(&b, 1);
    clock.advance(secs(60));
    let first = b.acquire().expect("probe 1");
    first.success();
    let second = b.acquire().expect("probe 2");
    assert!(refused(b.acquire()), "a success does not free its slot");
    second.success();
    assert_eq!(b.state(), CircuitState::Closed);
}

#[test]
fn b4_any_probe_failure_reopens_with_a_fresh_timestamp() {
    let (b, clock) = breaker(5, 60, 0, 3);
    fail(&b, 5);
    clock.advance(secs(60));
    let p: Vec<_> = (0..3).map(|_| b.acquire().expect("probe")).collect();
    let mut p = p.into_iter();
    p.next().expect("probe").success();
    p.next().expect("probe").success();
    clock.advance(secs(7));
    p.next().expect("probe").failure();
    assert_eq!(b.state(), CircuitState::Open);
    assert_eq!(b.failure_count(), 1);
    assert_eq!(b.snapshot().opened_at, Some(secs(67)));
    clock.advance(secs(60) - Duration::from_nanos(1));
    assert!(refused(b.acquire()));
    clock.advance(Duration::from_nanos(1));
    assert!(b.acquire().is_ok());
}

#[test]
fn b5_half_open_admits_at_most_n_probes_then_refuses_at_once() {
    let (b, clock) = breaker(1, 60, 0, 2);
    fail(&b, 1);
    clock.advance(secs(60));
    let p1 = b.acquire().expect("probe 1");
    let p2 = b.acquire().expect("probe 2");
    assert!(p1.is_probe() && p2.is_probe());
    assert!(refused(b.acquire()));
    assert!(refused(b.acquire()));
    assert_eq!(b.snapshot().probes_in_flight, 2);
}

#[test]
fn b5_a_dropped_probe_gives_its_slot_back_and_counts_nothing() {
    let (b, clock) = breaker(1, 60, 0, 1);
    fail(&b, 1);
    clock.advance(secs(60));
    let probe = b.acquire().expect("probe");
    assert!(refused(b.acquire()));
    drop(probe);
    let snap = b.snapshot();
    assert_eq!(snap.state, CircuitState::HalfOpen);
    assert_eq!((snap.probes_in_flight, snap.probe_successes), (0, 0));
    assert_eq!(snap.failure_count, 0);
    assert!(b.acquire().expect("slot given back").is_probe());
}

#[derive(Debug, PartialEq)]
enum TestError {
    Flaky,
    Fatal,
    Refused(ResilienceError),
}
impl From<ResilienceError> for TestError {
    fn from(e: ResilienceError) -> Self {
        Self::Refused(e)
    }
}
impl std::fmt::Display for TestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

fn guard_for(b: &Arc<CircuitBreaker>, clock: &ManualClock) -> ServiceGuard {
    let sleeper = ManualSleeper::new(clock.clone());
    ServiceGuard::builder(SVC)
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(sleeper.clone()))
        .async_sleeper(Arc::new(sleeper))
        .shared_breaker(Arc::clone(b))
        .build()
}

#[test]
fn b5_a_cancelled_async_probe_gives_its_slot_back() {
    let (b, clock) = breaker(1, 60, 0, 1);
    let b = Arc::new(b);
    fail(&b, 1);
    clock.advance(secs(60));
    let guard = guard_for(&b, &clock);
    let mut fut = Box::pin(
        guard
            .call("get_plan")
            .run_async(std::future::pending::<Result<(), TestError>>),
    );
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        b.snapshot().probes_in_flight,
        1,
        "the pending call holds the probe"
    );
    assert!(refused(b.acquire()));
    drop(fut); // cancelled
    assert_eq!(b.snapshot().probes_in_flight, 0);
    assert_eq!(b.state(), CircuitState::HalfOpen);
    b.acquire().expect("slot given back").success();
    assert_eq!(b.state(), CircuitState::Closed);
}

#[test]
fn b6_every_error_counts_as_a_failure_through_the_executor() {
    let (b, clock) = breaker(3, 60, 0, 1);
    let b = Arc::new(b);
    let guard = guard_for(&b, &clock);
    // A retried call: a transient error, then one its classifier calls permanent. Both count.
    let mut errors = vec![TestError::Fatal, TestError::Flaky];
    let out: Result<(), TestError> = guard
        .call("get_plan")
        .idempotent()
        .classify(|e: &TestError| match e {
            TestError::Fatal => ErrorClass::Permanent,
            _ => ErrorClass::Transient,
        })
        .run(|| Err(errors.pop().expect("two attempts")));
    assert_eq!(out, Err(TestError::Fatal));
    assert_eq!(b.failure_count(), 2);
    // A non-idempotent call with any error counts too, and opens the circuit.
    let out: Result<(), TestError> = guard.call("apply").run(|| Err(TestError::Fatal));
    assert_eq!(out, Err(TestError::Fatal));
    assert!(b.is_open());
    let out: Result<(), TestError> = guard.call("apply").run(|| Ok(()));
    assert!(matches!(
        out,
        Err(TestError::Refused(ResilienceError::CircuitOpen { .. }))
    ));
}

#[test]
fn b7_a_probe_success_after_a_probe_failure_reopened_is_ignored() {
    let (b, clock) = breaker(1, 60, 0, 2);
    fail(&b, 1);
    clock.advance(secs(60));
    let slow = b.acquire().expect("probe 1");
    let fast = b.acquire().expect("probe 2");
    fast.failure();
    assert!(b.is_open());
    slow.success();
    let snap = b.snapshot();
    assert_eq!(snap.state, CircuitState::Open);
    assert_eq!((snap.probes_in_flight, snap.probe_successes), (0, 0));
}

#[test]
fn b7_a_success_from_before_the_circuit_opened_is_ignored() {
    let (b, _) = breaker(1, 60, 0, 1);
    let early = b.acquire().expect("closed permit");
    fail(&b, 1);
    early.success();
    assert!(b.is_open());
    assert_eq!(b.failure_count(), 1);
}

#[test]
fn b7_a_late_failure_cannot_reopen_a_recovered_circuit() {
    let (b, clock) = breaker(1, 60, 0, 1);
    let late = b.acquire().expect("closed permit");
    fail(&b, 1);
    clock.advance(secs(60));
    b.acquire().expect("probe").success();
    assert_eq!(b.state(), CircuitState::Closed);
    late.failure();
    assert_eq!(b.state(), CircuitState::Closed);
    assert_eq!(b.failure_count(), 0);
}

#[test]
fn b7_b9_outcomes_from_before_a_reset_are_ignored() {
    let (b, _) = breaker(2, 60, 0, 1);
    let old = b.acquire().expect("closed permit");
    fail(&b, 1);
    b.reset();
    old.failure();
    assert_eq!(b.failure_count(), 0);
    fail(&b, 1);
    assert_eq!(
        b.state(),
        CircuitState::Closed,
        "only one failure since the reset"
    );
}

#[test]
fn b8_permits_hold_no_lock_while_the_call_runs() {
    // Two words, no guard inside; and Send, so an async call may hold it across awaits.
    fn assert_send<T: Send>(_: &T) {}
    assert!(std::mem::size_of::<BreakerPermit<'_>>() <= 2 * std::mem::size_of::<u64>());
    let (b, clock) = breaker(1, 60, 0, 1);
    let b = Arc::new(b);
    let closed = b.acquire().expect("closed permit");
    assert_send(&closed);
    assert_lock_free_elsewhere(&b);
    closed.failure();
    clock.advance(secs(60));
    let probe = b.acquire().expect("probe");
    assert_lock_free_elsewhere(&b);
    probe.success();
}

/// Takes the breaker's lock on another thread; fails (instead of hanging) if it is held.
fn assert_lock_free_elsewhere(b: &Arc<CircuitBreaker>) {
    let (tx, rx) = mpsc::channel();
    let b2 = Arc::clone(b);
    std::thread::spawn(move || {
        let _ = tx.send(b2.snapshot());
    });
    let got: Result<BreakerSnapshot, _> = rx.recv_timeout(secs(10));
    assert!(got.is_ok(), "the breaker's lock is held");
}

#[test]
fn b8_the_opened_event_is_emitted_after_the_lock_is_released() {
    let (b, _) = breaker(1, 60, 0, 1);
    let b = Arc::new(b);
    let b2 = Arc::clone(&b);
    let capture = Capture::with_hook(move |_| assert_lock_free_elsewhere(&b2));
    capture.run(|| fail(&b, 1));
    let opened = capture.named("circuit opened");
    assert_eq!(opened.len(), 1);
    assert_eq!(capture.hook_calls(), capture.len());
}

#[test]
fn b9_reset_clears_every_counter_and_timestamp() {
    let (b, clock) = breaker(1, 60, 30, 2);
    fail(&b, 1);
    clock.advance(secs(60));
    let probe = b.acquire().expect("probe");
    b.acquire().expect("probe 2").success();
    let before = b.snapshot();
    assert_eq!(before.state, CircuitState::HalfOpen);
    assert_eq!((before.probes_in_flight, before.probe_successes), (1, 1));
    assert!(before.opened_at.is_some() && before.last_half_open_at.is_some());
    b.reset();
    let after = b.snapshot();
    assert_eq!(after.state, CircuitState::Closed);
    assert_eq!(after.failure_count, 0);
    assert_eq!((after.opened_at, after.last_half_open_at), (None, None));
    assert_eq!((after.probes_in_flight, after.probe_successes), (0, 0));
    drop(probe); // a pre-reset probe gives back nothing
    assert_eq!(b.snapshot(), after);
    // The cooldown timestamp is gone too: re-opened now, half-open is due after recovery
    // alone (t=120), not after cooldown from the old half-open entry.
    fail(&b, 1);
    clock.advance(secs(60));
    assert!(b.acquire().expect("probe after recovery").is_probe());
}

#[test]
fn b10_is_open_is_safe_from_any_thread() {
    fn assert_shareable<T: Send + Sync>() {}
    assert_shareable::<CircuitBreaker>();
    let (b, _) = breaker(1, 60, 0, 1);
    let b = Arc::new(b);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || (0..1000).filter(|_| b.is_open()).count())
        })
        .collect();
    fail(&b, 1);
    for r in readers {
        r.join().expect("reader panicked");
    }
    let b2 = Arc::clone(&b);
    assert!(std::thread::spawn(move || b2.is_open())
        .join()
        .expect("reader"));
}

#[test]
fn b11_opening_emits_an_event_with_service_and_failure_count() {
    let (b, clock) = breaker(3, 60, 0, 1);
    let capture = Capture::new();
    capture.run(|| fail(&b, 2));
    assert!(capture.named("circuit opened").is_empty(), "not open yet");
    capture.run(|| fail(&b, 1));
    let opened = capture.named("circuit opened");
    assert_eq!(opened.len(), 1);
    let e = &opened[0];
    assert_eq!(e.target, EVENT_TARGET);
    assert_eq!(EVENT_TARGET, "resilience::breaker");
    assert_eq!(e.level, tracing::Level::WARN);
    assert_eq!(e.field("service"), Some(SVC));
    assert_eq!(e.field("failure_count"), Some("3"));
    // Re-opening from half-open is an opening too; one failed probe is the count.
    clock.advance(secs(60));
    capture.run(|| b.acquire().expect("probe").failure());
    let opened = capture.named("circuit opened");
    assert_eq!(opened.len(), 2);
    assert_eq!(opened[1].field("failure_count"), Some("1"));
}

/// A clock that counts how often it is read.
#[derive(Debug, Default)]
struct CountingClock(AtomicU64);
impl Clock for CountingClock {
    fn now(&self) -> Duration {
        self.0.fetch_add(1, Ordering::Relaxed);
        Duration::ZERO
    }
    fn unix_time(&self) -> Duration {
        Duration::ZERO
    }
}

#[test]
fn closed_success_and_sub_threshold_failures_read_no_clock() {
    let clock = Arc::new(CountingClock::default());
    let b = CircuitBreaker::with_clock(SVC, BreakerConfig::DEFAULT, clock.clone());
    for _ in 0..1000 {
        b.acquire().expect("closed").success();
    }
    fail(&b, 4);
    b.acquire().expect("closed").success();
    assert_eq!(clock.0.load(Ordering::Relaxed), 0);
    fail(&b, 5);
    assert!(
        clock.0.load(Ordering::Relaxed) > 0,
        "opening stamps the time"
    );
}

#[test]
fn config_rejects_zero_counts_and_bad_seconds_naming_the_field() {
    let zero = BreakerConfig::new(0, secs(1), secs(1), 1).expect_err("zero threshold");
    assert_eq!(zero.field(), "failure_threshold");
    let zero = BreakerConfig::new(1, secs(1), secs(1), 0).expect_err("zero probes");
    assert_eq!(zero.field(), "half_open_max_successes");
    let neg = BreakerConfig::from_secs(1, -1.0, 1.0, 1).expect_err("negative");
    assert_eq!(neg.field(), "recovery_timeout");
    let nan = BreakerConfig::from_secs(1, 1.0, f64::NAN, 1).expect_err("nan");
    assert_eq!(nan.field(), "cooldown_seconds");
    let ok = BreakerConfig::from_secs(2, 1.5, 0.25, 3).expect("valid");
    assert_eq!(ok.recovery_timeout(), Duration::from_millis(1500));
    assert_eq!(
        (ok.failure_threshold(), ok.half_open_max_successes()),
        (2, 3)
    );
    assert_eq!(BreakerConfig::default(), BreakerConfig::DEFAULT);
    assert_eq!(BreakerConfig::DEFAULT.cooldown(), secs(30));
}
