//! G7 against a real redis-server: the express lane (P0 acquires spent from the lease without
//! a round trip) and what shuts it.

mod common;

use common::node::{cfg, go, quota, unix_now, MS};
use common::proxy::Proxy;
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{RedisQuotaError, Settled, SharedQuota};
use std::time::{Duration, Instant};

/// Asks at P1 (one round trip, anchoring the window and answering after the pub/sub
/// subscription) until a P0 acquire goes through the express lane; `None` after 2 s.
async fn express_ready(q: &SharedQuota) -> Option<resilience_redis::QuotaGrant> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        let _ = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
        let g = q.acquire(1, Priority::P0).await.expect("acquire at P0");
        if g.is_express() {
            return Some(g);
        }
        tokio::time::sleep(MS(20)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_express_lane_p0_acquires_take_no_round_trip_and_are_reported_later() {
    let Some(srv) = server() else { return };
    let c = cfg(&srv.url, &prefix("express"), "a")
        .reserve_share_permille(500)
        .express(Some(Priority::P0), 8);
    let (_r, q) = quota(c, 1_000, MS(60_000)).await;
    let first = express_ready(&q).await.expect("the express lane opened");
    assert!(first.from_reserve() && !first.is_offline());
    let before = srv.calls("evalsha");
    let reserved = q.snapshot().await.expect("snapshot").reserved;
    // The snapshot carried the first grant's report: 8 may be unsettled again.
    let mut grants = Vec::new();
    for _ in 0..8 {
        let g = q.acquire(1, Priority::P0).await.expect("acquire at P0");
        assert!(g.is_express(), "{g:?}");
        grants.push(g);
    }
    if srv.owned() {
        // The snapshot above was the one round trip; eight P0 acquires made none.
        assert_eq!(
            srv.calls("evalsha") - before,
            1,
            "no EVALSHA per express acquire"
        );
    }
    // The allowance (8 unsettled) is spent: the next asks Redis, carrying the report, and
    // the server's reservation drops by what was spent.
    let asked = q.acquire(1, Priority::P0).await.expect("acquire at P0");
    assert!(!asked.is_express(), "{asked:?}");
    let after = q.snapshot().await.expect("snapshot");
    assert!(
        after.reserved + 8 <= reserved,
        "the 8 express grants were settled from the reservation: {reserved} -> {after:?}"
    );
    // Their responses are reported like any other: a rate limit blocks every node.
    let limited = Observation::from_headers(429, [("retry-after", "2")]);
    let g = grants.pop().expect("a grant");
    assert_eq!(
        q.observe(Some(g), &limited).await.expect("observe"),
        Settled::Applied
    );
    let s = q.snapshot().await.expect("snapshot");
    assert!(s.blocked_for.is_some_and(|d| d > MS(1_500)), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_a_block_set_by_another_node_shuts_the_express_lane_at_once() {
    let Some(srv) = server() else { return };
    let p = prefix("xblock");
    let c = |n| cfg(&srv.url, &p, n).reserve_share_permille(500);
    let (_ra, a) = quota(c("a"), 1_000, MS(60_000)).await;
    let (_rb, b) = quota(c("b"), 1_000, MS(60_000)).await;
    assert!(express_ready(&a).await.is_some(), "a's express lane opened");
    block_for_3_s(&b).await;
    // a has made no call since: only the pub/sub message can tell it.
    tokio::time::sleep(MS(200)).await;
    assert_p0_waits(&a).await;
}

/// `q` sees a 429 with `retry-after: 3`, which blocks every node (G6).
async fn block_for_3_s(q: &SharedQuota) {
    let g = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
    let limited = Observation::from_headers(429, [("retry-after", "3")]);
    q.observe(Some(g), &limited).await.expect("observe");
}

/// A P0 acquire on `q` waits (the block is known): its lane is shut.
async fn assert_p0_waits(q: &SharedQuota) {
    let e = q
        .acquire_within(1, Priority::P0, Some(MS(300)))
        .await
        .expect_err("a P0 acquire during the block must wait");
    assert!(matches!(e, RedisQuotaError::WaitTooLong { .. }), "{e:?}");
}

/// A subscription can die without its socket closing; blocks published meanwhile go
/// unheard. The listener's probe notices within three I/O timeouts and shuts the lane, so
/// a P0 acquire asks Redis again and learns of the block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_a_silently_dead_subscription_shuts_the_express_lane() {
    let Some(srv) = server() else { return };
    let proxy = Proxy::start(&srv.url).await;
    let p = prefix("halfopen");
    let c = |url: &str, n| cfg(url, &p, n).reserve_share_permille(500);
    let (_ra, a) = quota(c(&proxy.url, "a"), 1_000, MS(60_000)).await;
    let (_rb, b) = quota(c(&srv.url, "b"), 1_000, MS(60_000)).await;
    assert!(express_ready(&a).await.is_some(), "a's express lane opened");
    proxy.freeze_pubsub();
    block_for_3_s(&b).await;
    // The "b" message never reaches a. Three I/O timeouts (0.9 s) and some slack later:
    tokio::time::sleep(MS(1_500)).await;
    assert_p0_waits(&a).await;
}

/// Another node's headers can move the window's reset earlier than this node knows, so its
/// express lane may spend into the next window before it hears. The report arrives after
/// the window rolled, with no reservation left to settle it from: it counts against the new
/// window (up to the express allowance), never vanishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_express_spending_reported_after_an_earlier_reset_counts_in_the_new_window() {
    let Some(srv) = server() else { return };
    let p = prefix("earlyreset");
    let c = |n| {
        cfg(&srv.url, &p, n)
            .reserve_share_permille(500)
            .express(Some(Priority::P0), 8)
    };
    let (_ra, a) = quota(c("a"), 1_000, MS(60_000)).await;
    let (_rb, b) = quota(c("b"), 1_000, MS(60_000)).await;
    let window = express_ready(&a)
        .await
        .expect("a's express lane opened")
        .window();
    // Settle that first grant while its window lasts.
    let _ = a.snapshot().await.expect("snapshot");
    // b reads a reset 1-2 s away (a thinks it is a minute away).
    let unix = unix_now().as_secs();
    let g = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    let reset = (unix + 2).to_string();
    let early = Observation::from_headers(
        200,
        [
            ("x-ratelimit-limit", "1000"),
            ("x-ratelimit-remaining", "900"),
            ("x-ratelimit-reset", reset.as_str()),
        ],
    );
    b.observe(Some(g), &early).await.expect("observe");
    // After the real reset, a's lane still believes in the old window: six express grants.
    tokio::time::sleep(MS(2_300)).await;
    for _ in 0..6 {
        let g = a.acquire(1, Priority::P0).await.expect("acquire at P0");
        assert!(g.is_express(), "{g:?}");
    }
    // a's next call carries the report to a server that has rolled the window.
    let after = a.snapshot().await.expect("snapshot");
    assert_ne!(after.window, window, "the window rolled: {after:?}");
    // (Less the two grants of `express_ready`, never settled: still on their way at the
    // roll, they count in the new window too.)
    assert_eq!(
        after.pool + after.reserved_total + after.held,
        1_000 - 6 - 2,
        "the six count in the new window: {after:?}"
    );
}

/// `connect` returns once the pub/sub subscription is up, so in a window already under way
/// (the lane needs one: an unanchored window has no reset to account it to) the first P0
/// call of a process just started, after its resource's join, takes the express lane; it
/// paid a round trip before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_the_first_p0_call_after_connect_takes_the_express_lane() {
    let Some(srv) = server() else { return };
    let p = prefix("express-first");
    let (_r, first) = quota(cfg(&srv.url, &p, "first"), 1_000, MS(60_000)).await;
    let _ = go(first.try_acquire(1, Priority::P1).await.expect("anchor"));
    for n in 0..5 {
        let c = cfg(&srv.url, &p, &format!("n{n}"))
            .reserve_share_permille(500)
            .express(Some(Priority::P0), 8);
        let (_r, q) = quota(c, 1_000, MS(60_000)).await;
        let g = q.acquire(1, Priority::P0).await.expect("acquire at P0");
        assert!(g.is_express(), "run {n}: {g:?}");
    }
}
