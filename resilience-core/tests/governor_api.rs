//! The waiting APIs: async `acquire` through the injected sleeper, `acquire_blocking`,
//! typed refusals, `max_wait`, giving up a place in line, RAII permits; registration errors.

mod governor_support;

use governor_support::*;
use resilience_core::clock::{Clock, ManualClock};
use resilience_core::governor::{
    Decision, Governor, GovernorConfig, GovernorError, Observation, Priority, RefusalReason,
    Request, ResourceConfig, ResourceId,
};
use resilience_core::sleep::{AsyncSleeper, ManualSleeper, SleepFuture};
use resilience_core::ResilienceError;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

fn governed(cfg: ResourceConfig) -> (ManualClock, ManualSleeper, Governor, ResourceId) {
    let clock = ManualClock::new();
    let sleeper = ManualSleeper::new(clock.clone());
    let gov = Governor::builder()
        .clock(clock.clone())
        .sleeper(sleeper.clone())
        .seed(3)
        .build()
        .unwrap();
    let core = gov.add_resource("core", cfg).unwrap();
    (clock, sleeper, gov, core)
}

#[tokio::test]
async fn acquire_sleeps_through_the_injected_sleeper_until_released() {
    let (clock, sleeper, gov, core) = governed(light_only());
    let a = gov.register("picard", Priority::P0).unwrap();
    gov.note_retry_after(core, secs(10));
    let permit = gov.acquire(a, core, Request::read()).await.unwrap();
    // G6: released in P0's window [10 s, 10.5 s), through the sleeper, on virtual time.
    assert!(clock.now() >= secs(10) && clock.now() < secs(10) + ms(500));
    assert_eq!(permit.waited(), clock.now());
    assert_eq!(sleeper.delays().iter().sum::<Duration>(), clock.now());
    let out = permit.observe(&Observation::new(200));
    assert_eq!(out.limited, None);
}

#[tokio::test]
async fn acquire_returns_typed_refusals() {
    let (_clock, _sleeper, gov, core) = governed(light_only());
    let p2 = gov.register("ralph", Priority::P2).unwrap();
    gov.observe_without_grant(
        p2,
        core,
        &Observation::new(200).with_remaining(10).with_limit(5000),
    );
    let result = gov.acquire(p2, core, Request::read()).await;
    match result {
        Err(ResilienceError::GovernorPaused { resource, .. }) => assert_eq!(&*resource, "core"),
        other => panic!("expected GovernorPaused, got {other:?}"),
    }
}

#[tokio::test]
async fn acquire_sheds_a_wait_longer_than_max_wait() {
    let (clock, _sleeper, gov, core) = governed(light_only());
    let a = gov.register("data", Priority::P1).unwrap();
    gov.note_retry_after(core, secs(30));
    let req = Request::read().with_max_wait(secs(5));
    let result = gov.acquire(a, core, req).await;
    match result {
        Err(ResilienceError::GovernorShed { retry_after, .. }) => {
            assert!(retry_after >= secs(30) && retry_after < secs(34));
        }
        other => panic!("expected GovernorShed, got {other:?}"),
    }
    assert_eq!(clock.now(), Duration::ZERO, "refused without sleeping");
    assert_eq!(gov.snapshot(core).unwrap().waiters, 0);
}

/// G6: a bogus hint (a proxy's `retry-after: 99999999999`, parsed by the caller's error
/// type) blocks for at most a week, as the same header observed does; it used to block every
/// agent, P0 included, for centuries, with nothing to shorten it.
#[test]
fn g6_a_noted_retry_after_blocks_for_at_most_a_week() {
    let (_clock, _sleeper, gov, core) = governed(light_only());
    gov.note_retry_after(core, secs(99_999_999_999));
    let blocked = gov.snapshot(core).unwrap().blocked_for.expect("blocked");
    assert_eq!(blocked, resilience_core::governor::LONGEST_BLOCK);
    assert_eq!(blocked, secs(7 * 86_400));
    gov.note_retry_after(core, Duration::MAX);
    assert_eq!(
        gov.snapshot(core).unwrap().blocked_for,
        Some(secs(7 * 86_400))
    );
}

/// A sleeper whose sleeps never end: a wait that is abandoned.
#[derive(Debug)]
struct Forever;
impl AsyncSleeper for Forever {
    fn sleep(&self, _: Duration) -> SleepFuture {
        Box::pin(std::future::pending())
    }
}

#[test]
fn dropping_a_waiting_acquire_leaves_the_line() {
    let clock = ManualClock::new();
    let gov = Governor::builder()
        .clock(clock.clone())
        .sleeper(Forever)
        .build()
        .unwrap();
    let core = gov.add_resource("core", light_only()).unwrap();
    let a = gov.register("data", Priority::P1).unwrap();
    gov.note_retry_after(core, secs(10));
    {
        let mut fut = pin!(gov.acquire(a, core, Request::read()));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(gov.snapshot(core).unwrap().waiters, 1);
    }
    assert_eq!(gov.snapshot(core).unwrap().waiters, 0);
}

