//! G7 + G8, crate-internal: a grant whose reply has not reached its process when that
//! process reports its shared-rule log after a data loss. Holding a reply back needs the
//! crate's internals; the server is a real, throwaway `redis-server`.

use crate::pace_log::PendingAsk;
use crate::pacing::Ask;
use crate::script::{self, Op};
use crate::test_server as server;
use crate::{QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use std::time::{Duration, Instant};

/// Under 10 creations a minute: 5 logged, a 6th granted but its reply not read, then Redis
/// loses its data. The report counts the 6th at the merge: 4 more, not 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_grant_whose_reply_was_not_read_counts_in_the_rebuilt_rule() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = server::prefix("pace-pending");
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
    for _ in 0..5 {
        let d = q.try_acquire_request(&create, Priority::P1).await;
        assert!(matches!(d, Ok(QuotaDecision::Go(_))), "{d:?}");
    }
    // The 6th is judged and granted; its reply is "still on its way": not settled.
    let rules = q.state.fixed.pacing.as_deref().expect("rules");
    let log = q.state.pace_log.as_ref().expect("log");
    let ask = Ask::of(&create, Some(rules));
    let pending = PendingAsk::send(log, rules, &*q.inner.clock, &ask, 1);
    let op = Op::Acquire {
        cost: 1,
        priority: 1,
        ask,
        pending: Some(pending.id()),
    };
    let Ok(reply) = q.inner.call(&q.state, op).await else {
        panic!("the 6th call failed")
    };
    assert_eq!(reply.status, script::GO, "{reply:?}");
    // Redis loses its data; the next call is asked for the report and merges it.
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    let (t, mut granted) = (Instant::now(), 0);
    let wait = loop {
        match q.try_acquire_request(&create, Priority::P1).await {
            Ok(QuotaDecision::Go(_)) => granted += 1,
            Ok(QuotaDecision::Wait(w)) if w.reason == QuotaWaitReason::Recovering => {
                assert!(t.elapsed() < Duration::from_secs(10), "never rebuilt");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(QuotaDecision::Wait(w)) => break w,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
    assert_eq!(granted, 4, "10 - 5 logged - 1 not yet read");
    pending.settle(Some(reply.now_ms));
}
