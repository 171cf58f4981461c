//! G7 + G8, crate-internal: the shared rules' counts rebuilt from the processes' reports
//! after Redis lost its data, with grants the public API cannot stage: a report whose newest
//! buckets are ahead of the merging server's clock (a failover to a host whose clock is
//! behind), and a grant whose reply its process has not read yet. The server is a real,
//! throwaway `redis-server`.

use crate::pace_log::PendingAsk;
use crate::pacing::Ask;
use crate::script::{self, Op};
use crate::test_server::{self as server, RedisServer};
use crate::{QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig};
use crate::{QuotaWait, SharedQuota};
use resilience_core::clock::{BootClock, Clock};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use resilience_core::sleep::{AsyncSleeper, SleepFuture, TokioSleeper};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A process under a shared rule of 10 creations a minute, on a server this test may flush.
async fn creator(srv: &RedisServer, test: &str) -> (RedisQuota, SharedQuota) {
    creator_sleeping_with(srv, test, Arc::new(TokioSleeper)).await
}

/// [`creator`], whose background tasks and waits sleep with `sleeper`.
async fn creator_sleeping_with(
    srv: &RedisServer,
    test: &str,
    sleeper: Arc<dyn AsyncSleeper>,
) -> (RedisQuota, SharedQuota) {
    let cfg = RedisQuotaConfig::new(&srv.url)
        .prefix(server::prefix(test))
        .node("a")
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .reserve_share_permille(0);
    let r = RedisQuota::connect_with(cfg, Arc::new(BootClock::new()), sleeper)
        .await
        .expect("connect");
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
    (r, q)
}

/// Redis loses its data; `q` creates until refused past the rebuild (its first call is
/// asked for the report and merges it). The creations granted, and the refusal.
async fn create_after_a_loss(srv: &RedisServer, q: &SharedQuota) -> (u32, QuotaWait) {
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    create_until_refused(q).await
}

/// `q` creates until refused past the rebuild: the creations granted, and the refusal.
async fn create_until_refused(q: &SharedQuota) -> (u32, QuotaWait) {
    let (t, mut granted) = (Instant::now(), 0);
    loop {
        match q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
        {
            Ok(QuotaDecision::Go(_)) => granted += 1,
            Ok(QuotaDecision::Wait(w)) if w.reason == QuotaWaitReason::Recovering => {
                assert!(t.elapsed() < Duration::from_secs(10), "never rebuilt");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(QuotaDecision::Wait(w)) => return (granted, w),
            Err(e) => panic!("{e}"),
        }
    }
}

/// The counts of buckets ahead of the server's clock go into its newest bucket: dropped,
/// they would let the window be spent again (here: 9 of a rule of 10 creations a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_ahead_of_the_servers_clock_still_counts() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let (_r, q) = creator(&srv, "pace-rebuild-ahead").await;
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
    let (granted, wait) = create_after_a_loss(&srv, &q).await;
    assert_eq!(
        (granted, wait.reason),
        (0, QuotaWaitReason::Paced),
        "{wait:?}"
    );
}

/// Under 10 creations a minute: 5 logged, a 6th granted but its reply not read, then Redis
/// loses its data. The report counts the 6th at the merge: 4 more, not 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_grant_whose_reply_was_not_read_counts_in_the_rebuilt_rule() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let (_r, q) = creator(&srv, "pace-pending").await;
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
    let (granted, wait) = create_after_a_loss(&srv, &q).await;
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
    assert_eq!(granted, 4, "10 - 5 logged - 1 not yet read");
    pending.settle(Some(reply.now_ms));
}

/// A sleeper that never wakes: the background tasks never get past their first sleep (no
/// heartbeat, no reconnection), so a broken link stays broken.
#[derive(Debug)]
struct NeverWakes;

impl AsyncSleeper for NeverWakes {
    fn sleep(&self, _: Duration) -> SleepFuture {
        Box::pin(std::future::pending())
    }
}

/// Asks made while there is no connection were never judged: nothing of them counts in a
/// later report. Given up on (as they were, review helper-40), each try during an outage
/// counted as a grant in the rebuilt rule counts for a whole span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_an_ask_never_sent_counts_in_no_report() {
    let Some(srv) = server::server() else { return };
    let (_r, q) = creator_sleeping_with(&srv, "pace-unsent", Arc::new(NeverWakes)).await;
    let (_, generation) = q.inner.link.current().expect("connected");
    q.inner.link.broken(generation);
    for _ in 0..3 {
        let refused = q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await;
        assert!(!matches!(refused, Ok(QuotaDecision::Go(_))), "{refused:?}");
    }
    let log = q.state.pace_log.as_ref().expect("log").lock();
    assert!(!log.due(q.inner.clock.now(), None), "an unsent ask counts");
}

/// Under 10 creations a minute: 5 granted, then Redis loses its data. The process's report is
/// merged, but its reply is lost, and the outage outlasts the lease that report made (it is
/// reaped). Back, the process reports again: merged once only, 5 more creations, not 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_whose_reply_was_lost_is_merged_once() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let (_r, q) = creator(&srv, "pace-merged-once").await;
    for _ in 0..5 {
        let d = q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await;
        assert!(matches!(d, Ok(QuotaDecision::Go(_))), "{d:?}");
    }
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    // The report goes out and is merged (it made a lease); its reply never comes back.
    let rules = q.state.fixed.pacing.as_deref().expect("rules");
    let log =
        q.state
            .pace_log
            .as_ref()
            .expect("log")
            .lock()
            .report(rules, None, q.inner.clock.now());
    let mut view = q.state.local.lock().view(0);
    view.pace_due = true;
    let (mut conn, _) = q.inner.link.current().expect("connected");
    let merged = script::call(&mut conn, &q.state.fixed, &view, &Op::PaceReport { log })
        .await
        .expect("call")
        .expect("reply");
    assert_ne!(merged.epoch, 0, "{merged:?}");
    // That lease is reaped before the process is back.
    let f = &q.state.fixed;
    for cmd in [
        format!("HDEL {} a", f.keys[1]),
        format!("ZREM {} a", f.keys[2]),
    ] {
        assert!(srv.cmd(&cmd).is_some_and(|r| r.trim() == ":1"), "{cmd}");
    }
    let (granted, wait) = create_until_refused(&q).await;
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
    assert_eq!(granted, 5, "10 - the 5 reported, counted once");
}
