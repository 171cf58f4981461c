#![allow(missing_docs)] // criterion_group! generates undocumented fns
//! Success-path overhead of a guarded call against a direct call and peers, in one run.
//!
//! `cargo bench --bench overhead` (see BENCHMARKS.md for the figures and how to read them).

use criterion::{criterion_group, criterion_main, Criterion};
use resilience::retry::ServiceGuard;
use resilience::ResilienceError;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct BenchError;

impl From<ResilienceError> for BenchError {
    fn from(_: ResilienceError) -> Self {
        BenchError
    }
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bench error")
    }
}

impl std::error::Error for BenchError {}

impl resilience::retry::RetryHint for BenchError {}

#[inline(never)]
fn operation(x: u64) -> Result<u64, BenchError> {
    Ok(black_box(x).wrapping_mul(31))
}

#[resilience::retry_service_operation(service = "bench_service", idempotent)]
fn annotated(x: u64) -> Result<u64, BenchError> {
    operation(x)
}

#[resilience::retry_service_operation(service = "bench_service", idempotent)]
async fn annotated_async(x: u64) -> Result<u64, BenchError> {
    operation(x)
}

/// `annotated` with a classifier (R12): it is consulted only after a failure.
#[resilience::retry_service_operation(service = "bench_service", idempotent, classify = resilience::retry::ByHint)]
fn annotated_classified(x: u64) -> Result<u64, BenchError> {
    operation(x)
}

#[resilience::retry_service_operation(service = "bench_service", idempotent, classify = resilience::retry::ByHint)]
async fn annotated_async_classified(x: u64) -> Result<u64, BenchError> {
    operation(x)
}

/// What `annotated_async` does, written by hand: the attempt reads the fn's argument. (An
/// attempt that captures nothing, as in `resilience_guarded`, lets the optimizer fold more:
/// about half the time on this machine, whoever drives it.)
async fn by_hand_async(guard: &ServiceGuard, x: u64) -> Result<u64, BenchError> {
    guard
        .call("op")
        .idempotent()
        .run_async(|| async { operation(x) })
        .await
}

/// Polls a future that is ready on its first poll, with no runtime in the way.
fn poll_ready<F: Future>(fut: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(fut).poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("benchmark futures complete on first poll"),
    }
}

fn sync_paths(c: &mut Criterion) {
    let guard = ServiceGuard::builder("bench_service").build();
    let failsafe_cb = failsafe::Config::new().build();
    let mut g = c.benchmark_group("sync_success_path");
    g.bench_function("direct", |b| b.iter(|| operation(black_box(7))));
    g.bench_function("resilience_guarded", |b| {
        b.iter(|| {
            guard
                .call("op")
                .idempotent()
                .run(|| operation(black_box(7)))
        })
    });
    // Through the registry: what an annotated fn does (a static call site caching its guard).
    static SITE: resilience::__private::CallSite = resilience::__private::CallSite::new(
        "bench_service",
        "op",
        resilience::__private::CodeDeclared::EMPTY,
    );
    g.bench_function("resilience_call_site", |b| {
        b.iter(|| {
            let mut driver =
                resilience::__private::sync_loop(&SITE, resilience::__private::Idempotent);
            loop {
                if let std::ops::ControlFlow::Break(out) = driver.step(|| operation(black_box(7))) {
                    break out;
                }
            }
        })
    });
    g.bench_function("resilience_annotated_fn", |b| {
        b.iter(|| annotated(black_box(7)))
    });
    g.bench_function("resilience_annotated_fn_classified", |b| {
        b.iter(|| annotated_classified(black_box(7)))
    });
    g.bench_function("backon_blocking_retry", |b| {
        use backon::{BlockingRetryable, ExponentialBuilder};
        b.iter(|| {
            (|| operation(black_box(7)))
                .retry(ExponentialBuilder::default())
                .call()
        })
    });
    g.bench_function("failsafe_breaker", |b| {
        use failsafe::CircuitBreaker;
        b.iter(|| failsafe_cb.call(|| operation(black_box(7))))
    });
    g.finish();
}

fn async_paths(c: &mut Criterion) {
    let guard = ServiceGuard::builder("bench_service").build();
    let mut g = c.benchmark_group("async_success_path");
    g.bench_function("direct", |b| {
        b.iter(|| poll_ready(async { operation(black_box(7)) }))
    });
    g.bench_function("resilience_guarded", |b| {
        b.iter(|| {
            poll_ready(
                guard
                    .call("op")
                    .idempotent()
                    .run_async(|| async { operation(black_box(7)) }),
            )
        })
    });
    g.bench_function("resilience_guarded_over_arg", |b| {
        b.iter(|| poll_ready(by_hand_async(&guard, black_box(7))))
    });
    g.bench_function("resilience_annotated_fn", |b| {
        b.iter(|| poll_ready(annotated_async(black_box(7))))
    });
    g.bench_function("resilience_annotated_fn_classified", |b| {
        b.iter(|| poll_ready(annotated_async_classified(black_box(7))))
    });
    g.bench_function("resilience_write_once", |b| {
        b.iter(|| {
            poll_ready(
                guard
                    .call("op")
                    .run_once_async(async { operation(black_box(7)) }),
            )
        })
    });
    g.bench_function("backon_retry", |b| {
        use backon::{ExponentialBuilder, Retryable};
        b.iter(|| {
            poll_ready((|| async { operation(black_box(7)) }).retry(ExponentialBuilder::default()))
        })
    });
    g.finish();
}

/// Throughput of one guard shared by 1 and 2 threads (each thread does `iters` calls).
fn shared_guard(c: &mut Criterion) {
    let guard = Arc::new(ServiceGuard::builder("bench_service").build());
    let mut g = c.benchmark_group("shared_guard_calls");
    for threads in [1usize, 2] {
        let guard = guard.clone();
        g.bench_function(format!("{threads}_threads_per_call_each"), move |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        let guard = &guard;
                        s.spawn(move || {
                            for i in 0..iters {
                                let _ = black_box(
                                    guard
                                        .call("op")
                                        .idempotent()
                                        .run(|| operation(black_box(i))),
                                );
                            }
                        });
                    }
                });
                // Time per call per thread: equal to 1-thread time means perfect scaling.
                start.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = sync_paths, async_paths, shared_guard
}
criterion_main!(benches);
