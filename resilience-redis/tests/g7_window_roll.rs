//! G7 at a window's end: the window rolls no earlier than upstream's, and what was granted
//! in the old one and is still on its way counts against the new one (upstream counts a call
//! by when it arrives).

mod common;

use common::node::{cfg, go, offline_grant, quota, unix_now, MS};
use common::proxy::Proxy;
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{LinkState, QuotaDecision, QuotaSpec, RedisQuota, SharedQuota};
use std::time::{Duration, Instant};

async fn node(p: &str, limit: u64, window: Duration, url: &str) -> SharedQuota {
    let c = cfg(url, p, "a").reserve_share_permille(0).express(None, 1);
    let r = RedisQuota::connect(c).await.expect("connect");
    r.resource("core", QuotaSpec::new(limit, window))
        .await
        .expect("resource")
}

/// Upstream's window began at the first call's arrival, after the resource's first grant,
/// and its reset header (whole seconds) is up to 2 s later than the resource's own reset.
/// The window's last response is lost (no reading of 0). Taken only past 2 s (as it was),
/// the resource rolled first and granted a call into upstream's spent window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_window_does_not_roll_before_a_later_reset_header() {
    let Some(srv) = server() else { return };
    let limit = 5;
    let q = node(&prefix("late-reset"), limit, MS(3_000), &srv.url).await;
    let first = Instant::now();
    // Upstream's reset: 1-2 s after the resource's (its first grant + 3 s).
    let reset = (unix_now() + MS(4_000)).as_secs() + 1;
    let mut left = limit;
    for _ in 0..limit {
        let g = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
        left -= 1;
        if left > 0 {
            let reading = Observation::new(200)
                .with_limit(limit)
                .with_remaining(left)
                .with_header("x-ratelimit-reset", &reset.to_string());
            q.observe(Some(g), &reading).await.expect("observe");
        }
    }
    // Past the resource's own reset, before upstream's.
    tokio::time::sleep((first + MS(3_200)).saturating_duration_since(Instant::now())).await;
    assert!(unix_now().as_secs() < reset, "the test ran late");
    let d = q.try_acquire(1, Priority::P1).await.expect("acquire");
    assert!(matches!(d, QuotaDecision::Wait(_)), "rolled early: {d:?}");
    // Past upstream's reset: the new window.
    let wait = Duration::from_secs(reset).saturating_sub(unix_now()) + MS(100);
    tokio::time::sleep(wait).await;
    let _ = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
}

/// A call granted a moment before the reset reaches upstream after it, and counts in the new
/// window there. Rolled to the whole limit (as it was), the new window granted one too many
/// to the herd woken at the reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_still_on_its_way_at_the_roll_counts_in_the_new_window() {
    let Some(srv) = server() else { return };
    let limit = 10;
    let q = node(&prefix("roll-in-flight"), limit, MS(1_000), &srv.url).await;
    let first = Instant::now();
    let anchor = go(q.try_acquire(1, Priority::P1).await.expect("anchor"));
    q.observe(Some(anchor), &Observation::new(200))
        .await
        .expect("observe");
    tokio::time::sleep((first + MS(850)).saturating_duration_since(Instant::now())).await;
    let late = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
    tokio::time::sleep((first + MS(1_100)).saturating_duration_since(Instant::now())).await;
    // The new window: one less, and (with a pool to grant from) anchored at its first grant.
    let s = q.snapshot().await.expect("snapshot");
    assert_eq!((s.pool, s.reset_in), (limit - 1, None), "{s:?}");
    // The herd takes all it can before any of its responses.
    let mut herd = 0;
    while let QuotaDecision::Go(_) = q.try_acquire(1, Priority::P1).await.expect("acquire") {
        herd += 1;
        assert!(herd <= limit);
    }
    assert_eq!(
        herd,
        limit - 1,
        "the call on its way counts in the new window"
    );
    drop(late); // it arrives upstream now
}

