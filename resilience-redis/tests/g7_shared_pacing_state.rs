//! G7 + G8: how the shared rules' state lives in Redis: it outlives every count still in a
//! window, its endpoint index expires with it, and the concurrency cap counts calls.

mod common;

use common::node::{cfg, go, MS};
use common::pacing::client_with;
use common::server::{prefix, server};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use resilience_redis::{QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota};
use std::time::{Duration, Instant};

fn window(name: &str, selector: Selector, limit: u32, ms: u64) -> WindowRule {
    WindowRule::new(
        name,
        selector,
        Measure::Requests,
        limit,
        Duration::from_millis(ms),
    )
}

/// A grant that does not move the keys' expiry must still count until it leaves its window:
/// before, the expiry moved only past half its lifetime, so the keys could expire with a
/// grant of the last half-lifetime still in its window, and the rule granted it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_rule_state_outlives_every_count_still_in_a_window() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-expiry");
    // 2 per second: the keys live a second and a bucket (1 100 ms) past a grant.
    let rule = Pacing {
        windows: vec![window("all", Selector::All, 2, 1_000)],
        ..Pacing::default()
    };
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let read = Request::read();
    let t0 = Instant::now();
    let mut times =
        vec![go(q.try_acquire_request(&read, Priority::P1).await.expect("1")).granted_at_ms()];
    tokio::time::sleep(MS(400).saturating_sub(t0.elapsed())).await;
    times.push(go(q.try_acquire_request(&read, Priority::P1).await.expect("2")).granted_at_ms());
    // Past the first grant's key lifetime, inside the second grant's window.
    tokio::time::sleep(MS(1_150).saturating_sub(t0.elapsed())).await;
    for _ in 0..2 {
        match q
            .try_acquire_request(&read, Priority::P1)
            .await
            .expect("ask")
        {
            QuotaDecision::Go(g) => times.push(g.granted_at_ms()),
            QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}"),
        }
    }
    times.sort_unstable();
    let in_one_second = times.windows(3).any(|w| w[2] - w[0] < 1_000);
    assert!(!in_one_second, "3 grants within a second: {times:?}");
}

/// The endpoint index, made by the first per-endpoint grant after the counts' key was made,
/// expires with the counts (it used to be left without a TTL, outlive them, and then make
/// eviction count rings that were no longer there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_endpoint_index_expires_with_the_counts() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-index-ttl");
    let rule = Pacing {
        windows: vec![
            window("all", Selector::All, 100, 60_000),
            window("writes", Selector::Writes, 100, 60_000).per_endpoint(),
        ],
        ..Pacing::default()
    };
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let _ = go(q
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("read"));
    let _ = go(q
        .try_acquire_request(&Request::write().with_endpoint("/x"), Priority::P1)
        .await
        .expect("write"));
    let ttl = |k: &str| -> i64 {
        srv.cmd(&format!("PTTL {{{p}:core}}:{k}"))
            .and_then(|s| s.trim().trim_start_matches(':').parse().ok())
            .expect("PTTL")
    };
    let (counts, index) = (ttl("p"), ttl("i"));
    assert!(counts > 0, "the counts have no TTL: {counts}");
    assert!(
        index > 0 && index <= counts,
        "index TTL {index}, counts {counts}"
    );
}

