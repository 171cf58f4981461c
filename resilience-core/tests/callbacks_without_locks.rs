//! No lock of the breaker or the registry is held while a `tracing` event is emitted or user
//! code (a classifier, a Retry-After sink) runs (B8): a subscriber that calls back into the
//! same breaker or registry from inside an event must not deadlock. Each scenario runs on a
//! thread of its own under a watchdog, so a deadlock fails the test instead of hanging it.

mod support;

use resilience_core::breaker::{BreakerConfig, CircuitBreaker, CircuitState};
use resilience_core::clock::ManualClock;
use resilience_core::registry::{Registry, ServicePolicy};
use resilience_core::retry::{ErrorClass, RetryAfterSink};
use resilience_core::sleep::ManualSleeper;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use support::thread_subscriber::with_thread_subscriber;
use support::*;

const RECOVERY: Duration = Duration::from_secs(10);

/// Runs `f` on a thread of its own; fails if it has not finished after `WATCHDOG` (a
/// deadlock: the stuck thread is left behind, the test binary exits anyway).
fn within_watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    const WATCHDOG: Duration = Duration::from_secs(10);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => {
            panic!("{what}: deadlocked (still blocked after {WATCHDOG:?}): a lock is held")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: the scenario panicked"),
    }
}

/// A subscriber that runs `on_event` inside every event it receives, with the event's
/// `message` field.
struct CallBack<F>(F);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<F: Fn(&str, &str) + Send + Sync + 'static> tracing::Subscriber for CallBack<F> {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        (self.0)(event.metadata().target(), &m.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn breaker_config() -> BreakerConfig {
    BreakerConfig::new(1, RECOVERY, Duration::ZERO, 1).unwrap()
}

#[test]
fn b8_b11_breaker_events_are_emitted_with_the_breaker_lock_released() {
    let seen = within_watchdog("breaker event calling back into the breaker", || {
        let clock = ManualClock::new();
        let breaker = Arc::new(CircuitBreaker::with_clock(
            "svc",
            breaker_config(),
            Arc::new(clock.clone()),
        ));
        let seen = Arc::new(AtomicU32::new(0));
        let (b, s) = (breaker.clone(), seen.clone());
        // `snapshot` takes the breaker's lock: called from inside an event emitted under that
        // lock, it would block forever (parking_lot's mutex is not reentrant).
        let sub = CallBack(move |target: &str, _: &str| {
            if target == resilience_core::breaker::EVENT_TARGET {
                let _ = b.snapshot();
                s.fetch_add(1, Ordering::SeqCst);
            }
        });
        with_thread_subscriber(sub, || {
            breaker.acquire().unwrap().failure(); // opened
            clock.advance(RECOVERY);
            assert_eq!(breaker.state(), CircuitState::HalfOpen); // half-open, from state()
            breaker.acquire().unwrap().failure(); // re-opened by a probe
            clock.advance(RECOVERY);
            let probe = breaker.acquire().unwrap(); // half-open, from acquire()
            probe.success(); // closed
        });
        seen.load(Ordering::SeqCst)
    });
    assert_eq!(seen, 5, "opened, half-open, opened, half-open, closed");
}

/// A registry on manual time whose services get `breaker_config()`.
fn registry(clock: &ManualClock) -> Arc<Registry> {
    let sleeper = ManualSleeper::new(clock.clone());
    Arc::new(
        Registry::builder(|_: &str| ServicePolicy {
            breaker: Some(breaker_config()),
            ..ServicePolicy::default()
        })
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(sleeper.clone()))
        .async_sleeper(Arc::new(sleeper))
        .build(),
    )
}

#[test]
fn b8_b10_registry_is_circuit_open_emits_the_half_open_event_with_no_registry_lock_held() {
    let seen = within_watchdog("half-open event calling back into the registry", || {
        let clock = ManualClock::new();
        let registry = registry(&clock);
        let seen = Arc::new(AtomicU32::new(0));
        let (r, s) = (registry.clone(), seen.clone());
        // A subscriber that looks at the registry when a circuit changes state (e.g. to
        // export every service's state as a metric).
        let sub = CallBack(move |_: &str, message: &str| {
            if message == "circuit half-open" {
                let _ = r.services();
                let _ = r.is_circuit_open("other_service");
                s.fetch_add(1, Ordering::SeqCst);
            }
        });
        let guard = registry.service("svc");
        guard.breaker().unwrap().acquire().unwrap().failure();
        assert!(registry.is_circuit_open("svc"));
        clock.advance(RECOVERY);
        with_thread_subscriber(sub, || {
            // The first look after the recovery time moves the circuit to half-open and
            // emits that event.
            assert!(!registry.is_circuit_open("svc"));
        });
        seen.load(Ordering::SeqCst)
    });
    assert_eq!(seen, 1);
}

