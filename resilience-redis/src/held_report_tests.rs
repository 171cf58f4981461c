//! G7, crate-internal: what a lease ended live holds back (a process refused for want of the
//! shared rules) against the reports of its holder. The calls are sent as the holder would
//! after a lost reply, which needs the script's own call; the server is a real, throwaway
//! `redis-server`.

use crate::script::{self, Op, View};
use crate::test_server as server;
use crate::{QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use resilience_core::governor::{Pacing, Priority, Selector, WindowRule};
use std::time::Duration;

async fn node(url: &str, p: &str, name: &str, spec: QuotaSpec) -> (RedisQuota, SharedQuota) {
    let cfg = RedisQuotaConfig::new(url)
        .prefix(p)
        .node(name)
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .lease_ttl(Duration::from_millis(1_500));
    let r = RedisQuota::connect(cfg).await.expect("connect");
    let q = r.resource("core", spec).await.expect("resource");
    (r, q)
}

/// A renewal of `q`'s lease `epoch` reporting `spent` units spent offline.
async fn renew(q: &SharedQuota, epoch: u64, spent: u64) -> i64 {
    let (mut conn, _) = q.inner.link.current().expect("connected");
    let view = View {
        epoch,
        offline_spent: spent,
        ..View::default()
    };
    let reply = script::call(&mut conn, &q.state.fixed, &view, &Op::Renew)
        .await
        .expect("call")
        .expect("reply");
    reply.status
}

/// Degraded mode: refused, the holder's lease ends live and its whole reservation is held.
/// If that reply is lost, the holder spends its reservation offline and reports it before
/// the lease would have expired: that report is settled at once. Dropped (as it was), the
/// held share went back to the pool at the lease's expiry, and the quota was spent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_before_an_ended_lease_expires_is_settled() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-report");
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    let (_ru, u) = node(&srv.url, &p, "u", plain.clone()).await;
    let epoch = u.snapshot().await.expect("u").epoch;
    let reserved = u.snapshot().await.expect("u").reserved;
    assert!(reserved > 0, "u holds a reservation");
    let rules = Pacing {
        windows: vec![WindowRule::new(
            "all",
            Selector::All,
            resilience_core::governor::Measure::Requests,
            100,
            Duration::from_secs(60),
        )],
        ..Pacing::default()
    };
    let (_rp, paced) = node(&srv.url, &p, "p", plain.shared_pacing(rules)).await;
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(renew(&u, epoch, 0).await, script::PACED_ELSEWHERE);
    let refused = paced.snapshot().await.expect("p");
    assert!(refused.held >= reserved, "{refused:?}");
    // The lost reply: u spent all of it offline, and says so before the lease's expiry.
    assert_eq!(renew(&u, epoch, reserved).await, script::PACED_ELSEWHERE);
    let reported = paced.snapshot().await.expect("p");
    assert_eq!(reported.held, refused.held - reserved, "{reported:?}");
    // Past the expiry, nothing of it comes back to the pool.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(renew(&u, epoch, 0).await, script::PACED_ELSEWHERE);
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert!(
        after.pool <= reported.pool,
        "spent twice: {after:?} {reported:?}"
    );
}
