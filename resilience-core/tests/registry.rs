//! The per-service registry: built once, looked up or created under one lock.

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::registry::{Registry, ServicePolicy};
use resilience_core::retry::RetryPolicy;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

fn policy(attempts: u32, breaker: bool) -> ServicePolicy {
    let backoff = Backoff::from_secs(BackoffStrategy::Fixed, 0.5, 5.0, false).unwrap();
    ServicePolicy {
        retry: RetryPolicy::new(attempts, backoff, Duration::from_secs(300)).unwrap(),
        breaker: breaker.then_some(BreakerConfig::DEFAULT),
    }
}

#[test]
fn r9_policy_built_once_per_service_and_reused_unknown_services_lazily() {
    let built: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let b = built.clone();
    let registry = Registry::new(move |service: &str| {
        *b.lock().unwrap().entry(service.to_owned()).or_default() += 1;
        policy(3, true)
    });
    assert!(
        built.lock().unwrap().is_empty(),
        "nothing is built before first use"
    );
    let first = registry.service("plan_service");
    for _ in 0..100 {
        assert!(Arc::ptr_eq(&first, &registry.service("plan_service")));
    }
    registry.service("never_configured_service");
    let built = built.lock().unwrap();
    assert_eq!(built["plan_service"], 1);
    assert_eq!(built["never_configured_service"], 1);
}

#[test]
fn r10_concurrent_lookup_or_create_builds_exactly_one_guard() {
    let builds = Arc::new(AtomicU32::new(0));
    let b = builds.clone();
    let registry = Arc::new(Registry::new(move |_: &str| {
        b.fetch_add(1, Ordering::SeqCst);
        // Widen the race window: a TOCTOU lookup-then-create would build twice here.
        std::thread::sleep(Duration::from_millis(2));
        policy(3, true)
    }));
    let threads = 16;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (r, bar) = (registry.clone(), barrier.clone());
            std::thread::spawn(move || {
                bar.wait();
                r.service("context_service")
            })
        })
        .collect();
    let guards: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    assert!(guards.iter().all(|g| Arc::ptr_eq(g, &guards[0])));
}

#[test]
fn c5_disabled_breaker_means_no_breaker_at_all() {
    let registry = Registry::new(|s: &str| policy(3, s != "trace_service"));
    assert!(registry.service("trace_service").breaker().is_none());
    assert!(registry.service("plan_service").breaker().is_some());
    assert!(!registry.is_circuit_open("trace_service"));
    assert!(!registry.reset_circuit("trace_service"));
}

#[test]
fn b10_is_circuit_open_by_name_is_safe_from_many_threads() {
    let registry = Arc::new(Registry::new(|_: &str| policy(3, true)));
    registry.service("plan_service");
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let r = registry.clone();
            std::thread::spawn(move || (0..1000).all(|_| !r.is_circuit_open("plan_service")))
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().unwrap()));
    assert!(
        !registry.is_circuit_open("unknown_service"),
        "unknown: not open, not created"
    );
    assert!(registry
        .services()
        .iter()
        .all(|s| &**s != "unknown_service"));
}

#[test]
fn b9_reset_circuit_by_name_reaches_the_services_breaker() {
    let registry = Registry::new(|_: &str| policy(3, true));
    assert!(
        !registry.reset_circuit("plan_service"),
        "never used: nothing to reset"
    );
    registry.service("plan_service");
    assert!(registry.reset_circuit("plan_service"));
}

#[test]
fn reload_changes_retry_policy_in_place_and_reports_breaker_changes() {
    let registry = Registry::new(|_: &str| policy(3, true));
    let guard = registry.service("plan_service");
    let gen = registry.generation();
    let changed = registry.reload(|s: &str| policy(7, s != "plan_service"));
    assert_eq!(
        guard.policy().max_attempts(),
        7,
        "holders see the new policy"
    );
    assert_eq!(changed, vec![Arc::<str>::from("plan_service")]);
    assert_ne!(registry.generation(), gen);
}

/// Reload compares each live breaker's own settings with the new ones: an unchanged
/// non-default breaker is not reported, a changed one is (the service must restart for it).
#[test]
fn reload_compares_the_live_breakers_own_settings_not_the_defaults() {
    let custom = BreakerConfig::new(2, Duration::from_secs(10), Duration::from_secs(5), 3)
        .expect("valid breaker config");
    assert_ne!(custom, BreakerConfig::DEFAULT);
    let with = move |breaker: BreakerConfig| {
        move |_: &str| ServicePolicy {
            breaker: Some(breaker),
            ..policy(3, true)
        }
    };
    let registry = Registry::new(with(custom));
    let guard = registry.service("plan_service");
    assert_eq!(guard.breaker().expect("breaker").config(), &custom);
    assert!(
        registry.reload(with(custom)).is_empty(),
        "same settings: no breaker change"
    );
    assert_eq!(
        registry.reload(with(BreakerConfig::DEFAULT)),
        vec![Arc::<str>::from("plan_service")]
    );
}
