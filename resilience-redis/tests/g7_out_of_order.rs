//! G7: readings whose responses overtake each other never put back quota that an
//! unanswered call is about to spend (the defect fixed in the in-process store).

mod common;

use common::node::{cfg, go, quota, MS};
use common::server::{prefix, server, RedisServer};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaDecision, QuotaGrant, RedisQuota, Settled, SharedQuota};

fn reading(rem: u64) -> Observation {
    Observation::from_headers(200, [("x-ratelimit-remaining", rem.to_string())])
}

/// Grants still given (kept, never settled), up to `cap`.
async fn grants_left(qs: &[&SharedQuota], cap: usize) -> (usize, Vec<QuotaGrant>) {
    let mut kept = Vec::new();
    'outer: while kept.len() < cap {
        let mut any = false;
        for q in qs {
            if let QuotaDecision::Go(g) = q.try_acquire(1, Priority::P1).await.expect("ask") {
                kept.push(g);
                any = true;
                if kept.len() >= cap {
                    break 'outer;
                }
            }
        }
        if !any {
            break;
        }
    }
    (kept.len(), kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_the_newest_reading_overtaking_nine_calls_in_flight_gives_nothing_more() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo1");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(0),
        10,
        MS(3_600_000),
    )
    .await;
    let mut grants = Vec::new();
    for _ in 0..10 {
        grants.push(go(a.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    let last = grants.pop().expect("10");
    // The server counted only the last call: 9 left, 9 older calls still on their way.
    assert_eq!(
        a.observe(Some(last), &reading(9)).await.expect("obs"),
        Settled::Applied
    );
    let s = a.snapshot().await.expect("snapshot");
    eprintln!(
        "after newest reading 9: pool={} reserved_total={}",
        s.pool, s.reserved_total
    );
    let (n, kept) = grants_left(&[&a], 20).await;
    eprintln!("further grants: {n}");
    assert_eq!(n, 0, "9 calls are still in flight: {s:?}");
    drop(kept);
    // As they are answered (lowest first), the estimate stays at the server's lowest count.
    for (i, g) in grants.into_iter().enumerate() {
        let _ = a
            .observe(Some(g), &reading(8 - i as u64))
            .await
            .expect("obs");
    }
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_the_same_across_two_processes() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo2");
    let c = |n| cfg(&srv.url, &p, n).reserve_share_permille(0);
    let (_ra, a) = quota(c("a"), 10, MS(3_600_000)).await;
    let (_rb, b) = quota(c("b"), 10, MS(3_600_000)).await;
    let mut grants = Vec::new();
    for i in 0..10 {
        let q = if i % 2 == 0 { &a } else { &b };
        grants.push(go(q.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    let last = grants.pop().expect("10"); // b's
    assert_eq!(
        b.observe(Some(last), &reading(9)).await.expect("obs"),
        Settled::Applied
    );
    let (n, kept) = grants_left(&[&a, &b], 20).await;
    eprintln!("two processes, further grants: {n}");
    assert_eq!(n, 0);
    drop((kept, grants));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_higher_reading_answered_later_does_not_raise_the_estimate() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo3");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(0),
        10,
        MS(3_600_000),
    )
    .await;
    let first = go(a.try_acquire(1, Priority::P1).await.expect("1"));
    let second = go(a.try_acquire(1, Priority::P1).await.expect("2"));
    // The server counted the second call first: the first's answer (8) arrives before the
    // second's (9).
    a.observe(Some(first), &reading(8)).await.expect("obs");
    let s = a.snapshot().await.expect("snapshot");
    eprintln!("after first (8): pool={}", s.pool);
    assert_eq!(s.pool, 7, "one still in flight");
    a.observe(Some(second), &reading(9)).await.expect("obs");
    let s = a.snapshot().await.expect("snapshot");
    eprintln!("after second (9): pool={}", s.pool);
    assert_eq!(s.pool, 8, "{s:?}");
    let (n, kept) = grants_left(&[&a], 20).await;
    eprintln!("further grants: {n}");
    assert_eq!(n, 8);
    drop(kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_older_grants_higher_reading_after_a_newer_one_does_not_raise_it() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo4");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(0),
        10,
        MS(3_600_000),
    )
    .await;
    let mut grants = Vec::new();
    for _ in 0..4 {
        grants.push(go(a.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    // All four counted (6 left); the newest's answer comes first, then the oldest's, read
    // before the others were counted, with a higher value (9).
    let newest = grants.pop().expect("4");
    a.observe(Some(newest), &reading(6)).await.expect("obs");
    let before = a.snapshot().await.expect("snapshot").pool;
    let oldest = grants.remove(0);
    a.observe(Some(oldest), &reading(9)).await.expect("obs");
    let after = a.snapshot().await.expect("snapshot").pool;
    eprintln!("newest read 6: pool={before}; oldest then read 9: pool={after}");
    assert!(after <= before, "raised from {before} to {after}");
    let (n, kept) = grants_left(&[&a], 20).await;
    eprintln!("further grants: {n}");
    assert!(
        n <= 6 - 2,
        "2 calls in flight, 6 left upstream: {n} granted"
    );
    drop((kept, grants));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_express_grants_reading_overtaking_calls_in_flight_puts_nothing_back() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo5");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a")
            .reserve_share_permille(500)
            .express(Some(Priority::P0), 8),
        1_000,
        MS(3_600_000),
    )
    .await;
    let mut grants = Vec::new();
    for _ in 0..9 {
        grants.push(go(a.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    // The express lane needs the block subscription up.
    let mut express = None;
    for _ in 0..100 {
        let g = a.acquire(1, Priority::P0).await.expect("p0");
        if g.is_express() {
            express = Some(g);
            break;
        }
        grants.push(g);
        tokio::time::sleep(MS(20)).await;
    }
    let express = express.expect("an express grant");
    let in_flight = grants.len() as u64;
    // The server counted only the express call.
    a.observe(Some(express), &reading(999)).await.expect("obs");
    let s = a.snapshot().await.expect("snapshot");
    eprintln!(
        "express: in flight {in_flight}, pool={} reserved_total={}",
        s.pool, s.reserved_total
    );
    assert!(
        s.pool + s.reserved_total + s.held <= 999 - in_flight,
        "{in_flight} calls in flight: {s:?}"
    );
    drop(grants);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_grantless_higher_reading_answered_late_does_not_raise_the_estimate() {
    let Some(srv) = server() else { return };
    let p = prefix("ooo6");
    let (_r, a) = quota(
        cfg(&srv.url, &p, "a").reserve_share_permille(0),
        10,
        MS(3_600_000),
    )
    .await;
    for rem in [9, 8, 7, 6] {
        let g = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
        a.observe(Some(g), &reading(rem)).await.expect("obs");
    }
    let before = a.snapshot().await.expect("snapshot").pool;
    // A response of a call made without a grant, read at the server before the four.
    a.observe(None, &reading(9)).await.expect("obs");
    let after = a.snapshot().await.expect("snapshot").pool;
    eprintln!("grantless: pool {before} -> {after}");
    assert!(after <= before, "raised from {before} to {after}");
}

/// Ten grants of a 15 quota, counted upstream in grant order (14 down to 5), the newest
/// answered first: its reading counts the nine before it as still on their way.
async fn ten_calls_newest_answered_first(
    srv: &RedisServer,
    p: &str,
) -> (RedisQuota, SharedQuota, Vec<QuotaGrant>) {
    let c = cfg(&srv.url, p, "a")
        .reserve_share_permille(0)
        .call_bound(MS(200));
    let (r, a) = quota(c, 15, MS(3_600_000)).await;
    // Older than a call bound: no call of a state Redis lost can still be on its way.
    tokio::time::sleep(MS(400)).await;
    let mut grants = Vec::new();
    for _ in 0..10 {
        grants.push(go(a.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    let newest = grants.pop().expect("10");
    a.observe(Some(newest), &reading(5)).await.expect("obs");
    assert_eq!(
        a.snapshot().await.expect("snapshot").pool,
        0,
        "9 on their way"
    );
    (r, a, grants)
}

/// Observes `grants` in order, read `from` down by one each (upstream counted them so).
async fn answer_counting_down(a: &SharedQuota, grants: Vec<QuotaGrant>, from: u64) {
    for (i, g) in grants.into_iter().enumerate() {
        a.observe(Some(g), &reading(from - i as u64))
            .await
            .expect("obs");
    }
}

/// A response without rate-limit headers.
fn no_headers() -> Observation {
    Observation::from_headers(200, Vec::<(&str, String)>::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_once_every_call_is_answered_the_lowest_reading_gives_back_what_was_counted_twice() {
    let Some(srv) = server() else { return };
    let (_r, a, grants) = ten_calls_newest_answered_first(&srv, &prefix("ooo7")).await;
    // The nine older calls had been counted first (14 down to 6): the estimate of 0 counted
    // them twice. The lowest reading (5) stays, less the calls still on their way: the pool
    // comes back as they are answered.
    let mut rem = 14;
    for (i, g) in grants.into_iter().enumerate() {
        a.observe(Some(g), &reading(rem)).await.expect("obs");
        rem -= 1;
        let pool = a.snapshot().await.expect("snapshot").pool;
        let on_their_way = 9 - (i as u64 + 1);
        assert_eq!(pool, 5u64.saturating_sub(on_their_way), "after answer {i}");
    }
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert_eq!(granted, 5, "exactly what upstream has left");
    drop(kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_answered_unread_may_have_been_counted_after_the_lowest_reading() {
    let Some(srv) = server() else { return };
    let (_r, a, mut grants) = ten_calls_newest_answered_first(&srv, &prefix("ooo8")).await;
    // The oldest call is answered without rate-limit headers: upstream counted it last,
    // after the lowest reading (5), so 4 are left; the others read 13 down to 6.
    let oldest = grants.remove(0);
    answer_counting_down(&a, grants, 13).await;
    // The lowest reading less the one call still in flight.
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 4);
    a.observe(Some(oldest), &no_headers()).await.expect("obs");
    let pool = a.snapshot().await.expect("snapshot").pool;
    assert_eq!(pool, 4, "the lowest reading less the unread call");
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert_eq!(granted, 4);
    drop(kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_dropped_unread_comes_off_the_lowest_reading_once_it_drops_out() {
    let Some(srv) = server() else { return };
    let (_r, a, mut grants) = ten_calls_newest_answered_first(&srv, &prefix("ooo9")).await;
    // The oldest call's grant is dropped (no response ever read): it drops out of the count
    // after the call bound, and may have been counted at any time before.
    let oldest = grants.remove(0);
    answer_counting_down(&a, grants, 13).await;
    drop(oldest);
    tokio::time::sleep(MS(400)).await;
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert_eq!(granted, 4, "the lowest reading (5) less the unread call");
    drop(kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_answered_unread_before_the_next_grants_does_not_come_off_their_readings() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("ooo10"), "a")
        .reserve_share_permille(0)
        .call_bound(MS(200));
    let (_r, a) = quota(c, 16, MS(3_600_000)).await;
    tokio::time::sleep(MS(400)).await;
    // One call answered without headers (upstream: 15 left), well before the next grants
    // (a few 50 ms slots): their readings count it.
    let early = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    a.observe(Some(early), &no_headers()).await.expect("obs");
    tokio::time::sleep(MS(150)).await;
    let mut grants = Vec::new();
    for _ in 0..10 {
        grants.push(go(a.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    // Counted upstream in grant order (14 down to 5), the newest answered first.
    let newest = grants.pop().expect("10");
    a.observe(Some(newest), &reading(5)).await.expect("obs");
    answer_counting_down(&a, grants, 14).await;
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 5);
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert_eq!(granted, 5);
    drop(kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_reading_answered_after_a_later_call_settled_unread_is_cut_by_it() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("ooo11"), "a")
        .reserve_share_permille(0)
        .call_bound(MS(200));
    let (_r, a) = quota(c, 10, MS(3_600_000)).await;
    tokio::time::sleep(MS(400)).await;
    let first = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let second = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    // Upstream counted the first (9 left), then the second (8); the second is answered
    // first, without headers, then the first with its reading (9), which does not count
    // the second.
    a.observe(Some(second), &no_headers()).await.expect("obs");
    a.observe(Some(first), &reading(9)).await.expect("obs");
    assert_eq!(a.snapshot().await.expect("snapshot").pool, 8);
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert_eq!(granted, 8);
    drop(kept);
}

/// A call with no response (a timeout) may still reach upstream after calls granted later:
/// upstream counts them (9, 8), then it (7), and their readings (8, then 9) do not count it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_call_with_no_response_may_arrive_after_calls_granted_later() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("ooo12"), "a")
        .reserve_share_permille(0)
        .call_bound(MS(200));
    let (_r, a) = quota(c, 10, MS(3_600_000)).await;
    tokio::time::sleep(MS(400)).await;
    let timed_out = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    a.observe(Some(timed_out), &Observation::no_response())
        .await
        .expect("obs");
    tokio::time::sleep(MS(60)).await; // the next 50 ms slot
    let first = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    let second = go(a.try_acquire(1, Priority::P1).await.expect("acquire"));
    a.observe(Some(second), &reading(8)).await.expect("obs");
    a.observe(Some(first), &reading(9)).await.expect("obs");
    assert!(a.snapshot().await.expect("snapshot").pool <= 7);
    let (granted, kept) = grants_left(&[&a], 20).await;
    assert!(granted <= 7, "{granted} granted with 7 left upstream");
    drop(kept);
}
