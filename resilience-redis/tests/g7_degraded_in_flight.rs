//! G7 against a real redis-server paused with SIGSTOP: calls still in flight (or cancelled)
//! when the process goes offline. An acquire may yet be paid from the reservation and its
//! reply be used; a heartbeat sent before the offline spending may be judged after the
//! lease expired; a cancelled call's report must still be made (review helper-45).

mod common;

use common::node::{cfg, go, quota, MS};
use common::server::{prefix, server, skip, RedisServer};
use resilience_core::governor::Priority;
use resilience_redis::{LinkState, QuotaDecision, RedisQuota, RedisQuotaConfig, SharedQuota};
use std::time::Duration;

/// A renewal times out while Redis is paused, with an acquire of 5 sent behind it: the
/// process degrades and spends its reservation offline. Redis resumes, pays the acquire
/// from the reservation (the pool is spent), and its reply comes back in time. Counted only
/// once answered (as it was), the reservation was spent twice: 105 grants of 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_acquire_in_flight_when_the_link_is_given_up_is_not_spent_offline_too() {
    let Some(srv) = server() else { return };
    if !srv.owned() {
        skip("needs its own redis-server (SIGSTOP)");
        return;
    }
    let limit = 100;
    let p = prefix("rev45-inflight");
    let ((ra, a), (_rb, b)) =
        reserving_and_draining(&srv, &p, limit, |c| c.timeouts(MS(500), MS(600))).await;
    let reserved = a.snapshot().await.expect("snap").reserved;
    assert!(reserved >= 10, "a's reservation: {reserved}");
    // b takes the whole pool.
    let mut used = drain(&b).await;
    assert_eq!(used, limit - reserved);
    let stopped = srv.pause();
    // A call that times out first (a heartbeat, a renew), then an acquire behind it.
    let a1 = a.clone();
    let renew = tokio::spawn(async move { a1.renew().await });
    tokio::time::sleep(MS(300)).await;
    let a2 = a.clone();
    let cost = 5u32;
    let acquire = tokio::spawn(async move { a2.try_acquire(cost, Priority::P1).await });
    let _ = renew.await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    // Degraded: what is left of a's share, offline.
    let mut offline = 0;
    while let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
        assert!(g.is_offline());
        offline += 1;
    }
    used += offline;
    drop(stopped);
    // Whatever became of it (its reply in time, or a loss and an offline grant), every
    // unit granted counts.
    if let Ok(QuotaDecision::Go(_)) = acquire.await.expect("join") {
        used += u64::from(cost);
    }
    assert!(
        used <= limit,
        "{used} granted in a window of {limit}, {offline} of them offline"
    );
}

/// Grants `q` until refused; how many.
async fn drain(q: &SharedQuota) -> u64 {
    let mut n = 0;
    while let Ok(QuotaDecision::Go(_)) = q.try_acquire(1, Priority::P1).await {
        n += 1;
        assert!(n < 1000);
    }
    n
}

/// A heartbeat sent before the link was lost (its report empty) is judged only after the
/// lease expired, while the process spent its whole reservation offline. That call is not
/// the holder's last word on the lease (its deadline had not passed when it was sent): what
/// is held for the lease waits for the report sent after it. Returned at once (as it was,
/// review helper-45), the offline spending came on top of the pool: 118 of 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_sent_before_going_offline_does_not_return_the_held_share() {
    let Some(srv) = server() else { return };
    if !srv.owned() {
        skip("needs its own redis-server (SIGSTOP)");
        return;
    }
    let limit = 100;
    let p = prefix("held-unfinal");
    let ((ra, a), (_rb, b)) =
        reserving_and_draining(&srv, &p, limit, |c| c.lease_ttl(MS(1_500))).await;
    let mut used = drain(&b).await;
    a.renew().await.expect("renew");
    let reserved = a.snapshot().await.expect("snap").reserved;
    assert_eq!(used + reserved, limit);
    let stopped = srv.pause();
    // Sent before the loss (a heartbeat): its report is empty.
    let a1 = a.clone();
    let renew = tokio::spawn(async move { a1.renew().await });
    let _ = renew.await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let offline = drain(&a).await;
    assert_eq!(offline, reserved, "degraded: the whole reservation");
    used += offline;
    // Redis comes back after the lease would have expired.
    tokio::time::sleep(MS(2_000)).await;
    drop(stopped);
    common::node::rejoined(&ra, &a).await;
    for q in [&b, &a, &b] {
        used += drain(q).await;
    }
    assert!(
        used <= limit,
        "{used} granted in a window of {limit} ({offline} offline)"
    );
}