#[test]
fn b8_b9_a_subscriber_may_reset_the_circuit_from_the_half_open_event() {
    // The half-open event raised by `is_circuit_open` reaches a subscriber that resets the
    // circuit through the same registry (an operator hook): no registry lock may be held.
    within_watchdog("reset then look", || {
        let clock = ManualClock::new();
        let registry = registry(&clock);
        let r = registry.clone();
        let sub = CallBack(move |_: &str, message: &str| {
            if message == "circuit half-open" {
                assert!(r.reset_circuit("svc"));
            }
        });
        let guard = registry.service("svc");
        guard.breaker().unwrap().acquire().unwrap().failure();
        clock.advance(RECOVERY);
        with_thread_subscriber(sub, || registry.is_circuit_open("svc"));
        assert_eq!(guard.breaker().unwrap().state(), CircuitState::Closed);
    });
}

/// A Retry-After sink that looks at the registry it is attached to.
#[derive(Debug)]
struct LookingSink(Arc<OnceLock<Arc<Registry>>>);

impl RetryAfterSink for LookingSink {
    fn retry_after(&self, _: &str, hint: Duration) -> Duration {
        let r = self.0.get().unwrap();
        let _ = r.is_circuit_open("svc");
        let _ = r.services();
        hint
    }
}

#[test]
fn b8_r8_classifier_sink_and_retry_events_run_with_no_lock_held() {
    within_watchdog("classifier, sink and retry events calling back", || {
        let clock = ManualClock::new();
        let registry = registry(&clock);
        let cell = Arc::new(OnceLock::new());
        cell.set(registry.clone()).unwrap();
        let service = registry.service("svc");
        // A guard sharing the registry's breaker, with a sink that calls back.
        let guard = resilience_core::retry::ServiceGuard::builder("svc")
            .policy(service.policy())
            .shared_breaker(service.breaker().unwrap().clone())
            .clock(Arc::new(clock.clone()))
            .sleeper(Arc::new(ManualSleeper::new(clock.clone())))
            .retry_after_sink(Arc::new(LookingSink(cell)))
            .build();
        let r = registry.clone();
        let sub = CallBack(move |target: &str, _: &str| {
            if target == "resilience::retry" {
                let _ = r.is_circuit_open("svc");
                let _ = r.service("another_service");
            }
        });
        with_thread_subscriber(sub, || {
            let r = registry.clone();
            let out: Result<u32, TestError> = guard
                .call("op")
                .idempotent()
                .classify(move |_: &TestError| {
                    let _ = r.is_circuit_open("svc");
                    ErrorClass::RetryAfter(Duration::from_secs(1))
                })
                .run(|| Err(op_err("down")));
            assert!(out.is_err());
        });
    });
}

/// A source that looks at the registry it feeds (once the registry exists), counting calls.
fn looking_source(
    cell: Arc<OnceLock<Arc<Registry>>>,
    calls: Arc<AtomicU32>,
) -> impl Fn(&str) -> ServicePolicy + Send + Sync + 'static {
    move |service: &str| {
        if let Some(r) = cell.get() {
            let _ = r.is_circuit_open(service);
            let _ = r.services();
            // A source that derives one service's policy from another's.
            if service != "base_service" {
                let _ = r.service("base_service");
            }
            calls.fetch_add(1, Ordering::SeqCst);
        }
        ServicePolicy::default()
    }
}

/// A `PolicySource` is user code: it may log (a subscriber may then look at the registry) or
/// look at the registry itself. It must not run under the registry's lock, on first use of a
/// service or on reload.
#[test]
fn r10_b8_a_policy_source_may_call_back_into_the_registry() {
    let calls = within_watchdog("policy source calling back into the registry", || {
        let cell: Arc<OnceLock<Arc<Registry>>> = Arc::new(OnceLock::new());
        let calls = Arc::new(AtomicU32::new(0));
        let registry = Arc::new(Registry::new(looking_source(cell.clone(), calls.clone())));
        cell.set(registry.clone()).unwrap();
        let first = registry.service("svc");
        assert!(Arc::ptr_eq(&first, &registry.service("svc")));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "svc and base_service, once each"
        );
        registry.reload(looking_source(cell, calls.clone()));
        assert_eq!(registry.services().len(), 2);
        calls.load(Ordering::SeqCst)
    });
    assert_eq!(calls, 4, "and once each again on reload");
}
