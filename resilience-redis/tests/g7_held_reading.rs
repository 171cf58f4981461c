//! G5 + G7: the reservation of a degraded process that never comes back is held (it may have
//! been cut off and spending it), but only until a reading can count what it spent: a call
//! granted a call bound after its lease ran out.

mod common;

use common::node::{cfg, go, MS};
use common::proxy::Proxy;
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaDecision, QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use std::time::Duration;

const LIMIT: u64 = 100;

async fn node(c: RedisQuotaConfig) -> (RedisQuota, SharedQuota) {
    // A call bound of 1 s: calls land within 1.25 s (the slots' five widths).
    let r = RedisQuota::connect(c.call_bound(MS(1_000)))
        .await
        .expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(LIMIT, Duration::from_secs(60)))
        .await
        .expect("resource");
    (r, q)
}

/// What the API says after `used` calls.
fn reading(used: u64) -> Observation {
    Observation::new(200)
        .with_limit(LIMIT)
        .with_remaining(LIMIT - used)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_reading_after_a_lost_holder_stopped_gives_the_rest_of_its_share_back() {
    let Some(srv) = server() else { return };
    let p = prefix("held-reading");
    let proxy = Proxy::start(&srv.url).await;
    let (_ra, a) = node(
        cfg(&proxy.url, &p, "a")
            .reserve_share_permille(500)
            .lease_ttl(MS(600)),
    )
    .await;
    let (_rb, b) = node(cfg(&srv.url, &p, "b").reserve_share_permille(0)).await;
    let mut used = 0;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("anchor"));
    used += 1;
    a.observe(Some(g), &reading(used)).await.expect("observe");
    let share = a.snapshot().await.expect("snapshot").reserved;
    assert!(share >= 10, "{share}");
    // Cut off for good: it spends 5 of its share offline, then its lease runs out.
    proxy.cut();
    let _ = a.try_acquire(1, Priority::P1).await; // notices the loss
    let mut offline = 0;
    while offline < 5 {
        if let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
            assert!(g.is_offline(), "{g:?}");
            offline += 1;
            used += 1;
        }
    }
    tokio::time::sleep(MS(900)).await;
    let s = b.snapshot().await.expect("snapshot"); // reaps a's lease
    assert_eq!(
        (s.members, s.held),
        (1, share),
        "held, not re-granted: {s:?}"
    );

    // A call granted before a's calls must have landed: its reading may not count them.
    let g1 = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    used += 1;
    b.observe(Some(g1), &reading(used)).await.expect("observe");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(
        (s.held, s.pool),
        (share, LIMIT - used - share),
        "still held: {s:?}"
    );

    // A call bound later: the reading counts all a spent, and the rest of its share is left.
    tokio::time::sleep(MS(1_300)).await;
    let g2 = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    used += 1;
    b.observe(Some(g2), &reading(used)).await.expect("observe");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!((s.held, s.pool), (0, LIMIT - used), "{s:?}");
}
