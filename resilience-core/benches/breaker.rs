//! Closed-state cost of the circuit breaker: `acquire` + `success` on one thread and on two
//! threads sharing one breaker, against failsafe's breaker doing the same.
//!
//! Throughput is reported per call across all threads, so the 2-thread/1-thread throughput
//! ratio shows how well the closed path scales (target ≥ 1.8×: no shared writes, no lock).
//!
//! Run: `cargo bench -p resilience-core --bench breaker -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use failsafe::CircuitBreaker as _;
use resilience_core::breaker::{BreakerConfig, CircuitBreaker};
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Runs `op(thread_index)` `iters` times on each of `threads` threads, started together;
/// returns the wall time of the slowest thread (thread start-up is not timed).
fn parallel<F: Fn(usize) + Sync>(threads: usize, iters: u64, op: F) -> Duration {
    let start = Barrier::new(threads);
    let (start, op) = (&start, &op);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                s.spawn(move || {
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..iters {
                        op(i);
                    }
                    t.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .max()
            .unwrap_or_default()
    })
}

#[inline]
fn acquire_success(breaker: &CircuitBreaker) {
    match breaker.acquire() {
        Ok(permit) => permit.success(),
        Err(e) => panic!("closed breaker refused: {e}"),
    }
}

fn closed_acquire_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("breaker_closed_acquire_success");
    for threads in [1usize, 2] {
        group.throughput(Throughput::Elements(threads as u64));

        let ours = CircuitBreaker::new("bench", BreakerConfig::DEFAULT);
        group.bench_with_input(
            BenchmarkId::new("resilience", threads),
            &threads,
            |b, &n| {
                b.iter_custom(|iters| parallel(n, iters, |_| acquire_success(black_box(&ours))))
            },
        );

        // Control: one breaker per thread, nothing shared. On an idle machine this scales by
        // the thread count; if it does not, the cores were busy, not the breaker contended.
        let own: Vec<_> = (0..threads)
            .map(|_| CircuitBreaker::new("bench", BreakerConfig::DEFAULT))
            .collect();
        group.bench_with_input(
            BenchmarkId::new("resilience_unshared", threads),
            &threads,
            |b, &n| {
                b.iter_custom(|iters| parallel(n, iters, |i| acquire_success(black_box(&own[i]))))
            },
        );

        // failsafe's default: consecutive-failures policy behind a mutex.
        let theirs = failsafe::Config::new().build();
        group.bench_with_input(BenchmarkId::new("failsafe", threads), &threads, |b, &n| {
            b.iter_custom(|iters| {
                parallel(n, iters, |_| {
                    let r = black_box(&theirs).call(|| Ok::<_, ()>(black_box(1u8)));
                    black_box(r).ok();
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, closed_acquire_success);
criterion_main!(benches);