#[test]
fn dropping_a_permit_frees_its_slot() {
    let mut cfg = light_only();
    cfg.pacing.max_concurrent = Some(1);
    let (_clock, sleeper, gov, core) = governed(cfg);
    let a = gov.register("data", Priority::P1).unwrap();
    let permit = gov
        .acquire_blocking(a, core, Request::read(), &sleeper)
        .unwrap();
    assert_eq!(gov.snapshot(core).unwrap().in_flight, 1);
    assert!(!gov.decide(a, core, &Request::read()).is_go());
    drop(permit);
    assert_eq!(gov.snapshot(core).unwrap().in_flight, 0);
}

#[test]
fn acquire_blocking_waits_through_a_sync_sleeper() {
    let (clock, sleeper, gov, core) = governed(light_only());
    let a = gov.register("ralph", Priority::P2).unwrap();
    gov.note_retry_after(core, secs(2));
    let permit = gov
        .acquire_blocking(a, core, Request::read(), &sleeper)
        .unwrap();
    assert!(clock.now() >= secs(2) + ms(3500) && clock.now() < secs(2) + ms(9500));
    let grant = permit.into_grant().unwrap();
    assert_eq!(grant.priority(), Priority::P2);
    gov.release(grant);
}

#[test]
fn unknown_ids_and_bad_registrations_are_typed_errors() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    assert_eq!(rig.agent("data", Priority::P1), a, "same name, same id");
    let r = refused(
        rig.gov
            .decide(a, ResourceId::from_index(5), &Request::read()),
    );
    assert_eq!(r.reason, RefusalReason::Unregistered);
    assert!(matches!(
        rig.gov.add_resource("core", light_only()),
        Err(GovernorError::DuplicateResource(_))
    ));
    let mut bad = light_only();
    bad.traffic_light.red = 0.9;
    let err = rig.gov.add_resource("other", bad).unwrap_err();
    assert!(err.to_string().contains("traffic_light.red"), "{err}");
    let gc = GovernorConfig {
        max_agents: 1,
        ..GovernorConfig::default()
    };
    let gov = Governor::builder().config(gc).build().unwrap();
    gov.register("one", Priority::P0).unwrap();
    assert!(matches!(
        gov.register("two", Priority::P0),
        Err(GovernorError::Capacity { what: "agents", .. })
    ));
    let zero_lease = GovernorConfig {
        leases: resilience_core::governor::Leases {
            ttl: Duration::ZERO,
            ..Default::default()
        },
        ..GovernorConfig::default()
    };
    assert!(Governor::builder().config(zero_lease).build().is_err());
    let zero_bound = GovernorConfig {
        leases: resilience_core::governor::Leases {
            call_bound: Duration::ZERO,
            ..Default::default()
        },
        ..GovernorConfig::default()
    };
    let err = Governor::builder()
        .config(zero_bound)
        .build()
        .expect_err("a call bound of 0 s");
    assert!(err.to_string().contains("leases.call_bound"), "{err}");
}

#[test]
fn a_header_naming_another_bucket_updates_that_bucket() {
    let rig = Rig::new(light_only());
    let search = rig.gov.add_resource("search", light_only()).unwrap();
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    let obs = Observation::new(200)
        .with_limit(30)
        .with_remaining(3)
        .with_resource("search");
    rig.gov.observe(g, &obs);
    assert_eq!(rig.gov.snapshot(search).unwrap().remaining, 3);
    // The server counted the call against `search`, so `core` gets its cost back.
    let core = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((core.remaining, core.in_flight), (5000, 0));
    assert!(matches!(rig.decide(a, &Request::read()), Decision::Go(_)));
}

/// A GitHub client registering one resource for every call: a `search` response (its own
/// bucket, 30 a minute) must not read as `core`'s quota, nor its 429 block `core`.
#[test]
fn g1_a_response_naming_a_bucket_no_resource_counts_is_ignored_by_a_resource_with_a_bucket() {
    let rig = Rig::new(light_only().with_bucket("core"));
    let a = rig.agent("data", Priority::P1);
    let search = |status| {
        Observation::new(status)
            .with_limit(30)
            .with_remaining(0)
            .with_retry_after(Duration::from_secs(60))
            .with_resource("search")
    };
    for status in [200, 429] {
        let g = go(rig.decide(a, &Request::read()));
        let outcome = rig.gov.observe(g, &search(status));
        assert_eq!(outcome.blocked_until, None, "status {status}");
        let core = rig.gov.snapshot(rig.core).unwrap();
        assert_eq!(
            (core.limit, core.remaining, core.in_flight, core.blocked_for),
            (5000, 5000, 0, None),
            "status {status}: the call settled, nothing read"
        );
    }
    assert!(matches!(rig.decide(a, &Request::read()), Decision::Go(_)));
    // Its own bucket's responses still count.
    let g = go(rig.decide(a, &Request::read()));
    let own = Observation::new(200)
        .with_limit(5000)
        .with_remaining(1200)
        .with_resource("core");
    rig.gov.observe(g, &own);
    // (Less the grant above, still in flight.)
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 1199);
    // Without a bucket, every response observed on the resource counts (as before).
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    rig.gov.observe(g, &search(200));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 0);
    assert_eq!(ResourceConfig::github().bucket.as_deref(), Some("core"));
}
