//! Many-threaded stress of the circuit breaker (B5, B7, B10) with std threads.
//!
//! Complements the exhaustive-but-small loom models in `loom_breaker.rs` with many threads and
//! thousands of iterations. Time is a shared `ManualClock` the workers advance themselves, so
//! runs are not paced by real sleeps.

use resilience_core::breaker::{BreakerConfig, CircuitBreaker, CircuitState};
use resilience_core::clock::ManualClock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

/// A tiny deterministic per-thread generator (xorshift), so failures can be replayed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn spin(rng: &mut Rng) {
    for _ in 0..rng.below(64) {
        std::hint::spin_loop();
    }
}

/// B5 (and B10): 8 threads hammer one breaker with random outcomes (success, failure,
/// cancellation) while time moves; an observer checks every snapshot. The live probes of one
/// half-open episode (epoch) never exceed `half_open_max_successes`, no slot leaks, and every
/// lock-free read is sane.
#[test]
fn b5_b10_probe_limit_holds_under_many_threads() {
    const THREADS: u64 = 8;
    const ITERS: u32 = 20_000;
    const PROBES: u32 = 3;
    let clock = ManualClock::new();
    let cfg = BreakerConfig::new(
        2,
        Duration::from_micros(50),
        Duration::from_micros(20),
        PROBES,
    )
    .expect("valid config");
    let b = CircuitBreaker::with_clock("svc", cfg, Arc::new(clock.clone()));
    // Live probes per epoch, and the most ever seen at once in one epoch.
    let live: Mutex<HashMap<u64, u32>> = Mutex::default();
    let max_live = AtomicU32::new(0);
    let probes_seen = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (b, clock, live, max_live, probes_seen) =
                    (&b, &clock, &live, &max_live, &probes_seen);
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                    for _ in 0..ITERS {
                        clock.advance(Duration::from_micros(rng.below(4)));
                        let Ok(permit) = b.acquire() else { continue };
                        let probe = permit.is_probe().then(|| permit.epoch());
                        if let Some(epoch) = probe {
                            probes_seen.fetch_add(1, Ordering::Relaxed);
                            let mut live = live.lock().unwrap_or_else(|e| e.into_inner());
                            let n = live.entry(epoch).or_default();
                            *n += 1;
                            max_live.fetch_max(*n, Ordering::SeqCst);
                        }
                        spin(&mut rng);
                        if let Some(epoch) = probe {
                            // Hold probes across a reschedule so they pile up on 2 cores.
                            std::thread::yield_now();
                            let mut live = live.lock().unwrap_or_else(|e| e.into_inner());
                            *live.entry(epoch).or_default() -= 1;
                        }
                        // Mostly successes, so half-open episodes last and fill their slots.
                        match rng.below(10) {
                            0..=6 => permit.success(),
                            7..=8 => permit.failure(),
                            _ => drop(permit), // cancelled
                        }
                    }
                })
            })
            .collect();
        // Violations are returned, not asserted in place: a panicking thread must not leave
        // the others spinning forever.
        let observer = s.spawn(|| {
            let mut checks = 0u32;
            while !done.load(Ordering::Acquire) {
                // B10: lock-free reads from an unrelated thread, mid-transition.
                let _ = b.is_open();
                let count = b.failure_count();
                let snap = b.snapshot();
                let bad = count > 2
                    || snap.probes_in_flight + snap.probe_successes > PROBES
                    || (snap.state != CircuitState::HalfOpen
                        && (snap.probes_in_flight, snap.probe_successes) != (0, 0));
                if bad {
                    return Err(format!("count {count}, {snap:?}"));
                }
                checks += 1;
            }
            Ok(checks)
        });
        let workers_ok = workers.into_iter().all(|w| w.join().is_ok());
        done.store(true, Ordering::Release);
        let observed = observer.join().expect("observer panicked");
        assert!(workers_ok, "a worker panicked");
        assert!(observed.expect("invariant broken") > 0);
    });
    assert_eq!(b.snapshot().probes_in_flight, 0, "a probe slot leaked");
    let max_live = max_live.load(Ordering::SeqCst);
    assert!(
        max_live <= PROBES,
        "{max_live} live probes in one half-open episode"
    );
    assert!(
        probes_seen.load(Ordering::Relaxed) > 0,
        "the run never reached half-open"
    );
    clock.advance(Duration::from_secs(1));
    assert!(b.acquire().is_ok(), "stuck refusing after the run");
}

/// B7: rounds of three racing probes on two slots; the middle one fails. Whenever the failing
/// call got a probe, no success (early or stale) may close the circuit: it ends open with no
/// success counted. Otherwise both other probes succeeded and it is closed.
#[test]
fn b7_stale_successes_never_close_a_reopened_circuit() {
    const ROUNDS: u32 = 5_000;
    let clock = ManualClock::new();
    let cfg = BreakerConfig::new(1, Duration::from_secs(1), Duration::from_secs(1), 2)
        .expect("valid config");
    let b = CircuitBreaker::with_clock("svc", cfg, Arc::new(clock.clone()));
    let start = Barrier::new(4);
    let end = Barrier::new(4);
    let failer_probed = AtomicBool::new(false);
    let failer_done = AtomicBool::new(false);
    let (mut reopened, mut closed) = (0u32, 0u32);
    // Recorded, not asserted, inside the rounds: a panic here would strand the workers at the
    // barrier.
    let mut violation = None;
    std::thread::scope(|s| {
        for role in 0..3u64 {
            let (b, start, end) = (&b, &start, &end);
            let (failer_probed, failer_done) = (&failer_probed, &failer_done);
            s.spawn(move || {
                let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (role + 1));
                for _ in 0..ROUNDS {
                    start.wait();
                    spin(&mut rng);
                    if let Ok(p) = b.acquire() {
                        spin(&mut rng);
                        if role == 1 {
                            if p.is_probe() {
                                failer_probed.store(true, Ordering::SeqCst);
                                p.failure();
                            } // else: arrived after the circuit closed; stays out of it
                        } else {
                            // Half the time, hold the success until the failure has landed,
                            // so stale successes are common, not a lucky interleaving.
                            if rng.below(2) == 0 {
                                while !failer_done.load(Ordering::SeqCst) {
                                    std::thread::yield_now();
                                }
                            }
                            p.success();
                        }
                    }
                    if role == 1 {
                        failer_done.store(true, Ordering::SeqCst);
                    }
                    end.wait();
                }
            });
        }
        for _ in 0..ROUNDS {
            b.reset();
            if let Ok(p) = b.acquire() {
                p.failure();
            }
            clock.advance(Duration::from_secs(1));
            if b.state() != CircuitState::HalfOpen {
                violation.get_or_insert(b.snapshot());
            }
            failer_probed.store(false, Ordering::SeqCst);
            failer_done.store(false, Ordering::SeqCst);
            start.wait();
            end.wait();
            let snap = b.snapshot();
            let ok = if failer_probed.load(Ordering::SeqCst) {
                reopened += 1;
                snap.state == CircuitState::Open && snap.probe_successes == 0
            } else {
                closed += 1;
                snap.state == CircuitState::Closed
            };
            if !(ok && snap.probes_in_flight == 0) {
                violation.get_or_insert(snap);
            }
        }
    });
    assert_eq!(
        violation, None,
        "a stale success counted or closed a re-opened circuit"
    );
    assert_eq!(reopened + closed, ROUNDS);
    assert!(reopened > 0, "the failing probe never raced in");
}
