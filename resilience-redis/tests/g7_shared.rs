//! G7 against a real redis-server, in one process (several nodes where it matters).

mod common;

use common::node::{cfg, go, quota, unix_now, unreserved, MS};
use common::server::{prefix, server, skip};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{
    LinkState, OnLoss, QuotaDecision, QuotaWaitReason, RedisQuota, RedisQuotaError, Settled,
    SharedQuota, WaitPolicy,
};
use std::time::{Duration, Instant};

#[tokio::test]
async fn g7_unreachable_redis_at_start_names_the_url_without_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let url = format!("redis://alice:s3cret@127.0.0.1:{port}");
    let e = RedisQuota::connect(cfg(&url, "p", "n")).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, RedisQuotaError::Connect { .. }), "{e:?}");
    assert!(
        text.contains(&format!("redis://alice:***@127.0.0.1:{port}")),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_acquire_is_one_evalsha_round_trip_and_survives_a_script_flush() {
    let Some(srv) = server() else { return };
    let (_r, q) = quota(cfg(&srv.url, &prefix("rt"), "a"), 1_000, MS(60_000)).await;
    if srv.owned() {
        srv.cmd("CONFIG RESETSTAT").expect("resetstat");
    }
    let before = srv.calls("evalsha");
    for _ in 0..50 {
        let _ = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
    }
    if srv.owned() {
        assert_eq!(srv.calls("evalsha") - before, 50, "one EVALSHA per acquire");
        assert_eq!(
            srv.calls("eval"),
            0,
            "never the full script on the hot path"
        );
        // NOSCRIPT (e.g. a restarted or flushed Redis): loaded again, the call still succeeds.
        srv.cmd("SCRIPT FLUSH").expect("flush");
        let _ = go(q
            .try_acquire(1, Priority::P1)
            .await
            .expect("acquire after flush"));
        assert_eq!(srv.calls("script|load"), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_quota_of_a_window_is_never_exceeded_and_resets_on_server_time() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("win"), "a").reserve_share_permille(0);
    let (_r, q) = quota(c, 5, MS(400)).await;
    let grants: Vec<_> = futures_all(&q, 5).await;
    let window = grants[0].window();
    assert!(grants
        .iter()
        .all(|g| g.window() == window && g.reset_at_ms() == grants[0].reset_at_ms()));
    let QuotaDecision::Wait(w) = q.try_acquire(1, Priority::P1).await.expect("ask") else {
        panic!("a sixth grant in one window");
    };
    assert_eq!(w.reason, QuotaWaitReason::Exhausted);
    assert!(w.delay <= MS(400), "{w:?}");
    // Their calls came back before the reset (else they would count in the next window).
    for g in grants {
        q.observe(Some(g), &Observation::new(200))
            .await
            .expect("observe");
    }
    tokio::time::sleep(w.delay + MS(20)).await;
    let g = go(q.try_acquire(1, Priority::P1).await.expect("next window"));
    assert!(g.window() > window, "a new window after the server's reset");
}

async fn futures_all(q: &SharedQuota, n: usize) -> Vec<resilience_redis::QuotaGrant> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(go(q.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_a_rate_limit_seen_by_one_node_blocks_every_node() {
    let Some(srv) = server() else { return };
    let p = prefix("block");
    let (_ra, a) = quota(cfg(&srv.url, &p, "a"), 100, MS(60_000)).await;
    let (_rb, b) = quota(cfg(&srv.url, &p, "b"), 100, MS(60_000)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let limited = Observation::from_headers(429, [("retry-after", "1")]);
    assert_eq!(
        a.observe(Some(g), &limited).await.expect("observe"),
        Settled::Applied
    );
    let QuotaDecision::Wait(w) = b.try_acquire(1, Priority::P1).await.expect("ask") else {
        panic!("b was not blocked");
    };
    assert_eq!(w.reason, QuotaWaitReason::Blocked);
    assert!(w.delay > MS(800) && w.delay <= MS(1_000), "{w:?}");
    // A retry executor's hint extends the block, never shortens it.
    b.note_retry_after(MS(100)).await.expect("block");
    let s = b.snapshot().await.expect("snapshot");
    assert!(s.blocked_for.is_some_and(|d| d > MS(700)), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_returned_quota_wakes_a_waiter_of_another_node_by_pubsub() {
    let Some(srv) = server() else { return };
    let p = prefix("wake");
    // A 30 s poll: only the pub/sub message can wake the waiter within the test's bound.
    let slow = WaitPolicy {
        poll: Duration::from_secs(30),
        ..WaitPolicy::default()
    };
    let ca = cfg(&srv.url, &p, "a").reserve_share_permille(0);
    let cb = cfg(&srv.url, &p, "b").reserve_share_permille(0).wait(slow);
    let (_ra, a) = quota(ca, 2, MS(60_000)).await;
    let (_rb, b) = quota(cb, 2, MS(60_000)).await;
    let g1 = go(a.try_acquire(1, Priority::P1).await.expect("1"));
    let _g2 = go(a.try_acquire(1, Priority::P1).await.expect("2"));
    let waiter = tokio::spawn(async move {
        let t = Instant::now();
        let g = b.acquire(1, Priority::P0).await;
        (g, t.elapsed())
    });
    tokio::time::sleep(MS(300)).await;
    assert_eq!(a.release(g1).await.expect("release"), Settled::Applied);
    let (g, waited) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("woken well before the 30 s poll")
        .expect("task");
    assert!(g.is_ok(), "{g:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_observed_headers_lower_the_shared_pool_and_leave_returns_the_reservation() {
    let Some(srv) = server() else { return };
    let p = prefix("obs");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(500),
        100,
        MS(60_000),
    )
    .await;
    let s = a.snapshot().await.expect("snapshot");
    assert!(s.reserved > 0 && s.pool + s.reserved == 100, "{s:?}");
    assert_eq!(a.leave().await.expect("leave"), Settled::Applied);
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reserved_total, s.members), (100, 0, 0), "{s:?}");
    // A node without a reservation reads the headers: the pool becomes what the API says
    // is left (less grants still in flight and reservations: none here).
    let (_rb, b) = unreserved(&srv.url, &p, "b").await;
    let g = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "10")]);
    assert_eq!(
        b.observe(Some(g), &reading).await.expect("observe"),
        Settled::Applied
    );
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reserved_total), (10, 0), "{s:?}");
}