/// A process without the shared rules may not spend past them through its express lane
/// either: its heartbeat, once another process counts grants against the rules, ends its
/// lease and shuts the lane (before, the renewal topped its reservation up, and its P0
/// calls were granted locally, counted in no rule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_process_without_the_rules_gets_no_reservation_and_no_express_lane() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-mixed-express");
    let rule = Pacing {
        windows: vec![window("all", Selector::All, 100, 60_000)],
        ..Pacing::default()
    };
    // Default reservation share and express lane (P0), a heartbeat every second.
    let r = RedisQuota::connect(cfg(&srv.url, &p, "u").lease_ttl(MS(3_000)))
        .await
        .expect("connect");
    let unpaced = r
        .resource(
            "core",
            QuotaSpec::new(1_000_000, Duration::from_secs(3_600)),
        )
        .await
        .expect("resource");
    let _ = go(unpaced
        .try_acquire(1, Priority::P1)
        .await
        .expect("before the rules"));
    let (_rp, paced) = client_with(cfg(&srv.url, &p, "p"), Some(rule)).await;
    let _ = go(paced
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("paced"));
    // Its next heartbeat (within a second) ends its lease.
    let t = Instant::now();
    while unpaced.snapshot().await.map(|s| s.reserved) != Ok(0) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "its lease never ended"
        );
        tokio::time::sleep(MS(50)).await;
    }
    for _ in 0..3 {
        match unpaced.acquire(1, Priority::P0).await {
            Err(resilience_redis::RedisQuotaError::PacedElsewhere { .. }) => {}
            other => panic!("spent past the shared rules: {other:?}"),
        }
    }
    let s = paced.snapshot().await.expect("snapshot");
    assert_eq!((s.reserved_total, s.members), (0, 1), "{s:?}");
    // Degraded mode: its whole reservation is held (the reply that ended its lease could
    // have been lost, and it spent on offline until the lease would have expired)...
    assert!(s.held > 8, "{s:?}");
    // ...until a refused call's report after that (its heartbeat's): then all but what its
    // express lane (allowance 8) may have spent returns, not at the window's end.
    let t = Instant::now();
    loop {
        let s = paced.snapshot().await.expect("snapshot");
        if s.held <= 8 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "still held: {s:?}");
        tokio::time::sleep(MS(100)).await;
    }
}

/// The refusal of a process without the rules saves what its call changed: a lease it
/// reaped returns its reservation to the pool (before, the refusal returned before the state
/// was written, after the reaping had deleted the lease: its reservation was lost until the
/// window ended).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_refusing_a_process_without_the_rules_loses_no_reservation() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-mixed-reap");
    let rule = Pacing {
        windows: vec![window("all", Selector::All, 100, 60_000)],
        ..Pacing::default()
    };
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    // x holds half the pool, reaches Redis through a proxy, and can spend nothing offline
    // (so its expired lease holds nothing back).
    let proxy = common::proxy::Proxy::start(&srv.url).await;
    let rx = RedisQuota::connect(
        cfg(&proxy.url, &p, "x")
            .reserve_share_permille(500)
            .lease_ttl(MS(300))
            .express(None, 0)
            .on_loss(resilience_redis::OnLoss::FailClosed),
    )
    .await
    .expect("connect x");
    let _x = rx.resource("core", plain.clone()).await.expect("x");
    let (_rp, paced) = {
        let r = RedisQuota::connect(cfg(&srv.url, &p, "p").reserve_share_permille(0))
            .await
            .expect("connect p");
        let q = r
            .resource("core", plain.clone().shared_pacing(rule))
            .await
            .expect("p");
        (r, q)
    };
    let _ = go(paced
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("paced"));
    let before = paced.snapshot().await.expect("snapshot");
    assert!(
        before.reserved_total > 0,
        "x holds a reservation: {before:?}"
    );
    proxy.cut();
    tokio::time::sleep(MS(400)).await; // x's lease expires
    let ry = RedisQuota::connect(cfg(&srv.url, &p, "y").reserve_share_permille(0))
        .await
        .expect("connect y");
    // y joins without the rules: refused (its first renewal reaps x's lease).
    let e = ry.resource("core", plain).await.unwrap_err();
    assert!(
        matches!(e, resilience_redis::RedisQuotaError::PacedElsewhere { .. }),
        "{e:?}"
    );
    let after = paced.snapshot().await.expect("snapshot");
    assert_eq!(after.reserved_total, 0, "{after:?}");
    assert_eq!(after.pool, before.pool + before.reserved_total, "{after:?}");
}

