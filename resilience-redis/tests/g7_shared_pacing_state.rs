//! G7 + G8: how the shared rules' state lives in Redis: it outlives every count still in a
//! window, its endpoint index expires with it, and the concurrency cap counts calls.

mod common;

use common::node::{cfg, go, MS};
use common::server::{prefix, server};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use resilience_redis::{
    QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig, SharedQuota,
};
use std::time::{Duration, Instant};

async fn client(c: RedisQuotaConfig, pacing: Pacing) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect(c.reserve_share_permille(0))
        .await
        .expect("connect");
    let spec = QuotaSpec::new(1_000_000, Duration::from_secs(3_600)).shared_pacing(pacing);
    let q = r.resource("core", spec).await.expect("resource");
    (r, q)
}

fn window(name: &str, selector: Selector, limit: u32, ms: u64) -> WindowRule {
    WindowRule::new(
        name,
        selector,
        Measure::Requests,
        limit,
        Duration::from_millis(ms),
    )
}

/// A grant that does not move the keys' expiry must still count until it leaves its window:
/// before, the expiry moved only past half its lifetime, so the keys could expire with a
/// grant of the last half-lifetime still in its window, and the rule granted it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_rule_state_outlives_every_count_still_in_a_window() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-expiry");
    // 2 per second: the keys live a second and a bucket (1 100 ms) past a grant.
    let rule = Pacing {
        windows: vec![window("all", Selector::All, 2, 1_000)],
        ..Pacing::default()
    };
    let (_r, q) = client(cfg(&srv.url, &p, "a"), rule).await;
    let read = Request::read();
    let t0 = Instant::now();
    let mut times =
        vec![go(q.try_acquire_request(&read, Priority::P1).await.expect("1")).granted_at_ms()];
    tokio::time::sleep(MS(400).saturating_sub(t0.elapsed())).await;
    times.push(go(q.try_acquire_request(&read, Priority::P1).await.expect("2")).granted_at_ms());
    // Past the first grant's key lifetime, inside the second grant's window.
    tokio::time::sleep(MS(1_150).saturating_sub(t0.elapsed())).await;
    for _ in 0..2 {
        match q
            .try_acquire_request(&read, Priority::P1)
            .await
            .expect("ask")
        {
            QuotaDecision::Go(g) => times.push(g.granted_at_ms()),
            QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}"),
        }
    }
    times.sort_unstable();
    let in_one_second = times.windows(3).any(|w| w[2] - w[0] < 1_000);
    assert!(!in_one_second, "3 grants within a second: {times:?}");
}

/// The endpoint index, made by the first per-endpoint grant after the counts' key was made,
/// expires with the counts (it used to be left without a TTL, outlive them, and then make
/// eviction count rings that were no longer there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_endpoint_index_expires_with_the_counts() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-index-ttl");
    let rule = Pacing {
        windows: vec![
            window("all", Selector::All, 100, 60_000),
            window("writes", Selector::Writes, 100, 60_000).per_endpoint(),
        ],
        ..Pacing::default()
    };
    let (_r, q) = client(cfg(&srv.url, &p, "a"), rule).await;
    let _ = go(q
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("read"));
    let _ = go(q
        .try_acquire_request(&Request::write().with_endpoint("/x"), Priority::P1)
        .await
        .expect("write"));
    let ttl = |k: &str| -> i64 {
        srv.cmd(&format!("PTTL {{{p}:core}}:{k}"))
            .and_then(|s| s.trim().trim_start_matches(':').parse().ok())
            .expect("PTTL")
    };
    let (counts, index) = (ttl("p"), ttl("i"));
    assert!(counts > 0, "the counts have no TTL: {counts}");
    assert!(
        index > 0 && index <= counts,
        "index TTL {index}, counts {counts}"
    );
}
