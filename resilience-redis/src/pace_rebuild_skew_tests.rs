//! G7 + G8, crate-internal: a report whose newest buckets are ahead of the clock of the Redis
//! that merges it (a failover to a host whose clock is behind). Injecting such grants into
//! the log needs the crate's internals; the server is a real, throwaway `redis-server`.

use crate::pacing::Ask;
use crate::test_server as server;
use crate::{QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig};
use resilience_core::clock::Clock;
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use std::time::{Duration, Instant};

/// The counts of buckets ahead of the server's clock go into its newest bucket: dropped,
/// they would let the window be spent again (here: 9 of a rule of 10 creations a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_ahead_of_the_servers_clock_still_counts() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = server::prefix("pace-rebuild-ahead");
    let cfg = RedisQuotaConfig::new(&srv.url)
        .prefix(&p)
        .node("a")
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .reserve_share_permille(0);
    let r = RedisQuota::connect(cfg).await.expect("connect");
    let pacing = Pacing {
        windows: vec![WindowRule::new(
            "creates",
            Selector::Creates,
            Measure::Requests,
            10,
            Duration::from_secs(60),
        )],
        ..Pacing::default()
    };
    let spec = QuotaSpec::new(1_000_000, Duration::from_secs(3_600)).shared_pacing(pacing);
    let q = r.resource("core", spec).await.expect("resource");
    let create = Request::create();
    let first = match q.try_acquire_request(&create, Priority::P1).await {
        Ok(QuotaDecision::Go(g)) => g,
        other => panic!("expected a grant: {other:?}"),
    };
    // Nine more, logged 30 s (five of the rule's 6 s buckets) ahead of this server's clock.
    let rules = q.state.fixed.pacing.as_deref().expect("rules");
    let ask = Ask::of(&create, Some(rules));
    let now = q.inner.clock.now();
    let log = q.state.pace_log.as_ref().expect("log");
    for _ in 0..9 {
        log.lock()
            .record(rules, &ask, 1, first.granted_at_ms() + 30_000, now);
    }
    // Redis loses its data; the next call is asked for the report and merges it.
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    let t = Instant::now();
    let wait = loop {
        match q.try_acquire_request(&create, Priority::P1).await {
            Ok(QuotaDecision::Wait(w)) if w.reason == QuotaWaitReason::Recovering => {
                assert!(t.elapsed() < Duration::from_secs(10), "never rebuilt");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(QuotaDecision::Wait(w)) => break w,
            other => panic!("granted past a full rule after the loss: {other:?}"),
        }
    };
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
}
