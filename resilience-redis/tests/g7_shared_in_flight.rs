//! G7 against a real redis-server: grants counted as in flight until settled, and readings
//! that must not credit a unit twice.

mod common;

use common::node::{assert_reading_keeps_in_flight, cfg, go, quota, unreserved, MS};
use common::proxy::Proxy;
use common::server::{prefix, server, skip};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{LinkState, OnLoss, QuotaDecision, RedisQuotaError, Settled};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_grant_returned_after_a_later_reading_is_not_credited_twice() {
    let Some(srv) = server() else { return };
    let p = prefix("twice");
    let (_r, a) = unreserved(&srv.url, &p, "a").await;
    let first = go(a.try_acquire(1, Priority::P1).await.expect("1"));
    let second = go(a.try_acquire(1, Priority::P1).await.expect("2"));
    // Only the second call is made; the API counts it: 99 left.
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "99")]);
    assert_eq!(
        a.observe(Some(second), &reading).await.expect("observe"),
        Settled::Applied
    );
    // The first is still in flight, so the reading does not count its unit as left.
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 98);
    // The first call is given up: its unit is credited once, back to what is left upstream.
    assert_eq!(a.release(first).await.expect("release"), Settled::Applied);
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, 99, "99 are left upstream, not 100: {s:?}");
    // A grant released before any later reading is credited as before.
    let third = go(a.try_acquire(1, Priority::P1).await.expect("3"));
    assert_eq!(a.release(third).await.expect("release"), Settled::Applied);
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_reading_that_overtook_an_earlier_call_does_not_credit_its_unit() {
    let Some(srv) = server() else { return };
    let p = prefix("overtook");
    let (_r, a) = unreserved(&srv.url, &p, "a").await;
    let (_rb, b) = unreserved(&srv.url, &p, "b").await;
    // a's call is granted first but is slow; b's, granted after it, reaches the API first
    // and reads 99 left: a's unit is not counted upstream yet.
    let slow = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    let fast = go(b.try_acquire(1, Priority::P1).await.expect("b"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "99")]);
    assert_eq!(
        b.observe(Some(fast), &reading).await.expect("observe"),
        Settled::Applied
    );
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, 98, "a's call is on its way: 98 left, not 99: {s:?}");
    // Its own response settles it: readings of calls granted later count it as spent.
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "98")]);
    assert_eq!(
        a.observe(Some(slow), &reading).await.expect("observe"),
        Settled::Applied
    );
    let next = go(b.try_acquire(1, Priority::P1).await.expect("b"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "97")]);
    b.observe(Some(next), &reading).await.expect("observe");
    assert_eq!(b.snapshot().await.expect("snapshot").pool, 97);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_processes_configured_with_other_call_bounds_count_in_flight_alike() {
    let Some(srv) = server() else { return };
    let p = prefix("bounds");
    // a creates the state with the default bound (30 s); b is configured with 100 ms.
    let (_r, a) = unreserved(&srv.url, &p, "a").await;
    let b_cfg = cfg(&srv.url, &p, "b")
        .reserve_share_permille(0)
        .call_bound(MS(100));
    let (_rb, b) = quota(b_cfg, 100, MS(60_000)).await;
    let slow = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    // Longer than 1.25 × b's bound, well within a's.
    tokio::time::sleep(MS(200)).await;
    let fast = go(b.try_acquire(1, Priority::P1).await.expect("b"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "99")]);
    b.observe(Some(fast), &reading).await.expect("observe");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(
        s.pool, 98,
        "b's bound must not drop a's call from the count: {s:?}"
    );
    // a's grant still settles where it was counted: its release is credited.
    assert_eq!(a.release(slow).await.expect("release"), Settled::Applied);
    assert_eq!(b.snapshot().await.expect("snapshot").pool, 99);
}

