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
    creating(cfg, sleeper).await
}

/// A process configured with `cfg`, under the shared rule of 10 creations a minute.
async fn creating(
    cfg: RedisQuotaConfig,
    sleeper: Arc<dyn AsyncSleeper>,
) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect_with(cfg, Arc::new(BootClock::new()), sleeper)
        .await
        .expect("connect");
    let spec =
        QuotaSpec::new(1_000_000, Duration::from_secs(3_600)).shared_pacing(creates_per_minute());
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
    report_unheard_after_a_loss(&srv, &q).await;
    let (granted, wait) = create_until_refused(&q).await;
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
    assert_eq!(granted, 5, "10 - the 5 reported, counted once");
}

/// [`creator`] named `node`.
async fn creator_named(srv: &RedisServer, prefix: &str, node: &str) -> (RedisQuota, SharedQuota) {
    creator_named_ttl(srv, prefix, node, LEASE).await
}

/// The default lease TTL.
const LEASE: Duration = Duration::from_secs(120);

/// [`creator_named`] with a lease TTL of `ttl`.
async fn creator_named_ttl(
    srv: &RedisServer,
    prefix: &str,
    node: &str,
    ttl: Duration,
) -> (RedisQuota, SharedQuota) {
    let cfg = RedisQuotaConfig::new(&srv.url)
        .prefix(prefix)
        .lease_ttl(ttl)
        .node(node)
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .reserve_share_permille(0);
    creating(cfg, Arc::new(TokioSleeper)).await
}

/// One create: Some(true) granted, Some(false) refused by the rule, None any other wait.
async fn create_once(q: &SharedQuota) -> Option<bool> {
    match q
        .try_acquire_request(&Request::create(), Priority::P1)
        .await
    {
        Ok(QuotaDecision::Go(_)) => Some(true),
        Ok(QuotaDecision::Wait(w)) if w.reason == QuotaWaitReason::Paced => Some(false),
        Ok(QuotaDecision::Wait(_)) => None,
        Err(e) => panic!("{e}"),
    }
}

/// The processes create in turn until each is refused by the rule: the creations granted.
async fn create_in_turn_until_paced(qs: &[&SharedQuota]) -> u32 {
    let (t, mut granted, mut done) = (Instant::now(), 0, vec![false; qs.len()]);
    while done.iter().any(|d| !d) {
        assert!(t.elapsed() < Duration::from_secs(10), "never rebuilt");
        for (i, q) in qs.iter().enumerate() {
            if done[i] {
                continue;
            }
            match create_once(q).await {
                Some(true) => granted += 1,
                Some(false) => done[i] = true,
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
    granted
}

/// Evicts the shared rules' counts (as a `volatile-*` maxmemory policy may).
fn evict_counts(srv: &RedisServer, q: &SharedQuota) {
    let cmd = format!("DEL {}", q.state.fixed.keys[5]);
    assert!(srv.cmd(&cmd).is_some_and(|r| r.trim() == ":1"), "{cmd}");
}

/// Review helper-44 F1. Under 10 creations a minute, a and b create 3 each; Redis loses its data;
/// a reports (the pool stays closed for b); then the rule counts are evicted; then b, whose
/// lease is of the lost state, reports. Its 'pm' skips the eviction check (`not lost`) and
/// writes the counts back with their expiry, so the loss of a's merged 3 is never seen:
/// a is never asked again, and 7 more creations pass instead of 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_lost_leases_report_does_not_hide_evicted_counts() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let ((_ra, a), (_rb, b)) = evicted_after_a_loss(&srv, "pace-r44-hide", LEASE).await;
    let granted = create_in_turn_until_paced(&[&b, &a]).await;
    assert_eq!(granted, 4, "10 - a's 3 - b's 3");
}

/// Review helper-44 F2. Under 10 creations a minute, a and b create 3 each; Redis loses its data;
/// a reports; the counts are evicted, a sees it and reports again. b, whose lease is of the
/// lost state, then reports: merged as a lost lease's report, it is not marked as reported
/// for the eviction (`s.pr`), so its next call is asked again and its 3 count twice (1
/// more creation instead of 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_lost_leases_report_counts_for_an_eviction_too() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let ((_ra, a), (_rb, b)) = evicted_after_a_loss(&srv, "pace-r44-twice", LEASE).await;
    // a finds the counts gone (refused at the gate), then reports again (refused: b is
    // not back yet).
    assert_eq!(create_once(&a).await, None);
    assert_eq!(create_once(&a).await, None);
    let granted = create_in_turn_until_paced(&[&b, &a]).await;
    assert_eq!(granted, 4, "10 - a's 3 - b's 3");
}

/// Review helper-44 F1 (by a leave). As the test above, but b leaves instead of creating: the leave
/// merges its report of the lost lease without checking for the eviction either, and a's
/// merged 3 are lost for good (7 more creations instead of 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_lost_leases_leave_does_not_hide_evicted_counts() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    // The pool, closed until b rejoins (it never does: it leaves), opens after a lease TTL.
    let ttl = Duration::from_secs(3);
    let ((_ra, a), (_rb, b)) = evicted_after_a_loss(&srv, "pace-r44-leave", ttl).await;
    let left = b.leave().await;
    assert!(left.is_ok(), "{left:?}");
    let granted = create_in_turn_until_paced(&[&a]).await;
    assert_eq!(granted, 4, "10 - a's 3 - b's 3");
}

