//! G7 at a window's end: the window rolls no earlier than upstream's, and what was granted
//! in the old one and is still on its way counts against the new one (upstream counts a call
//! by when it arrives).

mod common;

use common::node::{cfg, go, unix_now, MS};
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaDecision, QuotaSpec, RedisQuota, SharedQuota};
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
    // The new window: the herd takes all it can before any of its responses.
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
