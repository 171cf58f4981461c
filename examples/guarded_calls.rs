//! Guarded sync and async calls against a flaky dependency, on real time.
//!
//! `cargo run --release --example guarded_calls`
//!
//! Shows: an idempotent read retried with backoff until it succeeds; a write that runs exactly
//! once; the breaker opening after repeated failures and then refusing without calling; a
//! nested guarded call that runs once per outer attempt; and the retry log lines, where the
//! database password inside the error text is sanitized.

use resilience::backoff::{Backoff, BackoffStrategy};
use resilience::breaker::BreakerConfig;
use resilience::retry::{RetryPolicy, ServiceGuard};
use resilience::ResilienceError;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug)]
enum StoreError {
    Unavailable(String),
    Refused(ResilienceError),
}

impl From<ResilienceError> for StoreError {
    fn from(e: ResilienceError) -> Self {
        StoreError::Refused(e)
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(m) => write!(f, "store unavailable: {m}"),
            StoreError::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

/// A dependency that fails its first `failures` calls.
struct Flaky {
    calls: AtomicU32,
    failures: u32,
}

impl Flaky {
    fn call(&self) -> Result<u32, StoreError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.failures {
            Err(StoreError::Unavailable(
                "connect to postgres://planner:s3cr3t@db.internal:5432 timed out".into(),
            ))
        } else {
            Ok(n)
        }
    }
}

fn guard(service: &str, attempts: u32, threshold: u32) -> ServiceGuard {
    let backoff = Backoff::from_secs(BackoffStrategy::Exponential, 0.1, 1.0, true)
        .expect("valid literal backoff");
    ServiceGuard::builder(service)
        .policy(RetryPolicy::new(attempts, backoff, Duration::from_secs(10)).expect("valid policy"))
        .breaker(
            BreakerConfig::new(
                threshold,
                Duration::from_secs(30),
                Duration::from_secs(5),
                1,
            )
            .expect("valid breaker"),
        )
        .build()
}

fn main() {
    tracing_subscriber::fmt()
        .with_target(false)
        .compact()
        .init();

    println!("\n1. sync idempotent read, dependency fails twice then recovers");
    let plans = guard("plan_service", 4, 10);
    let db = Flaky {
        calls: AtomicU32::new(0),
        failures: 2,
    };
    let out = plans.call("get_plan").idempotent().run(|| db.call());
    println!(
        "   -> {out:?} after {} calls",
        db.calls.load(Ordering::SeqCst)
    );

    println!("\n2. sync write: never retried");
    let db = Flaky {
        calls: AtomicU32::new(0),
        failures: 1,
    };
    let out = plans.call("apply_plan").run(|| db.call());
    println!(
        "   -> {:?} after {} call",
        out.map_err(|e| resilience::sanitize(&e.to_string()).into_owned()),
        db.calls.load(Ordering::SeqCst)
    );

    println!("\n3. breaker: threshold 3, dependency down");
    let vectors = guard("vector_store_service", 2, 3);
    let down = Flaky {
        calls: AtomicU32::new(0),
        failures: u32::MAX,
    };
    for i in 1..=3 {
        let out = vectors.call("search").idempotent().run(|| down.call());
        println!(
            "   call {i}: {} (dependency calls so far: {}, circuit open: {})",
            out.err()
                .map(|e| resilience::sanitize(&e.to_string()).into_owned())
                .unwrap_or_default(),
            down.calls.load(Ordering::SeqCst),
            vectors.breaker().is_some_and(|b| b.is_open())
        );
    }

    println!("\n4. nesting guard: outer retries 3x, inner runs once per outer attempt");
    let outer = guard("context_service", 3, 100);
    let inner = guard("session_service", 3, 100);
    let inner_dep = Flaky {
        calls: AtomicU32::new(0),
        failures: u32::MAX,
    };
    let _ = outer.call("load_context").idempotent().run(|| {
        inner
            .call("load_session")
            .idempotent()
            .run(|| inner_dep.call())
    });
    println!(
        "   inner dependency calls: {} (9 without the guard)",
        inner_dep.calls.load(Ordering::SeqCst)
    );

    println!("\n5. async idempotent read on tokio");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let trace = guard("trace_service", 3, 10);
    let dep = Flaky {
        calls: AtomicU32::new(0),
        failures: 1,
    };
    let out = rt.block_on(trace.call("fetch_trace").idempotent().run_async(|| async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        dep.call()
    }));
    println!(
        "   -> {out:?} after {} calls\n",
        dep.calls.load(Ordering::SeqCst)
    );
}
