//! G7: a clean exit gives every reservation back at once (`RedisQuota::shutdown`); one that
//! cannot reach Redis says so.

mod common;

use common::node::{cfg, go, quota, rejoined, unreserved, MS};
use common::server::{prefix, server};
use resilience_core::governor::Priority;
use resilience_redis::{QuotaSpec, Settled};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_shutdown_returns_the_reservation_of_every_resource_at_once() {
    let Some(srv) = server() else { return };
    let p = prefix("shutdown");
    let (r, core) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(500),
        100,
        MS(60_000),
    )
    .await;
    let search = r
        .resource("search", QuotaSpec::new(30, MS(60_000)))
        .await
        .expect("resource");
    let _ = go(core.try_acquire(1, Priority::P1).await.expect("acquire"));
    for q in [&core, &search] {
        let s = q.snapshot().await.expect("snapshot");
        assert!(s.reserved > 0 && s.members == 1, "{s:?}");
    }
    assert_eq!(r.shutdown().await.expect("shutdown"), Settled::Applied);
    // Seen from another process: nothing reserved, nobody a member, the pools whole (less
    // the grant still in flight).
    let (rb, b) = unreserved(&srv.url, &p, "b").await;
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reserved_total, s.held), (99, 0, 0), "{s:?}");
    let search_b = rb
        .resource("search", QuotaSpec::new(30, MS(60_000)))
        .await
        .expect("resource");
    let s = search_b.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reserved_total, s.held), (30, 0, 0), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_shutdown_that_cannot_reach_redis_says_nothing_was_given_up() {
    let Some(srv) = server() else { return };
    let p = prefix("shutdown-cut");
    let proxy = common::proxy::Proxy::start(&srv.url).await;
    let (r, a) = quota(
        cfg(&proxy.url, &p, "a").reserve_share_permille(500),
        100,
        MS(60_000),
    )
    .await;
    let _ = go(a.try_acquire(1, Priority::P1).await.expect("anchor"));
    proxy.cut();
    assert_eq!(r.shutdown().await.expect("shutdown"), Settled::Local);
    proxy.restore();
    rejoined(&r, &a).await;
    let s = a.snapshot().await.expect("snapshot");
    assert!(s.reserved > 0 && s.members == 1, "still held: {s:?}");
}
