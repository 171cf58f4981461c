//! G7, crate-internal: a call Redis answered without running the script (a replica, which
//! refuses writes) is a lost link, but nothing of it was judged. The server is a real,
//! throwaway `redis-server`, made a replica of nothing.

use crate::test_server as server;
use crate::{QuotaDecision, QuotaSpec, RedisQuota, RedisQuotaConfig};
use resilience_core::governor::Priority;
use std::time::Duration;

/// The acquire was never run, so nothing of the reservation can have been paid for it: the
/// process spends offline from all of it. Counted as a lost reply that may have been paid
/// (as it was), the share was one grant smaller until the next reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_acquire_a_replica_refused_leaves_the_reservation_whole() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("makes its redis-server a replica: RESILIENCE_REDIS_URL is set");
    }
    let cfg = RedisQuotaConfig::new(&srv.url)
        .prefix(server::prefix("unrun"))
        .node("a")
        .timeouts(Duration::from_millis(500), Duration::from_millis(300));
    let r = RedisQuota::connect(cfg).await.expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(1_000, Duration::from_secs(3_600)))
        .await
        .expect("resource");
    q.renew().await.expect("renew");
    let before = q.state.local.lock().reserved();
    assert!(before > 1, "a reservation: {before}");
    let replica = srv.cmd("REPLICAOF 127.0.0.1 1").unwrap_or_default();
    assert!(replica.starts_with("+OK"), "{replica}");
    let offline = q.try_acquire(1, Priority::P1).await;
    assert!(matches!(offline, Ok(QuotaDecision::Go(_))), "{offline:?}");
    assert_eq!(q.state.local.lock().reserved(), before - 1);
}