/// A lease given up stays given up: the heartbeat does not renew it (that started a new
/// lease within one period, reservation and membership back); the next acquire does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_left_lease_is_not_renewed_by_the_heartbeat() {
    let Some(srv) = server() else { return };
    let p = prefix("left");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a")
            .reserve_share_permille(500)
            .lease_ttl(MS(600)),
        100,
        MS(60_000),
    )
    .await;
    assert_eq!(a.leave().await.expect("leave"), Settled::Applied);
    tokio::time::sleep(MS(700)).await; // three heartbeat periods
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reserved_total, s.members), (100, 0, 0), "{s:?}");
    let _ = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!(s.members, 1, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_cost_above_the_whole_limit_is_a_typed_error() {
    let Some(srv) = server() else { return };
    let (_r, q) = quota(cfg(&srv.url, &prefix("big"), "a"), 10, MS(60_000)).await;
    let e = q.try_acquire(11, Priority::P1).await.unwrap_err();
    assert!(
        matches!(
            e,
            RedisQuotaError::CostTooLarge {
                cost: 11,
                limit: 10,
                ..
            }
        ),
        "{e:?}"
    );
}

/// Two builds whose scripts lay the state out differently must not share a prefix: the
/// script refuses state stamped by another protocol with an error that names the key and
/// the fix, instead of misreading the other build's leases.
#[tokio::test]
async fn g7_state_of_another_protocol_version_is_refused_by_name() {
    let Some(srv) = server() else { return };
    let p = prefix("proto");
    let (_r, q) = quota(cfg(&srv.url, &p, "a"), 100, MS(60_000)).await;
    let _ = go(q
        .try_acquire(1, Priority::P1)
        .await
        .expect("this build's own state"));
    let key = format!("{{{p}:core}}:q");
    // Another build's MessagePack state, then a hash as builds up to protocol 4 kept it.
    let restamp = format!(
        "EVAL \"local s = cmsgpack.unpack(redis.call('GET', KEYS[1])) s.proto = 99 \
         redis.call('SET', KEYS[1], cmsgpack.pack(s))\" 1 {key}"
    );
    let cases = [
        (vec![restamp], "protocol 99", "builds differ"),
        (
            vec![format!("DEL {key}"), format!("HSET {key} proto 4")],
            "protocol 4 or older",
            "older build",
        ),
    ];
    for (cmds, held, why) in cases {
        for c in &cmds {
            let answer = srv.cmd(c).unwrap_or_default();
            assert!(!answer.starts_with('-'), "{c}: {answer}");
        }
        let e = q.try_acquire(1, Priority::P1).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, RedisQuotaError::Server { .. }), "{e:?}");
        for part in [
            "protocol mismatch",
            key.as_str(),
            &format!("holds {held} state"),
            "this build speaks 17",
            why,
            "another prefix",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_fail_closed_refuses_while_redis_is_down_and_rejoins_when_it_returns() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let c = cfg(&srv.url, &prefix("closed"), "a").on_loss(OnLoss::FailClosed);
    let (r, q) = quota(c, 100, MS(60_000)).await;
    let _ = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
    srv.kill();
    let e = q.try_acquire(1, Priority::P1).await.unwrap_err();
    assert!(matches!(e, RedisQuotaError::Unavailable { .. }), "{e:?}");
    assert!(e.to_string().contains(&srv.url), "{e}");
    assert_eq!(r.link_state(), LinkState::Closed);
    srv.restart();
    let t = Instant::now();
    loop {
        match q.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => break assert!(!g.is_offline()),
            Ok(QuotaDecision::Wait(w)) => tokio::time::sleep(w.delay.min(MS(50))).await,
            Err(RedisQuotaError::Unavailable { .. }) => tokio::time::sleep(MS(50)).await,
            Err(e) => panic!("{e}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10), "never rejoined");
    }
    assert_eq!(r.link_state(), LinkState::Connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_degraded_spends_exactly_its_reservation_while_redis_is_down() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let c = cfg(&srv.url, &prefix("degr"), "a").reserve_share_permille(200);
    let (r, q) = quota(c, 100, MS(60_000)).await;
    let reserved = q.snapshot().await.expect("snapshot").reserved;
    assert_eq!(reserved, 20);
    srv.kill();
    let mut offline = 0;
    loop {
        match q.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => {
                assert!(g.is_offline());
                offline += 1;
            }
            Err(RedisQuotaError::Unavailable { .. }) => break,
            other => panic!("{other:?}"),
        }
    }
    // The first acquire after the kill went out and got no reply: it may have been paid
    // from the reservation, so it is counted as spent (conservative), then served offline.
    assert_eq!(
        offline,
        reserved - 1,
        "the reservation less the lost call, nothing more"
    );
    assert_eq!(r.link_state(), LinkState::Degraded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_an_idle_holder_keeps_its_lease_through_the_heartbeat() {
    let Some(srv) = server() else { return };
    let p = prefix("beat");
    let ca = cfg(&srv.url, &p, "idle").lease_ttl(MS(600));
    let (_ra, a) = quota(ca, 100, MS(60_000)).await;
    let epoch = a.snapshot().await.expect("snapshot").epoch;
    let (_rb, b) = quota(cfg(&srv.url, &p, "busy"), 100, MS(60_000)).await;
    // Three TTLs of silence from "idle"; "busy" keeps calling (and would reap it).
    for _ in 0..18 {
        tokio::time::sleep(MS(100)).await;
        let _ = b.snapshot().await.expect("snapshot");
    }
    assert_eq!(b.snapshot().await.expect("snapshot").members, 2);
    assert_eq!(
        a.snapshot().await.expect("snapshot").epoch,
        epoch,
        "same lease"
    );
}

/// The reason of a refusal (panics on a grant).
fn refused(d: QuotaDecision) -> QuotaWaitReason {
    match d {
        QuotaDecision::Wait(w) => w.reason,
        QuotaDecision::Go(g) => panic!("expected a refusal, got {g:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_quota_returned_while_a_higher_priority_of_another_process_waits_goes_to_it() {
    let Some(srv) = server() else { return };
    let p = prefix("yield");
    // Waiters that ask again within 400 ms: how long lower priorities yield to them.
    let short = WaitPolicy {
        poll: MS(400),
        ..WaitPolicy::default()
    };
    let node = |n| {
        cfg(&srv.url, &p, n)
            .reserve_share_permille(0)
            .wait(short.clone())
    };
    let (_ra, a) = quota(node("a"), 3, MS(60_000)).await;
    let (_rb, b) = quota(node("b"), 3, MS(60_000)).await;
    let (_rc, c) = quota(node("c"), 3, MS(60_000)).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(go(c.try_acquire(1, Priority::P1).await.expect("c")));
    }

    // A P0 of process a is refused: the window is spent.
    let d = a.try_acquire(1, Priority::P0).await.expect("a P0");
    assert_eq!(refused(d), QuotaWaitReason::Exhausted);
    // c returns a unit. Another process's P2 and P1 ask first, and yield to a's waiter.
    let g = held.pop().expect("held");
    assert_eq!(c.release(g).await.expect("release"), Settled::Applied);
    for pr in [Priority::P2, Priority::P1] {
        match b.try_acquire(1, pr).await.expect("b") {
            QuotaDecision::Wait(w) => {
                assert_eq!(w.reason, QuotaWaitReason::Yielding, "{pr:?}");
                assert!(w.delay <= MS(400), "{w:?}");
            }
            QuotaDecision::Go(g) => panic!("{pr:?} of b took the unit a's P0 waits for: {g:?}"),
        }
    }
    let _a0 = go(a.try_acquire(1, Priority::P0).await.expect("a P0 again"));

    // Once the marks pass (nobody refused asks again), a P1 waits the same way, and only
    // lower priorities yield to it: a P2 does, a P0 does not.
    tokio::time::sleep(MS(450)).await;
    let d = b.try_acquire(1, Priority::P1).await.expect("b P1");
    assert_eq!(refused(d), QuotaWaitReason::Exhausted);
    let g = held.pop().expect("held");
    assert_eq!(c.release(g).await.expect("release"), Settled::Applied);
    let d = a.try_acquire(1, Priority::P2).await.expect("a P2");
    assert_eq!(refused(d), QuotaWaitReason::Yielding);
    let _a0 = go(a
        .try_acquire(1, Priority::P0)
        .await
        .expect("a P0, past a P1"));
    let g = held.pop().expect("held");
    assert_eq!(c.release(g).await.expect("release"), Settled::Applied);
    let b1 = go(b.try_acquire(1, Priority::P1).await.expect("b P1 again"));

    // With no higher priority waiting, a P2 is served.
    tokio::time::sleep(MS(450)).await;
    assert_eq!(b.release(b1).await.expect("release"), Settled::Applied);
    let _a2 = go(a.try_acquire(1, Priority::P2).await.expect("a P2 at last"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_spent_primary_quota_blocks_every_node_until_the_reset_reservations_included() {
    let Some(srv) = server() else { return };
    let p = prefix("spent");
    let node = |n| cfg(&srv.url, &p, n).reserve_share_permille(500);
    let (_ra, a) = quota(node("a"), 100, MS(60_000)).await;
    let (_rb, b) = quota(node("b"), 100, MS(60_000)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    let _ = go(b.try_acquire(1, Priority::P1).await.expect("b"));
    let s = b.snapshot().await.expect("snapshot");
    assert!(s.reserved > 0, "b holds a reservation: {s:?}");
    let unix = unix_now().as_secs();
    let reset = (unix + 30).to_string();
    // GitHub's primary limit: 403, remaining 0, the reset in 30 s.
    let spent = Observation::from_headers(
        403,
        [
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", reset.as_str()),
        ],
    );
    assert_eq!(
        a.observe(Some(g), &spent).await.expect("observe"),
        Settled::Applied
    );
    // Neither node pays from its reservation now: every such call would be rejected.
    for q in [&a, &b] {
        match q.try_acquire(1, Priority::P0).await.expect("ask") {
            QuotaDecision::Wait(w) => {
                assert_eq!(w.reason, QuotaWaitReason::Blocked);
                assert!(w.delay > MS(25_000) && w.delay <= MS(31_000), "{w:?}");
            }
            QuotaDecision::Go(g) => panic!("a grant into a spent quota: {g:?}"),
        }
    }
    // A 200 that reads 0 left is the same news.
    let p2 = prefix("spent-200");
    let (_rc, c) = quota(
        cfg(&srv.url, &p2, "c").reserve_share_permille(500),
        100,
        MS(60_000),
    )
    .await;
    let g = go(c.try_acquire(1, Priority::P1).await.expect("c"));
    let last = Observation::from_headers(
        200,
        [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", reset.as_str()),
        ],
    );
    assert_eq!(
        c.observe(Some(g), &last).await.expect("observe"),
        Settled::Applied
    );
    let d = c.try_acquire(1, Priority::P0).await.expect("ask");
    assert_eq!(refused(d), QuotaWaitReason::Blocked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_calls_sent_before_a_new_lease_was_heard_of_keep_it_not_churn_it() {
    let Some(srv) = server() else { return };
    let p = prefix("churn");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(500),
        100,
        MS(60_000),
    )
    .await;
    assert_eq!(a.leave().await.expect("leave"), Settled::Applied);
    // Eight acquires at once, all sent under the lease just given up: the first starts a
    // new lease, the other seven are the same process's and must keep it.
    let asks: Vec<_> = (0..8)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { a.try_acquire(1, Priority::P1).await })
        })
        .collect();
    let mut epochs = std::collections::BTreeSet::new();
    for t in asks {
        epochs.insert(go(t.await.expect("task").expect("acquire")).epoch());
    }
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!(
        epochs.len(),
        1,
        "one new lease, not one per call: {epochs:?}"
    );
    assert_eq!((s.members, s.held), (1, 0), "{s:?}");
    assert_eq!(s.pool + s.reserved_total + 8, 100, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_header_values_out_of_range_are_ignored_not_stored() {
    let Some(srv) = server() else { return };
    let p = prefix("wild");
    let (_r, a) = quota(cfg(&srv.url, &p, "a"), 100, MS(60_000)).await;
    let unix_ms = unix_now().as_millis().to_string();
    // A limit past 2^63 (it used to wrap negative: every acquire then too large) and a
    // reset in ms where seconds are meant (the window would never roll).
    let g = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let wild = Observation::from_headers(
        200,
        [
            ("x-ratelimit-limit", "9999999999999999999"),
            ("x-ratelimit-remaining", "50"),
            ("x-ratelimit-reset", unix_ms.as_str()),
        ],
    );
    assert_eq!(
        a.observe(Some(g), &wild).await.expect("observe"),
        Settled::Applied
    );
    let s = a.snapshot().await.expect("snapshot");
    assert_eq!(s.limit, 100, "{s:?}");
    assert!(s.reset_in.is_some_and(|r| r <= MS(60_000)), "{s:?}");
    let _ = go(a.try_acquire(1, Priority::P1).await.expect("still served"));
    // A block until a far-future date lasts a day at most.
    let g = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let far = Observation::from_headers(429, [("retry-after", "Fri, 01 Jan 2999 00:00:00 GMT")]);
    let _ = a.observe(Some(g), &far).await.expect("observe");
    let s = a.snapshot().await.expect("snapshot");
    let day = Duration::from_secs(86_400);
    assert!(
        s.blocked_for.is_some_and(|b| b > MS(1000) && b <= day),
        "{s:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_a_block_met_while_redis_was_lost_reaches_every_node_on_rejoin() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("replay");
    let (ra, a) = quota(cfg(&srv.url, &p, "a"), 100, MS(60_000)).await;
    let (rb, b) = quota(cfg(&srv.url, &p, "b"), 100, MS(60_000)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    srv.kill();
    // a meets a secondary limit while Redis is down: only a knows of it.
    let limited = Observation::from_headers(429, [("retry-after", "20")]);
    assert_eq!(
        a.observe(Some(g), &limited).await.expect("observe"),
        Settled::Local
    );
    srv.restart();
    let t = Instant::now();
    // Each node notices the loss on its next call (b has made none), then rejoins.
    for (r, q) in [(&ra, &a), (&rb, &b)] {
        let _ = q.snapshot().await;
        while r.link_state() != LinkState::Connected {
            tokio::time::sleep(MS(50)).await;
            let _ = q.snapshot().await;
            assert!(t.elapsed() < Duration::from_secs(10), "never rejoined");
        }
    }
    match b.try_acquire(1, Priority::P1).await.expect("ask") {
        QuotaDecision::Wait(w) => {
            assert_eq!(w.reason, QuotaWaitReason::Blocked);
            assert!(w.delay > MS(5_000) && w.delay <= MS(20_000), "{w:?}");
        }
        QuotaDecision::Go(g) => panic!("b was not told of a's block: {g:?}"),
    }
}
