//! G7 against a real redis-server: an acquire still in flight when the link is given up for
//! lost (another call timed out) may yet be paid from the reservation, and its reply come
//! back and be used. Degraded spending must leave room for it (review helper-45). The test
//! pauses its own `redis-server` (SIGSTOP).

mod common;

use common::node::{cfg, quota, MS};
use common::server::{prefix, server, skip, RedisServer};
use resilience_core::governor::Priority;
use resilience_redis::{LinkState, QuotaDecision};

fn pid(srv: &RedisServer) -> String {
    let info = srv.cmd("INFO server").expect("info");
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .expect("process_id")
        .trim()
        .to_owned()
}

fn signal(pid: &str, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}

struct Paused(String);

impl Paused {
    fn stop(srv: &RedisServer) -> Self {
        let p = pid(srv);
        signal(&p, "-STOP");
        Self(p)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
    }
}

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
    let (ra, a) = quota(
        cfg(&srv.url, &p, "a")
            .timeouts(MS(500), MS(600))
            .reserve_share_permille(200)
            .express(None, 1),
        limit,
        MS(60_000),
    )
    .await;
    let (_rb, b) = quota(
        cfg(&srv.url, &p, "b")
            .reserve_share_permille(0)
            .express(None, 1),
        limit,
        MS(60_000),
    )
    .await;
    let reserved = a.snapshot().await.expect("snap").reserved;
    assert!(reserved >= 10, "a's reservation: {reserved}");
    let mut used = 0u64;
    // b takes the whole pool.
    while let QuotaDecision::Go(_) = b.try_acquire(1, Priority::P1).await.expect("b") {
        used += 1;
    }
    assert_eq!(used, limit - reserved);
    let stopped = Paused::stop(&srv);
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
async fn drain(q: &resilience_redis::SharedQuota) -> u64 {
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
    let (ra, a) = quota(
        cfg(&srv.url, &p, "a")
            .lease_ttl(MS(1_500))
            .reserve_share_permille(200)
            .express(None, 1),
        limit,
        MS(60_000),
    )
    .await;
    let (_rb, b) = quota(
        cfg(&srv.url, &p, "b")
            .reserve_share_permille(0)
            .express(None, 1),
        limit,
        MS(60_000),
    )
    .await;
    let mut used = drain(&b).await;
    a.renew().await.expect("renew");
    let reserved = a.snapshot().await.expect("snap").reserved;
    assert_eq!(used + reserved, limit);
    let stopped = Paused::stop(&srv);
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
