//! The governor's fast path (green light, no block, nobody in line) against the `governor`
//! crate's `check()`, measured in one run. The fast path reads the coarse clock (see
//! `resilience_core::governor`, "State and time").
//!
//! `cargo bench -p resilience-core --bench governor`

// criterion_group! expands to undocumented functions.
#![allow(missing_docs)]

use criterion::measurement::{Measurement, WallTime};
use criterion::{criterion_group, criterion_main, Criterion};
use resilience_core::clock::{Clock, ManualClock, MonotonicClock};
use resilience_core::governor::{
    AgentId, AssumedQuota, Decision, Governor, Priority, Request, ResourceConfig, ResourceId,
};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// Times `decide` alone, batch by batch, with measurement `m`, and settles each batch's
/// grants (released, untimed) before the next: a grant is settled in real use, and one left
/// in flight is settled by the store past its call bound, which this row does not measure.
fn time_decisions<M: Measurement>(
    b: &mut criterion::Bencher<'_, M>,
    m: &M,
    gov: &Governor,
    agent: AgentId,
    core: ResourceId,
    req: &Request<'_>,
) {
    const BATCH: u64 = 1024;
    let mut decided: Vec<Decision> = Vec::with_capacity(BATCH as usize);
    b.iter_custom(|iters| {
        let mut spent = m.zero();
        let mut left = iters;
        while left > 0 {
            let n = left.min(BATCH);
            let start = m.start();
            for _ in 0..n {
                decided.push(black_box(gov.decide(agent, core, req)));
            }
            spent = m.add(&spent, &m.end(start));
            for d in decided.drain(..) {
                if let Decision::Go(grant) = d {
                    gov.release(grant);
                }
            }
            left -= n;
        }
        spent
    });
}

/// A governor whose quota never runs low during a benchmark.
fn ours(clock: impl Clock) -> (Governor, AgentId, ResourceId) {
    let gov = Governor::builder().clock(clock).seed(1).build().unwrap();
    let cfg = ResourceConfig {
        quota: AssumedQuota {
            limit: u64::MAX / 4,
            window: Duration::from_secs(3600),
        },
        ..ResourceConfig::default()
    };
    let core = gov.add_resource("core", cfg).unwrap();
    let agent = gov.register("picard", Priority::P1).unwrap();
    (gov, agent, core)
}

/// The peer's `check()` and our decision on the manual clock: the first rows of both the
/// wall-clock and the CPU-time groups, so their ratios compare like with like.
fn check_and_manual_clock<M: Measurement>(g: &mut criterion::BenchmarkGroup<'_, M>, m: &M) {
    let quota = governor::Quota::per_second(NonZeroU32::MAX);
    let limiter = governor::RateLimiter::direct(quota);
    g.bench_function("governor_crate_check", |b| {
        b.iter(|| black_box(limiter.check()).is_ok())
    });
    let req = Request::read();
    let (gov, agent, core) = ours(ManualClock::new());
    g.bench_function("decide_manual_clock", |b| {
        time_decisions(b, m, &gov, agent, core, &req)
    });
}