/// The concurrency cap counts calls, whatever they cost: a call of cost 5 takes one place,
/// a conditional request of cost 0 takes one too (before, the cap counted quota units, so
/// the first took five and any number of the second passed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_concurrency_cap_counts_calls_not_quota_units() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-cap-calls");
    let rule = Pacing {
        max_concurrent: Some(2),
        ..Pacing::default()
    };
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let heavy = go(q
        .try_acquire_request(&Request::read().with_cost(5), Priority::P1)
        .await
        .expect("heavy"));
    let free = go(q
        .try_acquire_request(&Request::read().with_cost(0), Priority::P1)
        .await
        .expect("a conditional request"));
    for cost in [0, 1] {
        match q
            .try_acquire_request(&Request::read().with_cost(cost), Priority::P1)
            .await
            .expect("third")
        {
            QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::InFlight, "{w:?}"),
            QuotaDecision::Go(g) => panic!("a third call in flight under a cap of 2: {g:?}"),
        }
    }
    // Settling either frees one place.
    q.release(free).await.expect("release");
    let _third = go(q
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("after a release"));
    drop(heavy);
}

/// An endpoint that later gets a window of its own (an idle one was evicted to make room)
/// starts from a copy of the shared overflow window it was counted in, so nothing it spent
/// there is forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_an_endpoint_leaving_the_overflow_window_keeps_its_count() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-overflow-copy");
    // 5 points per 2 s per endpoint: buckets of 200 ms.
    let rule = Pacing {
        windows: vec![
            WindowRule::new("points", Selector::All, Measure::Points, 5, MS(2_000)).per_endpoint(),
        ],
        ..Pacing::default()
    };
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let t0 = Instant::now();
    for i in 0..resilience_redis::SHARED_ENDPOINT_CAP {
        let e = format!("/own{i}");
        let _ = go(q
            .try_acquire_request(&Request::read().with_endpoint(&e), Priority::P1)
            .await
            .expect("own window"));
    }
    assert!(
        t0.elapsed() < MS(400),
        "too slow to time the windows: {:?}",
        t0.elapsed()
    );
    // Every window taken: /y is counted in the overflow window, to its limit.
    tokio::time::sleep(MS(1_300).saturating_sub(t0.elapsed())).await;
    let y = |points| Request::read().with_points(points).with_endpoint("/y");
    let _ = go(q
        .try_acquire_request(&y(5), Priority::P1)
        .await
        .expect("overflow"));
    // The first windows are idle (their grants left them); /y's are still in its window.
    tokio::time::sleep(MS(3_000).saturating_sub(t0.elapsed())).await;
    match q
        .try_acquire_request(&y(1), Priority::P1)
        .await
        .expect("ask")
    {
        QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}"),
        QuotaDecision::Go(g) => panic!("/y's 5 points were forgotten: {g:?}"),
    }
    // Idle windows were evicted to make room (so /y was judged on a window of its own, the
    // copy, not on the overflow window).
    let windows = srv
        .cmd(&format!("HGET {{{p}:core}}:p \"n\\x00points\""))
        .expect("HGET");
    let windows: u32 = windows.trim().parse().expect("a count");
    assert!(
        windows < resilience_redis::SHARED_ENDPOINT_CAP,
        "{windows} windows: none evicted"
    );
}

/// A resource refused at its first renewal (no rules, while another process counts against
/// them) is not kept: asked again with the rules, the same client gets it with them (before,
/// it got the refused one back, still without rules, and that one went on heartbeating).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_resource_refused_for_want_of_rules_can_be_asked_again_with_them() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-mixed-retry");
    let rule = Pacing {
        windows: vec![window("all", Selector::All, 100, 60_000)],
        ..Pacing::default()
    };
    let (_rp, paced) = client_with(cfg(&srv.url, &p, "p"), Some(rule.clone())).await;
    let _ = go(paced
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("paced"));
    let r = RedisQuota::connect(cfg(&srv.url, &p, "u").reserve_share_permille(0))
        .await
        .expect("connect");
    let plain = QuotaSpec::new(1_000_000, Duration::from_secs(3_600));
    let e = r.resource("core", plain.clone()).await.unwrap_err();
    assert!(
        matches!(e, resilience_redis::RedisQuotaError::PacedElsewhere { .. }),
        "{e:?}"
    );
    let q = r
        .resource("core", plain.shared_pacing(rule))
        .await
        .expect("with the rules");
    let _ = go(q
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("granted"));
}