/// The other way round: the state made by a process with a short bound (100 ms), then one
/// with the default (30 s) joins. The slots widen to the longer bound, so that process's
/// calls count in flight for as long as they may take. Kept at the first caller's width (as
/// they were, review helper-47), a's call dropped out after 125 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_process_with_a_longer_call_bound_widens_the_in_flight_slots() {
    let Some(srv) = server() else { return };
    let p = prefix("bounds-widen");
    let b_cfg = cfg(&srv.url, &p, "b")
        .reserve_share_permille(0)
        .call_bound(MS(100));
    let (_rb, b) = quota(b_cfg, 100, MS(60_000)).await;
    let _ = b.snapshot().await.expect("b made the state");
    let (_r, a) = unreserved(&srv.url, &p, "a").await;
    let slow = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    // Longer than 1.25 × b's bound, well within a's.
    tokio::time::sleep(MS(300)).await;
    let fast = go(b.try_acquire(1, Priority::P1).await.expect("b"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "99")]);
    b.observe(Some(fast), &reading).await.expect("observe");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, 98, "a's call must still count in flight: {s:?}");
    // Granted after the slots widened, it settles where it was counted.
    assert_eq!(a.release(slow).await.expect("release"), Settled::Applied);
    assert_eq!(b.snapshot().await.expect("snapshot").pool, 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_grant_of_a_state_redis_lost_settles_nothing_of_the_rebuilt_one() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let c = cfg(&srv.url, &prefix("born"), "a")
        .reserve_share_permille(0)
        .on_loss(OnLoss::FailClosed);
    let (_r, q) = quota(c, 100, MS(60_000)).await;
    let old = go(q.try_acquire(1, Priority::P1).await.expect("old"));
    // Redis comes back without its data: the state is rebuilt from this process's view.
    srv.kill();
    srv.restart();
    let t = Instant::now();
    let new = loop {
        match q.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => break g,
            Ok(QuotaDecision::Wait(w)) => tokio::time::sleep(w.delay.min(MS(50))).await,
            Err(RedisQuotaError::Unavailable { .. }) => tokio::time::sleep(MS(50)).await,
            Err(e) => panic!("{e}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10), "never rejoined");
    };
    // The old grant's release must not settle `new`'s unit (same slot, by time).
    assert_eq!(q.release(old).await.expect("release"), Settled::Fenced);
    let probe = go(q.try_acquire(1, Priority::P1).await.expect("probe"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "50")]);
    q.observe(Some(probe), &reading).await.expect("observe");
    let s = q.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, 49, "`new` is still on its way: {s:?}");
    drop(new);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_offline_spending_reported_on_rejoin_counts_as_in_flight() {
    let Some(srv) = server() else { return };
    let p = prefix("rejoin");
    let proxy = Proxy::start(&srv.url).await;
    // a reaches Redis through the proxy, b directly.
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(400));
    let (ra, a) = quota(a_cfg, 100, MS(60_000)).await;
    let (_rb, b) = unreserved(&srv.url, &p, "b").await;
    let anchor = go(b.try_acquire(1, Priority::P1).await.expect("anchor"));
    b.release(anchor).await.expect("release");
    proxy.cut();
    // Cut off, a spends 3 of its reservation offline.
    let mut offline = Vec::new();
    let t = Instant::now();
    while offline.len() < 3 {
        match a.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) if g.is_offline() => offline.push(g),
            Ok(QuotaDecision::Go(_)) => {} // sent before the cut took
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(5), "never went offline");
    }
    // Its lease expires and b's calls reap it: its reservation is held.
    let t = Instant::now();
    loop {
        tokio::time::sleep(MS(100)).await;
        let s = b.snapshot().await.expect("snapshot");
        if s.members == 1 && s.held > 0 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "never reaped: {s:?}");
    }
    proxy.restore();
    let t = Instant::now();
    while ra.link_state() != LinkState::Connected || b.snapshot().await.expect("s").members < 2 {
        tokio::time::sleep(MS(50)).await;
        assert!(t.elapsed() < Duration::from_secs(5), "a never rejoined");
    }
    // a's 3 offline calls may still be on their way: a reading of b's call, made after
    // them, must not count them as left.
    assert_reading_keeps_in_flight(&b, 3).await;
    drop(offline);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_grant_nobody_settles_stops_counting_as_in_flight_after_the_call_bound() {
    let Some(srv) = server() else { return };
    let p = prefix("bound");
    let c = cfg(&srv.url, &p, "a")
        .reserve_share_permille(0)
        .call_bound(MS(800));
    let (_r, a) = quota(c, 100, MS(60_000)).await;
    // Neither observed nor released in time (a call stuck before it was sent, say).
    let dropped = go(a.try_acquire(1, Priority::P1).await.expect("dropped"));
    let g = go(a.try_acquire(1, Priority::P1).await.expect("1"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "99")]);
    a.observe(Some(g), &reading).await.expect("observe");
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 98);
    // Past 1.25 × the bound, a call granted then would have been counted upstream if made:
    // the reading is taken as it is.
    tokio::time::sleep(MS(1_050)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("2"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "97")]);
    a.observe(Some(g), &reading).await.expect("observe");
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 97);
    // Returned that late, it is not credited: the reading already counted it as left.
    assert_eq!(a.release(dropped).await.expect("release"), Settled::Applied);
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 97);
}