fn fast_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("fast_path");
    check_and_manual_clock(&mut g, &WallTime);
    let req = Request::read();

    // With GitHub's rules (points per endpoint, smoothed windows): one call every 100 ms of
    // virtual time, well inside the limits, so every call takes the fast path.
    let clock = ManualClock::new();
    let gov = Governor::builder()
        .clock(clock.clone())
        .seed(1)
        .build()
        .unwrap();
    let mut github = ResourceConfig::github();
    github.quota.limit = u64::MAX / 4;
    let core = gov.add_resource("core", github).unwrap();
    let agent = gov.register("picard", Priority::P0).unwrap();
    let routed = Request::read().with_endpoint("/repos/{owner}/{repo}/git/blobs/{sha}");
    g.bench_function("decide_github_rules_manual_clock", |b| {
        b.iter(|| {
            clock.advance(Duration::from_millis(100));
            match gov.decide(agent, core, &routed) {
                Decision::Go(grant) => gov.release(grant),
                other => panic!("left the fast path: {other:?}"),
            }
        })
    });

    let (gov, agent, core) = ours(MonotonicClock::new());
    g.bench_function("decide_monotonic_clock", |b| {
        time_decisions(b, &WallTime, &gov, agent, core, &req)
    });

    // The real clock behind a trait object the governor does not recognise: no static
    // dispatch of the clock (the store still is).
    let dyn_clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let (gov, agent, core) = ours(dyn_clock);
    g.bench_function("decide_monotonic_clock_as_dyn_clock", |b| {
        time_decisions(b, &WallTime, &gov, agent, core, &req)
    });

    let (gov, agent, core) = ours(MonotonicClock::new());
    g.bench_function("decide_and_release_monotonic_clock", |b| {
        b.iter(|| {
            if let Decision::Go(grant) = gov.decide(agent, core, &req) {
                gov.release(grant);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, fast_path);

fn calibrate(c: &mut Criterion) {
    let mut g = c.benchmark_group("calibrate");
    let m = parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot_lock_unlock", |b| b.iter(|| *m.lock() += 1));
    let clock = ManualClock::new();
    g.bench_function("manual_clock_now", |b| b.iter(|| black_box(clock.now())));
    let clock = MonotonicClock::new();
    g.bench_function("monotonic_clock_now", |b| b.iter(|| black_box(clock.now())));
    g.bench_function("monotonic_clock_now_coarse", |b| {
        b.iter(|| black_box(clock.now_coarse()))
    });
    let fake = governor::clock::FakeRelativeClock::default();
    let limiter = governor::RateLimiter::direct_with_clock(
        governor::Quota::per_second(NonZeroU32::MAX),
        fake,
    );
    g.bench_function("governor_crate_check_fake_clock", |b| {
        b.iter(|| black_box(limiter.check()).is_ok())
    });
    g.finish();
}
criterion_group!(cal, calibrate);

/// The same three fast paths timed in this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`)
/// rather than wall time: time the thread spent descheduled by other work on a shared machine
/// does not count, so the ratios hold up better under load.
#[cfg(target_os = "linux")]
mod cpu {
    use super::*;
    use criterion::measurement::{Measurement, ValueFormatter};
    use criterion::Throughput;

    pub struct ThreadCpu;

    fn thread_cpu() -> Duration {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    impl Measurement for ThreadCpu {
        type Intermediate = Duration;
        type Value = Duration;
        fn start(&self) -> Duration {
            thread_cpu()
        }
        fn end(&self, start: Duration) -> Duration {
            thread_cpu().saturating_sub(start)
        }
        fn add(&self, a: &Duration, b: &Duration) -> Duration {
            *a + *b
        }
        fn zero(&self) -> Duration {
            Duration::ZERO
        }
        fn to_f64(&self, v: &Duration) -> f64 {
            v.as_nanos() as f64
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            &Nanos
        }
    }

    struct Nanos;

    impl ValueFormatter for Nanos {
        fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
            "ns"
        }
        fn scale_throughputs(&self, _: f64, _: &Throughput, _: &mut [f64]) -> &'static str {
            "ns"
        }
        fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
            "ns"
        }
    }

    pub fn fast_path_cpu(c: &mut Criterion<ThreadCpu>) {
        let mut g = c.benchmark_group("fast_path_cpu");
        check_and_manual_clock(&mut g, &ThreadCpu);
        let req = Request::read();
        let (gov, agent, core) = ours(MonotonicClock::new());
        g.bench_function("decide_monotonic_clock", |b| {
            super::time_decisions(b, &ThreadCpu, &gov, agent, core, &req)
        });
        g.finish();
    }
}

#[cfg(target_os = "linux")]
criterion_group! {
    name = cpu_time;
    config = Criterion::default().with_measurement(cpu::ThreadCpu);
    targets = cpu::fast_path_cpu
}
#[cfg(target_os = "linux")]
criterion_main!(benches, cal, cpu_time);
#[cfg(not(target_os = "linux"))]
criterion_main!(benches, cal);
