//! Model-checked concurrency of the circuit breaker (B5, B7, B9, and the lock-free paths).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p resilience-core --release --test loom_breaker`.
//! Models are kept to two or three threads with a preemption bound of 3 (override with
//! `LOOM_MAX_PREEMPTIONS`) so the whole file checks in well under a few minutes.
//!
//! The manual clock never moves inside a model: time is set up so that either the first
//! acquire after opening may enter half-open (`recovery_timeout` = 0) while a re-opened
//! circuit stays open (`cooldown` = 1 s since that half-open entry), or an opened circuit
//! stays open throughout (`recovery_timeout` = 1 s).
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use resilience_core::breaker::{BreakerConfig, BreakerSnapshot, CircuitBreaker, CircuitState};
use resilience_core::clock::ManualClock;
use std::sync::Arc;
use std::time::Duration;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// A breaker whose first half-open entry is due at once after opening.
fn breaker(threshold: u32, probes: u32) -> Arc<CircuitBreaker> {
    breaker_with(threshold, probes, Duration::ZERO)
}

/// A breaker that, once open, stays open for the whole model (time stands still).
fn stays_open(threshold: u32) -> Arc<CircuitBreaker> {
    breaker_with(threshold, 1, Duration::from_secs(1))
}

fn breaker_with(threshold: u32, probes: u32, recovery: Duration) -> Arc<CircuitBreaker> {
    let cfg = BreakerConfig::new(threshold, recovery, Duration::from_secs(1), probes)
        .expect("valid config");
    Arc::new(CircuitBreaker::with_clock(
        "svc",
        cfg,
        Arc::new(ManualClock::new()),
    ))
}

fn spawn(f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::spawn(f)
}

/// B5 (and B2's lazy entry): two callers race the open → half-open transition with one probe
/// slot. At most one probe is ever live; a cancelled probe's slot comes back, so afterwards
/// the breaker still admits a call.
#[test]
fn b5_racing_acquires_never_exceed_the_probe_limit() {
    model(|| {
        let b = breaker(1, 1);
        b.acquire().expect("closed").failure();
        let live = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = [false, true]
            .into_iter()
            .map(|succeed| {
                let (b, live) = (Arc::clone(&b), Arc::clone(&live));
                spawn(move || {
                    if let Ok(p) = b.acquire() {
                        if p.is_probe() {
                            assert_eq!(live.fetch_add(1, Ordering::SeqCst), 0, "two live probes");
                            live.fetch_sub(1, Ordering::SeqCst);
                        }
                        if succeed {
                            p.success();
                        } // else: dropped unreported, a cancelled call
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        assert_eq!(b.snapshot().probes_in_flight, 0, "a slot leaked");
        assert!(b.acquire().is_ok(), "the breaker is stuck refusing");
    });
}

/// B5 with two slots and three callers: never more than two live probes.
#[test]
fn b5_three_callers_two_slots() {
    model(|| {
        let b = breaker(1, 2);
        b.acquire().expect("closed").failure();
        assert_eq!(b.state(), CircuitState::HalfOpen);
        let live = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, live) = (Arc::clone(&b), Arc::clone(&live));
                spawn(move || {
                    if let Ok(p) = b.acquire() {
                        assert!(live.fetch_add(1, Ordering::SeqCst) < 2);
                        live.fetch_sub(1, Ordering::SeqCst);
                        drop(p);
                    }
                })
            })
            .collect();
        let main_probe = b.acquire();
        if let Ok(p) = &main_probe {
            assert!(live.fetch_add(1, Ordering::SeqCst) < 2);
            live.fetch_sub(1, Ordering::SeqCst);
            assert!(p.is_probe());
        }
        drop(main_probe);
        for h in handles {
            h.join().expect("thread");
        }
        let snap = b.snapshot();
        assert_eq!(
            (snap.state, snap.probes_in_flight),
            (CircuitState::HalfOpen, 0)
        );
    });
}

/// B7: one probe succeeds while another fails. Whatever the interleaving, the failure
/// re-opens and the success leaves no trace in the open circuit.
#[test]
fn b7_stale_probe_success_never_counts_in_a_reopened_circuit() {
    model(|| {
        let b = breaker(1, 2);
        b.acquire().expect("closed").failure();
        assert_eq!(b.state(), CircuitState::HalfOpen);
        let b1 = Arc::clone(&b);
        let ok = spawn(move || {
            if let Ok(p) = b1.acquire() {
                p.success();
            }
        });
        let b2 = Arc::clone(&b);
        let bad = spawn(move || {
            b2.acquire()
                .expect("a slot is free for the failing probe")
                .failure()
        });
        ok.join().expect("thread");
        bad.join().expect("thread");
        let snap = b.snapshot();
        assert_eq!(snap.state, CircuitState::Open);
        assert_eq!((snap.probes_in_flight, snap.probe_successes), (0, 0));
        assert_eq!(snap.failure_count, 1);
    });
}

/// B7 in closed: a success racing the failure that opens the circuit never resets the count
/// of the open circuit; the lock-free success path and the locked failure path agree.
#[test]
fn b7_closed_success_racing_the_opening_failure() {
    model(|| {
        let b = stays_open(2);
        b.acquire().expect("closed").failure();
        let b1 = Arc::clone(&b);
        let ok = spawn(move || {
            if let Ok(p) = b1.acquire() {
                p.success();
            }
        });
        let b2 = Arc::clone(&b);
        let bad = spawn(move || {
            if let Ok(p) = b2.acquire() {
                p.failure();
            }
        });
        ok.join().expect("thread");
        bad.join().expect("thread");
        let s = b.snapshot();
        assert!(
            matches!(
                (s.state, s.failure_count),
                (CircuitState::Closed, 1) | (CircuitState::Open, 2)
            ),
            "inconsistent: {s:?}"
        );
    });
}

/// B9: `reset` racing a failure that opens the circuit, watched by a third party. Every view,
/// during and after, is a whole state: clean closed, or freshly opened (never, say, closed
/// with an opening timestamp, or open with a cleared count).
#[test]
fn b9_reset_racing_an_opening_failure_leaves_a_whole_state() {
    model(|| {
        let b = stays_open(1);
        let b1 = Arc::clone(&b);
        let failer = spawn(move || {
            if let Ok(p) = b1.acquire() {
                p.failure();
            }
        });
        let b2 = Arc::clone(&b);
        let resetter = spawn(move || b2.reset());
        // B10: lock-free reads from a third thread never see a torn count.
        let _ = b.is_open();
        assert!(b.failure_count() <= 1);
        assert_whole(&b.snapshot());
        failer.join().expect("thread");
        resetter.join().expect("thread");
        assert_whole(&b.snapshot());
    });
}

fn assert_whole(s: &BreakerSnapshot) {
    let view = (s.state, s.failure_count, s.opened_at, s.last_half_open_at);
    let clean = (CircuitState::Closed, 0, None, None);
    let opened = (CircuitState::Open, 1, Some(Duration::ZERO), None);
    assert!(view == clean || view == opened, "torn state: {s:?}");
    assert_eq!((s.probes_in_flight, s.probe_successes), (0, 0));
}