/// Grants of the whole window (`on_way` of them still on their way at the roll, the rest
/// observed before it), then asks of `cost` after the reset: the new window's pool is too
/// small for them. Left unanchored (as it was: only a grant anchored a window), it granted
/// nothing, ever; anchored at the first refusal, it ends no earlier than a window after the
/// last of them may arrive (2.5 s), and the next one grants within 6 s.
async fn window_left_too_small_still_ends(p: &str, on_way: u64, cost: u32) {
    let Some(srv) = server() else { return };
    let limit = 5;
    let c = cfg(&srv.url, &prefix(p), "a")
        .reserve_share_permille(0)
        .express(None, 1)
        .call_bound(MS(2_000));
    let r = RedisQuota::connect(c).await.expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(limit, MS(1_000)))
        .await
        .expect("resource");
    let first = Instant::now();
    let mut grants = Vec::new();
    for i in 0..limit {
        let g = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
        if i < limit - on_way {
            q.observe(Some(g), &Observation::new(200))
                .await
                .expect("observe");
        } else {
            grants.push(g);
        }
    }
    tokio::time::sleep((first + MS(1_100)).saturating_duration_since(Instant::now())).await;
    for g in grants {
        q.observe(Some(g), &Observation::new(200))
            .await
            .expect("observe");
    }
    let s = q.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, limit - on_way, "on their way at the roll: {s:?}");
    let until = Instant::now() + MS(6_000);
    loop {
        if let QuotaDecision::Go(_) = q.try_acquire(cost, Priority::P1).await.expect("acquire") {
            break;
        }
        assert!(
            Instant::now() < until,
            "no grant of {cost} for 6 s after the roll"
        );
        tokio::time::sleep(MS(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_window_emptied_at_the_roll_by_calls_on_their_way_still_ends() {
    window_left_too_small_still_ends("roll-emptied", 5, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_window_left_too_small_for_every_ask_at_the_roll_still_ends() {
    window_left_too_small_still_ends("roll-too-small", 4, 2).await;
}

/// A process cut off just before the reset spends its reservation offline; its calls may
/// reach upstream after the reset and count in the new window, which the server, not hearing
/// of them, gives out whole (29 of 20). Offline spending stops a call bound (here 30 s,
/// the whole window) before the window ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_offline_spending_just_before_the_reset_does_not_land_in_the_next_window() {
    let Some(srv) = server() else { return };
    let p = prefix("offline-at-reset");
    let limit = 20;
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(10_000))
        .express(None, 1);
    let (ra, a) = quota(a_cfg, limit, MS(2_000)).await;
    let b_cfg = cfg(&srv.url, &p, "b").reserve_share_permille(0);
    let (_rb, b) = quota(b_cfg, limit, MS(2_000)).await;
    let t0 = Instant::now();
    let g = go(b.try_acquire(1, Priority::P1).await.expect("anchor")); // reset: t0 + 2 s
    b.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    let reserved = a.snapshot().await.expect("snapshot").reserved;
    assert!(reserved > 0);
    tokio::time::sleep((t0 + MS(1_700)).saturating_duration_since(Instant::now())).await;
    proxy.cut();
    let mut offline = 0;
    while Instant::now() < t0 + MS(1_950) && offline < reserved {
        match a.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) if g.is_offline() => offline += 1,
            _ => tokio::time::sleep(MS(20)).await,
        }
    }
    assert_eq!(ra.link_state(), LinkState::Degraded);
    // Those calls reach upstream after the reset (the test's worst case); b drains the new
    // window, before and after a's report.
    tokio::time::sleep((t0 + MS(2_100)).saturating_duration_since(Instant::now())).await;
    let new = drain(&b).await;
    proxy.restore();
    tokio::time::sleep(MS(500)).await;
    let _ = a.snapshot().await;
    let more = drain(&b).await;
    assert!(
        new + more + offline <= limit,
        "{new} + {more} granted and {offline} sent offline in a window of {limit}"
    );
}

/// A process cut off learns from a response it reads that the window ends sooner than it
/// was told (a header moved the reset while it was away, or Redis lost the state that
/// knew): its offline spending stops a call bound before that reset, not before the one it
/// was told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_offline_spending_stops_before_a_reset_read_while_cut_off() {
    let Some(srv) = server() else { return };
    let p = prefix("offline-heard-reset");
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(30_000))
        .call_bound(MS(2_000))
        .express(None, 1);
    let (ra, a) = quota(a_cfg, 100, MS(3_600_000)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    assert!(a.snapshot().await.expect("snapshot").reserved > 1);
    proxy.cut();
    let spent = offline_grant(&a).await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let spent = spent.expect("an offline grant: the window ends in an hour");
    // Its response: the window ends in 1.5 to 2.5 s (whole seconds, rounded up).
    let reset_s = (unix_now() + MS(1_500)).as_secs() + 1;
    let headers = [
        ("x-ratelimit-limit", "100".to_owned()),
        ("x-ratelimit-remaining", "40".to_owned()),
        ("x-ratelimit-reset", reset_s.to_string()),
    ];
    let _ = a
        .observe(Some(spent), &Observation::from_headers(200, headers))
        .await;
    // Within a call bound (2 s) of that reset, less the header's second: nothing offline.
    match a.try_acquire(1, Priority::P1).await {
        Ok(QuotaDecision::Go(g)) => panic!("granted {g:?} a call bound before the reset"),
        other => eprintln!("after the header: {other:?}"),
    }
    proxy.restore();
}

/// A call granted just before the reset gets no response (a timeout): its request may
/// still reach upstream after the reset and count in the new window, as one on its way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_with_no_response_at_the_roll_counts_in_the_new_window() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("no-response-roll"), "a")
        .reserve_share_permille(0)
        .call_bound(MS(200));
    let (_r, a) = quota(c, 10, MS(2_000)).await;
    tokio::time::sleep(MS(400)).await;
    let anchor = go(a.try_acquire(1, Priority::P1).await.expect("anchor"));
    a.observe(Some(anchor), &Observation::new(200))
        .await
        .expect("observe");
    let reset_in = a
        .snapshot()
        .await
        .expect("snapshot")
        .reset_in
        .expect("anchored");
    tokio::time::sleep(reset_in.saturating_sub(MS(60))).await;
    let timed_out = go(a.try_acquire(1, Priority::P1).await.expect("late"));
    a.observe(Some(timed_out), &Observation::no_response())
        .await
        .expect("observe");
    tokio::time::sleep(MS(100)).await; // past the reset, the request still on its way
    let new = drain(&a).await;
    assert!(
        new <= 9,
        "{new} granted in a new window with 9 left upstream"
    );
}

/// Grants `q` until refused, observing each; how many.
async fn drain(q: &SharedQuota) -> u64 {
    let mut n = 0;
    while let Ok(QuotaDecision::Go(g)) = q.try_acquire(1, Priority::P1).await {
        n += 1;
        assert!(n < 1000);
        q.observe(Some(g), &Observation::new(200))
            .await
            .expect("observe");
    }
    n
}
