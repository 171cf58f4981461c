//! Nodes for the in-process G7 tests: a config with short timeouts, a joined resource, and
//! the grant out of a decision, and the wait for a reconnection.

#![allow(dead_code)]

use resilience_core::governor::{Observation, Priority};
use resilience_redis::{
    LinkState, QuotaDecision, QuotaGrant, QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota,
};
use std::time::{Duration, Instant};

pub const MS: fn(u64) -> Duration = Duration::from_millis;

/// `node` on `url` under `prefix`, with timeouts short enough for an outage test.
pub fn cfg(url: &str, prefix: &str, node: &str) -> RedisQuotaConfig {
    RedisQuotaConfig::new(url)
        .prefix(prefix)
        .node(node)
        .timeouts(MS(500), MS(300))
        .reconnect_every(MS(100))
}

/// Connects and joins the resource `core`.
pub async fn quota(c: RedisQuotaConfig, limit: u64, window: Duration) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect(c).await.expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(limit, window))
        .await
        .expect("resource");
    (r, q)
}

/// A node with no reservation on a 100-unit, one-minute resource: every grant comes from the
/// pool, so a test can follow the pool unit by unit.
pub async fn unreserved(url: &str, prefix: &str, node: &str) -> (RedisQuota, SharedQuota) {
    quota(
        cfg(url, prefix, node).reserve_share_permille(0),
        100,
        Duration::from_secs(60),
    )
    .await
}

/// The grant of a decision that must be one.
pub fn go(d: QuotaDecision) -> QuotaGrant {
    match d {
        QuotaDecision::Go(g) => g,
        QuotaDecision::Wait(w) => panic!("expected a grant, got {w:?}"),
    }
}

/// Waits until `r` is connected again, nudging it with snapshots.
pub async fn rejoined(r: &RedisQuota, q: &SharedQuota) {
    let t = Instant::now();
    let _ = q.snapshot().await;
    while r.link_state() != LinkState::Connected {
        assert!(t.elapsed() < Duration::from_secs(10), "never rejoined");
        tokio::time::sleep(MS(50)).await;
        let _ = q.snapshot().await;
    }
}

/// Wall-clock time since the epoch, for writing `x-ratelimit-reset` headers.
pub fn unix_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
}

/// Reads 90 remaining on a fresh P1 call of `q`, made after `in_flight` calls of another
/// process that may still be on their way, and asserts the pool did not count them as left.
pub async fn assert_reading_keeps_in_flight(q: &SharedQuota, in_flight: u64) {
    let probe = go(q.try_acquire(1, Priority::P1).await.expect("probe"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "90")]);
    q.observe(Some(probe), &reading).await.expect("observe");
    let s = q.snapshot().await.expect("snapshot");
    assert_eq!(s.pool, 90 - in_flight - s.reserved_total - s.held, "{s:?}");
}

/// Asks until `q` (cut off from Redis) grants a call offline, for up to 2 s.
pub async fn offline_grant(q: &SharedQuota) -> Option<QuotaGrant> {
    for _ in 0..100 {
        if let Ok(QuotaDecision::Go(g)) = q.try_acquire(1, Priority::P1).await {
            if g.is_offline() {
                return Some(g);
            }
        }
        tokio::time::sleep(MS(20)).await;
    }
    None
}