/// Review helper-44, a check of b789a77: a node marked `s.lm` whose counts are then evicted is still
/// asked for its report again (`s.pr`): 5 more creations, not 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_merged_node_reports_again_after_an_eviction() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let (_r, q) = creator(&srv, "pace-r44-lm-evicted").await;
    for _ in 0..5 {
        assert_eq!(create_once(&q).await, Some(true));
    }
    report_unheard_after_a_loss(&srv, &q).await;
    evict_counts(&srv, &q);
    let (granted, wait) = create_until_refused(&q).await;
    assert_eq!(wait.reason, QuotaWaitReason::Paced, "{wait:?}");
    assert_eq!(granted, 5, "10 - the 5 reported again after the eviction");
}

/// Review helper-44, a check of 1eadcf3/aa16a0b: a process restarted under the same node name, and a
/// stale call for its older lease after a renewal, wipe nothing (the state keeps its id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_restart_same_node_and_stale_calls_keep_the_state() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("r44-restart");
    let (r1, q1) = creator_named(&srv, &p, "a").await;
    let mut grants = vec![];
    for _ in 0..3 {
        match q1.try_acquire_request(&Request::read(), Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => grants.push(g),
            other => panic!("{other:?}"),
        }
    }
    let id = q1.state.local.lock().state;
    drop(q1);
    drop(r1);
    let (_r2, q2) = creator_named(&srv, &p, "a").await;
    let mut later = vec![];
    for _ in 0..3 {
        match q2.try_acquire_request(&Request::read(), Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => later.push(g),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        q2.state.local.lock().state,
        id,
        "the restart wiped the state"
    );
    // The old incarnation's grants, settled by the new one (stale: another lease).
    for g in grants {
        let _ = q2.release(g).await;
    }
    let _ = q2.renew().await;
    for g in later {
        let _ = q2.release(g).await;
    }
    let _ = q2.renew().await;
    assert_eq!(
        q2.state.local.lock().state,
        id,
        "a stale call wiped the state"
    );
}

/// Redis loses its data; `q`'s report goes out and is merged (it made a lease), but its
/// reply never comes back, and that lease is reaped before the process is back.
async fn report_unheard_after_a_loss(srv: &RedisServer, q: &SharedQuota) {
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
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
    let f = &q.state.fixed;
    for cmd in [
        format!("HDEL {} {}", f.keys[1], f.node),
        format!("ZREM {} {}", f.keys[2], f.node),
    ] {
        assert!(srv.cmd(&cmd).is_some_and(|r| r.trim() == ":1"), "{cmd}");
    }
}

/// Under 10 creations a minute, a and b create 3 each; Redis loses its data; a reports
/// (merged) and waits for b, whose lease is of the lost state; then the rule counts are
/// evicted. Leases of `ttl`.
async fn evicted_after_a_loss(
    srv: &RedisServer,
    test: &str,
    ttl: Duration,
) -> ((RedisQuota, SharedQuota), (RedisQuota, SharedQuota)) {
    let p = server::prefix(test);
    let (ra, a) = creator_named_ttl(srv, &p, "a", ttl).await;
    let (rb, b) = creator_named_ttl(srv, &p, "b", ttl).await;
    for _ in 0..3 {
        for q in [&a, &b] {
            assert_eq!(create_once(q).await, Some(true));
        }
    }
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    assert_eq!(
        create_once(&a).await,
        None,
        "the pool stays closed until b is back"
    );
    evict_counts(srv, &a);
    ((ra, a), (rb, b))
}

/// 10 creations a minute, shared.
pub(crate) fn creates_per_minute() -> Pacing {
    Pacing {
        windows: vec![WindowRule::new(
            "creates",
            Selector::Creates,
            Measure::Requests,
            10,
            Duration::from_secs(60),
        )],
        ..Pacing::default()
    }
}