/// A call whose future is dropped (the caller's own timeout) after it took the express
/// lane's report: the report goes out again with the next call. Left "being reported" (as it
/// was, review helper-45), the reply that settled it was never applied, and the lane never
/// got its allowance back (had the call never run, the report would never have been made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_cancelled_call_does_not_keep_its_report_unsettled_for_good() {
    let Some(srv) = server() else { return };
    if !srv.owned() {
        skip("needs its own redis-server (SIGSTOP)");
        return;
    }
    let p = prefix("cancelled-report");
    let (_ra, a) = quota(
        cfg(&srv.url, &p, "a")
            .reserve_share_permille(200)
            .express(Some(Priority::P0), 4),
        100,
        MS(60_000),
    )
    .await;
    // The lane opens once a reply has anchored the window.
    let _ = go(a.try_acquire(1, Priority::P1).await.expect("anchor"));
    // The lane needs the subscription: wait for the first express grant.
    let start = std::time::Instant::now();
    while !a.acquire(1, Priority::P0).await.expect("P0").is_express() {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "express lane never opened"
        );
        tokio::time::sleep(MS(20)).await;
    }
    for _ in 0..2 {
        assert!(a.acquire(1, Priority::P0).await.expect("P0").is_express());
    }
    {
        let _stopped = srv.pause();
        // The caller gives up before the reply: the call (with the report of 3) is dropped.
        let r = tokio::time::timeout(MS(100), a.try_acquire(1, Priority::P1)).await;
        assert!(r.is_err(), "cancelled: {r:?}");
    }
    // Redis judged it (the report settled); later replies say so.
    tokio::time::sleep(MS(200)).await;
    a.renew().await.expect("renew");
    a.renew().await.expect("renew");
    // The server's record of a's lease (epoch:reserved:...) against what a counts as its own.
    let lease = srv
        .cmd(&format!("HGET {{{p}:core}}:l a"))
        .unwrap_or_default();
    let server_reserved: u64 = lease
        .split(':')
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let local = a.snapshot().await.expect("snap").reserved;
    eprintln!("server holds {server_reserved} for a ({lease:?}); a counts {local}");
    let mut express = 0;
    for _ in 0..4 {
        if a.acquire(1, Priority::P0).await.expect("P0").is_express() {
            express += 1;
        }
    }
    assert_eq!(
        express, 4,
        "every express grant was reported and settled: the lane's allowance of 4 is free"
    );
}

/// Process a, with a reservation (a fifth of the pool) and `tune`, and process b, without,
/// under `limit` a minute; neither has an express lane (so nothing is held back from a's
/// reservation, `keep` = 0).
async fn reserving_and_draining(
    srv: &RedisServer,
    p: &str,
    limit: u64,
    tune: impl FnOnce(RedisQuotaConfig) -> RedisQuotaConfig,
) -> ((RedisQuota, SharedQuota), (RedisQuota, SharedQuota)) {
    let a = quota(
        tune(
            cfg(&srv.url, p, "a")
                .reserve_share_permille(200)
                .express(None, 1),
        ),
        limit,
        MS(60_000),
    )
    .await;
    let b = quota(
        cfg(&srv.url, p, "b")
            .reserve_share_permille(0)
            .express(None, 1),
        limit,
        MS(60_000),
    )
    .await;
    (a, b)
}
